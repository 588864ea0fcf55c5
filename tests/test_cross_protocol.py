"""Every model under every protocol where the task fits, end to end through Snakemake on the real files: the
benchmark's GIN and GatedGCN under fair-comparison on ENZYMES (official splits), the benchmark's GCN, GAT and GatedGCN
under pitfalls on CORA (their initialisations one after another: they have no stacked form), and Errica et al.'s GIN
under benchmarking-gnns on ENZYMES with the benchmark's split. A suite entry names the model (a preset of its own
paper) and the protocol, nothing else: the architecture comes from the preset, the training from the protocol.
Each table holds the foreign models beside the protocol's own with the same columns filled, and every run is one row
of the one run record (``pandas.read_parquet("results/records")``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from test_download import LocalServer

from gnnbench.papers import DWIVEDI2020

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "real"
NEEDED = [SHARED / "tu" / "ENZYMES.zip", SHARED / "splits" / "benchmarking-gnns" / "TUs_ENZYMES_test.index",
          SHARED / "splits" / "errica" / "CHEMICAL" / "ENZYMES_splits.json", SHARED / "planetoid" / "cora" / "raw"]
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not all(p.exists() for p in NEEDED),
                                                   reason="real ENZYMES / CORA files not available (../shared absent)")]

# columns about the published number: empty for a model that is not the paper's own network
PAPER_COLUMNS = ("paper", "paper_mean", "paper_std", "paper_n", "paper_row", "diff_vs_paper", "z_vs_paper", "verdict",
                 "setting")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cross")
    server = LocalServer()
    server.routes["/tu/ENZYMES.zip"] = (SHARED / "tu" / "ENZYMES.zip").read_bytes()
    server.routes["/s/ENZYMES_splits.json"] = (SHARED / "splits/errica/CHEMICAL/ENZYMES_splits.json").read_bytes()
    for part in ("train", "val", "test"):
        server.routes[f"/idx/ENZYMES_{part}.index"] = (
            SHARED / "splits" / "benchmarking-gnns" / f"TUs_ENZYMES_{part}.index").read_bytes()
    for path in (SHARED / "planetoid" / "cora" / "raw").iterdir():
        server.routes[f"/cora/{path.name}"] = path.read_bytes()
    errica_gin = {"batch_size": 32, "hidden_units": [32, 32], "train_eps": False, "aggregation": "sum",
                  "dropout": 0.0}
    suite = {
        "datasets": {
            "ENZYMES": {"generator": "tu", "params": {"name": "ENZYMES", "mirror": server.url + "/tu"},
                        "split": {"scheme": "published", "mirror": server.url + "/s"}},
            "CORA": {"generator": "planetoid", "params": {"name": "cora", "mirror": server.url + "/cora"},
                     "split": {"scheme": "random_per_class", "splits": 1, "seed": 2018}},
            "ENZYMES-bench": {"generator": "tu", "params": {"name": "ENZYMES", "variant": DWIVEDI2020,
                                                            "mirror": server.url + "/tu"},
                              "split": {"scheme": "published", "source": DWIVEDI2020,
                                        "mirror": server.url + "/idx"}}},
        "benchmarks": {
            "ENZYMES": {"protocol": "fair-comparison", "folds": [0], "final_runs": 1,
                        "set": {"epochs": 2, "patience": 2},
                        "models": {"GIN": {"preset": "fair_GIN", "grid": {k: [v] for k, v in errica_gin.items()}},
                                   "GIN-benchmark": "TUs_graph_classification_GIN_ENZYMES_100k",
                                   "GatedGCN-benchmark": "TUs_graph_classification_GatedGCN_ENZYMES_100k"}},
            "CORA": {"protocol": "pitfalls", "inits": 2, "splits_per_job": 1, "set": {"num_epochs": 4},
                     "models": {"GCN": "pitfalls_GCN",
                                "GCN-benchmark": "WikiCS_node_classification_GCN_100k",
                                "GAT-benchmark": "WikiCS_node_classification_GAT_100k",
                                "GatedGCN-benchmark": "WikiCS_node_classification_GatedGCN"}},
            "ENZYMES-bench": {"seeds": [41], "folds": [9], "set": {"epochs": 2},
                              "models": {"GIN": "TUs_graph_classification_GIN_ENZYMES_100k",
                                         "GIN-errica": {"preset": "fair_GIN",
                                                        "set": {k: v for k, v in errica_gin.items()
                                                                if k != "batch_size"}}}}},
    }
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    try:
        proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow/Snakefile"),
                               "--configfile", "suite.yaml", "--cores", "2", "-q"], cwd=tmp, capture_output=True,
                              text=True, timeout=1500)
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr[-4000:]
    return tmp


def filled_like_own(table: pd.DataFrame, own: str, foreign: list[str]) -> None:
    """Every column the protocol's own model fills (the paper comparison aside) is filled for the foreign models."""
    table = table.set_index("model")
    for column in table.columns:
        if column in PAPER_COLUMNS or pd.isna(table.loc[own, column]) or table.loc[own, column] == "":
            continue
        for label in foreign:
            value = table.loc[label, column]
            assert not (pd.isna(value) or value == ""), (label, column)


def test_the_benchmarks_networks_under_fair_comparison(results):
    table = pd.read_csv(results / "results/tables/ENZYMES.csv", keep_default_na=True)
    assert list(table["model"]) == ["GIN", "GIN-benchmark", "GatedGCN-benchmark"]
    filled_like_own(table, "GIN", ["GIN-benchmark", "GatedGCN-benchmark"])
    rows = table.set_index("model")
    # the paper's ENZYMES GIN (Errica et al. Table 3) sits beside Errica's GIN only
    assert rows.loc["GIN", "paper"] == "59.6 ± 4.5"
    assert all(pd.isna(rows.loc[m, "paper"]) for m in ("GIN-benchmark", "GatedGCN-benchmark"))
    # a fold score is a mean of final runs' accuracies over the 60 graphs of official test fold 0
    for label in rows.index:
        final = pd.read_parquet(results / f"results/runs/ENZYMES/{label}/fold0/final.parquet")
        assert len(final) == 1 and final["test_accuracy"].iloc[0] * 60 / 100 == pytest.approx(
            round(final["test_accuracy"].iloc[0] * 60 / 100))
        assert rows.loc[label, "test_mean"] == pytest.approx(final["test_accuracy"].mean())


def test_the_benchmarks_networks_under_pitfalls_train_their_inits_one_after_another(results):
    table = pd.read_csv(results / "results/tables/CORA.csv")
    foreign = ["GCN-benchmark", "GAT-benchmark", "GatedGCN-benchmark"]
    assert list(table["model"]) == ["GCN", *foreign]
    filled_like_own(table, "GCN", foreign)
    assert (table["runs"] == 2).all()  # 1 split x 2 initialisations each
    rows = table.set_index("model")
    assert rows.loc["GCN", "paper_mean"] == 81.5 and all(pd.isna(rows.loc[m, "paper_mean"]) for m in foreign)
    for label in table["model"]:
        runs = pd.read_parquet(results / f"results/runs/CORA/{label}/chunk0/runs.parquet")
        assert sorted(runs["init"]) == [0, 1] and runs["seed"].nunique() == 2  # two initialisations, two seeds
        assert (runs["epochs"] <= 4).all()  # the suite's num_epochs, a training key of the protocol
        # a test accuracy over CORA's test nodes of this split: a whole number of nodes
        test_nodes = len(json.loads((results / "results/splits/CORA/splits.json").read_text())["folds"][0]["test"])
        assert np.allclose(runs["test_accuracy"] * test_nodes / 100, np.round(runs["test_accuracy"] * test_nodes / 100))


def test_erricas_gin_under_the_benchmark_with_its_split(results):
    table = pd.read_csv(results / "results/tables/ENZYMES-bench.csv")
    assert list(table["model"]) == ["GIN", "GIN-errica"]
    filled_like_own(table, "GIN", ["GIN-errica"])
    metrics = json.loads((results / "results/runs/ENZYMES-bench/GIN-errica/seed41/fold9/metrics.json").read_text())
    assert metrics["config"]["variant"] == "errica2020" and metrics["config"]["hidden_units"] == [32, 32]
    assert metrics["epochs"] == 2 and metrics["config"]["init_lr"] > 0  # the benchmark's training keys
    assert metrics["test"]["metric"] * 60 / 100 == pytest.approx(round(metrics["test"]["metric"] * 60 / 100))


def test_every_run_is_one_record_of_one_schema(results):
    runs = pd.read_parquet(results / "results/records")
    by = runs.groupby(["protocol", "dataset", "model", "stage"]).size().to_dict()
    assert by == {
        # Errica's GIN grid keeps its early-stopping dimension (accuracy, loss): two model-selection runs
        ("fair-comparison", "ENZYMES", "GIN", "inner"): 2, ("fair-comparison", "ENZYMES", "GIN", "final"): 1,
        ("fair-comparison", "ENZYMES", "GIN-benchmark", "inner"): 1,
        ("fair-comparison", "ENZYMES", "GIN-benchmark", "final"): 1,
        ("fair-comparison", "ENZYMES", "GatedGCN-benchmark", "inner"): 1,
        ("fair-comparison", "ENZYMES", "GatedGCN-benchmark", "final"): 1,
        **{("pitfalls", "CORA", m, "run"): 2 for m in ("GCN", "GCN-benchmark", "GAT-benchmark", "GatedGCN-benchmark")},
        ("benchmarking-gnns", "ENZYMES-bench", "GIN", "run"): 1,
        ("benchmarking-gnns", "ENZYMES-bench", "GIN-errica", "run"): 1}
    variant = runs.set_index(["dataset", "model"])["variant"].groupby(level=[0, 1]).first().to_dict()
    assert variant[("ENZYMES", "GIN")] == "errica2020" and variant[("ENZYMES", "GIN-benchmark")] == "dwivedi2020"
    assert variant[("CORA", "GCN")] == "shchur2018" and variant[("CORA", "GatedGCN-benchmark")] == "dwivedi2020"
    assert variant[("ENZYMES-bench", "GIN-errica")] == "errica2020"
    # model selection never looks at the test fold: inner runs have no test score, every other run has one
    inner = runs["stage"] == "inner"
    assert runs.loc[inner, "test_score"].isna().all() and runs.loc[inner, "val_score"].notna().all()
    assert runs.loc[~inner, "test_score"].notna().all() and runs["run_id"].is_unique
