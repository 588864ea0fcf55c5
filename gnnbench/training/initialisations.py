"""R initialisations of one model on one node split of one graph, full batch, each with its own early stopping: the
task of the "Pitfalls of GNN evaluation" protocol (Shchur et al.; the released code's ``gnnbench/train.py``;
docs/protocols/pitfalls.md), trained by :mod:`gnnbench.training.engine` (:func:`train_split`).

For one split (train / val / test node sets) a :class:`StackedTrainer` trains R initialisations of a
:class:`~gnnbench.models.stacked.StackedModel` (every parameter stacked along dim 0) as one model:

    every epoch, for every active run r:
        loss_r      = mean CE over the training nodes (dropout on) + L2_r          one backward for all runs
        θ_r         ← Adam step (TF1's update, :mod:`gnnbench.training.stacked_adam`)
        val_loss_r  = mean CE over the validation nodes (dropout off) + L2_r    ("total validation loss")
        rule(val_loss_r, val_acc_r) → save θ_r as best / stop run r         (:mod:`gnnbench.training.stopping`)
    finished runs leave the stack (their rows are dropped from every parameter and optimiser state), so the cost
    of an epoch follows the runs still training; at the end every run's best weights are restored and it is
    evaluated on train, val and test (losses include the L2 term, as the original's ``model.loss``).

Divergence: a run whose training loss (data + L2) or validation loss of an epoch is NaN or ±inf has diverged. It
leaves the stack at the end of that epoch with ``stop_reason`` and ``status`` ``"diverged"`` and ``diverged_epoch``
that epoch (0-based, the row of its last history entry); its record holds no scores (accuracies and losses NaN):
the weights restored for it would be those of an epoch before the failure, not a result of the procedure. Every
other record has ``status: "completed"`` and ``diverged_epoch`` None. A diverged run cannot spoil the others: the
runs share no arithmetic (the check is made from the per-run losses the history already copies to the CPU, so it
costs no extra device synchronisation).

Runs are independent: their weights come from their own seeds, their gradients never mix (not even with a NaN
in another run's loss), and dropping a run changes nothing for the others except the dropout draws (one global RNG
serves the whole stack, seeded per split). Label propagation has no weights: :class:`PropagationTrainer` runs its
propagation steps under the same rules (one "run", the state Y saved and restored like weights).

A model without a hand-written stacked form (any contract model: ``forward(batch)`` → (N, C) logits of the one graph)
is stacked by torch.func (:mod:`gnnbench.training.functional_stack`, the procedure below member by member); where it
cannot be, it trains its initialisations one after another under the same rules (:class:`SequentialTrainer`): the
same TF1 Adam, the same loss (mean CE over the training nodes + the model's ``l2_penalty()``, or for a model without
one the coupled L2 ``weight_decay``/2·Σ‖w‖² over all its parameters, whose gradient is torch's ``weight_decay``), the
same stopping rule on the total validation loss, the best weights restored and scored, the same records and
history. Each initialisation draws its weights from its own seed and its dropout masks from the split's seed, as it
would alone in a stack of one: ``init_ids=[i]`` of a stacked model and initialisation i here run the same procedure.

The trainers' whole state (weights, optimiser, bests, counters, history, RNG) is a ``state_dict``, so a job can
checkpoint between epochs and resume to the same results.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from gnnbench.training.engine import RunState, UntilDone, fit, make_optimizer
from gnnbench.training.stopping import EarlyStopping

PARTS = ("train", "val", "test")


@dataclass
class SplitResult:
    """What the runs of one split produce: one record per run and the per-epoch history of all of them."""

    records: list[dict]
    history: dict[str, np.ndarray] = field(default_factory=dict)  # init, epoch, train_loss, val_loss, val_accuracy


def run_status(diverged: bool, epoch: int) -> dict:
    """The status fields of a run's record: ``status`` ("completed" or "diverged") and ``diverged_epoch`` (the
    0-based epoch whose loss was not finite; None for a completed run)."""
    return {"status": "diverged" if diverged else "completed", "diverged_epoch": epoch if diverged else None}


def masked_scores(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-run mean cross-entropy (R,) and accuracy in percent (R,) of logits (R, M, C) for targets (M,).

    Both read one contiguous (R·M, C) view (a copy where the logits are strided, e.g. a stacked model's transposed
    last product): an argmax over the last dimension of strided logits is much slower than over their copy
    (docs/performance.md)."""
    runs, nodes, classes = logits.shape
    flat = logits.reshape(runs * nodes, classes).contiguous()
    ce = F.cross_entropy(flat, targets.repeat(runs), reduction="none")
    accuracy = (flat.detach().argmax(dim=1).view(runs, nodes) == targets).double().mean(dim=1) * 100.0
    return ce.view(runs, nodes).mean(dim=1), accuracy


def stacked_history(init_ids: list[int], entries: list[tuple[torch.Tensor, ...]]) -> dict[str, np.ndarray]:
    """The history columns of per-epoch entries (positions in ``init_ids``, epoch, train loss, val loss, val
    accuracy), one row per initialisation and epoch."""
    if not entries:
        return {name: np.zeros(0) for name in ("init", "epoch", "train_loss", "val_loss", "val_accuracy")}
    rows, epoch, train_loss, val_loss, val_acc = (torch.cat(c).numpy() for c in zip(*entries, strict=True))
    return {"init": np.asarray(init_ids, dtype=np.int64)[rows], "epoch": epoch.astype(np.int64),
            "train_loss": train_loss, "val_loss": val_loss, "val_accuracy": val_acc}


def row_spans(rows: torch.Tensor) -> list[tuple[int, int]]:
    """The sorted row ids ``rows`` as runs of consecutive ids: [(first, length), ...]."""
    ids = rows.tolist()
    spans: list[tuple[int, int]] = []
    for row in ids:
        if spans and spans[-1][0] + spans[-1][1] == row:
            spans[-1] = (spans[-1][0], spans[-1][1] + 1)
        else:
            spans.append((row, 1))
    return spans


def copy_rows(dst: torch.Tensor, src: torch.Tensor, spans: list[tuple[int, int]]) -> None:
    """dst[r] = src[r] for the rows of ``spans`` (:func:`row_spans`), one slice copy per run of consecutive rows:
    the same values as ``index_copy_`` of those rows, which copies element by element and is much slower on a CPU
    (docs/performance.md)."""
    if len(spans) == 1 and spans[0] == (0, dst.shape[0]):
        dst.copy_(src)
        return
    for first, length in spans:
        dst.narrow(0, first, length).copy_(src.narrow(0, first, length))


class MemberStack(ABC):
    """What every trainer of R members in one stack shares (the procedure of the module docstring): per-member early
    stopping on the total validation loss with the best weights kept per member, members leaving the stack when they
    stop, diverge or reach ``max_epochs``, and one record per member. A subclass holds the stacked tensors
    (:meth:`_tensors`: name → (R', ...) tensor of the members still training), drops rows of them in :meth:`_drop`,
    and calls :meth:`_start_members` once its tensors exist and :meth:`_end_epoch` after each optimiser step."""

    optimizer: object

    def _start_members(self, init_ids: list[int], *, criterion: str, patience: int, max_epochs: int,
                       tolerance: float, device) -> None:
        self.init_ids, self.max_epochs = list(init_ids), max_epochs
        runs = len(self.init_ids)
        self.stopping = EarlyStopping(criterion, patience, runs, tolerance, device)
        with torch.no_grad():  # the best state starts as the initial weights (as the original's reset())
            self.best = {name: t.detach().clone() for name, t in self._tensors().items()}
            self.final = {name: t.clone() for name, t in self.best.items()}  # every member's best, finished or not
        self.active = torch.arange(runs, device=device)  # position of each stack row among all members
        self.epoch = 0
        self.epochs = torch.zeros(runs, dtype=torch.int64)
        self.best_epoch = torch.full((runs,), -1, dtype=torch.int64)
        self.stop_reason = ["max_epochs"] * runs
        self._history: list[tuple[torch.Tensor, ...]] = []

    @abstractmethod
    def _tensors(self) -> dict[str, torch.Tensor]:
        """Every stacked tensor whose best value is kept per member (weights, and batch-norm statistics)."""

    @abstractmethod
    def _drop(self, keep: torch.Tensor) -> None:
        """Keep only the stack rows ``keep`` of the subclass's own stacked tensors."""

    @property
    def finished(self) -> bool:
        """Whether every member has left the stack (or the epoch cap is reached)."""
        return self.active.numel() == 0 or self.epoch >= self.max_epochs

    @torch.no_grad()
    def _end_epoch(self, train_loss: torch.Tensor, val_loss: torch.Tensor, val_acc: torch.Tensor) -> None:
        """The stopping rule on this epoch's per-member losses: save the improving members' weights, log the epoch,
        let stopped, diverged and (at ``max_epochs``) all members leave the stack."""
        save, stop = self.stopping.update(self.epoch, val_loss, val_acc)
        rows = save.nonzero().flatten()
        if rows.numel():
            tensors = self._tensors()
            spans = row_spans(rows)
            for name, best in self.best.items():
                copy_rows(best, tensors[name], spans)
        self._history.append((self.active.cpu(), torch.full((self.active.numel(),), self.epoch),
                              train_loss.detach().double().cpu(), val_loss.double().cpu(), val_acc.cpu()))
        self.epoch += 1
        _, _, train_loss_cpu, val_loss_cpu, _ = self._history[-1]
        diverged = ~(torch.isfinite(train_loss_cpu) & torch.isfinite(val_loss_cpu))  # on the CPU: no device sync
        done = (stop.cpu() | diverged).nonzero().flatten()
        if done.numel():
            self._finish(done.to(self.active.device),
                         ["diverged" if diverged[i] else "early_stopping" for i in done.tolist()])
        if self.epoch >= self.max_epochs and self.active.numel():
            self._finish(torch.arange(self.active.numel(), device=self.active.device), "max_epochs")

    @torch.no_grad()
    def _finish(self, rows: torch.Tensor, reason: str | list[str]) -> None:
        """Members at stack positions ``rows`` leave the stack with their best weights; ``reason``: the stop reason
        of all of them, or one per row."""
        members = self.active.index_select(0, rows)
        for name, best in self.best.items():
            self.final[name].index_copy_(0, members, best.index_select(0, rows))  # once per leaving member
        cpu_members, cpu_rows = members.cpu(), rows.cpu()
        self.epochs[cpu_members] = self.epoch
        self.best_epoch[cpu_members] = self.stopping.best_epoch.cpu()[cpu_rows]
        reasons = [reason] * len(cpu_members) if isinstance(reason, str) else reason
        for r, why in zip(cpu_members.tolist(), reasons, strict=True):
            self.stop_reason[r] = why
        keep = torch.ones(self.active.numel(), dtype=torch.bool, device=self.active.device)
        keep[rows] = False
        keep = keep.nonzero().flatten()
        self.active = self.active.index_select(0, keep)
        self.best = {name: b.index_select(0, keep) for name, b in self.best.items()}
        self._drop(keep)
        self.optimizer.select(keep)
        self.stopping.select(keep)

    def _records(self, scores: dict[str, tuple[torch.Tensor, torch.Tensor]]) -> SplitResult:
        """One record per member from its restored best weights' ``scores`` (part → (losses, accuracies))."""
        records = []
        for r, init in enumerate(self.init_ids):
            diverged = self.stop_reason[r] == "diverged"
            records.append({
                "init": init, "epochs": int(self.epochs[r]), "best_epoch": int(self.best_epoch[r]),
                "stop_reason": self.stop_reason[r], **run_status(diverged, int(self.epochs[r]) - 1),
                **{f"{part}_{name}": math.nan if diverged else float(scores[part][k][r]) for part in PARTS
                   for k, name in ((1, "accuracy"), (0, "loss"))}})
        return SplitResult(records, self.history())

    def history(self) -> dict[str, np.ndarray]:
        """The per-epoch history of every member so far (columns of :func:`stacked_history`)."""
        return stacked_history(self.init_ids, self._history)

    def _members_state(self) -> dict:
        return {"best": self.best, "final": self.final, "optimizer": self.optimizer.state_dict(),
                "stopping": self.stopping.state_dict(), "active": self.active, "epoch": self.epoch,
                "epochs": self.epochs, "best_epoch": self.best_epoch, "stop_reason": list(self.stop_reason),
                "history": list(self._history), "rng": torch.get_rng_state()}

    def _load_members_state(self, state: dict) -> None:
        self.best, self.final = dict(state["best"]), dict(state["final"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.stopping.load_state_dict(state["stopping"])
        self.active, self.epoch = state["active"], state["epoch"]
        self.epochs, self.best_epoch = state["epochs"], state["best_epoch"]
        self.stop_reason, self._history = list(state["stop_reason"]), list(state["history"])
        torch.set_rng_state(state["rng"])


class StackedTrainer(MemberStack):
    """R initialisations of one stacked model on one split (see module docstring)."""

    def __init__(self, model: torch.nn.Module, labels: torch.Tensor, parts: dict[str, torch.Tensor], *,
                 learning_rate: float, criterion: str, patience: int, max_epochs: int, init_ids: list[int],
                 tolerance: float = 0.0) -> None:
        self.model, self.labels, self.parts = model, labels, parts
        self.targets = {part: labels.index_select(0, nodes) for part, nodes in parts.items()}
        self.params = list(model.parameters())
        self.optimizer = make_optimizer(self.params, learning_rate, name="TF1Adam")
        self._start_members(init_ids, criterion=criterion, patience=patience, max_epochs=max_epochs,
                            tolerance=tolerance, device=labels.device)

    def _tensors(self) -> dict[str, torch.Tensor]:
        return {str(i): p for i, p in enumerate(self.params)}

    def _drop(self, keep: torch.Tensor) -> None:
        for p in self.params:  # the same leaf tensors: the optimiser keeps its references
            p.grad = None
            p.data = p.data.index_select(0, keep)

    def train_epoch(self) -> None:
        """One epoch of every member still training: a training step (dropout on), the validation loss and accuracy
        (dropout off), then the stopping rule."""
        model, opt = self.model, self.optimizer
        opt.zero_grad()
        train_ce, _ = masked_scores(model(self.parts["train"], training=True), self.targets["train"])
        penalty = model.l2_penalty()
        (train_ce + penalty).sum().backward()
        opt.step()
        with torch.no_grad():
            val_ce, val_acc = masked_scores(model(self.parts["val"], training=False), self.targets["val"])
            val_loss = val_ce + model.l2_penalty()
        self._end_epoch(train_ce + penalty, val_loss, val_acc)

    @torch.no_grad()
    def results(self) -> SplitResult:
        """Restore every run's best weights, evaluate on train / val / test and collect the records."""
        for i, p in enumerate(self.params):
            p.data = self.final[str(i)].clone()
        scores = {}
        for part in PARTS:
            ce, acc = masked_scores(self.model(self.parts[part], training=False), self.targets[part])
            scores[part] = ((ce + self.model.l2_penalty()).double().cpu(), acc.cpu())
        return self._records(scores)

    def state_dict(self) -> dict:
        """Weights, optimiser, stopping state, history and RNG state, for a checkpoint."""
        return {"params": [p.detach() for p in self.params], **self._members_state()}

    def load_state_dict(self, state: dict) -> None:
        """Resume from a :meth:`state_dict`."""
        for p, value in zip(self.params, state["params"], strict=True):
            p.data = value.clone()
        self._load_members_state(state)


class PropagationTrainer:
    """Label propagation (no weights): one propagation step per epoch under an early-stopping rule, the best state
    Y kept and restored like weights; its loss is the cross-entropy of softmax(Y), without an L2 term."""

    def __init__(self, propagation, labels: torch.Tensor, parts: dict[str, torch.Tensor], *, criterion: str,
                 patience: int, max_epochs: int, tolerance: float = 0.0) -> None:
        self.propagation, self.labels, self.parts = propagation, labels, parts
        self.targets = {part: labels.index_select(0, nodes) for part, nodes in parts.items()}
        self.max_epochs = max_epochs
        self.stopping = EarlyStopping(criterion, patience, 1, tolerance, labels.device)
        self.best = propagation.state.clone()
        self.epoch, self.stopped, self.diverged = 0, False, False
        self._history: list[tuple[float, ...]] = []

    @property
    def finished(self) -> bool:
        """Whether the rule stopped the propagation (or the epoch cap is reached)."""
        return self.stopped or self.epoch >= self.max_epochs

    def train_epoch(self) -> None:
        """One propagation step, its training and validation loss and accuracy, then the stopping rule."""
        prop = self.propagation
        prop.step()
        train_ce, _ = masked_scores(prop.logits(self.parts["train"]), self.targets["train"])
        val_ce, val_acc = masked_scores(prop.logits(self.parts["val"]), self.targets["val"])
        save, stop = self.stopping.update(self.epoch, val_ce, val_acc)
        if bool(save[0]):
            self.best = prop.state.clone()
        self._history.append((self.epoch, float(train_ce[0]), float(val_ce[0]), float(val_acc[0])))
        self.epoch += 1
        self.diverged = not (math.isfinite(self._history[-1][1]) and math.isfinite(self._history[-1][2]))
        self.stopped = bool(stop[0]) or self.diverged

    def results(self) -> SplitResult:
        """Restore the best state Y, score it on train / val / test and return the one record and the history."""
        self.propagation.state = self.best.clone()
        reason = "diverged" if self.diverged else "early_stopping" if self.stopped else "max_epochs"
        record = {"init": 0, "epochs": self.epoch, "best_epoch": int(self.stopping.best_epoch[0]),
                  "stop_reason": reason, **run_status(self.diverged, self.epoch - 1)}
        for part in PARTS:
            ce, acc = masked_scores(self.propagation.logits(self.parts[part]), self.targets[part])
            record[f"{part}_accuracy"], record[f"{part}_loss"] = (math.nan, math.nan) if self.diverged else (
                float(acc[0]), float(ce[0]))
        epochs = np.asarray([h[0] for h in self._history], dtype=np.int64)
        history = {"init": np.zeros(epochs.size, dtype=np.int64), "epoch": epochs,
                   **{name: np.asarray([h[i] for h in self._history], dtype=np.float64)
                      for i, name in enumerate(("train_loss", "val_loss", "val_accuracy"), start=1)}}
        return SplitResult([record], history)

    def state_dict(self) -> dict:
        """State Y, best state, stopping state and history, for a checkpoint."""
        return {"state": self.propagation.state, "best": self.best, "stopping": self.stopping.state_dict(),
                "epoch": self.epoch, "stopped": self.stopped, "diverged": self.diverged,
                "history": list(self._history)}

    def load_state_dict(self, state: dict) -> None:
        """Resume from a :meth:`state_dict`."""
        self.propagation.state = state["state"].clone()
        self.best = state["best"].clone()
        self.stopping.load_state_dict(state["stopping"])
        self.epoch, self.stopped, self._history = state["epoch"], state["stopped"], list(state["history"])
        self.diverged = state.get("diverged", False)


class SequentialTrainer:
    """R initialisations of a model without a stacked form, one after another (module docstring; "best weights"
    are the model's whole state, batch-norm statistics included); the interface of :class:`StackedTrainer`.
    ``build()`` returns a new model, its weights drawn from torch's global generator (seeded here with ``seeds[i]``
    first); ``batch`` is the whole graph (``forward(batch)`` → (N, C) logits)."""

    def __init__(self, build: Callable[[], torch.nn.Module], batch, labels: torch.Tensor,
                 parts: dict[str, torch.Tensor], *, learning_rate: float, weight_decay: float, criterion: str,
                 patience: int, max_epochs: int, init_ids: list[int], seeds: list[int], dropout_seed: int,
                 tolerance: float = 0.0) -> None:
        self.build, self.batch, self.labels, self.parts = build, batch, labels, parts
        self.targets = {part: labels.index_select(0, nodes) for part, nodes in parts.items()}
        self.learning_rate, self.weight_decay = learning_rate, weight_decay
        self.rule = {"criterion": criterion, "patience": patience, "tolerance": tolerance}
        self.max_epochs, self.init_ids, self.seeds, self.dropout_seed = max_epochs, list(init_ids), seeds, dropout_seed
        self.member = 0  # the initialisation in training (position in init_ids)
        self.records: list[dict] = []
        self._history: list[tuple[torch.Tensor, ...]] = []
        self.model = None

    @property
    def finished(self) -> bool:
        """Whether every initialisation has been trained."""
        return self.member >= len(self.init_ids)

    @property
    def epoch(self) -> int:
        """The epoch of the initialisation in training (0 before it starts)."""
        return 0 if self.model is None else self.member_epoch

    def _start(self) -> None:
        torch.manual_seed(self.seeds[self.member])
        self.model = self.build()
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        # the state restored with the best weights: parameters and buffers (batch-norm statistics), shared storage
        self.tensors = list(self.model.state_dict().values())
        torch.manual_seed(self.dropout_seed)
        self.optimizer = make_optimizer(self.params, self.learning_rate, name="TF1Adam")
        self.stopping = EarlyStopping(runs=1, device=self.labels.device, **self.rule)
        with torch.no_grad():
            self.best = [t.clone() for t in self.tensors]
        self.member_epoch = 0

    def _penalty(self) -> torch.Tensor:
        own = getattr(self.model, "l2_penalty", None)
        if own is not None:
            return own().reshape(1)
        return (self.weight_decay / 2 * sum(p.pow(2).sum() for p in self.params)).reshape(1)

    def _scores(self, part: str) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.model(self.batch).index_select(0, self.parts[part])
        return masked_scores(logits.unsqueeze(0), self.targets[part])

    def train_epoch(self) -> None:
        """One epoch of the initialisation in training (built first if it has not started); it is scored and the
        next one starts when the rule stops it, it diverges or it reaches ``max_epochs``."""
        if self.model is None:
            self._start()
        model, opt = self.model, self.optimizer
        model.train()
        opt.zero_grad()
        train_ce, _ = self._scores("train")
        penalty = self._penalty()
        (train_ce + penalty).sum().backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            val_ce, val_acc = self._scores("val")
            val_loss = val_ce + self._penalty()
            save, stop = self.stopping.update(self.member_epoch, val_loss, val_acc)
            if bool(save[0]):
                for best, t in zip(self.best, self.tensors, strict=True):
                    best.copy_(t)
        train_loss, val_loss_cpu = (train_ce + penalty).detach().double().cpu(), val_loss.double().cpu()
        self._history.append((torch.tensor([self.member]), torch.full((1,), self.member_epoch), train_loss,
                              val_loss_cpu, val_acc.cpu()))
        self.member_epoch += 1
        diverged = not bool(torch.isfinite(train_loss).all() and torch.isfinite(val_loss_cpu).all())
        if diverged or bool(stop[0]) or self.member_epoch >= self.max_epochs:
            self._finish("diverged" if diverged else "early_stopping" if bool(stop[0]) else "max_epochs")

    @torch.no_grad()
    def _finish(self, reason: str) -> None:
        """Restore the member's best weights, score it on train / val / test and go to the next one."""
        for t, best in zip(self.tensors, self.best, strict=True):
            t.copy_(best)
        self.model.eval()
        diverged = reason == "diverged"
        record = {"init": self.init_ids[self.member], "epochs": self.member_epoch,
                  "best_epoch": int(self.stopping.best_epoch[0]), "stop_reason": reason,
                  **run_status(diverged, self.member_epoch - 1)}
        for part in PARTS:
            ce, acc = self._scores(part)
            loss = (ce + self._penalty()).double()
            record[f"{part}_accuracy"] = math.nan if diverged else float(acc[0])
            record[f"{part}_loss"] = math.nan if diverged else float(loss[0])
        self.records.append(record)
        self.member += 1
        self.model = None

    def results(self) -> SplitResult:
        """The records of the initialisations trained so far and their history."""
        return SplitResult(list(self.records), stacked_history(self.init_ids, self._history))

    def state_dict(self) -> dict:
        """Finished records, history, RNG state and the current initialisation's model, optimiser and stopping
        state, for a checkpoint."""
        state = {"member": self.member, "records": list(self.records), "history": list(self._history),
                 "rng": torch.get_rng_state(), "current": None}
        if self.model is not None:
            state["current"] = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                                "stopping": self.stopping.state_dict(), "best": self.best,
                                "epoch": self.member_epoch}
        return state

    def load_state_dict(self, state: dict) -> None:
        """Resume from a :meth:`state_dict`."""
        self.member, self.records, self._history = state["member"], list(state["records"]), list(state["history"])
        self.model = None
        if state["current"] is not None:
            self._start()
            current = state["current"]
            self.model.load_state_dict(current["model"])
            self.optimizer.load_state_dict(current["optimizer"])
            self.stopping.load_state_dict(current["stopping"])
            self.best, self.member_epoch = [b.clone() for b in current["best"]], current["epoch"]
        torch.set_rng_state(state["rng"])


def train_split(trainer, after_epoch: Callable[[RunState], None] | None = None) -> SplitResult:
    """Train ``trainer``'s epochs on the engine until every initialisation has stopped (``after_epoch``: e.g. a
    checkpoint) and return its results."""
    # the trainers keep their own per-initialisation history: an epoch gives the engine no row
    fit(RunState(), trainer.train_epoch, [UntilDone(lambda: trainer.finished)], after_epoch)
    return trainer.results()
