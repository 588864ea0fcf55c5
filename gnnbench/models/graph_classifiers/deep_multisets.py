"""The DeepSets-like baseline of Errica et al. for the social datasets and ENZYMES (the paper's structure-agnostic
baseline; released code: ``models/graph_classifiers/DeepMultisets.py`` of diningphil/gnn-comparison, the same in its
first commit 6f85f27 and at HEAD).

    logits = W₃ · ReLU(W₂ · Σ_{v ∈ G} ReLU(W₁ x_v + b₁) + b₂) + b₃      W₁: F → h, W₂: h → h, W₃: h → #classes

h = ``hidden_units``. A per-node layer, sum pooling, then an MLP with one hidden layer of width h; no graph
structure is used. (The paper describes a single-layer MLP on the node features, sum pooling and another
single-layer MLP; the released code's post-pooling MLP has one hidden layer of width h.) Initialisation: nn.Linear
defaults. ``num_layers`` → None (structure-agnostic).
"""

from __future__ import annotations

import torch
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.models.graph_classifiers.base import StructureAgnosticBaseline
from gnnbench.models.sparse import scatter_sum


class DeepMultisets(StructureAgnosticBaseline):
    """The DeepSets-like baseline (module docstring): per-node Linear + ReLU, sum pooling, a one-hidden-layer MLP."""

    def __init__(self, in_dim: int, num_classes: int, hidden_units: int) -> None:
        super().__init__()
        self.fc_vertex = nn.Linear(in_dim, hidden_units)
        self.fc_global1 = nn.Linear(hidden_units, hidden_units)
        self.fc_global2 = nn.Linear(hidden_units, num_classes)

    def forward(self, batch: GraphBatch) -> torch.Tensor:
        """Logits (B, C) of the batch's graphs (module docstring's formula)."""
        pooled = scatter_sum(torch.relu(self.fc_vertex(batch.x)), batch.batch, batch.num_graphs)
        return self.fc_global2(torch.relu(self.fc_global1(pooled)))
