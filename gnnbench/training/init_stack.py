"""R initialisations of one model on one node split of one graph, full batch, each with its own early stopping: the
task of the "Pitfalls of GNN evaluation" protocol (Shchur et al.; the released code's ``gnnbench/train.py``;
docs/protocols/pitfalls.md), trained by :func:`gnnbench.training.engine.fit`: the initialisations are the fit's
members, the strategies below are its steps, and :class:`InitialisationRule` (the protocol's early stopping, vectorised
over the members) its rule.

For one split (train / val / test node sets) a :class:`StackedStep` trains R initialisations of a
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
serves the whole stack, seeded per split). Label propagation has no weights: :class:`PropagationStep` runs its
propagation steps under the same rules (one "run", the state Y saved and restored like weights).

A model without a hand-written stacked form (any contract model: ``forward(batch)`` → (N, C) logits of the one graph)
is stacked by torch.func (:mod:`gnnbench.training.functional_stack`, the procedure below member by member); where it
cannot be, it trains its initialisations one after another under the same rules (:class:`SequentialStep`): the
same TF1 Adam, the same loss (mean CE over the training nodes + the model's ``l2_penalty()``, or for a model without
one the coupled L2 ``weight_decay``/2·Σ‖w‖² over all its parameters, whose gradient is torch's ``weight_decay``), the
same stopping rule on the total validation loss, the best weights restored and scored, the same records and
history. Each initialisation draws its weights from its own seed and its dropout masks from the split's seed, as it
would alone in a stack of one: ``init_ids=[i]`` of a stacked model and initialisation i here run the same procedure.

Tuning trials (:mod:`gnnbench.protocols.pitfalls.tune`) stack differently: :class:`MemberStack` holds trials ×
splits as members, each with its own nodes, learning rate, weight decay and dropout rates.

The steps' state (weights, optimiser, best weights, history) with the rule's (bests, counters) and the engine's (run
states, RNG) is one checkpoint, so a job can checkpoint between epochs and resume to the same results.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from gnnbench.training.engine import Rule, Run, Step, fit, make_optimizer
from gnnbench.training.stacked_adam import StackedAdam
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
    """Per-run mean cross-entropy (R,) and accuracy in percent (R,) of logits (R, M, C) for targets (M,), or each
    run's own targets (R, M).

    Both read one contiguous (R·M, C) view (a copy where the logits are strided, e.g. a stacked model's transposed
    last product): an argmax over the last dimension of strided logits is much slower than over their copy
    (docs/performance.md)."""
    runs, nodes, classes = logits.shape
    flat = logits.reshape(runs * nodes, classes).contiguous()
    ce = F.cross_entropy(flat, targets.repeat(runs) if targets.dim() == 1 else targets.reshape(-1), reduction="none")
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


class EpochLosses(Sequence):
    """One epoch's losses of the members a step trained, as CPU float64 tensors aligned with them (no per-member
    rows: :class:`InitialisationRule` reads the tensors; the steps keep the history)."""

    def __init__(self, train_loss: torch.Tensor, val_loss: torch.Tensor, val_accuracy: torch.Tensor) -> None:
        self.train_loss, self.val_loss, self.val_accuracy = train_loss, val_loss, val_accuracy

    def __len__(self) -> int:
        return self.train_loss.numel()

    def __getitem__(self, i):
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        return None


class InitialisationRule(Rule):
    """The pitfalls protocol's stopping of every initialisation (module docstring) over the fit's R members at once:
    ``criterion`` and ``patience`` (:class:`~gnnbench.training.stopping.EarlyStopping`, one state per member), a
    member whose training or validation loss is not finite stops as ``"diverged"``, one whose patience ran out as
    ``"early_stopping"``, every member at ``max_epochs`` as ``"max_epochs"``; a member's best epoch is set where the
    rule keeps its weights."""

    def __init__(self, members: int, *, criterion: str, patience: int, max_epochs: int, tolerance: float = 0.0,
                 device=None) -> None:
        self.members, self.max_epochs = members, max_epochs
        self.stopping = EarlyStopping(criterion, patience, members, tolerance, device or "cpu")
        self.device = self.stopping.best_loss.device

    def start(self, run: Run, members: list[int]) -> dict[int, str]:
        """A member resumed at the epoch cap stops there."""
        return {m: "max_epochs" for m in members if run.states[m].epoch >= self.max_epochs}

    def end(self, run: Run, members: list[int], rows: EpochLosses) -> dict[int, str]:
        """The rule on the epoch's validation losses and accuracies: best epochs, divergence, patience, epoch cap."""
        all_members = len(members) == self.members
        epochs = [run.states[m].epoch - 1 for m in members]
        epoch = epochs[0] if all_members or len(members) == 1 else torch.tensor(epochs, device=self.device)
        rows_index = None if all_members else torch.tensor(members, dtype=torch.int64, device=self.device)
        save, stop = self.stopping.update_rows(rows_index, epoch, rows.val_loss.to(self.device),
                                               rows.val_accuracy.to(self.device))
        for i in save.nonzero().flatten().tolist():
            run.states[members[i]].best_epoch = epochs[i]
        diverged = ~(torch.isfinite(rows.train_loss) & torch.isfinite(rows.val_loss))  # on the CPU: no device sync
        done = (stop.cpu() | diverged).nonzero().flatten().tolist()
        reasons = {members[i]: "diverged" if diverged[i] else "early_stopping" for i in done}
        for i, m in enumerate(members):
            if m not in reasons and epochs[i] + 1 >= self.max_epochs:
                reasons[m] = "max_epochs"
        return reasons

    def state_dict(self) -> dict:
        """The early-stopping state of every member."""
        return self.stopping.state_dict()

    def load_state_dict(self, state: dict) -> None:
        """Restore the early-stopping state."""
        self.stopping.load_state_dict(state)


class InitialisationStep(Step):
    """What every strategy of the pitfalls task shares: its rule's settings (``fit_parts``), its history, and the
    records of its members (:meth:`records`)."""

    timed = False  # the task's history has no seconds per epoch
    records_history = False  # its history is kept as tensors (stacked_history)

    def _init_rule(self, init_ids: list[int], *, criterion: str, patience: int, max_epochs: int, tolerance: float,
                   device) -> None:
        self.init_ids = list(init_ids)
        self.rule = {"criterion": criterion, "patience": patience, "max_epochs": max_epochs, "tolerance": tolerance,
                     "device": device}
        self._history: list[tuple[torch.Tensor, ...]] = []

    def fit_parts(self) -> tuple[Run, list[Rule]]:
        """The fit's run (one member per initialisation) and its rule."""
        return Run(len(self.init_ids)), [InitialisationRule(len(self.init_ids), **self.rule)]

    def _record(self, members: list[int], epochs: list[int] | int, train_loss: torch.Tensor, val_loss: torch.Tensor,
                val_acc: torch.Tensor) -> EpochLosses:
        """Append the epoch to the history; the losses for the rule (CPU, float64)."""
        train, val, acc = train_loss.detach().double().cpu(), val_loss.double().cpu(), val_acc.cpu()
        epoch_col = torch.tensor(epochs) if isinstance(epochs, list) else torch.full((len(members),), epochs)
        self._history.append((torch.tensor(members), epoch_col, train, val, acc))
        return EpochLosses(train, val, acc)

    def history(self) -> dict[str, np.ndarray]:
        """The per-epoch history of every member so far (columns of :func:`stacked_history`)."""
        return stacked_history(self.init_ids, self._history)

    def records(self, run: Run, scores: dict[str, tuple[torch.Tensor, torch.Tensor]]) -> SplitResult:
        """One record per member from its restored best weights' ``scores`` (part → (losses, accuracies), member
        order)."""
        records = []
        for r, init in enumerate(self.init_ids):
            state = run.states[r]
            diverged = state.stop_reason == "diverged"
            records.append({
                "init": init, "epochs": state.epoch, "best_epoch": state.best_epoch, "stop_reason": state.stop_reason,
                **run_status(diverged, state.epoch - 1),
                **{f"{part}_{name}": math.nan if diverged else float(scores[part][k][r]) for part in PARTS
                   for k, name in ((1, "accuracy"), (0, "loss"))}})
        return SplitResult(records, self.history())


class StackMembers(InitialisationStep):
    """A stack of R members (the hand-stacked and the vmapped strategies): best weights kept per member, members
    leaving the stack when they stop. A subclass holds the stacked tensors (:meth:`_tensors`: name → (R', ...)
    tensor of the members still training), drops rows of them in :meth:`_drop`, and calls :meth:`_start_members`
    once its tensors exist."""

    optimizer: object

    def _start_members(self, init_ids: list[int], *, criterion: str, patience: int, max_epochs: int,
                       tolerance: float, device) -> None:
        self._init_rule(init_ids, criterion=criterion, patience=patience, max_epochs=max_epochs, tolerance=tolerance,
                        device=device)
        with torch.no_grad():  # the best state starts as the initial weights (as the original's reset())
            self.best = {name: t.detach().clone() for name, t in self._tensors().items()}
            self.final = {name: t.clone() for name, t in self.best.items()}  # every member's best, finished or not
        self.active = torch.arange(len(self.init_ids), device=device)  # the member in each stack row
        self.epochs = 0  # epochs trained by the stack (its members started together)

    def _tensors(self) -> dict[str, torch.Tensor]:
        """Every stacked tensor whose best value is kept per member (weights, and batch-norm statistics)."""
        raise NotImplementedError

    def _drop(self, keep: torch.Tensor) -> None:
        """Keep only the stack rows ``keep`` of the subclass's own stacked tensors."""
        raise NotImplementedError

    def _losses(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One epoch of every member in the stack: (training loss, validation loss, validation accuracy) (R',)."""
        raise NotImplementedError

    def epoch(self, run: Run, members: list[int]) -> EpochLosses:
        """One epoch of the stack (its members are the fit's active ones, in stack order)."""
        losses = self._losses()
        rows = self._record(members, self.epochs, *losses)
        self.epochs += 1
        return rows

    @torch.no_grad()
    def improved(self, members: list[int]) -> None:
        """Keep the improving members' current weights as their best."""
        rows = torch.tensor([self._row(m) for m in members], dtype=torch.int64)
        tensors = self._tensors()
        spans = row_spans(rows)
        for name, best in self.best.items():
            copy_rows(best, tensors[name], spans)

    def _row(self, member: int) -> int:
        return self._rows[member] if hasattr(self, "_rows") else int(member)

    @torch.no_grad()
    def leave(self, members: list[int]) -> None:
        """Members that stopped leave the stack with their best weights."""
        active = self.active.tolist()
        rows = torch.tensor([active.index(m) for m in members], dtype=torch.int64, device=self.active.device)
        ids = self.active.index_select(0, rows)
        for name, best in self.best.items():
            self.final[name].index_copy_(0, ids, best.index_select(0, rows))  # once per leaving member
        keep = torch.ones(self.active.numel(), dtype=torch.bool, device=self.active.device)
        keep[rows] = False
        keep = keep.nonzero().flatten()
        self.active = self.active.index_select(0, keep)
        self.best = {name: b.index_select(0, keep) for name, b in self.best.items()}
        self._drop(keep)
        self.optimizer.select(keep)
        self._rows = {m: i for i, m in enumerate(self.active.tolist())}

    def _members_state(self) -> dict:
        return {"best": self.best, "final": self.final, "optimizer": self.optimizer.state_dict(),
                "active": self.active, "epochs": self.epochs, "history": list(self._history)}

    def _load_members_state(self, state: dict) -> None:
        self.best, self.final = dict(state["best"]), dict(state["final"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.active, self.epochs = state["active"], state["epochs"]
        self._history = list(state["history"])
        self._rows = {m: i for i, m in enumerate(self.active.tolist())}


class StackedStep(StackMembers):
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

    def _losses(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A training step (dropout on), then the validation loss and accuracy (dropout off)."""
        model, opt = self.model, self.optimizer
        opt.zero_grad()
        train_ce, _ = masked_scores(model(self.parts["train"], training=True), self.targets["train"])
        penalty = model.l2_penalty()
        (train_ce + penalty).sum().backward()
        opt.step()
        with torch.no_grad():
            val_ce, val_acc = masked_scores(model(self.parts["val"], training=False), self.targets["val"])
            val_loss = val_ce + model.l2_penalty()
        return train_ce + penalty, val_loss, val_acc

    @torch.no_grad()
    def results(self, run: Run) -> SplitResult:
        """Restore every run's best weights, evaluate on train / val / test and collect the records."""
        for i, p in enumerate(self.params):
            p.data = self.final[str(i)].clone()
        scores = {}
        for part in PARTS:
            ce, acc = masked_scores(self.model(self.parts[part], training=False), self.targets[part])
            scores[part] = ((ce + self.model.l2_penalty()).double().cpu(), acc.cpu())
        return self.records(run, scores)

    def state_dict(self) -> dict:
        """Weights, optimiser, best weights and history, for a checkpoint."""
        return {"params": [p.detach() for p in self.params], **self._members_state()}

    def load_state_dict(self, state: dict) -> None:
        """Resume from a :meth:`state_dict`."""
        for p, value in zip(self.params, state["params"], strict=True):
            p.data = value.clone()
        self._load_members_state(state)


class MemberStack(StackedStep):
    """Members with their own node sets and training values in one stacked model (tuning trials × their splits:
    :mod:`gnnbench.protocols.pitfalls.tune`): the procedure of :class:`StackedStep` for every member, where
    ``parts`` holds each member's nodes per part as an (R, M) tensor (every member has M nodes of a part; row r in
    member r's order), ``learning_rates`` one learning rate per member and ``values`` the model's
    :attr:`~gnnbench.models.stacked.StackedModel.member_keys` per member (weight decay, dropout rates).

    An epoch computes the logits at the union of the active members' nodes of a part and each member's scores at its
    own nodes (in its order, so its mean cross-entropy adds the same terms as it would alone): a member's logits,
    losses and weights are those of the member trained alone with the same seeds, up to the rounding of products
    over another number of rows, except for dropout. Dropout is one draw of the global RNG for the whole stack, as
    for the initialisations of a split, so a member with dropout meets other masks than alone; a member with
    dropout 0 is unaffected by its neighbours' rates. ``last`` holds the latest epoch's members and losses (what a
    rule reading them after other rules stopped some members uses: :class:`~gnnbench.protocols.pitfalls.tune`)."""

    def __init__(self, model: torch.nn.Module, labels: torch.Tensor, parts: dict[str, torch.Tensor], *,
                 learning_rates: list[float], values: dict[str, list[float]], criterion: str, patience: int,
                 max_epochs: int, tolerance: float = 0.0) -> None:
        self.model, self.labels = model, labels
        self.all_parts = {part: nodes for part, nodes in parts.items()}
        self.values = dict(values)
        self.params = list(model.parameters())
        self.optimizer = StackedAdam(self.params, [float(lr) for lr in learning_rates])
        self._start_members(list(range(model.inits)), criterion=criterion, patience=patience, max_epochs=max_epochs,
                            tolerance=tolerance, device=labels.device)
        self.last: tuple[list[int], EpochLosses] | None = None
        self._sync()

    def _sync(self) -> None:
        """The parts, targets and per-member values of the active members (rows of the stack)."""
        rows = self.active
        self.parts = {part: nodes.index_select(0, rows) for part, nodes in self.all_parts.items()}
        self.targets = {part: self.labels[nodes] for part, nodes in self.parts.items()}
        self.union = {part: torch.unique(nodes, return_inverse=True) for part, nodes in self.parts.items()}
        for key, values in self.values.items() if rows.numel() else ():
            self.model.vary(key, [values[i] for i in rows.tolist()])

    def _drop(self, keep: torch.Tensor) -> None:
        super()._drop(keep)
        self._sync()  # self.active already holds the members that stay

    def _scores(self, part: str, training: bool) -> tuple[torch.Tensor, torch.Tensor]:
        nodes, inverse = self.union[part]
        logits = self.model(nodes, training=training)  # (R', |union|, C)
        picked = logits.gather(1, inverse.unsqueeze(-1).expand(-1, -1, logits.shape[-1]))
        return masked_scores(picked, self.targets[part])

    def _losses(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A training step (dropout on), then the validation loss and accuracy (dropout off), every member on its
        own nodes."""
        model, opt = self.model, self.optimizer
        opt.zero_grad()
        train_ce, _ = self._scores("train", True)
        penalty = model.l2_penalty()
        (train_ce + penalty).sum().backward()
        opt.step()
        with torch.no_grad():
            val_ce, val_acc = self._scores("val", False)
            val_loss = val_ce + model.l2_penalty()
        return train_ce + penalty, val_loss, val_acc

    def epoch(self, run: Run, members: list[int]) -> EpochLosses:
        """One epoch of the stack; its members and losses are kept in ``last``."""
        rows = super().epoch(run, members)
        self.last = (list(members), rows)
        return rows

    @torch.no_grad()
    def results(self, run: Run) -> SplitResult:
        """Restore every member's best weights, evaluate each on its own train / val / test nodes and collect the
        records."""
        self.active = torch.arange(len(self.init_ids), device=self.labels.device)
        for i, p in enumerate(self.params):
            p.data = self.final[str(i)].clone()
        self._sync()
        scores = {}
        for part in PARTS:
            ce, acc = self._scores(part, False)
            scores[part] = ((ce + self.model.l2_penalty()).double().cpu(), acc.cpu())
        return self.records(run, scores)

    def load_state_dict(self, state: dict) -> None:
        """Resume from a :meth:`state_dict`."""
        super().load_state_dict(state)
        self._sync()


class PropagationStep(InitialisationStep):
    """Label propagation (no weights): one propagation step per epoch under the rule, the best state Y kept and
    restored like weights; its loss is the cross-entropy of softmax(Y), without an L2 term."""

    def __init__(self, propagation, labels: torch.Tensor, parts: dict[str, torch.Tensor], *, criterion: str,
                 patience: int, max_epochs: int, tolerance: float = 0.0) -> None:
        self.propagation, self.labels, self.parts = propagation, labels, parts
        self.targets = {part: labels.index_select(0, nodes) for part, nodes in parts.items()}
        self._init_rule([0], criterion=criterion, patience=patience, max_epochs=max_epochs, tolerance=tolerance,
                        device=labels.device)
        self.best = propagation.state.clone()

    def epoch(self, run: Run, members: list[int]) -> EpochLosses:
        """One propagation step, its training and validation loss and accuracy."""
        prop = self.propagation
        prop.step()
        train_ce, _ = masked_scores(prop.logits(self.parts["train"]), self.targets["train"])
        val_ce, val_acc = masked_scores(prop.logits(self.parts["val"]), self.targets["val"])
        return self._record(members, run.states[0].epoch, train_ce, val_ce, val_acc)

    def improved(self, members: list[int]) -> None:
        """Keep the current state Y as the best."""
        self.best = self.propagation.state.clone()

    def results(self, run: Run) -> SplitResult:
        """Restore the best state Y, score it on train / val / test and return the one record and the history."""
        self.propagation.state = self.best.clone()
        scores = {}
        for part in PARTS:
            ce, acc = masked_scores(self.propagation.logits(self.parts[part]), self.targets[part])
            scores[part] = (ce.double().cpu(), acc.cpu())
        return self.records(run, scores)

    def state_dict(self) -> dict:
        """State Y, best state and history, for a checkpoint."""
        return {"state": self.propagation.state, "best": self.best, "history": list(self._history)}

    def load_state_dict(self, state: dict) -> None:
        """Resume from a :meth:`state_dict`."""
        self.propagation.state = state["state"].clone()
        self.best = state["best"].clone()
        self._history = list(state["history"])


class SequentialStep(InitialisationStep):
    """R initialisations of a model without a stacked form, one after another (module docstring; "best weights"
    are the model's whole state, batch-norm statistics included): the fit's members train one at a time.
    ``build()`` returns a new model, its weights drawn from torch's global generator (seeded here with ``seeds[i]``
    first); ``batch`` is the whole graph (``forward(batch)`` → (N, C) logits)."""

    def __init__(self, build: Callable[[], torch.nn.Module], batch, labels: torch.Tensor,
                 parts: dict[str, torch.Tensor], *, learning_rate: float, weight_decay: float, criterion: str,
                 patience: int, max_epochs: int, init_ids: list[int], seeds: list[int], dropout_seed: int,
                 tolerance: float = 0.0) -> None:
        self.build, self.batch, self.labels, self.parts = build, batch, labels, parts
        self.targets = {part: labels.index_select(0, nodes) for part, nodes in parts.items()}
        self.learning_rate, self.weight_decay = learning_rate, weight_decay
        self.seeds, self.dropout_seed = seeds, dropout_seed
        self._init_rule(init_ids, criterion=criterion, patience=patience, max_epochs=max_epochs, tolerance=tolerance,
                        device=labels.device)
        self.scores: dict[int, dict[str, tuple[float, float]]] = {}  # finished member -> part -> (loss, accuracy)
        self.model = None
        self.current: int | None = None

    def members(self, active: list[int]) -> list[int]:
        """The member in training: the first active one."""
        return active[:1]

    def _start(self, member: int) -> None:
        torch.manual_seed(self.seeds[member])
        self.model = self.build()
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        # the state restored with the best weights: parameters and buffers (batch-norm statistics), shared storage
        self.tensors = list(self.model.state_dict().values())
        torch.manual_seed(self.dropout_seed)
        self.optimizer = make_optimizer(self.params, self.learning_rate, name="TF1Adam")
        with torch.no_grad():
            self.best = [t.clone() for t in self.tensors]
        self.current = member

    def _penalty(self) -> torch.Tensor:
        own = getattr(self.model, "l2_penalty", None)
        if own is not None:
            return own().reshape(1)
        return (self.weight_decay / 2 * sum(p.pow(2).sum() for p in self.params)).reshape(1)

    def _scores(self, part: str) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.model(self.batch).index_select(0, self.parts[part])
        return masked_scores(logits.unsqueeze(0), self.targets[part])

    def epoch(self, run: Run, members: list[int]) -> EpochLosses:
        """One epoch of the member in training (built first if it has not started)."""
        member = members[0]
        if self.current != member:
            self._start(member)
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
        return self._record(members, run.states[member].epoch, train_ce + penalty, val_loss, val_acc)

    @torch.no_grad()
    def improved(self, members: list[int]) -> None:
        """Keep the member's current state as its best."""
        for best, t in zip(self.best, self.tensors, strict=True):
            best.copy_(t)

    @torch.no_grad()
    def leave(self, members: list[int]) -> None:
        """Restore the member's best weights and score it on train / val / test; the next one starts next epoch."""
        for t, best in zip(self.tensors, self.best, strict=True):
            t.copy_(best)
        self.model.eval()
        scores = {}
        for part in PARTS:
            ce, acc = self._scores(part)
            scores[part] = (float((ce + self._penalty()).double()[0]), float(acc[0]))
        self.scores[self.current] = scores
        self.model, self.current = None, None

    def results(self, run: Run) -> SplitResult:
        """The records of the initialisations and their history."""
        scores = {part: (torch.tensor([self.scores[m][part][0] for m in range(len(self.init_ids))],
                                      dtype=torch.float64),
                         torch.tensor([self.scores[m][part][1] for m in range(len(self.init_ids))],
                                      dtype=torch.float64))
                  for part in PARTS}
        return self.records(run, scores)

    def state_dict(self) -> dict:
        """The finished members' scores, the history, and the current member's model, optimiser and best state."""
        state = {"scores": {str(m): s for m, s in self.scores.items()}, "history": list(self._history),
                 "current": None}
        if self.model is not None:
            state["current"] = {"member": self.current, "model": self.model.state_dict(),
                                "optimizer": self.optimizer.state_dict(), "best": self.best}
        return state

    def load_state_dict(self, state: dict) -> None:
        """Resume from a :meth:`state_dict`."""
        self.scores = {int(m): s for m, s in state["scores"].items()}
        self._history = list(state["history"])
        self.model, self.current = None, None
        if state["current"] is not None:
            current = state["current"]
            self._start(current["member"])
            self.model.load_state_dict(current["model"])
            self.optimizer.load_state_dict(current["optimizer"])
            self.best = [b.clone() for b in current["best"]]


def train_split(step: InitialisationStep) -> SplitResult:
    """Train ``step``'s initialisations until every one has stopped (no checkpoint) and return its results."""
    run, rules = step.fit_parts()
    fit(run, step, rules)
    return step.results(run)
