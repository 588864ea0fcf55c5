"""Padded dense batches: :func:`to_dense_batch` (node rows → (B, n_max, F) and a mask) and
:func:`to_dense_adjacency` ((B, n_max, n_max)), PyG's ``to_dense_batch`` / ``to_dense_adj`` as one scatter each
(the dense-pooling models)."""

from __future__ import annotations

import torch


def local_node_index(batch: torch.Tensor, ptr: torch.Tensor) -> torch.Tensor:
    """The index of every node inside its own graph (``batch``: graph of each node, ``ptr``: node offsets)."""
    return torch.arange(batch.numel(), device=batch.device) - ptr.index_select(0, batch)


def _padded_size(ptr: torch.Tensor, max_nodes: int | None) -> int:
    largest = int((ptr[1:] - ptr[:-1]).max()) if ptr.numel() > 1 else 0
    if max_nodes is None:
        return largest
    if max_nodes < largest:
        raise ValueError(f"a graph of the batch has {largest} nodes, more than max_nodes={max_nodes}")
    return max_nodes


def to_dense_batch(x: torch.Tensor, batch: torch.Tensor, ptr: torch.Tensor, max_nodes: int | None = None,
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Node rows (N, *F) of a disjoint-union batch → zero-padded (B, n_max, *F) and the node mask (B, n_max).

    ``n_max`` = the largest graph of the batch, or ``max_nodes`` (padding to a fixed size; a larger graph is a
    ValueError — PyG's ``to_dense_batch`` would silently drop its extra nodes). Graph b's node i (local index, in
    batch order) lands at [b, i]. One scatter, no per-graph loop; differentiable in ``x``."""
    n_max = _padded_size(ptr, max_nodes)
    local = local_node_index(batch, ptr)
    num_graphs = ptr.numel() - 1
    dense = x.new_zeros((num_graphs, n_max, *x.shape[1:])).index_put_((batch, local), x)
    mask = torch.zeros(num_graphs, n_max, dtype=torch.bool, device=x.device)
    mask[batch, local] = True
    return dense, mask


def to_dense_adjacency(edge_index: torch.Tensor, batch: torch.Tensor, ptr: torch.Tensor, n_max: int | None = None,
                       values: torch.Tensor | None = None, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Per-graph dense adjacency (B, n_max, n_max) with A[b, i, j] = number (or summed ``values``) of edges i→j
    (local indices; PyG ``to_dense_adj``'s orientation: row = source, column = destination; parallel edges add up).
    ``n_max`` as in :func:`to_dense_batch` (default: the largest graph of the batch). One scatter, no per-graph
    loop; differentiable in ``values``."""
    n_max = _padded_size(ptr, n_max)
    src, dst = edge_index
    local = local_node_index(batch, ptr)
    if values is None:
        values = torch.ones(src.numel(), dtype=dtype, device=edge_index.device)
    adjacency = values.new_zeros((ptr.numel() - 1, n_max, n_max))
    return adjacency.index_put_((batch.index_select(0, src), local.index_select(0, src), local.index_select(0, dst)),
                                values, accumulate=True)
