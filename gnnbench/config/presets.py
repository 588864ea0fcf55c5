"""The published configs as data (``gnnbench/config/presets/*.yaml``, shipped inside the package), addressable by
their original names.

A benchmarking-gnns preset holds the original JSON's ``net_params`` and ``params`` groups, the model name, the
parameter total the original prints, how the original scripts ran it (``runs``: CLI overrides and seeds) and what
a script fixes in code for it (``script_params``: WikiCS GAT's class-weighted loss). A
preset of another protocol says so (``protocol: pitfalls``) and holds its model's ``params`` under that protocol's
keys (:mod:`gnnbench.config.keys`). A *run config* is a preset flattened into one dict, with overrides applied
and every value checked against the keys of its protocol.

Presets are looked up in the directory given explicitly, else ``$GNNBENCH_PRESETS``, else the package's own
``presets`` folder (so ``pip install .`` and wheels work from any directory).
"""

from __future__ import annotations

import difflib
import os
from functools import cache
from pathlib import Path
from typing import NamedTuple

from gnnbench.config.keys import coerce_all, protocol_types
from gnnbench.config.yamlfile import load_yaml
from gnnbench.errors import ConfigError
from gnnbench.models.plugins import located
from gnnbench.models.registry import resolve
from gnnbench.papers import (
    DEFAULT_PROTOCOL,  # a preset without `protocol:` is of this protocol
    FOREIGN_TRAINING_DEFAULTS,
    SELECTS_MODELS,
    TRAINING_KEYS,
    protocol_paper,
)

PACKAGE_PRESETS = Path(__file__).resolve().parent / "presets"


def presets_dir(explicit: str | os.PathLike | None = None) -> Path:
    """The folder presets are read from: ``explicit``, else ``$GNNBENCH_PRESETS``, else the package's own."""
    if explicit is not None:
        return Path(explicit)
    if os.environ.get("GNNBENCH_PRESETS"):
        return Path(os.environ["GNNBENCH_PRESETS"])
    return PACKAGE_PRESETS


@cache
def _load(directory: Path) -> dict[str, dict]:
    if not directory.is_dir():
        raise ConfigError(f"preset directory {directory} does not exist; unset GNNBENCH_PRESETS (the package ships "
                          "its presets) or point it at a folder of preset YAML files")
    presets: dict[str, dict] = {}
    for path in sorted(directory.glob("*.yaml")):
        content = load_yaml(path, "preset file") or {}
        for name, preset in content.items():
            if name in presets:
                raise ConfigError(f"preset {name} is defined twice (second time in {path}); remove one")
            presets[name] = preset
    return presets


def all_presets(directory: str | os.PathLike | None = None) -> dict[str, dict]:
    """Every preset of the folder (:func:`presets_dir`), name -> entry, read once per folder; a name defined
    twice is a ConfigError."""
    return _load(presets_dir(directory).resolve())


def get_preset(name: str, directory: str | os.PathLike | None = None, where: str = "preset") -> dict:
    """The preset called ``name``; an unknown name is a one-line ConfigError at ``where`` suggesting close
    names."""
    presets = all_presets(directory)
    if name not in presets:
        close = difflib.get_close_matches(name, presets, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `gnnbench presets` lists them"
        raise ConfigError(f"{where}: unknown preset {name!r}{hint}")
    return presets[name]


def preset_protocol(entry: dict) -> str:
    """The protocol a preset belongs to (its ``protocol:``, by default benchmarking-gnns)."""
    return entry.get("protocol", DEFAULT_PROTOCOL)


class _Protocol(NamedTuple):
    """What a run config needs of a protocol, read from :mod:`gnnbench.papers` (the protocol objects of
    :mod:`gnnbench.protocols` hand on the same): its name, its own zoo, its training keys, the training it gives a
    model of another zoo, and whether it searches a preset's grid."""

    name: str
    default_variant: str
    training_keys: dict
    training_defaults: dict
    selects_models: bool


def _protocol(name: str, where: str = "protocol") -> _Protocol:
    paper = protocol_paper(name, where)
    return _Protocol(name, paper, TRAINING_KEYS[paper], FOREIGN_TRAINING_DEFAULTS[paper], paper in SELECTS_MODELS)


def run_config(preset: str | None, overrides: dict | None = None, *, directory=None, where: str = "",
               protocol: str | None = None, preset_where: str | None = None) -> dict:
    """Flat, checked run config of protocol ``protocol`` (default: the preset's, else benchmarking-gnns): the
    preset's values updated by ``overrides`` (module :mod:`gnnbench.config.keys` says which keys belong to whom).

    A preset of the running protocol contributes every value it holds (``net_params``, ``params``,
    ``script_params``). A preset of another protocol contributes its model and only its variant's architecture keys
    (``variant`` is written into the config); the training keys come from the running protocol's
    ``training_defaults``, then ``overrides``. A model of another paper's zoo named without a preset (``model`` and
    ``variant`` in ``overrides``, or a family only another zoo has) gets the same training defaults, and so does a
    model from outside the package (variant ``plugin``: ``model`` a class path, a file or an entry point,
    :mod:`gnnbench.models.plugins`; its constructor's arguments are overrides like any key). A grid preset
    (fair-comparison) under a protocol without model selection: every architecture dimension of its grid must be
    fixed by ``overrides``. ``where`` names the overrides in errors, ``preset_where`` (default: ``where``) the
    preset."""
    preset_where = preset_where or where or "preset"
    overrides = dict(overrides or {})
    entry = get_preset(preset, directory, preset_where) if preset is not None else None
    running = _protocol(protocol or (preset_protocol(entry) if entry is not None else DEFAULT_PROTOCOL))
    config: dict = {}
    foreign = False
    if entry is not None:
        source = _protocol(preset_protocol(entry), where=f"preset {preset}.protocol")
        variant = entry.get("variant") or source.default_variant
        foreign = source.name != running.name
        model = {"model": entry["model"], **({"variant": variant} if variant != running.default_variant else {})}
        values = {**(entry.get("net_params") or {}), **(entry.get("params") or {}),
                  **(entry.get("script_params") or {})}
        if foreign:
            architecture = resolve(model, running.default_variant).architecture_keys
            values = {k: v for k, v in values.items() if k in architecture}
            open_dims = [k for k in (entry.get("grid") or {}) if k in architecture and k not in overrides]
            if open_dims and not running.selects_models:
                raise ConfigError(f"{preset_where}: preset {preset} is a grid of protocol {source.name}; protocol "
                                  f"{running.name} trains one configuration: fix {', '.join(open_dims)} with set")
            config.update(running.training_defaults)
        config.update(model)
        config.update(coerce_all(values, f"preset {preset}", protocol_types(running, model)))
    if "model" in overrides or "variant" in overrides:
        config = {k: v for k, v in config.items() if k != "variant" or "variant" not in overrides}
    merged = {**config, **overrides}
    if "model" not in merged:
        raise ConfigError(f"{where or 'config'}: no model given; name a preset or set model (e.g. GCN)")
    try:
        variant = resolve(merged, running.default_variant).variant
    except ConfigError as exc:
        raise located(where or preset_where, exc) from None
    if variant != running.default_variant:
        if not foreign:
            config = {**running.training_defaults, **config}
        config["variant"] = variant
    config.update(coerce_all(overrides, where, protocol_types(running, {**config, "model": merged["model"],
                                                                        "variant": variant})))
    if config.get("variant") == running.default_variant:
        del config["variant"]
    return config
