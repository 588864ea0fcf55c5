"""The benchmark's published configs as data (``config/presets/*.yaml``), addressable by original name.

A preset holds the original JSON's ``net_params`` and ``params`` groups, the model name, the parameter
total the original prints, and how the original scripts ran it (``runs``: CLI overrides and seeds).
A *run config* is a preset flattened into one dict, with overrides applied and every value checked.

Presets are looked up in the directory given explicitly, else ``$GNNBENCH_PRESETS``, else the
``config/presets`` folder of the source checkout gnnbench is installed from (``pip install -e .``).
"""

from __future__ import annotations

import difflib
import os
from functools import cache
from pathlib import Path

import yaml

from gnnbench.config.keys import coerce_all
from gnnbench.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[2]


def presets_dir(explicit: str | os.PathLike | None = None) -> Path:
    if explicit is not None:
        return Path(explicit)
    if os.environ.get("GNNBENCH_PRESETS"):
        return Path(os.environ["GNNBENCH_PRESETS"])
    return REPO_ROOT / "config" / "presets"


@cache
def _load(directory: Path) -> dict[str, dict]:
    if not directory.is_dir():
        raise ConfigError(f"preset directory {directory} does not exist; set GNNBENCH_PRESETS to the "
                          "config/presets folder of a gnnbench checkout")
    presets: dict[str, dict] = {}
    for path in sorted(directory.glob("*.yaml")):
        try:
            content = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"preset file {path} is not valid YAML ({str(exc).splitlines()[0]}); fix it") from None
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


def run_config(preset: str | None, overrides: dict | None = None, *, directory=None, where: str = "") -> dict:
    """Flat, checked run config: the preset's net_params and params (if any) updated by ``overrides``."""
    config: dict = {}
    if preset is not None:
        entry = get_preset(preset, directory, where or "preset")
        config.update({"model": entry["model"]})
        config.update(coerce_all(entry["net_params"], f"preset {preset}"))
        config.update(coerce_all(entry["params"], f"preset {preset}"))
    config.update(coerce_all(overrides or {}, where))
    if "model" not in config:
        raise ConfigError(f"{where or 'config'}: no model given; name a preset or set model (e.g. GCN)")
    return config
