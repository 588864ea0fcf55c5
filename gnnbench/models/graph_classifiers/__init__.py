"""Graph classifiers of "A Fair Comparison of GNNs for Graph Classification" (Errica et al.; spec
p3-fair-comparison.md §3), one file per architecture; the contract is in :mod:`.base`.

``build_classifier(cfg, meta, sizes)`` is the entry point; ``CLASSIFIERS`` maps the config's ``model`` name to the
class (imported on first use).
"""

from __future__ import annotations

import importlib

import numpy as np

from gnnbench.data.meta import DatasetMeta
from gnnbench.errors import ConfigError
from gnnbench.models.graph_classifiers.base import GraphClassifier

_MODULES = {
    "GIN": ("gin", "GIN"),
    "GraphSAGE": ("graphsage", "GraphSAGE"),
    "DGCNN": ("dgcnn", "DGCNN"),
    "DiffPool": ("diffpool", "DiffPool"),
    "ECC": ("ecc", "ECC"),
    "MolecularFingerprint": ("molecular_fingerprint", "MolecularFingerprint"),
    "DeepMultisets": ("deep_multisets", "DeepMultisets"),
}
MODEL_NAMES = tuple(_MODULES)


def classifier_class(name: str) -> type[GraphClassifier]:
    if name not in _MODULES:
        raise ConfigError(f"model: unknown fair-comparison model {name!r}; choose one of {', '.join(_MODULES)}")
    module, cls = _MODULES[name]
    return getattr(importlib.import_module(f"gnnbench.models.graph_classifiers.{module}"), cls)


def build_classifier(cfg: dict, meta: DatasetMeta, sizes: np.ndarray) -> GraphClassifier:
    """The classifier a resolved run config describes, for a dataset with metadata ``meta`` and graph sizes
    ``sizes``; a missing key or an impossible value is a one-line ConfigError."""
    cls = classifier_class(cfg.get("model"))
    missing = [k for k in cls.required if k not in cfg]
    if missing:
        raise ConfigError(f"model {cfg['model']} needs config key(s) {', '.join(missing)}; add them (or use a preset)")
    try:
        return cls.from_config(cfg, meta, np.asarray(sizes, dtype=np.int64))
    except ValueError as exc:
        raise ConfigError(f"model {cfg['model']} on dataset {meta.name}: {exc}; change the config") from None


__all__ = ["MODEL_NAMES", "GraphClassifier", "build_classifier", "classifier_class"]
