"""The chemical baseline "Molecular Fingerprint" of Errica et al. (the paper's structure-agnostic baseline for D&D,
NCI1 and PROTEINS; released code: ``models/graph_classifiers/MolecularFingerprint.py`` of diningphil/gnn-comparison,
the same in its first commit 6f85f27 and at HEAD).

    logits = ReLU(W₂ · ReLU(W₁ · Σ_{v ∈ G} x_v + b₁) + b₂)       W₁: F → h (``hidden_units``), W₂: h → #classes

The raw node features (one-hot atom types: Σ = atom-type counts) are sum-pooled; no graph structure is used. The
final ReLU on the logits is the code's (the paper says "a single-layer MLP with ReLU activations"): kept as run
(docs/protocols/fair-comparison.md#networks).
Initialisation: nn.Linear defaults. ``num_layers`` → None (structure-agnostic).
"""

from __future__ import annotations

import torch
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.models.graph_classifiers.base import StructureAgnosticBaseline
from gnnbench.models.sparse import scatter_sum


class MolecularFingerprint(StructureAgnosticBaseline):
    """The molecular-fingerprint baseline (module docstring): sum-pooled raw features → Linear → ReLU → Linear →
    ReLU."""

    def __init__(self, in_dim: int, num_classes: int, hidden_units: int) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, hidden_units), nn.ReLU(), nn.Linear(hidden_units, num_classes),
                                 nn.ReLU())

    def forward(self, batch: GraphBatch) -> torch.Tensor:
        """Logits (B, C) of the batch's graphs (module docstring's formula, ReLU on the logits included)."""
        return self.mlp(scatter_sum(batch.x, batch.batch, batch.num_graphs))
