"""MoNet (Monti et al.): the benchmark's ``GMMLayer`` with degree-based pseudo-coordinates (Dwivedi et al.,
Appendix B.1.2, Eqs. 13–15; the released code's ``layers/gmm_layer.py`` and ``nets/*/mo_net.py``); and
:class:`StackedMoNet`, the "Pitfalls of GNN Evaluation" network (Shchur et al.; the released code
shchur/gnn-benchmark, ``gnnbench/models/monet.py``; docs/protocols/pitfalls.md) trained as R initialisations at once
(:mod:`gnnbench.models.stacked`).

Pseudo-coordinates, with deg = in-degree: every edge u→v gets p_uv = (1/√(deg(u)+1), 1/√(deg(v)+1)), and
layer ℓ sees its own projection Tanh(Linear_ℓ(2 → dim)) of it (``pseudo_proj[ℓ]``). With K Gaussian kernels
(μ_k, inv_sigma_k ∈ R^dim) and fc Linear(d_in → K·d_out, no bias):

    w_k(u→v) = exp(−½ Σ_d (p_uv,d − μ_k,d)² · inv_sigma_k,d²)
    x_v      = Σ_k Σ_{u→v} w_k(u→v) · (fc h_u)_k            (sum aggregation; 0 without in-edges)
    h'       = Dropout(h + ReLU(BN(x)) + bias)               BN if batch_norm, + h if residual

Quirks kept: the bias is added *after* the residual; ``bn_node_h`` is always created (it counts in the
parameter total even when batch_norm is false); the residual is off when input and output widths differ;
no input dropout in the original (the generic ``in_feat_dropout`` is 0 in every config). Initialisation as
the original: fc xavier-normal with gain √2, μ ~ N(0, 0.1²), inv_sigma = 1, bias 0; the projections keep
PyTorch's Linear default.

Speed: the K weighted adjacencies are one CSR matrix M (N × N·K) with M[v, u·K + k] = w_k(u→v), so the
aggregation is a single sparse–dense product with fc(h) viewed as (N·K, d_out) — no (E, K, d_out) message
tensor. Its backward (:class:`_KernelSpMM`) uses a prebuilt transpose for the features and a sampled
dense–dense product (SDDMM) for the kernel weights: on the CPU much faster than gathering messages per edge and
scattering them back, or than autograd through a CSR tensor (docs/performance.md), and far lighter on memory. The
kernel weights are computed once per distinct (deg(u), deg(v)) pair (:class:`DegreePairs`) and gathered per edge:
identical numbers, without (E, K, dim) element-wise work.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.models.base import Architecture, Representation
from gnnbench.models.blocks import cached_structure, is_edge_index, post_aggregation, stack_widths
from gnnbench.models.sparse import BagPlan, InEdges, bag_mm, lexsort_pairs
from gnnbench.models.stacked import (
    DroppedInput,
    Hops,
    HopsCache,
    InputFeatures,
    ModelConfig,
    NodeGraph,
    StackedModel,
    adjacency_pattern,
    dropout,
    glorot_,
    row_degrees,
    stacked_linear,
    stacked_parameter,
)


def _csr(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, shape: tuple[int, int]) -> torch.Tensor:
    with warnings.catch_warnings():  # "sparse CSR support is in beta": CSR @ dense and SDDMM are tested here
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(crow, col, values, shape, check_invariants=False)


def _offsets(counts: torch.Tensor) -> torch.Tensor:
    crow = counts.new_zeros(counts.numel() + 1)
    torch.cumsum(counts, 0, out=crow[1:])
    return crow


class KernelAdjacency:
    """The sparsity pattern of M (N × N·K), M[v, u·K + k] = w_k(u→v), and of its transpose, for one batch.

    Entries of M follow the sorted edges of :class:`InEdges` (kernel index fastest), so M's values are
    ``w.reshape(-1)`` for kernel weights ``w`` (E, K) in that edge order. Mᵀ's values are the same weights
    gathered by ``transpose_index``.
    """

    def __init__(self, edges: InEdges, kernels: int) -> None:
        n, k = edges.num_nodes, kernels
        kernel = torch.arange(k, device=edges.src.device)
        self.shape = (n, n * k)
        self.crow = _offsets(edges.in_degree * k)
        self.col = (edges.src.unsqueeze(1) * k + kernel).reshape(-1)
        # Mᵀ row u·K + k lists the out-edges of u (sorted by destination) with their weight w_k
        by_src = lexsort_pairs(edges.src, edges.dst, n)  # positions in the sorted edge order
        src = edges.src.index_select(0, by_src)
        out_degree = torch.bincount(src, minlength=n)
        start = _offsets(out_degree)[:-1].index_select(0, src)
        local = torch.arange(src.numel(), device=src.device) - start
        slot = (start * k + local).unsqueeze(1) + kernel * out_degree.index_select(0, src).unsqueeze(1)
        self.transpose_index = torch.empty_like(self.col)
        self.transpose_index[slot.reshape(-1)] = (by_src.unsqueeze(1) * k + kernel).reshape(-1)
        self.transpose_col = torch.empty_like(self.col)
        self.transpose_col[slot.reshape(-1)] = edges.dst.index_select(0, by_src).repeat_interleave(k)
        self.transpose_crow = _offsets(out_degree.repeat_interleave(k))

    def propagate(self, weights: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """M @ x for kernel weights (E, K) and x (N·K, d); differentiable in both."""
        return _KernelSpMM.apply(weights, x, self)


class _KernelSpMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, weights: torch.Tensor, x: torch.Tensor, adj: KernelAdjacency) -> torch.Tensor:
        matrix = _csr(adj.crow, adj.col, weights.reshape(-1), adj.shape)
        ctx.save_for_backward(weights, x)
        ctx.adj, ctx.matrix = adj, matrix
        return matrix @ x

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        weights, x = ctx.saved_tensors
        adj = ctx.adj
        grad_weights = grad_x = None
        grad = grad.contiguous()
        if ctx.needs_input_grad[0]:  # ∂L/∂w_k(u→v) = ⟨grad_v, x_{u·K+k}⟩ on M's pattern only
            sampled = torch.sparse.sampled_addmm(ctx.matrix, grad, x.t(), beta=0.0)
            grad_weights = sampled.values().view(weights.shape)
        if ctx.needs_input_grad[1]:
            values = weights.reshape(-1).index_select(0, adj.transpose_index)
            transpose = _csr(adj.transpose_crow, adj.transpose_col, values, (adj.shape[1], adj.shape[0]))
            grad_x = transpose @ grad
        return grad_weights, grad_x, None


class GMMLayer(nn.Module):
    r"""The benchmark's MoNet ``GMMLayer`` (sum aggregation). With K Gaussian kernels (μ_k, inv_sigma_k ∈ R^dim),
    fc Linear(d_in → K·d_out, no bias) and pseudo-coordinates p_uv ∈ R^dim of every edge u→v:

        w_k(u→v) = exp(−½ Σ_d (p_uv,d − μ_k,d)² · inv_sigma_k,d²)
        x_v      = Σ_k Σ_{u→v} w_k(u→v) · (fc h_u)_k                 (0 without in-edges)
        out      = Dropout(h + ReLU(BN(x)) + b)                      (BN if batch_norm, + h iff residual and d_in =
                                                                      d_out; the bias after the residual)

    fc xavier-normal with gain √2 (after ``nn.Linear``'s own initialisation), μ ~ N(0, 0.1²), inv_sigma = 1, b = 0;
    ``bn_node_h`` always exists. The benchmark's p_uv = Tanh(Linear(1/√(deg(u)+1), 1/√(deg(v)+1))) with the
    in-degree and one projection per layer, owned by :class:`MoNet`.

    Args:
        in_dim: input width d_in.
        out_dim: output width d_out.
        dim: pseudo-coordinate width.
        kernels: number of kernels K.
        dropout: dropout probability on the output.
        batch_norm: apply ``bn_node_h``.
        residual: add the input (when d_in = d_out).

    Shapes:
        - input: plain ``(x, edge_index, pseudo)`` (PyG's ``GMMConv`` order) with node features (N, d_in), edge
          indices (2, E) and pseudo-coordinates (E, dim) in that edge order (the sorted edges and the kernel
          adjacency are built once and cached for the edge_index tensor); or the batch's ``(h, pseudo_t,
          adjacency, pairs)`` (see :meth:`forward`).
        - output: node features (N, d_out).
    """

    def __init__(self, in_dim: int, out_dim: int, dim: int, kernels: int, dropout: float, batch_norm: bool,
                 residual: bool) -> None:
        super().__init__()
        self.mu = nn.Parameter(torch.empty(kernels, dim))
        self.inv_sigma = nn.Parameter(torch.empty(kernels, dim))
        self.fc = nn.Linear(in_dim, kernels * out_dim, bias=False)
        self.bn_node_h = nn.BatchNorm1d(out_dim)
        self.bias = nn.Parameter(torch.empty(out_dim))
        self.out_dim, self.dropout, self.batch_norm = out_dim, dropout, batch_norm
        self.residual = residual and in_dim == out_dim
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The original's initialisation: fc Xavier-normal with gain √2, μ ~ N(0, 0.1²), inv_sigma = 1, bias 0; BN
        reset."""
        nn.init.xavier_normal_(self.fc.weight, gain=nn.init.calculate_gain("relu"))
        nn.init.normal_(self.mu, 0.0, 0.1)
        nn.init.ones_(self.inv_sigma)
        nn.init.zeros_(self.bias)
        self.bn_node_h.reset_parameters()

    def kernel_weights(self, pseudo_t: torch.Tensor) -> torch.Tensor:
        """w (E, K) for projected pseudo-coordinates given transposed, (dim, E).

        Computed as (K, E) blocks, one coordinate at a time: an (E, K, dim) broadcast with its size-2 inner
        dimension is much slower on the CPU."""
        exponent = None
        for d in range(self.mu.shape[1]):
            term = (pseudo_t[d] - self.mu[:, d, None]).square() * self.inv_sigma[:, d, None].square()
            exponent = term if exponent is None else exponent + term
        return torch.exp(-0.5 * exponent).t().contiguous()

    def forward(self, h: torch.Tensor, pseudo_t: torch.Tensor, adjacency: KernelAdjacency | torch.Tensor,
                pairs: DegreePairs | None = None) -> torch.Tensor:
        """``pseudo_t``: this layer's projected pseudo-coordinates, transposed (dim, E) in the edge order of
        ``adjacency`` — or (dim, R²) for the rows of ``pairs``' table, which every edge then reads. Or the plain
        ``(x, edge_index, pseudo)``: pseudo-coordinates (E, dim) in the order of ``edge_index``."""
        if is_edge_index(pseudo_t):
            edge_index, pseudo, num_nodes, kernels = pseudo_t, adjacency, h.shape[0], self.mu.shape[0]
            edges, adjacency = cached_structure(self, edge_index, (num_nodes,),
                                                lambda: _kernel_structures(edge_index, num_nodes, kernels))
            pseudo_t, pairs = pseudo.index_select(0, edges.order).t(), None
        weights = self.kernel_weights(pseudo_t)
        if pairs is not None:
            weights = weights.index_select(0, pairs.index)
        x = adjacency.propagate(weights, self.fc(h).view(-1, self.out_dim))
        x = post_aggregation(x, h, self.bn_node_h, batch_norm=self.batch_norm, residual=self.residual,
                             dropout=0.0, training=self.training)
        return F.dropout(x + self.bias, self.dropout, self.training)  # bias after the residual


def _kernel_structures(edge_index: torch.Tensor, num_nodes: int, kernels: int) -> tuple[InEdges, KernelAdjacency]:
    edges = InEdges.of(edge_index, num_nodes)
    return edges, KernelAdjacency(edges, kernels)


def pseudo_coordinates(edges: InEdges, dtype: torch.dtype) -> torch.Tensor:
    """(1/√(deg(u)+1), 1/√(deg(v)+1)) for every sorted edge u→v, deg = in-degree, transposed → (2, E)."""
    scale = (edges.in_degree.to(dtype) + 1).rsqrt()
    return torch.stack([scale.index_select(0, edges.src), scale.index_select(0, edges.dst)])


class DegreePairs:
    """An edge's pseudo-coordinate depends only on (deg(u), deg(v)): with R distinct in-degrees, every edge
    reads its row of an R² table of pseudo-coordinates (R² ≤ 2E; ~2,000 rows against ~640,000 edges on a
    PATTERN batch). Layers project the table and compute kernel weights per table row, then gather them per
    edge — the same numbers as per edge, without (E, K) element-wise work."""

    def __init__(self, edges: InEdges, dtype: torch.dtype) -> None:
        degrees, rank = torch.unique(edges.in_degree, return_inverse=True)
        distinct = degrees.numel()
        scale = (degrees.to(dtype) + 1).rsqrt()
        # table row i·R + j holds (scale of the i-th degree, scale of the j-th degree)
        self.table_t = torch.stack([scale.repeat_interleave(distinct), scale.repeat(distinct)])
        self.index = rank.index_select(0, edges.src) * distinct + rank.index_select(0, edges.dst)


def project(projection: nn.Sequential, pseudo_t: torch.Tensor) -> torch.Tensor:
    """``projection`` = Sequential(Linear(2, dim), Tanh) applied to every column of ``pseudo_t`` → (dim, E)."""
    linear = projection[0]
    return torch.tanh(torch.addmm(linear.bias.unsqueeze(1), linear.weight, pseudo_t))


class MoNet(Architecture):
    """L GMM layers (hidden → hidden, then hidden → out_dim), each with its own pseudo-coordinate projection."""

    required = ("L", "hidden_dim", "out_dim", "residual", "batch_norm", "dropout", "kernel", "pseudo_dim_MoNet")

    def __init__(self, hidden_dim: int, out_dim: int, num_layers: int, dropout: float, batch_norm: bool,
                 residual: bool, kernels: int, pseudo_dim: int) -> None:
        super().__init__()
        if kernels < 1 or pseudo_dim < 1:
            raise ValueError(f"kernel and pseudo_dim_MoNet must be positive (got {kernels}, {pseudo_dim})")
        widths = stack_widths(hidden_dim, out_dim, num_layers)
        self.layers = nn.ModuleList(GMMLayer(a, b, pseudo_dim, kernels, dropout, batch_norm, residual)
                                    for a, b in widths)
        self.pseudo_proj = nn.ModuleList(nn.Sequential(nn.Linear(2, pseudo_dim), nn.Tanh()) for _ in widths)
        self.kernels = kernels
        self.input_width, self.out_width = hidden_dim, out_dim

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta) -> MoNet:
        """From ``hidden_dim``, ``out_dim``, ``L``, ``dropout``, ``batch_norm``, ``residual``, ``kernel`` (K) and
        ``pseudo_dim_MoNet``."""
        return cls(cfg["hidden_dim"], cfg["out_dim"], cfg["L"], cfg["dropout"], cfg["batch_norm"], cfg["residual"],
                   cfg["kernel"], cfg["pseudo_dim_MoNet"])

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, batch: GraphBatch) -> Representation:
        """The L layers, each with its own projection of the batch's degree pseudo-coordinates; node embeddings
        (N, out_dim)."""
        edges = InEdges.of(batch.edge_index, h.shape[0])
        adjacency = KernelAdjacency(edges, self.kernels)
        pairs = DegreePairs(edges, h.dtype)
        for layer, projection in zip(self.layers, self.pseudo_proj, strict=True):
            h = layer(h, project(projection, pairs.table_t), adjacency, pairs)
        return Representation(h)


# ---------------------------------------------------------------------------------------------------------
# "Pitfalls of GNN Evaluation" (the released code shchur/gnn-benchmark, gnnbench/models/monet.py): R initialisations
# at once


def kernel_means(kernels: int) -> list[float]:
    """The original's ``get_mean_inits``: μ_k = −1 + 1/(2K) + 2k/K (−0.75 and 0.25 for K = 2)."""
    return [-1.0 + 1.0 / (2 * kernels) + 2.0 * k / kernels for k in range(kernels)]


class StackedMoNet(StackedModel):
    """The released code's two-layer MoNet for node classification, R initialisations at once (parameters (R, …)).

    Over the neighbourhoods N⁺(i) of A + I (diagonal set to 1), with deg⁺ the degrees of A + I:

        u_ij   = (1/√deg⁺_i, 1/√deg⁺_j)                               i the target, j ∈ N⁺(i)
        ũ_ij   = tanh(u_ij · W_c + b_c)                               W_c (2, r), b_c (r): shared by both layers
        w_k    = Π_d exp(−½ (ũ_ij,d − μ_k,d)² / (1e−14 + σ_k,d²))      μ_k, σ_k (r): shared by both layers
        w̃_k    = w_k(i, j) / (1e−14 + Σ_{j' ∈ N⁺(i)} w_k(i, j'))
        H'_i   = Σ_k Σ_{j ∈ N⁺(i)} w̃_k(i, j) · (Dropout(H) · G_k)_j  one dropout mask shared by the K kernels

    ReLU after layer 1 (K kernels of ``hidden_size`` units, summed), none after layer 2 (C units); no bias. L2 on the
    layer-1 G_k only. Initialisation: G_k and W_c Glorot-uniform, b_c = 0, μ_k = the constant −1 + 1/(2K) + 2k/K,
    σ_k = 1 (neither regularised). ``weight1`` holds G_k of layer 1 as [:, :, k, :] (R, F, K, hidden), so one sparse
    product computes all K kernels.

    Differs from :class:`GMMLayer` above (the benchmarking-gnns layer): pseudo-coordinates from A + I degrees of
    both ends, one projection and one set of kernels shared by the layers, Gaussian kernels normalised over each
    neighbourhood, σ (not 1/σ), kernel outputs summed from K separate weight matrices, no bias, batch norm or
    residual. The kernel-weighted aggregation of all R·K (initialisation, kernel) pairs is one ``embedding_bag``
    (:func:`~gnnbench.models.sparse.bag_mm`) over the (R, nodes, K, F') table, differentiable in the weights. The
    unnormalised w_k depend on an entry's (deg⁺_i, deg⁺_j) only: computed once per distinct pair (~600 against
    ~4,200 entries in a CORA training block) and gathered per entry, much faster than computing them per entry.
    """

    l2_parameters = ("weight1",)
    member_keys = ("weight_decay", "dropout_prob")

    def __init__(self, graph: NodeGraph, seeds: list[int], hidden: int, kernels: int, r: int, dropout_prob: float,
                 weight_decay: float) -> None:
        super().__init__(graph, weight_decay)
        inits = len(seeds)
        self.weight1 = stacked_parameter(inits, graph.num_features, kernels, hidden)
        self.weight2 = stacked_parameter(inits, hidden, kernels, graph.num_classes)
        self.coordinate_weight = stacked_parameter(inits, 2, r)
        self.coordinate_bias = stacked_parameter(inits, r)
        self.mu = stacked_parameter(inits, kernels, r)
        self.sigma = stacked_parameter(inits, kernels, r)
        self.kernels, self.dropout_prob = kernels, dropout_prob
        pattern = adjacency_pattern(graph, self_loops=True)
        self.degree = row_degrees(pattern)  # deg⁺ (float)
        self.hops = HopsCache(pattern, depth=2)
        self.features = InputFeatures(graph.features)
        self.reset_parameters(seeds)

    @classmethod
    def from_config(cls, config: ModelConfig, graph: NodeGraph, seeds: list[int]) -> StackedMoNet:
        """From ``hidden_size``, ``num_kernels`` (K), ``r``, ``dropout_prob`` and ``weight_decay`` of a pitfalls model
        config."""
        return cls(graph, seeds, config.positive_int("hidden_size"), config.positive_int("num_kernels"),
                   config.positive_int("r"), config.probability("dropout_prob"), config.nonnegative("weight_decay"))

    def init_weights(self, r: int, generator: torch.Generator) -> None:
        """Initialisation ``r`` from ``generator``: Glorot-uniform W_c and G_k, μ_k the original's constants, σ_k =
        1 (biases stay 0)."""
        glorot_(self.coordinate_weight[r], generator)
        for weight in (self.weight1, self.weight2):
            for k in range(self.kernels):
                glorot_(weight[r, :, k], generator)
        with torch.no_grad():
            self.mu[r] = torch.tensor(kernel_means(self.kernels)).unsqueeze(1)
            self.sigma[r] = 1.0

    def _structure(self, hops: Hops, level: int, inits: int) -> tuple[BagPlan, torch.Tensor, torch.Tensor,
                                                                         torch.Tensor]:
        """Block ``level``'s bag plan (bag (r, i) sums table rows (r, j, k) of the (R, |sources|, K, F') input over
        its entries (e, k)), the pseudo-coordinates of its distinct (deg⁺_i, deg⁺_j) pairs (P, 2), the pair of every
        entry (E,) and its target row (E,); cached."""
        key = ("kernels", level, inits)
        if key not in hops.extras:
            block, k = hops.blocks[level], self.kernels
            targets, sources = hops.global_ids(level), hops.global_ids(level + 1)
            degree = self.degree.long()
            target_degree, source_degree = degree[targets[block.row]], degree[sources[block.col]]
            pairs, pair = torch.unique(target_degree * (int(degree.max()) + 1) + source_degree, return_inverse=True)
            pair_degrees = torch.stack([pairs // (int(degree.max()) + 1), pairs % (int(degree.max()) + 1)], dim=1)
            coordinates = pair_degrees.to(torch.float32).rsqrt()  # (1/√deg⁺_i, 1/√deg⁺_j) per pair
            kernel = torch.arange(k, device=block.col.device)
            replica = torch.arange(inits, device=block.col.device).view(-1, 1, 1)
            index = ((block.col.view(1, -1, 1) + replica * block.num_cols) * k + kernel).reshape(-1)
            offsets = ((block.crow[:-1].view(1, -1) + replica.view(-1, 1) * block.nnz) * k).reshape(-1)
            plan = BagPlan(index, offsets, inits * block.num_cols * k)
            hops.extras[key] = (plan, coordinates, pair, block.row)
        return hops.extras[key]

    def _kernel_weights(self, coordinates: torch.Tensor, pair: torch.Tensor, rows: torch.Tensor,
                        num_rows: int) -> torch.Tensor:
        """w̃ (R, E, K): the normalised Gaussian kernel weights of every entry. The weights depend on an entry's
        (deg⁺_i, deg⁺_j) pair only: computed per pair (``coordinates`` (P, 2)), then gathered per entry (``pair``);
        node-major (P or E, R, K) so that the gathers and the per-target sums move contiguous rows."""
        projected = torch.tanh(torch.einsum("pc,rcd->prd", coordinates, self.coordinate_weight)
                               + self.coordinate_bias)  # (P, R, r)
        inv_variance = (1e-14 + self.sigma.square()).reciprocal()  # (R, K, r)
        exponent = None
        for d in range(projected.shape[2]):  # r is small: per dimension, not a reduction over a short last axis
            term = (projected[:, :, None, d] - self.mu[:, :, d]).square() * inv_variance[:, :, d]
            exponent = term if exponent is None else exponent + term
        weights = torch.exp(-0.5 * exponent).index_select(0, pair)  # (E, R, K)
        totals = weights.new_zeros(num_rows, *weights.shape[1:]).index_add_(0, rows, weights)
        return (weights / (1e-14 + totals.index_select(0, rows))).permute(1, 0, 2)

    def _layer(self, transformed: torch.Tensor, hops: Hops, level: int) -> torch.Tensor:
        """Σ_k W̃_k · transformed[..., k, :] for transformed (R, |sources|, K, F') → (R, |targets|, F')."""
        inits, _, _, width = transformed.shape
        plan, coordinates, pair, rows = self._structure(hops, level, inits)
        weights = self._kernel_weights(coordinates, pair, rows, hops.size(level))
        out = bag_mm(plan, transformed.reshape(-1, width), weights.reshape(-1))
        return out.view(inits, hops.size(level), width)

    def forward(self, nodes: torch.Tensor | None, training: bool) -> torch.Tensor:
        """Logits (R, M, C) at ``nodes`` (None: all), from the two layers of the class docstring."""
        hops = self.hops.get(nodes)
        inits, k, p = self.inits, self.kernels, self.dropout_prob if training else 0.0
        hidden, classes = self.weight1.shape[3], self.weight2.shape[3]
        x = DroppedInput(self.features.rows(hops, 2), inits, p).matmul(self.weight1.reshape(inits, -1, k * hidden))
        h = torch.relu(self._layer(x.view(inits, -1, k, hidden), hops, 1))  # (R, |S1|, hidden)
        h = stacked_linear(dropout(h, p, training), self.weight2.reshape(inits, hidden, k * classes))
        return self._layer(h.reshape(inits, -1, k, classes), hops, 0)
