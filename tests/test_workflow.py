"""End to end through Snakemake on a tiny suite: DAG, full run, caching, single targets, lint, errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import TINY, job_counts, snakemake

REPO_ROOT = Path(__file__).resolve().parents[1]
RUNS = ["CSL/GCN-PE/seed1/fold0", "CSL/GCN-PE/seed1/fold1", "CSL/MLP/seed1/fold0", "CSL/MLP/seed1/fold1",
        "CSL/GCN/seed1/fold0", "CSL/GCN/seed1/fold1", "PATTERN/GatedGCN/seed1/fold0", "PATTERN/GatedGCN/seed2/fold0"]


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def full_run(tiny_workflow):
    """The tiny suite planned and run once for the whole session: (workdir, dry-run result, run result)."""
    return tiny_workflow


def test_dry_run_shows_the_whole_dag(full_run):
    _, dry, _ = full_run
    assert dry.returncode == 0, dry.stderr
    # one report job per benchmark (its tables, paired tests, figures and pages) and one for the suite
    assert job_counts(dry.stdout + dry.stderr) == {"dataset": 2, "laplacian_pe": 1, "splits": 2, "train": 8,
                                                   "tables_CSL": 1, "tables_PATTERN": 1, "suite_report": 1, "all": 1}


def test_full_run_writes_every_stage(full_run):
    workdir, _, result = full_run
    assert result.returncode == 0, result.stderr[-3000:]
    results = workdir / "results"
    for dataset in ("CSL", "PATTERN"):
        assert (results / "datasets" / dataset / "graphs.parquet").is_file()
        assert json.loads((results / "datasets" / dataset / "meta.json").read_text())["name"] == dataset
        assert (results / "splits" / dataset / "splits.json").is_file()
    assert [p.name for p in (results / "features").rglob("*.parquet")] == ["laplacian_pe_k20.parquet"]
    for run in RUNS:
        metrics = json.loads((results / "runs" / run / "metrics.json").read_text())
        dataset, label, seed, fold = run.split("/")
        assert (metrics["dataset"], metrics["label"], f"seed{metrics['seed']}", f"fold{metrics['fold']}") == (
            dataset, label, seed, fold)
        assert (results / "runs" / run / "history.parquet").is_file()
        assert (results / "logs" / "train" / f"{run}.log").read_text().count("epoch ") == metrics["epochs"]
    csl = pd.read_csv(results / "tables" / "CSL.csv")
    assert csl["model"].tolist() == ["GCN", "GCN-PE", "MLP"] and csl["runs"].tolist() == [2, 2, 2]
    gcn_pe = [json.loads((results / "runs" / r / "metrics.json").read_text())["test"]["metric"] for r in RUNS[:2]]
    assert csl.set_index("model").loc["GCN-PE", "test_metric_mean"] == pytest.approx(sum(gcn_pe) / 2)
    assert (results / "tables" / "PATTERN.md").read_text().startswith("## PATTERN")
    # every run of the results folder in one call: one record per run, in one schema (gnnbench.records)
    records = pd.read_parquet(results / "records")
    assert len(records) == len(RUNS) and set(records["protocol"]) == {"benchmarking-gnns"}
    assert sorted(f"{r.dataset}/{r.model}/seed{r.seed}/fold{r.split}" for r in records.itertuples()) == sorted(RUNS)
    assert records["test_score"].notna().all() and records["run_id"].is_unique
    histories = pd.read_parquet(results / "histories")  # ... and their per-epoch histories, joined on run_id
    assert histories.groupby("run_id").size().reindex(records["run_id"]).tolist() == records["epochs"].tolist()


def test_second_run_has_nothing_to_do(full_run):
    workdir, _, _ = full_run
    before = {p: p.stat().st_mtime_ns for p in (workdir / "results").rglob("*") if p.is_file()}
    again = snakemake(workdir)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
    assert before == {p: p.stat().st_mtime_ns for p in (workdir / "results").rglob("*") if p.is_file()}


def test_forced_rerun_reproduces_the_metrics(full_run):
    workdir, _, _ = full_run
    target = "results/runs/CSL/GCN-PE/seed1/fold1/metrics.json"
    before = json.loads((workdir / target).read_text())
    rerun = snakemake(workdir, "--forcerun", "train", "--until", target, target)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    after = json.loads((workdir / target).read_text())
    for key in ("train", "val", "test", "epochs", "num_params", "config"):
        assert after[key] == before[key]


def test_one_target_builds_only_what_it_needs(tmp_path):
    target = "results/runs/PATTERN/GatedGCN/seed2/fold0/metrics.json"
    plan = snakemake(tmp_path, "-n", target)
    assert job_counts(plan.stdout + plan.stderr) == {"dataset": 1, "splits": 1, "train": 1}
    result = snakemake(tmp_path, target)
    assert result.returncode == 0, result.stderr[-2000:]
    made = sorted(str(p.relative_to(tmp_path / "results")) for p in (tmp_path / "results").rglob("*")
                  if p.is_file() and "logs" not in p.parts)
    assert made == ["datasets/PATTERN/graphs.parquet", "datasets/PATTERN/meta.json",
                    "histories/benchmarking-gnns/PATTERN/GatedGCN/seed2_fold0.parquet",  # its per-epoch history
                    "records/benchmarking-gnns/PATTERN/GatedGCN/seed2_fold0.parquet",  # the run's record
                    "runs/PATTERN/GatedGCN/seed2/fold0/checkpoint.pt",
                    "runs/PATTERN/GatedGCN/seed2/fold0/history.parquet",
                    "runs/PATTERN/GatedGCN/seed2/fold0/metrics.json",
                    "splits/PATTERN/leakage.json",  # what the split leaks (docs/leakage.md)
                    "splits/PATTERN/splits.json"]


def test_lint_is_clean():
    result = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "Congratulations, your workflow is in a good condition!" in output
    assert "Lints for" not in output


def test_bad_config_fails_in_one_line_before_doing_anything(tmp_path):
    bad = json.loads(json.dumps(TINY))
    bad["benchmarks"]["CSL"]["models"]["MLP"] = "CSL_graph_classification_MPL_CSL_100k"
    result = snakemake(tmp_path, config=bad)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        "gnnbench: error: benchmarks.CSL.models.MLP: unknown preset 'CSL_graph_classification_MPL_CSL_100k'; "
        "did you mean " + result.stderr.split("did you mean ", 1)[1].strip()]
    assert not (tmp_path / "results").exists()


def test_corrupt_dataset_fails_the_job_with_one_line_and_no_partial_outputs(tmp_path, full_run):
    workdir, _, _ = full_run
    copy = tmp_path / "copy"
    shutil.copytree(workdir / "results", copy / "results")
    graphs = copy / "results" / "datasets" / "CSL" / "graphs.parquet"
    graphs.write_bytes(graphs.read_bytes()[:1000])  # truncated, and newer than everything downstream
    result = snakemake(copy, "results/splits/CSL/splits.json")
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if "corrupt or truncated" in line]
    assert errors and "delete it and rerun snakemake" in errors[0]
    assert not (copy / "results" / "splits" / "CSL" / "splits.json").exists()
    assert not list((copy / "results" / "splits" / "CSL").glob(".*tmp*"))
