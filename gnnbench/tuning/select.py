"""Selection: the trial a search picks and its tuning curve, from validation scores only.

The selected trial is the complete trial with the best ``value`` (its validation selection score; a trial is never
scored on test), ties going to the lowest trial number — the trial asked for first, so that the selection does not
depend on the order trials finished in. Pruned and failed trials are never selected. The tuning curve is the best
value among trials 0..t, for every trial number t: what a budget of t + 1 trials would have selected.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gnnbench.errors import GnnbenchError
from gnnbench.tuning.sampler import DIRECTIONS, Trial


def _complete(trial: Trial) -> bool:
    return trial.state == "complete" and trial.value is not None and math.isfinite(trial.value)


def _better(a: float, b: float, direction: str) -> bool:
    return a > b if direction == "maximize" else a < b


def select(history: Sequence[Trial], direction: str = "maximize", *, search: str = "the search") -> Trial:
    """The complete trial with the best value (``direction``: maximize or minimize), ties to the lowest trial
    number; no complete trial is a one-line GnnbenchError naming ``search``."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction {direction!r}: expected one of {', '.join(DIRECTIONS)}")
    best = None
    for trial in sorted(history, key=lambda t: t.number):
        if _complete(trial) and (best is None or _better(trial.value, best.value, direction)):
            best = trial
    if best is None:
        states = ", ".join(f"{sum(t.state == s for t in history)} {s}" for s in ("pruned", "failed"))
        raise GnnbenchError(f"search {search}: none of its {len(history)} trials completed ({states}); nothing to "
                            "select — widen the space, lower the pruning (min_epochs, eta) or give it more trials")
    return best


def curve(history: Sequence[Trial], direction: str = "maximize") -> dict[int, float]:
    """The best value among the complete trials numbered up to t, for every trial number t in ``history`` (NaN
    before the first complete trial)."""
    out, best = {}, math.nan
    for trial in sorted(history, key=lambda t: t.number):
        if _complete(trial) and (math.isnan(best) or _better(trial.value, best, direction)):
            best = float(trial.value)
        out[trial.number] = best
    return out
