"""The DeepSets-like baseline of Errica et al. for the social datasets and ENZYMES (spec p3-fair-comparison.md
§3.7; original ``models/graph_classifiers/DeepMultisets.py`` of diningphil/gnn-comparison, first commit 6f85f27 =
HEAD).

    logits = W₃ · ReLU(W₂ · Σ_{v ∈ G} ReLU(W₁ x_v + b₁) + b₂) + b₃      W₁: F → h, W₂: h → h, W₃: h → #classes

h = ``hidden_units``. A per-node layer, sum pooling, then an MLP with one hidden layer of width h; no graph
structure is used. Initialisation: nn.Linear defaults. ``num_layers`` → None (structure-agnostic).
"""

from __future__ import annotations

import torch
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.models.graph_classifiers.base import StructureAgnosticBaseline
from gnnbench.models.sparse import scatter_sum


class DeepMultisets(StructureAgnosticBaseline):
    def __init__(self, in_dim: int, num_classes: int, hidden_units: int) -> None:
        super().__init__()
        self.fc_vertex = nn.Linear(in_dim, hidden_units)
        self.fc_global1 = nn.Linear(hidden_units, hidden_units)
        self.fc_global2 = nn.Linear(hidden_units, num_classes)

    def forward(self, batch: GraphBatch) -> torch.Tensor:
        pooled = scatter_sum(torch.relu(self.fc_vertex(batch.x)), batch.batch, batch.num_graphs)
        return self.fc_global2(torch.relu(self.fc_global1(pooled)))
