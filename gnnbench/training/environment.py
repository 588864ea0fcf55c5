"""What a run records about where it ran, and sets up before it trains: the torch device of a ``device`` setting,
the global seeds, the package versions and the device's name (every protocol's jobs)."""

from __future__ import annotations

import platform
import random
from importlib.metadata import PackageNotFoundError, version

import numpy as np
import torch

from gnnbench.errors import ConfigError


def resolve_device(requested: str) -> torch.device:
    """The torch device of a ``device`` setting: ``auto`` (CUDA when available, else CPU), ``cpu`` or ``cuda``."""
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if requested == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device: cuda was requested but no CUDA GPU is available; use device: auto or cpu")
    if requested not in ("cpu", "cuda"):
        raise ConfigError(f"device: unknown device {requested!r}; use auto, cpu or cuda")
    return torch.device(requested)


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators with ``seed``, as the released code's mains do."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def package_versions() -> dict[str, str]:
    """Python's and the main packages' versions, for ``metrics.json``."""
    out = {"python": platform.python_version()}
    for pkg in ("gnnbench", "torch", "torch-geometric", "numpy", "pyarrow", "scipy"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def device_name(dev: torch.device) -> str:
    """The device a run trained on, for its record: ``cuda (<GPU name>)`` or ``cpu (<processor>)``."""
    if dev.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(dev)})"
    return f"cpu ({platform.processor() or platform.machine()})"
