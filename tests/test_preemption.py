"""Pre-emption safety: a real SIGTERM to a real training process leaves a checkpoint, a non-zero exit and a
one-line message; rerunning resumes and ends with the metrics of an uninterrupted run (same seed, CPU)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from gnnbench.config.presets import run_config
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.training import run as run_module
from gnnbench.training.preemption import Preempted, StopOnSignal
from gnnbench.training.run import checkpoint_epochs, train_run

SMALL = {"L": 2, "hidden_dim": 32, "out_dim": 32, "batch_size": 8}
GCN_PE = "CSL_graph_classification_GCN_CSL_PE_100k"
GATED = "CSL_graph_classification_GatedGCN_CSL_100k"


def scores(metrics: dict) -> dict:
    return {k: metrics[k] for k in ("train", "val", "test", "epochs", "stop_reason", "num_params")}


def train_command(dataset, splits, out, preset, overrides, pe=None) -> list[str]:
    command = [sys.executable, "-m", "gnnbench.cli", "train", "--dataset", str(dataset), "--splits", str(splits),
               "--fold", "0", "--preset", preset, "--threads", "1", "--label", "run", "--out", str(out)]
    if pe is not None:
        command += ["--pe", str(pe)]
    return command + [f"--set={k}={v}" for k, v in overrides.items()]


def reference(dataset, splits, out, preset, overrides, pe=None) -> dict:
    config = run_config(preset, overrides)
    return train_run(dataset_dir=dataset, splits_path=splits, fold=0, config=config, out_dir=out, pe_path=pe,
                     threads=1, label="run")


def sigterm_when(process: subprocess.Popen, ready, timeout: float = 120) -> None:
    """Poll until ``ready()`` and send SIGTERM to the training process (fails if it ended first)."""
    deadline = time.time() + timeout
    while not ready() and process.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    assert process.poll() is None, "the run ended before it could be signalled"
    process.send_signal(signal.SIGTERM)


def test_sigterm_mid_run_checkpoints_exits_143_and_the_rerun_matches(datasets, tmp_path):
    overrides = {**SMALL, "epochs": 15, "seed": 11, "lr_schedule_patience": 1000}
    args = (datasets["CSL"], datasets["CSL_splits"])
    expected = reference(*args, tmp_path / "reference", GCN_PE, overrides, datasets["CSL_pe"])
    out = tmp_path / "run"
    command = train_command(*args, out, GCN_PE, overrides, datasets["CSL_pe"])
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sigterm_when(process, lambda: (checkpoint_epochs(out / "checkpoint.pt") or 0) >= 3)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 143, stderr[-2000:]
    done = checkpoint_epochs(out / "checkpoint.pt")
    assert 3 <= done < 15
    assert "received SIGTERM: stopping" in stderr
    assert (f"gnnbench: error: training stopped by SIGTERM; checkpoint {out / 'checkpoint.pt'} holds {done} "
            f"completed epoch(s); run the same command again") in stderr
    assert "Traceback" not in stderr and stdout == ""
    assert not (out / "metrics.json").exists() and not (out / "history.parquet").exists()
    assert not [p for p in out.iterdir() if ".tmp-" in p.name]

    resumed = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resuming from {out / 'checkpoint.pt'} after epoch {done}" in resumed.stderr
    assert scores(json.loads((out / "metrics.json").read_text())) == scores(expected)


@pytest.fixture(scope="module")
def csl150(tmp_path_factory):
    """CSL at its published size (150 graphs): a GatedGCN epoch at batch size 1 (90 steps) takes about a second, long
    enough to signal inside one."""
    root = tmp_path_factory.mktemp("csl150")
    generate_dataset("csl", "CSL", {"copies_per_class": 15}, 3, root / "CSL")
    make_split_file(root / "CSL", "stratified_kfold", {"folds": 5, "val_fraction": 0.25, "seed": 0},
                    root / "splits.json")
    return root / "CSL", root / "splits.json"


def test_sigterm_during_the_first_epoch_leaves_the_initial_checkpoint(csl150, tmp_path):
    overrides = {"epochs": 1, "batch_size": 1, "seed": 3}
    expected = reference(*csl150, tmp_path / "reference", GATED, overrides)
    out = tmp_path / "run"
    command = train_command(*csl150, out, GATED, overrides)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sigterm_when(process, (out / "checkpoint.pt").exists)  # written just before the first epoch starts
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 143, stderr[-2000:]
    assert checkpoint_epochs(out / "checkpoint.pt") == 0
    assert "holds 0 completed epoch(s)" in stderr

    resumed = subprocess.run(command, capture_output=True, text=True, timeout=120)
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
