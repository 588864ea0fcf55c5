"""One early-stopped graph-classification training run, the fair-comparison protocol's procedure (Errica et al. §5;
the released code diningphil/gnn-comparison ``models/gnn_wrapper/NetWrapper.py`` and
``models/utils/EarlyStopper.py`` ``Patience``; where gnnbench departs from it:
docs/protocols/fair-comparison.md#protocol-and-training).

Per epoch: the training graphs in a fresh random order, mini-batches of ``batch_size`` (last partial batch kept);
loss = mean cross entropy of the batch + the model's auxiliary losses (DiffPool); optional clipping of the global
gradient norm (``gradient_clipping``, 0 = none); optimiser ``Adam`` or ``SGD`` (no momentum) with coupled L2
(``weight_decay = l2``). Training loss and accuracy of an epoch are the running, graph-weighted values in train
mode. Then the model is evaluated (eval mode) on the validation graphs and, where the run has them, the test
graphs — accuracy in percent. The learning rate of epoch e (0-based) follows ``scheduler``: ``none``; ``step`` —
lr₀·γ^⌊e / step_size⌋, the closed form the original got from ``scheduler.step(epoch)`` under PyTorch 1.4 (GIN:
step 50, γ 0.5; ECC as run: step 10, γ 0.1); ``ecc_milestones`` — ×γ at epochs 25, 35 and 45 (ECCLR's intended
``get_lr``).

Early stopping (``Patience``): criterion ``early_stopping`` = ``accuracy`` (an epoch improves iff val accuracy ≥
best) or ``loss`` (iff val loss ≤ best), non-strict so a later tie becomes the best; stop after ``patience``
epochs without improvement, at ``epochs``, or when the run's wall-clock time exceeds ``time_limit_hours`` (the
paper's 72-hour cap; the run then reports ``stop_reason: time_limit``). The scores kept are those of the best
(last improving) epoch — train, val and test loss/accuracy as measured at that epoch; weights are not restored
(the test score is read from the history, as the original does). The loop is :func:`gnnbench.training.engine.fit`
(:func:`holdout_fit`: a :class:`HoldoutStep` and the rules ``Diverged``, ``Patience``, ``MaxEpochs``, ``TimeLimit``,
then the learning rate's :class:`Schedule`).

Divergence: an epoch whose training or validation loss is NaN or ±inf ends the run at once with ``stop_reason``
and ``status`` ``"diverged"`` and ``diverged_epoch`` that epoch (0-based; after a non-finite training loss the model
is not evaluated, that epoch's validation and test scores are NaN). A diverged run has no scores (all NaN — not
those of an epoch before the failure), so model selection cannot choose it and tables count it instead of averaging
it. Every other run has ``status: "completed"`` and ``diverged_epoch`` None. The check reads the epoch's losses,
already Python floats (no extra device synchronisation); a resumed run whose history ends with such an epoch stays
diverged.

Observers (``observers``, the fair-comparison protocol's stacks): configurations that differ only in the stopping
settings (:data:`OBSERVER_KEYS`: ``early_stopping``, ``patience``, ``epochs``, ``time_limit_hours``) take the same
training steps, so one trajectory serves them all: each is a member of the fit (:mod:`gnnbench.training.engine`)
with its own ``Diverged``, ``Patience``, ``MaxEpochs`` and ``TimeLimit`` in the order above and its own run state
(epochs, seconds, history, best row); the step trains the trajectory until every member has stopped, and each
member's result is what the run with its settings alone returns (its history ends at its own stop, its scores are
its own last improving epoch's).

Determinism: weights, dropout and shuffling draw from the global torch RNG seeded with the run's seed, so the same
seed, data and thread count give identical results on CPU; a resumed run (``state``) continues the same streams.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

from gnnbench.data.batching import GraphBatch, GraphLoader
from gnnbench.errors import ConfigError
from gnnbench.training.engine import (
    Diverged,
    MaxEpochs,
    Patience,
    PerMember,
    Rule,
    Run,
    RunState,
    Step,
    TimeLimit,
    fit,
    make_optimizer,
)

ECC_MILESTONES = (25, 35, 45)
# the keys only the stopping rules read: configurations differing in these alone take the same training steps
OBSERVER_KEYS = ("early_stopping", "patience", "epochs", "time_limit_hours")


def learning_rate(cfg: dict, epoch: int) -> float:
    """The learning rate of 0-based epoch ``epoch`` under the config's scheduler (module docstring)."""
    lr, scheduler = cfg["learning_rate"], cfg.get("scheduler", "none")
    gamma = cfg.get("scheduler_gamma", 0.1)
    if scheduler == "step":
        return lr * gamma ** (epoch // cfg["scheduler_step_size"])
    if scheduler == "ecc_milestones":
        return lr * gamma ** sum(epoch >= m for m in ECC_MILESTONES)
    if scheduler == "none":
        return lr
    raise ConfigError(f"scheduler: unknown scheduler {scheduler!r}; choose none, step or ecc_milestones")


def _epoch_scores(model, batches, device, optimizer=None, clip: float = 0.0) -> tuple[float, float]:
    """(graph-weighted mean loss, accuracy %) over ``batches``; trains when an optimizer is given."""
    total_loss = torch.zeros((), dtype=torch.float64)
    correct = torch.zeros((), dtype=torch.int64)
    graphs = 0
    for batch in batches:
        batch: GraphBatch = batch.to(device)
        logits = model(batch)
        loss = F.cross_entropy(logits, batch.y)
        aux = model.aux_loss
        full = loss + aux if torch.is_tensor(aux) else loss
        if optimizer is not None:
            optimizer.zero_grad(set_to_none=True)
            full.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
        total_loss += full.detach().double().cpu() * batch.num_graphs
        correct += (logits.detach().argmax(1) == batch.y).sum().cpu()
        graphs += batch.num_graphs
    graphs = max(graphs, 1)
    return float(total_loss / graphs), float(correct) * 100.0 / graphs


def stopping_rules(cfgs: Sequence[dict]) -> PerMember:
    """Each member's stopping rules in the original's order: divergence, its ``Patience``, ``epochs``, its time
    limit (``cfgs[m]``: member m's settings)."""
    return PerMember([[Diverged(), Patience(c["early_stopping"], c["patience"]), MaxEpochs(c["epochs"]),
                       TimeLimit(c.get("time_limit_hours", math.inf) * 3600, "time_limit")] for c in cfgs])


class Schedule(Rule):
    """Before every epoch, the learning rate of each member's trajectory from its configuration's schedule
    (:func:`learning_rate`), handed to ``set_lrs(members, lrs)``; never stops a member."""

    def __init__(self, cfgs: Sequence[dict], set_lrs: Callable[[list[int], list[float]], None]) -> None:
        self.cfgs, self.set_lrs = list(cfgs), set_lrs

    def start(self, run: Run, members: list[int]) -> dict[int, str]:
        """Set the members' learning rates for the coming epoch."""
        self.set_lrs(members, [learning_rate(self.cfgs[m], run.states[m].epoch) for m in members])
        return {}


class HoldoutStep(Step):
    """One training trajectory (module docstring) observed by the fit's members (one member: the run itself): each
    epoch trains ``model`` on the training graphs in a fresh order from the global RNG, then evaluates it on the
    validation (and test) graphs; every member gets a copy of the epoch's row."""

    def __init__(self, model: torch.nn.Module, store, parts: dict[str, torch.Tensor], cfg: dict,
                 device: torch.device) -> None:
        self.model, self.device = model, device
        self.optimizer = make_optimizer(model, cfg["learning_rate"], cfg.get("l2", 0.0), cfg.get("optimizer", "Adam"))
        self.loaders = {part: GraphLoader(store, idx, cfg["batch_size"]) for part, idx in parts.items()}
        # shuffled from the global RNG, whose state the checkpoints carry
        self.loaders["train"] = GraphLoader(store, parts["train"], cfg["batch_size"], shuffle=True,
                                            generator=torch.default_generator)
        self.clip = cfg.get("gradient_clipping", 0.0)

    def set_lrs(self, members: list[int], lrs: list[float]) -> None:
        """The trajectory's learning rate (its members share one)."""
        for group in self.optimizer.param_groups:
            group["lr"] = lrs[0]

    def epoch(self, run: Run, members: list[int]) -> list[dict]:
        """One epoch of the trajectory; a copy of its row for every member."""
        model = self.model
        lr = self.optimizer.param_groups[0]["lr"]
        model.train()
        train_loss, train_acc = _epoch_scores(model, self.loaders["train"], self.device, self.optimizer, self.clip)
        model.eval()
        row = {"epoch": run.states[members[0]].epoch, "lr": lr, "train_loss": train_loss,
               "train_accuracy": train_acc}
        with torch.no_grad():
            for part in ("val", "test"):
                if part in self.loaders:
                    row[f"{part}_loss"], row[f"{part}_accuracy"] = (
                        _epoch_scores(model, self.loaders[part], self.device) if math.isfinite(train_loss)
                        else (math.nan, math.nan))  # diverged: no point in evaluating
        return [dict(row) for _ in members]

    def state_dict(self) -> dict:
        """The model's and the optimiser's states."""
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Restore the model and the optimiser."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])


def holdout_fit(model: torch.nn.Module, store, parts: dict[str, torch.Tensor], cfg: dict, *, device: torch.device,
                observers: list[dict] | None = None) -> tuple[Run, HoldoutStep, list[Rule]]:
    """The fit of one run of ``cfg`` (module docstring), or with ``observers`` (the stopping settings of several
    configurations, :data:`OBSERVER_KEYS`) of one trajectory observed by each: (run, step, rules) for
    :func:`gnnbench.training.engine.fit`; :func:`holdout_results` reads the members' results."""
    cfgs = [cfg] if observers is None else [{**cfg, **o} for o in observers]
    step = HoldoutStep(model, store, parts, cfg, device)
    return Run(len(cfgs)), step, [stopping_rules(cfgs), Schedule(cfgs, step.set_lrs)]


def holdout_results(run: Run) -> list[dict]:
    """Each member's result (module docstring): the best epoch's scores (none when it diverged), the stop reason,
    the status and the history."""
    return [_result(state) for state in run.states]


def _result(state: RunState) -> dict:
    last = state.history[-1] if state.history else {}
    scores = {k: math.nan for k in last if k not in ("epoch", "lr", "seconds")} if state.diverged else state.best
    return {"best_epoch": state.best_epoch, "epochs": state.epoch, "stop_reason": state.stop_reason,
            **state.status(), "seconds": state.elapsed, "scores": scores, "history": state.history}


def train_holdout(model: torch.nn.Module, store, parts: dict[str, torch.Tensor], cfg: dict, *,
                  device: torch.device, observers: list[dict] | None = None) -> dict | list[dict]:
    """Train ``model`` on ``parts['train']``, early-stopping on ``parts['val']`` (and scoring ``parts['test']``
    when present), without a checkpoint; returns the best epoch's scores, the stop reason, the status ("completed"
    or "diverged", module docstring) and the history — with ``observers``, one such result per observer, in
    order (:func:`holdout_fit`)."""
    run, step, rules = holdout_fit(model, store, parts, cfg, device=device, observers=observers)
    fit(run, step, rules)
    results = holdout_results(run)
    return results if observers is not None else results[0]
