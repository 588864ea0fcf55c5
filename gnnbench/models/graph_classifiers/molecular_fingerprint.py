"""The chemical baseline "Molecular Fingerprint" of Errica et al. (spec p3-fair-comparison.md §3.6; original
``models/graph_classifiers/MolecularFingerprint.py`` of diningphil/gnn-comparison, first commit 6f85f27 = HEAD).

    logits = ReLU(W₂ · ReLU(W₁ · Σ_{v ∈ G} x_v + b₁) + b₂)       W₁: F → h (``hidden_units``), W₂: h → #classes

The raw node features (one-hot atom types: Σ = atom-type counts) are sum-pooled; no graph structure is used. The
final ReLU on the logits is the code's (the paper says "a single-layer MLP with ReLU activations"): kept as run.
Initialisation: nn.Linear defaults. ``num_layers`` → None (structure-agnostic).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.models.graph_classifiers.base import GraphClassifier
from gnnbench.models.sparse import scatter_sum


class MolecularFingerprint(GraphClassifier):
    required = ("hidden_units",)

    def __init__(self, in_dim: int, num_classes: int, hidden_units: int) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, hidden_units), nn.ReLU(), nn.Linear(hidden_units, num_classes),
                                 nn.ReLU())

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta, sizes: np.ndarray) -> MolecularFingerprint:
        if not isinstance(cfg["hidden_units"], int):
            raise ValueError(f"{cls.__name__} hidden_units is one width (an integer), got {cfg['hidden_units']!r}")
        return cls(meta.node_features.size, meta.num_outputs, int(cfg["hidden_units"]))

    @staticmethod
    def num_layers(cfg: dict) -> int | None:
        return None

    def forward(self, batch: GraphBatch) -> torch.Tensor:
        return self.mlp(scatter_sum(batch.x, batch.batch, batch.num_graphs))
