"""A weighted adjacency kept as CSR together with its transpose (:class:`SparseAdjacency`): one sparse–dense
product per layer aggregates every node's in-edges."""

from __future__ import annotations

import warnings

import torch

from gnnbench.models.sparse.bags import BagPlan, _index_dtype, bag_mm


def _csr(rows: torch.Tensor, cols: torch.Tensor, values: torch.Tensor, num_nodes: int) -> torch.Tensor:
    order = torch.argsort(rows, stable=True)
    crow = torch.zeros(num_nodes + 1, dtype=torch.int64, device=rows.device)
    torch.cumsum(torch.bincount(rows, minlength=num_nodes), 0, out=crow[1:])
    with warnings.catch_warnings():  # "sparse CSR support is in beta": CSR @ dense is stable and tested here
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(crow, cols[order], values[order], (num_nodes, num_nodes),
                                       check_invariants=False)


class SparseAdjacency:
    """Weighted adjacency M with M[v, u] = weight of edge u→v, kept as CSR together with its transpose.

    ``propagate(x)`` = M @ x sums weighted source features over every node's in-edges (parallel edges
    add up); its backward uses the stored transpose instead of converting M in every layer.
    """

    def __init__(self, edge_index: torch.Tensor, values: torch.Tensor, num_nodes: int) -> None:
        src, dst = edge_index
        self.matrix = _csr(dst, src, values, num_nodes)
        self.transpose = _csr(src, dst, values, num_nodes)
        self._plan: BagPlan | None = None

    def propagate(self, x: torch.Tensor) -> torch.Tensor:
        """On CPU an ``embedding_bag`` over the CSR rows (:func:`bag_mm`, 2× faster than torch's CSR product on a
        PATTERN batch and without its fixed cost per call on small batches; float sums in another order: rounding
        differences only); elsewhere the CSR product."""
        if x.device.type == "cpu" and x.dim() == 2:
            return bag_mm(self.plan, x)
        return _SpMM.apply(self.matrix, self.transpose, x)

    @property
    def plan(self) -> BagPlan:
        """M as a :class:`BagPlan` (bag v = the in-edges of v), its transpose prebuilt from the transposed CSR."""
        if self._plan is None:
            m, t = self.matrix, self.transpose
            num_nodes = m.shape[0]
            dtype = _index_dtype(m.values().numel(), num_nodes)
            transpose = (None, t.col_indices().to(dtype), t.crow_indices()[:-1].to(dtype), t.values())
            self._plan = BagPlan(m.col_indices(), m.crow_indices()[:-1], num_nodes, m.values(), transpose)
        return self._plan


class _SpMM(torch.autograd.Function):
    @staticmethod
    def forward(matrix: torch.Tensor, transpose: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return matrix @ x

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.transpose = inputs[1]

    @staticmethod
    def vmap(info, in_dims: tuple, matrix: torch.Tensor, transpose: torch.Tensor, x: torch.Tensor):
        """Under ``torch.func.vmap`` (one adjacency, a batch of feature matrices): one product whose columns hold
        every batch member's features."""
        if in_dims[0] is not None or in_dims[1] is not None:
            raise NotImplementedError("vmap over the adjacency itself: build one SparseAdjacency per graph")
        if in_dims[2] is None:
            return _SpMM.apply(matrix, transpose, x), None
        columns = x.movedim(in_dims[2], 1)  # (N, batch, ...)
        out = _SpMM.apply(matrix, transpose, columns.reshape(columns.shape[0], -1))
        return out.view(out.shape[0], *columns.shape[1:]), 1

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return None, None, ctx.transpose @ grad


def unit_adjacency(edge_index: torch.Tensor, num_nodes: int, dtype: torch.dtype = torch.float32) -> SparseAdjacency:
    """M[v, u] = number of edges u→v: ``propagate`` sums the in-neighbours' rows."""
    return SparseAdjacency(edge_index, torch.ones(edge_index.shape[1], dtype=dtype, device=edge_index.device),
                           num_nodes)
