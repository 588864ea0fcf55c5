"""Training many initialisations at once: TF1's Adam, the early-stopping rules, best-weights restore, and equality
with runs trained one at a time by an independent reference loop written here."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from gnnbench.errors import ConfigError
from gnnbench.training.engine import fit, restore
from gnnbench.training.init_stack import PropagationStep, SequentialStep, StackedStep, train_split
from gnnbench.training.stacked_adam import StackedAdam
from gnnbench.training.stopping import EarlyStopping


class StackedLogReg(torch.nn.Module):
    """A minimal stacked model for the trainer: softmax regression, R initialisations, L2 on W."""

    def __init__(self, features: torch.Tensor, classes: int, seeds: list[int], l2: float) -> None:
        super().__init__()
        self.features, self.l2 = features, l2
        weights = [torch.randn(features.shape[1], classes, generator=torch.Generator().manual_seed(s)) for s in seeds]
        self.weight = torch.nn.Parameter(torch.stack(weights) * 0.1)
        self.bias = torch.nn.Parameter(torch.zeros(len(seeds), 1, classes))

    def forward(self, nodes, training):
        x = self.features if nodes is None else self.features[nodes]
        return torch.matmul(x, self.weight) + self.bias

    def l2_penalty(self):
        return self.l2 / 2 * self.weight.square().sum(dim=(1, 2))


def problem(seed=0, nodes=120, features=6, classes=3):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, classes, (nodes,), generator=g)
    x = torch.randn(nodes, features, generator=g) + F.one_hot(labels, features).float() * 0.8
    perm = torch.randperm(nodes, generator=g)
    parts = {"train": perm[:24], "val": perm[24:60], "test": perm[60:]}
    return x, labels, parts


def reference_run(x, labels, parts, seed, lr, l2, patience, max_epochs, l2_bias=False):
    """One run, written from the released code's procedure (shchur/gnn-benchmark ``gnnbench/train.py``) with plain
    tensors: TF1 Adam, KDD early stopping, restore (``l2_bias``: the L2 term covers the bias too)."""
    w = (torch.randn(x.shape[1], 3, generator=torch.Generator().manual_seed(seed)) * 0.1).double()
    b = torch.zeros(1, 3, dtype=torch.float64)
    x = x.double()
    m = [torch.zeros_like(w), torch.zeros_like(b)]
    v = [torch.zeros_like(w), torch.zeros_like(b)]
    best_loss, counter, best, best_epoch, epoch = math.inf, 0, (w.clone(), b.clone()), -1, 0
    for epoch in range(max_epochs):
        w.requires_grad_(True)
        b.requires_grad_(True)
        logits = x[parts["train"]] @ w + b
        loss = (F.cross_entropy(logits, labels[parts["train"]]) + l2 / 2 * (w ** 2).sum()
                + l2_bias * l2 / 2 * (b ** 2).sum())
        gw, gb = torch.autograd.grad(loss, [w, b])
        with torch.no_grad():
            t = epoch + 1
            lr_t = lr * math.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
            for i, (p, g) in enumerate(((w, gw), (b, gb))):
                m[i] = 0.9 * m[i] + 0.1 * g
                v[i] = 0.999 * v[i] + 0.001 * g * g
                p -= lr_t * m[i] / (v[i].sqrt() + 1e-8)
            w, b = w.detach(), b.detach()
            val_loss = float(F.cross_entropy(x[parts["val"]] @ w + b, labels[parts["val"]]) + l2 / 2 * (w ** 2).sum()
                             + l2_bias * l2 / 2 * (b ** 2).sum())
        if val_loss <= best_loss:
            best_loss, counter, best, best_epoch = val_loss, 0, (w.clone(), b.clone()), epoch
        else:
            counter += 1
            if counter >= patience:
                break
    w, b = best
    accuracy = float((((x[parts["test"]] @ w + b).argmax(1)) == labels[parts["test"]]).double().mean() * 100)
    return {"epochs": epoch + 1, "best_epoch": best_epoch, "weight": w, "test_accuracy": accuracy}


def test_stacked_runs_equal_runs_trained_one_at_a_time_by_a_reference_loop():
    x, labels, parts = problem()
    seeds = [3, 11, 29, 47]
    model = StackedLogReg(x, 3, seeds, l2=0.05)
    trainer = StackedStep(model, labels, parts, learning_rate=0.05, criterion="gnnbench", patience=10,
                             max_epochs=400, init_ids=[0, 1, 2, 3])
    result = train_split(trainer)
    epochs = []
    for r, seed in enumerate(seeds):
        ref = reference_run(x, labels, parts, seed, lr=0.05, l2=0.05, patience=10, max_epochs=400)
        record = result.records[r]
        assert record["init"] == r
        assert record["epochs"] == ref["epochs"] and record["best_epoch"] == ref["best_epoch"]
        assert record["stop_reason"] == "early_stopping"
        assert torch.allclose(model.weight[r].double(), ref["weight"], atol=1e-4)  # the restored best weights
        assert record["test_accuracy"] == pytest.approx(ref["test_accuracy"])
        epochs.append(record["epochs"])
    assert len(set(epochs)) > 1  # runs left the stack at different epochs: the others went on unchanged
    history = result.history
    for r in range(4):  # one history row per epoch trained, validation loss minimal at the restored epoch
        rows = history["init"] == r
        assert rows.sum() == epochs[r]
        best = result.records[r]["best_epoch"]
        assert history["val_loss"][rows][best] == min(history["val_loss"][rows])
        assert history["val_loss"][rows][best] == pytest.approx(result.records[r]["val_loss"])


class LogReg(torch.nn.Module):
    """The same softmax regression without a stacked form: ``forward(batch)`` → logits of every node (the batch is the
    feature matrix here); weights from torch's global generator, which the sequential trainer seeds per run."""

    def __init__(self, features: torch.Tensor, classes: int, l2: float | None) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features.shape[1], classes) * 0.1)
        self.bias = torch.nn.Parameter(torch.zeros(1, classes))
        if l2 is not None:  # its own L2 term on W only, as the stacked model's
            self.l2_penalty = lambda: l2 / 2 * self.weight.square().sum()

    def forward(self, batch):
        return batch @ self.weight + self.bias


class SingleForm(torch.nn.Module):
    """A stacked model of one initialisation behind ``forward(batch)`` (full graph), as the registry wraps one."""

    def __init__(self, stacked: torch.nn.Module) -> None:
        super().__init__()
        self.stacked = stacked

    def forward(self, batch):
        return self.stacked(None, self.training)[0]

    def l2_penalty(self):
        return self.stacked.l2_penalty()[0]


def sequential(x, labels, parts, build, init_ids, seeds, **kwargs):
    rule = {"learning_rate": 0.05, "weight_decay": 0.0, "criterion": "gnnbench", "patience": 10, "max_epochs": 400}
    return SequentialStep(build, x, labels, parts, init_ids=init_ids, seeds=seeds, dropout_seed=0,
                             **{**rule, **kwargs})


@pytest.mark.parametrize("own_l2", [True, False])
def test_runs_one_after_another_equal_a_reference_loop(own_l2):
    """A model without a stacked form: each initialisation trains under the same rules as a stack (TF1 Adam, the
    total validation loss, patience, best weights restored); without its own L2 term, weight_decay covers every
    parameter."""
    x, labels, parts = problem()
    seeds = [3, 11, 29]
    built = []

    def build():
        built.append(LogReg(x, 3, 0.05 if own_l2 else None))
        return built[-1]

    trainer = sequential(x, labels, parts, build, [0, 1, 2], seeds, weight_decay=0.0 if own_l2 else 0.05)
    result = train_split(trainer)
    for r, seed in enumerate(seeds):
        # W drawn from the global generator seeded with `seed`: the reference's own generator draws the same W
        ref = reference_run(x, labels, parts, seed, lr=0.05, l2=0.05, patience=10, max_epochs=400,
                            l2_bias=not own_l2)
        record = result.records[r]
        assert record["init"] == r and record["stop_reason"] == "early_stopping"
        assert record["epochs"] == ref["epochs"] and record["best_epoch"] == ref["best_epoch"]
        assert torch.allclose(built[r].weight.detach().double(), ref["weight"], atol=1e-4)  # restored best weights
        assert record["test_accuracy"] == pytest.approx(ref["test_accuracy"])
        rows = result.history["init"] == r
        assert rows.sum() == record["epochs"]
        assert result.history["val_loss"][rows][record["best_epoch"]] == pytest.approx(record["val_loss"])


def test_a_stacked_member_equals_the_same_model_trained_one_after_another():
    """Initialisation i of a stack and the same initialisation in its single form, trained one after another: the
    same arithmetic (no dropout), so the same stopping epoch, best epoch and scores."""
    x, labels, parts = problem(3)
    seeds = [7, 8]
    stacked = StackedStep(StackedLogReg(x, 3, seeds, l2=0.05), labels, parts, learning_rate=0.05,
                             criterion="gnnbench", patience=10, max_epochs=400, init_ids=[0, 1])
    together = train_split(stacked)
    builds = iter(seeds)
    alone = train_split(sequential(x, labels, parts, lambda: SingleForm(StackedLogReg(x, 3, [next(builds)], 0.05)),
                                   [0, 1], seeds))
    for a, b in zip(together.records, alone.records, strict=True):
        assert {k: a[k] for k in ("init", "epochs", "best_epoch", "stop_reason", "status")} == \
               {k: b[k] for k in ("init", "epochs", "best_epoch", "stop_reason", "status")}
        for key in ("train_accuracy", "val_accuracy", "test_accuracy", "train_loss", "val_loss", "test_loss"):
            assert a[key] == pytest.approx(b[key], rel=1e-5), key
    for key in ("init", "epoch"):
        assert np.array_equal(together.history[key][np.lexsort((together.history["epoch"], together.history["init"]))],
                              alone.history[key])


class _Stopped(Exception):
    pass


class StopAfter:
    """A stand-in for a job's checkpoint: takes the fit's state after every epoch, the engine's own saves, and stops
    the fit (as a kill would) after ``epochs`` of them."""

    def __init__(self, epochs: int) -> None:
        self.epochs, self.saves, self.state = epochs, 0, None

    def due(self) -> bool:
        return True

    def save(self, state: dict) -> None:
        self.saves += 1
        if self.saves == self.epochs:
            self.state = state
            raise _Stopped


def state_after(step, epochs: int) -> dict:
    """The checkpoint state of ``step``'s fit after ``epochs`` epochs (the fit is stopped there)."""
    run, rules = step.fit_parts()
    stop = StopAfter(epochs)
    with pytest.raises(_Stopped):
        fit(run, step, rules, checkpoint=stop)
    return stop.state


def resumed_split(step, state: dict):
    """``step``'s split resumed from a checkpoint ``state`` (the engine's resume path) and trained to its end."""
    run, rules = step.fit_parts()
    restore(state, run, step, rules)
    fit(run, step, rules)
    return step.results(run)


def assert_resumes_identically(fresh, stop_after) -> None:
    """A split stopped after ``stop_after(uninterrupted result)`` epochs, saved through the engine's checkpoint state
    and resumed in a fresh step ends with the records and history of an uninterrupted one."""
    straight = train_split(fresh())
    state = state_after(fresh(), stop_after(straight))
    torch.save(state, "/dev/null")  # a checkpoint must be serialisable
    resumed = resumed_split(fresh(), state)
    assert resumed.records == straight.records
    assert all(np.array_equal(resumed.history[k], straight.history[k]) for k in straight.history)


def test_runs_one_after_another_resume_mid_run_to_identical_results():
    x, labels, parts = problem(2)

    def fresh():
        return sequential(x, labels, parts, lambda: LogReg(x, 3, 0.02), [0, 1, 2], [1, 2, 3], patience=8)

    assert_resumes_identically(fresh, lambda straight: straight.records[0]["epochs"] + 5)  # into the 2nd init


def test_max_epochs_stops_every_run_and_keeps_the_best_weights():
    x, labels, parts = problem(1)
    model = StackedLogReg(x, 3, [5, 6], l2=0.0)
    trainer = StackedStep(model, labels, parts, learning_rate=0.01, criterion="gnnbench", patience=1000,
                             max_epochs=7, init_ids=[4, 9])
    result = train_split(trainer)
    assert [r["epochs"] for r in result.records] == [7, 7] and [r["init"] for r in result.records] == [4, 9]
    assert {r["stop_reason"] for r in result.records} == {"max_epochs"}


def test_state_dict_round_trip_resumes_to_identical_results():
    x, labels, parts = problem(2)

    def fresh():
        torch.manual_seed(0)
        model = StackedLogReg(x, 3, [1, 2, 3], l2=0.02)
        return StackedStep(model, labels, parts, learning_rate=0.05, criterion="gnnbench", patience=8,
                              max_epochs=300, init_ids=[0, 1, 2])

    assert_resumes_identically(fresh, lambda straight: min(r["epochs"] for r in straight.records) - 2)


def test_tf_adam_update_by_hand():
    p = torch.nn.Parameter(torch.tensor([[1.0, -2.0]]))
    opt = StackedAdam([p], lr=0.1)
    grads = [torch.tensor([[0.5, 0.25]]), torch.tensor([[-1.0, 0.5]])]
    m = v = np.zeros(2)
    theta = np.array([1.0, -2.0])
    for t, g in enumerate(grads, start=1):
        p.grad = g.clone()
        opt.step()
        g = g.numpy()[0].astype(np.float64)
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        theta = theta - 0.1 * math.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (np.sqrt(v) + 1e-8)
    assert np.allclose(p.detach().numpy()[0], theta, atol=1e-6)


def test_kdd_rule_saves_on_ties_and_stops_after_patience():
    rule = EarlyStopping("gnnbench", patience=2, runs=2)
    losses = [[1.0, 1.0], [1.0, 2.0], [0.5, 2.0], [0.6, 2.0], [0.7, 0.1]]
    saves, stops = [], []
    for epoch, loss in enumerate(losses):
        save, stop = rule.update(epoch, torch.tensor(loss), torch.zeros(2))
        saves.append(save.tolist())
        stops.append(stop.tolist())
    assert saves == [[True, True], [True, False], [True, False], [False, False], [False, True]]
    assert stops == [[False, False], [False, False], [False, True], [False, True], [True, False]]
    assert rule.best_epoch.tolist() == [2, 4]


def test_gat_tolerance_rule_always_runs_exactly_patience_epochs():
    """As coded in gnn-benchmark: the tolerance test compares against bests already updated, so it never resets."""
    rule = EarlyStopping("gat_tol", patience=5, runs=1, tolerance=1e-3)
    accs = [10.0, 50.0, 90.0, 80.0, 95.0]
    losses = [3.0, 2.0, 1.0, 0.5, 2.0]
    out = [rule.update(e, torch.tensor([losses[e]]), torch.tensor([accs[e]])) for e in range(5)]
    assert [bool(s[0]) for s, _ in out] == [True, True, True, True, True]  # each epoch improved acc or loss
    assert [bool(t[0]) for _, t in out] == [False, False, False, False, True]
    assert int(rule.best_epoch[0]) == 4


class ToyPropagation:
    """Y ← A Y with clamping, on a path graph: deterministic and enough to drive the trainer."""

    def __init__(self, labels, train):
        self.labels, self.train = labels, train
        n = labels.numel()
        self.a = torch.zeros(n, n)
        idx = torch.arange(n - 1)
        self.a[idx, idx + 1] = self.a[idx + 1, idx] = 0.5
        self.y0 = torch.zeros(n, 3)
        self.y0[train, labels[train]] = 1
        self.state = self.y0.clone()

    def step(self):
        self.state = self.a @ self.state
        self.state[self.train] = self.y0[self.train]

    def logits(self, nodes):
        return self.state[nodes].unsqueeze(0)


def test_propagation_trainer_runs_patience_steps_and_restores_the_best_state():
    labels = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2, 2])
    parts = {"train": torch.tensor([0, 4, 8]), "val": torch.tensor([1, 5, 9]), "test": torch.tensor([2, 3, 6, 7])}
    prop = ToyPropagation(labels, parts["train"])
    trainer = PropagationStep(prop, labels, parts, criterion="gat_tol", patience=6, max_epochs=1000,
                                 tolerance=1e-3)
    result = train_split(trainer)
    record = result.records[0]
    assert record["epochs"] == 6 and record["stop_reason"] == "early_stopping"
    states, reference = [], ToyPropagation(labels, parts["train"])
    for _ in range(6):
        reference.step()
        states.append(reference.state.clone())
    assert torch.equal(prop.state, states[record["best_epoch"]])


def test_unknown_criterion_is_a_config_error():
    with pytest.raises(ConfigError, match="early_stopping_criterion: unknown criterion 'kdd'"):
        EarlyStopping("kdd", 50, 1)


class PoisonedLogReg(StackedLogReg):
    """StackedLogReg whose training logits of run ``run`` (its position among all runs) turn NaN at epoch
    ``epoch`` (the ``epoch``-th training forward; 0-based): that run's training loss is NaN from then on."""

    def __init__(self, *args, run: int, epoch: int, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.run, self.epoch, self.calls, self.rows = run, epoch, 0, list(range(self.weight.shape[0]))

    def forward(self, nodes, training):
        logits = super().forward(nodes, training)
        if training:
            if self.calls >= self.epoch and self.run in self.rows:
                mask = torch.zeros(logits.shape[0], 1, 1)
                mask[self.rows.index(self.run)] = math.nan
                logits = logits + mask
            self.calls += 1
        return logits


def track_rows(trainer: StackedStep, model: PoisonedLogReg) -> None:
    """Keep the model's notion of which run sits at which stack position in step with the step."""
    original = trainer.leave

    def leave(members):
        original(members)
        model.rows = trainer.active.tolist()

    trainer.leave = leave


def test_a_run_whose_loss_turns_nan_leaves_the_stack_as_diverged_and_the_others_are_unchanged():
    x, labels, parts = problem()
    seeds = [3, 11, 29]
    model = PoisonedLogReg(x, 3, seeds, l2=0.05, run=1, epoch=7)
    trainer = StackedStep(model, labels, parts, learning_rate=0.05, criterion="gnnbench", patience=10,
                             max_epochs=400, init_ids=[0, 1, 2])
    track_rows(trainer, model)
    result = train_split(trainer)
    bad = result.records[1]
    assert bad["status"] == "diverged" and bad["stop_reason"] == "diverged"
    assert bad["diverged_epoch"] == 7 and bad["epochs"] == 8  # stopped at the epoch whose loss was NaN
    assert all(math.isnan(bad[f"{part}_{name}"]) for part in ("train", "val", "test")
               for name in ("accuracy", "loss"))  # no score for a diverged run
    rows = result.history["init"] == 1
    assert rows.sum() == 8 and math.isnan(result.history["train_loss"][rows][-1])
    for r in (0, 2):  # the NaN of run 1 reached neither of the others: they equal the reference loop
        ref = reference_run(x, labels, parts, seeds[r], lr=0.05, l2=0.05, patience=10, max_epochs=400)
        record = result.records[r]
        assert record["status"] == "completed" and record["diverged_epoch"] is None
        assert record["stop_reason"] == "early_stopping"
        assert record["epochs"] == ref["epochs"] and record["best_epoch"] == ref["best_epoch"]
        assert torch.allclose(model.weight[r].double(), ref["weight"], atol=1e-4)
        assert record["test_accuracy"] == pytest.approx(ref["test_accuracy"])


def test_a_huge_learning_rate_makes_every_run_diverge_in_its_first_epochs():
    x, labels, parts = problem()
    model = StackedLogReg(x, 3, [3, 11], l2=0.05)
    trainer = StackedStep(model, labels, parts, learning_rate=1e30, criterion="gnnbench", patience=10,
                             max_epochs=400, init_ids=[0, 1])
    result = train_split(trainer)
    assert [r["status"] for r in result.records] == ["diverged", "diverged"]
    for r in result.records:  # the first update overflows the weights: the loss after it is not finite
        assert r["epochs"] == r["diverged_epoch"] + 1 <= 2 and math.isnan(r["test_accuracy"])
        rows = result.history["init"] == r["init"]
        last = r["diverged_epoch"]
        assert not (np.isfinite(result.history["train_loss"][rows][last])
                    and np.isfinite(result.history["val_loss"][rows][last]))
        assert np.isfinite(result.history["train_loss"][rows][:last]).all()


def test_a_diverged_run_stays_diverged_after_a_resume():
    x, labels, parts = problem()

    def fresh():
        model = PoisonedLogReg(x, 3, [3, 11, 29], l2=0.05, run=2, epoch=4)
        trainer = StackedStep(model, labels, parts, learning_rate=0.05, criterion="gnnbench", patience=10,
                                 max_epochs=400, init_ids=[0, 1, 2])
        track_rows(trainer, model)
        return trainer, model

    straight = train_split(fresh()[0])
    state = state_after(fresh()[0], 9)  # past the divergence (epoch 4)
    second, model = fresh()
    run, rules = second.fit_parts()
    restore(state, run, second, rules)
    model.rows = second.active.tolist()
    fit(run, second, rules)
    resumed = second.results(run)
    assert resumed.records[2]["status"] == "diverged" and resumed.records[2]["diverged_epoch"] == 4

    def numbers(records):  # NaN != NaN: compare the diverged run's missing scores by position
        return [{k: "NaN" if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()} for r in records]

    assert numbers(resumed.records) == numbers(straight.records)


def test_label_propagation_whose_loss_is_not_finite_is_diverged():
    labels = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2, 2])
    parts = {"train": torch.tensor([0, 4, 8]), "val": torch.tensor([1, 5, 9]), "test": torch.tensor([2, 3, 6, 7])}
    prop = ToyPropagation(labels, parts["train"])
    step = prop.step
    calls = {"n": 0}

    def step_to_nan():
        step()
        calls["n"] += 1
        if calls["n"] == 3:
            prop.state = prop.state * math.inf  # 0 · inf = NaN

    prop.step = step_to_nan
    trainer = PropagationStep(prop, labels, parts, criterion="gat_tol", patience=6, max_epochs=1000,
                                 tolerance=1e-3)
    record = train_split(trainer).records[0]
    assert record["status"] == "diverged" and record["stop_reason"] == "diverged"
    assert record["diverged_epoch"] == 2 and record["epochs"] == 3 and math.isnan(record["test_accuracy"])
    completed = train_split(PropagationStep(ToyPropagation(labels, parts["train"]), labels, parts,
                                                criterion="gat_tol", patience=6, max_epochs=1000,
                                                tolerance=1e-3)).records[0]
    assert completed["status"] == "completed" and completed["diverged_epoch"] is None


def test_a_pitfalls_job_trains_a_model_without_a_hand_written_stacked_form(tmp_path):
    """The benchmark's GCN (no hand-written stacked form; stacked by torch.func) under the pitfalls protocol: every
    initialisation of every split trained in one process under the protocol's rule (patience 50 on the total
    validation loss, best weights restored), each independent of the others (alone it gives the same record; its
    batch norm rounds differently in a stack of two than alone: losses within 1e-3)."""
    import pandas as pd

    from gnnbench.config.presets import run_config
    from gnnbench.pipeline import generate_dataset, make_split_file
    from gnnbench.protocols.pitfalls.train import run_chunk

    generate_dataset("csbm", "CSBM", {"num_nodes": 200, "num_classes": 3, "num_features": 8}, 1, tmp_path / "CSBM")
    make_split_file(tmp_path / "CSBM", "random_per_class", {"splits": 2, "train_per_class": 10, "val_per_class": 10,
                                                             "seed": 1}, tmp_path / "splits.json")
    config = run_config("WikiCS_node_classification_GCN_100k", {"L": 2, "hidden_dim": 16, "out_dim": 16},
                        protocol="pitfalls")
    common = {"dataset_dir": tmp_path / "CSBM", "splits_path": tmp_path / "splits.json", "config": config, "inits": 2,
              "seed": 5, "threads": 1}
    metrics = run_chunk(splits=[0, 1], out_dir=tmp_path / "job", **common)
    runs = pd.read_parquet(tmp_path / "job" / "runs.parquet")
    history = pd.read_parquet(tmp_path / "job" / "history.parquet")
    assert metrics["runs"] == 4 and metrics["num_params"] > 0
    assert sorted(zip(runs["split"], runs["init"], strict=True)) == [(s, i) for s in (0, 1) for i in (0, 1)]
    for _, run in runs.iterrows():
        rows = history[(history["split"] == run["split"]) & (history["init"] == run["init"])]
        assert rows["epoch"].tolist() == list(range(run["epochs"]))
        assert run["stop_reason"] == "early_stopping" and run["epochs"] == run["best_epoch"] + 1 + 50
        assert rows["val_loss"].iloc[run["best_epoch"]] == rows["val_loss"].min()  # the last minimum (≤)
        assert run["val_loss"] == pytest.approx(rows["val_loss"].iloc[run["best_epoch"]], rel=1e-5)  # restored
    run_chunk(splits=[1], init_ids=[1], out_dir=tmp_path / "alone", **common)
    alone = pd.read_parquet(tmp_path / "alone" / "runs.parquet")
    columns = ["split", "init", "seed", "epochs", "best_epoch", "test_accuracy", "val_loss"]
    pd.testing.assert_frame_equal(alone[columns], runs[(runs["split"] == 1) & (runs["init"] == 1)][columns]
                                  .reset_index(drop=True), rtol=1e-3)
