"""Pre-emption safety: a real SIGTERM to a real training process leaves a checkpoint, a non-zero exit and a
one-line message; rerunning resumes and ends with the metrics of an uninterrupted run (same seed, CPU).

The signal comes from inside the run at a chosen point (``stop_at.py`` for a real process, a patched function in
process), never from a test polling a clock: a fast epoch cannot finish before the signal lands."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gnnbench.config.presets import run_config
from gnnbench.training import last_epoch as run_module
from gnnbench.training.last_epoch import checkpoint_epochs, train_run
from gnnbench.training.preemption import Preempted, StopOnSignal

SMALL = {"L": 2, "hidden_dim": 32, "out_dim": 32, "batch_size": 8}
GCN_PE = "CSL_graph_classification_GCN_CSL_PE_100k"
GATED = "CSL_graph_classification_GatedGCN_CSL_100k"
STOP_AT = Path(__file__).with_name("stop_at.py")


def scores(metrics: dict) -> dict:
    return {k: metrics[k] for k in ("train", "val", "test", "epochs", "stop_reason", "num_params")}


def train_command(dataset, splits, out, preset, overrides, pe=None, sigterm_inside_epoch=None) -> list[str]:
    """``gnnbench train``; ``sigterm_inside_epoch`` N: the process sends itself SIGTERM after the first batch of its
    N-th epoch (``stop_at.py``)."""
    command = [sys.executable, "-m", "gnnbench.cli"]
    if sigterm_inside_epoch is not None:
        command = [sys.executable, str(STOP_AT), "--signal", "TERM", "--inside-epoch", str(sigterm_inside_epoch), "--"]
    command += ["train", "benchmarking-gnns", "--dataset", str(dataset), "--splits", str(splits), "--fold", "0",
                "--preset", preset, "--threads", "1", "--label", "run", "--out", str(out)]
    if pe is not None:
        command += ["--pe", str(pe)]
    return command + [f"--set={k}={v}" for k, v in overrides.items()]


def reference(dataset, splits, out, preset, overrides, pe=None) -> dict:
    config = run_config(preset, overrides)
    return train_run(dataset_dir=dataset, splits_path=splits, fold=0, config=config, out_dir=out, pe_path=pe,
                     threads=1, label="run")


def test_sigterm_mid_run_checkpoints_exits_143_and_the_rerun_matches(datasets, tmp_path):
    overrides = {**SMALL, "epochs": 15, "seed": 11, "lr_schedule_patience": 1000}
    args = (datasets["CSL"], datasets["CSL_splits"])
    expected = reference(*args, tmp_path / "reference", GCN_PE, overrides, datasets["CSL_pe"])
    out = tmp_path / "run"
    killed = subprocess.run(train_command(*args, out, GCN_PE, overrides, datasets["CSL_pe"], sigterm_inside_epoch=4),
                            capture_output=True, text=True, timeout=300)
    stdout, stderr = killed.stdout, killed.stderr
    assert killed.returncode == 143, stderr[-2000:]
    done = checkpoint_epochs(out / "checkpoint.pt")
    assert done == 3  # the fourth epoch was abandoned
    assert "received SIGTERM: stopping" in stderr
    assert (f"gnnbench: error: training stopped by SIGTERM; checkpoint {out / 'checkpoint.pt'} holds {done} "
            f"completed epoch(s); run the same command again") in stderr
    assert "Traceback" not in stderr and stdout == ""
    assert not (out / "metrics.json").exists() and not (out / "history.parquet").exists()
    assert not [p for p in out.iterdir() if ".tmp-" in p.name]

    resumed = subprocess.run(train_command(*args, out, GCN_PE, overrides, datasets["CSL_pe"]), capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resuming from {out / 'checkpoint.pt'} after epoch {done}" in resumed.stderr
    assert scores(json.loads((out / "metrics.json").read_text())) == scores(expected)


def test_sigterm_during_the_first_epoch_leaves_the_initial_checkpoint(datasets, tmp_path):
    overrides = {"epochs": 1, "batch_size": 1, "seed": 3}
    args = (datasets["CSL"], datasets["CSL_splits"])
    expected = reference(*args, tmp_path / "reference", GATED, overrides)
    out = tmp_path / "run"
    # the signal arrives after the first training step: the first epoch is under way, the initial checkpoint on disk
    killed = subprocess.run(train_command(*args, out, GATED, overrides, sigterm_inside_epoch=1), capture_output=True,
                            text=True, timeout=300)
    assert killed.returncode == 143, killed.stderr[-2000:]
    assert checkpoint_epochs(out / "checkpoint.pt") == 0
    assert "holds 0 completed epoch(s)" in killed.stderr

    resumed = subprocess.run(train_command(*args, out, GATED, overrides), capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resuming from {out / 'checkpoint.pt'} after epoch 0" in resumed.stderr
    assert scores(json.loads((out / "metrics.json").read_text())) == scores(expected)


def test_sigterm_inside_an_epoch_abandons_it_and_the_resumed_run_matches(datasets, tmp_path, monkeypatch):
    """Deterministically mid-epoch: the signal arrives after the first batches of epoch 3 were trained."""
    overrides = {**SMALL, "epochs": 6, "seed": 5, "lr_schedule_patience": 1000}
    args = (datasets["CSL"], datasets["CSL_splits"])
    expected = reference(*args, tmp_path / "reference", GCN_PE, overrides, datasets["CSL_pe"])
    real_step, calls = run_module.train_epoch, []

    def step_then_signal(model, loader, *rest):
        calls.append(1)
        if len(calls) == 3:  # epoch index 2: train part of it, then the signal
            batches = iter(loader)
            loader = [next(batches), next(batches)]
            real_step(model, loader, *rest)
            os.kill(os.getpid(), signal.SIGTERM)
        return real_step(model, loader, *rest)

    monkeypatch.setattr(run_module, "train_epoch", step_then_signal)
    out = tmp_path / "run"
    with pytest.raises(Preempted, match=r"training stopped by SIGTERM; checkpoint .*checkpoint.pt holds 2 "
                                        r"completed epoch\(s\)") as info:
        reference(*args, out, GCN_PE, overrides, datasets["CSL_pe"])
    assert info.value.exit_code == 143
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handler removed again
    monkeypatch.setattr(run_module, "train_epoch", real_step)
    assert scores(reference(*args, out, GCN_PE, overrides, datasets["CSL_pe"])) == scores(expected)


def test_sigterm_while_the_outputs_are_written_lets_the_run_finish(datasets, tmp_path, monkeypatch):
    real_write = run_module.write_json

    def signal_then_write(path, obj):
        os.kill(os.getpid(), signal.SIGTERM)
        real_write(path, obj)

    monkeypatch.setattr(run_module, "write_json", signal_then_write)
    results = reference(datasets["CSL"], datasets["CSL_splits"], tmp_path, GCN_PE, {**SMALL, "epochs": 2},
                        datasets["CSL_pe"])
    assert json.loads((tmp_path / "metrics.json").read_text())["test"] == results["test"]
    assert (tmp_path / "history.parquet").is_file()


def test_deferred_sections_hold_the_signal_until_they_end():
    with StopOnSignal() as guard:
        with pytest.raises(Preempted, match="stopped by SIGTERM"):
            with guard.deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                done = True  # reached: the signal did not interrupt the section
        assert done
    with StopOnSignal() as guard:
        with guard.deferred(raise_after=False):
            os.kill(os.getpid(), signal.SIGTERM)
        assert guard.received == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
