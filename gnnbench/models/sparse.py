"""Sparse primitives shared by the models, on plain torch ops (the training hot path does not import PyG, whose
import alone costs ~5 s and ~170 MB per process).

* Segment reductions over an index vector (sum, mean, max, softmax) — what PyG's ``torch_geometric.utils.scatter``
  provides; empty segments give 0, like PyG and DGL's builtin reducers — and :class:`SparseAdjacency`, a weighted
  adjacency as CSR with its transpose kept for the backward pass.
* :class:`InEdges` / :class:`MaxPlan`: edges sorted by destination and per-node maxima over padded in-degree blocks
  (or, on CPU, a max-reducing CSR product) with an (N, d) backward (GraphSAGE's max-pool aggregator), also over B
  stacked message sets at once.
* :class:`AttentionGraph` / :func:`attention` / :func:`attention_heads`: softmax attention over in-edges for many
  heads at once on block-diagonal sparse products (``embedding_bag`` on CPU), with a hand-written backward (GAT);
  sources and destinations may be different node sets; dropout on the coefficients and on the aggregated features.
* :class:`BagPlan` / :func:`bag_mm`: sums of weighted table rows (``embedding_bag``) with the transposed grouping
  prebuilt for the backward pass; :class:`CSRPattern` builds them for a fixed sparse matrix replicated over B
  blocks (one block per initialisation of a stacked model) and, with dropout, from a fresh Bernoulli draw over the
  stored entries of every block (:meth:`CSRPattern.dropout_plan`, :class:`MaskedPlan`).
* Dropout draws from the global torch RNG: :func:`bernoulli_mask`, :func:`dropout_mask`, :func:`bernoulli_positions`.
* Padded dense batches: :func:`to_dense_batch` (node rows → (B, n_max, F) and a mask) and :func:`to_dense_adjacency`
  ((B, n_max, n_max)), PyG's ``to_dense_batch`` / ``to_dense_adj`` as one scatter each (the dense-pooling models).

Why ``embedding_bag``: on one CPU core its sum kernel runs a sparse–dense product 2–3× faster than torch's CSR
``mm`` (MKL), both for one wide product (N, 1280 columns) and for block-diagonal ones, and it takes int32 indices.
Its own backward sorts the indices on every call; here the transposed grouping is built once (or, for a dropout
draw, by one sort of the kept entries) and the backward is a second ``embedding_bag``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F

# ---------------------------------------------------------------------------------------------------------
# Segment reductions and a weighted adjacency


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
    def forward(ctx, matrix: torch.Tensor, transpose: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        ctx.transpose = transpose
        return matrix @ x

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return None, None, ctx.transpose @ grad


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


# ---------------------------------------------------------------------------------------------------------
# In-edges sorted by destination, and maxima over padded in-degree blocks


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
        return self._padded_blocks()[0]

    @property
    def pads(self) -> list[torch.Tensor]:
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


# ---------------------------------------------------------------------------------------------------------
# Attention over in-edges for H heads at once, on sparse matrix products.
#
# Gathering a message z_u (H·d wide) per edge and scattering it back materialises E × H·d tensors (hundreds of
# MB on a PATTERN batch); here the aggregation is a product with a block-diagonal CSR matrix (one block of
# attention weights per head) instead, and the backward pass is written out so that it needs no per-edge
# message either: with a_uv the pre-activation score, s = LeakyReLU(a), w_uv = exp(s_uv − shift_v),
# P_v = Σ_u w_uv z_u, den_v = Σ_u w_uv, out = P / den and q_uv = w_uv · LeakyReLU'(a_uv),
#     ∂L/∂z_u  = Σ_v w_uv ∂P_v,
#     ∂L/∂er_v = ⟨[∂P_v, ∂den_v], Σ_u q_uv [z_u, 1]⟩,    ∂L/∂el_u = ⟨[z_u, 1], Σ_v q_uv [∂P_v, ∂den_v]⟩:
# three sparse products. Only per-edge score inputs (edgereprfeat) and attention dropout need the per-edge
# gradient ⟨∂P_v, z_u⟩ (a sampled dense product, SDDMM). Softmax shift: the exact maximum per destination,
# so every node with in-edges has den_v ≥ 1 (its maximal edge contributes exp(0)); dropout acts on the
# normalised α, i.e. on w in the numerator only.
#
# Sources and destinations may be different node sets (a bipartite block: the destinations of a layer are the
# nodes whose outputs are needed, the sources their neighbours), numbered 0..num_src-1 and 0..num_dst-1.


class AttentionGraph:
    """The edges u→v sorted by destination (CSR order), with block-diagonal CSR structures built on demand and
    shared by every layer of a forward pass. ``perm[i]`` is the original index of CSR edge i.

    ``num_nodes`` numbers both ends; give ``num_src`` for a bipartite block whose sources are numbered apart
    (then ``num_nodes`` counts the destinations)."""

    def __init__(self, edge_index: torch.Tensor, num_nodes: int, num_src: int | None = None) -> None:
        src, dst = edge_index
        self.edge_index, self.num_edges = edge_index, src.numel()
        self.num_nodes = self.num_dst = num_nodes
        self.num_src = num_nodes if num_src is None else num_src
        self.perm = _argsort(dst)
        self.src, self.dst = src[self.perm], dst[self.perm]
        self._perm_t: torch.Tensor | None = None
        self._structures: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}

    @property
    def perm_t(self) -> torch.Tensor:
        """CSR positions of the edges in source order (the transpose's CSR order)."""
        if self._perm_t is None:
            src = self.edge_index[0]
            if bool((src[1:] >= src[:-1]).all()):  # edge lists usually come sorted by source: no second sort
                self._perm_t = torch.empty_like(self.perm)
                self._perm_t[self.perm] = torch.arange(self.num_edges, device=src.device)
            else:
                self._perm_t = _argsort(self.src)
        return self._perm_t

    def _structure(self, blocks: int, dense_blocks: int, transpose: bool) -> tuple[torch.Tensor, torch.Tensor]:
        key = (blocks, dense_blocks, transpose)
        if key not in self._structures:
            e = self.num_edges
            if transpose:
                rows, cols, n_rows, n_cols = self.edge_index[0], self.dst[self.perm_t], self.num_src, self.num_dst
            else:
                rows, cols, n_rows, n_cols = self.dst, self.src, self.num_dst, self.num_src
            dtype = torch.int32 if blocks * max(n_rows, n_cols, e) < 2 ** 31 else torch.int64  # int32: faster
            device = cols.device
            crow = torch.zeros(n_rows + 1, dtype=dtype, device=device)
            torch.cumsum(torch.bincount(rows, minlength=n_rows), 0, out=crow[1:])
            block = torch.arange(blocks, dtype=dtype, device=device).unsqueeze(1)
            block_crow = torch.cat([(crow[:-1] + block * e).reshape(-1), crow.new_full((1,), blocks * e)])
            block_col = (cols.to(dtype) + (block % dense_blocks) * n_cols).reshape(-1)
            self._structures[key] = (block_crow, block_col)
        return self._structures[key]

    def spmm(self, values: torch.Tensor, dense: torch.Tensor, transpose: bool = False,
             ordered: bool = False) -> torch.Tensor:
        """out[k, v] = Σ_{u→v} values[k, uv] · dense[k mod K', u] (Σ over out-edges with ``transpose``).

        values (K, E) in CSR order (with ``ordered``: already in the transpose's order, ``perm_t``); dense
        (K', N_src, W) (with ``transpose``: (K', N_dst, W)) with K' dividing K; out (K, N_dst, W) (``transpose``:
        (K, N_src, W)). A product with a block-diagonal matrix whose block k is M_k[v, u] = values[k, uv], as one
        ``embedding_bag`` over its CSR structure (on CPU ~1.6× faster than CSR ``mm``; CSR ``mm`` elsewhere)."""
        blocks, (dense_blocks, n_in, width) = values.shape[0], dense.shape
        n_out = self.num_src if transpose else self.num_dst
        if self.num_edges == 0:
            return dense.new_zeros(blocks, n_out, width)
        if transpose and not ordered:
            values = values.index_select(1, self.perm_t)
        crow, col = self._structure(blocks, dense_blocks, transpose)
        dense = dense.reshape(dense_blocks * n_in, width)
        if dense.device.type == "cpu":
            out = F.embedding_bag(col, dense, crow[:-1], mode="sum", per_sample_weights=values.reshape(-1))
            return out.view(blocks, n_out, width)
        with warnings.catch_warnings():  # "sparse CSR support is in beta": CSR @ dense is stable and tested here
            warnings.simplefilter("ignore", UserWarning)
            matrix = torch.sparse_csr_tensor(crow, col, values.reshape(-1), (blocks * n_out, dense_blocks * n_in),
                                             check_invariants=False)
        return (matrix @ dense).view(blocks, n_out, width)

    def sddmm(self, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        """r[k, uv] = ⟨left[k, v], right[k, u]⟩ for every CSR edge u→v; left (K, N_dst, W), right (K, N_src, W)
        → (K, E)."""
        blocks, _, width = left.shape
        if self.num_edges == 0:
            return left.new_zeros(blocks, 0)
        crow, col = self._structure(blocks, blocks, False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            pattern = torch.sparse_csr_tensor(crow, col, left.new_zeros(blocks * self.num_edges),
                                              (blocks * self.num_dst, blocks * self.num_src), check_invariants=False)
            sampled = torch.sparse.sampled_addmm(pattern, left.reshape(blocks * self.num_dst, width),
                                                 right.reshape(blocks * self.num_src, width).t(), beta=0.0)
        return sampled.values().view(blocks, self.num_edges)

    def max_in(self, x: torch.Tensor) -> torch.Tensor:
        """max_{u→v} x[k, u] for every destination v, x (K, N_src) → (K, N_dst); 0 where v has no in-edge."""
        return self.max_in_rows(x.t().contiguous()).t()

    def max_in_rows(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`max_in` node-major: x (N_src, K) → (N_dst, K)."""
        if x.device.type != "cpu" or not self.num_edges:  # the max-reducing sparse product is CPU-only
            return scatter_max(x.index_select(0, self.src), self.dst, self.num_dst)
        crow, col = self._structure(1, 1, False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            ones = torch.sparse_csr_tensor(crow, col, x.new_ones(self.num_edges), (self.num_dst, self.num_src),
                                           check_invariants=False)
        return torch.sparse.mm(ones, x, "amax")

    def edge_sums(self, values: torch.Tensor, transpose: bool = False) -> torch.Tensor:
        """Σ_{u→v} values[uv] for every destination v, values (E, K) edge-major in CSR order → (N_dst, K) (with
        ``transpose`` the sums over every source's out-edges → (N_src, K)). Edge-major, each edge adds a contiguous
        row of K: on CPU one ``embedding_bag`` over the rows, ~15× faster than the same sums over (K, E)."""
        n_out = self.num_src if transpose else self.num_dst
        if values.device.type != "cpu" or not self.num_edges:
            return values.new_zeros(n_out, values.shape[1]).index_add_(0, self.src if transpose else self.dst, values)
        key = ("sums", transpose)
        if key not in self._structures:
            crow, _ = self._structure(1, 1, transpose)
            order = self.perm_t if transpose else torch.arange(self.num_edges, device=crow.device)
            self._structures[key] = (order.to(crow.dtype), crow[:-1])
        order, offsets = self._structures[key]
        return F.embedding_bag(order, values, offsets, mode="sum")


def _argsort(index: torch.Tensor) -> torch.Tensor:
    """Stable argsort of node ids (in int32 where they fit: about twice as fast)."""
    if index.numel() and index.numel() < 2 ** 31 and int(index.max()) < 2 ** 31:
        index = index.to(torch.int32)
    return torch.argsort(index, stable=True)


class _Attention(torch.autograd.Function):
    """h'_v = Σ_u α_uv z_u with α = softmax over the in-edges of v of LeakyReLU(el_u + er_v (+ es_uv)),
    optional dropout on α; all heads at once, head-major: z (H, N_src, d), el (H, N_src), er (H, N_dst),
    es (E, H) in edge order or None, mask (H, E) in CSR order (kept/(1 − p) or 0) or None → (H, N_dst, d)."""

    @staticmethod
    def forward(ctx, z, el, er, es, graph: AttentionGraph, slope: float, dropout: float, mask):
        *lead, n_src, d = z.shape  # leading dimensions (e.g. initialisation, head) flatten into the heads
        heads, n_dst = math.prod(lead), graph.num_dst
        src, dst = graph.src, graph.dst
        el_t, er_t = el.contiguous(), er.contiguous()
        s = el_t.index_select(1, src)
        s += er_t.index_select(1, dst)
        if es is not None:
            s += es.t().index_select(1, graph.perm)
        s = F.leaky_relu_(s, slope)
        if es is None:  # LeakyReLU is monotone: max_u s_uv = LeakyReLU(max_u el_u + er_v), node-level work
            shift = F.leaky_relu_(graph.max_in(el_t) + er_t, slope)
        else:
            shift = scatter_max(s.t(), dst, n_dst).t()
        if mask is None and dropout > 0:
            mask = torch.empty_like(s).bernoulli_(1 - dropout).div_(1 - dropout)
        # the fast backward needs w and q = w · LeakyReLU'(a) side by side: keep room for q next to w
        fast = mask is None and es is None
        values = s.new_empty(2 * heads if fast and any(ctx.needs_input_grad[:3]) else heads, s.shape[1])
        w = torch.sub(s, shift.index_select(1, dst), out=values[:heads]).exp_()  # max edge of a node: 1
        zp = z.new_empty(*lead, n_src, d + 1)  # [z, 1]: the softmax denominator comes out of the same product
        zp[..., :d] = z  # also the copy into head-major order when z is a strided view
        zp[..., d] = 1
        zp = zp.view(heads, n_src, d + 1)
        if mask is None:
            agg = graph.spmm(w, zp)
            numerator, den = agg[..., :d], agg[..., d]
        else:
            numerator = graph.spmm(w * mask, zp[..., :d])
            den = graph.spmm(w, zp[..., d:])[..., 0]
        den = den.clamp(min=1)  # ≥ 1 wherever there are in-edges; nodes without them get 0
        out = numerator / den.unsqueeze(-1)
        ctx.save_for_backward(s, mask, zp, out, den)
        ctx.values = values  # an intermediate that backward writes q into: kept off the version-checked list
        ctx.graph, ctx.slope, ctx.has_es, ctx.lead = graph, slope, es is not None, lead
        return out

    @staticmethod
    def backward(ctx, grad_out):
        s, mask, zp, out, den = ctx.saved_tensors
        values, graph, slope = ctx.values, ctx.graph, ctx.slope
        heads, n_src, d1 = zp.shape
        d = d1 - 1
        w = values[:heads]
        grad = zp.new_empty(heads, graph.num_dst, d1)  # [∂P, ∂den]
        torch.div(grad_out, den.unsqueeze(-1), out=grad[..., :d])
        torch.sum(grad[..., :d] * out, -1, out=grad[..., d]).neg_()
        grad_es = None
        if values.shape[0] == 2 * heads:  # no dropout, no edge scores: no per-edge gradient needed
            q = torch.ops.aten.leaky_relu_backward.grad_input(w, s, slope, True, grad_input=values[heads:])
            both = graph.spmm(values, grad, transpose=True)  # [Σ_v w_uv ∂·_v ; Σ_v q_uv ∂·_v]
            grad_z = both[:heads, :, :d]
            grad_el = (both[heads:] * zp).sum(-1)
            grad_er = (graph.spmm(q, zp) * grad).sum(-1)
        else:  # the per-edge gradient ⟨∂P_v, z_u⟩ is needed: one SDDMM
            q = torch.ops.aten.leaky_relu_backward(w, s, slope, True)
            grad_p = grad[..., :d].contiguous()
            grad_z = graph.spmm(w if mask is None else w * mask, grad_p, transpose=True)
            per_edge = graph.sddmm(grad_p, zp[..., :d].contiguous())
            if mask is not None:
                per_edge *= mask
            per_edge += grad[..., d].index_select(1, graph.dst)
            per_edge *= q  # ∂L/∂a (H, E)
            grad_er = graph.spmm(per_edge, zp.new_ones(1, n_src, 1))[..., 0]
            grad_el = graph.spmm(per_edge, zp.new_ones(1, graph.num_dst, 1), transpose=True)[..., 0]
            if ctx.has_es:
                grad_es = torch.empty_like(per_edge.t())
                grad_es[graph.perm] = per_edge.t()
        return grad_z.reshape(*ctx.lead, n_src, d), grad_el, grad_er, grad_es, None, None, None, None


def attention(z: torch.Tensor, el: torch.Tensor, er: torch.Tensor, graph: AttentionGraph, slope: float,
              dropout: float = 0.0, training: bool = False, edge_scores: torch.Tensor | None = None,
              ) -> torch.Tensor:
    """Σ_u α_uv z_u per head, α = Dropout(softmax_u LeakyReLU_slope(el_u + er_v (+ edge_scores_uv))).

    z (N, H·d), el/er (N, H), edge_scores (E, H) in the batch's edge order → (N, H·d); 0 without in-edges."""
    n, heads = el.shape
    z_heads = z.view(n, heads, -1).transpose(0, 1)
    out = _Attention.apply(z_heads, el.t(), er.t(), edge_scores, graph, slope, dropout if training else 0.0, None)
    return out.transpose(0, 1).reshape(graph.num_dst, -1)


def attention_heads(z: torch.Tensor, el: torch.Tensor, er: torch.Tensor, graph: AttentionGraph, slope: float,
                    mask: torch.Tensor | None = None, z_mask: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`attention` in head-major layout: z (H, N_src, d) (or (…, N_src, d) with the leading dimensions
    flattening to H, e.g. a strided (R, heads, N_src, d) view), el (H, N_src), er (H, N_dst), attention dropout
    given as its mask (H, E) in the CSR edge order of ``graph`` (kept entries 1/(1 − p), dropped 0) or None, and
    dropout on the aggregated z as its mask ``z_mask`` (z's shape) or None → (H, N_dst, d):

        out_v = Σ_u α_uv m_uv (z_u ∘ n_u)          α = softmax_u LeakyReLU(el_u + er_v), m = mask, n = z_mask

    (the scores do not see z's dropout)."""
    return _DroppedAttention.apply(z, el, er, graph, slope, mask, z_mask)


class _DroppedAttention(torch.autograd.Function):
    """:func:`attention_heads` (optional dropout masks), with a backward that needs no per-edge product ⟨∂P_v, z_u⟩.

    With w_uv = exp(s_uv − shift_v), s = LeakyReLU(a), a = el_u + er_v, m the mask on α, x = z ∘ n (n the mask on z),
    P_v = Σ_u w_uv m_uv x_u, den_v = Σ_u w_uv (α's dropout does not renormalise), out = P / den and q = w·LeakyReLU'(a):

        ∂L/∂a_uv = q_uv (m_uv ⟨∂P_v, x_u⟩ + ∂den_v),                       ∂P = ∂out / den, ∂den = −⟨∂out, out⟩ / den
        ∂L/∂x_u  = Σ_v w_uv m_uv ∂P_v
        ∂L/∂el_u = Σ_v ∂L/∂a_uv = ⟨x_u, Σ_v q_uv m_uv ∂P_v⟩ + Σ_v q_uv ∂den_v
        ∂L/∂er_v = Σ_u ∂L/∂a_uv = ⟨∂P_v, Σ_u q_uv m_uv x_u⟩ + ∂den_v Σ_u q_uv

    i.e. sparse products (one transposed product over [w∘m ; q∘m] together) and node-level dot products; the
    sampled dense product (SDDMM) per edge costs as much on CPU. The softmax shift is the exact per-node maximum."""

    @staticmethod
    def forward(ctx, z, el, er, graph: AttentionGraph, slope: float, mask, z_mask):
        *lead, n_src, d = z.shape
        out, saved = _dropped_attention(z.reshape(-1, n_src, d), el, er, graph, slope, mask, z_mask)
        ctx.save_for_backward(*saved)
        ctx.graph, ctx.slope, ctx.lead = graph, slope, lead
        return out

    @staticmethod
    def backward(ctx, grad_out):
        grad_z, grad_el, grad_er = _dropped_attention_backward(ctx, grad_out)
        return grad_z.view(*ctx.lead, *grad_z.shape[1:]), grad_el, grad_er, None, None, None, None


def _dropped_attention(z, el, er, graph: AttentionGraph, slope: float, mask, z_mask):
    """The forward of :class:`_DroppedAttention` for z (H, N_src, d) → (out, tensors for the backward). Per-edge
    arrays are edge-major (E, H): gathers and per-node sums then move contiguous rows of H (several times faster on
    CPU than along the edges of (H, E)); the products with z read (H, E) values, transposed once."""
    heads, n_src, d = z.shape
    src, dst = graph.src, graph.dst
    el_rows, er_rows = el.t().contiguous(), er.t().contiguous()  # (N, H)
    s = el_rows.index_select(0, src)
    s += er_rows.index_select(0, dst)
    s = F.leaky_relu_(s, slope)  # (E, H)
    shift = F.leaky_relu_(graph.max_in_rows(el_rows) + er_rows, slope)  # LeakyReLU is monotone: the maximum of s
    w = s.sub(shift.index_select(0, dst)).exp_()  # the maximal edge of a node: 1
    den = graph.edge_sums(w).clamp_(min=1)  # (N_dst, H); ≥ 1 wherever there are in-edges, 0 without them
    mask_rows = None if mask is None else mask.t()  # (E, H)
    x = z * z_mask.reshape(z.shape) if z_mask is not None else z.contiguous()  # the table of the sparse product
    weighted = w if mask_rows is None else w * mask_rows
    out = graph.spmm(weighted.t().contiguous(), x).div_(den.t().unsqueeze(-1))
    return out, (s, w, mask_rows, x, z_mask, out, den)


def _dropped_attention_backward(ctx, grad_out):
    """∂z, ∂el, ∂er of :func:`_dropped_attention` (see :class:`_DroppedAttention`)."""
    s, w, mask_rows, x, z_mask, out, den = ctx.saved_tensors
    graph, heads = ctx.graph, w.shape[1]
    grad_p = grad_out / den.t().unsqueeze(-1)  # (H, N_dst, d)
    grad_den = _row_dot(grad_p, out).neg_().t().contiguous()  # (N_dst, H)
    q = torch.ops.aten.leaky_relu_backward(w, s, ctx.slope, True)  # (E, H)
    wm, qm = (w, q) if mask_rows is None else (w * mask_rows, q * mask_rows)
    both_t = torch.cat([wm, qm], dim=1).index_select(0, graph.perm_t).t().contiguous()  # (2H, E) transpose order
    both = graph.spmm(both_t, grad_p, transpose=True, ordered=True)  # [Σ_v w m ∂P_v ; Σ_v q m ∂P_v] per source
    per_edge = q * grad_den.index_select(0, graph.dst)  # q_uv ∂den_v: its sums over u and over v
    grad_el = _row_dot(both[heads:], x) + graph.edge_sums(per_edge, transpose=True).t()
    grad_er = _row_dot(graph.spmm(qm.t().contiguous(), x), grad_p) + graph.edge_sums(per_edge).t()
    grad_z = both[:heads]
    if z_mask is not None:
        grad_z *= z_mask.reshape(grad_z.shape)
    return grad_z, grad_el, grad_er


def _row_dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """⟨a[…, :], b[…, :]⟩ over the last (short) dimension: a matrix–vector product with ones, ~3× faster on CPU than
    ``sum(-1)`` over a dimension of 8."""
    product = (a * b).reshape(-1, a.shape[-1])
    return torch.mv(product, product.new_ones(a.shape[-1])).view(a.shape[:-1])


# ---------------------------------------------------------------------------------------------------------
# Bags of weighted table rows (embedding_bag) with a prebuilt transpose


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
        return self.index.numel()

    def bag_of_entries(self) -> torch.Tensor:
        """The bag of every entry (int64)."""
        ends = torch.cat([self.offsets[1:].long(), self.offsets.new_full((1,), self.num_entries).long()])
        return torch.repeat_interleave(torch.arange(self.num_bags, device=self.index.device),
                                       ends - self.offsets.long())

    @property
    def transpose(self) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        if self._transpose is None:
            order_t = torch.argsort(self.index, stable=True)
            bag_t = self.bag_of_entries().index_select(0, order_t).to(self.index.dtype)
            counts = torch.bincount(self.index, minlength=self.num_table_rows)
            weights_t = None if self.weights is None else self.weights.index_select(0, order_t)
            self._transpose = (order_t, bag_t, _starts(counts, self.index.dtype), weights_t)
        return self._transpose


class MaskedPlan(BagPlan):
    """``plan`` with inverted dropout on its entries: entry e weighted ``scale`` (· its own weight) where ``kept[e]``
    (bool, one per entry in plan order), else 0. The backward's column-major weights come from gathering ``kept`` as
    bytes (4× less data than gathering float weights), on first use."""

    def __init__(self, plan: BagPlan, kept: torch.Tensor, scale: float) -> None:
        weights = kept.view(torch.uint8).to(torch.float32).mul_(scale)  # bool → float through uint8: vectorised
        if plan.weights is not None:
            weights.mul_(plan.weights)
        super().__init__(plan.index, plan.offsets, plan.num_table_rows, weights)
        self._parent, self._kept, self._scale = plan, kept, scale

    @property
    def transpose(self) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        if self._transpose is None:
            order_t, bag_t, offsets_t, weights_t = self._parent.transpose
            weights = self._kept.index_select(0, order_t).view(torch.uint8).to(torch.float32).mul_(self._scale)
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
    def forward(ctx, table: torch.Tensor, weights: torch.Tensor | None, plan: BagPlan) -> torch.Tensor:
        if table.shape[0] != plan.num_table_rows:
            raise ValueError(f"this BagPlan reads {plan.num_table_rows} table rows, got {table.shape[0]}")
        ctx.plan, ctx.default_weights = plan, weights is None
        ctx.save_for_backward(table if ctx.needs_input_grad[1] else None, weights)
        if plan.num_entries == 0:
            return table.new_zeros(plan.num_bags, table.shape[1])
        # detached inputs: embedding_bag then skips the bookkeeping for its own backward (which is not used)
        return F.embedding_bag(plan.index, table.detach(), plan.offsets, mode="sum",
                               per_sample_weights=plan.weights if weights is None else weights.detach())

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


# ---------------------------------------------------------------------------------------------------------
# Dropout draws


def bernoulli_positions(n: int, p: float, device: torch.device | str = "cpu") -> torch.Tensor:
    """The sorted positions of the successes in n independent Bernoulli(p) trials (int64), from the global torch RNG.

    Drawn as geometric gaps between successes, g = ⌊log(U) / log(1 − p)⌋ with U uniform on (0, 1], so the work is
    proportional to the ~n·p successes instead of n trials (5× fewer random numbers at dropout 0.8). U comes from
    ``torch.rand`` (float32, multiples of 2⁻²⁴), which caps a gap at log(2⁻²⁴)/log(1 − p): a gap that long has
    probability ≈ 2⁻²⁴ ≈ 6·10⁻⁸, the same resolution as a float32 uniform compared with p."""
    if n <= 0 or p <= 0:
        return torch.zeros(0, dtype=torch.int64, device=device)
    if p >= 1:
        return torch.arange(n, device=device)
    scale = 1.0 / math.log1p(-p)
    found: list[torch.Tensor] = []
    start = 0  # first trial not covered yet
    while start < n:
        mean = (n - start) * p
        draws = int(mean + 6.0 * math.sqrt(mean * (1 - p)) + 16)  # enough in all but ~1e-9 of the calls
        gaps = torch.rand(draws, device=device).neg_().log1p_().mul_(scale)  # log(1 − U) / log(1 − p) ≥ 0
        steps = gaps.to(torch.int64).add_(1)
        steps[0] += start - 1
        positions = torch.cumsum(steps, 0)
        last = int(positions[-1])
        if last >= n:  # sorted: cut at the first position past the end
            positions = positions[: int(torch.searchsorted(positions, positions.new_full((1,), n)))]
        found.append(positions)
        start = last + 1
    return found[0] if len(found) == 1 else torch.cat(found)


def random_words(count: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """``count`` int64 words from the global torch RNG whose low 63 bits are uniform (``random_``)."""
    return torch.empty(count, dtype=torch.int64, device=device).random_()


def bernoulli_mask(shape: tuple[int, ...], keep: float, device: torch.device | str = "cpu") -> torch.Tensor:
    """Independent Bernoulli(``keep``) trials (True = success) as a bool tensor of ``shape``, from the global torch RNG.

    Where the rarer outcome has probability ≤ ``POSITIONS_BELOW`` only its positions are drawn
    (:func:`bernoulli_positions`); otherwise each trial compares 31 uniform random bits (half a word of
    :func:`random_words`) with round(keep·2³¹), so its success probability is ``keep`` to within 2⁻³²
    (``torch.rand(…) < keep`` in float32 resolves 2⁻²⁴)."""
    n = math.prod(shape)
    if keep >= 1 or keep <= 0:
        return torch.full(shape, keep >= 1, dtype=torch.bool, device=device)
    if min(keep, 1 - keep) <= POSITIONS_BELOW:
        rare = keep if keep < 0.5 else 1 - keep
        mask = torch.full((n,), keep >= 0.5, dtype=torch.bool, device=device)
        return mask.index_fill_(0, bernoulli_positions(n, rare, device), keep < 0.5).view(shape)
    halves = random_words((n + 1) // 2, device).view(torch.int32)
    halves.bitwise_and_(0x7FFFFFFF)  # 31 uniform bits in both halves of a word (random_ leaves bit 63 at 0)
    return torch.lt(halves[:n], round(keep * 2**31)).view(shape)


def dropout_mask(shape: tuple[int, ...], p: float, device: torch.device | str = "cpu") -> torch.Tensor:
    """Inverted-dropout mask: each element independently 1/(1 − p) with probability 1 − p, else 0 (float32).

    Where the rarer outcome has probability ≤ ``POSITIONS_BELOW`` only its positions are drawn
    (:func:`bernoulli_positions`, work ∝ their number), otherwise one comparison of random bits per element
    (:func:`bernoulli_mask`); both ~3× faster than ``F.dropout`` on CPU (measured at p = 0.8 and 0.5)."""
    n = math.prod(shape)
    keep = 1.0 - p
    if min(p, keep) > POSITIONS_BELOW:
        return bernoulli_mask(shape, keep, device).view(torch.uint8).to(torch.float32).mul_(1.0 / keep)
    if keep >= 0.5:
        mask = torch.full((n,), 1.0 / keep, device=device).index_fill_(0, bernoulli_positions(n, p, device), 0.0)
    else:
        mask = torch.zeros(n, device=device).index_fill_(0, bernoulli_positions(n, keep, device), 1.0 / keep)
    return mask.view(shape)


POSITIONS_BELOW = 0.2  # measured crossover of the two ways to draw a dropout mask (one CPU core)


# ---------------------------------------------------------------------------------------------------------
# A fixed sparse matrix, replicated over blocks


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


def unit_adjacency(edge_index: torch.Tensor, num_nodes: int, dtype: torch.dtype = torch.float32) -> SparseAdjacency:
    """M[v, u] = number of edges u→v: ``propagate`` sums the in-neighbours' rows."""
    return SparseAdjacency(edge_index, torch.ones(edge_index.shape[1], dtype=dtype, device=edge_index.device),
                           num_nodes)


# ---------------------------------------------------------------------------------------------------------
# Padded dense batches (PyG's to_dense_batch / to_dense_adj), vectorised


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
