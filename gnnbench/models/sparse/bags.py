"""Bags of weighted table rows (``embedding_bag`` in sum mode) with the transposed grouping prebuilt for the
backward pass: :class:`BagPlan`, its dropout form :class:`MaskedPlan` and the product :func:`bag_mm`.

Why ``embedding_bag``: on one CPU core its sum kernel runs a sparse–dense product 2–3× faster than torch's CSR
``mm`` (MKL), both for one wide product (N, 1280 columns) and for block-diagonal ones, and it takes int32 indices.
Its own backward sorts the indices on every call; here the transposed grouping is built once (or, for a dropout
draw, by one sort of the kept entries) and the backward is a second ``embedding_bag``."""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F


def _index_dtype(*bounds: int) -> torch.dtype:
    return torch.int32 if max(bounds, default=0) < 2 ** 31 - 1 else torch.int64


def _starts(counts: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Exclusive prefix sums of ``counts``: the start of every segment."""
    starts = torch.zeros(counts.numel(), dtype=torch.int64, device=counts.device)
    if counts.numel() > 1:
        torch.cumsum(counts[:-1], 0, out=starts[1:])
    return starts.to(dtype)


class BagPlan:
    """out[g] = Σ_{e ∈ bag g} w_e · table[index_e]: ``num_bags`` bags whose entries are contiguous, bag g starting
    at ``offsets[g]`` (an ``embedding_bag`` in sum mode), with default entry weights ``weights`` (E,) (None = all 1).

    The backward pass groups the same entries by table row: :attr:`transpose` = (``order_t``: entry ids by table
    row, or None where the caller gives the rest directly; ``bag_t``: their bags; ``offsets_t``; ``weights_t``: the
    default weights in that order). Built on first use (one stable argsort) unless given."""

    def __init__(self, index: torch.Tensor, offsets: torch.Tensor, num_table_rows: int,
                 weights: torch.Tensor | None = None, transpose: tuple | None = None) -> None:
        dtype = _index_dtype(index.numel(), num_table_rows, offsets.numel())
        self.index, self.offsets = index.to(dtype), offsets.to(dtype)
        self.num_bags, self.num_table_rows, self.weights = offsets.numel(), num_table_rows, weights
        self._transpose = transpose

    @property
    def num_entries(self) -> int:
        """E, the number of entries over all bags."""
        return self.index.numel()

    def bag_of_entries(self) -> torch.Tensor:
        """The bag of every entry (int64)."""
        ends = torch.cat([self.offsets[1:].long(), self.offsets.new_full((1,), self.num_entries).long()])
        return torch.repeat_interleave(torch.arange(self.num_bags, device=self.index.device),
                                       ends - self.offsets.long())

    @property
    def transpose(self) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(order_t, bag_t, offsets_t, weights_t): the entries grouped by table row (class docstring)."""
        if self._transpose is None:
            order_t = torch.argsort(self.index, stable=True)
            bag_t = self.bag_of_entries().index_select(0, order_t).to(self.index.dtype)
            counts = torch.bincount(self.index, minlength=self.num_table_rows)
            weights_t = None if self.weights is None else self.weights.index_select(0, order_t)
            self._transpose = (order_t, bag_t, _starts(counts, self.index.dtype), weights_t)
        return self._transpose


class MaskedPlan(BagPlan):
    """``plan`` with inverted dropout on its entries: entry e weighted ``scale`` (· its own weight) where ``kept[e]``
    (bool, one per entry in plan order), else 0; ``scale`` a number or one per entry (blocks of members with their
    own dropout rates). The backward's column-major weights come from gathering ``kept`` as bytes (4× less data
    than gathering float weights), on first use."""

    def __init__(self, plan: BagPlan, kept: torch.Tensor, scale: float | torch.Tensor) -> None:
        weights = kept.view(torch.uint8).to(torch.float32).mul_(scale)  # bool → float through uint8: vectorised
        if plan.weights is not None:
            weights.mul_(plan.weights)
        super().__init__(plan.index, plan.offsets, plan.num_table_rows, weights)
        self._parent, self._kept, self._scale = plan, kept, scale

    @property
    def transpose(self) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The parent plan's grouping by table row, with the dropout-scaled weights in that order."""
        if self._transpose is None:
            order_t, bag_t, offsets_t, weights_t = self._parent.transpose
            scale = self._scale
            if isinstance(scale, torch.Tensor):
                scale = scale.index_select(0, order_t)
            weights = self._kept.index_select(0, order_t).view(torch.uint8).to(torch.float32).mul_(scale)
            if weights_t is not None:
                weights.mul_(weights_t)
            self._transpose = (order_t, bag_t, offsets_t, weights)
        return self._transpose


def bag_mm(plan: BagPlan, table: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """out[g] = Σ_{e ∈ bag g} w_e · table[index_e] → (num_bags, D), for table (num_table_rows, D) and entry weights
    ``weights`` (E,) (default: ``plan.weights``); differentiable in ``table`` and ``weights``."""
    return _BagMM.apply(table, weights, plan)


class _BagMM(torch.autograd.Function):
    @staticmethod
    def forward(table: torch.Tensor, weights: torch.Tensor | None, plan: BagPlan) -> torch.Tensor:
        if table.shape[0] != plan.num_table_rows:
            raise ValueError(f"this BagPlan reads {plan.num_table_rows} table rows, got {table.shape[0]}")
        if plan.num_entries == 0:
            return table.new_zeros(plan.num_bags, table.shape[1])
        # detached inputs: embedding_bag then skips the bookkeeping for its own backward (which is not used)
        return F.embedding_bag(plan.index, table.detach(), plan.offsets, mode="sum",
                               per_sample_weights=plan.weights if weights is None else weights.detach())

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        table, weights, plan = inputs
        ctx.plan, ctx.default_weights = plan, weights is None
        ctx.save_for_backward(table if ctx.needs_input_grad[1] else None, weights)

    @staticmethod
    def vmap(info, in_dims: tuple, table: torch.Tensor, weights: torch.Tensor | None, plan: BagPlan):
        """Under ``torch.func.vmap`` (models stacked by :mod:`gnnbench.training.functional_stack`): a batched table
        with shared entry weights is one product whose columns hold every batch member's (one ``embedding_bag`` for
        all). Per-member entry weights (attention coefficients) have no such form: one product per member, each over
        every entry (a loop of R large calls, not of small ones)."""
        table_dim, weights_dim, _ = in_dims
        if weights_dim is not None:
            weights = weights.movedim(weights_dim, 0)
            tables = table.movedim(table_dim, 0) if table_dim is not None else [table] * weights.shape[0]
            return torch.stack([_BagMM.apply(t, w, plan) for t, w in zip(tables, weights, strict=True)]), 0
        if table_dim is None:
            return _BagMM.apply(table, weights, plan), None
        columns = table.movedim(table_dim, 1)  # (rows, batch, D)
        out = _BagMM.apply(columns.reshape(columns.shape[0], -1), weights, plan)
        return out.view(out.shape[0], *columns.shape[1:]), 1

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        table, weights = ctx.saved_tensors
        plan = ctx.plan
        grad = grad.contiguous()
        grad_table = grad_weights = None
        if ctx.needs_input_grad[0]:
            if plan.num_entries == 0:
                grad_table = grad.new_zeros(plan.num_table_rows, grad.shape[1])
            else:
                order_t, bag_t, offsets_t, weights_t = plan.transpose
                if not ctx.default_weights:
                    weights_t = weights.index_select(0, order_t)
                grad_table = F.embedding_bag(bag_t, grad, offsets_t, mode="sum", per_sample_weights=weights_t)
        if ctx.needs_input_grad[1]:  # ∂L/∂w_e = ⟨∂out[bag_e], table[index_e]⟩: a sampled product (SDDMM)
            crow = torch.cat([plan.offsets, plan.offsets.new_full((1,), plan.num_entries)])
            with warnings.catch_warnings():  # "sparse CSR support is in beta": SDDMM is tested here
                warnings.simplefilter("ignore", UserWarning)
                pattern = torch.sparse_csr_tensor(crow, plan.index, grad.new_zeros(plan.num_entries),
                                                  (plan.num_bags, plan.num_table_rows), check_invariants=False)
                grad_weights = torch.sparse.sampled_addmm(pattern, grad, table.t(), beta=0.0).values()
        return grad_table, grad_weights, None
