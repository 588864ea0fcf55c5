"""Task heads: turn final node embeddings into predictions. One per task kind, shared by every model."""

from __future__ import annotations

import torch
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.models.readout import MLPReadout, pool


class NodeHead(nn.Module):
    """Node classification: MLPReadout on every node's embedding → (N, num_outputs) scores."""

    def __init__(self, in_dim: int, num_outputs: int) -> None:
        super().__init__()
        self.mlp = MLPReadout(in_dim, num_outputs)

    def forward(self, h: torch.Tensor, batch: GraphBatch) -> torch.Tensor:
        return self.mlp(h)


class GraphHead(nn.Module):
    """Graph classification/regression: pool nodes (sum/mean/max) → MLPReadout → (B, num_outputs) scores.

    Single-target regression returns shape (B,).
    """

    def __init__(self, in_dim: int, num_outputs: int, readout: str, squeeze: bool) -> None:
        super().__init__()
        self.readout = readout
        self.squeeze = squeeze
        self.mlp = MLPReadout(in_dim, num_outputs)

    def forward(self, h: torch.Tensor, batch: GraphBatch) -> torch.Tensor:
        out = self.mlp(pool(h, batch.batch, batch.num_graphs, self.readout))
        return out.squeeze(-1) if self.squeeze else out


def make_head(task: str, in_dim: int, num_outputs: int, readout: str) -> nn.Module:
    if task == "node_classification":
        return NodeHead(in_dim, num_outputs)
    if task in ("graph_classification", "graph_regression"):
        return GraphHead(in_dim, num_outputs, readout, squeeze=task == "graph_regression" and num_outputs == 1)
    raise ValueError(f"no head for task {task!r}")
