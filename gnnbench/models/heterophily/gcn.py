"""GCN of Platonov et al. (released modules.py ``GCNModule``): the GCN propagation followed by the feed-forward
block, on the graph with a self loop added to every node,

    m_v = Σ_{u: u→v} x_u / √(d_u d_v),   d = out-degrees (self loops included),
    GCNModule(x)_v = FeedForward(m)_v                                         (no weight before the propagation)

so a layer of the network is h ← h + FeedForward(Â norm(h)). The degrees are out-degrees at both ends of an edge,
as the released ``u_mul_v(graph, out_degrees, out_degrees)``: on an undirected graph the usual
D^-1/2 (A + I) D^-1/2."""

from __future__ import annotations

import torch
from torch import nn

from gnnbench.models.blocks import cached_structure
from gnnbench.models.heterophily.network import FeedForward, ResidualNetwork
from gnnbench.models.heterophily.propagation import gcn_adjacency


class GCNModule(nn.Module):
    """x ↦ FeedForward(Â x), Â_vu = 1/√(d_u d_v) for every edge u → v of ``edge_index`` (as given: the network
    adds the self loops); ``dim`` the width of x."""

    def __init__(self, dim: int, hidden_dim_multiplier: float = 1.0, dropout: float = 0.0, **_) -> None:
        super().__init__()
        self.feed_forward_module = FeedForward(dim, hidden_dim_multiplier, dropout)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """(N, dim) from (N, dim)."""
        num_nodes = x.shape[0]
        adjacency = cached_structure(self, edge_index, (num_nodes, x.dtype),
                                     lambda: gcn_adjacency(edge_index, num_nodes, x.dtype))
        return self.feed_forward_module(adjacency.propagate(x))


class GCN(ResidualNetwork):
    """Residual GCN blocks (module docstring); arguments of
    :class:`~gnnbench.models.heterophily.network.ResidualNetwork`."""

    blocks = (GCNModule,)
    self_loops = True
