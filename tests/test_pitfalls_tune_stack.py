"""Pitfalls tuning trials as one stack (gnnbench.protocols.pitfalls.tune, gnnbench.training.init_stack.MemberStack):
the trials × splits of a round's trials of one shape train as one stacked model with their own learning rates,
weight decays and dropout rates; without dropout a trial's record is its record trained alone to 1e-6; a member
without dropout is unaffected by its neighbours' rates; pruned trials leave the stack with all their members; a
killed stacked round resumes to the same records; what cannot be held per member splits the stack."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from gnnbench.config.presets import run_config
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.protocols.pitfalls import tune
from gnnbench.protocols.tuning_jobs import run_round
from gnnbench.records import history_path, read_histories, read_runs
from gnnbench.suite import load_suite
from gnnbench.training.init_stack import MemberStack
from gnnbench.training.stacked_adam import StackedAdam

SPACE = {"learning_rate": {"log_uniform": [1.0e-3, 1.0e-1]}, "weight_decay": {"log_uniform": [1.0e-5, 1.0e-2]}}
SUITE = {"threads_per_run": 1,
         "datasets": {"CSBM": {"generator": "csbm", "seed": 1, "params": {"num_nodes": 240, "num_classes": 3},
                               "split": {"scheme": "random_per_class", "splits": 3, "seed": 1}}},
         "benchmarks": {"CSBM": {"protocol": "pitfalls", "inits": 2,
                                 "set": {"early_stopping_tolerance": 5, "dropout_prob": 0.0},
                                 "tuning": {"trials": 4, "per_round": 4, "splits": 3, "sampler": "random",
                                            "space": SPACE},
                                 "models": {"GCN": "pitfalls_GCN"}}}}
EXACT = ["val_score", "train_score", "epochs", "scored_epoch", "stop_reason", "status", "extra", "config", "split"]


def _suite(tuning: dict | None = None, space: dict | None = None) -> dict:
    config = copy.deepcopy(SUITE)
    config["benchmarks"]["CSBM"]["tuning"].update(tuning or {})
    if space is not None:
        config["benchmarks"]["CSBM"]["tuning"]["space"] = space
    return config


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("pitfalls_tune_stack")
    suite = load_suite(_suite())
    generate_dataset("csbm", "CSBM", SUITE["datasets"]["CSBM"]["params"], 1, root / "CSBM")
    split = suite.datasets["CSBM"].split
    make_split_file(root / "CSBM", split["scheme"], {k: v for k, v in split.items() if k != "scheme"},
                    root / "splits.json")
    return root / "CSBM", root / "splits.json"


@pytest.fixture
def widths(monkeypatch):
    """The stack widths a round trains: [members at the start, members after each leave, ...] per stack."""
    seen: list[list[int]] = []

    class Recording(MemberStack):
        def __init__(self, model, *args, **kwargs):
            seen.append([model.inits])
            super().__init__(model, *args, **kwargs)

        def _drop(self, keep):
            seen[-1].append(int(keep.numel()))
            super()._drop(keep)

    monkeypatch.setattr(tune, "MemberStack", Recording)
    return seen


def _round(data, tmp_path, name: str, *, stack: bool, **suite_changes):
    benchmark = load_suite(_suite(**suite_changes)).benchmarks["CSBM"]
    job = benchmark.tuning_job("GCN", "main", 0)
    job["scope"]["stack"] = stack
    records = tmp_path / f"{name}.parquet"
    run_round(job=job, dataset_dir=data[0], splits_path=data[1], pe_path=None, previous=[],
              out=tmp_path / name / "round_0.json", records_out=records, threads=1)
    return read_runs([records]).sort_values("init").reset_index(drop=True), read_histories([history_path(records)])


def test_a_stacked_trial_is_its_trial_alone_without_dropout(data, tmp_path, widths):
    stacked, stacked_history = _round(data, tmp_path, "stacked", stack=True)
    assert widths[0][0] == 12  # 4 trials × 3 splits, one stack; members leave as they stop early
    assert widths[0] == sorted(widths[0], reverse=True) and len(widths) == 1
    alone, alone_history = _round(data, tmp_path, "alone", stack=False)
    assert len(widths) == 1  # one after another: no stack
    assert len(set(stacked["val_score"])) > 1 and set(stacked["stop_reason"]) == {"early_stopping"}
    assert stacked[EXACT].equals(alone[EXACT])
    for column in ("val_loss", "train_loss"):
        np.testing.assert_allclose(stacked[column], alone[column], rtol=0, atol=1e-6)
    # the first split's epochs, what the pruner and the tuning curves read
    ids = dict(zip(stacked["run_id"], stacked["init"], strict=True)) | dict(zip(alone["run_id"], alone["init"],
                                                                              strict=True))
    a, b = (h.assign(trial=h["run_id"].map(ids)).sort_values(["trial", "epoch"]).reset_index(drop=True)
            for h in (stacked_history, alone_history))
    assert a[["trial", "epoch", "val_score"]].equals(b[["trial", "epoch", "val_score"]])
    np.testing.assert_allclose(a["val_loss"], b["val_loss"], rtol=0, atol=1e-6)


def test_a_member_without_dropout_is_unaffected_by_its_neighbours_rates(data, tmp_path, widths):
    # trials of one shape with their own dropout rates: the one whose rate is 0 (the first, by the grid below) is
    # the same trial alone; a rate of its own reaches every dropout of the model (other records differ)
    space = {**SPACE, "dropout_prob": {"uniform": [0.0, 0.8], "step": 0.4}}
    tuning = {"trials": 3, "per_round": 3, "sampler": "random", "seed": 5}
    stacked, _ = _round(data, tmp_path, "stacked", stack=True, tuning=tuning, space=space)
    alone, _ = _round(data, tmp_path, "alone", stack=False, tuning=tuning, space=space)
    rates = [eval(e)["params"]["dropout_prob"] for e in stacked["extra"].str.replace("null", "None")]
    assert widths[0][0] == 9 and 0.0 in rates and len(set(rates)) > 1, rates
    zero = rates.index(0.0)
    assert stacked.loc[zero, EXACT].equals(alone.loc[zero, EXACT])
    np.testing.assert_allclose(stacked.loc[zero, "val_loss"], alone.loc[zero, "val_loss"], rtol=0, atol=1e-6)
    dropped = [i for i, r in enumerate(rates) if r > 0]
    assert not np.allclose(stacked.loc[dropped, "val_loss"], alone.loc[dropped, "val_loss"], rtol=0, atol=1e-6)


def test_pruned_trials_leave_the_stack_with_all_their_members(data, tmp_path, monkeypatch, widths):
    # asha from 2 epochs (rungs 2, 6, 18): the 4 trials' first-split members reach a rung together, n = 4 ≥ eta 3,
    # k = 1: all but the best (and its ties) are pruned there, their 3 splits at once
    left: list[list[int]] = []
    real_leave = MemberStack.leave

    def leave(self, members):
        left.append(sorted(members))
        real_leave(self, members)

    monkeypatch.setattr(MemberStack, "leave", leave)
    runs, _ = _round(data, tmp_path, "pruned", stack=True, tuning={"pruner": "asha", "min_epochs": 2})
    pruned = runs[runs["stop_reason"] == "pruned"]
    assert len(pruned) >= 2 and pruned["val_score"].isna().all()
    assert widths[0][0] == 12 and widths[0][-1] < 12 and widths[0] == sorted(widths[0], reverse=True)
    for trial in pruned["init"]:  # every member of a pruned trial leaves in one call: trial t holds 3t .. 3t + 2
        call = next(c for c in left if 3 * trial in c)
        assert {3 * trial, 3 * trial + 1, 3 * trial + 2} <= set(call)
    epochs = [eval(e.replace("null", "None"))["pruned_epoch"] for e in pruned["extra"]]
    assert set(epochs) <= {1, 5, 17}  # pruned after a rung: 0-based epoch rung - 1


def test_a_killed_stacked_round_reruns_to_the_same_records(data, tmp_path, monkeypatch):
    from gnnbench.training import engine
    from gnnbench.training.preemption import Preempted

    benchmark = load_suite(_suite(tuning={"pruner": "asha", "min_epochs": 2})).benchmarks["CSBM"]
    job = benchmark.tuning_job("GCN", "main", 0)
    whole = tmp_path / "whole.parquet"
    run_round(job=job, dataset_dir=data[0], splits_path=data[1], pe_path=None, previous=[],
              out=tmp_path / "whole" / "round_0.json", records_out=whole, threads=1)
    real, saves = engine._checkpoint.save_checkpoint, {"n": 0}

    def save_then_stop(path, state):  # killed after a few epochs of the stack were saved
        real(path, state)
        saves["n"] += 1
        if saves["n"] == 8:
            raise Preempted(15, "stopped")

    monkeypatch.setattr(tune, "CHECKPOINT_SECONDS", 0)
    monkeypatch.setattr(engine._checkpoint, "save_checkpoint", save_then_stop)
    records, out = tmp_path / "killed.parquet", tmp_path / "killed" / "round_0.json"
    with pytest.raises(Preempted):
        run_round(job=job, dataset_dir=data[0], splits_path=data[1], pe_path=None, previous=[], out=out,
                  records_out=records, threads=1)
    assert out.with_name("round_0.checkpoint.pt").is_file() and not records.exists()
    monkeypatch.setattr(engine._checkpoint, "save_checkpoint", real)
    run_round(job=job, dataset_dir=data[0], splits_path=data[1], pe_path=None, previous=[], out=out,
              records_out=records, threads=1)
    columns = ["config", "val_score", "val_loss", "train_score", "epochs", "stop_reason", "extra"]
    assert read_runs([records])[columns].equals(read_runs([whole])[columns])


def test_what_a_model_cannot_hold_per_member_splits_the_stack():
    gcn = run_config("pitfalls_GCN", protocol="pitfalls")
    gat = run_config("pitfalls_GAT", protocol="pitfalls")
    lp = run_config("pitfalls_LabelProp", protocol="pitfalls")
    space = {"learning_rate": None, "weight_decay": None, "dropout_prob": None, "input_dropout_prob": None,
             "hidden_size": None}
    gcns = [{**gcn, "learning_rate": 0.01}, {**gcn, "learning_rate": 0.02, "dropout_prob": 0.1},
            {**gcn, "hidden_size": 32}, {**gcn, "weight_decay": 0.1}]
    assert tune.stack_groups(gcns, space) == [[0, 1, 3], [2]]  # the width is a shape key
    # GAT draws its dropout its own way: its rates are no member values, its learning rates and weight decays are
    gats = [{**gat, "learning_rate": 0.01}, {**gat, "input_dropout_prob": 0.1}, {**gat, "weight_decay": 0.1}]
    assert tune.stack_groups(gats, space) == [[0, 2], [1]]
    assert tune.stack_groups([lp, lp], {}) == [[0], [1]]  # no weights: nothing to stack


def test_per_member_learning_rates_are_bit_equal_to_the_members_alone():
    gen = torch.Generator().manual_seed(0)
    weights, lrs = torch.randn(5, 37, 13, generator=gen), [0.01, 0.01, 0.003, 0.05, 0.003]
    stacked = torch.nn.Parameter(weights.clone())
    opt = StackedAdam([stacked], lrs)
    alone = [torch.nn.Parameter(weights[r:r + 1].clone()) for r in range(5)]
    opts = [StackedAdam([a], lr) for a, lr in zip(alone, lrs, strict=True)]

    def steps(n: int) -> None:
        for _ in range(n):
            grad = torch.randn(stacked.shape, generator=gen)
            stacked.grad = grad.clone()
            opt.step()
            for r, (a, o) in enumerate(zip(alone, opts, strict=True)):
                a.grad = grad[r:r + 1].clone()
                o.step()
        assert all(torch.equal(stacked.data[r:r + 1], a.data) for r, a in enumerate(alone))

    steps(10)
    keep = torch.tensor([0, 2, 4])  # members 1 and 3 leave: the others keep their rates and moments
    stacked.data = stacked.data.index_select(0, keep)
    opt.select(keep)
    alone, opts = [alone[i] for i in (0, 2, 4)], [opts[i] for i in (0, 2, 4)]
    steps(10)
    assert opt.lr == [0.01, 0.003, 0.003]
