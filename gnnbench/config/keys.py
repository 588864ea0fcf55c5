"""Every key a run config may hold, with its type, and how values are checked.

Key ownership (who declares which key):

* ``model`` (the family) and ``variant`` (which paper's layer; left out for the running protocol's own zoo):
  every run config (:data:`~gnnbench.papers.MODEL_KEYS`).
* *Architecture keys*: declared per zoo in :mod:`gnnbench.papers` (``ARCHITECTURE_KEYS``: the benchmark's
  ``net_params``, Shchur's model keys, Errica's model keys).
* *Training keys*: declared per paper's protocol in :mod:`gnnbench.papers` (``TRAINING_KEYS`` with types,
  ``FOREIGN_TRAINING_DEFAULTS`` for models of another paper's zoo), which each protocol object hands on
  (``training_keys``, ``training_defaults``, ``default_variant``): benchmarking-gnns the original JSON's ``params``
  (plus gnnbench's ``dense_schedule`` and ``loss``), pitfalls gnn-benchmark's ``train.conf.yaml`` keys and the
  per-model ``learning_rate`` / ``weight_decay``, fair-comparison Errica's training keys.

* A model from outside the package (variant ``plugin``, :mod:`gnnbench.models.plugins`): its constructor's
  arguments (any value, but a number given to one of the common sizes :data:`PLUGIN_SIZES` — ``hidden_channels``,
  ``num_layers``, ``heads`` ... — must be at least 1; any key where the constructor takes ``**kwargs``) and
  gnnbench's keys of its kind (:func:`plugin_types`); an unknown key's error lists the constructor's arguments.

A run config of protocol P for a model of variant V may hold exactly the keys of :func:`protocol_types`. A preset
of P contributes all its keys; a preset of another protocol only V's architecture keys, the training keys coming
from P's defaults, then the suite's ``set`` (:func:`gnnbench.config.presets.run_config`). The originals' scripts
have no defaults (a missing key is a KeyError); gnnbench checks presence per architecture (``required`` on each
model class) and types here, so a typo or a wrong type is reported with the key's name instead of failing deep
inside training.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from typing import Any

from gnnbench.errors import ConfigError
from gnnbench.models.plugins import ANY, unknown_key_hint
from gnnbench.models.registry import is_plugin, resolve
from gnnbench.papers import ARCHITECTURE_KEYS, DWIVEDI2020, DWIVEDI2020_PARAMS, MODEL_KEYS, PLUGIN, TRAINING_KEYS

NET_KEYS: dict[str, type] = ARCHITECTURE_KEYS[DWIVEDI2020]
TRAIN_KEYS: dict[str, type] = DWIVEDI2020_PARAMS  # benchmarking-gnns' training keys every run needs
# the keys of a benchmarking-gnns run config of the benchmark's own zoo (the default of :func:`coerce`)
KEY_TYPES: dict[str, type] = {**MODEL_KEYS, **NET_KEYS, **TRAINING_KEYS[DWIVEDI2020]}


class KeyTypes(dict):
    """Key → type, for a model whose keys :func:`coerce` lists its own way: ``hint`` ends an unknown-key error (what
    the model takes instead), ``open`` accepts any key (a constructor with ``**kwargs``) as :data:`ANY`."""

    hint: str = ""
    open: bool = False


def plugin_types(config: Mapping, training_keys: Mapping[str, type | tuple],
                 default_variant: str | None = None) -> KeyTypes:
    """The keys of a run config naming a model from outside the package (:mod:`gnnbench.models.plugins`): model
    and variant, ``training_keys``, gnnbench's own keys of its kind (typed) and its constructor's arguments (any
    value; any key at all where the constructor takes ``**kwargs``)."""
    v = resolve(config, default_variant) if default_variant else resolve(config)
    types = KeyTypes({**MODEL_KEYS, **training_keys, **v.architecture_keys})
    types.hint, types.open = unknown_key_hint(v), v.sig.open
    return types


def protocol_types(protocol, config: Mapping | None = None) -> dict[str, type | tuple]:
    """The keys a run config of ``protocol`` may hold for the model ``config`` names: model and variant, the
    protocol's training keys, the variant's architecture keys (the protocol's own zoo where ``config`` names no
    variant; a plugin's: :func:`plugin_types`). ``protocol``: an object with ``training_keys`` and
    ``default_variant`` (a protocol object), or the key of the paper whose protocol it is (its tables in
    :mod:`gnnbench.papers`: what a training job below the protocol objects names)."""
    if isinstance(protocol, str):
        training_keys, default_variant = TRAINING_KEYS[protocol], protocol
    else:
        training_keys, default_variant = protocol.training_keys, protocol.default_variant
    if config and is_plugin(config):
        return plugin_types(config, training_keys, default_variant)
    variant = (config or {}).get("variant") or default_variant
    if variant not in ARCHITECTURE_KEYS:
        raise ConfigError(f"variant: unknown variant {variant!r}; choose one of {', '.join(ARCHITECTURE_KEYS)}")
    return {**MODEL_KEYS, **training_keys, **ARCHITECTURE_KEYS[variant]}


CHOICES = {"dense_schedule": ("minibatch", "original"),
           "loss": ("cross_entropy", "weighted_cross_entropy", "binary_cross_entropy", "l1", "link_bce",
                    "multitask_mse"),
           "aggregator": ("mean", "maxpool", "meanpool"),
           "prop_type": ("vanilla", "smoothed"), "early_stopping_criterion": ("gnnbench", "gat_tol"),
           "optimizer": ("Adam", "SGD"), "scheduler": ("none", "step", "ecc_milestones"),
           "early_stopping": ("accuracy", "loss"), "aggregation": ("sum", "mean", "add", "max"),
           "normalization": ("None", "LayerNorm", "BatchNorm")}

_POSITIVE = {"hidden_dim", "out_dim", "epochs", "batch_size", "pos_enc_dim", "n_heads", "kernel", "hidden_size",
             "num_kernels", "r", "agg_transform_size", "num_epochs", "early_stopping_tolerance", "num_training_runs",
             "patience", "num_layers", "dim_embedding", "embedding_dim", "dense_dim", "gnn_dim_hidden",
             "dim_embedding_MLP", "scheduler_step_size", "in_channels", "edge_dim"}
# A plugin's constructor arguments are the model's to check, except these common sizes (PyTorch Geometric's names and
# the zoos'): at 0 a model has no width, heads or layers, yet builds, trains and scores chance level without an error.
PLUGIN_SIZES = {"hidden_channels", "out_channels", "num_layers", "heads", "num_heads", "n_heads", "hidden_dim",
                "hidden_size", "embedding_dim"}
_FRACTION = {"in_feat_dropout", "dropout", "input_dropout_prob", "coefficient_dropout_prob", "dropout_prob",
             "return_prob", "dropout_final"}
# Numbers whose range is narrower than "not negative" (every published preset lies inside these ranges):
# learning rates and time limits are positive; ReduceLROnPlateau's factor lies in (0, 1) (torch refuses >= 1,
# and 0 would drop the rate to min_lr at once); a step decay multiplies by a gamma in (0, 1]; a patience counts
# epochs (0: reduce after every epoch without improvement).
_POSITIVE_REAL = {"init_lr", "learning_rate", "max_time", "time_limit_hours", "hidden_dim_multiplier"}
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


def coerce(key: str, value: Any, where: str, types: Mapping[str, type | tuple] | None = None) -> Any:
    """Check (and, from strings such as ``--set`` values or YAML's ``1e-5``, convert) one config value (``types``:
    the keys allowed, default :data:`KEY_TYPES`)."""
    types = KEY_TYPES if types is None else types
    if key not in types and not getattr(types, "open", False):
        close = difflib.get_close_matches(key, types, n=2, cutoff=0.7)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        listing = getattr(types, "hint", "") or "`gnnbench presets` lists the published configs and their keys"
        raise ConfigError(f"{where}: unknown config key {key!r}{hint}; {listing}")
    expected = types.get(key, ANY)
    if expected is ANY:  # a plugin's constructor argument: its value is the model's to check (sizes excepted)
        if key in PLUGIN_SIZES and isinstance(value, (int, float)) and not isinstance(value, bool) and value < 1:
            raise ConfigError(f"{where}: {key} must be at least 1, got {value!r}; fix the value")
        return value
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
    if isinstance(value, list) and expected != list[str] and not (value and all(v >= 1 for v in value)):
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
    if expected == list[str]:  # names (platonov2023's input_features): [a, b] or a,b on the command line
        if isinstance(value, str):
            value = [v.strip() for v in value.strip().strip("[]").split(",")]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise TypeError
        return list(value)
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
    if expected == list[str]:
        return "a list of names"
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string",
            list: "a list of integers"}[expected]


def coerce_all(values: dict, where: str, types: Mapping[str, type | tuple] | None = None) -> dict:
    """Every value checked; without ``types``, benchmarking-gnns' keys plus the architecture keys of the variant the
    values name (a benchmarking-gnns run of another paper's model)."""
    if types is None:
        variant = values.get("variant")
        if variant == PLUGIN or is_plugin(values):  # a benchmarking-gnns run of a model from outside the package
            types = plugin_types(values, TRAINING_KEYS[DWIVEDI2020], DWIVEDI2020)
        else:
            types = {**KEY_TYPES, **ARCHITECTURE_KEYS[variant]} if variant in ARCHITECTURE_KEYS else KEY_TYPES
    return {k: coerce(k, v, f"{where}.{k}" if where else k, types) for k, v in values.items()}
