"""Jobs that do not train never import torch, the report jobs read only the run records, the history records, the
datasets' metadata and the splits' leakage files, and `snakemake --report` shows every protocol's tables and figures
(docs/results.md): a small suite under all three protocols, planned and run once (conftest's
``all_protocols_workflow``), every Python process recording at its exit whether it had imported torch. And a tuned
suite (config/tuning-example.yaml): its report job reads the trial records apart from the run records and writes
the tuning report (docs/tuning.md) that the HTML report shows."""

from __future__ import annotations

import json
import re
from collections import Counter

import pandas as pd
import pytest
import yaml
from conftest import ALL_PROTOCOLS, REPO_ROOT, hooked_workflow, job_script, snakemake

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


def report_inputs(dry) -> dict[str, list[str]]:
    """The input files of every report job (rule -> files) in a dry run's output."""
    return {rule: files.split(", ") for rule, files in
            re.findall(r"^(?:local)?rule (tables_\w+|suite_report):\n(?:    .*\n)*?    input: (.*)$",
                       dry.stdout + dry.stderr, flags=re.M)}


def report_items(html: str) -> tuple[dict, dict]:
    """(categories, results) of an HTML report: category -> subcategory -> files, file -> its entry (caption)."""
    categories = json.loads(re.search(r'<script id="categories">\s*var categories = (.*?);\s*</script>', html,
                                      flags=re.S).group(1))
    results = json.loads(re.search(r'<script id="results">\s*var results = (.*?);\s*</script>', html,
                                   flags=re.S).group(1))
    return categories, results


def test_report_jobs_read_only_records_histories_dataset_metadata_and_leakage(all_protocols_workflow):
    _, dry, _, _ = all_protocols_workflow
    assert dry.returncode == 0, dry.stderr[-3000:]
    inputs = report_inputs(dry)
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
    categories, results = report_items((workdir / "report.html").read_text())
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


# ------------------------------------------------------------------------------------------------ a tuned suite

TUNING_EXAMPLE = REPO_ROOT / "config" / "tuning-example.yaml"  # pitfalls, GCN and MLP, 4 trials each, 2 splits


@pytest.fixture(scope="module")
def tuned_workflow(tmp_path_factory):
    """The tuning example planned, run (every process recording whether it imported torch) and reported once:
    (workdir, suite, dry-run result, run result, processes, report result)."""
    suite = yaml.safe_load(TUNING_EXAMPLE.read_text())
    workdir = tmp_path_factory.mktemp("tuned")
    dry, result, processes = hooked_workflow(workdir, suite)
    report = snakemake(workdir, "--report", str(workdir / "report.html"), config=suite)
    return workdir, suite, dry, result, processes, report


def test_the_tuned_report_job_reads_the_trial_records_too_and_imports_no_torch(tuned_workflow):
    workdir, _, dry, result, processes, _ = tuned_workflow
    assert dry.returncode == 0 and result.returncode == 0, result.stderr[-3000:]
    scripts = [(job_script(p["argv"]), p["torch"]) for p in processes]
    assert Counter(s for s, _ in scripts if s in ("dataset_tables", "select_tuning")) == {"dataset_tables": 1,
                                                                                         "select_tuning": 2}
    assert [s for s, torch in scripts if s in ("dataset_tables", "select_tuning", "suite_report") and torch] == []
    # every record the run wrote — the protocol's jobs' and the rounds' trials — and nothing but them, meta, leakage
    records = sorted(str(p.relative_to(workdir)) for p in (workdir / "results" / "records").rglob("*.parquet"))
    trials = [f for f in records if "/tune_main_round" in f]
    assert len(trials) == 4 and len(records) == 8  # 2 models x 2 rounds; 2 published and 2 tuned chunk jobs
    assert sorted(report_inputs(dry)["tables_CSBM"]) == sorted([*records, "results/datasets/CSBM/meta.json",
                                                                 "results/splits/CSBM/leakage.json"])


def test_the_tuning_table_holds_each_models_published_and_tuned_scores_and_budget(tuned_workflow):
    workdir, suite, _, result, _, _ = tuned_workflow
    assert result.returncode == 0, result.stderr[-3000:]
    tables = workdir / "results" / "tables"
    runs = pd.read_parquet(workdir / "results" / "records")  # computed here from the records, not by gnnbench
    trials, scored = runs[runs["stage"] == "trial"], runs[runs["stage"] == "run"]
    budget = suite["benchmarks"]["CSBM"]["tuning"]["trials"]
    table = pd.read_parquet(tables / "CSBM_tuning.parquet").set_index("model")
    assert list(table.index) == ["GCN", "MLP"]
    for model, row in table.iterrows():
        own = trials[trials["model"] == model]
        tuned = scored[scored["model"] == f"{model}-tuned"]
        assert row["trials"] == len(own) == budget and row["completed"] + row["pruned"] == budget
        assert row["trial_seconds"] == pytest.approx(own["seconds"].sum())
        assert row["tuned_run_seconds"] == pytest.approx(tuned["seconds"].sum())
        assert row["cpu_seconds"] == pytest.approx(own["seconds"].sum() + tuned["seconds"].sum())
        assert row["gpu_seconds"] == 0 and set(own["device"].str[:3]) == {"cpu"}
        published = scored[scored["model"] == model].groupby("split")["test_score"].mean()  # mean over inits
        assert row["published_mean"] == pytest.approx(published.mean())
        assert row["tuned_mean"] == pytest.approx(tuned.groupby("split")["test_score"].mean().mean())
        assert row["published_units"] == row["tuned_units"] == row["pairs"] == 2
    markdown = (tables / "CSBM_tuning.md").read_text()
    gcn = table.loc["GCN"]
    assert (f"| GCN | {gcn['published_mean']:.3f} ± {gcn['published_std']:.3f} | {gcn['tuned_mean']:.3f} ± "
            f"{gcn['tuned_std']:.3f} | {gcn['delta']:+.3f} | {budget} ({gcn['completed']} / {gcn['pruned']}) |"
            in markdown)
    # the trials are no rows of the protocol's own table: 2 splits x 2 initialisations of each label
    own_table = pd.read_parquet(tables / "CSBM.parquet")
    assert own_table[["model", "runs"]].values.tolist() == [["GCN", 4], ["MLP", 4], ["GCN-tuned", 4],
                                                            ["MLP-tuned", 4]]
    trial_table = pd.read_parquet(tables / "CSBM_trials.parquet")
    expected = trials.assign(trial=[json.loads(e)["trial"] for e in trials["extra"]]).sort_values(["model", "trial"])
    assert trial_table[["model", "trial"]].values.tolist() == expected[["model", "trial"]].values.tolist()
    assert trial_table["val_score"].tolist() == pytest.approx(expected["val_score"].tolist(), nan_ok=True)
    plots = workdir / "results" / "plots"
    assert (plots / "CSBM_tuning.png").stat().st_size > 0
    assert (plots / "CSBM_tuning.svg").read_text().lstrip().startswith("<?xml")


def test_the_report_shows_the_tuning_tables_and_curves_with_their_captions(tuned_workflow):
    workdir, _, _, result, _, report = tuned_workflow
    assert result.returncode == 0 and report.returncode == 0, report.stderr[-3000:]
    categories, results = report_items((workdir / "report.html").read_text())
    assert sorted(categories["CSBM"]["Tables"]) == [
        "results/report/tables/CSBM.html", "results/report/tables/CSBM_significance.html",
        "results/report/tables/CSBM_trials.html", "results/report/tables/CSBM_tuning.html",
        "results/tables/CSBM.csv", "results/tables/CSBM_trials.csv", "results/tables/CSBM_tuning.csv"]
    assert categories["CSBM"]["Figures"] == ["results/plots/CSBM.svg", "results/plots/CSBM_tuning.svg"]

    def caption(path):
        return " ".join(re.sub(r"<[^>]+>", "", results[path]["caption"]).split())

    assert caption("results/report/tables/CSBM_tuning.html").startswith("Published versus tuned configurations on "
                                                                        "CSBM")
    assert "over random splits (mean over inits)" in caption("results/report/tables/CSBM_tuning.html")
    assert caption("results/report/tables/CSBM_trials.html").startswith("Every tuning trial on CSBM")
    assert caption("results/plots/CSBM_tuning.svg").startswith("Tuning curves on CSBM: the best validation score")
