"""Pruning: the training-engine rule that stops unpromising trials early, from their validation scores per epoch.

A :class:`Pruner` is a :class:`~gnnbench.training.engine.Rule` of a fit whose members are the trials of one round;
a member it stops gets the stop reason ``"pruned"`` and leaves the stack through the engine's
:meth:`~gnnbench.training.engine.Step.leave`. It compares a member's monitored score s (the epoch's row
``monitor``, by default ``val_score``; with ``running_best`` the best score up to that epoch; negated when the
direction is ``minimize``, so that larger is better; NaN counts as the worst) with the scores other trials had after
the same number of epochs — the earlier rounds' trials (``history``: their ``intermediate`` scores, epoch e counted
0-based, so that "after n epochs" is epoch n − 1) and the members of this fit:

- ``asha``: asynchronous successive halving (Li et al. 2020, "A System for Massively Parallel Hyperparameter
  Tuning"; Optuna's ``SuccessiveHalvingPruner``). Rungs after n_i = ``min_epochs`` · ``eta``^i epochs (i = 0, 1,
  ...; or the given ``rungs``). A member reaching a rung joins the n scores recorded there (every earlier trial that
  trained that long, and this fit's members that reached it, itself included) and continues iff
  s ≥ the k-th best of them, k = ⌊n / eta⌋: the top 1/eta go on (ties go on). A rung prunes nobody until it holds
  at least eta scores (n ≥ eta, so k ≥ 1): with fewer, "the top 1/eta" is the best alone, and the second trial of a
  search would be stopped for being below the first — with small rounds nearly every trial after the first would
  be. This is Optuna's ``bootstrap_count`` set to eta (trials a rung needs before it promotes anyone).
- ``median``: the median stopping rule (Golovin et al. 2017, "Google Vizier"; Optuna's ``MedianPruner``): after
  n ≥ ``min_epochs`` epochs a member stops iff s < the median of the scores of the earlier *complete* trials after
  n epochs (no stop where none has one).
- ``none``: never stops anyone.

It is deterministic (scores and epoch counts only, no clock), decides for all members of an epoch at once (array
operations over the members), keeps its state for a checkpoint (:meth:`Pruner.state_dict`) and records the 0-based
epoch after which each member was pruned (:attr:`Pruner.pruned_epoch`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from gnnbench.errors import ConfigError
from gnnbench.training.engine import Rule, Run
from gnnbench.tuning.sampler import DIRECTIONS, Trial

PRUNERS = ("asha", "median", "none")
PRUNED = "pruned"  # the stop reason of a pruned member


class Pruner(Rule):
    """Stop unpromising members of a round as ``"pruned"`` (module docstring). ``kind``: asha, median or none;
    ``history``: the search's earlier trials; ``monitor``: the row key of the score; ``direction``: maximize or
    minimize; ``min_epochs``: the first rung (asha) or the first epoch count that may stop (median); ``eta``: the
    reduction factor of asha; ``rungs``: explicit rung epoch counts instead of min_epochs · eta^i; ``running_best``:
    compare the best score so far instead of the epoch's."""

    def __init__(self, kind: str, history: Sequence[Trial], *, monitor: str = "val_score",
                 direction: str = "maximize", min_epochs: int, eta: int = 3, rungs: Sequence[int] | None = None,
                 running_best: bool = False) -> None:
        if kind not in PRUNERS:
            raise ConfigError(f"pruner: unknown pruner {kind!r}; choose one of {', '.join(PRUNERS)}")
        if direction not in DIRECTIONS:
            raise ConfigError(f"direction: {direction!r}; choose one of {', '.join(DIRECTIONS)}")
        if not isinstance(min_epochs, int) or min_epochs < 1:
            raise ConfigError(f"min_epochs: expected an integer ≥ 1, got {min_epochs!r}")
        if not isinstance(eta, int) or eta < 2:
            raise ConfigError(f"eta: expected an integer ≥ 2, got {eta!r}")
        self.kind, self.monitor, self.min_epochs, self.eta = kind, monitor, min_epochs, eta
        self.sign = 1.0 if direction == "maximize" else -1.0
        self.rungs = None if rungs is None else sorted({int(r) for r in rungs})
        self.running_best = running_best
        # the earlier trials' curves, signed: asha every trial that trained, median the complete ones
        self.curves = [self._signed(t.intermediate) for t in history
                       if t.intermediate and (kind == "asha" or t.state == "complete")]
        self.recorded: dict[int, list[float]] = {}  # rung -> this fit's members' scores there
        self.best: dict[int, float] = {}  # member -> best signed score so far (running_best)
        self.pruned_epoch: dict[int, int] = {}  # member -> 0-based epoch after which it was pruned
        self._cache: dict[int, np.ndarray] = {}

    def _signed(self, intermediate: dict[int, float]) -> dict[int, float]:
        """A trial's curve, signed and with NaN as the worst; with running_best the best so far at every epoch."""
        out, best = {}, -math.inf
        for epoch in sorted(intermediate):
            value = intermediate[epoch]
            value = -math.inf if value is None or math.isnan(value) else self.sign * float(value)
            best = max(best, value)
            out[int(epoch)] = best if self.running_best else value
        return out

    def _earlier(self, epochs: int) -> np.ndarray:
        """The earlier trials' scores after ``epochs`` epochs (those that trained that long)."""
        if epochs not in self._cache:
            self._cache[epochs] = np.array([c[epochs - 1] for c in self.curves if epochs - 1 in c], dtype=float)
        return self._cache[epochs]

    def is_rung(self, epochs: int) -> bool:
        """Whether ``epochs`` epochs done is a rung of asha."""
        if self.rungs is not None:
            return epochs in self.rungs
        rung = self.min_epochs
        while rung < epochs:
            rung *= self.eta
        return rung == epochs

    def end(self, run: Run, members: list[int], rows: Sequence[dict]) -> dict[int, str]:
        """The members that stop after this epoch, as ``{member: "pruned"}``."""
        if self.kind == "none" or not members:
            return {}
        epochs = np.array([run.states[m].epoch for m in members])
        scores = self.sign * np.array([float(row.get(self.monitor, math.nan)) for row in rows], dtype=float)
        scores[np.isnan(scores)] = -math.inf
        if self.running_best:
            scores = np.maximum(scores, np.array([self.best.get(m, -math.inf) for m in members]))
            self.best.update(zip(members, scores.tolist(), strict=True))
        stop = np.zeros(len(members), dtype=bool)
        for n in np.unique(epochs).tolist():
            at = epochs == n
            if self.kind == "asha" and self.is_rung(n):
                self.recorded.setdefault(n, []).extend(scores[at].tolist())
                competing = np.concatenate([self._earlier(n), np.array(self.recorded[n])])
                keep = len(competing) // self.eta
                if keep >= 1:  # at least eta scores at the rung (module docstring)
                    stop[at] = scores[at] < np.sort(competing)[::-1][keep - 1]
            elif self.kind == "median" and n >= self.min_epochs and len(earlier := self._earlier(n)):
                stop[at] = scores[at] < np.median(earlier)
        stopped = [m for m, s in zip(members, stop.tolist(), strict=True) if s]
        self.pruned_epoch.update((m, run.states[m].epoch - 1) for m in stopped)
        return dict.fromkeys(stopped, PRUNED)

    def state_dict(self) -> dict:
        """The scores this fit's members recorded at the rungs, their best scores and pruned epochs."""
        return {"recorded": {n: list(v) for n, v in self.recorded.items()}, "best": dict(self.best),
                "pruned_epoch": dict(self.pruned_epoch)}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s output."""
        self.recorded = {int(n): list(v) for n, v in state["recorded"].items()}
        self.best = {int(m): float(v) for m, v in state["best"].items()}
        self.pruned_epoch = {int(m): int(e) for m, e in state["pruned_epoch"].items()}
