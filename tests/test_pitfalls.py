"""The "Pitfalls of GNN evaluation" protocol end to end: jobs of stacked initialisations, resume, the workflow, and
the paper's numbers on the real CORA and CiteSeer files."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from gnnbench.config.presets import run_config
from gnnbench.errors import DataError
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.protocols.pitfalls import tables as pitfalls_tables
from gnnbench.protocols.pitfalls import train as pitfalls_train
from gnnbench.protocols.pitfalls.train import run_chunk
from gnnbench.training.init_stack import StackedStep
from gnnbench.training.preemption import Preempted

REPO_ROOT = Path(__file__).resolve().parents[1]
REAL = REPO_ROOT.parent / "shared" / "data" / "real" / "planetoid"
CSBM = {"num_nodes": 300, "num_classes": 3, "num_features": 16}
SPLIT = {"splits": 3, "train_per_class": 20, "val_per_class": 30, "seed": 2018}


@pytest.fixture(scope="module")
def csbm(tmp_path_factory):
    root = tmp_path_factory.mktemp("csbm")
    generate_dataset("csbm", "CSBM", CSBM, 1, root / "CSBM")
    make_split_file(root / "CSBM", "random_per_class", SPLIT, root / "splits.json")
    return root


def chunk(csbm, out, preset="pitfalls_GCN", splits=(0, 1), inits=3, **overrides):
    return run_chunk(dataset_dir=csbm / "CSBM", splits_path=csbm / "splits.json", splits=list(splits),
                     config=run_config(preset, overrides, protocol="pitfalls"), inits=inits, seed=5, out_dir=out,
                     threads=1, label="GCN", records_out=Path(out) / "records" / "chunk.parquet")


def runs_of(out) -> pd.DataFrame:
    return pq.read_table(Path(out) / "runs.parquet").to_pandas()


def test_a_job_trains_every_initialisation_of_every_split_with_early_stopping(csbm, tmp_path):
    metrics = chunk(csbm, tmp_path / "job")
    runs, history = runs_of(tmp_path / "job"), pq.read_table(tmp_path / "job" / "history.parquet").to_pandas()
    assert sorted(zip(runs["split"], runs["init"], strict=True)) == [(s, i) for s in (0, 1) for i in range(3)]
    assert metrics["runs"] == 6 and metrics["inits"] == 3 and metrics["splits"] == [0, 1]
    assert metrics["num_params"] == 16 * 64 + 64 + 64 * 3 + 3  # the two-layer GCN on 16 features, 3 classes
    assert runs["seed"].nunique() == 6  # every initialisation its own seed
    for _, run in runs.iterrows():
        rows = history[(history["split"] == run["split"]) & (history["init"] == run["init"])]
        assert len(rows) == run["epochs"] and rows["epoch"].tolist() == list(range(run["epochs"]))
        # patience 50 on the total validation loss, then the best epoch's weights are restored and scored
        assert run["stop_reason"] == "early_stopping" and run["epochs"] == run["best_epoch"] + 1 + 50
        assert rows["val_loss"].iloc[run["best_epoch"]] == pytest.approx(rows["val_loss"].min())
        assert run["val_loss"] == pytest.approx(rows["val_loss"].iloc[run["best_epoch"]], rel=1e-5)
        assert 0 <= run["test_accuracy"] <= 100 and run["seconds"] > 0
    assert runs["test_accuracy"].mean() > 70  # the CSBM graph carries the labels: well above chance (33%)


def test_results_do_not_depend_on_how_splits_are_grouped_into_jobs(csbm, tmp_path):
    chunk(csbm, tmp_path / "both", splits=(0, 1))
    chunk(csbm, tmp_path / "one", splits=(1,))
    together, alone = runs_of(tmp_path / "both"), runs_of(tmp_path / "one")
    columns = ["split", "init", "seed", "epochs", "best_epoch", "test_accuracy", "val_loss"]
    pd.testing.assert_frame_equal(together[together["split"] == 1][columns].reset_index(drop=True),
                                  alone[columns].reset_index(drop=True))


def test_without_dropout_an_initialisation_trained_alone_equals_its_row_of_the_stack(csbm, tmp_path):
    """Batching R initialisations changes nothing but the dropout draws: without dropout, equal runs."""
    chunk(csbm, tmp_path / "stack", splits=(0,), inits=4, dropout_prob=0.0)
    run_chunk(dataset_dir=csbm / "CSBM", splits_path=csbm / "splits.json", splits=[0],
              config=run_config("pitfalls_GCN", {"dropout_prob": 0.0}), inits=4, seed=5, out_dir=tmp_path / "alone",
              threads=1, init_ids=[2])
    stack, alone = runs_of(tmp_path / "stack"), runs_of(tmp_path / "alone")
    row = stack[stack["init"] == 2].iloc[0]
    assert len(alone) == 1 and alone["init"].iloc[0] == 2 and alone["seed"].iloc[0] == row["seed"]
    assert alone["epochs"].iloc[0] == row["epochs"] and alone["best_epoch"].iloc[0] == row["best_epoch"]
    assert alone["test_accuracy"].iloc[0] == pytest.approx(row["test_accuracy"])
    assert alone["val_loss"].iloc[0] == pytest.approx(row["val_loss"], rel=1e-4)


def test_label_propagation_runs_once_per_split_for_exactly_patience_steps(csbm, tmp_path):
    metrics = chunk(csbm, tmp_path / "lp", preset="pitfalls_LabelProp-NL", splits=(0, 1, 2), inits=20)
    runs = runs_of(tmp_path / "lp")
    assert metrics["runs"] == 3 and runs["init"].tolist() == [0, 0, 0] and metrics["num_params"] == 0
    assert runs["epochs"].tolist() == [50, 50, 50]  # gat_tol as coded: always exactly the patience
    assert (runs["test_accuracy"] > 50).all()


def test_a_killed_job_resumes_to_the_results_of_an_uninterrupted_one(csbm, tmp_path, monkeypatch, caplog):
    straight = tmp_path / "straight"
    chunk(csbm, straight, splits=(0, 1))
    killed = tmp_path / "killed"
    calls = {"n": 0}
    original = StackedStep.epoch

    def dying(self, run, members):
        calls["n"] += 1
        if calls["n"] == 180:  # inside split 1, after mid-split checkpoints
            raise Preempted(15)
        return original(self, run, members)

    monkeypatch.setattr("gnnbench.protocols.pitfalls.train.CHECKPOINT_SECONDS", 0.0)
    monkeypatch.setattr(StackedStep, "epoch", dying)
    with pytest.raises(Preempted, match="training stopped by SIGTERM; checkpoint .* run the same command again"):
        chunk(csbm, killed, splits=(0, 1))
    assert (killed / "checkpoint.pt").is_file() and not (killed / "runs.parquet").exists()
    from gnnbench.training.checkpoint import read_checkpoint

    state = read_checkpoint(killed / "checkpoint.pt")  # as the rerun reads it: weights_only=True
    assert [u["split"] for u in state["units"].values()] == [0] and state["current"] is not None
    monkeypatch.setattr(StackedStep, "epoch", original)
    caplog.clear()
    with caplog.at_level("INFO"):
        chunk(csbm, killed, splits=(0, 1))
    epoch = state["current"]["fit"]["epochs"]
    assert f"resuming split 1 from {killed / 'checkpoint.pt'} at epoch {epoch}" in caplog.text
    assert "split 0:" not in caplog.text  # the finished split is not trained again
    columns = [c for c in runs_of(straight).columns if c != "seconds"]
    pd.testing.assert_frame_equal(runs_of(killed)[columns], runs_of(straight)[columns])
    assert pq.read_table(killed / "history.parquet").equals(pq.read_table(straight / "history.parquet"))


def nan_from_epoch(monkeypatch, init: int, epoch: int) -> None:
    """Make every job's trainer give initialisation ``init`` NaN training logits from its ``epoch``-th epoch on."""
    original = pitfalls_train.make_trainer

    def poisoned(*args, **kwargs):
        trainer = original(*args, **kwargs)
        forward, calls = trainer.model.forward, {"n": 0}

        def nan_forward(nodes, training):
            logits = forward(nodes, training)
            if training:
                active = trainer.active.tolist()
                if calls["n"] >= epoch and init in active:
                    logits = logits.clone()
                    logits[active.index(init)] = float("nan")
                calls["n"] += 1
            return logits

        trainer.model.forward = nan_forward
        return trainer

    monkeypatch.setattr("gnnbench.protocols.pitfalls.train.make_trainer", poisoned)


def report(csbm, job: Path) -> str:
    pitfalls_tables.dataset_report([job / "records" / "chunk.parquet"],  # the job's run records
                                   *(job / f"table.{ext}" for ext in ("csv", "md", "parquet")), job / "box.png",
                                   job / "box.svg")
    return (job / "table.md").read_text()


def test_an_initialisation_whose_loss_turns_nan_is_recorded_diverged_and_its_stack_mates_train_on(
        csbm, tmp_path, monkeypatch):
    chunk(csbm, tmp_path / "clean", splits=(0,), inits=3, dropout_prob=0.0)
    nan_from_epoch(monkeypatch, init=1, epoch=12)
    metrics = chunk(csbm, tmp_path / "bad", splits=(0,), inits=3, dropout_prob=0.0)
    clean, bad = runs_of(tmp_path / "clean"), runs_of(tmp_path / "bad")
    assert bad["status"].tolist() == ["completed", "diverged", "completed"]
    assert clean["status"].tolist() == ["completed"] * 3 and clean["diverged_epoch"].isna().all()
    row = bad.iloc[1]
    assert row["diverged_epoch"] == 12 and row["epochs"] == 13 and row["stop_reason"] == "diverged"
    assert np.isnan(row[["test_accuracy", "val_accuracy", "train_accuracy", "test_loss", "val_loss"]].astype(float)
                    ).all()
    history = pq.read_table(tmp_path / "bad" / "history.parquet").to_pandas()
    assert history[history["init"] == 1]["epoch"].max() == 12  # no epoch after the divergence
    for init in (0, 2):  # without dropout the others do not notice: they train as in the clean stack
        a, b = bad.iloc[init], clean.iloc[init]
        assert (a["epochs"], a["best_epoch"], a["stop_reason"]) == (b["epochs"], b["best_epoch"], b["stop_reason"])
        assert a["test_accuracy"] == pytest.approx(b["test_accuracy"])
        assert a["val_loss"] == pytest.approx(b["val_loss"], rel=1e-4)
    assert metrics["diverged"] == 1
    assert metrics["test_accuracy_mean"] == pytest.approx(bad["test_accuracy"].iloc[[0, 2]].mean())
    kept = bad["test_accuracy"].iloc[[0, 2]]
    assert f"{kept.mean():.1f} ± {kept.std():.1f} (1 of 3 diverged)" in report(csbm, tmp_path / "bad")


def test_a_huge_learning_rate_diverges_every_initialisation_and_the_table_says_so(csbm, tmp_path):
    metrics = chunk(csbm, tmp_path / "job", splits=(0, 1), inits=2, learning_rate=1e30)
    runs = runs_of(tmp_path / "job")
    history = pq.read_table(tmp_path / "job" / "history.parquet").to_pandas()
    assert (runs["status"] == "diverged").all() and (runs["stop_reason"] == "diverged").all()
    assert metrics["diverged"] == 4 and metrics["test_accuracy_mean"] is None
    for _, run in runs.iterrows():  # the first update overflows the weights: the epoch-0 validation loss is not finite
        rows = history[(history["split"] == run["split"]) & (history["init"] == run["init"])]
        assert run["diverged_epoch"] == 0 and run["epochs"] == 1 and len(rows) == 1
        assert np.isfinite(rows["train_loss"].iloc[0]) and not np.isfinite(rows["val_loss"].iloc[0])
        assert np.isnan(run["test_accuracy"])
    line = next(line for line in report(csbm, tmp_path / "job").splitlines() if line.startswith("| GCN "))
    assert "diverged (4 of 4)" in line and "nan" not in line.lower()


def test_the_command_counts_diverged_runs(csbm, tmp_path, capsys):
    from gnnbench.cli import main

    args = ["train", "pitfalls", "--dataset", str(csbm / "CSBM"), "--splits", str(csbm / "splits.json"),
            "--fold", "0", "--inits", "2", "--preset", "pitfalls_GCN", "--threads", "1"]
    assert main(args + ["--set", "learning_rate=1e30", "--out", str(tmp_path / "huge")]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == (
        "2 runs (2 diverged: NaN or infinite loss), mean test accuracy: none (every run diverged)")


def test_a_job_killed_after_a_divergence_resumes_with_the_run_still_diverged(csbm, tmp_path, monkeypatch):
    nan_from_epoch(monkeypatch, init=0, epoch=3)
    straight = tmp_path / "straight"
    chunk(csbm, straight, splits=(0,), inits=2)
    killed = tmp_path / "killed"
    calls = {"n": 0}
    original = StackedStep.epoch

    def dying(self, run, members):
        calls["n"] += 1
        if calls["n"] == 20:  # after the divergence at epoch 3 and after mid-split checkpoints
            raise Preempted(15)
        return original(self, run, members)

    monkeypatch.setattr("gnnbench.protocols.pitfalls.train.CHECKPOINT_SECONDS", 0.0)
    monkeypatch.setattr(StackedStep, "epoch", dying)
    with pytest.raises(Preempted):
        chunk(csbm, killed, splits=(0,), inits=2)
    monkeypatch.setattr(StackedStep, "epoch", original)
    chunk(csbm, killed, splits=(0,), inits=2)
    columns = [c for c in runs_of(straight).columns if c != "seconds"]
    pd.testing.assert_frame_equal(runs_of(killed)[columns], runs_of(straight)[columns])
    assert runs_of(killed)["status"].tolist() == ["diverged", "completed"]
    assert runs_of(killed)["diverged_epoch"].iloc[0] == 3


def test_bad_inputs_are_one_line_errors_and_write_nothing(csbm, tmp_path):
    other = tmp_path / "OTHER"
    generate_dataset("csbm", "OTHER", CSBM, 2, other)
    with pytest.raises(DataError, match="belongs to dataset CSBM, not OTHER"):
        run_chunk(dataset_dir=other, splits_path=csbm / "splits.json", splits=[0],
                  config=run_config("pitfalls_GCN"), inits=2, seed=0, out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()
    result = subprocess.run([sys.executable, "-m", "gnnbench.cli", "train", "pitfalls", "--dataset",
                             str(csbm / "CSBM"), "--splits", str(csbm / "splits.json"), "--fold", "0",
                             "--preset", "SBMs_node_clustering_3WLGNN_PATTERN_100k", "--out", str(tmp_path / "o")],
                            capture_output=True, text=True)
    # another zoo's model that cannot run on one graph (those that can: tests/test_registry.py)
    assert result.returncode == 1 and result.stderr.strip().splitlines()[-1] == (
        "gnnbench: error: --preset: model 3WLGNN builds a dense n×n tensor per graph; dataset CSBM is one graph, so "
        "the tensor would span every node; pick a message-passing model")


# ---------------------------------------------------------------------------------------------- workflow

def snakemake(workdir: Path, suite: dict, *args, timeout=900):
    (workdir / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO_ROOT / "workflow/Snakefile"),
               "--directory", str(workdir), "--configfile", str(workdir / "suite.yaml"), "--cores", "2", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_workflow_produces_tables_plots_and_rankings_that_match_the_runs(tmp_path):
    models = {"GCN": "pitfalls_GCN", "MLP": "pitfalls_MLP", "LabelProp": "pitfalls_LabelProp"}
    suite = {
        "datasets": {
            "CSBM": {"generator": "csbm", "seed": 1, "params": CSBM,
                     "split": {"scheme": "random_per_class", "splits": 3, "seed": 2018}},
            "CSBM-one-split": {"generator": "csbm", "seed": 1, "params": CSBM,
                               "split": {"scheme": "random_sizes", "val_size": 60, "test_size": 150}},
        },
        "benchmarks": {
            "CSBM": {"protocol": "pitfalls", "inits": 2, "splits_per_job": 2, "models": models},
            "CSBM-one-split": {"protocol": "pitfalls", "inits": 2, "compare_with": "CSBM",
                               "models": {"GCN": "pitfalls_GCN", "MLP": "pitfalls_MLP"}},
        },
    }
    result = snakemake(tmp_path, suite)
    assert result.returncode == 0, result.stderr[-3000:]
    results = tmp_path / "results"
    runs = pd.concat([pq.read_table(p).to_pandas() for p in sorted(results.glob("runs/CSBM/*/chunk*/runs.parquet"))])
    assert len(runs) == 2 * 3 * 2 + 3  # GCN and MLP: 3 splits × 2 inits; LabelProp: 1 per split
    assert sorted(p.name for p in (results / "runs" / "CSBM" / "GCN").iterdir()) == ["chunk0", "chunk1"]
    records = pd.read_parquet(results / "records" / "pitfalls" / "CSBM")  # one record per run (gnnbench.records)
    keys = ["model", "split", "init"]
    assert len(records) == len(runs) and records.set_index(keys)["test_score"].sort_index().tolist() == pytest.approx(
        runs.set_index(keys)["test_accuracy"].sort_index().tolist())
    table = pd.read_csv(results / "tables" / "CSBM.csv").set_index("model")
    for model, group in runs.groupby("model"):
        assert table.loc[model, "test_mean"] == pytest.approx(group["test_accuracy"].mean())
        assert table.loc[model, "test_std"] == pytest.approx(group["test_accuracy"].std(ddof=1))
        assert table.loc[model, "runs"] == len(group)
    assert (results / "plots" / "CSBM.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (results / "plots" / "CSBM.svg").read_text().lstrip().startswith("<?xml")
    summary = pd.read_csv(results / "tables" / "pitfalls.csv").set_index("model")
    per_split = runs.groupby(["split", "model"])["test_accuracy"].mean().unstack()
    relative = (per_split.div(per_split.max(axis=1), axis=0) * 100).mean()
    for model in models:
        assert summary.loc[model, "relative_accuracy"] == pytest.approx(relative[model])
    ranking = pd.read_csv(results / "tables" / "pitfalls_split_ranking.csv")
    assert set(ranking["model"]) == {"GCN", "MLP"}
    assert "CSBM-one-split" in (results / "tables" / "pitfalls_split_ranking.md").read_text()
    assert snakemake(tmp_path, suite, "-n").stdout.count("Nothing to be done") == 1  # every stage is cached


@pytest.mark.slow
def test_a_suite_file_replaces_the_default_suite_instead_of_merging_into_it(tmp_path):
    """Run from the repository root (where config/config.yaml is): only the user's datasets and settings count."""
    suite = {"datasets": {"CSL": {"generator": "csl", "seed": 1}},
             "benchmarks": {"CSL": {"seeds": [14], "folds": [0],
                                    "set": {"L": 2, "hidden_dim": 8, "out_dim": 8, "max_time": 0.0002},
                                    "models": {"GCN-PE": "CSL_graph_classification_GCN_CSL_PE_100k"}}}}
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    base = [sys.executable, "-m", "snakemake", "--configfile", str(path), "--cores", "2"]
    dry = subprocess.run([*base, "-n", "--directory", str(tmp_path)], cwd=REPO_ROOT, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr
    jobs = {m[0]: int(m[1]) for m in re.findall(r"^(\w+)\s+(\d+)$", dry.stdout.split("Job stats:")[1], flags=re.M)}
    assert jobs == {"dataset": 1, "laplacian_pe": 1, "splits": 1, "train": 1, "tables_CSL": 1, "suite_report": 1,
                    "all": 1, "total": 7}
    run = subprocess.run([*base, "--directory", str(tmp_path), "results/runs/CSL/GCN-PE/seed14/fold0/metrics.json"],
                         cwd=REPO_ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    metrics = json.loads((tmp_path / "results/runs/CSL/GCN-PE/seed14/fold0/metrics.json").read_text())
    # the preset's 1,000 epochs, not the default suite's `set: {epochs: 10}`: the time budget stopped the run
    assert metrics["config"]["epochs"] == 1000 and metrics["stop_reason"] == "max_time"


@pytest.mark.slow
@pytest.mark.skipif(not REAL.is_dir(), reason="real Planetoid files not available (../shared/data/real is absent)")
def test_real_cora_and_citeseer_from_a_local_mirror_reproduce_the_papers_means(tmp_path):
    from test_download import LocalServer

    server = LocalServer()
    try:
        for name in ("cora", "citeseer"):
            for path in (REAL / name / "raw").iterdir():
                server.routes[f"/{name}/{path.name}"] = path.read_bytes()
        models = {"GCN": "pitfalls_GCN", "MLP": "pitfalls_MLP", "LogReg": "pitfalls_LogReg",
                  "LabelProp": "pitfalls_LabelProp"}
        splits = {"scheme": "random_per_class", "splits": 10, "seed": 2018}
        suite = {
            "datasets": {name: {"generator": "planetoid", "params": {"name": source,
                                                                    "mirror": f"{server.url}/{source}"},
                                "split": splits}
                         for name, source in (("CORA", "cora"), ("CiteSeer", "citeseer"))},
            "benchmarks": {name: {"protocol": "pitfalls", "inits": 2, "splits_per_job": 10, "models": models}
                           for name in ("CORA", "CiteSeer")},
        }
        result = snakemake(tmp_path, suite)
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr[-3000:]
    # paper Table 1 (mean ± std over 100 splits × 20 inits); 10 splits × 2 inits must land within one std
    paper = {"CORA": {"GCN": (81.5, 1.3), "MLP": (58.2, 2.1), "LogReg": (57.1, 2.3), "LabelProp": (74.4, 2.6)},
             "CiteSeer": {"GCN": (71.9, 1.9), "MLP": (59.1, 2.3), "LogReg": (61.0, 2.2), "LabelProp": (67.8, 2.1)}}
    for dataset, expected in paper.items():
        meta = json.loads((tmp_path / "results" / "datasets" / dataset / "meta.json").read_text())
        assert meta["statistics"]["all"]["nodes"] == {"CORA": 2485, "CiteSeer": 2110}[dataset]
        table = pd.read_csv(tmp_path / "results" / "tables" / f"{dataset}.csv").set_index("model")
        for model, (mean, std) in expected.items():
            assert abs(table.loc[model, "test_mean"] - mean) <= std, (dataset, model, table.loc[model, "test_mean"])
    for name in ("CORA", "CiteSeer"):
        assert (tmp_path / "results" / "plots" / f"{name}.svg").is_file()
    assert np.isfinite(pd.read_csv(tmp_path / "results" / "tables" / "pitfalls.csv")["average_rank"]).all()


def test_splits_command_makes_node_splits_of_a_single_graph(csbm, tmp_path):
    out = tmp_path / "splits.json"
    result = subprocess.run([sys.executable, "-m", "gnnbench.cli", "splits", str(csbm / "CSBM"), "--scheme",
                             "random_per_class", "--splits", "2", "--val-per-class", "10", "--out", str(out)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["format"] == 2 and data["scheme"] == "random_per_class" and data["level"] == "node"
    assert data["params"] == {"splits": 2, "train_per_class": 20, "val_per_class": 10, "seed": 2018}
    assert [len(f["val"]) for f in data["folds"]] == [30, 30] and len(data["folds"][0]["train"]) == 60
    bad = subprocess.run([sys.executable, "-m", "gnnbench.cli", "splits", str(csbm / "CSBM"), "--scheme", "given",
                          "--out", str(tmp_path / "given.json")], capture_output=True, text=True)
    assert bad.returncode == 1 and "comes without a split (no node column 'split')" in bad.stderr
    assert not (tmp_path / "given.json").exists()
