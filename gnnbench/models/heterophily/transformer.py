"""GT and GT-sep of Platonov et al. (released modules.py ``TransformerAttentionModule``,
``TransformerAttentionSepModule``): scaled dot-product attention restricted to the in-neighbours, each layer two
residual modules, the attention and the feed-forward block (``MODULES['GT'] = [TransformerAttentionModule,
FeedForwardModule]``),

    q = W_q x + b_q,  k = W_k x + b_k,  v = W_v x + b_v   (H = ``num_heads`` heads of d/H channels, in blocks)
    α_uv^h = softmax_{u: u→v} (q_u^h · k_v^h / √(d/H)),    m_v^h = Σ_{u: u→v} α_uv^h v_u^h
    GT:      Attention(x)_v = dropout(W_o m_v + b_o)           (graph with a self loop added to every node)
    GT-sep:  Attention(x)_v = dropout(W_o [x_v ‖ m_v] + b_o)   (graph as given: the ego kept apart)

The query is the source's and the key the target's, as the released ``ops.u_dot_v(graph, queries, keys)``
computes them (the transpose of the usual query-of-the-target form; on an undirected graph the same family of
functions with W_q and W_k exchanged)."""

from __future__ import annotations

import torch
from torch import nn

from gnnbench.models.blocks import cached_structure
from gnnbench.models.heterophily.network import FeedForward, ResidualNetwork
from gnnbench.models.heterophily.propagation import HeadPlan
from gnnbench.models.sparse import segment_softmax


class TransformerAttentionModule(nn.Module):
    """GT's attention module (module docstring); ``separate`` True is GT-sep's (output Linear on [x ‖ m]).
    ``dim`` must be a multiple of ``num_heads``."""

    def __init__(self, dim: int, num_heads: int = 8, dropout: float = 0.0, separate: bool = False, **_) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"hidden_dim ({dim}) must be a multiple of num_heads ({num_heads})")
        self.dim, self.num_heads, self.head_dim, self.separate = dim, num_heads, dim // num_heads, separate
        self.attn_query = nn.Linear(dim, dim)
        self.attn_key = nn.Linear(dim, dim)
        self.attn_value = nn.Linear(dim, dim)
        self.output_linear = nn.Linear(2 * dim if separate else dim, dim)
        self.dropout = nn.Dropout(dropout)

    def attention(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """α (E, H): every edge's attention coefficient per head, summing to 1 over the in-edges of each node."""
        src, dst = edge_index
        queries = self.attn_query(x).view(-1, self.num_heads, self.head_dim).index_select(0, src)
        keys = self.attn_key(x).view(-1, self.num_heads, self.head_dim).index_select(0, dst)
        return segment_softmax((queries * keys).sum(-1) / self.head_dim ** 0.5, dst, x.shape[0])

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """(N, dim) from (N, dim)."""
        alpha = self.attention(x, edge_index)
        num_nodes, heads = x.shape[0], self.num_heads
        plan = cached_structure(self, edge_index, (num_nodes,), lambda: HeadPlan(edge_index, num_nodes, heads))
        table = self.attn_value(x).view(num_nodes, heads, -1).transpose(0, 1).reshape(heads * num_nodes, -1)
        message = plan.aggregate(table, alpha).view(heads, num_nodes, -1).transpose(0, 1).reshape(num_nodes, -1)
        return self.dropout(self.output_linear(torch.cat([x, message], dim=1) if self.separate else message))


class TransformerAttentionSepModule(TransformerAttentionModule):
    """GT-sep's attention module: :class:`TransformerAttentionModule` with the ego kept apart (output Linear on
    [x ‖ m])."""

    def __init__(self, dim: int, num_heads: int = 8, dropout: float = 0.0, **_) -> None:
        super().__init__(dim, num_heads, dropout, separate=True)


class GT(ResidualNetwork):
    """Residual attention and feed-forward blocks on the graph with self loops (module docstring); arguments of
    :class:`~gnnbench.models.heterophily.network.ResidualNetwork`."""

    blocks = (TransformerAttentionModule, FeedForward)
    self_loops = True
    attention = True


class GTSep(ResidualNetwork):
    """Residual GT-sep attention and feed-forward blocks on the graph as given (module docstring); arguments of
    :class:`~gnnbench.models.heterophily.network.ResidualNetwork`."""

    blocks = (TransformerAttentionSepModule, FeedForward)
    attention = True
