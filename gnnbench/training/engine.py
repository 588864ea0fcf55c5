"""The training engine of every protocol: one :func:`fit` for one run or many, one checkpoint format, one resume path.

A fit trains a :class:`Run` of R ≥ 1 *members* (a run: one seed of a config, a grid point, an initialisation) with
a :class:`Step` — the strategy that trains one epoch of the members it is given — under *rules* (callbacks) that
decide, member by member, when a member stops:

    while members are active:
        members = step.members(active)                 -> every active member (a stack), or one (one after another)
        rules' start(run, members)                     -> may stop members before the epoch (epoch cap, time limit)
                                                          or set their learning rates (a step schedule)
        rows = step.epoch(run, members)                -> one epoch of those members: one history row each
        each member: epoch += 1, elapsed += seconds, its row joins its history
        rules' end(run, members, rows)                 -> in order; a member's first stop reason stops it and the
                                                          rules after it do not see it this epoch
        step.improved(members whose best epoch is this one)   -> e.g. keep their weights (best-weights restore)
        after_epoch(run, members, rows)                -> e.g. log the epoch
        step.leave(stopped members)                    -> they leave the stack: rows dropped, results written
        checkpoint (when due)

The strategies (the step) are what differs between a single run (:class:`SingleStep`), a wide stack of members side
by side in the feature dimension (:mod:`gnnbench.training.wide`), a vmapped stack (:mod:`gnnbench.training.
functional_stack`), a hand-stacked model of initialisations (:mod:`gnnbench.training.init_stack`) and members
trained one after another in one fit (``members`` returning the current one). Members that stop leave through one
hook, :meth:`Step.leave`: early-stopped initialisations, finished seeds, pruned tuning trials alike.

Rules (:class:`Rule`, the protocols' stopping and schedule rules) see the members as a set, so that a rule of many
members can be vectorised (the pitfalls protocol's early stopping over 20 initialisations is one tensor update);
:class:`PerMember` applies single-run :class:`Callback` objects — each member its own instances, in its own order —
:class:`Diverged`, :class:`PlateauSchedule` (P1), :class:`StepSchedule` and :class:`Patience` (P3), :class:`TimeLimit`,
:class:`MaxEpochs`.

One checkpoint format (:func:`payload`, :func:`restore`): the run state of every member, every rule's state, the
step's state (weights, optimiser) and the random generators, in one file written atomically by :class:`Checkpoint`;
a stop signal waits until the file is in place. One resume path: :func:`resume`. A job of several fits — the splits
of a pitfalls chunk, the grid points of a model-selection part — is a :class:`Job`: its one checkpoint holds the
results of the finished fits (by key, reused when a job stopped before its end runs again) and the state of the one in
training.
"""

from __future__ import annotations

import logging
import math
import signal
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import torch

from gnnbench.errors import ConfigError
from gnnbench.training import checkpoint as _checkpoint
from gnnbench.training import eager_optim, wide
from gnnbench.training.checkpoint import load_resumable, restore_rng, rng_state
from gnnbench.training.preemption import Preempted, StopOnSignal
from gnnbench.training.stacked_adam import StackedAdam
from gnnbench.training.stopping import EarlyStopping

log = logging.getLogger(__name__)
OPTIMIZERS = ("Adam", "SGD", "TF1Adam")


def make_optimizer(params: torch.nn.Module | Iterable[torch.Tensor], lr: float | torch.Tensor,
                   weight_decay: float | torch.Tensor = 0.0, name: str = "Adam"):
    """The optimiser of a run. ``Adam`` and ``SGD`` (no momentum): ``torch.optim`` with classic (coupled) L2 weight
    decay, fused kernels (one pass over all parameters, the same update up to rounding: small models spend most of a
    step in the per-tensor loop otherwise), as :mod:`~gnnbench.training.eager_optim` runs them (without importing
    torch's compiler in a process that compiles nothing). ``TF1Adam``: TensorFlow 1's Adam
    (:mod:`~gnnbench.training.stacked_adam`, the pitfalls protocol; L2 is a loss term there, so ``weight_decay`` must
    be 0). No parameters at all is a ConfigError (suites and ``gnnbench train`` refuse such a model before any job
    runs: :func:`gnnbench.models.build.check_buildable`).

    For a wide stack (:class:`~gnnbench.training.wide.WideStack`), ``lr`` and ``weight_decay`` may be per-member
    (R,) tensors: its one optimiser, :class:`~gnnbench.training.wide.WideOptimizer` (``Adam`` or ``SGD`` as above,
    each member with its own values)."""
    if isinstance(params, wide.WideStack):
        if name not in ("Adam", "SGD"):
            raise ValueError(f"a wide stack trains with Adam or SGD, not {name}")
        return wide.WideOptimizer(params, name.lower(), lr=lr, weight_decay=weight_decay)
    params = list(params.parameters() if isinstance(params, torch.nn.Module) else params)
    if not any(p.requires_grad for p in params):
        raise ConfigError("the model has no trainable parameters, so training would change nothing and report its "
                          "initial scores; give it weights (e.g. an nn.Linear)")
    if name == "Adam":
        return eager_optim.Adam(params, lr=lr, weight_decay=weight_decay, fused=True)
    if name == "SGD":
        return eager_optim.SGD(params, lr=lr, weight_decay=weight_decay, fused=True)
    if name == "TF1Adam":
        if weight_decay:
            raise ConfigError("optimizer TF1Adam takes its L2 term in the loss; weight_decay must be 0")
        return StackedAdam(params, lr)
    raise ConfigError(f"optimizer: unknown optimizer {name!r}; choose Adam or SGD")


# ---------------------------------------------------------------------------------------------- run state


class RunState:
    """What one member carries from epoch to epoch: epochs done, history rows, training seconds, stop reason, and the
    row and 0-based epoch of its best epoch where a rule keeps one (-1: none yet)."""

    def __init__(self) -> None:
        self.epoch = 0
        self.history: list[dict] = []
        self.elapsed = 0.0
        self.stop_reason: str | None = None
        self.best: dict = {}
        self.best_epoch = -1

    @property
    def diverged(self) -> bool:
        """Whether the run stopped because a loss became NaN or infinite (stop reason ``"diverged"``)."""
        return self.stop_reason == "diverged"

    def status(self) -> dict:
        """``status`` ("completed" or "diverged") and ``diverged_epoch`` (0-based epoch whose loss was not finite;
        None when completed) of the run's record."""
        return {"status": "diverged" if self.diverged else "completed",
                "diverged_epoch": self.epoch - 1 if self.diverged else None}

    def state_dict(self) -> dict:
        """Epochs done, history, elapsed seconds, stop reason and best row and epoch, for a checkpoint."""
        return {"epoch": self.epoch, "history": self.history, "elapsed": self.elapsed,
                "stop_reason": self.stop_reason, "best": self.best, "best_epoch": self.best_epoch}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` saved (a resumed run continues from that epoch)."""
        (self.epoch, self.history, self.elapsed, self.stop_reason, self.best, self.best_epoch) = (
            state["epoch"], list(state["history"]), state["elapsed"], state["stop_reason"], dict(state["best"]),
            state["best_epoch"])


class Run:
    """The run state of R ≥ 1 members trained by one :func:`fit`: one :class:`RunState` each, and the members still
    training (``active``, in the order the step holds them)."""

    def __init__(self, members: int) -> None:
        if members < 1:
            raise ValueError("a fit trains at least one member")
        self.states = [RunState() for _ in range(members)]
        self.active = list(range(members))

    def __len__(self) -> int:
        return len(self.states)

    @property
    def finished(self) -> bool:
        """Whether every member has stopped."""
        return not self.active

    def state_dict(self) -> dict:
        """Every member's state and the active members."""
        return {"states": [s.state_dict() for s in self.states], "active": list(self.active)}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s output; ValueError for a run of another number of members."""
        if len(state["states"]) != len(self.states):
            raise ValueError(f"the checkpoint holds {len(state['states'])} members, this run {len(self.states)}")
        for s, saved in zip(self.states, state["states"], strict=True):
            s.load_state_dict(saved)
        self.active = list(state["active"])


class Step:
    """The training strategy of a fit: one epoch of the members it is given, their rows, and what happens when members
    improve or stop. ``timed``: rows get the epoch's ``seconds``; ``records_history``: rows join the members'
    histories (a step keeping a history of its own returns rows for the rules only)."""

    timed = True
    records_history = True

    def members(self, active: list[int]) -> list[int]:
        """The members that train this epoch: all active ones (default), or one of them (one after another)."""
        return active

    def time_share(self, members: list[int]) -> int:
        """A member's seconds are the epoch's wall time divided by this (1, default: the whole epoch; a stack whose
        members' time limits count their share: the number of runs trained together)."""
        return 1

    def epoch(self, run: Run, members: list[int]) -> Sequence[dict]:
        """Train one epoch of ``members`` (of ``run``, whose states say the epoch each is at); their history rows
        (``rows[i]`` is member ``members[i]``'s)."""
        raise NotImplementedError

    def improved(self, members: list[int]) -> None:
        """``members``' rules kept this epoch as their best (their weights may be kept); nothing by default."""

    def leave(self, members: list[int]) -> None:
        """``members`` stopped: they leave the stack (their rows dropped; their results written); nothing by
        default."""

    def state_dict(self) -> dict:
        """What a resumed fit needs of the step (weights, optimiser state); default: nothing."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s output."""


class Rule:
    """A stopping or schedule rule over the members of a fit; both hooks return {member: stop reason} of the members
    that stop (members not named go on)."""

    def start(self, run: Run, members: list[int]) -> dict[int, str]:
        """Before an epoch of ``members``; default: nobody stops."""
        return {}

    def end(self, run: Run, members: list[int], rows: Sequence[dict]) -> dict[int, str]:
        """After an epoch of ``members`` with their rows (``rows[i]`` is ``members[i]``'s); default: nobody stops."""
        return {}

    def state_dict(self) -> dict:
        """What a resumed fit needs of this rule; default: nothing."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s output; default: nothing to restore."""


def fit(run: Run, step: Step, rules: Sequence[Rule], *, checkpoint: Checkpoint | None = None,
        generator: torch.Generator | None = None,
        after_epoch: Callable[[Run, list[int], Sequence[dict]], None] | None = None) -> Run:
    """Train ``run``'s members with ``step`` until ``rules`` have stopped every one (module docstring); with a
    ``checkpoint``, the fit's :func:`payload` (``generator``: the step's shuffling generator, saved with the global
    RNG) is saved after every epoch it is due. Returns ``run``."""
    while run.active:
        members = step.members(run.active)
        stopped = _apply(rules, run, members, None)
        if stopped:
            _leave(run, step, stopped)
            continue
        start = time.perf_counter()
        rows = step.epoch(run, members)
        seconds = (time.perf_counter() - start) / step.time_share(members)
        for m, row in zip(members, rows, strict=True):
            state = run.states[m]
            state.elapsed += seconds
            state.epoch += 1
            if step.timed:
                row["seconds"] = seconds
            if step.records_history:
                state.history.append(row)
        stopped = _apply(rules, run, members, rows)
        improved = [m for m in members if run.states[m].best_epoch == run.states[m].epoch - 1]
        if improved:
            step.improved(improved)
        if after_epoch is not None:
            after_epoch(run, members, rows)
        if stopped:
            _leave(run, step, stopped)
        if checkpoint is not None and checkpoint.due():  # also after the last epoch: the outputs may be cut short
            checkpoint.save(payload(run, step, rules, generator))
    return run


def _apply(rules: Sequence[Rule], run: Run, members: list[int], rows: Sequence[dict] | None) -> dict[int, str]:
    """Every rule's hook in order (``rows`` None: before the epoch); a member's first stop reason stops it and the
    later rules do not see it."""
    stopped: dict[int, str] = {}
    going, going_rows = list(members), rows
    for rule in rules:
        if not going:
            break
        reasons = rule.start(run, going) if rows is None else rule.end(run, going, going_rows)
        if reasons:
            stopped.update(reasons)
            if rows is not None:
                going_rows = [r for m, r in zip(going, going_rows, strict=True) if m not in reasons]
            going = [m for m in going if m not in reasons]
    for m, reason in stopped.items():
        run.states[m].stop_reason = reason
    return stopped


def _leave(run: Run, step: Step, stopped: dict[int, str]) -> None:
    leaving = [m for m in run.active if m in stopped]
    step.leave(leaving)
    run.active = [m for m in run.active if m not in stopped]


# ---------------------------------------------------------------------------------------------- single-run rules


class Callback:
    """A protocol's rule for one member (applied by :class:`PerMember`); both hooks may return a stop reason (None:
    go on)."""

    def on_epoch_start(self, state: RunState) -> str | None:
        """Before every epoch of its member; a stop reason ends the member before the epoch trains."""
        return None

    def on_epoch_end(self, state: RunState, row: dict) -> str | None:
        """After every epoch of its member, with its row; a stop reason ends the member and the later callbacks
        are not called for this epoch."""
        return None

    def state_dict(self) -> dict:
        """What a resumed run needs of this callback (saved in the checkpoint); default: nothing."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` saved; default: nothing to restore."""


class PerMember(Rule):
    """Each member's own :class:`Callback` objects, in its own order (``callbacks[m]``: member m's list)."""

    def __init__(self, callbacks: Sequence[Sequence[Callback]]) -> None:
        self.callbacks = [list(c) for c in callbacks]

    def start(self, run: Run, members: list[int]) -> dict[int, str]:
        """Each member's callbacks' :meth:`Callback.on_epoch_start`; its first stop reason stops it."""
        reasons = {}
        for m in members:
            for callback in self.callbacks[m]:
                if (reason := callback.on_epoch_start(run.states[m])) is not None:
                    reasons[m] = reason
                    break
        return reasons

    def end(self, run: Run, members: list[int], rows: Sequence[dict]) -> dict[int, str]:
        """Each member's callbacks' :meth:`Callback.on_epoch_end` with its row; its first stop reason stops it."""
        reasons = {}
        for m, row in zip(members, rows, strict=True):
            for callback in self.callbacks[m]:
                if (reason := callback.on_epoch_end(run.states[m], row)) is not None:
                    reasons[m] = reason
                    break
        return reasons

    def state_dict(self) -> dict:
        """Every member's callbacks' states."""
        return {"callbacks": [[c.state_dict() for c in member] for member in self.callbacks]}

    def load_state_dict(self, state: dict) -> None:
        """Restore every member's callbacks' states."""
        for member, saved in zip(self.callbacks, state["callbacks"], strict=True):
            for callback, s in zip(member, saved, strict=True):
                callback.load_state_dict(s)


def finite_losses(row: dict) -> bool:
    """Whether an epoch's training and validation losses are finite (Python floats: no device synchronisation)."""
    return math.isfinite(row["train_loss"]) and math.isfinite(row["val_loss"])


class Diverged(Callback):
    """Stop as ``"diverged"`` at an epoch whose training or validation loss is NaN or ±inf."""

    def on_epoch_end(self, state: RunState, row: dict) -> str | None:
        """``"diverged"`` unless the epoch's training and validation losses are finite."""
        return None if finite_losses(row) else "diverged"


class MaxEpochs(Callback):
    """Stop as ``"max_epochs"`` once ``epochs`` epochs are done."""

    def __init__(self, epochs: int) -> None:
        self.epochs = epochs

    def on_epoch_start(self, state: RunState) -> str | None:
        """``"max_epochs"`` when the cap is already reached (a run resumed at its last epoch trains no more)."""
        return "max_epochs" if state.epoch >= self.epochs else None

    def on_epoch_end(self, state: RunState, row: dict) -> str | None:
        """``"max_epochs"`` after the last allowed epoch."""
        return self.on_epoch_start(state)


class TimeLimit(Callback):
    """Stop once the training time exceeds ``seconds`` (``reason``: the protocol's name for it)."""

    def __init__(self, seconds: float, reason: str) -> None:
        self.seconds, self.reason = seconds, reason

    def on_epoch_start(self, state: RunState) -> str | None:
        """The stop reason when the training seconds already exceed the limit (a resumed run)."""
        return self.reason if state.elapsed > self.seconds else None

    def on_epoch_end(self, state: RunState, row: dict) -> str | None:
        """The stop reason once this epoch took the training time past the limit."""
        return self.on_epoch_start(state)


class PlateauSchedule(Callback):
    """``ReduceLROnPlateau`` stepped once per epoch on ``row[monitor]``; stop as ``"min_lr"`` once the learning rate
    is below ``min_lr`` (the benchmarking-gnns protocol). The scheduler's optimiser holds the member's learning rate
    (for a member of a stack, an optimiser of its own whose only use is this learning rate)."""

    def __init__(self, scheduler, monitor: str, min_lr: float) -> None:
        self.scheduler, self.monitor, self.min_lr = scheduler, monitor, min_lr

    @property
    def lr(self) -> float:
        """The member's current learning rate."""
        return self.scheduler.optimizer.param_groups[0]["lr"]

    def on_epoch_end(self, state: RunState, row: dict) -> str | None:
        """Step the scheduler on the epoch's ``row[monitor]``; ``"min_lr"`` if the learning rate fell below
        ``min_lr``."""
        self.scheduler.step(row[self.monitor])
        return "min_lr" if self.lr < self.min_lr else None

    def state_dict(self) -> dict:
        """The scheduler's state (best score, bad epochs, learning rates) and the current learning rate."""
        return {"scheduler": self.scheduler.state_dict(), "lr": self.lr}

    def load_state_dict(self, state: dict) -> None:
        """Restore the scheduler's state and the learning rate it had set."""
        self.scheduler.load_state_dict(state["scheduler"])
        for group in self.scheduler.optimizer.param_groups:
            group["lr"] = float(state["lr"])


class StepSchedule(Callback):
    """Every epoch's learning rate from ``lr_of_epoch(epoch)`` (0-based), handed to ``set_lr`` before it trains."""

    def __init__(self, set_lr: Callable[[float], None], lr_of_epoch: Callable[[int], float]) -> None:
        self.set_lr, self.lr_of_epoch = set_lr, lr_of_epoch

    def on_epoch_start(self, state: RunState) -> None:
        """Set the member's learning rate for the coming epoch; never stops it."""
        self.set_lr(self.lr_of_epoch(state.epoch))


class Patience(Callback):
    """Early stopping of a single run on ``criterion`` (``accuracy``: an epoch improves iff val accuracy ≥ best;
    ``loss``: iff val loss ≤ best) with :class:`~gnnbench.training.stopping.EarlyStopping`; the row and epoch of the
    last improving epoch become ``state.best`` and ``state.best_epoch``; stop as ``"patience"`` after ``patience``
    epochs without improvement."""

    def __init__(self, criterion: str, patience: int) -> None:
        if criterion not in ("accuracy", "loss"):
            raise ConfigError(f"early_stopping: {criterion!r} is not a criterion; choose accuracy or loss")
        self.stopping = EarlyStopping(criterion, patience, 1, keys=("early_stopping", "patience"))

    def on_epoch_end(self, state: RunState, row: dict) -> str | None:
        """Update the early-stopping state with the epoch's validation loss and accuracy; keep the row as
        ``state.best`` if the epoch improved; ``"patience"`` when patience ran out."""
        save, stop = self.stopping.update(state.epoch - 1, torch.tensor([row["val_loss"]], dtype=torch.float64),
                                          torch.tensor([row["val_accuracy"]], dtype=torch.float64))
        if bool(save[0]):
            state.best, state.best_epoch = dict(row), state.epoch - 1
        return "patience" if bool(stop[0]) else None

    def state_dict(self) -> dict:
        """The early-stopping state: best scores, epochs without improvement, best epoch."""
        return self.stopping.state_dict()

    def load_state_dict(self, state: dict) -> None:
        """Restore the early-stopping state."""
        self.stopping.load_state_dict(state)


# ---------------------------------------------------------------------------------------------- single runs


class SingleStep(Step):
    """One run: ``train_epoch(state)`` (its :class:`RunState`) returns its row; its stateful parts (``parts``: model,
    optimiser, ...; anything with ``state_dict``) are the step's state."""

    def __init__(self, train_epoch: Callable[[RunState], dict], parts: dict[str, object],
                 on_leave: Callable[[], None] | None = None) -> None:
        self.train_epoch, self.parts, self.on_leave = train_epoch, parts, on_leave

    def epoch(self, run: Run, members: list[int]) -> list[dict]:
        """The run's epoch."""
        return [self.train_epoch(run.states[members[0]])]

    def leave(self, members: list[int]) -> None:
        """The run stopped: ``on_leave()`` (nothing without it)."""
        if self.on_leave is not None:
            self.on_leave()

    def state_dict(self) -> dict:
        """Each part's ``state_dict`` under its name."""
        return {name: p.state_dict() for name, p in self.parts.items()}

    def load_state_dict(self, state: dict) -> None:
        """Restore each part's state."""
        for name, part in self.parts.items():
            part.load_state_dict(state[name])


# ---------------------------------------------------------------------------------------------- checkpoints


def payload(run: Run, step: Step, rules: Sequence[Rule], generator: torch.Generator | None = None) -> dict:
    """What a checkpoint holds (the one format): the step's state at the top level (a single run's ``model``,
    ``optimizer``), the members' run state, the rules' states and the random generators (the global ones and the
    step's shuffling ``generator``)."""
    return {**step.state_dict(), "run": run.state_dict(), "rules": [r.state_dict() for r in rules],
            "rng": rng_state(generator or torch.default_generator)}


def restore(state: dict, run: Run, step: Step, rules: Sequence[Rule], generator: torch.Generator | None = None) -> None:
    """Load a :func:`payload` back into the run, the step, the rules and the generators."""
    run.load_state_dict(state["run"])
    step.load_state_dict(state)
    for rule, saved in zip(rules, state["rules"], strict=True):
        rule.load_state_dict(saved)
    restore_rng(state["rng"], generator or torch.default_generator)


class Checkpoint:
    """One run's (or job's) checkpoint file: :meth:`load` returns its payload if it belongs to this run (same
    ``key``) and the run did not finish; :meth:`save` writes one atomically, a stop signal waiting until the file is
    in place; :meth:`due` says whether ``every_s`` seconds passed since the last save (0: after every epoch).
    ``label``: what the run is, in the log line of a resume."""

    def __init__(self, path: str | Path, key: str, guard: StopOnSignal | None, every_s: float = 0.0,
                 label: str | None = None) -> None:
        self.path, self.key, self.guard, self.every_s, self.label = Path(path), key, guard, every_s, label
        self.last = time.perf_counter()

    def load(self) -> dict | None:
        """The saved payload if the file exists, is readable, has this run's ``key`` and is not of a finished run;
        else None (the run starts from scratch)."""
        return load_resumable(self.path, self.key)

    def due(self) -> bool:
        """Whether a save is due: always with ``every_s`` 0, else when more than ``every_s`` seconds passed since
        the last save (or since this object was made)."""
        return self.every_s <= 0 or time.perf_counter() - self.last > self.every_s

    def save(self, payload: dict, finished: bool = False) -> None:
        """Write ``payload`` with the run's key atomically; ``finished`` marks a run that is done, so that
        :meth:`load` will not resume it. Under a guard a stop signal waits until the file is in place (and is raised
        then, unless ``finished``)."""
        state = {"key": self.key, "finished": finished, **payload}
        # looked up at call time: tests replace it to read back or interrupt every save
        if self.guard is None:
            _checkpoint.save_checkpoint(self.path, state)
        else:
            with self.guard.deferred(raise_after=not finished):  # a stop signal waits until the file is in place
                _checkpoint.save_checkpoint(self.path, state)
        self.last = time.perf_counter()


def resume(checkpoint: Checkpoint | None, run: Run, step: Step, rules: Sequence[Rule],
           generator: torch.Generator | None = None, save_initial: bool = True) -> bool:
    """The one resume path: continue ``run`` from ``checkpoint`` if it holds this run's key; else (``save_initial``)
    save the initial state, so that a stop during the first epoch leaves a resumable state too. True when resumed.
    A checkpoint of another layout is ignored with a warning (the run trains from scratch)."""
    saved = None if checkpoint is None else checkpoint.load()
    if saved is None:
        if save_initial and checkpoint is not None:
            checkpoint.save(payload(run, step, rules, generator))
        return False
    try:
        restore(saved, run, step, rules, generator)
    except (KeyError, TypeError, RuntimeError, ValueError, IndexError) as exc:  # another layout: start afresh
        raise _Layout(f"checkpoint {checkpoint.path} does not fit this run ({exc}); training from scratch") from exc
    epoch = max((s.epoch for s in run.states), default=0)
    if checkpoint.label is None:
        log.info("resuming from %s after epoch %d", checkpoint.path, epoch)
    else:
        log.info("resuming %s from %s at epoch %d", checkpoint.label, checkpoint.path, epoch)
    return True


class _Layout(Exception):
    """A checkpoint of this run's key whose contents do not fit it (another version's layout)."""


def fit_or_resume(make: Callable[[], tuple[Run, Step, Sequence[Rule]]], checkpoint: Checkpoint | None,
                  generator_of: Callable[[Step], torch.Generator | None] = lambda step: None,
                  after_epoch=None, save_initial: bool = True,
                  on_resume: Callable[[Run, Step], None] | None = None) -> tuple[Run, Step, Sequence[Rule]]:
    """Build a fit (``make()`` → run, step, rules), resume it from ``checkpoint`` where it is this run's (a
    checkpoint that does not fit is ignored and the fit built again; ``on_resume(run, step)`` after a resume), and
    train it to the end."""
    run, step, rules = make()
    try:
        if resume(checkpoint, run, step, rules, generator_of(step), save_initial) and on_resume is not None:
            on_resume(run, step)
    except _Layout as exc:
        log.warning("%s", exc)
        run, step, rules = make()
        resume(None, run, step, rules)
        if checkpoint is not None and save_initial:
            checkpoint.save(payload(run, step, rules, generator_of(step)))
    fit(run, step, rules, checkpoint=checkpoint, generator=generator_of(step), after_epoch=after_epoch)
    return run, step, rules


class Job:
    """A job of several fits (units: the splits of a pitfalls chunk, the grid points of a model-selection part) with
    one checkpoint: the results of its finished units by key (a unit asked for again — the job rerun after a kill —
    is not trained again) and the state of the unit in training, saved between its epochs when
    ``checkpoint.every_s`` seconds have passed. The checkpoint's key is not checked: each unit's key names what it
    trained (config, data, split, seed), and results of other keys are never used. A job that finished
    (:meth:`save` with ``finished``) is never resumed: forcing it again trains afresh, as a single run."""

    def __init__(self, checkpoint: Checkpoint) -> None:
        self.checkpoint = checkpoint
        saved = None
        if checkpoint.path.is_file():
            try:
                saved = _checkpoint.read_checkpoint(checkpoint.path)
            except Exception as exc:  # any unreadable checkpoint is discarded: the units train again
                log.warning("ignoring unreadable checkpoint %s (%s); training from scratch", checkpoint.path, exc)
        if not isinstance(saved, dict) or not isinstance(saved.get("units"), dict) or saved.get("finished"):
            saved = {"units": {}, "current": None}
        self.units: dict[str, object] = dict(saved["units"])
        self.current: dict | None = saved.get("current")

    def done(self, key: str) -> bool:
        """Whether the unit ``key`` has a result already."""
        return key in self.units

    def result(self, key: str):
        """The stored result of unit ``key``."""
        return self.units[key]

    def fit(self, key: str, make: Callable[[], tuple[Run, Step, Sequence[Rule]]], finish: Callable,
            generator_of: Callable[[Step], torch.Generator | None] = lambda step: None, label: str | None = None,
            after_epoch=None):
        """The result of unit ``key``: stored, or ``finish(run, step)`` after training the fit ``make()`` builds
        (resumed from the job's checkpoint where it was in training)."""
        if key in self.units:
            return self.units[key]
        run, step, rules = make()
        if self.current is not None and self.current.get("unit") == key:
            try:
                restore(self.current["fit"], run, step, rules, generator_of(step))
                epoch = max((run.states[m].epoch for m in run.active), default=0)
                log.info("resuming %s from %s at epoch %d", label or key[:12], self.checkpoint.path, epoch)
            except (KeyError, TypeError, RuntimeError, ValueError, IndexError) as exc:
                log.warning("checkpoint %s does not fit %s (%s); training it from scratch", self.checkpoint.path,
                            label or key[:12], exc)
                run, step, rules = make()
        elif not self.units and self.current is None:
            self.save()  # a stop before the first save leaves a resumable (empty) state

        job = self

        class _UnitCheckpoint:  # the fit's saves go into the job's one file
            def due(self) -> bool:
                return job.checkpoint.due()

            def save(self, state: dict) -> None:
                job.current = {"unit": key, "fit": state}
                job.save()

        fit(run, step, rules, checkpoint=_UnitCheckpoint(), generator=generator_of(step), after_epoch=after_epoch)
        result = finish(run, step)
        self.units[key], self.current = result, None
        self.save()
        return result

    def save(self, finished: bool = False) -> None:
        """Write the finished units and the current one's state (``finished``: the job is complete)."""
        self.checkpoint.save({"units": self.units, "current": self.current}, finished)


def checkpoint_epochs(path: str | Path) -> int | None:
    """Completed epochs in the run checkpoint at ``path`` (None: no readable checkpoint of a single run)."""
    try:
        return int(_checkpoint.read_checkpoint(path)["run"]["states"][0]["epoch"])
    except Exception:  # missing, unreadable or another kind: nothing to resume from
        return None


def stoppable(job: Callable[[StopOnSignal], object], resume_note: Callable[[], str]):
    """``job(guard)`` under the SIGTERM guard (:mod:`~gnnbench.training.preemption`); a stop raises
    :class:`~gnnbench.training.preemption.Preempted` whose message ends with ``resume_note()`` (what a rerun
    resumes from)."""
    with StopOnSignal() as guard:
        try:
            return job(guard)
        except Preempted as exc:
            raise Preempted(exc.signum, f"training stopped by {signal.Signals(exc.signum).name}; "
                                        f"{resume_note()}") from None
