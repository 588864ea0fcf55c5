"""Segment reductions over an index vector (sum, mean, max, softmax), node degrees and self loops: what PyG's
``torch_geometric.utils.scatter`` / ``degree`` / ``add_self_loops`` provide. Empty segments give 0, like PyG and
DGL's builtin reducers."""

from __future__ import annotations

import torch


def scatter_sum(src: torch.Tensor, index: torch.Tensor, dim_size: int) -> torch.Tensor:
    """out[i] = Σ_{j: index[j] = i} src[j]."""
    return src.new_zeros((dim_size, *src.shape[1:])).index_add_(0, index, src)


def scatter_mean(src: torch.Tensor, index: torch.Tensor, dim_size: int) -> torch.Tensor:
    """Mean of the rows of ``src`` in each segment (0 for empty segments)."""
    total = scatter_sum(src, index, dim_size)
    count = torch.bincount(index, minlength=dim_size).clamp_(min=1).to(src.dtype)
    return total / count.view(-1, *([1] * (src.dim() - 1)))


def scatter_max(src: torch.Tensor, index: torch.Tensor, dim_size: int) -> torch.Tensor:
    """Elementwise maximum of the rows of ``src`` in each segment (0 for empty segments)."""
    expanded = index.view(-1, *([1] * (src.dim() - 1))).expand_as(src)
    return src.new_zeros((dim_size, *src.shape[1:])).scatter_reduce_(0, expanded, src, "amax",
                                                                      include_self=False)


def degree(index: torch.Tensor, num_nodes: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Number of occurrences of each node id in ``index`` (in-degree for ``index = dst``)."""
    return torch.bincount(index, minlength=num_nodes).to(dtype)


def segment_softmax(scores: torch.Tensor, index: torch.Tensor, dim_size: int) -> torch.Tensor:
    """Softmax of ``scores`` (rows; any trailing shape) within each segment of ``index`` (e.g. the in-edges of
    every node, or the nodes of every graph). Shifted by the segment maximum for stability."""
    shift = scatter_max(scores.detach(), index, dim_size).index_select(0, index)
    weights = torch.exp(scores - shift)
    return weights / scatter_sum(weights, index, dim_size).index_select(0, index)


def add_self_loops(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """``dgl.add_self_loop``: one extra edge v→v per node, appended after the existing edges."""
    loops = torch.arange(num_nodes, device=edge_index.device).expand(2, -1)
    return torch.cat([edge_index, loops], dim=1)
