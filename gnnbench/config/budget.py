"""Automatic parameter budgets: the hidden width whose trainable-parameter count is closest to a budget.

The benchmark compares models at fixed budgets (100k, 500k parameters) by hand-tuning each config's
``hidden_dim``. :func:`fit_budget` does it automatically: starting from a base config (by default the
model's published config for the dataset, see :func:`base_preset`), it sets ``L`` and searches the hidden
width whose count — built exactly like ``gnnbench params`` — is closest to the budget (ties: the smaller
width). Width constraints follow the published configs: ``out_dim`` = ``hidden_dim`` for every model that
has it, except GAT, whose ``hidden_dim`` is the per-head width and ``out_dim`` = ``hidden_dim · n_heads``.

Some counts move in coarse steps: one unit of GAT's per-head width adds 8 channels to every layer, and
RingGNN's coefficient tensors grow with 45 · width². When the best tied width is more than
``TOLERANCE`` (2%) from the budget and the model reads ``out_dim`` (the last layer's width, a separate key of
the original configs, which the original's layers accept: the residual of a layer whose input and output
widths differ switches off), a second search fine-tunes ``out_dim`` around the tied value. Models without
such a key (RingGNN, 3WLGNN; GIN and MLP, which ignore ``out_dim``; GatedGCN on node and multitask tasks)
keep the closest width, which can then be more than 2% away; ``Fit.relative_error`` says by how much.

A model from outside the package (:mod:`gnnbench.models.plugins`) is fitted by :func:`fit_width`: one named
constructor argument (default ``hidden_channels``) is set to the largest value whose count stays within the budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from gnnbench.config.presets import DEFAULT_PROTOCOL, all_presets, preset_protocol, run_config
from gnnbench.data.meta import DatasetMeta
from gnnbench.errors import ConfigError

TOLERANCE = 0.02
MIN_WIDTH = 4  # below it the benchmark's MLPReadout (widths d/2, d/4) has empty layers
MAX_WIDTH = 1 << 14


@dataclass(frozen=True)
class Fit:
    """The result of a fit: the width found (``hidden_dim``; a plugin's width argument), the tuned ``out_dim``
    (None where not tuned), the parameter count, the fitted config and the budget."""

    hidden_dim: int
    out_dim: int | None
    total_params: int
    config: dict
    budget: int = 0

    @property
    def relative_error(self) -> float:
        """|count − budget| / budget."""
        return abs(self.total_params - self.budget) / self.budget


def base_preset(dataset: str, model: str) -> str:
    """The published config a fit starts from: the model's config for ``dataset`` (else for any dataset),
    preferring the plain 100k/40k budget over PE, L8 and edge-analysis variants."""
    presets = {n: p for n, p in all_presets().items() if preset_protocol(p) == DEFAULT_PROTOCOL}
    same_model = [n for n, p in presets.items() if p["model"] == model]
    if not same_model:
        raise ConfigError(f"fit-budget: no published config uses model {model!r}; models: "
                          f"{', '.join(sorted({p['model'] for p in presets.values()}))}")
    on_dataset = [n for n in same_model if presets[n]["dataset"] == dataset] or same_model

    def rank(name: str) -> tuple:
        return ("_PE" in name, "L8" in name, any(v in name for v in ("edgefeat", "edgereprfeat", "isotropic")),
                "100k" not in name, name)

    return min(on_dataset, key=rank)


def _with_width(config: dict, width: int) -> dict:
    out = {**config, "hidden_dim": width}
    if "out_dim" in config:
        out["out_dim"] = width * config["n_heads"] if config["model"] == "GAT" else width
    return out


def fit_budget(config: dict, meta: DatasetMeta, budget: int, layers: int | None = None) -> Fit:
    """Hidden width (and out_dim) of ``config`` whose parameter count is closest to ``budget``."""
    from gnnbench.models.registry import build_model, count_parameters

    if budget < 1:
        raise ConfigError(f"fit-budget: budget must be a positive number of parameters, got {budget}")
    if layers is not None:
        config = {**config, "L": layers}
    cache: dict[int, int] = {}

    def count(width: int) -> int:
        if width not in cache:
            cache[width] = count_parameters(build_model(_with_width(config, width), meta))
        return cache[width]

    # exponential then binary search for the smallest width reaching the budget (counts grow with the width)
    high = MIN_WIDTH
    while count(high) < budget and high < MAX_WIDTH:
        high *= 2
    low, high = _bracket(count, max(high // 2, MIN_WIDTH), high, budget)
    best = min((low, high), key=lambda w: (abs(count(w) - budget), w))
    fitted = _with_width(config, best)
    total = count(best)
    if abs(total - budget) > TOLERANCE * budget and "out_dim" in fitted:
        fitted, total = _refine_out_dim(fitted, meta, budget, total)
    return Fit(best, fitted.get("out_dim"), total, fitted, budget)


def _bracket(count, low: int, high: int, budget: int) -> tuple[int, int]:
    """Binary search on a count that grows with its argument: adjacent (low, high) around the budget."""
    while high - low > 1:
        mid = (low + high) // 2
        if count(mid) >= budget:
            high = mid
        else:
            low = mid
    return low, high


def _refine_out_dim(config: dict, meta: DatasetMeta, budget: int, total: int) -> tuple[dict, int]:
    """Closest count over ``out_dim`` (width fixed), searched within a factor of two of the tied value."""
    from gnnbench.models.registry import build_model, count_parameters

    tied = config["out_dim"]

    def count(out_dim: int) -> int:
        return count_parameters(build_model({**config, "out_dim": out_dim}, meta))

    if count(tied + 1) == total:  # the model ignores out_dim here
        return config, total
    low, high = max(MIN_WIDTH, tied // 2), 2 * tied
    if count(high) < budget or count(low) > budget:
        return config, total
    low, high = _bracket(count, low, high, budget)
    best = min((tied, low, high), key=lambda o: (abs((total if o == tied else count(o)) - budget), o != tied))
    return {**config, "out_dim": best}, total if best == tied else count(best)


def fit_width(config: dict, meta: DatasetMeta, budget: int, width: str | None = None,
              default_variant: str | None = None) -> Fit:
    """The largest value of a plugin's width argument (``width``, default ``hidden_channels``) whose trainable-
    parameter count — the model as it trains, encoders and head included — is at most ``budget``; the next value
    up exceeds it. An argument that does not change the count, or a budget below the count at the smallest width, is
    a one-line error. ``Fit.hidden_dim`` is the fitted value."""
    from gnnbench.models.plugins import PluginError, default_width, describe_arguments
    from gnnbench.models.registry import DEFAULT_VARIANT, PLUGIN, num_parameters, resolve

    default_variant = default_variant or DEFAULT_VARIANT
    if budget < 1:
        raise ConfigError(f"fit-budget: budget must be a positive number of parameters, got {budget}")
    v = resolve(config, default_variant)
    if v.variant != PLUGIN:
        raise ConfigError(f"width: model {v.family} is one of the zoos' networks, sized by hidden_dim (fit_budget)")
    width = width or default_width(v)
    if width is None:
        raise PluginError(f"{describe_arguments(v)} has no hidden_channels argument; name the constructor argument "
                          "that sets the model's width (width: ...)", "width")
    if width not in v.sig.arguments and not v.sig.open:
        raise PluginError(f"{width!r} is not an argument of {describe_arguments(v)}; name the one that sets the "
                          "model's width", "width")
    cache: dict[int, int] = {}

    def count(value: int) -> int:
        if value not in cache:
            cache[value] = num_parameters({**config, width: value}, meta, default_variant=default_variant)
        return cache[value]

    if count(MIN_WIDTH) == count(2 * MIN_WIDTH):
        raise PluginError(f"{width} does not change the parameter count of {v.family} ({count(MIN_WIDTH)} "
                          f"parameters at {width}={MIN_WIDTH} and at {2 * MIN_WIDTH}); name the constructor argument "
                          "that sets the model's width", "width")
    if count(MIN_WIDTH) > budget:
        raise PluginError(f"{v.family} has {count(MIN_WIDTH)} parameters already at {width}={MIN_WIDTH}, more than "
                          f"the budget of {budget}; raise the budget or shrink the model's other arguments", "budget")
    low, high = MIN_WIDTH, 2 * MIN_WIDTH  # count(low) <= budget; grow high until it exceeds the budget
    while count(high) <= budget and high < MAX_WIDTH:
        low, high = high, 2 * high
    while high - low > 1:  # counts grow with the width: the largest value within the budget
        mid = (low + high) // 2
        low, high = (mid, high) if count(mid) <= budget else (low, mid)
    return Fit(low, None, count(low), {**config, width: low}, budget)


def fit_preset(dataset: str, model: str, budget: int, layers: int | None, meta: DatasetMeta,
               preset: str | None = None, overrides: dict | None = None) -> Fit:
    """``gnnbench fit-budget``: :func:`fit_budget` of ``preset`` (default: :func:`base_preset` of the dataset and
    model) with ``overrides``; a preset of another model is a ConfigError. A model of your own (a file, module or
    class path) without a preset is fitted by :func:`fit_width` on ``overrides`` (``width`` names its width
    argument), as a suite's ``budget`` fits it."""
    from gnnbench.models.plugins import is_plugin_spec

    if is_plugin_spec(model) and preset is None:  # a model of your own: its width argument, at most the budget
        overrides = dict(overrides or {})
        if layers is not None:
            raise ConfigError("fit-budget: --layers sets the zoo's L; give a model of your own its layer count as a "
                              "constructor argument (--set num_layers=4)")
        width = overrides.pop("width", None)
        return fit_width({**overrides, "model": model}, meta, budget, width)
    name = preset or base_preset(dataset, model)
    config = run_config(name, overrides or {}, where="fit-budget")
    if config["model"] != model:
        raise ConfigError(f"fit-budget: preset {name} is a {config['model']} config, not {model}")
    return fit_budget(config, meta, budget, layers)
