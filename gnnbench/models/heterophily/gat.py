"""GAT and GAT-sep of Platonov et al. (released modules.py ``GATModule``, ``GATSepModule``): multi-head attention
over the in-neighbours after a Linear, then the feed-forward block,

    z = W x + b,   e_uv^k = LeakyReLU_0.2(a_k · z_u + c_k + b_k · z_v),   α_uv^k = softmax_{u: u→v} e_uv^k,
    m_v^k = Σ_{u: u→v} α_uv^k z_u^k,
    GAT:      GATModule(x)_v = FeedForward(m_v)                (graph with a self loop added to every node)
    GAT-sep:  GATSepModule(x)_v = FeedForward([z_v ‖ m_v])     (graph as given: the ego kept apart)

with H = ``num_heads`` heads of d/H channels: ``attn_linear_u`` (a, with bias c) scores the source,
``attn_linear_v`` (b, no bias) the target. Head k owns the channels j·H + k of z (the released
``x.reshape(-1, head_dim, num_heads)``: heads interleaved, not in blocks), which keeps a released ``state_dict``'s
meaning."""

from __future__ import annotations

import torch
from torch import nn

from gnnbench.models.blocks import cached_structure
from gnnbench.models.heterophily.network import FeedForward, ResidualNetwork
from gnnbench.models.heterophily.propagation import HeadPlan
from gnnbench.models.sparse import segment_softmax


class GATModule(nn.Module):
    """GAT's module (module docstring); ``separate`` True is GAT-sep's (FeedForward on [z ‖ m]). ``dim`` must be a
    multiple of ``num_heads``."""

    def __init__(self, dim: int, hidden_dim_multiplier: float = 1.0, num_heads: int = 8, dropout: float = 0.0,
                 separate: bool = False, **_) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"hidden_dim ({dim}) must be a multiple of num_heads ({num_heads})")
        self.dim, self.num_heads, self.head_dim, self.separate = dim, num_heads, dim // num_heads, separate
        self.input_linear = nn.Linear(dim, dim)
        self.attn_linear_u = nn.Linear(dim, num_heads)
        self.attn_linear_v = nn.Linear(dim, num_heads, bias=False)
        self.attn_act = nn.LeakyReLU(negative_slope=0.2)
        self.feed_forward_module = FeedForward(dim, hidden_dim_multiplier, dropout,
                                               input_dim_multiplier=2 if separate else 1)

    def attention(self, z: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """α (E, H): every edge's attention coefficient per head, summing to 1 over the in-edges of each node."""
        src, dst = edge_index
        scores = self.attn_linear_u(z).index_select(0, src) + self.attn_linear_v(z).index_select(0, dst)
        return segment_softmax(self.attn_act(scores), dst, z.shape[0])

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """(N, dim) from (N, dim)."""
        z = self.input_linear(x)
        alpha = self.attention(z, edge_index)
        num_nodes, heads = z.shape[0], self.num_heads
        plan = cached_structure(self, edge_index, (num_nodes,), lambda: HeadPlan(edge_index, num_nodes, heads))
        table = z.view(num_nodes, self.head_dim, heads).permute(2, 0, 1).reshape(heads * num_nodes, -1)
        message = plan.aggregate(table, alpha).view(heads, num_nodes, -1).permute(1, 2, 0).reshape(num_nodes, -1)
        return self.feed_forward_module(torch.cat([z, message], dim=1) if self.separate else message)


class GATSepModule(GATModule):
    """GAT-sep's module: :class:`GATModule` with the ego representation kept apart (FeedForward on [z ‖ m])."""

    def __init__(self, dim: int, hidden_dim_multiplier: float = 1.0, num_heads: int = 8, dropout: float = 0.0,
                 **_) -> None:
        super().__init__(dim, hidden_dim_multiplier, num_heads, dropout, separate=True)


class GAT(ResidualNetwork):
    """Residual GAT blocks on the graph with self loops (module docstring); arguments of
    :class:`~gnnbench.models.heterophily.network.ResidualNetwork`."""

    blocks = (GATModule,)
    self_loops = True
    attention = True


class GATSep(ResidualNetwork):
    """Residual GAT-sep blocks on the graph as given (module docstring); arguments of
    :class:`~gnnbench.models.heterophily.network.ResidualNetwork`."""

    blocks = (GATSepModule,)
    attention = True


__all__ = ["GAT", "GATModule", "GATSep", "GATSepModule"]
