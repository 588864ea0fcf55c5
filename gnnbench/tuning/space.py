"""Search spaces: one distribution per config key, parsed from a suite or made for any model config.

A search space maps config keys to distributions (:class:`Dist`). The suite syntax (:func:`parse_space`) is one
mapping per key with one kind and its range:

    learning_rate: {log_uniform: [1.0e-4, 1.0e-1]}   # log u ~ U(log low, log high): low > 0
    dropout: {uniform: [0.0, 0.8]}                   # u ~ U(low, high); step: s for the grid low + k·s
    hidden_dim: {int: [16, 256], log: true}          # integers in [low, high], uniform in log scale with log: true;
                                                     # step: s for low + k·s (not with log)
    aggregation: {categorical: [sum, mean]}          # one of the choices (any YAML values, lists too)

A trial's config is the published config with the sampled values put in (:func:`apply`): a space touches only keys
the config has, the protocol's training keys (set by the protocol's defaults when a preset leaves them out) and, for
a model from outside the package, its constructor's arguments (:func:`check_space`).

The default space (:func:`default_space`) of a config under a protocol searches these keys where the config (or the
constructor of a plugin) has them, every range widened to hold the config's value, so that the published config is
a point of its own space (a model without weights, label propagation, has none of them: its default space is
empty):

- learning rate (``init_lr``, ``learning_rate``, ``lr``): log-uniform [1e-4, 1e-1], three decades around the
  1e-3 .. 1e-2 of the zoos' published configs; every study of equal tuning tunes it (Tönshoff et al. 2023, "Where
  Did the Gap Go?"; Luo et al. 2024, "Classic GNNs are Strong Baselines");
- weight decay (``weight_decay``, ``l2``): log-uniform [1e-6, 1e-2], a scale; 1e-6 is practically no decay (a log
  range cannot hold 0, the value of most published configs);
- dropout (every number-valued key whose name has ``dropout``): uniform [0, 0.8]; Luo et al. 2024 find dropout
  consistently beneficial; 0.8 is the largest published value (Shchur et al.'s GCN);
- width (``hidden_dim``, ``hidden_size``, ``hidden_units``, ``hidden_channels``, ``dim_embedding``,
  ``embedding_dim``, ``gnn_dim_hidden``): integers, log-uniform [16, 256] (widths double from one published config
  to the next; 256 bounds one trial's cost on a CPU); [16/h, 256/h] where the zoo's width is per head (the
  benchmark's ``n_heads``, Shchur's ``num_heads`` list); multiples of h in [16, 256] where h heads split the width
  (an int ``num_heads`` or ``heads``: Platonov et al.'s attention models, PyG's GAT);
- layers (``L``, ``num_layers``): integers, uniform [1, 10]; depth is among the keys Luo et al. 2024 tune, and
  one to ten layers spans every zoo's published depths save the benchmark's 16-layer configs (which the widening
  keeps);
- normalisation and residual connections (``batch_norm``, ``layer_norm``, ``residual``: {true, false}; Platonov et
  al.'s ``normalization``: {None, LayerNorm, BatchNorm}): categorical; Luo et al. 2024 find normalisation crucial
  on large graphs and residual connections a large gain, most of all under heterophily.

Left out on purpose: head counts (a width must stay divisible by them), a list of widths (Errica's GIN
``hidden_units``), keys whose values differ by model (``aggregation``, ``readout``) and the training length
(epochs, patience: the protocol's). Name them in a suite's space to search them. A model entry whose width is
fitted to a parameter budget should leave its width out (``exclude``).

Trials that train as one stack. Keys that change the shapes of the parameters — widths, layers, heads, categorical
architecture switches, anything not listed next — are *shape keys*; the learning rate, the weight decay and the
dropout rates are *per-member* keys, which the members of one stack may each have their own of
(:func:`per_member`). Trials with equal :func:`shape_key` can train as one stack (:func:`stacks`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gnnbench.errors import ConfigError
from gnnbench.models.registry import PROPAGATION, is_plugin, model_info, resolve
from gnnbench.papers import MODEL_KEYS, TRAINING_KEYS, protocol_paper

KINDS = ("log_uniform", "uniform", "int", "categorical")
OPTIONS = ("log", "step")  # the keys a distribution may have beside its kind
LR_KEYS = ("init_lr", "learning_rate", "lr")
DECAY_KEYS = ("weight_decay", "l2")
WIDTH_KEYS = ("hidden_dim", "hidden_size", "hidden_units", "hidden_channels", "dim_embedding", "embedding_dim",
              "gnn_dim_hidden")
LAYER_KEYS = ("L", "num_layers")
SWITCHES: dict[str, tuple] = {"residual": (True, False), "batch_norm": (True, False), "layer_norm": (True, False),
                              "normalization": ("None", "LayerNorm", "BatchNorm")}
# the default ranges (module docstring)
LR_RANGE, DECAY_RANGE, DROPOUT_RANGE, WIDTH_RANGE, LAYER_RANGE = (1e-4, 1e-1), (1e-6, 1e-2), (0.0, 0.8), (16, 256), \
    (1, 10)


@dataclass(frozen=True)
class Dist:
    """One key's distribution: ``kind`` log_uniform (``low`` > 0), uniform, int (``log``: uniform in log scale)
    over [``low``, ``high``] on the grid ``low + k·step`` where ``step`` is set, or categorical over ``choices``
    (any JSON values)."""

    kind: str
    low: float | int | None = None
    high: float | int | None = None
    choices: tuple = ()
    log: bool = False
    step: float | int | None = None

    def to_optuna(self):
        """The Optuna distribution (Float-, Int- or CategoricalDistribution); a choice that is no scalar (a list, a
        mapping) is its JSON text there (:meth:`encode`)."""
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

        if self.kind == "categorical":
            return CategoricalDistribution([self.encode(c) for c in self.choices])
        if self.kind == "int":
            return IntDistribution(int(self.low), int(self.high), log=self.log, step=int(self.step or 1))
        return FloatDistribution(float(self.low), float(self.high), log=self.kind == "log_uniform",
                                 step=None if self.step is None else float(self.step))

    def encode(self, value: Any) -> Any:
        """A value as Optuna holds it: a categorical choice that is no scalar as its JSON text, else itself."""
        if self.kind == "categorical" and not _scalar(value):
            return json.dumps(value, sort_keys=True)
        return value

    def decode(self, value: Any) -> Any:
        """The config value of what Optuna returned (:meth:`encode` undone): an int for ``int``, a float for the
        float kinds, the choice itself for ``categorical``."""
        if self.kind == "categorical":
            for choice in self.choices:
                if self.encode(choice) == value and type(self.encode(choice)) is type(value):
                    return choice
            raise ValueError(f"{value!r} is not a choice of {self.choices!r}")
        return int(value) if self.kind == "int" else float(value)

    def contains(self, value: Any) -> bool:
        """Whether ``value`` is a point of the distribution (on its step grid where it has one)."""
        if self.kind == "categorical":
            return any(value == c and type(value) is type(c) for c in self.choices)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not self.low <= value <= self.high:
            return False
        if self.kind == "int" and value != int(value):
            return False
        return self.step is None or math.isclose((value - self.low) / self.step,
                                                 round((value - self.low) / self.step), abs_tol=1e-9)

    def to_spec(self) -> dict:
        """The suite syntax of this distribution (what :func:`parse_space` reads back)."""
        if self.kind == "categorical":
            return {"categorical": list(self.choices)}
        spec: dict = {self.kind: [self.low, self.high]}
        if self.log and self.kind == "int":
            spec["log"] = True
        if self.step is not None:
            spec["step"] = self.step
        return spec


def space_spec(space: Mapping[str, Dist]) -> dict:
    """A whole space in the suite syntax (:meth:`Dist.to_spec` per key, in the space's order): JSON-able, what
    :func:`parse_space` reads back."""
    return {key: dist.to_spec() for key, dist in space.items()}


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---------------------------------------------------------------------------------------------------- the syntax


def parse_space(  # spec on a line of its own: the docs check reads '(' + 'spec' as a citation of notes
        spec: Mapping, where: str) -> dict[str, Dist]:
    """The search space a suite writes (module docstring), key by key in its order; every mistake is a one-line
    ConfigError naming ``where.<key>``, what is wrong and the fix."""
    if not isinstance(spec, Mapping) or not spec:
        raise ConfigError(f"{where}: expected a mapping of config keys to distributions, e.g. "
                          "{learning_rate: {log_uniform: [1.0e-4, 1.0e-1]}}; got " + repr(spec))
    return {str(key): parse_dist(value, f"{where}.{key}") for key, value in spec.items()}


def parse_dist(value: Any, where: str) -> Dist:
    """One key's distribution in the suite syntax (:func:`parse_space`); a mistake is a one-line ConfigError at
    ``where``."""
    example = "e.g. {log_uniform: [1.0e-4, 1.0e-1]}, {uniform: [0.0, 0.8]}, {int: [16, 256], log: true} or " \
              "{categorical: [sum, mean]}"
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected one distribution as a mapping, {example}; got {value!r}")
    kinds = [k for k in value if k in KINDS]
    unknown = [k for k in value if k not in KINDS and k not in OPTIONS]
    if unknown:
        raise ConfigError(f"{where}: unknown distribution {unknown[0]!r}; use one of {', '.join(KINDS)} (with "
                          f"options log, step), {example}")
    if len(kinds) != 1:
        raise ConfigError(f"{where}: expected exactly one of {', '.join(KINDS)}, got "
                          f"{', '.join(kinds) if kinds else 'none'}; {example}")
    kind = kinds[0]
    log, step = value.get("log", False), value.get("step")
    if not isinstance(log, bool):
        raise ConfigError(f"{where}.log: expected true or false, got {log!r}")
    if kind == "categorical":
        choices = value[kind]
        if set(value) - {kind}:
            raise ConfigError(f"{where}: categorical takes no {' or '.join(sorted(set(value) - {kind}))}; drop it")
        if not isinstance(choices, list) or not choices:
            raise ConfigError(f"{where}.categorical: expected a non-empty list of choices, e.g. [sum, mean]; got "
                              f"{choices!r}")
        texts = [json.dumps(c, sort_keys=True) for c in choices]
        dup = next((c for i, c in enumerate(choices) if texts[i] in texts[:i]), None)
        if len(set(texts)) < len(texts):
            raise ConfigError(f"{where}.categorical: choice {dup!r} is listed twice; list each choice once")
        return Dist("categorical", choices=tuple(choices))
    bounds = value[kind]
    if not (isinstance(bounds, list) and len(bounds) == 2 and all(_number(b) for b in bounds)):
        raise ConfigError(f"{where}.{kind}: expected [low, high], two numbers; got {bounds!r}")
    low, high = bounds
    if low >= high:
        raise ConfigError(f"{where}.{kind}: low {low} must be below high {high}; write [low, high] with low < high "
                          "(to fix a value, set it in the model's config instead)")
    if log and kind != "int":
        hint = "log_uniform is already log" if kind == "log_uniform" else "for a log range use log_uniform"
        raise ConfigError(f"{where}.log: only int takes log ({hint}); drop log")
    if (kind == "log_uniform" or log) and low <= 0:
        raise ConfigError(f"{where}.{kind}: a log range needs low > 0, got {low}; use a positive low such as "
                          f"{'1' if kind == 'int' else '1.0e-6'} (or a uniform range to include 0)")
    if kind == "int" and not all(isinstance(b, int) for b in bounds):
        raise ConfigError(f"{where}.int: expected integer bounds, got {bounds!r}; use uniform for real values")
    if step is not None:
        if kind == "log_uniform" or log:
            raise ConfigError(f"{where}.step: a log range takes no step; drop step or use "
                              f"{'int without log' if kind == 'int' else 'uniform'}")
        if not _number(step) or step <= 0 or (kind == "int" and not isinstance(step, int)):
            raise ConfigError(f"{where}.step: expected a positive {'integer' if kind == 'int' else 'number'}, got "
                              f"{step!r}")
        steps = (high - low) / step
        if not math.isclose(steps, round(steps), rel_tol=0, abs_tol=1e-9) or steps < 1:
            raise ConfigError(f"{where}.step: the range [{low}, {high}] is not a whole number of steps {step}; "
                              "make high - low a multiple of step")
    if kind == "int":
        return Dist("int", int(low), int(high), log=log, step=step)
    return Dist(kind, float(low), float(high), step=None if step is None else float(step))


# ---------------------------------------------------------------------------------------------------- keys


def protocol_training_keys(protocol: str) -> dict[str, type]:
    """The training keys of a protocol (:data:`gnnbench.papers.TRAINING_KEYS`); an unknown protocol is a
    ConfigError listing them."""
    return TRAINING_KEYS[protocol_paper(protocol)]


def _plugin_arguments(config: Mapping, protocol: str) -> dict[str, Any] | None:
    """A plugin's constructor arguments with their defaults (None for an argument without one); None for a model
    of the zoos."""
    if not is_plugin(config):
        return None
    v = resolve(config, protocol_paper(protocol))
    return {a: v.sig.defaults.get(a) for a in v.sig.arguments}


def allowed_keys(config: Mapping, protocol: str) -> set[str]:
    """The keys a search space of ``config`` may touch under ``protocol``: the config's own (not ``model`` or
    ``variant``), the protocol's training keys and, for a model from outside the package, its constructor's
    arguments."""
    keys = {k for k in config if k not in MODEL_KEYS} | set(protocol_training_keys(protocol))
    return keys | set(_plugin_arguments(config, protocol) or ())


def check_space(space: Mapping[str, Dist], config: Mapping, protocol: str, where: str) -> None:
    """Refuse (one-line ConfigError at ``where.<key>``) a key the trial configs could not hold
    (:func:`allowed_keys`)."""
    allowed = allowed_keys(config, protocol)
    for key in space:
        if key not in allowed:
            raise ConfigError(f"{where}.{key}: model {config.get('model')} has no key {key!r} under protocol "
                              f"{protocol}; search keys of its config or the protocol's training keys "
                              f"({', '.join(sorted(protocol_training_keys(protocol)))})")


def apply(config: Mapping, params: Mapping[str, Any]) -> dict:
    """A trial's config: ``config`` with the sampled ``params`` put in (a new dict; ``config`` is unchanged)."""
    return {**config, **params}


def per_member(key: str) -> bool:
    """Whether members of one stack may differ in ``key``: learning rate, weight decay and dropout rates (module
    docstring); every other key is a shape key."""
    return key in LR_KEYS or key in DECAY_KEYS or "dropout" in key


def shape_key(config_or_params: Mapping, space: Mapping[str, Dist]) -> str:
    """What trials that can train as one stack share: the JSON of the values of ``space``'s shape keys (those not
    :func:`per_member`) in ``config_or_params`` (a trial's params or its whole config; a key it lacks is null)."""
    return json.dumps({k: config_or_params.get(k) for k in sorted(space) if not per_member(k)}, sort_keys=True,
                      default=str)


def stacks(trials: Sequence[Mapping], space: Mapping[str, Dist]) -> list[list[int]]:
    """The trials (params or configs) that can train as one stack: their indices grouped by :func:`shape_key`,
    groups in the order of their first trial, indices ascending."""
    groups: dict[str, list[int]] = {}
    for i, trial in enumerate(trials):
        groups.setdefault(shape_key(trial, space), []).append(i)
    return list(groups.values())


# ---------------------------------------------------------------------------------------------------- defaults


def default_space(config: Mapping, protocol: str, *, exclude: Iterable[str] = ()) -> dict[str, Dist]:
    """The default search space of a run config (any zoo's model, or a model from outside the package) under
    ``protocol``: the learning rate and weight decay among the protocol's training keys, and the dropout rates,
    widths, layers and normalisation switches the config (a plugin: its constructor) has, with the ranges of the
    module docstring widened to hold the config's values; ``exclude``: keys to leave out (a width fitted to a
    parameter budget)."""
    if config.get("model") is not None and model_info(config, protocol_paper(protocol)).kind == PROPAGATION:
        return {}  # no weights: a learning rate or weight decay would change nothing (label propagation)
    training = protocol_training_keys(protocol)
    values = dict(config)
    plugin = _plugin_arguments(config, protocol)
    if plugin is not None:  # a constructor's argument with a default is a key of the config too
        values = {**{a: d for a, d in plugin.items() if d is not None}, **values}
    exclude = set(exclude)
    space: dict[str, Dist] = {}
    for key in training:
        if key in LR_KEYS:
            space[key] = _log_range(LR_RANGE, values.get(key))
        elif key in DECAY_KEYS:
            space[key] = _log_range(DECAY_RANGE, values.get(key))
    heads = _heads(values)
    for key, value in values.items():
        if key in MODEL_KEYS or key in training or key in space:
            continue
        if "dropout" in key and _number(value) and 0 <= value < 1:
            space[key] = Dist("uniform", min(DROPOUT_RANGE[0], value), max(DROPOUT_RANGE[1], value))
        elif key in WIDTH_KEYS and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            space[key] = _width(value, heads)
        elif key in LAYER_KEYS and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            space[key] = Dist("int", min(LAYER_RANGE[0], value), max(LAYER_RANGE[1], value))
        elif key in SWITCHES and any(value == c and type(value) is type(c) for c in SWITCHES[key]):
            space[key] = Dist("categorical", choices=SWITCHES[key])
    if plugin is not None:  # a plugin's keys: only what the constructor takes
        space = {k: d for k, d in space.items() if k in training or k in plugin}
    return {k: d for k, d in space.items() if k not in exclude}


def _log_range(default: tuple[float, float], value: Any) -> Dist:
    """A log-uniform range holding a positive published ``value``."""
    low, high = default
    if _number(value) and value > 0:
        low, high = min(low, float(value)), max(high, float(value))
    return Dist("log_uniform", low, high)


def _heads(values: Mapping) -> tuple[int, bool]:
    """The head count of a config and whether its width is per head (the benchmark's ``n_heads``, Shchur's
    ``num_heads`` list) rather than split among the heads (an int ``num_heads`` or ``heads``); (1, False) without
    heads."""
    if isinstance(values.get("n_heads"), int) and values["n_heads"] > 1:
        return values["n_heads"], True
    heads = values.get("num_heads")
    if isinstance(heads, list) and heads and isinstance(heads[0], int) and heads[0] > 1:
        return heads[0], True
    for key in ("num_heads", "heads"):
        if isinstance(values.get(key), int) and not isinstance(values[key], bool) and values[key] > 1:
            return values[key], False
    return 1, False


def _width(value: int, heads: tuple[int, bool]) -> Dist:
    """The width range of a published width (module docstring)."""
    h, per_head = heads
    low, high = WIDTH_RANGE
    if per_head:
        return Dist("int", min(max(1, low // h), value), max(high // h, value), log=True)
    if h > 1:  # the heads split the width: multiples of h (a log range takes no step)
        low, high = min(h * -(-low // h), value), max(h * (high // h), value)
        return Dist("int", low, high, step=h)
    return Dist("int", min(low, value), max(high, value), log=True)
