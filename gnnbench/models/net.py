"""A model = input encoders → architecture (message passing) → task head, composed once for every task."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.models.encoders import EdgeEncoder, NodeEncoder


class GraphNet(nn.Module):
    """Runs ``node_encoder`` (+ input dropout), ``edge_encoder`` when the architecture uses edges, the
    architecture's layers and the head; returns the head's scores."""

    def __init__(self, node_encoder: NodeEncoder, edge_encoder: EdgeEncoder | None, architecture: nn.Module,
                 head: nn.Module, in_feat_dropout: float = 0.0) -> None:
        super().__init__()
        self.node_encoder = node_encoder
        self.edge_encoder = edge_encoder
        self.architecture = architecture
        self.head = head
        self.in_feat_dropout = in_feat_dropout

    def forward(self, batch: GraphBatch) -> torch.Tensor:
        h = self.node_encoder(batch.x, batch.pe)
        h = F.dropout(h, self.in_feat_dropout, self.training)
        e = None
        if self.edge_encoder is not None:
            e = self.edge_encoder(batch.edge_attr, batch.num_edges)
        h, _ = self.architecture(h, batch.edge_index, e)
        return self.head(h, batch)


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters, counted like the benchmark's ``view_model_param`` (buffers excluded)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
