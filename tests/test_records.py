"""One run record: every protocol's jobs write their runs in one schema, read back by one call."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from gnnbench.config.presets import run_config
from gnnbench.data.meta import read_meta
from gnnbench.errors import DataError
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.protocols import fair_comparison
from gnnbench.protocols.benchmarking_gnns import train as benchmarking_gnns_train
from gnnbench.protocols.fair_comparison import select as fair_comparison_select
from gnnbench.protocols.fair_comparison import train as fair_comparison_train
from gnnbench.protocols.pitfalls import train as pitfalls_train
from gnnbench.records import (
    COLUMNS,
    HISTORY_COLUMNS,
    SCHEMA,
    history_frame,
    history_path,
    read_histories,
    read_runs,
    record,
    write_records,
)


def test_a_record_fills_nulls_and_turns_nan_scores_into_null(tmp_path):
    row = record(protocol="p", dataset="D", model="M", config={"model": "GCN", "seed": 3}, test_score=math.nan,
                 val_score=71.5, epochs=4)
    assert set(row) == set(COLUMNS) and row["test_score"] is None and row["val_score"] == 71.5
    assert row["architecture"] == "GCN" and row["variant"] is None  # no protocol named: no default variant
    assert row["seed"] == 3 and row["stage"] == "run" and row["init"] == 0
    assert json.loads(row["config"]) == {"model": "GCN", "seed": 3} and len(row["run_id"]) == 16
    with pytest.raises(ValueError, match="not a run-record column"):
        record(protocol="p", dataset="D", model="M", config={}, accuracy=1.0)
    write_records(tmp_path / "a" / "x.parquet", [row])
    assert pq.read_schema(tmp_path / "a" / "x.parquet").equals(SCHEMA, check_metadata=False)
    with pytest.raises(DataError, match="does not exist"):
        read_runs([tmp_path / "missing.parquet"])
    (tmp_path / "a" / "bad.parquet").write_text("not parquet")
    with pytest.raises(DataError, match="corrupt"):
        read_runs(tmp_path / "a")


@pytest.fixture(scope="module")
def records_folder(tmp_path_factory, datasets):
    """One small job of each protocol, each writing its records under one folder (as the workflow does)."""
    root = tmp_path_factory.mktemp("records")
    records = root / "results" / "records"
    # benchmarking-gnns: one run (CSL, fold 0)
    config = run_config("CSL_graph_classification_GCN_CSL_PE_100k",
                        {"L": 2, "hidden_dim": 16, "out_dim": 16, "batch_size": 8, "epochs": 2})
    benchmarking_gnns_train.train(dataset_dir=datasets["CSL"], splits_path=datasets["CSL_splits"], fold=0,
                                  config=config, out_dir=root / "p1", pe_path=datasets["CSL_pe"], threads=1,
                                  label="GCN-PE",
                                  records_out=records / "benchmarking-gnns" / "CSL" / "GCN-PE" / "seed41_fold0.parquet")
    # pitfalls: two splits x two initialisations
    generate_dataset("csbm", "CSBM", {"num_nodes": 200, "num_classes": 3, "num_features": 8}, 1, root / "CSBM")
    make_split_file(root / "CSBM", "random_per_class",
                    {"splits": 2, "train_per_class": 10, "val_per_class": 10, "seed": 0}, root / "csbm.json")
    pitfalls_train.run_chunk(dataset_dir=root / "CSBM", splits_path=root / "csbm.json", splits=[0, 1],
                       config=run_config("pitfalls_GCN", {"num_epochs": 5}, protocol="pitfalls"), inits=2, seed=1,
                       out_dir=root / "p2", threads=1, label="GCN",
                       records_out=records / "pitfalls" / "CSBM" / "GCN" / "chunk0.parquet")
    # fair-comparison: two inner runs, the selection, two final runs
    generate_dataset("graph_families", "GF", {"num_graphs": 60}, 1, root / "GF")
    make_split_file(root / "GF", "stratified_kfold", {"folds": 3, "val_fraction": 0.1, "seed": 0}, root / "gf.json")
    base = {"model": "DeepMultisets", "hidden_units": 8, "batch_size": 32, "epochs": 3,
            **fair_comparison.TRAINING_DEFAULTS, "patience": 2}
    configs = [{**base, "learning_rate": lr} for lr in (0.01, 0.001)]
    fold = root / "p3" / "fold0"
    common = {"dataset_dir": root / "GF", "splits_path": root / "gf.json", "fold": 0, "seed": 0, "device": "cpu",
              "label": "Baseline"}
    fair_comparison_train.run_inner(configs=configs, positions=[0, 1], out=fold / "inner" / "part0.parquet",
                              records_out=records / "fair-comparison" / "GF" / "Baseline" / "fold0_inner0.parquet",
                              **common)
    fair_comparison_select.select([fold / "inner" / "part0.parquet"], fold / "selection.json", dataset="GF",
                           model="Baseline", fold=0)
    fair_comparison_train.run_final(selection_path=fold / "selection.json", runs=2, holdout="fresh",
                              out=fold / "final.parquet", history_out=fold / "final_history.parquet",
                              records_out=records / "fair-comparison" / "GF" / "Baseline" / "fold0_final.parquet",
                              **common)
    return records


def test_every_run_of_a_results_folder_is_one_read_parquet_call(records_folder):
    runs = pd.read_parquet(records_folder)
    assert set(COLUMNS) <= set(runs.columns) and len(runs) == 1 + 4 + 2 + 2
    assert runs.groupby(["protocol", "stage"]).size().to_dict() == {
        ("benchmarking-gnns", "run"): 1, ("pitfalls", "run"): 4, ("fair-comparison", "inner"): 2,
        ("fair-comparison", "final"): 2}
    assert runs["run_id"].is_unique
    ours = read_runs(records_folder)
    assert list(ours.columns) == list(COLUMNS) and len(ours) == len(runs)


def test_each_protocol_fills_the_shared_columns(records_folder):
    runs = read_runs(records_folder)

    def of(protocol, stage):
        return runs[(runs["protocol"] == protocol) & (runs["stage"] == stage)]

    p1 = of("benchmarking-gnns", "run").iloc[0]
    assert p1["model"] == "GCN-PE" and p1["architecture"] == "GCN" and p1["metric"] == "accuracy"
    assert p1["scored_epoch"] == p1["epochs"] - 1 and p1["num_params"] > 0 and p1["seed"] == 41
    assert all(p1[f"{part}_score"] >= 0 for part in ("train", "val", "test"))
    p2 = of("pitfalls", "run")
    assert sorted(zip(p2["split"], p2["init"], strict=True)) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert (p2["scored_epoch"] < p2["epochs"]).all() and p2["test_score"].between(0, 100).all()
    inner, final = of("fair-comparison", "inner"), of("fair-comparison", "final")
    assert inner["test_score"].isna().all() and inner["val_score"].notna().all()
    assert sorted(final["init"]) == [0, 1] and final["test_score"].notna().all()
    assert final["config_id"].nunique() == 1 and final["config_id"].iloc[0] in set(inner["config_id"])
    for frame in (p2, inner, final):
        assert frame["higher_is_better"].all() and (frame["metric"] == "accuracy").all()
    # the variant: which paper's layers (each protocol's own zoo here)
    assert (p1["variant"], set(p2["variant"]), set(final["variant"])) == ("dwivedi2020", {"shchur2018"}, {"errica2020"})


def test_split_schemes_and_protocol_values_of_each_protocol(records_folder):
    """Each protocol fills split_scheme; P1 keeps its table's values in ``extra``; P3 counts the weights."""
    from gnnbench.models.build import num_parameters
    from gnnbench.papers import ERRICA2020
    from gnnbench.records import extras

    root = records_folder.parent.parent
    runs = read_runs(records_folder)
    schemes = runs.groupby("protocol")["split_scheme"].agg(set).to_dict()
    assert schemes == {"benchmarking-gnns": {"stratified_kfold"}, "pitfalls": {"random_per_class"},
                       "fair-comparison": {"stratified_kfold"}}
    p1 = runs[runs["protocol"] == "benchmarking-gnns"]
    metrics = json.loads((root / "p1" / "metrics.json").read_text())
    assert extras(p1) == [{"seconds_per_epoch": metrics["seconds_per_epoch"]}]  # CSL: no per-task scores
    assert p1["seconds"].iloc[0] == metrics["total_seconds"]
    assert extras(runs[runs["protocol"] == "pitfalls"]) == [{}] * 4
    p3 = runs[runs["protocol"] == "fair-comparison"]
    # the configuration's depth, for the tables (which do not load the model registry): DeepMultisets has no layers
    assert extras(p3) == [{"layers": None}] * len(p3)
    for _, r in p3.iterrows():  # counted where the job builds the model; here from the config, independently
        config = json.loads(r["config"])
        assert r["num_params"] == num_parameters(config, read_meta(root / "GF"), default_variant=ERRICA2020) > 0


def test_significance_from_records_equals_the_job_files(records_folder):
    """The paired-test scores read from the records equal those the protocols' own files give: P2 record scores
    are the runs.parquet test accuracies (percent), a split's score their mean over the inits; a P3 fold's score the
    mean of its final.parquet test accuracies."""
    from gnnbench.protocols.registry import get_protocol

    root = records_folder.parent.parent
    p2_runs = pd.read_parquet(root / "p2" / "runs.parquet").sort_values(["split", "init"])
    p2_file = records_folder / "pitfalls" / "CSBM" / "GCN" / "chunk0.parquet"
    p2 = read_runs([p2_file]).sort_values(["split", "init"])
    assert p2_runs["test_accuracy"].between(1, 100).all()  # percent, not a fraction
    assert p2["test_score"].tolist() == p2_runs["test_accuracy"].tolist()
    scores, metric, higher = get_protocol("pitfalls").significance_scores([p2_file])
    assert (metric, higher, scores["unit"].tolist()) == ("accuracy", True, [0, 1])
    previous = p2_runs.groupby(["model", "split"], sort=False)["test_accuracy"].mean()  # the runs.parquet reading
    assert scores["score"].tolist() == previous.tolist()
    assert scores["score"].tolist() == pytest.approx([p2_runs[p2_runs["split"] == k]["test_accuracy"].mean()
                                                      for k in (0, 1)], rel=1e-15)
    p3_files = sorted((records_folder / "fair-comparison").rglob("*.parquet"))  # inner and final: stage decides
    scores, _, _ = get_protocol("fair-comparison").significance_scores(p3_files)
    finals = pd.read_parquet(root / "p3" / "fold0" / "final.parquet")
    assert scores["unit"].tolist() == [0]
    assert scores["score"].iloc[0] == pytest.approx(float(np.mean(finals["test_accuracy"])), rel=1e-15)


# ------------------------------------------------------------------------------------------------ history record


def test_a_history_lies_beside_its_record_in_a_tree_of_its_own(tmp_path):
    assert history_path("results/records/pitfalls/CSBM/GCN/chunk0.parquet") == \
        Path("results/histories/pitfalls/CSBM/GCN/chunk0.parquet")
    assert history_path("runs/gcn/records/run.parquet") == Path("runs/gcn/histories/run.parquet")
    assert history_path(tmp_path / "run0.parquet") == tmp_path / "run0.history.parquet"  # no records folder
    row = record(protocol="p", dataset="D", model="M", config={"model": "GCN"}, epochs=2)
    epochs = [{"epoch": 0, "lr": 0.1, "train_loss": 2.0, "train_metric": 40.0, "val_loss": 2.5, "seconds": 0.5},
              {"epoch": 1, "lr": 0.05, "train_loss": 1.0, "train_metric": 60.0, "val_loss": 1.5, "seconds": 0.25}]
    write_records(tmp_path / "run0.parquet", [row], history=history_frame(epochs, row["run_id"]))
    history = read_histories([tmp_path / "run0.history.parquet"])
    assert list(history.columns) == list(HISTORY_COLUMNS) and history["run_id"].tolist() == [row["run_id"]] * 2
    assert history["train_score"].tolist() == [40.0, 60.0] and history["lr"].tolist() == [0.1, 0.05]
    assert history["test_score"].isna().all()  # a value the job does not keep is null
    assert len(read_runs(tmp_path)) == 1  # the folder's records: the history beside them is skipped
    write_records(tmp_path / "base.parquet", [row], history=[])  # a baseline trains no epoch: no rows
    assert read_histories([tmp_path / "base.history.parquet"]).empty


def test_every_job_writes_the_history_of_its_runs(records_folder):
    """Every record file has its history file (same path under results/histories); every run has one row per epoch
    trained, joined on run_id, and the rows are the job's own per-epoch files' values."""
    root = records_folder.parent.parent
    histories = records_folder.parent / "histories"
    assert sorted(p.relative_to(histories) for p in histories.rglob("*.parquet")) == sorted(
        p.relative_to(records_folder) for p in records_folder.rglob("*.parquet"))
    runs, history = read_runs(records_folder), read_histories(histories)
    assert history["run_id"].value_counts().reindex(runs["run_id"]).tolist() == runs["epochs"].tolist()
    joined = history.merge(runs[["run_id", "protocol", "stage", "split", "init"]], on="run_id")
    p1 = joined[joined["protocol"] == "benchmarking-gnns"]
    own = pd.read_parquet(root / "p1" / "history.parquet")
    for ours, theirs in (("train_score", "train_metric"), ("val_loss", "val_loss"), ("test_score", "test_metric"),
                         ("lr", "lr"), ("seconds", "seconds")):
        assert p1[ours].tolist() == own[theirs].tolist(), ours
    p2 = joined[joined["protocol"] == "pitfalls"].sort_values(["split", "init", "epoch"])
    own = pd.read_parquet(root / "p2" / "history.parquet").sort_values(["split", "init", "epoch"])
    assert p2["val_score"].tolist() == own["val_accuracy"].tolist()
    assert p2["train_loss"].tolist() == own["train_loss"].tolist()
    assert (p2["lr"] == 0.01).all() and p2["test_score"].isna().all()  # pitfalls_GCN's constant rate (Table 4)
    final = joined[joined["stage"] == "final"].sort_values(["init", "epoch"])
    own = pd.read_parquet(root / "p3" / "fold0" / "final_history.parquet").sort_values(["run", "epoch"])
    assert final["test_score"].tolist() == own["test_accuracy"].tolist()
    assert final["val_loss"].tolist() == own["val_loss"].tolist()
    assert joined[joined["stage"] == "inner"]["test_score"].isna().all()  # model selection never sees the test fold
