"""SAGE of Platonov et al. (released modules.py ``SAGEModule``): GraphSAGE's mean aggregator with separate
ego and neighbour weights, as the feed-forward block on the concatenation,

    m_v = mean_{u: u→v} x_u   (0 without in-neighbours),   SAGEModule(x)_v = FeedForward([x_v ‖ m_v])

(the feed-forward block's first Linear is 2d → m·d: its two halves are the self and neighbour weights). The graph as
given: no self loops are added."""

from __future__ import annotations

import torch
from torch import nn

from gnnbench.models.blocks import cached_structure
from gnnbench.models.heterophily.network import FeedForward, ResidualNetwork
from gnnbench.models.heterophily.propagation import mean_adjacency


class SAGEModule(nn.Module):
    """x ↦ FeedForward([x ‖ mean of the in-neighbours' x]) (module docstring); ``dim`` the width of x."""

    def __init__(self, dim: int, hidden_dim_multiplier: float = 1.0, dropout: float = 0.0, **_) -> None:
        super().__init__()
        self.feed_forward_module = FeedForward(dim, hidden_dim_multiplier, dropout, input_dim_multiplier=2)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """(N, dim) from (N, dim)."""
        num_nodes = x.shape[0]
        adjacency = cached_structure(self, edge_index, (num_nodes, x.dtype),
                                     lambda: mean_adjacency(edge_index, num_nodes, x.dtype))
        message = adjacency.propagate(x)
        return self.feed_forward_module(torch.cat([x, message], dim=1))


class SAGE(ResidualNetwork):
    """Residual SAGE blocks (module docstring); arguments of
    :class:`~gnnbench.models.heterophily.network.ResidualNetwork`."""

    blocks = (SAGEModule,)
