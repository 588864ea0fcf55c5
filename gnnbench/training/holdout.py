"""One early-stopped graph-classification training run, the fair-comparison protocol's procedure (spec
p3-fair-comparison.md §2.3, §2.4; diningphil/gnn-comparison ``NetWrapper`` and ``EarlyStopper.Patience``).

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
(the test score is read from the history, as the original does).

Divergence: an epoch whose training or validation loss is NaN or ±inf ends the run at once with ``stop_reason``
and ``status`` ``"diverged"`` and ``diverged_epoch`` that epoch (0-based; after a non-finite training loss the model
is not evaluated, that epoch's validation and test scores are NaN). A diverged run has no scores (all NaN — not
those of an epoch before the failure), so model selection cannot choose it and tables count it instead of averaging
it. Every other run has ``status: "completed"`` and ``diverged_epoch`` None. The check reads the epoch's losses,
already Python floats (no extra device synchronisation); a resumed run whose history ends with such an epoch stays
diverged.

Determinism: weights, dropout and shuffling draw from the global torch RNG seeded with the run's seed, so the same
seed, data and thread count give identical results on CPU; a resumed run (``state``) continues the same streams.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from gnnbench.data.batching import GraphBatch, GraphLoader
from gnnbench.errors import ConfigError

ECC_MILESTONES = (25, 35, 45)


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


def make_optimizer(model: torch.nn.Module, cfg: dict) -> torch.optim.Optimizer:
    """Adam or SGD (no momentum) with coupled L2, as ``torch.optim`` computes them; the fused kernels (the same
    update in one pass over all parameters, equal up to rounding) because small models spend most of a step in the
    per-tensor optimiser loop."""
    name, l2 = cfg.get("optimizer", "Adam"), cfg.get("l2", 0.0)
    if name == "Adam":
        return torch.optim.Adam(model.parameters(), lr=cfg["learning_rate"], weight_decay=l2, fused=True)
    if name == "SGD":
        return torch.optim.SGD(model.parameters(), lr=cfg["learning_rate"], weight_decay=l2, fused=True)
    raise ConfigError(f"optimizer: unknown optimizer {name!r}; choose Adam or SGD")


@dataclass
class Patience:
    """The original's ``Patience`` early stopper on val accuracy (≥) or val loss (≤)."""

    criterion: str
    patience: int
    best: float = math.nan
    best_epoch: int = -1
    counter: int = 0

    def __post_init__(self) -> None:
        if self.criterion not in ("accuracy", "loss"):
            raise ConfigError(f"early_stopping: {self.criterion!r} is not a criterion; choose accuracy or loss")

    def improved(self, epoch: int, val_loss: float, val_accuracy: float) -> bool:
        value = val_accuracy if self.criterion == "accuracy" else val_loss
        better = math.isnan(self.best) or (value >= self.best if self.criterion == "accuracy" else value <= self.best)
        if better:
            self.best, self.best_epoch, self.counter = value, epoch, 0
        else:
            self.counter += 1
        return better

    @property
    def stop(self) -> bool:
        return self.counter >= self.patience


@dataclass
class RunState:
    """Everything a run needs to continue exactly where it stopped (stored in checkpoints)."""

    epoch: int = 0
    elapsed: float = 0.0
    stopper: dict = field(default_factory=dict)
    best: dict = field(default_factory=dict)  # scores of the best epoch so far
    history: list[dict] = field(default_factory=list)
    model: dict | None = None
    optimizer: dict | None = None
    rng: torch.Tensor | None = None


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


def train_holdout(model: torch.nn.Module, store, parts: dict[str, torch.Tensor], cfg: dict, *,
                  device: torch.device, state: RunState | None = None,
                  on_epoch: Callable[[RunState], None] | None = None) -> dict:
    """Train ``model`` on ``parts['train']``, early-stopping on ``parts['val']`` (and scoring ``parts['test']``
    when present); returns the best epoch's scores, the stop reason, the status ("completed" or "diverged",
    module docstring) and the history.

    ``state``: a checkpointed :class:`RunState` to resume from (model and optimizer states included);
    ``on_epoch(state)`` is called after every epoch with the current state (the caller checkpoints).
    """
    optimizer = make_optimizer(model, cfg)
    state = state or RunState()
    stopper = Patience(cfg["early_stopping"], cfg["patience"], **state.stopper)
    if state.model is not None:
        model.load_state_dict(state.model)
        optimizer.load_state_dict(state.optimizer)
        torch.set_rng_state(state.rng)
    loaders = {part: GraphLoader(store, idx, cfg["batch_size"]) for part, idx in parts.items()}
    # shuffled from the global RNG, whose state the checkpoints carry
    loaders["train"] = GraphLoader(store, parts["train"], cfg["batch_size"], shuffle=True,
                                   generator=torch.default_generator)
    limit_s = cfg.get("time_limit_hours", math.inf) * 3600
    stop_reason = None
    while stop_reason is None:
        if state.history and diverged_row(state.history[-1]):
            stop_reason = "diverged"
            break
        if state.epoch >= cfg["epochs"]:
            stop_reason = "max_epochs"
            break
        if state.elapsed > limit_s:
            stop_reason = "time_limit"
            break
        start = time.perf_counter()
        lr = learning_rate(cfg, state.epoch)
        for group in optimizer.param_groups:
            group["lr"] = lr
        model.train()
        train_loss, train_acc = _epoch_scores(model, loaders["train"], device, optimizer,
                                              cfg.get("gradient_clipping", 0.0))
        model.eval()
        row = {"epoch": state.epoch, "lr": lr, "train_loss": train_loss, "train_accuracy": train_acc}
        with torch.no_grad():
            for part in ("val", "test"):
                if part in loaders:
                    row[f"{part}_loss"], row[f"{part}_accuracy"] = (
                        _epoch_scores(model, loaders[part], device) if math.isfinite(train_loss)
                        else (math.nan, math.nan))  # diverged: no point in evaluating
        row["seconds"] = time.perf_counter() - start
        state.elapsed += row["seconds"]
        state.history.append(row)
        if diverged_row(row):
            stop_reason = "diverged"
        elif stopper.improved(state.epoch, row["val_loss"], row["val_accuracy"]):
            state.best = dict(row)
        state.epoch += 1
        if stopper.stop and stop_reason is None:
            stop_reason = "patience"
        state.stopper = {"best": stopper.best, "best_epoch": stopper.best_epoch, "counter": stopper.counter}
        if on_epoch is not None:
            state.model, state.optimizer, state.rng = model.state_dict(), optimizer.state_dict(), torch.get_rng_state()
            on_epoch(state)
    diverged = stop_reason == "diverged"
    scores = {k: math.nan for k in state.history[-1] if k not in ("epoch", "lr", "seconds")} if diverged else state.best
    return {"best_epoch": stopper.best_epoch, "epochs": state.epoch, "stop_reason": stop_reason,
            "status": "diverged" if diverged else "completed", "diverged_epoch": state.epoch - 1 if diverged else None,
            "seconds": state.elapsed, "scores": scores, "history": state.history}


def diverged_row(row: dict) -> bool:
    """Whether an epoch's history row shows divergence: a NaN or infinite training or validation loss."""
    return not (math.isfinite(row["train_loss"]) and math.isfinite(row["val_loss"]))

