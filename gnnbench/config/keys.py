"""Every key a run config may hold, with its type, per protocol (each protocol's original config keys plus
gnnbench's own).

``KEY_TYPES``: the benchmarking-gnns protocol (the original's JSON ``net_params`` / ``params`` keys). The original
scripts have no defaults (a missing key is a KeyError); gnnbench checks presence per architecture (``required`` on
each model class) and types here, so a typo or a wrong type is reported with the key's name instead of failing deep
inside training.

``PITFALLS_KEY_TYPES``: the pitfalls protocol (gnn-benchmark's YAML keys: ``config/train.conf.yaml`` and
``config/optimized/*.yaml``, plus gnnbench's switches for the original's bugs: ``gcn_self_loops`` and
``maxpool_pads_with_node0``).
"""

from __future__ import annotations

import difflib
import math
import re
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
OTHER_KEYS: dict[str, type] = {"model": str, "dense_schedule": str, "loss": str}
KEY_TYPES: dict[str, type] = {**NET_KEYS, **TRAIN_KEYS, **OTHER_KEYS}
PITFALLS_KEY_TYPES: dict[str, type] = {
    "model": str, "hidden_size": int, "num_heads": list, "input_dropout_prob": float,
    "coefficient_dropout_prob": float, "dropout_prob": float, "num_kernels": int, "r": int, "aggregator": str,
    "agg_transform_size": int, "gcn_self_loops": bool, "maxpool_pads_with_node0": bool, "learning_rate": float,
    "weight_decay": float, "prop_type": str, "return_prob": float, "num_epochs": int,
    "early_stopping_criterion": str, "early_stopping_tolerance": int, "improvement_tolerance": float,
    "num_training_runs": int,
}
# Errica et al. (diningphil/gnn-comparison config_*.yml keys; training keys renamed where gnnbench spells the
# concept out: classifier_epochs -> epochs, early_stopper -> early_stopping + patience, gradient_clipping kept)
FAIR_COMPARISON_KEY_TYPES: dict[str, type | tuple] = {
    "model": str, "batch_size": int, "learning_rate": float, "l2": float, "optimizer": str, "scheduler": str,
    "scheduler_step_size": int, "scheduler_gamma": float, "gradient_clipping": float, "epochs": int,
    "early_stopping": str, "patience": int, "time_limit_hours": float,
    "hidden_units": (int, list), "train_eps": bool, "aggregation": str, "dropout": float,
    "dropout_layer0_at_eval": bool, "num_layers": int, "dim_embedding": int, "embedding_dim": int, "k": float,
    "dense_dim": int, "gnn_dim_hidden": int, "dim_embedding_MLP": int, "dropout_final": float,
    "laplacian_threshold": float,
}
PROTOCOL_KEYS = {"benchmarking-gnns": KEY_TYPES, "pitfalls": PITFALLS_KEY_TYPES,
                 "fair-comparison": FAIR_COMPARISON_KEY_TYPES}
CHOICES = {"dense_schedule": ("minibatch", "original"),
           "loss": ("cross_entropy", "weighted_cross_entropy", "l1", "link_bce", "multitask_mse"),
           "aggregator": ("mean", "maxpool", "meanpool"),
           "prop_type": ("vanilla", "smoothed"), "early_stopping_criterion": ("gnnbench", "gat_tol"),
           "optimizer": ("Adam", "SGD"), "scheduler": ("none", "step", "ecc_milestones"),
           "early_stopping": ("accuracy", "loss"), "aggregation": ("sum", "mean", "add", "max")}

_POSITIVE = {"hidden_dim", "out_dim", "epochs", "batch_size", "pos_enc_dim", "n_heads", "kernel", "hidden_size",
             "num_kernels", "r", "agg_transform_size", "num_epochs", "early_stopping_tolerance", "num_training_runs",
             "patience", "num_layers", "dim_embedding", "embedding_dim", "dense_dim", "gnn_dim_hidden",
             "dim_embedding_MLP", "scheduler_step_size"}
_FRACTION = {"in_feat_dropout", "dropout", "input_dropout_prob", "coefficient_dropout_prob", "dropout_prob",
             "return_prob", "dropout_final"}
# Numbers whose range is narrower than "not negative" (every published preset lies inside these ranges):
# learning rates and time limits are positive; ReduceLROnPlateau's factor lies in (0, 1) (torch refuses >= 1,
# and 0 would drop the rate to min_lr at once); a step decay multiplies by a gamma in (0, 1]; a patience counts
# epochs (0: reduce after every epoch without improvement).
_POSITIVE_REAL = {"init_lr", "learning_rate", "max_time", "time_limit_hours"}
_OPEN_FRACTION = {"lr_reduce_factor"}
_DECAY = {"scheduler_gamma"}
_NON_NEGATIVE_INT = {"lr_schedule_patience"}
_UNBOUNDED = {"max_time", "time_limit_hours"}  # .inf (YAML) / inf (--set): no time limit
SEED_MAX = 2**32 - 1  # NumPy's RandomState, scikit-learn and torch.manual_seed's portable range
LABEL_MAX = 100  # model labels and dataset names become folder and file names
LABEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$"


def check_seed(value: int, where: str) -> int:
    """A random seed: an integer in [0, 2**32 - 1] (the range NumPy's and scikit-learn's generators accept)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= SEED_MAX:
        raise ConfigError(f"{where}: a seed must be an integer from 0 to {SEED_MAX} (2**32 - 1), got {value!r}; "
                          "pick a seed in that range")
    return value


def check_label(value: str, where: str, what: str = "model label") -> str:
    """A name that becomes a path component: letters, digits and ``_.+-`` (not first), at most 100 characters."""
    if len(value) > LABEL_MAX:
        raise ConfigError(f"{where}: {what} {value[:20]!r}... is {len(value)} characters long; it becomes a folder "
                          f"or file name: use at most {LABEL_MAX} characters")
    if not re.fullmatch(LABEL_PATTERN, value):
        raise ConfigError(f"{where}: {what} {value!r} may only hold letters, digits and _ . + - (not first), as it "
                          "becomes a folder or file name; rename it")
    return value


def coerce(key: str, value: Any, where: str, types: dict[str, type] | None = None) -> Any:
    """Check (and, from strings such as ``--set`` values or YAML's ``1e-5``, convert) one config value."""
    types = KEY_TYPES if types is None else types
    if key not in types:
        close = difflib.get_close_matches(key, types, n=2, cutoff=0.7)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ConfigError(f"{where}: unknown config key {key!r}{hint}; `gnnbench presets` lists the published "
                          "configs and their keys")
    expected = types[key]
    try:
        value = _convert_any(expected, value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: {key} must be {_describe(expected)}, got {value!r}; fix the value") from None
    if isinstance(value, float) and not (math.isfinite(value) or (key in _UNBOUNDED and value > 0)):
        raise ConfigError(f"{where}: {key} must be a finite number, got {value!r}; fix the value")
    if key in CHOICES and value not in CHOICES[key]:
        raise ConfigError(f"{where}: {key} must be one of {', '.join(CHOICES[key])}, got {value!r}; fix the value")
    if key == "L" and value < 0:  # 0 is valid: MF has no message-passing layers
        raise ConfigError(f"{where}: L must not be negative, got {value!r}; fix the value")
    if key in _POSITIVE and value < 1:
        raise ConfigError(f"{where}: {key} must be at least 1, got {value!r}; fix the value")
    if key in _FRACTION and not 0 <= value < 1:
        raise ConfigError(f"{where}: {key} must be in [0, 1), got {value!r}; fix the value")
    if key in _POSITIVE_REAL and not value > 0:
        raise ConfigError(f"{where}: {key} must be positive, got {value!r}; fix the value")
    if key in _OPEN_FRACTION and not 0 < value < 1:
        raise ConfigError(f"{where}: {key} must be in (0, 1), got {value!r}; fix the value")
    if key in _DECAY and not 0 < value <= 1:
        raise ConfigError(f"{where}: {key} must be in (0, 1], got {value!r}; fix the value")
    if key in _NON_NEGATIVE_INT and value < 0:
        raise ConfigError(f"{where}: {key} must not be negative, got {value!r}; fix the value")
    if key == "seed":
        check_seed(value, where)
    if isinstance(value, list) and not (value and all(v >= 1 for v in value)):
        raise ConfigError(f"{where}: {key} must be a non-empty list of positive integers, got {value!r}; fix the value")
    if isinstance(value, float) and value < 0:
        raise ConfigError(f"{where}: {key} must not be negative, got {value!r}; fix the value")
    return value


def _convert_any(expected: type | tuple, value: Any) -> Any:
    """``_convert`` for one type, or the first of several that accepts the value (e.g. an int or a list)."""
    for option in (expected if isinstance(expected, tuple) else (expected,))[:-1]:
        try:
            return _convert(option, value)
        except (TypeError, ValueError):
            pass  # not this type: try the next
    return _convert(expected[-1] if isinstance(expected, tuple) else expected, value)


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
    if expected is list:
        if isinstance(value, str):
            value = [int(v) for v in value.strip("[]").split(",")]
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise TypeError
        return list(value)
    if not isinstance(value, str):
        raise TypeError
    return value


def _describe(expected: type | tuple) -> str:
    if isinstance(expected, tuple):
        return " or ".join(_describe(e) for e in expected)
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string",
            list: "a list of integers"}[expected]


def coerce_all(values: dict, where: str, types: dict[str, type] | None = None) -> dict:
    return {k: coerce(k, v, f"{where}.{k}" if where else k, types) for k, v in values.items()}
