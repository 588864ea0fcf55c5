"""Message passing of Platonov et al.'s graph modules as sparse products, built once per graph:

* :func:`gcn_adjacency` — Â with Â[v, u] = 1/√(d_u d_v) for every edge u → v (d: out-degrees, the released
  ``u_mul_v(out_degrees, out_degrees)``), so the GCN message is ``Â @ x``;
* :func:`mean_adjacency` — M[v, u] = (edges u → v) / in-degree(v), SAGE's mean of the in-neighbours (0 without any);
* :class:`HeadPlan` — per-head attention sums m_v^k = Σ_{u→v} α_uv^k x_u^k for H heads as one weighted
  ``embedding_bag`` over H·N bags (head-major rows), differentiable in x and in α.

Why (docs/protocols/heterophily.md#reproducing-the-papers-tables): a gather–scatter keeps an edges × width message
tensor per layer (1.04 M edges × 512 floats ≈ 2 GB on tolokers) and its scatter dominated a step; the products read
x in place and keep, for attention, only the E × H coefficients. Sums run in another order than the scatter's:
rounding differences only."""

from __future__ import annotations

import torch

from gnnbench.models.sparse import BagPlan, SparseAdjacency, bag_mm, degree


def gcn_propagation(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """The coefficient of every edge u → v of the released GCN normalisation, 1 / √(d_u · d_v), d = out-degrees
    of ``edge_index`` (as given: self loops are the caller's)."""
    src, dst = edge_index
    out_degree = degree(src, num_nodes)
    return (out_degree.index_select(0, src) * out_degree.index_select(0, dst)).rsqrt()


def gcn_adjacency(edge_index: torch.Tensor, num_nodes: int, dtype: torch.dtype) -> SparseAdjacency:
    """Â of the released GCN normalisation (module docstring) on ``edge_index`` as given."""
    return SparseAdjacency(edge_index, gcn_propagation(edge_index, num_nodes).to(dtype), num_nodes)


def mean_adjacency(edge_index: torch.Tensor, num_nodes: int, dtype: torch.dtype) -> SparseAdjacency:
    """M with M @ x the mean of every node's in-neighbours' rows (parallel edges counted; 0 without in-edges)."""
    dst = edge_index[1]
    weight = degree(dst, num_nodes).clamp_(min=1).reciprocal_().to(dtype)
    return SparseAdjacency(edge_index, weight.index_select(0, dst), num_nodes)


class HeadPlan:
    """Σ_{u→v} α_e^k x_u^k for every node v and head k (module docstring). Bag k·N + v holds the in-edges of v
    (sorted by target) reading table row k·N + u; ``aggregate`` takes the table head-major, (H·N, d/H)."""

    def __init__(self, edge_index: torch.Tensor, num_nodes: int, num_heads: int) -> None:
        src, dst = edge_index
        self.order = torch.argsort(dst, stable=True)
        self.num_nodes, self.num_heads, self.num_edges = num_nodes, num_heads, src.numel()
        heads = torch.arange(num_heads, device=src.device).unsqueeze(1)
        index = (heads * num_nodes + src.index_select(0, self.order)).reshape(-1)
        starts = torch.zeros(num_nodes, dtype=torch.int64, device=src.device)
        starts[1:] = torch.cumsum(torch.bincount(dst, minlength=num_nodes), 0)[:-1]
        offsets = (heads * self.num_edges + starts).reshape(-1)
        self.plan = BagPlan(index, offsets, num_heads * num_nodes)

    def aggregate(self, table: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
        """(H·N, d/H) sums from ``table`` (H·N, d/H), row k·N + u = head k of node u, and the coefficients
        ``alpha`` (E, H) in ``edge_index`` order."""
        weights = alpha.index_select(0, self.order).t().reshape(-1)
        return bag_mm(self.plan, table, weights)


__all__ = ["HeadPlan", "gcn_adjacency", "gcn_propagation", "mean_adjacency"]
