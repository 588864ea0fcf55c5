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

from gnnbench.config.keys import PROTOCOL_KEYS, coerce_all
from gnnbench.config.yamlfile import load_yaml
from gnnbench.errors import ConfigError

PACKAGE_PRESETS = Path(__file__).resolve().parent / "presets"
DEFAULT_PROTOCOL = "benchmarking-gnns"


def presets_dir(explicit: str | os.PathLike | None = None) -> Path:
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
    return _load(presets_dir(directory).resolve())


def get_preset(name: str, directory: str | os.PathLike | None = None, where: str = "preset") -> dict:
    presets = all_presets(directory)
    if name not in presets:
        close = difflib.get_close_matches(name, presets, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `gnnbench presets` lists them"
        raise ConfigError(f"{where}: unknown preset {name!r}{hint}")
    return presets[name]


def preset_protocol(entry: dict) -> str:
    return entry.get("protocol", DEFAULT_PROTOCOL)


def run_config(preset: str | None, overrides: dict | None = None, *, directory=None, where: str = "",
               protocol: str | None = None, preset_where: str | None = None) -> dict:
    """Flat, checked run config: the preset's net_params and params (if any) updated by ``overrides``.

    ``protocol`` (default: the preset's, else benchmarking-gnns) selects the keys values are checked against; a
    preset of another protocol is a ConfigError. ``where`` names the overrides in errors, ``preset_where`` (default:
    ``where``) the preset."""
    config: dict = {}
    preset_where = preset_where or where or "preset"
    entry = get_preset(preset, directory, preset_where) if preset is not None else None
    if entry is not None:
        if protocol is not None and preset_protocol(entry) != protocol:
            raise ConfigError(f"{preset_where}: preset {preset} is a config of protocol {preset_protocol(entry)}"
                              f", not {protocol}; pick a {protocol} preset (`gnnbench presets` lists them)")
        protocol = preset_protocol(entry)
    types = PROTOCOL_KEYS[protocol or DEFAULT_PROTOCOL]
    if entry is not None:
        config.update({"model": entry["model"]})
        config.update(coerce_all(entry.get("net_params") or {}, f"preset {preset}", types))
        config.update(coerce_all(entry.get("params") or {}, f"preset {preset}", types))
        config.update(coerce_all(entry.get("script_params") or {}, f"preset {preset}", types))
    config.update(coerce_all(overrides or {}, where, types))
    if "model" not in config:
        raise ConfigError(f"{where or 'config'}: no model given; name a preset or set model (e.g. GCN)")
    return config
