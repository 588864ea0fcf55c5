"""A fixed sparse matrix replicated over B blocks (one block per initialisation of a stacked model):
:class:`CSRPattern` builds the :class:`~gnnbench.models.sparse.bags.BagPlan` of its block-diagonal copies and, with
dropout, of a fresh Bernoulli draw over the stored entries of every block."""

from __future__ import annotations

import torch

from gnnbench.models.sparse.bags import BagPlan, _index_dtype, _starts
from gnnbench.models.sparse.dropout import bernoulli_positions


class CSRPattern:
    """A sparse (n_rows × n_cols) matrix in CSR order — ``crow``, ``col``, ``value`` (None = all 1), ``row`` of every
    entry — with its column-major order (``perm_t``: entry ids by column, ``crow_t``) built once.

    :meth:`replicate` gives the :class:`BagPlan` of B copies on the block diagonal (block b multiplies table rows
    b·n_cols … (b+1)·n_cols − 1), cached per B; :meth:`dropout_plan` the same with an independent Bernoulli draw over
    the stored entries of every block, kept entries scaled by 1/(1 − p) (inverted dropout)."""

    def __init__(self, crow: torch.Tensor, col: torch.Tensor, value: torch.Tensor | None, num_cols: int) -> None:
        self.crow, self.col, self.value = crow.long(), col.long(), value
        self.num_rows, self.num_cols, self.nnz = crow.numel() - 1, num_cols, col.numel()
        counts = self.crow[1:] - self.crow[:-1]
        self.row = torch.repeat_interleave(torch.arange(self.num_rows, device=col.device), counts)
        self.perm_t = torch.argsort(self.col, stable=True)
        self.crow_t = torch.zeros(num_cols + 1, dtype=torch.int64, device=col.device)
        torch.cumsum(torch.bincount(self.col, minlength=num_cols), 0, out=self.crow_t[1:])
        self._replicas: dict[int, BagPlan] = {}
        self._rank_t: torch.Tensor | None = None
        self.parent_entries: torch.Tensor | None = None  # set by select(): where the entries and rows came from
        self.parent_rows: torch.Tensor | None = None
        self._parent_blocks: dict[tuple[int, int], torch.Tensor] = {}

    @classmethod
    def from_coo(cls, rows: torch.Tensor, cols: torch.Tensor, value: torch.Tensor | None, num_rows: int,
                 num_cols: int) -> CSRPattern:
        """Entries (rows[e], cols[e]) in any order; duplicates are kept as separate entries."""
        order = torch.argsort(rows * num_cols + cols, stable=True)
        crow = torch.zeros(num_rows + 1, dtype=torch.int64, device=rows.device)
        torch.cumsum(torch.bincount(rows, minlength=num_rows), 0, out=crow[1:])
        return cls(crow, cols.index_select(0, order), None if value is None else value.index_select(0, order),
                   num_cols)

    @classmethod
    def from_sparse(cls, matrix: torch.Tensor) -> CSRPattern:
        """From a torch sparse CSR or COO matrix."""
        if matrix.layout != torch.sparse_csr:
            matrix = matrix.to_sparse_csr()
        return cls(matrix.crow_indices(), matrix.col_indices(), matrix.values(), matrix.shape[1])

    def select(self, rows: torch.Tensor, column_map: torch.Tensor | None = None, num_cols: int | None = None,
               ) -> CSRPattern:
        """The rows ``rows`` (in that order), columns renumbered by ``column_map`` (old → new; every column of the
        selected rows must be mapped) into ``num_cols`` columns. ``parent_entries`` of the result: the position of
        each of its entries in this pattern."""
        counts = (self.crow[1:] - self.crow[:-1]).index_select(0, rows)
        crow = torch.zeros(rows.numel() + 1, dtype=torch.int64, device=rows.device)
        torch.cumsum(counts, 0, out=crow[1:])
        local = torch.arange(int(crow[-1]), device=rows.device) - torch.repeat_interleave(crow[:-1], counts)
        entries = torch.repeat_interleave(self.crow.index_select(0, rows), counts) + local
        col = self.col.index_select(0, entries)
        if column_map is not None:
            col = column_map.index_select(0, col)
        value = None if self.value is None else self.value.index_select(0, entries)
        selected = CSRPattern(crow, col, value, self.num_cols if num_cols is None else num_cols)
        selected.parent_entries, selected.parent_rows = entries, rows
        return selected

    def replicated_parent_entries(self, blocks: int, parent_nnz: int) -> torch.Tensor:
        """``parent_entries`` of B block copies, for per-block arrays over the parent's entries laid out block after
        block: entry e of block b sits at b·parent_nnz + parent_entries[e]. Cached per (B, parent_nnz); one flat
        gather with it is ~4× faster than gathering along dim 1 of a (B, parent_nnz) bool mask."""
        key = (blocks, parent_nnz)
        if key not in self._parent_blocks:
            if len(self._parent_blocks) >= 4:  # B changes only when a trainer drops finished initialisations
                self._parent_blocks.pop(next(iter(self._parent_blocks)))
            block = torch.arange(blocks, device=self.col.device).unsqueeze(1) * parent_nnz
            self._parent_blocks[key] = (block + self.parent_entries).reshape(-1)
        return self._parent_blocks[key]

    @property
    def rank_t(self) -> torch.Tensor:
        """The position of every entry in column-major order (inverse of ``perm_t``)."""
        if self._rank_t is None:
            self._rank_t = torch.empty_like(self.perm_t)
            self._rank_t[self.perm_t] = torch.arange(self.nnz, device=self.col.device)
        return self._rank_t

    def replicate(self, blocks: int) -> BagPlan:
        """B copies on the block diagonal: bag b·n_rows + i sums table rows b·n_cols + j over the entries (i, j),
        weighted by ``value``. Cached per B (a function of the pattern and B only, no per-block state)."""
        if blocks not in self._replicas:
            if len(self._replicas) >= 4:  # B changes only when a trainer drops finished initialisations
                self._replicas.pop(next(iter(self._replicas)))
            device = self.col.device
            block = torch.arange(blocks, device=device).unsqueeze(1)
            index = (self.col + block * self.num_cols).reshape(-1)
            offsets = (self.crow[:-1] + block * self.nnz).reshape(-1)
            dtype = _index_dtype(blocks * self.nnz, blocks * self.num_rows, blocks * self.num_cols)
            order_t = (self.perm_t + block * self.nnz).reshape(-1).to(dtype)  # int32 where it fits: faster gathers
            bag_t = (self.row.index_select(0, self.perm_t) + block * self.num_rows).reshape(-1)
            offsets_t = (self.crow_t[:-1] + block * self.nnz).reshape(-1)
            weights = weights_t = None
            if self.value is not None:
                weights, weights_t = self.value.repeat(blocks), self.value.index_select(0, self.perm_t).repeat(blocks)
            self._replicas[blocks] = BagPlan(index, offsets, blocks * self.num_cols, weights,
                                             (order_t, bag_t.to(dtype), offsets_t.to(dtype), weights_t))
        return self._replicas[blocks]

    def dropout_plan(self, blocks: int, p: float) -> BagPlan:
        """:meth:`replicate` with inverted dropout on the stored entries, drawn independently for every entry of
        every block: an entry is kept with probability 1 − p and then weighted value/(1 − p). The kept entries are
        drawn in row-major order (:func:`bernoulli_positions`); the backward's column-major grouping comes from one
        sort of their column-major ranks (no sort of the pattern itself)."""
        if p <= 0:
            return self.replicate(blocks)
        keep, nnz = 1.0 - p, self.nnz
        dtype = _index_dtype(blocks * nnz, blocks * self.num_rows, blocks * self.num_cols)
        col, row, rank_t = self._arrays(dtype)
        kept = bernoulli_positions(blocks * nnz, keep, self.col.device)
        block_starts = torch.arange(blocks + 1, device=kept.device) * nnz
        per_block = torch.diff(torch.searchsorted(kept, block_starts))
        block = torch.repeat_interleave(torch.arange(blocks, dtype=dtype, device=kept.device), per_block)
        entry = kept.to(dtype) - block * nnz
        index = col.index_select(0, entry) + block * self.num_cols
        bags = row.index_select(0, entry) + block * self.num_rows
        offsets = _starts(torch.bincount(bags, minlength=blocks * self.num_rows), dtype)
        # column-major grouping for the backward: order the kept entries by (block, column-major rank)
        order = torch.sort(rank_t.index_select(0, entry) + block * nnz)[1]
        bag_t = bags.index_select(0, order)
        offsets_t = _starts(torch.bincount(index, minlength=blocks * self.num_cols), dtype)
        if self.value is None:
            weights = weights_t = torch.full((entry.numel(),), 1.0 / keep, device=entry.device)
        else:
            weights = self.value.index_select(0, entry) / keep
            weights_t = weights.index_select(0, order)
        return BagPlan(index, offsets, blocks * self.num_cols, weights, (order, bag_t, offsets_t, weights_t))

    def _arrays(self, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``col``, ``row`` and ``rank_t`` in ``dtype`` (int32 where the indices fit: faster gathers)."""
        if getattr(self, "_typed", (None,))[0] != dtype:
            self._typed = (dtype, self.col.to(dtype), self.row.to(dtype), self.rank_t.to(dtype))
        return self._typed[1:]
