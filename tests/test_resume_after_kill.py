"""Resuming after SIGKILL, for every protocol: a real ``gnnbench train`` process killed right after a chosen
checkpoint save (from inside, by ``stop_at.py``: no race with a clock) resumes from that checkpoint when the same
command runs again — it does not redo the work already done — and ends with the results of an uninterrupted run
(same seed, CPU, one thread). Also: every checkpoint each protocol writes reads back whole with
``weights_only=True``, and temporary files of killed writers are removed by the next run."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from gnnbench.config.presets import run_config
from gnnbench.io import write_json
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.protocols import fair_comparison
from gnnbench.protocols.fair_comparison import train as fair_comparison_train
from gnnbench.protocols.pitfalls import train as pitfalls_train
from gnnbench.training import checkpoint
from gnnbench.training.checkpoint import load_resumable, read_checkpoint
from gnnbench.training.last_epoch import checkpoint_epochs, train_run

STOP_AT = Path(__file__).with_name("stop_at.py")
GCN_PE = "CSL_graph_classification_GCN_CSL_PE_100k"
SMALL = {"L": 2, "hidden_dim": 16, "out_dim": 16, "batch_size": 8}


@pytest.fixture(scope="module")
def data(tmp_path_factory, datasets) -> dict:
    """CSL (benchmarking-gnns, from conftest), a CSBM graph with 3 node splits (pitfalls) and 90 graph_families graphs
    in 3 folds (fair-comparison)."""
    root = tmp_path_factory.mktemp("resume")
    generate_dataset("csbm", "CSBM", {"num_nodes": 300, "num_classes": 3, "num_features": 16}, 1, root / "CSBM")
    make_split_file(root / "CSBM", "random_per_class", {"splits": 3, "train_per_class": 20, "val_per_class": 30,
                                                        "seed": 2018}, root / "CSBM_splits.json")
    generate_dataset("graph_families", "GF", {"num_graphs": 90}, 1, root / "GF")
    make_split_file(root / "GF", "stratified_kfold", {"folds": 3, "val_fraction": 0.1, "seed": 0},
                    root / "GF_splits.json")
    return {**datasets, "CSBM": root / "CSBM", "CSBM_splits": root / "CSBM_splits.json", "GF": root / "GF",
            "GF_splits": root / "GF_splits.json"}


def gnnbench(args: list[str], *stop: str) -> subprocess.CompletedProcess:
    """``gnnbench ARGS`` in a fresh process, stopped as ``stop`` says (``stop_at.py`` options; none: to the end)."""
    return subprocess.run([sys.executable, str(STOP_AT), *stop, "--", *args], capture_output=True, text=True,
                          timeout=300)


def straight(args: list[str], every_epoch: bool = False) -> int:
    """``gnnbench ARGS`` uninterrupted, in this process (the reference); returns the checkpoints it saved.
    ``every_epoch``: pitfalls and fair-comparison checkpoint after every epoch (as ``--checkpoint-seconds 0``)."""
    from gnnbench.cli import main

    real, count = checkpoint.save_checkpoint, [0]

    def save(path, state):
        count[0] += 1
        real(path, state)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checkpoint, "save_checkpoint", save)
        if every_epoch:
            mp.setattr("gnnbench.protocols.pitfalls.train.CHECKPOINT_SECONDS", 0.0)
            mp.setattr("gnnbench.protocols.fair_comparison.train.CHECKPOINT_SECONDS", 0.0)
        assert main(args) == 0
    return count[0]


def saves(result: subprocess.CompletedProcess) -> int:
    """Checkpoints the process saved (one per epoch trained, plus the protocol's bookkeeping saves)."""
    return len(re.findall(r"^stop_at: checkpoint \d+ saved$", result.stderr, re.M))


def p1_args(data, out: Path, epochs: int = 6) -> list[str]:
    sets = {**SMALL, "epochs": epochs, "seed": 11, "lr_schedule_patience": 1000}
    return ["train", "benchmarking-gnns", "--dataset", str(data["CSL"]), "--splits", str(data["CSL_splits"]),
            "--fold", "0", "--pe", str(data["CSL_pe"]), "--preset", GCN_PE, "--threads", "1", "--device", "cpu",
            "--label", "run", "--out", str(out), *[f"--set={k}={v}" for k, v in sets.items()]]


def without_seconds(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in frame.columns if c == "seconds"])


# ------------------------------------------------------------------------------------------------ the three protocols


def test_a_killed_benchmarking_gnns_run_resumes_after_its_last_epoch(data, tmp_path):
    reference = straight(p1_args(data, tmp_path / "straight"))
    out = tmp_path / "killed"
    killed = gnnbench(p1_args(data, out), "--after-save", "4")  # the initial checkpoint, then epochs 0, 1, 2
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert checkpoint_epochs(out / "checkpoint.pt") == 3
    assert [p.name for p in out.iterdir()] == ["checkpoint.pt"]  # no output, no temporary file

    resumed = gnnbench(p1_args(data, out))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming from {out / 'checkpoint.pt'} after epoch 3" in resumed.stderr
    # the epochs done before the kill are not trained again
    assert re.findall(r"gnnbench\.training\.last_epoch: epoch (\d+) ", resumed.stderr) == ["3", "4", "5"]
    assert saves(killed) + saves(resumed) == reference
    got, expected = (json.loads((d / "metrics.json").read_text()) for d in (out, tmp_path / "straight"))
    for key in ("train", "val", "test", "epochs", "stop_reason", "num_params"):
        assert got[key] == expected[key], key
    pd.testing.assert_frame_equal(without_seconds(pd.read_parquet(out / "history.parquet")),
                                  without_seconds(pd.read_parquet(tmp_path / "straight" / "history.parquet")))


def p2_args(data, out: Path) -> list[str]:
    # 20 epochs per split exactly (no early stop before), 2 initialisations per split
    return ["train", "pitfalls", "--dataset", str(data["CSBM"]), "--splits", str(data["CSBM_splits"]),
            "--fold", "0", "1", "2", "--preset", "pitfalls_GCN", "--inits", "2", "--seed", "5", "--threads", "1",
            "--device", "cpu", "--label", "GCN", "--set", "num_epochs=20", "--set", "early_stopping_tolerance=1000",
            "--out", str(out)]


def test_a_killed_pitfalls_chunk_keeps_its_finished_splits_and_resumes_inside_the_current_one(data, tmp_path):
    every_epoch = ("--checkpoint-seconds", "0")
    reference = straight(p2_args(data, tmp_path / "straight"), every_epoch=True)
    out = tmp_path / "killed"
    # saves: the empty state, 20 epochs of split 0, split 0 finished (22), then 5 epochs of split 1
    killed = gnnbench(p2_args(data, out), *every_epoch, "--after-save", "27")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    state = read_checkpoint(out / "checkpoint.pt")  # holds the finished split's NumPy history
    [done] = state["units"].values()
    assert done["split"] == 0 and isinstance(done["history"]["epoch"], np.ndarray)
    assert state["current"]["fit"]["epochs"] == 5  # the stack of split 1, five epochs in
    assert not (out / "runs.parquet").exists()

    resumed = gnnbench(p2_args(data, out), *every_epoch)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "ignoring unreadable checkpoint" not in resumed.stderr
    assert f"resuming split 1 from {out / 'checkpoint.pt'} at epoch 5" in resumed.stderr
    assert re.findall(r"pitfalls\.train: split (\d+): ", resumed.stderr) == ["1", "2"]  # split 0 is not trained again
    assert saves(killed) + saves(resumed) == reference
    for name in ("runs.parquet", "history.parquet"):
        pd.testing.assert_frame_equal(without_seconds(pd.read_parquet(out / name)),
                                      without_seconds(pd.read_parquet(tmp_path / "straight" / name)))


def p3_args(data, out: Path) -> list[str]:
    # every dimension of the grid but early_stopping fixed: two configurations, 6 epochs each, then one final run
    sets = ["epochs=6", "patience=100", "learning_rate=0.01", "l2=0.0001", "hidden_units=16", "batch_size=32"]
    return ["train", "fair-comparison", "--dataset", str(data["GF"]), "--splits", str(data["GF_splits"]),
            "--fold", "1", "--preset", "fair_Baseline_social", "--final-runs", "1", "--seed", "3", "--threads", "1",
            "--device", "cpu", "--out", str(out), *[x for s in sets for x in ("--set", s)]]


def test_a_killed_fair_comparison_inner_job_keeps_its_finished_runs_and_resumes_the_current_one(data, tmp_path):
    every_epoch = ("--checkpoint-seconds", "0")
    reference = straight(p3_args(data, tmp_path / "straight"), every_epoch=True)
    out = tmp_path / "killed"
    # saves: the job's empty state, 6 epochs of config 1, config 1 finished, then 3 epochs of config 2
    killed = gnnbench(p3_args(data, out), *every_epoch, "--after-save", "11")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    path = out / "inner" / "part0.checkpoint.pt"
    state = read_checkpoint(path)
    assert len(state["units"]) == 1 and not (out / "inner" / "part0.parquet").exists()
    assert state["current"]["fit"]["run"]["states"][0]["epoch"] == 3

    resumed = gnnbench(p3_args(data, out), *every_epoch)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert re.search(rf"resuming \{{.*'stage': 'selection'\}} from {re.escape(str(path))} at epoch 3$", resumed.stderr,
                     re.M), resumed.stderr[-3000:]
    assert saves(killed) + saves(resumed) == reference  # config 1 and the first 3 epochs are not redone
    assert read_checkpoint(path)["finished"]  # the job is done: kept, never resumed
    for name in ("inner/part0.parquet", "final.parquet"):
        pd.testing.assert_frame_equal(without_seconds(pd.read_parquet(out / name)),
                                      without_seconds(pd.read_parquet(tmp_path / "straight" / name)))
    chosen = [json.loads((d / "selection.json").read_text())["chosen"] for d in (out, tmp_path / "straight")]
    assert chosen[0]["config_id"] == chosen[1]["config_id"] and chosen[0]["val_accuracy"] == chosen[1]["val_accuracy"]


# ------------------------------------------------------------------------------------------------ checkpoints read back


def same(a, b) -> bool:
    """Equal values of equal types, tensors and arrays included (NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.nan_to_num(), b.nan_to_num())
    if isinstance(a, np.ndarray | np.generic):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@pytest.fixture
def read_back(monkeypatch):
    """Every checkpoint saved (protocols checkpointing after every epoch) is read back with ``weights_only=True``
    and compared with the state saved; the states are kept for the test to look at."""
    real, states = checkpoint.save_checkpoint, []

    def save(path, state):
        real(path, state)
        back = read_checkpoint(path)  # raises on anything weights_only refuses
        assert same(back, state), f"checkpoint {path} reads back different from what was saved"
        if not state["finished"]:
            assert load_resumable(path, state["key"]) is not None
        states.append(state)

    monkeypatch.setattr(checkpoint, "save_checkpoint", save)  # every protocol saves through it (training.engine)
    monkeypatch.setattr("gnnbench.protocols.pitfalls.train.CHECKPOINT_SECONDS", 0.0)
    monkeypatch.setattr("gnnbench.protocols.fair_comparison.train.CHECKPOINT_SECONDS", 0.0)
    return states


def test_benchmarking_gnns_checkpoints_read_back(data, tmp_path, read_back):
    config = run_config(GCN_PE, {**SMALL, "epochs": 2})
    train_run(dataset_dir=data["CSL"], splits_path=data["CSL_splits"], fold=0, config=config, out_dir=tmp_path,
              pe_path=data["CSL_pe"], threads=1)
    assert len(read_back) == 4 and read_back[-1]["finished"]  # initial, 2 epochs, finished


@pytest.mark.parametrize("preset", ["pitfalls_GCN", "pitfalls_LabelProp-NL"])
def test_pitfalls_checkpoints_read_back(data, tmp_path, read_back, preset):
    pitfalls_train.run_chunk(dataset_dir=data["CSBM"], splits_path=data["CSBM_splits"], splits=[0, 1],
                       config=run_config(preset, {"num_epochs": 5}, protocol="pitfalls"), inits=2, seed=5,
                       out_dir=tmp_path, threads=1)
    # mid-split states, and states holding a finished split's NumPy history, were among those read back
    assert any(s["current"] is not None for s in read_back)
    assert any(s["units"] and isinstance(next(iter(s["units"].values()))["history"]["val_loss"], np.ndarray)
               for s in read_back)


def test_fair_comparison_checkpoints_read_back(data, tmp_path, read_back):
    config = {"model": "DeepMultisets", "hidden_units": 16, "batch_size": 32, "learning_rate": 0.01, "epochs": 3,
              **fair_comparison.TRAINING_DEFAULTS, "patience": 3, "early_stopping": "loss"}
    fair_comparison_train.run_inner(dataset_dir=data["GF"], splits_path=data["GF_splits"], fold=0, configs=[config],
                              positions=[0], seed=3, out=tmp_path / "inner" / "part0.parquet", device="cpu",
                              threads=1)
    # the job's empty state, its run after each of 3 epochs (weights in it), the run finished, the job finished
    assert len(read_back) == 6 and sum(s["current"] is not None and "model" in s["current"]["fit"]
                                       for s in read_back) == 3


def test_numpy_values_are_stored_as_tensors_and_come_back_as_they_were(tmp_path):
    weights = torch.nn.BatchNorm1d(3).state_dict()
    state = {"key": "k", "finished": False, "model": weights,
             "history": {"epoch": np.arange(4), "loss": np.array([0.5, np.nan], dtype=np.float32),
                         "big_endian": np.arange(3, dtype=">i4"), "flags": np.array([True, False]),
                         "columns": np.zeros((2, 3)).T},
             "rows": [(np.int64(3), np.float64(0.25), 1.5, "text", None)]}
    checkpoint.save_checkpoint(tmp_path / "c.pt", state)
    torch.load(tmp_path / "c.pt", weights_only=True)  # the file itself holds no NumPy object
    back = load_resumable(tmp_path / "c.pt", "k")
    assert same(back["history"], {k: np.asarray(v, dtype=v.dtype.newbyteorder("=")) for k, v in
                                  state["history"].items()})
    assert same(back["rows"], state["rows"])
    assert same(back["model"], weights) and back["model"]._metadata == weights._metadata  # state-dict versions kept
    with pytest.raises(TypeError, match="cannot hold a NumPy array of dtype <U1"):
        checkpoint.save_checkpoint(tmp_path / "d.pt", {"names": np.array(["a"])})


def test_an_unreadable_checkpoint_is_discarded_with_a_warning(tmp_path, caplog):
    (tmp_path / "c.pt").write_bytes(b"not a checkpoint")
    assert load_resumable(tmp_path / "c.pt", "k") is None
    assert "ignoring unreadable checkpoint" in caplog.text and "training from scratch" in caplog.text


# ------------------------------------------------------------------------------------------------ stale temporary files


def test_a_checkpoint_write_cut_short_by_sigkill_leaves_a_temporary_file_that_the_rerun_removes(data, tmp_path):
    out = tmp_path / "run"
    process = subprocess.Popen([sys.executable, str(STOP_AT), "--inside-save", "3", "--", *p1_args(data, out, 4)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == -signal.SIGKILL, stderr[-3000:]
    temp = out / f".checkpoint.pt.tmp-{socket.gethostname()}-{process.pid}"
    assert sorted(p.name for p in out.iterdir()) == sorted(["checkpoint.pt", temp.name])
    assert temp.stat().st_size > 0 and checkpoint_epochs(out / "checkpoint.pt") == 1  # the half-written epoch 1

    resumed = gnnbench(p1_args(data, out, 4))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"removed {temp}, left behind by a killed process" in resumed.stderr
    assert f"resuming from {out / 'checkpoint.pt'} after epoch 1" in resumed.stderr
    assert not [p for p in out.iterdir() if ".tmp-" in p.name]


def test_only_temporary_files_of_writers_gone_from_this_host_are_removed(tmp_path):
    host = socket.gethostname()
    gone = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1  # no process can have this id
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        names = {
            f".metrics.json.tmp-{host}-{gone}": False,  # removed: its writer is gone
            f".checkpoint.pt.tmp-{gone}": False,  # the name of earlier versions (no host): removed too
            f".checkpoint.pt.tmp-{host}-{live.pid}": True,  # a live writer's
            f".checkpoint.pt.tmp-{host}-{os.getpid()}": True,  # this process's own
            f".metrics.json.tmp-other-node-{gone}": True,  # another host's, on a shared file system
            f"notes.tmp-{gone}": True,  # not a temporary file of ours
        }
        for name in names:
            (tmp_path / name).write_bytes(b"")
        write_json(tmp_path / "metrics.json", {})  # the first write of this process into the folder sweeps it
        kept = {p.name for p in tmp_path.iterdir()} - {"metrics.json"}
        assert kept == {name for name, keep in names.items() if keep}
    finally:
        live.stdin.close()
        live.wait()
