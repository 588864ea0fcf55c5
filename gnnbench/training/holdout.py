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
with the callbacks ``Diverged``, ``Patience``, ``MaxEpochs``, ``TimeLimit`` and ``StepSchedule``.

Divergence: an epoch whose training or validation loss is NaN or ±inf ends the run at once with ``stop_reason``
and ``status`` ``"diverged"`` and ``diverged_epoch`` that epoch (0-based; after a non-finite training loss the model
is not evaluated, that epoch's validation and test scores are NaN). A diverged run has no scores (all NaN — not
those of an epoch before the failure), so model selection cannot choose it and tables count it instead of averaging
it. Every other run has ``status: "completed"`` and ``diverged_epoch`` None. The check reads the epoch's losses,
already Python floats (no extra device synchronisation); a resumed run whose history ends with such an epoch stays
diverged.

Observers (``observers``, the fair-comparison protocol's stacks): configurations that differ only in the stopping
settings (:data:`OBSERVER_KEYS`: ``early_stopping``, ``patience``, ``epochs``, ``time_limit_hours``) take the same
training steps, so one trajectory serves them all: each observer has its own ``Diverged``, ``Patience``,
``MaxEpochs`` and ``TimeLimit`` in the order above, on its own copy of the run's state (epochs, seconds, history,
best row); the trajectory trains until every observer has stopped, and each observer's result is what the run with
its settings alone returns (its history ends at its own stop, its scores are its own last improving epoch's).

Determinism: weights, dropout and shuffling draw from the global torch RNG seeded with the run's seed, so the same
seed, data and thread count give identical results on CPU; a resumed run (``state``) continues the same streams.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from gnnbench.data.batching import GraphBatch, GraphLoader
from gnnbench.errors import ConfigError
from gnnbench.training.engine import (
    Callback,
    Checkpoint,
    Diverged,
    MaxEpochs,
    Patience,
    RunState,
    StepSchedule,
    TimeLimit,
    Trainable,
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


class Observers(Callback):
    """The stopping rules of several configurations (``cfgs``: each with its :data:`OBSERVER_KEYS`) observing one
    trajectory (module docstring, "Observers"): a callback that stops the trajectory as ``"finished"`` once every
    observer has stopped; :meth:`results` gives each observer's result as :func:`train_holdout` returns it."""

    def __init__(self, cfgs: list[dict]) -> None:
        self.states = [RunState() for _ in cfgs]
        self.patience = [Patience(c["early_stopping"], c["patience"]) for c in cfgs]
        self.rules = [[Diverged(), patience, MaxEpochs(c["epochs"]),
                       TimeLimit(c.get("time_limit_hours", math.inf) * 3600, "time_limit")]
                      for c, patience in zip(cfgs, self.patience, strict=True)]
        self.active = list(range(len(cfgs)))

    def on_epoch_start(self, state: RunState) -> str | None:
        """Apply every active observer's start-of-epoch rules (epoch cap, time limit); ``"finished"`` once none is
        left."""
        for m in list(self.active):
            for rule in self.rules[m]:
                if (reason := rule.on_epoch_start(self.states[m])) is not None:
                    self.states[m].stop_reason = reason
                    self.active.remove(m)
                    break
        return None if self.active else "finished"

    def on_epoch_end(self, state: RunState, row: dict | None) -> str | None:
        """Record the epoch's row in every active observer's own state and apply its rules; ``"finished"`` once
        none is left."""
        for m in list(self.active):
            own = self.states[m]
            own.elapsed += row["seconds"]
            own.epoch += 1
            own.history.append(row)
            for rule in self.rules[m]:
                if (reason := rule.on_epoch_end(own, row)) is not None:
                    own.stop_reason = reason
                    self.active.remove(m)
                    break
        return None if self.active else "finished"

    def results(self) -> list[dict]:
        """Each observer's result, in order, as :func:`train_holdout` returns a run's."""
        return [_result(state, patience) for state, patience in zip(self.states, self.patience, strict=True)]

    def state_dict(self) -> dict:
        """The observers' states, patience counters and which are still active (for checkpoints)."""
        return {"active": list(self.active), "states": [s.state_dict() for s in self.states],
                "patience": [p.state_dict() for p in self.patience]}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s output; ValueError for a checkpoint of other observers."""
        if len(state["states"]) != len(self.states):
            raise ValueError("this checkpoint has other observers")
        self.active = list(state["active"])
        for s, saved in zip(self.states, state["states"], strict=True):
            s.load_state_dict(saved)
        for p, saved in zip(self.patience, state["patience"], strict=True):
            p.load_state_dict(saved)


def _result(state: RunState, patience: Patience) -> dict:
    last = state.history[-1] if state.history else {}
    scores = {k: math.nan for k in last if k not in ("epoch", "lr", "seconds")} if state.diverged else state.best
    return {"best_epoch": patience.best_epoch, "epochs": state.epoch, "stop_reason": state.stop_reason,
            **state.status(), "seconds": state.elapsed, "scores": scores, "history": state.history}


def train_holdout(model: torch.nn.Module, store, parts: dict[str, torch.Tensor], cfg: dict, *,
                  device: torch.device, state: dict | None = None, checkpoint: Checkpoint | None = None,
                  on_epoch: Callable[[Trainable], None] | None = None,
                  observers: list[dict] | None = None) -> dict | list[dict]:
    """Train ``model`` on ``parts['train']``, early-stopping on ``parts['val']`` (and scoring ``parts['test']``
    when present); returns the best epoch's scores, the stop reason, the status ("completed" or "diverged",
    module docstring) and the history.

    ``checkpoint``: where the run is saved (after an epoch, at most every ``checkpoint.every_s`` seconds) and resumed
    from; ``state``: a saved state (:meth:`~gnnbench.training.engine.Trainable.payload`) to resume from instead;
    ``on_epoch(run)`` is called after every epoch.

    ``observers``: the stopping settings of several configurations (dicts with :data:`OBSERVER_KEYS`; ``cfg``'s
    own are then not read) observing this one trajectory (module docstring, "Observers"); returns one result per
    observer, in order, each what the run with its settings alone returns.
    """
    optimizer = make_optimizer(model, cfg["learning_rate"], cfg.get("l2", 0.0), cfg.get("optimizer", "Adam"))
    if observers is not None:
        observed = Observers([{**cfg, **o} for o in observers])
        parts_ = {"model": model, "optimizer": optimizer, "observers": observed}
    else:
        patience = Patience(cfg["early_stopping"], cfg["patience"])
        parts_ = {"model": model, "optimizer": optimizer, "patience": patience}
    run = Trainable(RunState(), parts_, checkpoint=checkpoint)
    if state is not None:
        run.restore(state)
    else:
        run.resume(save_initial=False)
    loaders = {part: GraphLoader(store, idx, cfg["batch_size"]) for part, idx in parts.items()}
    # shuffled from the global RNG, whose state the checkpoints carry
    loaders["train"] = GraphLoader(store, parts["train"], cfg["batch_size"], shuffle=True,
                                   generator=torch.default_generator)
    clip = cfg.get("gradient_clipping", 0.0)

    def step() -> dict:
        lr = optimizer.param_groups[0]["lr"]
        model.train()
        train_loss, train_acc = _epoch_scores(model, loaders["train"], device, optimizer, clip)
        model.eval()
        row = {"epoch": run.state.epoch, "lr": lr, "train_loss": train_loss, "train_accuracy": train_acc}
        with torch.no_grad():
            for part in ("val", "test"):
                if part in loaders:
                    row[f"{part}_loss"], row[f"{part}_accuracy"] = (
                        _epoch_scores(model, loaders[part], device) if math.isfinite(train_loss)
                        else (math.nan, math.nan))  # diverged: no point in evaluating
        return row

    def after_epoch(state: RunState) -> None:
        run.after_epoch(state)
        if on_epoch is not None:
            on_epoch(run)

    schedule = StepSchedule(optimizer, lambda epoch: learning_rate(cfg, epoch))
    if observers is not None:  # each observer's rules in the original's order, then the learning rate
        fit(run.state, step, [observed, schedule], after_epoch)
        return observed.results()
    # stop rules in the original's order; the step schedule sets each epoch's learning rate before it trains
    rules = [Diverged(), patience, MaxEpochs(cfg["epochs"]),
             TimeLimit(cfg.get("time_limit_hours", math.inf) * 3600, "time_limit"),
             schedule]
    return _result(fit(run.state, step, rules, after_epoch), patience)


def diverged_row(row: dict) -> bool:
    """Whether an epoch's history row shows divergence: a NaN or infinite training or validation loss."""
    return not (math.isfinite(row["train_loss"]) and math.isfinite(row["val_loss"]))

