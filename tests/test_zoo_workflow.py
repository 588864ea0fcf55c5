"""Every model of the zoo trains end to end through Snakemake on every task the generated datasets offer:
node classification (PATTERN), graph classification (CSL and CYCLES, with and without PE), edge
classification (TSP, with the edge-analysis layer types) and multitask regression (GraphTheoryProp, the
published GIN/GatedGCN configs with GRU), plus a budget-fitted model and the original dense schedule.

Link prediction (COLLAB) and full-graph node classification (WikiCS) need their downloaded datasets, which
gnnbench does not provide yet; their heads, losses and metrics are covered by tests/test_zoo.py and
tests/test_metrics.py."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from gnnbench.data.catalog import describe_dataset
from gnnbench.models.build import build_model, count_parameters
from gnnbench.pipeline import generate_dataset
from gnnbench.suite import load_suite

REPO_ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

MODELS = ["MLP", "GCN", "GraphSage", "GAT", "MoNet", "GIN", "GatedGCN", "RingGNN", "3WLGNN"]
SUITE = {
    "threads_per_run": 1,
    "datasets": {
        "CSL": {"generator": "csl", "seed": 2, "params": {"copies_per_class": 5}},
        "PATTERN": {"generator": "sbm_pattern", "seed": 2,
                    "params": {"num_train": 4, "num_val": 2, "num_test": 2, "num_patterns": 2}},
        "TSP": {"generator": "tsp", "seed": 2,
                "params": {"num_train": 4, "num_val": 2, "num_test": 2, "num_nodes": [10, 16], "k": 5,
                           "instances_per_shard": 3}},
        "CYCLES": {"generator": "cycles", "seed": 2, "params": {"num_train": 8, "num_val": 4, "num_test": 4}},
        "GraphTheoryProp": {"generator": "graph_theory_prop", "seed": 1234,
                            "params": {"train_graphs_per_size": 1, "val_graphs_per_size": 1,
                                       "test_graphs_per_size": 1}},
    },
    "benchmarks": {
        "CSL": {"seeds": [1], "folds": [0], "set": {"epochs": 1},
                "models": {**{m: f"CSL_graph_classification_{m}_CSL_100k" for m in MODELS},
                           **{f"{m}-PE": f"CSL_graph_classification_{m}_CSL_PE_100k" for m in ("GIN", "RingGNN")},
                           "GIN-fit": {"model": "GIN", "budget": 20000, "layers": 2},
                           "3WLGNN-original": {"preset": "CSL_graph_classification_3WLGNN_CSL_100k",
                                               "set": {"dense_schedule": "original"}}}},
        "PATTERN": {"seeds": [1], "set": {"epochs": 1},
                    "models": {m: f"SBMs_node_clustering_{m}_PATTERN_100k" for m in MODELS}},
        "TSP": {"seeds": [1], "set": {"epochs": 1},
                "models": {**{m: f"TSP_edge_classification_{m}_100k" for m in MODELS},
                           **{f"{m}-{v}": f"TSP_edge_classification_{m}_{v}" for m in ("GatedGCN", "GAT")
                              for v in ("edgefeat", "edgereprfeat", "isotropic")}}},
        "CYCLES": {"seeds": [1], "set": {"epochs": 1},
                   "models": {"GIN-PE": "CYCLES_graph_classification_GIN_PE_CYCLES_100k",
                              "GatedGCN": "CYCLES_graph_classification_GatedGCN_CYCLES_100k"}},
        "GraphTheoryProp": {"seeds": [1], "set": {"epochs": 1},
                            "models": {f"{m}{pe}": f"GraphTheoryProp_multitask_{m}{pe}_GraphTheoryProp_100k"
                                       for m in ("GIN", "GatedGCN") for pe in ("", "_PE")}},
    },
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("zoo")
    (workdir / "suite.yaml").write_text(yaml.safe_dump(SUITE))
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO_ROOT / "workflow/Snakefile"),
               "--directory", str(workdir), "--configfile", str(workdir / "suite.yaml"), "--cores", "2"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr[-4000:]
    return workdir


def test_every_model_trains_on_every_task_through_the_workflow(run):
    suite = load_suite(SUITE)
    for job in suite.runs():
        metrics = json.loads((run / "results" / "runs" / job["dataset"] / job["model"] / f"seed{job['seed']}"
                              / f"fold{job['fold']}" / "metrics.json").read_text())
        assert metrics["epochs"] == 1 and math.isfinite(metrics["test"]["metric"]), job
        assert math.isfinite(metrics["train"]["loss"]), job
        config = suite.run_config(job["dataset"], job["model"], job["seed"])
        meta = suite.datasets[job["dataset"]].meta
        assert metrics["num_params"] == count_parameters(build_model(config, meta)), job
    for dataset, benchmark in suite.benchmarks.items():
        table = pd.read_csv(run / "results" / "tables" / f"{dataset}.csv")
        baselines = ["k-NN heuristic (k=2)"] if dataset == "TSP" else []
        assert sorted(table["model"]) == sorted([*benchmark.models, *baselines])


def test_tsp_is_labelled_in_shard_jobs_and_reports_the_knn_baseline(run):
    shards = sorted(p.name for p in (run / "results/datasets/TSP/label_shards").iterdir())
    assert shards == ["0.parquet", "1.parquet", "2.parquet"]  # 8 instances in shards of 3
    assert "TSP shard 3/3: 2/2 (100%)" in (run / "results/logs/dataset/TSP_label_shard2.log").read_text()
    direct = run / "direct"  # merging the shards gives the dataset generated in one go, byte for byte
    generate_dataset("tsp", "TSP", SUITE["datasets"]["TSP"]["params"], 2, direct)
    assert (direct / "graphs.parquet").read_bytes() == (run / "results/datasets/TSP/graphs.parquet").read_bytes()
    table = pd.read_csv(run / "results/tables/TSP.csv").set_index("model")
    baseline = json.loads((run / "results/baselines/TSP/knn_k2.json").read_text())
    row = table.loc["k-NN heuristic (k=2)"]
    assert row["test_metric_mean"] == pytest.approx(baseline["test"]["metric"]) and row["params"] == 0
    assert baseline["config"]["batch_size"] == 64  # most models' (RingGNN / 3WLGNN use 4)


def test_budget_entry_trains_the_fitted_width(run):
    metrics = json.loads((run / "results/runs/CSL/GIN-fit/seed1/fold0/metrics.json").read_text())
    assert metrics["config"]["L"] == 2 and abs(metrics["num_params"] - 20000) / 20000 < 0.05
    wider = {**metrics["config"], "hidden_dim": metrics["config"]["hidden_dim"] + 1}
    narrower = {**metrics["config"], "hidden_dim": metrics["config"]["hidden_dim"] - 1}
    meta = describe_dataset("CSL")
    for other in (wider, narrower):
        assert abs(count_parameters(build_model(other, meta)) - 20000) >= abs(metrics["num_params"] - 20000)


def test_original_dense_schedule_is_recorded_and_differs_from_minibatching(run):
    original = json.loads((run / "results/runs/CSL/3WLGNN-original/seed1/fold0/metrics.json").read_text())
    minibatch = json.loads((run / "results/runs/CSL/3WLGNN/seed1/fold0/metrics.json").read_text())
    assert original["config"]["dense_schedule"] == "original" and "dense_schedule" not in minibatch["config"]
    assert original["train"]["loss"] != minibatch["train"]["loss"]


def test_graph_theory_prop_reports_each_task(run):
    metrics = json.loads((run / "results/runs/GraphTheoryProp/GIN/seed1/fold0/metrics.json").read_text())
    tasks = [name for name, _ in metrics["test"]["per_task"]]
    assert tasks == ["sssp", "eccentricity", "graph_laplacian_features", "is_connected", "diameter", "spectral_radius"]
    scores = [score for _, score in metrics["test"]["per_task"]]  # overall = log10 of the mean of the six MSEs
    assert metrics["test"]["metric"] == pytest.approx(math.log10(sum(10**s for s in scores) / 6), rel=1e-6)
    header = (run / "results/tables/GraphTheoryProp").with_suffix(".md").read_text().splitlines()[2]
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert cells[4:6] == ["Paper", "vs paper"] and cells[6:12] == [f"Test {t}" for t in tasks]
