"""In-edges sorted by destination (:class:`InEdges`) and per-node maxima over them (:class:`MaxPlan`): padded
in-degree blocks, or on CPU a max-reducing CSR product, with an (N, d) backward (GraphSAGE's max-pool
aggregator), also over B stacked message sets at once."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch

from gnnbench.models.sparse.adjacency import SparseAdjacency


def lexsort_pairs(major: torch.Tensor, minor: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """The permutation sorting node-id pairs by (major, minor); 32-bit keys where they fit (~2× faster)."""
    key = major * num_nodes + minor
    if num_nodes * num_nodes < 2**31:
        key = key.int()
    return torch.argsort(key, stable=True)


class MaxPlan:
    """Where every node's in-edge messages lie, padded per degree class, for a maximum with a cheap backward.

    Nodes are grouped by in-degree into classes of width w (w grows geometrically, so padding stays under
    ~25 %); class c gathers its rows as a dense (n_c, w_c, d) block whose padding points at an extra zero
    row. ``pads[c]`` (n_c, w_c) index the rows of the message tensor, ``nodes[c]`` the nodes of the class.
    """

    def __init__(self, rows: torch.Tensor, num_rows: int, crow: torch.Tensor, in_degree: torch.Tensor,
                 growth: float = 1.25) -> None:
        """``rows[i]``: the message row of the i-th sorted in-edge, one of ``num_rows``. The padded blocks are built
        on first use (the CPU float32 path never reads them)."""
        self.num_rows, self.num_nodes = num_rows, in_degree.numel()
        self.crow, self.rows, self.in_degree, self.growth = crow, rows, in_degree, growth
        self._blocks: tuple[list[torch.Tensor], list[torch.Tensor]] | None = None
        self._ones: torch.Tensor | None = None

    @property
    def nodes(self) -> list[torch.Tensor]:
        """The nodes of every degree class (built on first use)."""
        return self._padded_blocks()[0]

    @property
    def pads(self) -> list[torch.Tensor]:
        """Every degree class's (n_c, w_c) message rows, ``num_rows`` (the zero row) where padded."""
        return self._padded_blocks()[1]

    def _padded_blocks(self) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        if self._blocks is not None:
            return self._blocks
        rows, crow, in_degree = self.rows, self.crow, self.in_degree
        nodes_of: list[torch.Tensor] = []
        pads: list[torch.Tensor] = []
        self._blocks = (nodes_of, pads)
        if rows.numel() == 0:
            return self._blocks
        order = torch.argsort(in_degree)
        sorted_degree = in_degree.index_select(0, order)
        widths, width, largest = [], 0, int(sorted_degree[-1])
        while width < largest:
            width = min(max(width + 1, int(width * self.growth)), largest)
            widths.append(width)
        bounds = torch.tensor(widths, device=order.device)
        ends = torch.searchsorted(sorted_degree, bounds, right=True).tolist()
        start = int(torch.searchsorted(sorted_degree, bounds.new_zeros(1), right=True))  # nodes without in-edges
        for width, end in zip(widths, ends, strict=True):
            if end > start:
                nodes = order[start:end]
                slots = torch.arange(width, device=order.device)
                index = (crow.index_select(0, nodes).unsqueeze(1) + slots).clamp_(max=rows.numel() - 1)
                valid = slots < in_degree.index_select(0, nodes).unsqueeze(1)
                nodes_of.append(nodes)
                pads.append(torch.where(valid, rows.index_select(0, index.view(-1)).view_as(index), self.num_rows))
            start = end
        return self._blocks

    def max(self, messages: torch.Tensor) -> torch.Tensor:
        """out[v] = elementwise max over the padded rows of v (the padding row is 0; 0 without in-edges).

        ``messages`` (rows, d), or (B, rows, d) for B independent message sets (stacked initialisations) → (B, N, d).
        Exact for messages ≥ 0 (every use here: ReLU outputs). The backward sends each output's gradient
        to the one row that attained it (like DGL's builtin max), an (N, d) scatter instead of (E, d) work.
        On CPU, for float32 (rows, d), a max-reducing CSR product instead (:class:`_ReducedMax`: no gathered
        (E, d) blocks, ~2× faster with a gradient and ~15× without; the same numbers, and among tied rows the
        gradient goes to the one with the largest id instead of the first)."""
        if (messages.dim() == 2 and messages.device.type == "cpu" and messages.dtype == torch.float32
                and self.rows.numel() and self.num_rows < 2 ** _ReducedMax.ROW_BITS):
            if messages.shape[0] != self.num_rows:
                raise ValueError(f"this MaxPlan reduces {self.num_rows} message rows, got {messages.shape[0]}")
            return _ReducedMax.apply(messages, self)
        return _PaddedMax.apply(messages, self)

    def csr_ones(self, dtype: torch.dtype) -> torch.Tensor:
        """The 0/1 matrix (nodes × message rows) of the plan, CSR (cached per dtype)."""
        if self._ones is None or self._ones.dtype != dtype:
            with warnings.catch_warnings():  # "sparse CSR support is in beta": the reducing product is tested here
                warnings.simplefilter("ignore", UserWarning)
                self._ones = torch.sparse_csr_tensor(self.crow, self.rows, torch.ones(self.rows.numel(), dtype=dtype),
                                                     (self.num_nodes, self.num_rows), check_invariants=False)
        return self._ones


class _ReducedMax(torch.autograd.Function):
    """:meth:`MaxPlan.max` of float32 messages ≥ 0 (rows, d) on CPU with ``torch.sparse.mm(…, "amax")``.

    Without a gradient, one product. With one, the row attaining each maximum comes out of the same product over
    float64 keys bits(m)·2^ROW_BITS + row: for m ≥ 0 the bit pattern of a float32 orders like its value, so the
    largest key holds the maximum (its high bits) and a row attaining it (its low bits), exactly (< 2⁵³). torch's
    own reducing product with a gradient tracks the argument ~3× slower. The backward is an (N, d) scatter."""

    ROW_BITS = 22  # 31 value bits + 22 row bits ≤ 53: exact in float64

    @staticmethod
    def forward(ctx, messages: torch.Tensor, plan: MaxPlan) -> torch.Tensor:
        if not ctx.needs_input_grad[0]:
            return torch.sparse.mm(plan.csr_ones(messages.dtype), messages, "amax")
        rows, width = messages.shape
        shift = float(2 ** _ReducedMax.ROW_BITS)
        row_ids = torch.arange(rows, dtype=torch.float64, device=messages.device).unsqueeze(1)
        keys = messages.view(torch.int32).to(torch.float64).mul_(shift).add_(row_ids)
        best = torch.sparse.mm(plan.csr_ones(torch.float64), keys, "amax").to(torch.int64)
        argmax = best & (2 ** _ReducedMax.ROW_BITS - 1)
        empty = plan.crow[1:] == plan.crow[:-1]
        if bool(empty.any()):  # nodes without in-edges (output 0) send their gradient to an extra row, dropped
            argmax[empty] = rows
        ctx.save_for_backward(argmax)
        ctx.rows = rows
        return (best >> _ReducedMax.ROW_BITS).to(torch.int32).view(torch.float32)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (argmax,) = ctx.saved_tensors
        width = argmax.shape[1]
        flat = argmax * width + torch.arange(width, device=grad.device)
        grad_messages = grad.new_zeros((ctx.rows + 1) * width).index_add_(0, flat.view(-1), grad.reshape(-1))
        return grad_messages.view(ctx.rows + 1, width)[:-1], None


class _PaddedMax(torch.autograd.Function):
    """The maximum is ``amax`` (vectorised; ``max`` with indices is ~40× slower on CPU over a middle dimension). Where
    a gradient is needed, the slot that attains it is the first slot equal to the maximum, found with one more
    ``amax``: over the equality mask weighted by descending slot numbers (also vectorised)."""

    @staticmethod
    def forward(ctx, messages: torch.Tensor, plan: MaxPlan) -> torch.Tensor:
        *lead, rows, width = messages.shape  # (rows, d) or (B, rows, d): the gathers run along the row dimension
        if rows != plan.num_rows:
            raise ValueError(f"this MaxPlan reduces {plan.num_rows} message rows, got {rows}")
        dim = len(lead)
        padded = torch.cat([messages, messages.new_zeros(*lead, 1, width)], dim=dim)
        out = messages.new_zeros(*lead, plan.num_nodes, width)
        argmax = None
        if ctx.needs_input_grad[0]:
            argmax = torch.full((*lead, plan.num_nodes, width), rows, dtype=torch.long, device=messages.device)
        for nodes, pad in zip(plan.nodes, plan.pads, strict=True):
            block = padded.index_select(dim, pad.view(-1)).view(*lead, *pad.shape, width)
            values = block.amax(dim=dim + 1)
            out.index_copy_(dim, nodes, values)
            if argmax is None:
                continue
            slots = pad.shape[1]  # rank = slots − slot for the slots attaining the maximum, 0 elsewhere
            ranks = torch.arange(slots, 0, -1, device=pad.device, dtype=_rank_dtype(slots)).view(-1, 1)
            hit = torch.eq(block, values.unsqueeze(dim + 1))
            slot = (slots - torch.mul(hit, ranks).amax(dim=dim + 1)).long()
            argmax.index_copy_(dim, nodes, pad.expand(*lead, -1, -1).gather(dim + 1, slot))
        ctx.save_for_backward(argmax)
        ctx.rows = rows
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (argmax,) = ctx.saved_tensors
        *lead, _, width = argmax.shape
        rows = ctx.rows + 1  # with the padding row
        flat = argmax * width + torch.arange(width, device=grad.device)
        if lead:  # block b's rows start at b·rows·width
            flat += (torch.arange(lead[0], device=grad.device) * (rows * width)).view(-1, 1, 1)
        grad_messages = grad.new_zeros(math.prod(lead) * rows * width).index_add_(0, flat.view(-1),
                                                                                  grad.reshape(-1))
        return grad_messages.view(*lead, rows, width).narrow(len(lead), 0, ctx.rows), None


def _rank_dtype(slots: int) -> torch.dtype:
    return torch.int16 if slots < 2**15 else torch.int32


@dataclass
class InEdges:
    """The edges of a batch sorted by (destination, source): CSR order, the in-edges of every node contiguous.

    ``order`` maps sorted positions to the batch's edge ids; ``in_degree`` (int64) are the segment lengths,
    ``crow`` their offsets."""

    order: torch.Tensor
    src: torch.Tensor
    dst: torch.Tensor
    in_degree: torch.Tensor
    crow: torch.Tensor
    num_nodes: int

    @classmethod
    def of(cls, edge_index: torch.Tensor, num_nodes: int) -> InEdges:
        """The sorted in-edges of ``edge_index`` (2, E) on ``num_nodes`` nodes."""
        src, dst = edge_index
        order = lexsort_pairs(dst, src, num_nodes)
        dst_sorted = dst.index_select(0, order)
        in_degree = torch.bincount(dst_sorted, minlength=num_nodes)
        crow = in_degree.new_zeros(num_nodes + 1)
        torch.cumsum(in_degree, 0, out=crow[1:])
        return cls(order, src.index_select(0, order), dst_sorted, in_degree, crow, num_nodes)

    def max_plan(self, over_edges: bool = False) -> MaxPlan:
        """Per-node maxima of node rows x[src] (default) or of per-edge messages in sorted edge order."""
        if over_edges:
            return MaxPlan(torch.arange(self.src.numel(), device=self.src.device), self.src.numel(), self.crow,
                           self.in_degree)
        return MaxPlan(self.src, self.num_nodes, self.crow, self.in_degree)

    def mean_adjacency(self, dtype: torch.dtype) -> SparseAdjacency:
        """M[v, u] = 1 / in_degree(v) for every edge u→v: ``propagate(x)`` is the mean over in-neighbours."""
        weight = self.in_degree.clamp(min=1).to(dtype).reciprocal()
        return SparseAdjacency(torch.stack([self.src, self.dst]), weight.index_select(0, self.dst),
                               self.num_nodes)
