"""The training protocol: determinism, stopping rules, last-epoch reporting, outputs, resume after a kill."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
import torch

from gnnbench.config.presets import run_config
from gnnbench.errors import ConfigError, DataError
from gnnbench.protocols.benchmarking_gnns.train import train
from gnnbench.training import last_epoch as run_module
from gnnbench.training import loop
from gnnbench.training.last_epoch import train_run

SMALL = {"L": 2, "hidden_dim": 32, "out_dim": 32, "batch_size": 8}
TIMING = ("seconds", "seconds_per_epoch", "total_seconds", "total_hours")


def csl_run(datasets, out, preset="CSL_graph_classification_GCN_CSL_PE_100k", fold=0, **overrides):
    config = run_config(preset, {**SMALL, "epochs": 4, **overrides})
    return train(dataset_dir=datasets["CSL"], splits_path=datasets["CSL_splits"], fold=fold, config=config,
                 out_dir=out, pe_path=datasets["CSL_pe"] if config.get("pos_enc") else None, threads=1)


def scores(metrics: dict) -> dict:
    return {k: metrics[k] for k in ("train", "val", "test", "epochs", "stop_reason", "num_params")}


def history(run_dir) -> list[dict]:
    rows = pq.read_table(run_dir / "history.parquet").to_pylist()
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]


def test_same_seed_same_metrics_different_seed_different(datasets, tmp_path):
    a = csl_run(datasets, tmp_path / "a", seed=7)
    b = csl_run(datasets, tmp_path / "b", seed=7)
    csl_run(datasets, tmp_path / "c", seed=8)
    assert scores(a) == scores(b) and history(tmp_path / "a") == history(tmp_path / "b")
    assert history(tmp_path / "a") != history(tmp_path / "c")


def test_outputs_and_last_epoch_reporting(datasets, tmp_path):
    m = csl_run(datasets, tmp_path / "run", epochs=5, seed=3)
    on_disk = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert on_disk == m
    assert m["dataset"] == "CSL" and m["label"] == "GCN" and m["metric"] == "accuracy" and m["higher_is_better"]
    assert m["num_params"] == sum(p.numel() for p in torch.load(tmp_path / "run" / "checkpoint.pt",
                                                                  weights_only=True)["model"].values()
                                  if p.dtype.is_floating_point) - 2 * 2 * 32  # minus BN running stats
    assert m["epochs"] == 5 and m["stop_reason"] == "max_epochs"
    assert m["config"]["seed"] == 3 and m["config"]["hidden_dim"] == 32 and m["fold"] == 0
    assert set(m["versions"]) >= {"python", "torch", "numpy", "gnnbench"} and m["device"].startswith("cpu")
    # the benchmarking-gnns protocol's per-fold budget under cross-validation: max_time / 10
    assert m["data"]["split_scheme"] == "stratified_kfold" and m["time_limit_hours"] == pytest.approx(12 / 10)
    assert m["total_hours"] == pytest.approx(m["total_seconds"] / 3600) and m["seconds_per_epoch"] > 0
    rows = history(tmp_path / "run")
    assert [r["epoch"] for r in rows] == list(range(5))
    assert set(rows[0]) == {"epoch", "lr", "train_loss", "train_metric", "val_loss", "val_metric", "test_loss",
                            "test_metric"}
    # the reported test score is the last epoch's (re-evaluated), not the best validation epoch's
    assert m["test"]["metric"] == pytest.approx(rows[-1]["test_metric"])
    assert m["val"]["metric"] == pytest.approx(rows[-1]["val_metric"])
    assert m["test"]["loss"] == pytest.approx(rows[-1]["test_loss"])


def _plateau_stop_epoch(val_losses, init_lr, factor, patience, min_lr):
    """Independent model of ReduceLROnPlateau(mode='min', threshold=1e-4 rel) + the stop rule lr < min_lr."""
    lr, best, bad = init_lr, float("inf"), 0
    for epoch, loss in enumerate(val_losses):
        if loss < best * (1 - 1e-4):
            best, bad = loss, 0
        else:
            bad += 1
        if bad > patience:
            lr, bad = lr * factor, 0
        if lr < min_lr:
            return epoch
    return None


def test_stops_when_the_learning_rate_falls_below_min_lr(datasets, tmp_path):
    m = csl_run(datasets, tmp_path / "run", preset="CSL_graph_classification_MLP_CSL_100k", epochs=200,
                init_lr=1e-3, lr_reduce_factor=0.5, lr_schedule_patience=1, min_lr=2e-4)
    rows = history(tmp_path / "run")
    assert m["stop_reason"] == "min_lr" and m["epochs"] < 200
    assert _plateau_stop_epoch([r["val_loss"] for r in rows], 1e-3, 0.5, 1, 2e-4) == len(rows) - 1
    lrs = [r["lr"] for r in rows]
    assert lrs[0] == 1e-3 and min(lrs) >= 2e-4 and sorted(lrs, reverse=True) == lrs


def test_stops_at_the_time_limit(datasets, tmp_path):
    m = csl_run(datasets, tmp_path / "run", epochs=50, max_time=1e-9)
    assert m["stop_reason"] == "max_time" and m["epochs"] == 1


def test_positional_encodings_are_flipped_in_training_only(datasets, tmp_path, monkeypatch):
    calls = []
    original = loop.random_sign_flip
    monkeypatch.setattr(loop, "random_sign_flip", lambda pe: calls.append(pe.shape) or original(pe))
    m = csl_run(datasets, tmp_path / "run", epochs=2)
    train_batches = -(-30 // 8)  # 50 graphs × 0.8 × 0.75 = 30 training graphs per fold
    assert len(calls) == 2 * train_batches and all(shape[1] == 20 for shape in calls)
    assert m["epochs"] == 2


def test_finished_checkpoint_is_not_resumed_and_unreadable_one_is_ignored(datasets, tmp_path):
    first = csl_run(datasets, tmp_path / "run", seed=5)
    again = csl_run(datasets, tmp_path / "run", seed=5)  # finished checkpoint: trains afresh, same result
    assert scores(again) == scores(first)
    (tmp_path / "run" / "checkpoint.pt").write_bytes(b"not a checkpoint")
    assert scores(csl_run(datasets, tmp_path / "run", seed=5)) == scores(first)


# ------------------------------------------------------------------------------------------------ divergence


def nan_loss_from_epoch(monkeypatch, epoch: int) -> list[int]:
    """Make the training loss of every epoch from ``epoch`` (0-based) on NaN; returns the list of epochs trained."""
    real, calls = run_module.train_epoch, []

    def train_epoch(*args, **kwargs):
        loss, score = real(*args, **kwargs)
        calls.append(len(calls))
        return (math.nan if calls[-1] >= epoch else loss), score

    monkeypatch.setattr(run_module, "train_epoch", train_epoch)
    return calls


def test_a_run_whose_training_loss_turns_nan_stops_there_as_diverged_without_scores(datasets, tmp_path,
                                                                                     monkeypatch):
    calls = nan_loss_from_epoch(monkeypatch, 2)
    m = csl_run(datasets, tmp_path / "run", epochs=6, seed=3)
    assert json.loads((tmp_path / "run" / "metrics.json").read_text()) == m
    assert m["status"] == "diverged" and m["stop_reason"] == "diverged" and m["diverged_epoch"] == 2
    assert m["epochs"] == 3 and calls == [0, 1, 2]  # no epoch after the one whose loss was NaN
    for part in ("train", "val", "test"):  # no score: not a number that looks like one
        assert m[part]["metric"] is None and m[part]["loss"] is None
    rows = history(tmp_path / "run")
    assert [r["epoch"] for r in rows] == [0, 1, 2] and math.isnan(rows[2]["train_loss"])
    assert all(math.isnan(rows[2][c]) for c in ("val_loss", "val_metric", "test_loss", "test_metric"))
    assert all(math.isfinite(r["train_loss"]) and math.isfinite(r["val_loss"]) for r in rows[:2])


def test_a_huge_learning_rate_diverges_and_a_normal_run_is_completed(datasets, tmp_path):
    m = csl_run(datasets, tmp_path / "huge", epochs=20, init_lr=1e30, seed=3)
    rows = history(tmp_path / "huge")
    first_bad = next(i for i, r in enumerate(rows) if not (math.isfinite(r["train_loss"])
                                                           and math.isfinite(r["val_loss"])))
    assert m["status"] == "diverged" and m["diverged_epoch"] == first_bad == len(rows) - 1 == m["epochs"] - 1
    assert m["test"]["metric"] is None
    normal = csl_run(datasets, tmp_path / "normal", epochs=3, seed=3)
    assert normal["status"] == "completed" and normal["diverged_epoch"] is None
    assert normal["stop_reason"] == "max_epochs" and isinstance(normal["test"]["metric"], float)


def test_a_diverged_run_killed_before_its_outputs_resumes_as_diverged(datasets, tmp_path, monkeypatch):
    calls = nan_loss_from_epoch(monkeypatch, 1)
    real_finish = run_module.write_outputs

    def killed(*args, **kwargs):  # a hard kill after the last checkpoint, before the outputs
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "write_outputs", killed)
    with pytest.raises(KeyboardInterrupt):
        csl_run(datasets, tmp_path / "run", epochs=6, seed=3)
    assert calls == [0, 1] and not (tmp_path / "run" / "metrics.json").exists()
    monkeypatch.setattr(run_module, "write_outputs", real_finish)
    m = csl_run(datasets, tmp_path / "run", epochs=6, seed=3)
    assert calls == [0, 1]  # resumed from the checkpoint: nothing trained again, the run is still diverged
    assert m["status"] == "diverged" and m["diverged_epoch"] == 1 and m["epochs"] == 2 and m["test"]["metric"] is None


def test_the_command_says_a_run_diverged_instead_of_printing_a_score(datasets, tmp_path, capsys):
    from gnnbench.cli import main

    args = ["train", "benchmarking-gnns", "--dataset", str(datasets["CSL"]), "--splits", str(datasets["CSL_splits"]),
            "--fold", "0", "--preset", "CSL_graph_classification_GCN_CSL_100k", "--threads", "1",
            *[x for s in ("L=2", "hidden_dim=8", "out_dim=8", "epochs=20") for x in ("--set", s)]]
    assert main(args + ["--set", "init_lr=1e30", "--out", str(tmp_path / "huge")]) == 0
    m = json.loads((tmp_path / "huge" / "metrics.json").read_text())
    assert m["status"] == "diverged"
    assert capsys.readouterr().out.strip().splitlines()[-1] == (
        f"diverged at epoch {m['diverged_epoch']} (NaN or infinite loss): no test accuracy")
    assert main(args + ["--set", "epochs=1", "--out", str(tmp_path / "normal")]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("test accuracy: ")


# ------------------------------------------------------------------------------------------------ errors


def test_bad_inputs_raise_clear_errors_and_write_nothing(datasets, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(DataError, match="split file .*missing.json does not exist"):
        train_run(dataset_dir=datasets["CSL"], splits_path=tmp_path / "missing.json", fold=0,
                  config=run_config("CSL_graph_classification_GCN_CSL_100k"), out_dir=out)
    with pytest.raises(ConfigError, match="fold 7 does not exist"):
        csl_run(datasets, out, fold=7)
    with pytest.raises(ConfigError, match="pos_enc is true but no positional-encoding file"):
        train_run(dataset_dir=datasets["CSL"], splits_path=datasets["CSL_splits"], fold=0,
                  config=run_config("CSL_graph_classification_GCN_CSL_PE_100k"), out_dir=out)
    with pytest.raises(DataError, match="different dataset"):
        train_run(dataset_dir=datasets["CSL"], splits_path=datasets["CSL_splits"], fold=0,
                  config=run_config("CSL_graph_classification_GCN_CSL_PE_100k", {"pos_enc_dim": 2}),
                  out_dir=out, pe_path=datasets["PATTERN_pe"])
    with pytest.raises(DataError, match="belongs to dataset PATTERN, not CSL"):
        train_run(dataset_dir=datasets["CSL"], splits_path=datasets["PATTERN_splits"], fold=0,
                  config=run_config("CSL_graph_classification_GCN_CSL_100k"), out_dir=out)
    with pytest.raises(ConfigError, match="training needs config key"):
        train_run(dataset_dir=datasets["CSL"], splits_path=datasets["CSL_splits"], fold=0,
                  config={"model": "GCN"}, out_dir=out)
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="no CUDA GPU"):
            train_run(dataset_dir=datasets["CSL"], splits_path=datasets["CSL_splits"], fold=0,
                      config=run_config("CSL_graph_classification_GCN_CSL_100k"), out_dir=out, device="cuda")
    assert not out.exists() or not any(out.iterdir())


def test_cli_reports_a_corrupt_dataset_in_one_line(datasets, tmp_path):
    broken = tmp_path / "CSL"
    broken.mkdir()
    (broken / "meta.json").write_bytes((datasets["CSL"] / "meta.json").read_bytes())
    data = (datasets["CSL"] / "graphs.parquet").read_bytes()
    (broken / "graphs.parquet").write_bytes(data[: len(data) // 2])
    out = subprocess.run([sys.executable, "-m", "gnnbench.cli", "train", "benchmarking-gnns", "--dataset", str(broken),
                          "--splits", str(datasets["CSL_splits"]), "--preset", "CSL_graph_classification_GCN_CSL_100k",
                          "--out", str(tmp_path / "run")], capture_output=True, text=True)
    assert out.returncode == 1
    errors = [line for line in out.stderr.splitlines() if "error" in line.lower()]
    assert errors == [f"gnnbench: error: graph store {broken / 'graphs.parquet'} is corrupt or truncated "
                      + errors[0].split("corrupt or truncated ", 1)[1]]
    assert "delete it and rerun snakemake" in errors[0] and "Traceback" not in out.stderr
    assert not (tmp_path / "run").exists()


def test_original_dense_schedule_steps_on_multiples_of_the_batch_size_with_summed_gradients():
    """The released dense-model loop (benchmarking-gnns ``train_epoch_dense`` in ``train/train_*.py``): zero_grad
    once per epoch, backward every graph, step (then zero) when the 0-based graph counter is a multiple of B: the
    first update uses graph 0 alone, the next ones the sum of graphs 1..B, B+1..2B, ...; the leftover graphs'
    gradients are never applied."""
    from conftest import labelled, meta_for, random_graphs

    from gnnbench.data.batching import GraphLoader, model_dtypes
    from gnnbench.data.store import GraphStore
    from gnnbench.models.build import build_model
    from gnnbench.training.loop import train_epoch_accumulated
    from gnnbench.training.losses import get_loss
    from gnnbench.training.metrics import get_metric

    columns = labelled(random_graphs(8, seed=5), "graph_regression")
    store = model_dtypes(GraphStore.from_columns(columns))
    meta = meta_for("graph_regression")
    torch.manual_seed(0)
    net = build_model(dict(model="GCN", L=1, hidden_dim=4, out_dim=4, residual=False, batch_norm=False,
                           dropout=0.0, readout="mean"), meta)
    loss_fn = get_loss("l1")
    loader = GraphLoader(store, torch.arange(8), 1)

    def gradient() -> torch.Tensor:  # unused parameters (batchnorm_h without batch_norm) have no gradient
        return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in net.parameters()])

    per_graph = []  # independent gradients of every graph (parameters never change: lr 0)
    for graph in loader:
        net.zero_grad()
        loss_fn(net(graph), graph).backward()
        per_graph.append(gradient().clone())

    class Recorder(torch.optim.SGD):
        def __init__(self, params):
            super().__init__(params, lr=0.0)
            self.seen = []

        def step(self, closure=None):
            self.seen.append(gradient().clone())
            return super().step(closure)

    optimizer = Recorder(net.parameters())
    train_epoch_accumulated(net, loader, optimizer, loss_fn, get_metric("mae"), torch.device("cpu"), accumulate=3)
    expected = [per_graph[0], sum(per_graph[1:4]), sum(per_graph[4:7])]  # graph 7 is left over
    assert len(optimizer.seen) == 3
    for got, want in zip(optimizer.seen, expected, strict=True):
        torch.testing.assert_close(got, want)
