"""The fair-comparison protocol (Errica et al.; docs/protocols/fair-comparison.md): official split import, grids as
data, the early-stopping procedure, selection, final runs, reports, bad input, and the whole DAG through Snakemake
on the real ENZYMES and IMDB-BINARY zips with the paper's split files.

Expected values come from the released code diningphil/gnn-comparison (grid sizes of its ``config_*.yml``, the
sizes of its ``data_splits/`` files), from the paper (Tables 3 and 4, "more than 47,000" runs), from the real split
files read here with plain ``json``, and from hand-computed sequences (patience, learning rates).
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch
import yaml

from gnnbench.data.meta import read_meta
from gnnbench.errors import ConfigError, DataError
from gnnbench.io import sha256_json
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.protocols import fair_comparison as fc
from gnnbench.protocols.fair_comparison import grid as fc_grid
from gnnbench.protocols.fair_comparison import select as fc_select
from gnnbench.protocols.fair_comparison import tables as fc_tables
from gnnbench.protocols.fair_comparison import train as fc_train
from gnnbench.records import read_runs
from gnnbench.splits import read_fair_comparison_folds, read_splits
from gnnbench.suite import load_suite
from gnnbench.training.best_epoch import learning_rate
from gnnbench.training.stopping import EarlyStopping

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "real"
SPLITS = SHARED / "splits" / "errica"
needs_real = pytest.mark.skipif(not (SHARED / "tu").is_dir() or not SPLITS.is_dir(),
                                reason="real TU zips / Errica split files not available (../shared/data/real absent)")


# ------------------------------------------------------------------------------------------------ grids as data

def suite(models: dict, dataset: dict | None = None, **benchmark) -> dict:
    return {"datasets": {"GF": dataset or {"generator": "graph_families", "params": {"num_graphs": 60}}},
            "benchmarks": {"GF": {"protocol": "fair-comparison", "models": models, **benchmark}}}


@pytest.mark.parametrize(("preset", "size"), [
    ("fair_DGCNN", 48), ("fair_DiffPool", 48), ("fair_ECC", 32), ("fair_GIN", 128), ("fair_GraphSAGE", 72),
    ("fair_Baseline_chemical", 108), ("fair_Baseline_ENZYMES", 72), ("fair_Baseline_IMDB", 108),
    ("fair_Baseline_social", 24)])
def test_preset_grids_have_the_papers_sizes(preset, size):
    # the released config_*.yml at HEAD (GIN 128, GraphSAGE 72, baselines) and the published grids restored from
    # their commented-out values (DiffPool 48, ECC 32; docs/protocols/fair-comparison.md#grids)
    benchmark = load_suite(suite({"M": preset})).benchmarks["GF"]
    configs = benchmark.grids["M"]
    assert len(configs) == size
    assert len({fc_grid.config_id(c) for c in configs}) == size  # every grid point is a distinct configuration
    assert {c["early_stopping"] for c in configs} == {"accuracy", "loss"} and all(c["patience"] == 500 for c in configs)


def test_set_removes_a_dimension_and_grid_replaces_one():
    benchmark = load_suite(suite({"GIN": {"preset": "fair_GIN", "set": {"aggregation": "sum"},
                                          "grid": {"hidden_units": [[32], [16, 16]]}}})).benchmarks["GF"]
    configs = benchmark.grids["GIN"]
    assert len(configs) == 2 * 2 * 2 * 2 * 2  # batch 2 × hidden 2 × eps 2 × dropout 2 × stopping 2 (paper: 64 → set)
    assert {c["aggregation"] for c in configs} == {"sum"}
    assert [c["hidden_units"] for c in configs[:2]] == [[32], [32]] and configs[-1]["hidden_units"] == [16, 16]
    # grid order: the written order, last dimension fastest
    assert [c["early_stopping"] for c in configs[:2]] == ["accuracy", "loss"]
    assert configs[0]["batch_size"] == 32 and configs[-1]["batch_size"] == 128


@pytest.mark.parametrize(("models", "message"), [
    ({"GIN": {"preset": "fair_GIN", "grid": {"hiden_units": [[8]]}}}, "unknown config key 'hiden_units'"),
    ({"GIN": {"preset": "fair_GIN", "grid": {"dropout": [1.5]}}}, "dropout must be in [0, 1)"),
    ({"GIN": {"preset": "fair_GIN", "grid": {"aggregation": ["median"]}}}, "aggregation must be one of"),
    ({"GIN": {"preset": "fair_GIN", "budget": 1000}}, "parameter budgets belong to protocol benchmarking-gnns"),
    ({"P": "pitfalls_GCN"}, "model GCN (shchur2018) cannot do graph_classification"),  # another zoo's node model
])
def test_bad_grids_are_one_line_config_errors(models, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")) as e:
        load_suite(suite(models))
    assert "\n" not in str(e.value)


def test_protocol_refuses_other_tasks_and_unknown_folds():
    with pytest.raises(ConfigError, match="compares graph classifiers"):
        load_suite(suite({"B": "fair_Baseline_social"}, {"generator": "sbm_pattern", "params": {
            "num_train": 4, "num_val": 2, "num_test": 2, "num_patterns": 2}}))
    with pytest.raises(ConfigError, match="fold 12 does not exist"):
        load_suite(suite({"B": "fair_Baseline_social"}, folds=[12]))


# ------------------------------------------------------------------------------------------------ training rules

def test_patience_on_accuracy_and_on_loss():
    # non-strict comparisons: a later tie becomes the best and resets the counter (the released
    # models/utils/EarlyStopper.py Patience)
    def run(criterion, seq):
        rule, saves, stop = EarlyStopping(criterion, 2, 1), [], None
        for e, (loss, a) in enumerate(seq):
            save, stop = rule.update(e, torch.tensor([loss]), torch.tensor([a]))
            saves.append(bool(save[0]))
        return saves, int(rule.best_epoch[0]), bool(stop[0])

    assert run("accuracy", [(1.0, 50.0), (0.9, 50.0), (0.8, 40.0), (0.7, 45.0)]) == ([True, True, False, False], 1,
                                                                                     True)
    assert run("loss", [(1.0, 10.0), (1.0, 90.0), (1.1, 95.0), (0.9, 0.0)]) == ([True, True, False, True], 3, False)


def test_learning_rate_schedules():
    gin = {"learning_rate": 0.01, "scheduler": "step", "scheduler_step_size": 50, "scheduler_gamma": 0.5}
    assert [learning_rate(gin, e) for e in (0, 49, 50, 99, 100)] == pytest.approx([0.01, 0.01, 0.005, 0.005, 0.0025])
    ecc = {"learning_rate": 0.1, "scheduler": "ecc_milestones", "scheduler_gamma": 0.1}
    assert [learning_rate(ecc, e) for e in (24, 25, 35, 45, 100)] == pytest.approx([0.1, 0.01, 0.001, 1e-4, 1e-4])


# ------------------------------------------------------------------------------------------------ selection

def write_part(path, rows):
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(rows), path)


def candidate(position, val, config):
    return {"position": position, "config_id": f"c{position}", "config": json.dumps(config), "seed": 1,
            "val_accuracy": val, "val_loss": 1.0, "train_accuracy": 90.0, "train_loss": 0.1, "best_epoch": 3,
            "epochs": 10, "stop_reason": "patience", "seconds": 1.0}


def test_selection_picks_the_best_validation_accuracy_ties_to_the_later_config(tmp_path):
    write_part(tmp_path / "p1.parquet", [candidate(2, 70.0, {"model": "GIN", "lr": 2}),
                                         candidate(3, 60.0, {"model": "GIN", "lr": 3})])
    write_part(tmp_path / "p0.parquet", [candidate(0, 70.0, {"model": "GIN", "lr": 0}),
                                         candidate(1, 65.0, {"model": "GIN", "lr": 1})])
    out = tmp_path / "selection.json"
    fc_select.select([tmp_path / "p1.parquet", tmp_path / "p0.parquet"], out, dataset="D", model="GIN", fold=4)
    body = fc_select.read_selection(out)
    assert body["chosen"]["position"] == 2 and body["chosen"]["config"] == {"model": "GIN", "lr": 2}
    assert [c["val_accuracy"] for c in body["candidates"]] == [70.0, 65.0, 70.0, 60.0] and body["fold"] == 4
    edited = json.loads(out.read_text())
    edited["chosen"]["config"]["lr"] = 99
    out.write_text(json.dumps(edited))
    with pytest.raises(DataError, match="edited by hand") as e:
        fc_select.read_selection(out)
    assert "\n" not in str(e.value)


# ------------------------------------------------------------------------------------------------ official splits

@needs_real
@pytest.mark.parametrize(("group", "name", "graphs", "test_size", "val_size"), [
    ("CHEMICAL", "ENZYMES", 600, {60}, {54}), ("COLLABORATIVE_DEGREE", "IMDB-BINARY", 1000, {100}, {90}),
    ("CHEMICAL", "DD", 1178, {117, 118, 119}, {106, 107})])
def test_official_split_files_import_as_folds(group, name, graphs, test_size, val_size):
    path = SPLITS / group / f"{name}_splits.json"
    folds = read_fair_comparison_folds(path, graphs)
    raw = json.loads(path.read_text())  # the file itself, read independently
    assert len(folds) == 10
    for fold, original in zip(folds, raw, strict=True):
        assert fold["test"] == original["test"]
        assert fold["train"] == original["model_selection"][0]["train"]
        assert fold["val"] == original["model_selection"][0]["validation"]
        assert len(fold["test"]) in test_size and len(fold["val"]) in val_size  # the released files' sizes
    assert sorted(i for f in folds for i in f["test"]) == list(range(graphs))


def split_file(tmp_path, folds) -> Path:
    path = tmp_path / "X_splits.json"
    path.write_text(json.dumps(folds))
    return path


def fold(test, train, val):
    return {"test": test, "model_selection": [{"train": train, "validation": val}]}


@pytest.mark.parametrize(("folds", "message"), [
    ([fold([0, 1], [2, 3], [4]), fold([2, 3], [0, 1], [9])], "fold 1 refers to graph 9 but the dataset has 5"),
    ([fold([0, 1], [2, 3], [3])], "disjoint and cover all 5 graphs"),
    ([fold([0, 1], [2, 3], [4]), fold([0, 1], [2, 3], [4])], "do not partition the graphs"),
    ([{"test": [0]}], "fold 0 lacks test / model_selection"),
    ({"test": [0]}, "expected a JSON list of outer folds"),
    ([fold([0, 1], [2, 3.5], [4])], "fold 0 train: expected a list of integer graph indices"),
])
def test_bad_split_files_are_one_line_errors(tmp_path, folds, message):
    with pytest.raises(DataError, match=message) as e:
        read_fair_comparison_folds(split_file(tmp_path, folds), 5)
    assert "\n" not in str(e.value) and "X_splits.json" in str(e.value)


def test_published_scheme_needs_a_published_split():
    with pytest.raises(ConfigError, match="no errica2020 split was published for dataset GF"):
        load_suite(suite({"B": "fair_Baseline_social"}, {"generator": "graph_families",
                                                         "split": {"scheme": "published"}}))
    spec = load_suite(suite({"B": "fair_Baseline_social"}, {"generator": "tu", "params": {
        "name": "IMDB-BINARY", "features": "degree"}, "split": {"scheme": "published"}}))
    assert spec.split_raw_files("GF") == ["resources/raw/tu/splits/COLLABORATIVE_DEGREE/IMDB-BINARY_splits.json"]


# ------------------------------------------------------------------------------------------------ runs in-process

@pytest.fixture(scope="module")
def families(tmp_path_factory):
    """A 90-graph graph_families dataset and its 3-fold split (written once for the in-process tests)."""
    root = tmp_path_factory.mktemp("gf")
    generate_dataset("graph_families", "GF", {"num_graphs": 90}, 1, root / "ds")
    make_split_file(root / "ds", "stratified_kfold", {"folds": 3, "val_fraction": 0.1, "seed": 0}, root / "s.json")
    return root


BASELINE = {"model": "DeepMultisets", "hidden_units": 16, "batch_size": 32, "learning_rate": 0.01, "epochs": 6,
            **fc.TRAINING_DEFAULTS, "patience": 3}


def test_inner_runs_touch_no_test_graph_and_score_the_best_epoch(families, tmp_path):
    configs = [{**BASELINE, "early_stopping": s} for s in ("accuracy", "loss")]
    out = tmp_path / "fold1" / "inner" / "part0.parquet"
    fc_train.run_inner(dataset_dir=families / "ds", splits_path=families / "s.json", fold=1, configs=configs,
                       positions=[0, 1], seed=3, out=out, device="cpu")
    rows = pq.read_table(out).to_pylist()
    assert [r["position"] for r in rows] == [0, 1] and all(0 <= r["val_accuracy"] <= 100 for r in rows)
    stored = fc_train.kept_runs(out)
    assert len(stored) == 2
    assert "test_accuracy" not in stored[0]["history"][0]  # model selection never evaluates the test fold
    # the score kept is the validation accuracy of the best epoch under the run's criterion
    for row in rows:
        run = next(r for r in stored if r["config_id"] == row["config_id"])
        best = run["history"][row["best_epoch"]]
        assert row["val_accuracy"] == best["val_accuracy"]
        key = "val_accuracy" if run["config"]["early_stopping"] == "accuracy" else "val_loss"
        pick = max if key == "val_accuracy" else min
        values = [h[key] for h in run["history"]]
        assert best[key] == pick(values) and row["best_epoch"] == max(
            i for i, v in enumerate(values) if v == pick(values))
    # a finished job run again (Snakemake's --forcerun) trains afresh, to the same rows
    out.unlink()
    fc_train.run_inner(dataset_dir=families / "ds", splits_path=families / "s.json", fold=1, configs=configs,
                       positions=[0, 1], seed=3, out=out, device="cpu")
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in pq.read_table(out).to_pylist()] == [
        {k: v for k, v in r.items() if k != "seconds"} for r in rows]


@pytest.mark.parametrize("holdout", ["fresh", "selection"])
def test_final_runs_hold_out_and_score_at_the_early_stopping_epoch(families, tmp_path, holdout):
    selection = tmp_path / "selection.json"
    body = {"format": 1, "dataset": "GF", "model": "B", "fold": 0, "candidates": [],
            "chosen": {"config_id": "x", "config": BASELINE, "val_accuracy": 50.0}}
    selection.write_text(json.dumps({**body, "checksum": sha256_json(body)}))
    out, hist = tmp_path / "final.parquet", tmp_path / "final_history.parquet"
    fc_train.run_final(dataset_dir=families / "ds", splits_path=families / "s.json", fold=0, selection_path=selection,
                 runs=3, holdout=holdout, seed=0, out=out, history_out=hist, device="cpu")
    runs = pq.read_table(out).to_pandas()
    history = pq.read_table(hist).to_pandas()
    assert list(runs["run"]) == [0, 1, 2] and len(set(runs["seed"])) == 3
    for _, r in runs.iterrows():
        h = history[history["run"] == r["run"]].set_index("epoch")
        assert r["test_accuracy"] == h.loc[r["best_epoch"], "test_accuracy"]
    splits = read_splits(families / "s.json")
    parts = splits.fold(0)
    stored = fc_train.kept_runs(out)
    data = fc_train._load(families / "ds", families / "s.json")
    holdouts = []
    for run in range(3):
        p = fc_train.final_parts(data, 0, run, holdout, fc_grid.run_seed(0, 0, 2**31 + run))
        assert np.array_equal(p["test"], parts["test"])
        assert set(p["train"]) | set(p["val"]) == set(parts["train"]) | set(parts["val"])
        assert not set(p["val"]) & set(p["train"]) and not set(p["val"]) & set(parts["test"])
        holdouts.append(tuple(sorted(p["val"])))
    if holdout == "selection":  # the released code: the model-selection hold-out for every final run
        assert set(holdouts) == {tuple(sorted(parts["val"]))}
    else:  # the paper's text: a fresh random 10 % per run
        assert len(set(holdouts)) == 3 and all(len(h) == len(parts["val"]) for h in holdouts)
    assert len(stored) == 3


# ------------------------------------------------------------------------------------------------ the whole DAG

@pytest.mark.slow
@needs_real
def test_enzymes_and_imdb_through_the_workflow_with_the_official_splits(server, tmp_path):
    server.routes["/tu/ENZYMES.zip"] = (SHARED / "tu" / "ENZYMES.zip").read_bytes()
    server.routes["/tu/IMDB-BINARY.zip"] = (SHARED / "tu" / "IMDB-BINARY.zip").read_bytes()
    for group, name in (("CHEMICAL", "ENZYMES"), ("COLLABORATIVE_DEGREE", "IMDB-BINARY")):
        server.routes[f"/s/{group}/{name}_splits.json"] = (SPLITS / group / f"{name}_splits.json").read_bytes()
    short = {"epochs": 3, "patience": 2}
    FOLDS = {"ENZYMES": [0, 1], "IMDB-BINARY": [3]}  # noqa: N806 - a table of the test
    config = {
        "datasets": {
            "ENZYMES": {"generator": "tu", "params": {"name": "ENZYMES", "mirror": server.url + "/tu"},
                        "split": {"scheme": "published", "mirror": server.url + "/s/CHEMICAL"}},
            "IMDB-BINARY": {"generator": "tu", "params": {"name": "IMDB-BINARY", "features": "degree",
                                                          "mirror": server.url + "/tu"},
                            "split": {"scheme": "published", "mirror": server.url + "/s/COLLABORATIVE_DEGREE"}}},
        "benchmarks": {name: {"protocol": "fair-comparison", "folds": FOLDS[name], "final_runs": 2, "set": short,
                              "models": {
                                  "Baseline": {"preset": baseline, "grid": {"learning_rate": [0.001],
                                                                            "hidden_units": [32], "l2": [0.0001]}},
                                  "GIN": {"preset": "fair_GIN", "grid": {
                                      "batch_size": [128], "hidden_units": [[32, 32]], "train_eps": [False],
                                      "aggregation": ["sum"], "dropout": [0.0]}}}}
                       for name, baseline in (("ENZYMES", "fair_Baseline_ENZYMES"),
                                              ("IMDB-BINARY", "fair_Baseline_IMDB"))},
    }
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(config))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow/Snakefile"), "--configfile",
                           "suite.yaml", "--cores", "2", "-q"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("ENZYMES", "IMDB-BINARY"):
        group = "CHEMICAL" if name == "ENZYMES" else "COLLABORATIVE_DEGREE"
        raw = json.loads((SPLITS / group / f"{name}_splits.json").read_text())
        splits = read_splits(tmp_path / f"results/splits/{name}/splits.json")
        assert splits.scheme == "published" and splits.num_folds == 10
        assert all(splits.folds[f]["test"] == raw[f]["test"] and splits.folds[f]["val"] == raw[f][
            "model_selection"][0]["validation"] for f in range(10))
        table = pd.read_csv(tmp_path / f"results/tables/{name}.csv").set_index("model")
        folds = pd.read_csv(tmp_path / f"results/tables/{name}_folds.csv")
        assert list(table.index) == ["Baseline", "GIN"] and (table["folds"] == len(FOLDS[name])).all()
        for label in ("Baseline", "GIN"):
            per_fold = folds[folds["model"] == label].sort_values("fold")
            assert list(per_fold["fold"]) == FOLDS[name]
            # fold score = mean of the final runs' test accuracies (each a multiple of 100 / |test fold|)
            for f, row in per_fold.set_index("fold").iterrows():
                final = pq.read_table(tmp_path / f"results/runs/{name}/{label}/fold{f}/final.parquet").to_pandas()
                assert row["test_accuracy"] == pytest.approx(final["test_accuracy"].mean())
                size = len(raw[f]["test"])
                assert all(math.isclose(a * size / 100, round(a * size / 100), abs_tol=1e-6)
                           for a in final["test_accuracy"])
                selection = fc_select.read_selection(tmp_path / f"results/runs/{name}/{label}/fold{f}/selection.json")
                assert row["val_accuracy"] == pytest.approx(selection["chosen"]["val_accuracy"])
            assert table.loc[label, "test_mean"] == pytest.approx(per_fold["test_accuracy"].mean())
            assert table.loc[label, "test_std"] == pytest.approx(per_fold["test_accuracy"].std(ddof=0))
        # the paper's numbers sit beside ours (Errica et al.: Table 3 ENZYMES, Table 4 with degree IMDB-B)
        paper = {"ENZYMES": ("65.2 ± 6.4", "59.6 ± 4.5"), "IMDB-BINARY": ("70.8 ± 5.0", "71.2 ± 3.9")}[name]
        assert (table.loc["Baseline", "paper"], table.loc["GIN", "paper"]) == paper
        assert table.loc["GIN", "median_layers"] == 2 and pd.isna(table.loc["Baseline", "median_layers"])
        assert "71.2 ± 3.9" in (tmp_path / f"results/tables/{name}.md").read_text() or name == "ENZYMES"
    assert (tmp_path / "resources/raw/tu/splits/CHEMICAL/ENZYMES_splits.json").is_file()
    # every run in one call (gnnbench.records): every model-selection run and 2 final runs per model and fold
    records = pd.read_parquet(tmp_path / "results" / "records")
    folds = sum(len(f) for f in FOLDS.values())
    inner = sum(pq.read_table(p).num_rows for p in (tmp_path / "results" / "runs").glob("*/*/fold*/inner/*.parquet"))
    assert records.groupby("stage").size().to_dict() == {"final": 2 * 2 * folds, "inner": inner}
    assert records.loc[records["stage"] == "inner", "test_score"].isna().all()


def test_a_killed_inner_job_resumes_to_the_results_of_an_uninterrupted_one(families, tmp_path, monkeypatch):
    import os
    import signal

    from gnnbench.training import best_epoch as holdout
    from gnnbench.training.preemption import Preempted

    configs = [{**BASELINE, "epochs": 8, "patience": 100}]
    kwargs = {"dataset_dir": families / "ds", "splits_path": families / "s.json", "fold": 2, "configs": configs,
              "positions": [0], "seed": 5, "device": "cpu"}
    fc_train.run_inner(out=tmp_path / "ref" / "part0.parquet", **kwargs)
    monkeypatch.setattr("gnnbench.protocols.fair_comparison.train.CHECKPOINT_SECONDS", 0.0)  # save every epoch
    real, calls = holdout._epoch_scores, {"n": 0}

    def killed_in_epoch_four(*args, **kw):
        calls["n"] += 1
        if calls["n"] == 7:  # epochs make two passes (train, val): the 7th is the fourth epoch's training pass
            os.kill(os.getpid(), signal.SIGTERM)
        return real(*args, **kw)

    monkeypatch.setattr(holdout, "_epoch_scores", killed_in_epoch_four)
    out = tmp_path / "b" / "part0.parquet"
    with pytest.raises(Preempted):
        fc_train.run_inner(out=out, **kwargs)
    assert not out.exists()
    from gnnbench.training.checkpoint import read_checkpoint

    checkpoint = out.with_name("part0.checkpoint.pt")
    assert read_checkpoint(checkpoint)["current"]["fit"]["run"]["states"][0]["epoch"] == 3  # the 4th epoch abandoned
    monkeypatch.setattr(holdout, "_epoch_scores", real)
    fc_train.run_inner(out=out, **kwargs)
    assert read_checkpoint(checkpoint)["finished"]  # the job is done: kept, never resumed
    [ref] = fc_train.kept_runs(tmp_path / "ref" / "part0.parquet")
    [got] = fc_train.kept_runs(out)
    strip = lambda h: [{k: v for k, v in row.items() if k != "seconds"} for row in h]  # noqa: E731
    assert len(got["history"]) == 8 and strip(got["history"]) == strip(ref["history"])
    assert got["val_accuracy"] == ref["val_accuracy"] and got["best_epoch"] == ref["best_epoch"]


def test_the_paper_suite_plans_the_papers_47100_runs():
    # 10 folds × (grid + 3 final runs) over the 14 dataset variants = 47,100 (the paper's "more than 47,000";
    # docs/protocols/fair-comparison.md#grids)
    loaded = load_suite(yaml.safe_load((ROOT / "config" / "suites" / "fair-comparison.yaml").read_text()))
    assert len(loaded.benchmarks) == 14
    runs = sum(len(b.folds) * (len(b.grids[m]) + b.final_runs) for b in loaded.benchmarks.values() for m in b.models)
    assert runs == 47_100
    assert sum(len(b.grids["GIN"]) for b in loaded.benchmarks.values()) == 14 * 64
    assert all(loaded.split_raw_files(d) for d in loaded.benchmarks)  # every benchmark on the official splits


def test_one_outer_fold_from_the_command_line(families, tmp_path, capsys):
    from gnnbench.cli import main

    out = tmp_path / "fold1"
    args = ["train", "fair-comparison", "--dataset", str(families / "ds"), "--splits",
            str(families / "s.json"), "--fold", "1", "--device", "cpu", "--final-runs", "2", "--out", str(out)]
    sets = ["epochs=4", "patience=2", "learning_rate=0.01", "l2=0.0001", "hidden_units=16"]
    assert main(args + ["--preset", "fair_Baseline_social"] + [x for s in sets for x in ("--set", s)]) == 0
    selection = fc_select.read_selection(out / "selection.json")
    # every dimension but early_stopping was fixed by --set: two candidates, one per criterion
    assert sorted(c["config"]["early_stopping"] for c in selection["candidates"]) == ["accuracy", "loss"]
    assert all(c["config"]["hidden_units"] == 16 for c in selection["candidates"])
    final = pq.read_table(out / "final.parquet").to_pandas()
    assert len(final) == 2 and (final["config_id"] == selection["chosen"]["config_id"]).all()
    printed = capsys.readouterr().out
    assert f"test accuracy {final['test_accuracy'].mean():.2f} (mean of 2 final runs)" in printed
    assert main(args) == 1
    assert "gnnbench: error: --preset: protocol fair-comparison starts from a grid" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ divergence

def test_selection_never_chooses_a_diverged_configuration_and_refuses_when_all_diverged(tmp_path):
    diverged = {**candidate(0, float("nan"), {"model": "GIN", "lr": 1e30}), "status": "diverged",
                "diverged_epoch": 0, "stop_reason": "diverged"}
    write_part(tmp_path / "p0.parquet", [diverged, {**candidate(1, 60.0, {"model": "GIN", "lr": 1}),
                                                    "status": "completed", "diverged_epoch": None}])
    body = fc_select.select([tmp_path / "p0.parquet"], tmp_path / "selection.json", dataset="D", model="GIN", fold=0)
    assert body["chosen"]["position"] == 1  # a NaN first candidate would otherwise be kept (NaN ≤ x is false)
    assert [c["status"] for c in body["candidates"]] == ["diverged", "completed"]
    write_part(tmp_path / "p1.parquet", [diverged])
    with pytest.raises(DataError, match="every one of the 1 configuration.* diverged") as e:
        fc_select.select([tmp_path / "p1.parquet"], tmp_path / "s1.json", dataset="D", model="GIN", fold=0)
    assert "\n" not in str(e.value) and not (tmp_path / "s1.json").exists()


def test_an_inner_run_with_a_huge_learning_rate_is_recorded_diverged_and_not_selected(families, tmp_path):
    configs = [{**BASELINE, "learning_rate": 1e30}, BASELINE]  # the diverging one first: it must not stay chosen
    out = tmp_path / "inner" / "part0.parquet"
    fc_train.run_inner(dataset_dir=families / "ds", splits_path=families / "s.json", fold=1, configs=configs,
                 positions=[0, 1], seed=3, out=out, device="cpu")
    bad, good = pq.read_table(out).to_pylist()
    assert bad["status"] == "diverged" and bad["stop_reason"] == "diverged" and math.isnan(bad["val_accuracy"])
    assert good["status"] == "completed" and good["diverged_epoch"] is None and good["stop_reason"] != "diverged"
    run = next(r for r in fc_train.kept_runs(out) if r["config_id"] == bad["config_id"])
    history = run["history"]  # training stopped at the epoch whose loss was not finite
    assert len(history) == bad["epochs"] == bad["diverged_epoch"] + 1
    assert not (math.isfinite(history[-1]["train_loss"]) and math.isfinite(history[-1]["val_loss"]))
    assert all(math.isfinite(h["train_loss"]) and math.isfinite(h["val_loss"]) for h in history[:-1])
    body = fc_select.select([out], tmp_path / "selection.json", dataset="GF", model="B", fold=1)
    assert body["chosen"]["position"] == 1


def test_a_final_run_that_diverges_is_recorded_and_the_tables_show_it(families, tmp_path, monkeypatch):
    from gnnbench.training import best_epoch as holdout

    real_train, real_scores, calls = fc_train._train_alone, holdout._epoch_scores, {"n": 0}

    def train(*args, **kwargs):  # the second final run's training loss turns NaN in its third epoch
        calls["n"] += 1
        if calls["n"] != 2:
            return real_train(*args, **kwargs)
        epochs = {"n": 0}

        def scores(model, batches, device, optimizer=None, clip=0.0):
            loss, accuracy = real_scores(model, batches, device, optimizer, clip)
            if optimizer is not None:
                epochs["n"] += 1
                if epochs["n"] >= 3:
                    return math.nan, accuracy
            return loss, accuracy

        monkeypatch.setattr(holdout, "_epoch_scores", scores)
        try:
            return real_train(*args, **kwargs)
        finally:
            monkeypatch.setattr(holdout, "_epoch_scores", real_scores)

    fold = tmp_path / "fold0"
    common = {"dataset_dir": families / "ds", "splits_path": families / "s.json", "fold": 0, "seed": 0,
              "device": "cpu", "label": "B"}
    records = [fold / "records" / "inner.parquet", fold / "records" / "final.parquet"]
    fc_train.run_inner(configs=[BASELINE], positions=[0], out=fold / "inner" / "part0.parquet",
                       records_out=records[0], **common)
    fc_select.select([fold / "inner" / "part0.parquet"], fold / "selection.json", dataset="GF", model="B", fold=0)
    monkeypatch.setattr(fc_train, "_train_alone", train)
    fc_train.run_final(selection_path=fold / "selection.json", runs=2, holdout="fresh", out=fold / "final.parquet",
                 history_out=fold / "final_history.parquet", records_out=records[1], **common)
    finals = pq.read_table(fold / "final.parquet").to_pandas()
    assert finals["status"].tolist() == ["completed", "diverged"]
    bad = finals.iloc[1]
    assert bad["diverged_epoch"] == 2 and bad["epochs"] == 3 and bad["stop_reason"] == "diverged"
    assert np.isnan(bad[["test_accuracy", "val_accuracy", "train_accuracy"]].astype(float)).all()
    history = pq.read_table(fold / "final_history.parquet").to_pandas()
    assert history[history["run"] == 1]["epoch"].tolist() == [0, 1, 2]
    outputs = {k: tmp_path / f"t.{k.replace('_', '.')}" for k in ("table_csv", "table_md", "table_parquet",
                                                                   "folds_csv", "folds_md", "folds_parquet")}
    fc_tables.dataset_tables("GF", read_runs(records), outputs, meta=read_meta(families / "ds"))  # from the records
    table = pd.read_csv(outputs["table_csv"]).iloc[0]
    good = finals["test_accuracy"].iloc[0]
    assert table["test_mean"] == pytest.approx(good) and table["diverged_runs"] == 1 and table["final_runs"] == 2
    assert f"{good:.1f} ± 0.0 (1 of 2 final runs diverged)" in outputs["table_md"].read_text()
    assert f"{good:.1f}, diverged" in outputs["folds_md"].read_text()


def test_the_tables_read_the_selected_configuration_from_the_records_of_both_stages():
    """A fold's selected configuration is the one its final runs trained; its validation accuracy and the candidates
    come from the fold's model-selection records, its depth from the final record's extra; a final configuration
    that is not among the fold's candidates is a one-line error."""
    from gnnbench.records import record
    from gnnbench.reporting.fair_comparison import folds_from_records

    gin = [{"model": "GIN", "hidden_units": [8] * n} for n in (1, 2, 3)]

    def run(config, stage, fold, val, init=0, test=None, status="completed", layers=None):
        return record(protocol="fair-comparison", dataset="D", model="GIN", config=config, stage=stage, split=fold,
                      init=init, val_score=val, test_score=test, train_score=None if test is None else 90.0,
                      status=status, stop_reason="patience", extra=None if stage == "inner" else {"layers": layers})

    rows = [run(gin[0], "inner", 0, 70.0), run(gin[1], "inner", 0, 75.0), run(gin[2], "inner", 0, None,
                                                                               status="diverged"),
            run(gin[1], "final", 0, 80.0, 0, test=60.0, layers=2), run(gin[1], "final", 0, None, 1, status="diverged",
                                                                         layers=2),
            run(gin[0], "inner", 1, 65.0), run(gin[0], "final", 1, 70.0, 0, test=50.0, layers=1)]
    folds = folds_from_records(pd.DataFrame(rows))
    assert [(f["fold"], f["val_accuracy"], f["candidates"], f["diverged_candidates"], f["layers"]) for f in folds] == [
        (0, 75.0, 3, 1, 2), (1, 65.0, 1, 0, 1)]
    first = folds[0]
    assert first["chosen_config"] == gin[1] and first["test_accuracy"] == 60.0 and first["diverged_runs"] == 1
    assert first["test_runs"][0] == 60.0 and np.isnan(first["test_runs"][1])  # the diverged final run: no score
    assert "hidden_units=[8, 8]" in first["config"]
    with pytest.raises(DataError, match=r"the final runs of GIN on outer fold 1 trained configuration \w+, which "
                                        "is not among the fold's 1 model-selection records; rerun snakemake") as e:
        folds_from_records(pd.DataFrame(rows[:-2] + [run(gin[2], "inner", 1, 65.0), rows[-1]]))
    assert "\n" not in str(e.value)


def test_a_resumed_run_whose_history_ends_diverged_stays_diverged(families, tmp_path):

    from gnnbench.models.graph_classifiers import build_classifier
    from gnnbench.training.best_epoch import holdout_fit, holdout_results
    from gnnbench.training.engine import fit, restore

    data = fc_train._load(families / "ds", families / "s.json")
    parts = {p: torch.from_numpy(v) for p, v in data.splits.fold(0).items() if p != "test"}
    cfg = {**BASELINE, "learning_rate": 1e30}

    def build():
        torch.manual_seed(0)
        model = build_classifier(cfg, data.meta, data.sizes)
        model.prepare(data.store)
        return model

    saved = []

    class EveryEpoch:  # the engine's checkpoint hook: the state a checkpoint would hold after every epoch
        def due(self) -> bool:
            return True

        def save(self, state: dict) -> None:
            saved.append(copy.deepcopy(state))

    run, step, rules = holdout_fit(build(), data.store, parts, cfg, device=torch.device("cpu"))
    fit(run, step, rules, checkpoint=EveryEpoch())
    [first] = holdout_results(run)
    assert first["status"] == "diverged"
    again_run, again_step, again_rules = holdout_fit(build(), data.store, parts, cfg, device=torch.device("cpu"))
    restore(saved[-1], again_run, again_step, again_rules)  # the checkpoint written after the diverged epoch
    fit(again_run, again_step, again_rules)
    [again] = holdout_results(again_run)
    assert again["status"] == "diverged" and again["diverged_epoch"] == first["diverged_epoch"]
    assert again["epochs"] == first["epochs"] and len(again["history"]) == len(first["history"])
