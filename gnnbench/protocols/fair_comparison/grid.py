"""The configurations of the fair-comparison protocol: grids expanded, ids, the shapes one wide stack can hold,
shared trajectories and the seeds of every run."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np

from gnnbench.io import sha256_json
from gnnbench.models.plugins import is_plugin_spec, parse_spec
from gnnbench.models.registry import resolve
from gnnbench.papers import ERRICA2020, PLUGIN
from gnnbench.protocols.fair_comparison import (
    MEMBER_KEYS,
    OBSERVER_KEYS,
)


def expand_grid(base: dict, grid: dict[str, list]) -> list[dict]:
    """Every configuration of the grid, in order (Cartesian product, last dimension fastest)."""
    keys = list(grid)
    return [{**base, **dict(zip(keys, values, strict=True))} for values in itertools.product(*grid.values())]


def config_id(config: dict) -> str:
    """A configuration's short id: the first 16 hex digits of the SHA-256 of its canonical JSON."""
    return sha256_json(config)[:16]


def _stack_frozen(config: dict) -> dict:
    """The model's keys whose values one stack can mix (a classifier's ``stack_frozen``: key -> (the value members
    are built with, names of the parameters frozen in members with another value)); {} for other models."""
    try:
        variant = resolve(config, ERRICA2020)
        return dict(getattr(variant.load(), "stack_frozen", {})) if variant.variant == ERRICA2020 else {}
    except Exception:  # an unknown model: its configurations are checked elsewhere
        return {}


def shape_key(config: dict) -> str:
    """What the members of one stack share: the configuration without :data:`MEMBER_KEYS` and the model's keys
    that a stack can mix (GIN's ``train_eps``)."""
    mixed = set(MEMBER_KEYS) | set(_stack_frozen(config))
    return sha256_json({k: v for k, v in config.items() if k not in mixed})


def stack_groups(configs: list[dict]) -> list[list[int]]:
    """Indices of ``configs`` grouped by :func:`shape_key`, groups in order of their first member, members in
    order."""
    groups: dict[str, list[int]] = {}
    for i, config in enumerate(configs):
        groups.setdefault(shape_key(config), []).append(i)
    return list(groups.values())


def member_build(cfg: dict) -> tuple[dict, tuple[str, ...]]:
    """(the coerced config a stack builds member ``cfg`` from, names of its parameters kept frozen): GIN with
    ``train_eps`` false is built with ε a parameter that never moves (:class:`~gnnbench.training.best_epoch_stack.
    HoldoutStack`)."""
    build, frozen = dict(cfg), ()
    for key, (value, names) in _stack_frozen(cfg).items():
        if cfg.get(key) != value:
            build[key], frozen = value, frozen + tuple(names)
    return build, frozen


def trajectory_config(config: dict) -> dict:
    """A configuration without :data:`OBSERVER_KEYS`: what its training steps depend on (module docstring,
    "Stacks")."""
    return {k: v for k, v in config.items() if k not in OBSERVER_KEYS}


def observer_settings(config: dict) -> dict:
    """A configuration's :data:`OBSERVER_KEYS` (its stopping rules)."""
    return {k: config[k] for k in OBSERVER_KEYS if k in config}


def trajectories(configs: list[dict]) -> list[list[int]]:
    """Indices of ``configs`` grouped by :func:`trajectory_config` (configurations differing only in their stopping
    settings), groups in order of their first member, members in order."""
    groups: dict[str, list[int]] = {}
    for i, config in enumerate(configs):
        groups.setdefault(sha256_json(trajectory_config(config)), []).append(i)
    return list(groups.values())


def run_seed(seed: int, fold: int, key: int) -> int:
    """The seed of a run on outer fold ``fold``: ``SeedSequence(seed, spawn_key=(fold, key))``, with ``key`` a
    grid point's :func:`seed_key` or ``2**31 + r`` for final run r."""
    return int(np.random.SeedSequence(seed, spawn_key=(fold, key)).generate_state(1)[0])


def seed_key(config: dict) -> int:
    """The key of a grid point's seed (``run_seed(seed, fold, key)``): the first 8 hex digits of its config's hash,
    with a model file (``/abs/path/my_gnn.py:MyGNN``, as run configs hold it) named by its file name alone, so that a
    suite trains the same wherever its folder is."""
    model = config.get("model")
    if is_plugin_spec(model) and parse_spec(model)[0] == "file":
        _, target, attribute = parse_spec(model)
        config = {**config, "model": f"{Path(target).name}:{attribute}"}
    return int(config_id(config)[:8], 16)


def num_layers(config: dict) -> int | None:
    """Depth of a configuration for the "median number of layers selected" column: the classifier's own rule
    (Errica's zoo), ``L`` for the benchmark's models, ``num_layers`` (PyTorch Geometric's name) for a model from
    outside the package, None for the others."""
    variant = resolve(config, ERRICA2020)
    if variant.variant == ERRICA2020:
        return variant.load().num_layers(config)
    if variant.variant == PLUGIN:
        layers = config.get("num_layers")
        return layers if isinstance(layers, int) and not isinstance(layers, bool) else None
    return config.get("L")


def config_json(config: dict) -> str:
    """A configuration as JSON with sorted keys (how the model-selection files store it)."""
    return json.dumps(config, sort_keys=True)
