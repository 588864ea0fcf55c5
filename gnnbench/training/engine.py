"""The training engine of every protocol: one epoch loop, one run state, one checkpoint/resume and pre-emption
wrapper, one optimiser factory. What differs between protocols is configuration and callbacks.

:func:`fit` runs epochs until a callback names a stop reason:

    before every epoch:  callback.on_epoch_start(state)     -> may stop (epoch cap, time limit on a resumed run)
                                                              or set the epoch's learning rate (step schedule)
    one epoch:           row = step()                       -> the protocol's task: train, then evaluate
    after it:            state.elapsed += seconds; the row (with its ``seconds``) joins state.history
                         callback.on_epoch_end(state, row)  -> in order; the first stop reason ends the run and
                                                              the callbacks after it are not called
                         after_epoch(state)                 -> checkpoint, log

The task (``step``) is what a protocol trains: mini-batches of graphs (:mod:`gnnbench.training.loop`, P1), one
graph's link pairs with random negatives (:mod:`gnnbench.training.link_prediction`, P1), graph classification with
gradient clipping (:mod:`gnnbench.training.holdout`, P3), R initialisations of one model on one node split, stacked
into one model or one after another (:mod:`gnnbench.training.initialisations`, P2; their members stop one by one
under :class:`~gnnbench.training.stopping.EarlyStopping` and their ``step`` returns no row).

Callbacks (the protocols' rules):

* :class:`Diverged` — a NaN or infinite training or validation loss ends the run (``"diverged"``);
* :class:`PlateauSchedule` — ``ReduceLROnPlateau`` stepped on a validation score, stop below ``min_lr`` (P1);
* :class:`StepSchedule` — the learning rate of each epoch from a closed form (P3);
* :class:`Patience` — early stopping on validation accuracy or loss, the last improving epoch's row kept as the
  run's scores (P3; P2's patience with best-weights restore is per member, inside its task);
* :class:`TimeLimit`, :class:`MaxEpochs`, :class:`UntilDone` (a task whose members all stopped).

:class:`Checkpoint` is one run's checkpoint file (resume when the key matches, save after every epoch or at most
every ``every_s`` seconds, a stop signal deferred while the file is written); :func:`stoppable` runs a job under
the SIGTERM guard (:mod:`gnnbench.training.preemption`) and names what a rerun resumes from.
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
from gnnbench.training import eager_optim
from gnnbench.training.checkpoint import load_resumable, restore_rng, rng_state
from gnnbench.training.preemption import Preempted, StopOnSignal
from gnnbench.training.stacked_adam import StackedAdam
from gnnbench.training.stopping import EarlyStopping

log = logging.getLogger(__name__)
OPTIMIZERS = ("Adam", "SGD", "TF1Adam")


def make_optimizer(params: torch.nn.Module | Iterable[torch.Tensor], lr: float, weight_decay: float = 0.0,
                   name: str = "Adam"):
    """The optimiser of a run. ``Adam`` and ``SGD`` (no momentum): ``torch.optim`` with classic (coupled) L2 weight
    decay, fused kernels (one pass over all parameters, the same update up to rounding: small models spend most of a
    step in the per-tensor loop otherwise), as :mod:`~gnnbench.training.eager_optim` runs them (without importing
    torch's compiler in a process that compiles nothing). ``TF1Adam``: TensorFlow 1's Adam
    (:mod:`~gnnbench.training.stacked_adam`, the pitfalls protocol; L2 is a loss term there, so ``weight_decay`` must
    be 0). No parameters at all is a ConfigError (suites and ``gnnbench train`` refuse such a model before any job
    runs: :func:`gnnbench.models.registry.check_buildable`)."""
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


# ---------------------------------------------------------------------------------------------- state and loop


class RunState:
    """What a run carries from epoch to epoch: epochs done, history rows, training seconds, stop reason and the
    scores of its best epoch (where a rule keeps one)."""

    def __init__(self) -> None:
        self.epoch = 0
        self.history: list[dict] = []
        self.elapsed = 0.0
        self.stop_reason: str | None = None
        self.best: dict = {}

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
        """Epochs done, history, elapsed seconds, stop reason and best row, for a checkpoint."""
        return {"epoch": self.epoch, "history": self.history, "elapsed": self.elapsed,
                "stop_reason": self.stop_reason, "best": self.best}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` saved (a resumed run continues from that epoch)."""
        (self.epoch, self.history, self.elapsed, self.stop_reason, self.best) = (
            state["epoch"], list(state["history"]), state["elapsed"], state["stop_reason"], dict(state["best"]))


class Callback:
    """A protocol's rule; both hooks may return a stop reason (None: go on)."""

    def on_epoch_start(self, state: RunState) -> str | None:
        """Called by :func:`fit` before every epoch; a stop reason ends the run before the epoch trains. Default:
        go on."""
        return None

    def on_epoch_end(self, state: RunState, row: dict | None) -> str | None:
        """Called by :func:`fit` after every epoch with its row (None when the task's ``step`` returns none); a
        stop reason ends the run and the later callbacks are not called for this epoch. Default: go on."""
        return None

    def state_dict(self) -> dict:
        """What a resumed run needs of this callback (saved in the run's checkpoint); default: nothing."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` saved; default: nothing to restore."""


def fit(state: RunState, step: Callable[[], dict | None], callbacks: Sequence[Callback],
        after_epoch: Callable[[RunState], None] | None = None) -> RunState:
    """Train epochs until a callback stops the run (module docstring); returns ``state``."""
    while state.stop_reason is None:
        for callback in callbacks:
            if (reason := callback.on_epoch_start(state)) is not None:
                state.stop_reason = reason
                return state
        start = time.perf_counter()
        row = step()
        seconds = time.perf_counter() - start
        state.elapsed += seconds
        state.epoch += 1
        if row is not None:
            row["seconds"] = seconds
            state.history.append(row)
        for callback in callbacks:
            if (reason := callback.on_epoch_end(state, row)) is not None:
                state.stop_reason = reason
                break
        if after_epoch is not None:
            after_epoch(state)
    return state


# ---------------------------------------------------------------------------------------------- callbacks


def finite_losses(row: dict) -> bool:
    """Whether an epoch's training and validation losses are finite (Python floats: no device synchronisation)."""
    return math.isfinite(row["train_loss"]) and math.isfinite(row["val_loss"])


class Diverged(Callback):
    """Stop as ``"diverged"`` at an epoch whose training or validation loss is NaN or ±inf."""

    def on_epoch_end(self, state: RunState, row: dict | None) -> str | None:
        """``"diverged"`` unless the epoch's training and validation losses are finite."""
        return None if finite_losses(row) else "diverged"


class MaxEpochs(Callback):
    """Stop as ``"max_epochs"`` once ``epochs`` epochs are done."""

    def __init__(self, epochs: int) -> None:
        self.epochs = epochs

    def on_epoch_start(self, state: RunState) -> str | None:
        """``"max_epochs"`` when the cap is already reached (a run resumed at its last epoch trains no more)."""
        return "max_epochs" if state.epoch >= self.epochs else None

    def on_epoch_end(self, state: RunState, row: dict | None) -> str | None:
        """``"max_epochs"`` after the last allowed epoch."""
        return self.on_epoch_start(state)


class TimeLimit(Callback):
    """Stop once the training time exceeds ``seconds`` (``reason``: the protocol's name for it)."""

    def __init__(self, seconds: float, reason: str) -> None:
        self.seconds, self.reason = seconds, reason

    def on_epoch_start(self, state: RunState) -> str | None:
        """The stop reason when the training seconds already exceed the limit (a resumed run)."""
        return self.reason if state.elapsed > self.seconds else None

    def on_epoch_end(self, state: RunState, row: dict | None) -> str | None:
        """The stop reason once this epoch took the training time past the limit."""
        return self.on_epoch_start(state)


class PlateauSchedule(Callback):
    """``ReduceLROnPlateau`` stepped once per epoch on ``row[monitor]``; stop as ``"min_lr"`` once the learning rate
    is below ``min_lr`` (the benchmarking-gnns protocol)."""

    def __init__(self, scheduler, monitor: str, min_lr: float) -> None:
        self.scheduler, self.monitor, self.min_lr = scheduler, monitor, min_lr

    def on_epoch_end(self, state: RunState, row: dict | None) -> str | None:
        """Step the scheduler on the epoch's ``row[monitor]``; ``"min_lr"`` if the learning rate fell below
        ``min_lr``."""
        self.scheduler.step(row[self.monitor])
        return "min_lr" if self.scheduler.optimizer.param_groups[0]["lr"] < self.min_lr else None

    def state_dict(self) -> dict:
        """The scheduler's state (best score, bad epochs, learning rates)."""
        return self.scheduler.state_dict()

    def load_state_dict(self, state: dict) -> None:
        """Restore the scheduler's state."""
        self.scheduler.load_state_dict(state)


class StepSchedule(Callback):
    """Every epoch's learning rate from ``lr_of_epoch(epoch)`` (0-based), set before it trains."""

    def __init__(self, optimizer, lr_of_epoch: Callable[[int], float]) -> None:
        self.optimizer, self.lr_of_epoch = optimizer, lr_of_epoch

    def on_epoch_start(self, state: RunState) -> None:
        """Set every parameter group's learning rate for the coming epoch; never stops the run."""
        lr = self.lr_of_epoch(state.epoch)
        for group in self.optimizer.param_groups:
            group["lr"] = lr


class Patience(Callback):
    """Early stopping of a single run on ``criterion`` (``accuracy``: an epoch improves iff val accuracy ≥ best;
    ``loss``: iff val loss ≤ best) with :class:`~gnnbench.training.stopping.EarlyStopping`; the row of the last
    improving epoch becomes ``state.best``; stop as ``"patience"`` after ``patience`` epochs without improvement."""

    def __init__(self, criterion: str, patience: int) -> None:
        if criterion not in ("accuracy", "loss"):
            raise ConfigError(f"early_stopping: {criterion!r} is not a criterion; choose accuracy or loss")
        self.stopping = EarlyStopping(criterion, patience, 1, keys=("early_stopping", "patience"))

    def on_epoch_end(self, state: RunState, row: dict | None) -> str | None:
        """Update the early-stopping state with the epoch's validation loss and accuracy; keep the row as
        ``state.best`` if the epoch improved; ``"patience"`` when patience ran out."""
        save, stop = self.stopping.update(state.epoch - 1, torch.tensor([row["val_loss"]], dtype=torch.float64),
                                          torch.tensor([row["val_accuracy"]], dtype=torch.float64))
        if bool(save[0]):
            state.best = dict(row)
        return "patience" if bool(stop[0]) else None

    @property
    def best_epoch(self) -> int:
        """The 0-based last improving epoch (-1 before any epoch improved)."""
        return int(self.stopping.best_epoch[0])

    def state_dict(self) -> dict:
        """The early-stopping state: best scores, epochs without improvement, best epoch."""
        return self.stopping.state_dict()

    def load_state_dict(self, state: dict) -> None:
        """Restore the early-stopping state."""
        self.stopping.load_state_dict(state)


class UntilDone(Callback):
    """Stop as ``"finished"`` when ``done()`` (a task of several members that stop one by one)."""

    def __init__(self, done: Callable[[], bool]) -> None:
        self.done = done

    def on_epoch_start(self, state: RunState) -> str | None:
        """``"finished"`` when every member has already stopped (a resumed task)."""
        return "finished" if self.done() else None

    def on_epoch_end(self, state: RunState, row: dict | None) -> str | None:
        """``"finished"`` once this epoch stopped the last member."""
        return self.on_epoch_start(state)


# ---------------------------------------------------------------------------------------------- checkpoints


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


class Trainable:
    """A run's state, its stateful parts (model, optimiser, callbacks: anything with ``state_dict``) and the RNGs a
    resumed run continues (the global torch RNG and ``generator``), saved to and resumed from one
    :class:`Checkpoint`."""

    def __init__(self, state: RunState, parts: dict[str, object], generator: torch.Generator | None = None,
                 checkpoint: Checkpoint | None = None) -> None:
        self.state, self.parts, self.checkpoint = state, parts, checkpoint
        self.generator = generator or torch.default_generator

    def payload(self) -> dict:
        """What a checkpoint holds: the run state, each part's ``state_dict`` under its name, and the RNG states."""
        return {**self.state.state_dict(), **{name: p.state_dict() for name, p in self.parts.items()},
                "rng": rng_state(self.generator)}

    def restore(self, payload: dict) -> None:
        """Load a :meth:`payload` back into the run state, the parts and the RNGs."""
        self.state.load_state_dict(payload)
        for name, part in self.parts.items():
            part.load_state_dict(payload[name])
        restore_rng(payload["rng"], self.generator)

    def resume(self, save_initial: bool = True) -> bool:
        """Continue from the checkpoint if it is this run's; else (``save_initial``) save the initial state, so that
        a stop during the first epoch leaves a resumable state too. True when resumed."""
        payload = None if self.checkpoint is None else self.checkpoint.load()
        if payload is None:
            if save_initial and self.checkpoint is not None:
                self.save()
            return False
        try:
            self.restore(payload)
        except (KeyError, TypeError, RuntimeError, ValueError) as exc:  # another layout: start afresh
            self.state.__init__()
            log.warning("checkpoint %s does not fit this run (%s); training from scratch", self.checkpoint.path, exc)
            return False
        if self.checkpoint.label is None:
            log.info("resuming from %s after epoch %d", self.checkpoint.path, self.state.epoch)
        else:
            log.info("resuming %s from %s at epoch %d", self.checkpoint.label, self.checkpoint.path, self.state.epoch)
        return True

    def save(self, finished: bool = False) -> None:
        """Save the :meth:`payload` to the checkpoint (nothing without one)."""
        if self.checkpoint is not None:
            self.checkpoint.save(self.payload(), finished)

    def after_epoch(self, state: RunState) -> None:
        """Save if the checkpoint is due."""
        if self.checkpoint is not None and self.checkpoint.due():
            self.save()


def checkpoint_epochs(path: str | Path) -> int | None:
    """Completed epochs in the run checkpoint at ``path`` (None: no readable checkpoint)."""
    try:
        return int(_checkpoint.read_checkpoint(path)["epoch"])
    except Exception:  # missing, unreadable or foreign: nothing to resume from
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
