"""A model = input encoders → architecture → task head, composed once for every task."""

from __future__ import annotations

import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.models.base import Architecture, Representation
from gnnbench.models.encoders import EdgeEncoder, NodeEncoder


class GraphNet(nn.Module):
    """Runs ``node_encoder`` (+ input dropout) and ``edge_encoder`` (when the architecture uses edges), the
    architecture and the head; returns the head's scores. Architectures with ``own_input`` (dense WL-GNNs,
    MF) build their input from the batch and have no encoders."""

    def __init__(self, node_encoder: NodeEncoder | None, edge_encoder: EdgeEncoder | None,
                 architecture: Architecture, head: nn.Module, in_feat_dropout: float = 0.0) -> None:
        super().__init__()
        self.node_encoder = node_encoder
        self.edge_encoder = edge_encoder
        self.architecture = architecture
        self.head = head
        self.in_feat_dropout = in_feat_dropout

    def encode(self, batch: GraphBatch) -> Representation:
        """The architecture's representation of the batch (everything before the head)."""
        h = e = None
        if self.node_encoder is not None:
            h = self.node_encoder(batch.x, batch.pe)
            h = F.dropout(h, self.in_feat_dropout, self.training)
        if self.edge_encoder is not None:
            e = self.edge_encoder(batch.edge_attr, batch.num_edges)
        return self.architecture(h, e, batch)

    def forward(self, batch: GraphBatch):
        """The task head's outputs on the batch (node, graph, edge or link scores; multitask: a tuple)."""
        return self.head(self.encode(batch), batch)


__all__ = ["GraphNet"]
