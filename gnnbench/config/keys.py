"""Every key a run config may hold, with its type (the original's JSON keys plus gnnbench's own).

The original scripts have no defaults (a missing key is a KeyError); gnnbench checks presence per
architecture (``required`` on each model class) and types here, so a typo or a wrong type is reported
with the key's name instead of failing deep inside training.
"""

from __future__ import annotations

import difflib
from typing import Any

from gnnbench.errors import ConfigError

NET_KEYS: dict[str, type] = {
    "L": int, "hidden_dim": int, "out_dim": int, "residual": bool, "readout": str, "batch_norm": bool,
    "layer_norm": bool, "in_feat_dropout": float, "dropout": float, "edge_feat": bool, "pos_enc": bool,
    "pos_enc_dim": int, "n_heads": int, "kernel": int, "pseudo_dim_MoNet": int, "sage_aggregator": str,
    "n_mlp_GIN": int, "learn_eps_GIN": bool, "neighbor_aggr_GIN": str, "radius": int, "depth_of_mlp": int,
    "gated": bool, "self_loop": bool, "layer_type": str, "use_gru": bool, "num_train_data": int, "num_embs": int,
}
TRAIN_KEYS: dict[str, type] = {
    "seed": int, "epochs": int, "batch_size": int, "init_lr": float, "lr_reduce_factor": float,
    "lr_schedule_patience": int, "min_lr": float, "weight_decay": float, "max_time": float,
}
OTHER_KEYS: dict[str, type] = {"model": str, "dense_schedule": str}
CHOICES = {"dense_schedule": ("minibatch", "original")}
KEY_TYPES: dict[str, type] = {**NET_KEYS, **TRAIN_KEYS, **OTHER_KEYS}

_POSITIVE = {"hidden_dim", "out_dim", "epochs", "batch_size", "pos_enc_dim", "n_heads", "kernel"}
_FRACTION = {"in_feat_dropout", "dropout"}


def coerce(key: str, value: Any, where: str) -> Any:
    """Check (and, from strings such as ``--set`` values or YAML's ``1e-5``, convert) one config value."""
    if key not in KEY_TYPES:
        close = difflib.get_close_matches(key, KEY_TYPES, n=2, cutoff=0.7)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ConfigError(f"{where}: unknown config key {key!r}{hint}; see the keys of config/presets/*.yaml")
    expected = KEY_TYPES[key]
    try:
        value = _convert(expected, value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: {key} must be {_describe(expected)}, got {value!r}; fix the value") from None
    if key in CHOICES and value not in CHOICES[key]:
        raise ConfigError(f"{where}: {key} must be one of {', '.join(CHOICES[key])}, got {value!r}; fix the value")
    if key == "L" and value < 0:  # 0 is valid: MF has no message-passing layers
        raise ConfigError(f"{where}: L must not be negative, got {value!r}; fix the value")
    if key in _POSITIVE and value < 1:
        raise ConfigError(f"{where}: {key} must be at least 1, got {value!r}; fix the value")
    if key in _FRACTION and not 0 <= value < 1:
        raise ConfigError(f"{where}: {key} must be in [0, 1), got {value!r}; fix the value")
    if expected is float and value < 0:
        raise ConfigError(f"{where}: {key} must not be negative, got {value!r}; fix the value")
    return value


def _convert(expected: type, value: Any) -> Any:
    if expected is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise TypeError
    if expected is int:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            return int(value)
        raise TypeError
    if expected is float:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            return float(value)
        raise TypeError
    if not isinstance(value, str):
        raise TypeError
    return value


def _describe(expected: type) -> str:
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}[expected]


def coerce_all(values: dict, where: str) -> dict:
    return {k: coerce(k, v, f"{where}.{k}" if where else k) for k, v in values.items()}
