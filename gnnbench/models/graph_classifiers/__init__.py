"""Graph classifiers of "A Fair Comparison of Graph Neural Networks for Graph Classification" (Errica et al., ICLR
2020, arXiv:1912.09893; released code: diningphil/gnn-comparison ``models/graph_classifiers/``), one file per
architecture; the contract is in :mod:`.base`. Where they depart from the released code:
docs/protocols/fair-comparison.md#networks. They are the ``errica2020`` variants of the model registry
(:mod:`gnnbench.models.registry`), built by its ``build_model``; ``build_classifier`` and ``classifier_class`` are
that registry's lookups for this zoo.
"""

from __future__ import annotations

import numpy as np

from gnnbench.data.meta import DatasetMeta
from gnnbench.models.build import ModelData, build_model
from gnnbench.models.graph_classifiers.base import GraphClassifier
from gnnbench.models.registry import families, resolve
from gnnbench.papers import ERRICA2020

MODEL_NAMES = tuple(families(ERRICA2020))


def classifier_class(name: str) -> type[GraphClassifier]:
    """The class of the ``errica2020`` variant of model family ``name`` (e.g. ``"GIN"``)."""
    return resolve({"model": name, "variant": ERRICA2020}, ERRICA2020).load()


def build_classifier(cfg: dict, meta: DatasetMeta, sizes: np.ndarray) -> GraphClassifier:
    """The classifier a resolved run config describes, for a dataset with metadata ``meta`` and graph sizes
    ``sizes``; a missing key or an impossible value is a one-line ConfigError."""
    return build_model(cfg, ModelData(meta, np.asarray(sizes, dtype=np.int64)), default_variant=ERRICA2020)


__all__ = ["MODEL_NAMES", "GraphClassifier", "build_classifier", "classifier_class"]
