"""Jobs that do not train never import torch, the report jobs read only the run records, the history records, the
datasets' metadata and the splits' leakage files, and `snakemake --report` shows every protocol's tables and figures
(docs/results.md): a small suite under all three protocols, planned and run once (conftest's
``all_protocols_workflow``), every Python process recording at its exit whether it had imported torch."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from conftest import ALL_PROTOCOLS, job_script, snakemake

from gnnbench.data import leakage

pytestmark = pytest.mark.slow

# the scripts of the jobs that train nothing: splits, model selection, every benchmark's report, the suite's report
NO_TORCH = ("make_splits", "fc_select", "dataset_tables", "suite_report")
# what one run of ALL_PROTOCOLS starts of each (4 datasets; 2 models x 2 outer folds of GF; 4 benchmarks; 1 suite)
EXPECTED_JOBS = {"make_splits": 4, "fc_select": 4, "dataset_tables": 4, "suite_report": 1}
REPORT_INPUTS = ("results/records/", "results/histories/", "results/datasets/", "results/splits/")


def test_no_job_that_does_not_train_imports_torch(all_protocols_workflow):
    workdir, _, result, processes = all_protocols_workflow
    assert result.returncode == 0, result.stderr[-3000:]
    scripts = [(job_script(p["argv"]), p["torch"]) for p in processes]
    assert Counter(script for script, _ in scripts if script in NO_TORCH) == EXPECTED_JOBS  # each ran: not vacuous
    with_torch = sorted({script for script, torch in scripts if script in NO_TORCH and torch})
    assert with_torch == [], f"these jobs imported torch: {with_torch}"
    # the hook sees torch where it is imported: every training job has it
    assert {torch for script, torch in scripts if script in ("train", "train_inits", "fc_inner", "fc_final")} == {True}
    # and the report jobs wrote their tables, tests and figures
    tables = workdir / "results" / "tables"
    benchmarks = ALL_PROTOCOLS["benchmarks"]
    assert {p.name for p in tables.glob("*.md")} == {*(f"{d}.md" for d in benchmarks),
                                                     *(f"{d}_significance.md" for d in benchmarks),
                                                     "GF_folds.md", "pitfalls.md", "pitfalls_split_ranking.md",
                                                     "critical_difference_pitfalls.md"}
    # CSBM and CSBM-one-split (pitfalls) share GCN and MLP: their critical-difference comparison
    assert "| GCN |" in (tables / "critical_difference_pitfalls.md").read_text()
    assert (workdir / "results" / "plots" / "critical_difference_pitfalls.svg").is_file()
    assert (workdir / "results" / "plots" / "CSL_curves.svg").is_file()


def test_report_jobs_read_only_records_histories_dataset_metadata_and_leakage(all_protocols_workflow):
    _, dry, _, _ = all_protocols_workflow
    assert dry.returncode == 0, dry.stderr[-3000:]
    inputs = {rule: files.split(", ") for rule, files in
              re.findall(r"^(?:local)?rule (tables_\w+|suite_report):\n(?:    .*\n)*?    input: (.*)$",
                         dry.stdout + dry.stderr, flags=re.M)}
    assert sorted(inputs) == ["suite_report", "tables_CSBM", "tables_CSBM_one_split", "tables_CSL", "tables_GF"]
    for rule, files in inputs.items():
        assert [f for f in files if not f.startswith(REPORT_INPUTS)] == [], rule
        splits = [re.sub(r"\W", "_", f) for f in files if f.startswith("results/splits/")]  # as in the rule names
        assert splits == ([] if rule == "suite_report" else [f"results_splits_{rule[7:]}_leakage_json"]), rule
    assert any(f.startswith("results/histories/") for f in inputs["tables_CSL"])  # its learning curves
    assert any("fold0_inner0" in f for f in inputs["tables_GF"])  # the selection's candidates, from the records


def test_the_report_shows_every_protocols_tables_and_figures_with_their_captions(all_protocols_workflow):
    workdir, _, result, _ = all_protocols_workflow
    assert result.returncode == 0, result.stderr[-3000:]
    made = snakemake(workdir, "--report", str(workdir / "report.html"), config=ALL_PROTOCOLS)
    assert made.returncode == 0, made.stderr[-3000:]
    html = (workdir / "report.html").read_text()
    categories = json.loads(re.search(r'<script id="categories">\s*var categories = (.*?);\s*</script>', html,
                                      flags=re.S).group(1))
    results = json.loads(re.search(r'<script id="results">\s*var results = (.*?);\s*</script>', html,
                                   flags=re.S).group(1))
    assert sorted(categories["GF"]["Tables"]) == [
        "results/report/tables/GF.html", "results/report/tables/GF_folds.html",
        "results/report/tables/GF_significance.html", "results/tables/GF.csv", "results/tables/GF_folds.csv"]
    assert categories["CSBM"]["Figures"] == ["results/plots/CSBM.svg"]
    assert sorted(categories["Suite"]["Tables"]) == [
        "results/report/tables/critical_difference_pitfalls.html", "results/report/tables/pitfalls.html",
        "results/report/tables/pitfalls_split_ranking.html", "results/tables/critical_difference_pitfalls.csv",
        "results/tables/pitfalls.csv", "results/tables/pitfalls_split_ranking.csv"]
    assert categories["Suite"]["Figures"] == ["results/plots/critical_difference_pitfalls.svg"]

    def caption(path):
        return re.sub(r"<[^>]+>", "", results[path]["caption"])

    # each page its own caption, from its protocol (one job writes them all)
    assert "per model and outer fold, the configuration selected" in caption("results/report/tables/GF_folds.html")
    assert "one row per model — test accuracy mean ± std over the outer folds" in caption(
        "results/report/tables/GF.html")
    assert "Kendall's tau" in caption("results/report/tables/pitfalls_split_ranking.html")
    assert "relative accuracy" in caption("results/report/tables/pitfalls.html")
    assert caption("results/report/tables/CSBM_significance.html").startswith("Is A better than B? One row per pair "
                                                                              "of models of CSBM")
    assert "Test accuracy of every run on CSBM (protocol pitfalls)" in caption("results/plots/CSBM.svg")
    assert "Wilcoxon signed-rank tests over the datasets, Holm-adjusted" in caption(
        "results/plots/critical_difference_pitfalls.svg")
    assert caption("results/report/tables/critical_difference_pitfalls.html").startswith(
        "Which models are better over the datasets of one protocol?")


def test_every_protocols_table_carries_the_leakage_note(all_protocols_workflow):
    """Under each benchmark's table (three protocols) the note of its split's leakage.json; CSL's classes are
    isomorphism classes (5 copies each), so its test graphs all have a copy in training: a warning, logged too."""
    workdir, _, result, _ = all_protocols_workflow
    assert result.returncode == 0, result.stderr[-3000:]
    tables, logs = workdir / "results" / "tables", workdir / "results" / "logs" / "tables"
    csl = (tables / "CSL.md").read_text()
    assert "**Warning: up to 100.0% of a test part of CSL has a duplicate in training (threshold 1%)" in csl
    assert "Leakage check: 10 groups of duplicate graphs (50 graphs, 40 removable copies" in csl
    assert "leakage: up to 100.0% of a test part of CSL" in (logs / "CSL.log").read_text()
    for dataset in ("CSBM", "CSBM-one-split"):  # Gaussian features: no two nodes alike
        assert (tables / f"{dataset}.md").read_text().rstrip().endswith(
            f"Leakage check: no duplicate nodes ({leakage.NODE_RULE}).")
        assert "leakage:" not in (logs / f"{dataset}.log").read_text()
    assert "Leakage check: " in (tables / "GF.md").read_text()
    report = json.loads((workdir / "results" / "splits" / "GF" / "leakage.json").read_text())
    assert len(report["folds"]) == 2 and report["duplicates"]["level"] == "graph"
