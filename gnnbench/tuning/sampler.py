"""The trials of a search, and the next ones from a seeded sampler that replays the earlier ones.

A search keeps no sampler database: its trials are in the run record (:mod:`gnnbench.tuning.record`), and each
round asks for its k trials with :func:`ask`, which

1. makes a fresh in-memory Optuna study of the search's direction;
2. replays every earlier trial into it (``optuna.trial.create_trial``, ``study.add_trial``): a complete trial with
   its value, a pruned one as PRUNED with its intermediate validation scores (epoch -> score), a failed one
   (diverged, no score) as FAIL;
3. samples k parameter sets with a sampler seeded from (``seed``, number of earlier trials) — the round's own seed,
   the same whenever the round is asked again — and leaves them running, so that with ``constant_liar`` TPE keeps the
   k proposals of one round apart.

Samplers: ``tpe``, the tree-structured Parzen estimator (Bergstra et al. 2011; Optuna's ``TPESampler`` with
``multivariate=True``, one joint density over all keys, Falkner et al. 2018, and ``constant_liar=True``): after
``startup`` random trials (Optuna's default 10 when None) it splits the trials into the best γ and the rest, fits
Parzen densities l(x) to the good and g(x) to the others and proposes the candidate maximising l(x)/g(x);
``random``: independent draws from every distribution (Bergstra & Bengio 2012).

Same history and seed, same parameters, bit for bit (Optuna's samplers draw from their own seeded generator; the
history is replayed in trial-number order).
"""

from __future__ import annotations

import contextlib
import logging
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gnnbench.errors import ConfigError
from gnnbench.tuning.space import Dist, space_spec

STATES = ("complete", "pruned", "failed")
SAMPLERS = ("tpe", "random")
DIRECTIONS = ("maximize", "minimize")


@dataclass
class Trial:
    """One trial of a search: its 0-based ``number`` in the search, the sampled ``params``, its selection score
    ``value`` (None when pruned before its end or diverged), ``state`` (complete, pruned, failed), its validation
    score per epoch (``intermediate``: 0-based epoch -> score), the epoch it was pruned after (``pruned_epoch``) and
    the round that asked for it."""

    number: int
    params: dict[str, Any]
    value: float | None = None
    state: str = "complete"
    intermediate: dict[int, float] = field(default_factory=dict)
    pruned_epoch: int | None = None
    round: int | None = None

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise ValueError(f"trial state {self.state!r}: expected one of {', '.join(STATES)}")


@contextlib.contextmanager
def quiet_optuna() -> Iterator[None]:
    """Optuna without its log lines (a trial added, a study made) and its experimental-feature warnings
    (``multivariate``, ``constant_liar``)."""
    import optuna

    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            yield
    finally:
        optuna.logging.set_verbosity(verbosity)


def round_seed(seed: int, done: int) -> int:
    """The seed of a round's sampler: a hash of (search seed, number of earlier trials), in [0, 2³²)."""
    return int(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(done)]).generate_state(1)[0])


def make_sampler(sampler: str, seed: int, startup: int | None = None):
    """The Optuna sampler ``tpe`` (multivariate, constant liar; ``startup`` random trials first, Optuna's default
    when None) or ``random``, seeded with ``seed``; another name is a ConfigError."""
    import optuna

    if sampler == "tpe":
        kwargs = {} if startup is None else {"n_startup_trials": int(startup)}
        return optuna.samplers.TPESampler(multivariate=True, constant_liar=True, seed=seed, **kwargs)
    if sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise ConfigError(f"sampler: unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")


def replay(study, space: Mapping[str, Dist], history: Sequence[Trial]) -> None:
    """Add ``history`` to ``study`` in trial-number order (module docstring); a trial whose params do not fit
    ``space`` is a ConfigError (a search whose space changed must start again under a new name)."""
    import optuna
    from optuna.trial import TrialState

    distributions = {k: d.to_optuna() for k, d in space.items()}
    for t in sorted(history, key=lambda t: t.number):
        if set(t.params) != set(space) or not all(space[k].contains(v) for k, v in t.params.items()):
            raise ConfigError(f"trial {t.number} (params {t.params}) does not fit the search space "
                              f"{space_spec(space)}; a changed space starts a new search: "
                              "rename the search or delete its trial records")
        params = {k: space[k].encode(v) for k, v in t.params.items()}
        intermediate = {int(e): float(v) for e, v in t.intermediate.items() if v is not None and math.isfinite(v)}
        complete = t.state == "complete" and t.value is not None and math.isfinite(t.value)
        state = TrialState.COMPLETE if complete else TrialState.PRUNED if t.state == "pruned" else TrialState.FAIL
        study.add_trial(optuna.trial.create_trial(
            params=params, distributions=distributions, value=float(t.value) if complete else None,
            intermediate_values=intermediate if state != TrialState.FAIL else None, state=state))


def ask(space: Mapping[str, Dist], history: Sequence[Trial], k: int, *, seed: int, sampler: str = "tpe",
        direction: str = "maximize", startup: int | None = None) -> list[dict]:
    """The params of the next ``k`` trials of a search whose earlier trials are ``history`` (module docstring):
    one dict per trial, key -> value of ``space`` (ints for ``int``, floats for the float kinds, the choice itself
    for ``categorical``). ``seed``: the search's seed; ``direction``: of the selection score (maximize, minimize);
    ``startup``: TPE's random trials before it models the history."""
    import optuna

    if direction not in DIRECTIONS:
        raise ConfigError(f"direction: {direction!r}; choose one of {', '.join(DIRECTIONS)}")
    if not space:
        raise ConfigError("tuning: the search space is empty; name at least one key to search")
    with quiet_optuna():
        study = optuna.create_study(direction=direction, sampler=make_sampler(sampler, round_seed(seed, len(history)),
                                                                              startup))
        replay(study, space, history)
        distributions = {key: d.to_optuna() for key, d in space.items()}
        asked = [study.ask(distributions) for _ in range(k)]  # left running: the constant liar sees them
    return [{key: space[key].decode(t.params[key]) for key in space} for t in asked]
