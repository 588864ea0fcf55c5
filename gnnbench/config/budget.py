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

Widths run from ``MIN_WIDTH`` (4) to ``MAX_WIDTH`` (16,384): a budget below the smallest model of the config or
beyond the largest is refused in one line naming that model's count. Every count builds the model (a plugin's: its
constructor and a dry forward), so the search builds few. A count is almost always a quadratic of the width (width ×
width weight matrices; biases, input and output layers linear in it): the quadratic through the counts at widths 4, 8
and 16 predicts the width to build first, and where the count there differs from the prediction, the quadratic
through the three counts nearest it predicts again. From there the search widens in doubling steps until it knows a
width on each side of the budget, then halves the gap. As counts grow with the width, the result is the one a search
over every width gives; a fit builds about 5 models where a doubling-and-halving search from width 4 builds 10 to 18.
``MAX_WIDTH``'s count is taken from the quadratic once the count at width 64 confirms it, not built: a model that
wide takes gigabytes and minutes to build.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from gnnbench.config.presets import all_presets, preset_protocol, run_config
from gnnbench.data.meta import DatasetMeta
from gnnbench.errors import ConfigError
from gnnbench.models.build import build_model, count_parameters, num_parameters
from gnnbench.models.plugins import PluginError, default_width, describe_arguments, is_plugin_spec
from gnnbench.models.registry import DEFAULT_VARIANT, resolve
from gnnbench.papers import DEFAULT_PROTOCOL, PLUGIN

TOLERANCE = 0.02
MIN_WIDTH = 4  # below it the benchmark's MLPReadout (widths d/2, d/4) has empty layers
MAX_WIDTH = 1 << 14
FIT_WIDTHS = (MIN_WIDTH, 2 * MIN_WIDTH, 4 * MIN_WIDTH)  # their counts give the quadratic that predicts the others
CHECK_WIDTH = 16 * MIN_WIDTH  # confirms the quadratic before MAX_WIDTH's count is taken from it
REFITS = 4  # predictions of the width to build, each from the counts nearest the last

log = logging.getLogger(__name__)


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
    """Hidden width (and out_dim) of ``config`` whose parameter count is closest to ``budget``. A budget below the
    count at ``MIN_WIDTH`` or above the count at ``MAX_WIDTH`` is a one-line ConfigError naming that count."""
    if budget < 1:
        raise ConfigError(f"fit-budget: budget must be a positive number of parameters, got {budget}")
    if layers is not None:
        if isinstance(layers, bool) or not isinstance(layers, int) or layers < 1:
            raise ConfigError(f"fit-budget: layers (L) must be an integer of at least 1, got {layers!r}")
        # the benchmark's L; num_layers in a zoo that names its depth so (platonov2023)
        depth = "L" if "L" in resolve(config).architecture_keys else "num_layers"
        config = {**config, depth: layers}
    model = config["model"]
    cache: dict[int, int] = {}

    def count(width: int) -> int:
        if width not in cache:
            cache[width] = count_parameters(build_model(_with_width(config, width), meta))
        return cache[width]

    if count(MIN_WIDTH) > budget:  # is the budget below the smallest model the fit can give?
        smallest = _with_width(config, MIN_WIDTH)
        if "out_dim" in smallest:  # the narrowest out_dim _refine_out_dim tries
            smallest["out_dim"] = max(MIN_WIDTH, smallest["out_dim"] // 2)
        least = count_parameters(build_model(smallest, meta)) if "out_dim" in smallest else count(MIN_WIDTH)
        if least > budget:
            at = ", ".join(f"{key}={smallest[key]}" for key in ("hidden_dim", "out_dim") if key in smallest)
            raise ConfigError(f"fit-budget: {model} has {least} parameters already at {at} (its smallest widths), "
                              f"more than the budget of {budget}; raise the budget (or lower L)")
    first, top = _smallest_width(count, lambda n: n >= budget)  # the smallest width that reaches the budget
    if first is None:
        raise ConfigError(f"fit-budget: {model} has {top} parameters at hidden_dim={MAX_WIDTH} (the largest width "
                          f"fitted), less than the budget of {budget}; lower the budget (or raise L)")
    best = min((max(first - 1, MIN_WIDTH), first), key=lambda w: (abs(count(w) - budget), w))
    fitted = _with_width(config, best)
    total = count(best)
    if abs(total - budget) > TOLERANCE * budget and "out_dim" in fitted:
        fitted, total = _refine_out_dim(fitted, meta, budget, total)
    # after the fit, so that a refused budget stays one line; says why loading a suite builds models
    log.info("fitted hidden_dim of %s (L=%s) to a budget of %d parameters: %d (%d parameters; %d models built)", model,
             config.get("L", config.get("num_layers")), budget, best, total, len(cache))
    return Fit(best, fitted.get("out_dim"), total, fitted, budget)


def _smallest_width(count: Callable[[int], int], reaches: Callable[[int], bool]) -> tuple[int | None, int | None]:
    """(the smallest width in ``MIN_WIDTH .. MAX_WIDTH`` whose ``count`` ``reaches`` (a test that, counts growing with
    the width, holds from some width on), None) — or (None, the count at ``MAX_WIDTH``) where no width does.

    The first width built is where the quadratic through the counts at :data:`FIT_WIDTHS` reaches the test; where the
    count there differs from the quadratic's, the quadratic through the three counts nearest to it gives the next
    (at most ``REFITS`` times). From the last one the search widens (steps doubling) until a width on each side of
    the answer is known, then halves; every count known so far narrows it."""
    known: dict[int, int] = {}

    def at(width: int) -> int:
        if width not in known:
            known[width] = count(width)
        return known[width]

    def bracket() -> tuple[int, int]:  # the widest width known to fail, the narrowest known to pass
        return (max((w for w, n in known.items() if not reaches(n)), default=MIN_WIDTH - 1),
                min((w for w, n in known.items() if reaches(n)), default=MAX_WIDTH + 1))

    predict = _quadratic([(w, at(w)) for w in FIT_WIDTHS])
    if not reaches(predict(MAX_WIDTH)) and predict(CHECK_WIDTH) == at(CHECK_WIDTH):
        return None, round(predict(MAX_WIDTH))  # the counts follow the quadratic: it gives MAX_WIDTH's count
    passed = False  # whether the last width built passed the test
    for _ in range(REFITS):
        low, high = bracket()
        if high - low <= 1 or not reaches(predict(MAX_WIDTH)):
            break
        while high - low > 1:  # bisect on the prediction, within what the counts tell
            mid = (low + high) // 2
            low, high = (low, mid) if reaches(predict(mid)) else (mid, high)
        guess = min(high, MAX_WIDTH)
        passed = reaches(at(guess))
        if at(guess) == predict(guess):  # the prediction holds here: its neighbour decides
            break
        predict = _quadratic([(w, known[w]) for w in sorted(known, key=lambda w: abs(w - guess))[:3]])
    low, high = bracket()
    if passed:  # widen downwards from the narrowest width known to pass until a width fails
        step = 1
        while high - step > low and reaches(at(high - step)):
            high, step = high - step, 2 * step
        low = max(low, high - step)
    else:  # widen upwards from the widest width known to fail until a width passes
        step = 1
        while low + step < high and not reaches(at(low + step)):
            low, step = low + step, 2 * step
        high = min(high, low + step)
    while high - low > 1:  # count(low) fails the test, count(high) passes it
        mid = (low + high) // 2
        low, high = (low, mid) if reaches(at(mid)) else (mid, high)
    return (high, None) if high <= MAX_WIDTH else (None, at(MAX_WIDTH))


def _quadratic(points: list[tuple[int, int]]) -> Callable[[int], Fraction]:
    """The quadratic through three (width, count) points, evaluated exactly (Lagrange's form)."""

    def predict(width: int) -> Fraction:
        total = Fraction(0)
        for i, (xi, yi) in enumerate(points):
            term = Fraction(yi)
            for j, (xj, _) in enumerate(points):
                if j != i:
                    term *= Fraction(width - xj, xi - xj)
            total += term
        return total

    return predict


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
    up exceeds it. An argument that does not change the count, a value that is not an argument's name, or a budget
    below the count at ``MIN_WIDTH`` or not below the count at ``MAX_WIDTH`` is a one-line error. ``Fit.hidden_dim``
    is the fitted value."""
    default_variant = default_variant or DEFAULT_VARIANT
    if budget < 1:
        raise ConfigError(f"fit-budget: budget must be a positive number of parameters, got {budget}")
    v = resolve(config, default_variant)
    if v.variant != PLUGIN:
        raise ConfigError(f"width: model {v.family} is one of the zoos' networks, sized by hidden_dim (fit_budget)")
    if width is not None and (not isinstance(width, str) or not width):
        raise PluginError(f"got {width!r}, but width names the constructor argument to fit (default "
                          f"hidden_channels); give one of the arguments of {describe_arguments(v)}", "width")
    width = width if width is not None else default_width(v)
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
    over, top = _smallest_width(count, lambda n: n > budget)  # the smallest width over the budget
    if over is None:
        raise PluginError(f"{v.family} has {top} parameters at {width}={MAX_WIDTH} (the largest width fitted), "
                          f"within the budget of {budget}; lower the budget or grow the model's other arguments",
                          "budget")
    fit = Fit(over - 1, None, count(over - 1), {**config, width: over - 1}, budget)
    log.info("fitted %s of %s to a budget of %d parameters: %d (%d parameters; %d models built)", width, v.family,
             budget, fit.hidden_dim, fit.total_params, len(cache))
    return fit


def fit_preset(dataset: str, model: str, budget: int, layers: int | None, meta: DatasetMeta,
               preset: str | None = None, overrides: dict | None = None) -> Fit:
    """``gnnbench fit-budget``: :func:`fit_budget` of ``preset`` (default: :func:`base_preset` of the dataset and
    model) with ``overrides``; a preset of another model is a ConfigError. A model of your own (a file, module or
    class path) without a preset is fitted by :func:`fit_width` on ``overrides`` (checked as ``--set`` values;
    ``width`` names its width argument), as a suite's ``budget`` fits it."""
    if is_plugin_spec(model) and preset is None:  # a model of your own: its width argument, at most the budget
        overrides = dict(overrides or {})
        if layers is not None:
            raise ConfigError("fit-budget: --layers sets the zoo's L; give a model of your own its layer count as a "
                              "constructor argument (--set num_layers=4)")
        width = overrides.pop("width", None)
        return fit_width(run_config(None, {**overrides, "model": model}, where="--set"), meta, budget, width)
    zoo = resolve({"model": model, **{k: v for k, v in (overrides or {}).items() if k == "variant"}})
    if preset is None and zoo.variant != DEFAULT_VARIANT and "hidden_dim" in zoo.architecture_keys:
        # a zoo without published configs of the benchmark (platonov2023): its defaults and overrides, hidden_dim fitted
        config = run_config(None, {**(overrides or {}), "model": model}, where="--set")
        if getattr(zoo.load(), "attention", False) and config.get("num_heads", 8) > 1:
            raise ConfigError(f"fit-budget: {model} ({zoo.variant}) splits hidden_dim into num_heads heads, so only "
                              "multiples of num_heads are widths; set hidden_dim yourself, or fit with --set "
                              "num_heads=1")
        return fit_budget(config, meta, budget, layers)
    name = preset or base_preset(dataset, model)
    config = run_config(name, overrides or {}, where="fit-budget")
    if config["model"] != model:
        raise ConfigError(f"fit-budget: preset {name} is a {config['model']} config, not {model}")
    return fit_budget(config, meta, budget, layers)
