"""GAT as the benchmark uses it (Dwivedi et al., Appendix B.1.2, Eqs. 10–12; the released code's
``layers/gat_layer.py`` and ``nets/*/gat_net.py``): DGL 0.6.1 ``GATConv`` inside an ELU/BN/residual layer, and the
per-head custom layers of the TSP/COLLAB edge-feature analysis (Appendix E.2.1, Eqs. 58–64); and :class:`StackedGAT`,
the "Pitfalls of GNN Evaluation" network (Shchur et al.; the released code shchur/gnn-benchmark,
``gnnbench/models/gat.py``; docs/protocols/pitfalls.md) trained as R initialisations at once
(:mod:`gnnbench.models.stacked`).

Standard layer (``layer_type`` "dgl" or absent) — DGL ``GATConv(d_in, d, H, feat_drop=p, attn_drop=p,
negative_slope=0.2, bias=True)``. For every edge u→v and head k (softmax over the in-edges of v):

    x = Dropout(h);  z_k = W_k x                       (no bias; W is (H·d, d_in))
    s_uv,k = LeakyReLU_0.2(a_l,k · z_u,k + a_r,k · z_v,k)
    α_uv,k = Dropout(softmax_u(s_uv,k))
    h'_v   = ‖_k Σ_u α_uv,k z_u,k + b             (flattened heads, bias of width H·d)
    h ← h + ELU(BN(h'))                           (BN if batch_norm; residual iff d_in = H·d; no dropout after)

Quirks reproduced: the bias exists since DGL 0.6 (DGL ≤0.5 had none: paper-era counts are smaller by
Σ H·d); ``batchnorm_h`` is created only when batch_norm is true (unlike GCN's); nodes without in-edges get
h'_v = b. W, a_l, a_r are Glorot-normal with gain √2 (DGL's ``reset_parameters``), b = 0.

Custom layers (``layer_type`` "edgefeat", "edgereprfeat", "isotropic"; leaky-ReLU slope 0.01, PyTorch's
default): H independent heads of width d whose outputs are concatenated, with the residual on the
concatenation; each head has its own ``nn.Linear``-initialised weights and a BN that always exists.

    edgefeat      z = W h;  α_uv = Dropout(softmax_u LeakyReLU(a · [z_u ‖ z_v]));  h'_v = Σ_u α_uv z_u
                  (the edge input is encoded but never read — as in the original)
    edgereprfeat  z = W_h h, y = W_e e;  c_uv = [y_uv ‖ z_u ‖ z_v];  α_uv = softmax_u LeakyReLU(a · c_uv)
                  (no attention dropout);  h'_v = Σ_u α_uv z_u;  e'_uv = P c_uv + b_P
    isotropic     h'_v = Σ_u W h_u
    then per head h ← Dropout(ELU(BN_h(h'))) (and e ← Dropout(ELU(BN_e(e'))) for edgereprfeat), concatenate
    the heads, add the layer input if the widths agree (for both h and e).

Head-split convention (every GAT net): ``hidden_dim`` is the width of one head, node embeddings are
hidden·H wide, layers 1..L−1 map hidden·H → hidden × H heads and the last maps hidden·H → out_dim with one
head. The custom types encode the edge input to width hidden·H (``Linear`` on ones unless edge_feat).

Decisions (docs/protocols/benchmarking-gnns.md#unknown-settings-are-errors): ``layer_type`` is honoured on every
dataset (the original reads it only for TSP/COLLAB); an unknown value is a config error (the original silently falls
back to the standard layer); ``self_loop`` (false in every config) is supported for the standard layer only, since
added loops have no edge input.
The custom layers' per-head modules are stored stacked (head k's ``fc.weight`` is ``fc_weight[k]``, its
BN(d) is a slice of one BN(H·d): per-feature statistics, so the same numbers) — same parameter count.

Speed. One GEMM per layer for all heads: the attention vectors (and edgereprfeat's projection P) are
folded into the node/edge weight matrices, so z, a_l·z, a_r·z (and P's node parts) come out together.
The attention never materialises a message per edge (:mod:`gnnbench.models.sparse`): the aggregation
and its backward are products with block-diagonal sparse matrices (one block per head), the softmax
denominator comes out of the same product, and the CSR structures are built once per forward and shared
by all layers. A constant edge input is transformed once, and the last edgereprfeat layer skips its edge
output, which no head reads. On the CPU this is several times faster per training step than gather/scatter
message passing (docs/performance.md).
"""

from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.errors import ConfigError
from gnnbench.models.base import Architecture, Representation
from gnnbench.models.blocks import cached_structure, is_edge_index
from gnnbench.models.sparse import (
    AttentionGraph,
    SparseAdjacency,
    add_self_loops,
    attention,
    attention_heads,
    dropout_mask,
)
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
    stacked_linear,
    stacked_parameter,
)


def _linear_init_(weight: torch.Tensor, fan_in: int) -> None:
    """``nn.Linear``'s default (Kaiming-uniform, a = √5): U(−1/√fan_in, 1/√fan_in)."""
    bound = 1.0 / math.sqrt(fan_in)
    nn.init.uniform_(weight, -bound, bound)


def _tail(x: torch.Tensor, bn: nn.BatchNorm1d | None, dropout: float, training: bool) -> torch.Tensor:
    """BN (if given) → ELU → dropout. ELU runs in place only on BN's own output (autograd does not need it)."""
    if bn is not None:
        x = F.elu_(bn(x))
    else:
        x = F.elu(x)
    return F.dropout(x, dropout, training) if dropout > 0 else x


def _attention_graph(layer: nn.Module, graph: AttentionGraph | torch.Tensor, num_nodes: int) -> AttentionGraph:
    """``graph``, or for edge indices (2, E) their :class:`AttentionGraph`, cached on ``layer``."""
    if not isinstance(graph, torch.Tensor):
        return graph
    return cached_structure(layer, graph, (num_nodes,), lambda: AttentionGraph(graph, num_nodes))


def _plain_call(layer: nn.Module, h: torch.Tensor, e, graph, build):
    """(e, structure) of a custom layer's call: ``layer(h, e, structure)`` as the architecture calls it, or the plain
    PyG-order ``layer(x, edge_index, edge_attr)`` (edge_attr optional where the layer does not read it), whose
    structure ``build(edge_index, num_nodes)`` is cached on the layer."""
    if not is_edge_index(e):
        return e, graph
    edge_index, num_nodes = e, h.shape[0]
    return graph, cached_structure(layer, edge_index, (num_nodes, h.device),
                                   lambda: build(edge_index, num_nodes, h.device))


# ---------------------------------------------------------------------------------------------------------
# Attention without attention dropout, lean in memory: per edge and head only w and the sign of the score are kept.


class _InEdgeBags:
    """``embedding_bag`` structures of one :class:`AttentionGraph` for per-head sparse products: the CSR columns and
    row offsets (bag v = the in-edges of v) and the transpose's (bag u = the out-edges of u), int32 where they fit.
    One (E,) column array per direction, shared by every head (a block-diagonal structure would hold one per head)."""

    def __init__(self, graph: AttentionGraph) -> None:
        e = graph.num_edges
        dtype = torch.int32 if max(graph.num_src, graph.num_dst, e) < 2 ** 31 else torch.int64
        self.col = graph.src.to(dtype)
        self.offsets = _offsets(graph.dst, graph.num_dst, dtype)
        self.col_t = graph.dst.index_select(0, graph.perm_t).to(dtype)
        self.offsets_t = _offsets(graph.src, graph.num_src, dtype)
        self.perm_t = graph.perm_t


def _offsets(rows: torch.Tensor, n: int, dtype: torch.dtype) -> torch.Tensor:
    counts = torch.bincount(rows, minlength=n)
    offsets = torch.zeros(n, dtype=dtype, device=rows.device)
    torch.cumsum(counts[:-1], 0, out=offsets[1:])
    return offsets


def _in_edge_bags(graph: AttentionGraph) -> _InEdgeBags:
    """The graph's :class:`_InEdgeBags`, built once per graph (every layer of a forward pass shares them)."""
    bags = graph.__dict__.get("_gat_bags")
    if bags is None:
        bags = graph.__dict__["_gat_bags"] = _InEdgeBags(graph)
    return bags


def _head_products(cols: torch.Tensor, offsets: torch.Tensor, table: torch.Tensor, values: torch.Tensor,
                   out: torch.Tensor) -> torch.Tensor:
    """out[k, v] = Σ_{i in bag v} values[k, i] · table[k mod K', cols[i]] for every head k: one ``embedding_bag``
    per head (on CPU; a CSR product elsewhere). values (K, E); table (K', N_in, W); out (K, N_out, W)."""
    dense_heads = table.shape[0]
    for k in range(values.shape[0]):
        if table.device.type == "cpu":
            out[k] = F.embedding_bag(cols, table[k % dense_heads], offsets, mode="sum",
                                     per_sample_weights=values[k])
        else:
            crow = torch.cat([offsets, offsets.new_full((1,), cols.numel())])
            with warnings.catch_warnings():  # "sparse CSR support is in beta": CSR @ dense is stable
                warnings.simplefilter("ignore", UserWarning)
                matrix = torch.sparse_csr_tensor(crow, cols, values[k], (out.shape[1], table.shape[1]),
                                                 check_invariants=False)
            out[k] = matrix @ table[k % dense_heads]
    return out


class _LeanAttention(torch.autograd.Function):
    """h'_v = ‖_k Σ_u α_uv,k z_u,k with α = softmax over the in-edges of v of LeakyReLU(el_u + er_v), no dropout:
    z (N_src, H·d), el (N_src, H), er (N_dst, H) → (N_dst, H·d). The same numbers and gradients as
    :func:`~gnnbench.models.sparse.attention` (the same products in the same order), keeping per edge and head only
    w = exp(s − shift) (float) and the sign of the pre-activation score (bool), where that function keeps the score
    and room for twice w: with q = w · LeakyReLU'(a), P = Σ_u w z_u, den = Σ_u w and out = P / den,

        ∂z_u = Σ_v w_uv ∂P_v,   ∂el_u = ⟨[z_u, 1], Σ_v q_uv [∂P_v, ∂den_v]⟩,
        ∂er_v = ⟨[∂P_v, ∂den_v], Σ_u q_uv [z_u, 1]⟩

    with ∂P = ∂out / den and ∂den = −⟨∂out, out⟩ / den; the products run per head over one shared (E,) structure."""

    @staticmethod
    def forward(ctx, z, el, er, graph: AttentionGraph, slope: float):
        heads, n_dst, n_src = el.shape[1], graph.num_dst, graph.num_src
        d = z.shape[1] // heads
        bags = _in_edge_bags(graph)
        src, dst = graph.src, graph.dst
        er_rows = er.contiguous()
        a = el.contiguous().index_select(0, src)  # (E, H) edge-major: gathers move contiguous rows
        a += er_rows.index_select(0, dst)
        positive = (a > 0).t().contiguous()  # LeakyReLU'(a) is 1 there, slope elsewhere
        s = F.leaky_relu_(a, slope)
        shift = F.leaky_relu_(graph.max_in_rows(el.contiguous()) + er_rows, slope)  # LeakyReLU is monotone
        s -= shift.index_select(0, dst)
        w = s.exp_().t().contiguous()  # (H, E): the maximal edge of a node weighs 1
        del a, s
        zp = z.new_empty(heads, n_src, d + 1)  # [z, 1]: the softmax denominator comes out of the same product
        zp[..., :d] = z.view(n_src, heads, d).transpose(0, 1)
        zp[..., d] = 1
        agg = _head_products(bags.col, bags.offsets, zp, w, z.new_empty(heads, n_dst, d + 1))
        den = agg[..., d].clamp(min=1)  # ≥ 1 wherever there are in-edges; nodes without them get 0
        out = (agg[..., :d] / den.unsqueeze(-1)).transpose(0, 1).reshape(n_dst, heads * d)
        ctx.save_for_backward(w, positive, zp, out, den)
        ctx.graph, ctx.slope = graph, slope
        return out

    @staticmethod
    def backward(ctx, grad_out):
        w, positive, zp, out, den = ctx.saved_tensors
        graph, slope = ctx.graph, ctx.slope
        bags = _in_edge_bags(graph)
        heads, n_src, d1 = zp.shape
        d, n_dst = d1 - 1, graph.num_dst
        grad = zp.new_empty(heads, n_dst, d1)  # [∂P, ∂den]
        torch.div(grad_out.view(n_dst, heads, d).transpose(0, 1), den.unsqueeze(-1), out=grad[..., :d])
        torch.sum(grad[..., :d] * out.view(n_dst, heads, d).transpose(0, 1), -1, out=grad[..., d]).neg_()
        # per head, so that no (H, E) temporary exists: q_k = w_k · LeakyReLU'(a_k), both in the transpose's order
        both = grad.new_empty(2 * heads, n_src, d1)  # [Σ_v w_uv [∂P_v, ∂den_v] ; Σ_v q_uv [∂P_v, ∂den_v]]
        q_sums = grad.new_empty(heads, n_dst, d1)  # Σ_u q_uv [z_u, 1]
        for k in range(heads):
            q = torch.where(positive[k], w[k], w[k] * slope)
            for j, values in ((k, w[k]), (heads + k, q)):
                _head_products(bags.col_t, bags.offsets_t, grad[k:k + 1], values.index_select(0, bags.perm_t)
                               .unsqueeze(0), both[j:j + 1])
            _head_products(bags.col, bags.offsets, zp[k:k + 1], q.unsqueeze(0), q_sums[k:k + 1])
        grad_z = both[:heads, :, :d].transpose(0, 1).reshape(n_src, heads * d)
        grad_el = (both[heads:] * zp).sum(-1).t()
        grad_er = (q_sums * grad).sum(-1).t()
        return grad_z, grad_el, grad_er, None, None


def lean_attention(z: torch.Tensor, el: torch.Tensor, er: torch.Tensor, graph: AttentionGraph,
                   slope: float) -> torch.Tensor:
    """:func:`~gnnbench.models.sparse.attention` without attention dropout (:class:`_LeanAttention`): z (N, H·d),
    el/er (N, H) → (N, H·d); 0 for nodes without in-edges."""
    if graph.num_edges == 0:
        return attention(z, el, er, graph, slope)
    return _LeanAttention.apply(z, el, er, graph, slope)


# ---------------------------------------------------------------------------------------------------------
# Standard layer: DGL 0.6.1 GATConv → flatten → BN → ELU → residual.


class GATLayer(nn.Module):
    r"""The benchmark's standard GAT layer: DGL 0.6.1 ``GATConv(d_in, d, H, feat_drop=p, attn_drop=p,
    negative_slope=0.2)``, heads flattened, then BN → ELU → residual. For every edge u→v and head k (softmax over
    the in-edges of v):

        x = Dropout(h);  z_k = W_k x
        α_uv,k = Dropout(softmax_u LeakyReLU_0.2(a_l,k · z_u,k + a_r,k · z_v,k))
        h'_v   = ‖_k Σ_{u→v} α_uv,k z_u,k + b
        out    = h + ELU(BN(h'))            (BN if batch_norm, + h iff residual and d_in = H·d; no output dropout)

    Nodes without in-edges get h'_v = b. W, a_l, a_r Glorot-normal with gain √2, b zero; ``batchnorm_h`` exists
    only with batch_norm.

    Args:
        in_dim: input width d_in.
        head_dim: width d of one head.
        heads: number of heads H.
        dropout: feature and attention dropout probability.
        batch_norm: create and apply ``batchnorm_h``.
        residual: add the input (when d_in = H·d).

    Shapes:
        - input: node features (N, d_in); edge indices (2, E) (the :class:`AttentionGraph` is built once and
          cached for that tensor), or an :class:`AttentionGraph` (a batch's, shared by all layers).
        - output: node features (N, H·d).
    """

    def __init__(self, in_dim: int, head_dim: int, heads: int, dropout: float, batch_norm: bool,
                 residual: bool) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        self.fc = nn.Linear(in_dim, heads * head_dim, bias=False)
        self.attn_l = nn.Parameter(torch.empty(1, heads, head_dim))
        self.attn_r = nn.Parameter(torch.empty(1, heads, head_dim))
        self.bias = nn.Parameter(torch.empty(heads * head_dim))
        # the original creates the BN only when it is used (counts differ from GCN's always-created BN)
        self.batchnorm_h = nn.BatchNorm1d(heads * head_dim) if batch_norm else None
        self.dropout = dropout
        self.residual = residual and in_dim == heads * head_dim
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """DGL's initialisation: W, a_l, a_r Glorot-normal with gain √2, b = 0; BN reset."""
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_normal_(self.fc.weight, gain=gain)
        nn.init.xavier_normal_(self.attn_l, gain=gain)
        nn.init.xavier_normal_(self.attn_r, gain=gain)
        nn.init.zeros_(self.bias)
        if self.batchnorm_h is not None:
            self.batchnorm_h.reset_parameters()

    def conv(self, h: torch.Tensor, graph: AttentionGraph | torch.Tensor) -> torch.Tensor:
        """GATConv alone (heads flattened): (N, d_in) → (N, H·d)."""
        graph = _attention_graph(self, graph, h.shape[0])
        heads, d = self.heads, self.head_dim
        x = F.dropout(h, self.dropout, self.training) if self.dropout > 0 else h
        w = self.fc.weight  # (H·d, d_in)
        per_head = w.view(heads, d, -1)
        # a_l·(W_k x) = (a_l,k W_k) x: fold the attention vectors into the projection, one GEMM for all
        fused = torch.cat([w, torch.einsum("hd,hdi->hi", self.attn_l[0], per_head),
                           torch.einsum("hd,hdi->hi", self.attn_r[0], per_head)])
        z, el, er = (x @ fused.t()).split([heads * d, heads, heads], dim=1)
        if self.dropout > 0 and self.training:
            return attention(z, el, er, graph, 0.2, self.dropout, self.training) + self.bias
        return lean_attention(z, el, er, graph, 0.2) + self.bias

    def forward(self, h: torch.Tensor, graph: AttentionGraph | torch.Tensor) -> torch.Tensor:
        """out = h + ELU(BN(GATConv(h))) (residual and BN as configured): (N, d_in) → (N, H·d)."""
        x = _tail(self.conv(h, graph), self.batchnorm_h, 0.0, self.training)
        return h + x if self.residual else x


# ---------------------------------------------------------------------------------------------------------
# Custom per-head layers of the edge-feature analysis (TSP, COLLAB), all heads computed together.


class _CustomHeads(nn.Module):
    """Common state of the custom layers: H heads of width d on inputs of width d_in."""

    def __init__(self, in_dim: int, head_dim: int, heads: int, dropout: float, batch_norm: bool,
                 residual: bool) -> None:
        super().__init__()
        self.in_dim, self.heads, self.head_dim = in_dim, heads, head_dim
        self.dropout, self.batch_norm = dropout, batch_norm
        self.residual = residual and in_dim == heads * head_dim
        # per head: BN(d), always created; one BN over the concatenation holds the same numbers and statistics
        self.batchnorm_h = nn.BatchNorm1d(heads * head_dim)

    def _head_weight(self) -> nn.Parameter:
        return nn.Parameter(torch.empty(self.heads, self.head_dim, self.in_dim))  # head k's fc.weight = [k]

    def _finish(self, x: torch.Tensor, layer_input: torch.Tensor, bn: nn.BatchNorm1d) -> torch.Tensor:
        x = _tail(x, bn if self.batch_norm else None, self.dropout, self.training)
        return layer_input + x if self.residual else x


class CustomGATLayer(_CustomHeads):
    r"""``layer_type`` "edgefeat" (``CustomGATHeadLayer`` × H): node attention only; the edge input passes through.
    For every head k (own ``nn.Linear``-initialised W_k, a_k; softmax over the in-edges of v):

        z_k = W_k h;   α_uv,k = Dropout(softmax_u LeakyReLU_0.01(a_k · [z_u,k ‖ z_v,k]))
        h'_v = ‖_k Dropout(ELU(BN(Σ_{u→v} α_uv,k z_u,k)))   (+ h if residual and d_in = H·d);   e' = e

    Args:
        in_dim: input width d_in.
        head_dim: width d of one head.
        heads: number of heads H.
        dropout: attention and output dropout probability.
        batch_norm: apply ``batchnorm_h`` (always created).
        residual: add the input (when d_in = H·d).

    Shapes:
        - input: ``(h, e, graph)`` with node features (N, d_in), edge features (E, ·) or None (not read) and an
          :class:`AttentionGraph`; or plain ``(x, edge_index[, edge_attr])`` with edge indices (2, E) (the
          attention graph is built once and cached for that tensor).
        - output: (node features (N, H·d), the edge input unchanged).
    """

    def __init__(self, in_dim: int, head_dim: int, heads: int, dropout: float, batch_norm: bool,
                 residual: bool) -> None:
        super().__init__(in_dim, head_dim, heads, dropout, batch_norm, residual)
        self.fc_weight = self._head_weight()
        self.attn_weight = nn.Parameter(torch.empty(heads, 2 * head_dim))  # head k's attn_fc.weight = [k]
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every head's ``fc`` and ``attn_fc`` as ``nn.Linear`` initialises them; BN reset."""
        _linear_init_(self.fc_weight, self.in_dim)
        _linear_init_(self.attn_weight, 2 * self.head_dim)
        self.batchnorm_h.reset_parameters()

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, graph: AttentionGraph | torch.Tensor | None = None,
                edge_output: bool = True):
        """(h', e): the heads' attention outputs through BN → ELU → dropout, concatenated (+ h); the edge input is
        returned unchanged. Also callable as ``layer(x, edge_index)``."""
        e, graph = _plain_call(self, h, e, graph, _attention_graph_of)
        heads, d = self.heads, self.head_dim
        w = self.fc_weight
        fused = torch.cat([w.reshape(heads * d, -1), torch.einsum("hd,hdi->hi", self.attn_weight[:, :d], w),
                           torch.einsum("hd,hdi->hi", self.attn_weight[:, d:], w)])
        z, s_src, s_dst = (h @ fused.t()).split([heads * d, heads, heads], dim=1)
        out = attention(z, s_src, s_dst, graph, 0.01, self.dropout, self.training)
        return self._finish(out, h, self.batchnorm_h), e


class CustomGATLayerEdgeReprFeat(_CustomHeads):
    r"""``layer_type`` "edgereprfeat" (``CustomGATHeadLayerEdgeReprFeat`` × H): attention on [y_uv ‖ z_u ‖ z_v]
    and a new edge representation per head (own ``nn.Linear``-initialised weights; softmax over the in-edges of v):

        z_k = W_h,k h;  y_k = W_e,k e;  c_uv,k = [y_uv,k ‖ z_u,k ‖ z_v,k]
        α_uv,k = softmax_u LeakyReLU_0.01(a_k · c_uv,k)                     (no attention dropout)
        h'_v = ‖_k Dropout(ELU(BN_h(Σ_{u→v} α_uv,k z_u,k)))                 (+ h if residual and d_in = H·d)
        e'_uv = ‖_k Dropout(ELU(BN_e(P_k c_uv,k + b_P,k)))                 (+ e likewise)

    Args:
        in_dim: node and edge input width d_in.
        head_dim: width d of one head.
        heads: number of heads H.
        dropout: output dropout probability.
        batch_norm: apply ``batchnorm_h`` / ``batchnorm_e`` (always created).
        residual: add the inputs (when d_in = H·d).

    Shapes:
        - input: ``(h, e, graph)`` with node features (N, d_in), edge features (E, d_in) in edge order and an
          :class:`AttentionGraph`; or plain ``(x, edge_index, edge_attr)`` with edge indices (2, E) (the attention
          graph is built once and cached for that tensor).
        - output: (node features (N, H·d), edge features (E, H·d) or None with ``edge_output=False``).
    """

    def __init__(self, in_dim: int, head_dim: int, heads: int, dropout: float, batch_norm: bool,
                 residual: bool) -> None:
        super().__init__(in_dim, head_dim, heads, dropout, batch_norm, residual)
        self.fc_h_weight = self._head_weight()
        self.fc_e_weight = self._head_weight()
        self.fc_proj_weight = nn.Parameter(torch.empty(heads, head_dim, 3 * head_dim))
        self.fc_proj_bias = nn.Parameter(torch.empty(heads, head_dim))
        self.attn_weight = nn.Parameter(torch.empty(heads, 3 * head_dim))
        self.batchnorm_e = nn.BatchNorm1d(heads * head_dim)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every head's ``fc_h``, ``fc_e``, ``fc_proj`` and ``attn_fc`` as ``nn.Linear`` initialises them; BNs
        reset."""
        _linear_init_(self.fc_h_weight, self.in_dim)
        _linear_init_(self.fc_e_weight, self.in_dim)
        _linear_init_(self.fc_proj_weight, 3 * self.head_dim)
        _linear_init_(self.fc_proj_bias, 3 * self.head_dim)
        _linear_init_(self.attn_weight, 3 * self.head_dim)
        self.batchnorm_h.reset_parameters()
        self.batchnorm_e.reset_parameters()

    def forward(self, h: torch.Tensor, e: torch.Tensor, graph: AttentionGraph | torch.Tensor | None = None,
                edge_output: bool = True):
        """(h', e'): node and edge outputs of every head, concatenated (+ the inputs where the widths agree);
        ``edge_output`` false skips e' (the last layer's, which no head reads) and returns the edge input. Also
        callable as ``layer(x, edge_index, edge_attr)``."""
        e, graph = _plain_call(self, h, e, graph, _attention_graph_of)
        heads, d = self.heads, self.head_dim
        hd = heads * d
        wh, we, proj, attn = self.fc_h_weight, self.fc_e_weight, self.fc_proj_weight, self.attn_weight
        # the [y ‖ z_u ‖ z_v] blocks of attn_fc and fc_proj, folded into the node and edge projections
        node_parts = [wh.reshape(hd, -1), torch.einsum("hd,hdi->hi", attn[:, d:2 * d], wh),
                      torch.einsum("hd,hdi->hi", attn[:, 2 * d:], wh)]
        edge_parts = [torch.einsum("hd,hdi->hi", attn[:, :d], we)]
        if edge_output:
            node_parts += [torch.einsum("hkd,hdi->hki", proj[:, :, d:2 * d], wh).reshape(hd, -1),
                           torch.einsum("hkd,hdi->hki", proj[:, :, 2 * d:], wh).reshape(hd, -1)]
            edge_parts.append(torch.einsum("hkd,hdi->hki", proj[:, :, :d], we).reshape(hd, -1))
        node_out = (h @ torch.cat(node_parts).t()).split([hd, heads, heads, hd, hd][:len(node_parts)], dim=1)
        edge_weight = torch.cat(edge_parts)
        if e.stride(0) == 0:  # the same input on every edge (encoded ones): transform it once
            edge_out = (e[:1] @ edge_weight.t()).expand(e.shape[0], -1)
        else:
            edge_out = e @ edge_weight.t()
        edge_out = edge_out.split([heads, hd][:len(edge_parts)], dim=1)
        z, s_src, s_dst = node_out[:3]
        out = attention(z, s_src, s_dst, graph, 0.01, edge_scores=edge_out[0])  # no attention dropout here
        h_new = self._finish(out, h, self.batchnorm_h)
        if not edge_output:
            return h_new, None
        p_src, p_dst = node_out[3:]
        src, dst = graph.edge_index
        e_proj = p_src.index_select(0, src) + p_dst.index_select(0, dst)
        e_proj += edge_out[1]
        e_proj += self.fc_proj_bias.view(hd)
        return h_new, self._finish(e_proj, e, self.batchnorm_e)


class CustomGATLayerIsotropic(_CustomHeads):
    r"""``layer_type`` "isotropic" (``CustomGATHeadLayerIsotropic`` × H): plain sum of W h_u over in-edges (parallel
    edges count twice, like DGL's sum), per head k with its own ``nn.Linear``-initialised W_k:

        h'_v = ‖_k Dropout(ELU(BN(Σ_{u→v} W_k h_u)))     (+ h if residual and d_in = H·d);   e' = e

    Args:
        in_dim: input width d_in.
        head_dim: width d of one head.
        heads: number of heads H.
        dropout: output dropout probability.
        batch_norm: apply ``batchnorm_h`` (always created).
        residual: add the input (when d_in = H·d).

    Shapes:
        - input: ``(h, e, adjacency)`` with node features (N, d_in), edge features or None (not read) and the 0/1
          in-edge :class:`SparseAdjacency`; or plain ``(x, edge_index[, edge_attr])`` with edge indices (2, E) (the
          adjacency is built once and cached for that tensor).
        - output: (node features (N, H·d), the edge input unchanged).
    """

    def __init__(self, in_dim: int, head_dim: int, heads: int, dropout: float, batch_norm: bool,
                 residual: bool) -> None:
        super().__init__(in_dim, head_dim, heads, dropout, batch_norm, residual)
        self.fc_weight = self._head_weight()
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every head's ``fc`` as ``nn.Linear`` initialises it; BN reset."""
        _linear_init_(self.fc_weight, self.in_dim)
        self.batchnorm_h.reset_parameters()

    def forward(self, h: torch.Tensor, e: torch.Tensor | None,
                adjacency: SparseAdjacency | torch.Tensor | None = None, edge_output: bool = True):
        """(h', e): h'_v = ‖_k Σ_{u→v} W_k h_u through BN → ELU → dropout per head (+ h); the edge input is returned
        unchanged. ``adjacency``: the 0/1 in-edge adjacency (parallel edges count twice, like DGL's sum)."""
        e, adjacency = _plain_call(self, h, e, adjacency, _unit_adjacency_of)
        w = self.fc_weight.reshape(self.heads * self.head_dim, -1)
        if w.shape[0] <= w.shape[1]:  # project first when it shrinks the features
            out = adjacency.propagate(h @ w.t())
        else:
            out = adjacency.propagate(h) @ w.t()
        return self._finish(out, h, self.batchnorm_h), e


def _attention_graph_of(edge_index: torch.Tensor, num_nodes: int, device: torch.device) -> AttentionGraph:
    return AttentionGraph(edge_index, num_nodes)


def _unit_adjacency_of(edge_index: torch.Tensor, num_nodes: int, device: torch.device) -> SparseAdjacency:
    """The isotropic layers' adjacency, built as :meth:`GAT.forward` builds it."""
    return SparseAdjacency(edge_index, torch.ones(edge_index.shape[1], device=device), num_nodes)


LAYER_TYPES = {"dgl": GATLayer, "edgefeat": CustomGATLayer, "edgereprfeat": CustomGATLayerEdgeReprFeat,
               "isotropic": CustomGATLayerIsotropic}


class GAT(Architecture):
    """L GAT layers: hidden·H → hidden × H heads (L − 1 times), then hidden·H → out_dim × 1 head."""

    required = ("L", "hidden_dim", "out_dim", "n_heads", "residual", "batch_norm", "dropout")

    def __init__(self, hidden_dim: int, out_dim: int, num_heads: int, num_layers: int, dropout: float,
                 batch_norm: bool, residual: bool, layer_type: str = "dgl", self_loop: bool = False) -> None:
        super().__init__()
        if layer_type not in LAYER_TYPES:
            # the original silently falls back to the standard layer; a typo should not change the model
            # (docs/protocols/benchmarking-gnns.md#unknown-settings-are-errors)
            raise ValueError(f"layer_type {layer_type!r} is not one of {', '.join(LAYER_TYPES)}")
        if self_loop and layer_type != "dgl":
            raise ValueError("self_loop adds edges that have no edge input; use it with layer_type dgl only")
        layer = LAYER_TYPES[layer_type]
        width = hidden_dim * num_heads
        shapes = [(hidden_dim, num_heads)] * (num_layers - 1) + [(out_dim, 1)]
        self.layers = nn.ModuleList(layer(width, d, heads, dropout, batch_norm, residual) for d, heads in shapes)
        self.layer_type, self.self_loop = layer_type, self_loop
        self.uses_edges = layer_type != "dgl"
        self.input_width = self.edge_input_width = width
        self.out_width = out_dim

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta) -> GAT:
        """From ``hidden_dim`` (per head), ``out_dim``, ``n_heads``, ``L``, ``dropout``, ``batch_norm``, ``residual``,
        ``layer_type`` (default "dgl") and ``self_loop``."""
        return cls(cfg["hidden_dim"], cfg["out_dim"], cfg["n_heads"], cfg["L"], cfg["dropout"], cfg["batch_norm"],
                   cfg["residual"], cfg.get("layer_type") or "dgl", cfg.get("self_loop", False))

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, batch: GraphBatch) -> Representation:
        """The L layers on the batch's graph (one attention structure shared by all layers); node embeddings
        (N, out_dim)."""
        edge_index = batch.edge_index
        if self.layer_type == "dgl":
            if self.self_loop:
                edge_index = add_self_loops(edge_index, h.shape[0])
            graph = AttentionGraph(edge_index, h.shape[0])
            for layer in self.layers:
                h = layer(h, graph)
            return Representation(h)
        if self.layer_type == "isotropic":
            graph = _unit_adjacency_of(edge_index, h.shape[0], h.device)
        else:
            graph = AttentionGraph(edge_index, h.shape[0])
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            h, e = layer(h, e, graph, edge_output=i < last)
        return Representation(h)


# ---------------------------------------------------------------------------------------------------------
# "Pitfalls of GNN Evaluation" (the released code shchur/gnn-benchmark, gnnbench/models/gat.py): R initialisations
# at once


class StackedGAT(StackedModel):
    """The released code's two-layer GAT for node classification, R initialisations at once (parameters (R, …)).

    One head h of a layer with input H, over the neighbourhoods N⁺(i) = N(i) ∪ {i} of A + I (diagonal set to 1):

        Z      = Dropout_p(H) · W_h                                  (input dropout drawn for every head)
        e_ij   = LeakyReLU_0.2(Z_i·a_i + b_i + Z_j·a_j + b_j)        a_i, a_j (F', ) vectors; b_i, b_j scalars
        α_ij   = Dropout_q(softmax_{j ∈ N⁺(i)} e_ij)                 (coefficient dropout, not renormalised)
        out_i  = Σ_j α_ij · Dropout_p(Z)_j + c_h                     (the extra dropout on Z of the official code)

    Layer 1: ``num_heads[0]`` heads of ``hidden_size`` units, ELU on every head, concatenated; layer 2:
    ``num_heads[1]`` heads of C units, no activation, averaged. p = ``input_dropout_prob``, q =
    ``coefficient_dropout_prob``. L2 on every layer: every head's W, a_i, a_j (not b_i, b_j, c). Glorot W and a
    (a as an (F', 1) matrix), zero biases. Row i is the target; e, α, dropout masks are independent per head and
    per initialisation.

    Differs from :class:`GATLayer` above (DGL's GATConv in the benchmarking-gnns layer): the two scalar attention
    biases, input dropout per head and the extra dropout on Z, Glorot-uniform (not normal) initialisation, self
    loops always, no batch norm or residual, heads averaged in the output layer. Heads of all initialisations run
    as R·heads heads of one sparse attention (:func:`~gnnbench.models.sparse.attention_heads`, whose backward
    handles both dropouts without per-edge products); logits at T need layer 1 at N⁺(T) only. The scores Z·a come
    from Z (one batched product per layer) rather than from weights with the vectors folded in; the coefficient
    mask is drawn edge-major, the layout the attention's per-edge arithmetic uses.
    """

    l2_parameters = ("weight1", "att_target1", "att_source1", "weight2", "att_target2", "att_source2")

    def __init__(self, graph: NodeGraph, seeds: list[int], hidden: int, heads: tuple[int, int],
                 input_dropout: float, coefficient_dropout: float, weight_decay: float) -> None:
        super().__init__(graph, weight_decay)
        inits, (heads1, heads2), classes = len(seeds), heads, graph.num_classes
        self.weight1 = stacked_parameter(inits, heads1, graph.num_features, hidden)
        self.att_target1 = stacked_parameter(inits, heads1, hidden)  # a_i
        self.att_source1 = stacked_parameter(inits, heads1, hidden)  # a_j
        self.att_bias_target1 = stacked_parameter(inits, heads1)  # b_i
        self.att_bias_source1 = stacked_parameter(inits, heads1)  # b_j
        self.bias1 = stacked_parameter(inits, heads1, hidden)
        self.weight2 = stacked_parameter(inits, heads2, heads1 * hidden, classes)
        self.att_target2 = stacked_parameter(inits, heads2, classes)
        self.att_source2 = stacked_parameter(inits, heads2, classes)
        self.att_bias_target2 = stacked_parameter(inits, heads2)
        self.att_bias_source2 = stacked_parameter(inits, heads2)
        self.bias2 = stacked_parameter(inits, heads2, classes)
        self.heads, self.hidden = (heads1, heads2), hidden
        self.input_dropout, self.coefficient_dropout = input_dropout, coefficient_dropout
        self.hops = HopsCache(adjacency_pattern(graph, self_loops=True), depth=2)
        self.features = InputFeatures(graph.features)
        self.reset_parameters(seeds)

    @classmethod
    def from_config(cls, config: ModelConfig, graph: NodeGraph, seeds: list[int]) -> StackedGAT:
        """From ``hidden_size``, ``num_heads`` (default [8, 1]), ``input_dropout_prob``, ``coefficient_dropout_prob``
        and ``weight_decay`` of a pitfalls model config."""
        heads = config.get("num_heads", [8, 1])
        if (not isinstance(heads, (list, tuple)) or len(heads) != 2
                or not all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in heads)):
            raise ConfigError(f"model GAT: num_heads must be two positive integers [layer 1, layer 2], got {heads!r}; "
                              f"the paper uses [8, 1]")
        return cls(graph, seeds, config.positive_int("hidden_size"), (heads[0], heads[1]),
                   config.probability("input_dropout_prob"), config.probability("coefficient_dropout_prob"),
                   config.nonnegative("weight_decay"))

    def init_weights(self, r: int, generator: torch.Generator) -> None:
        """Glorot-uniform W, a_i, a_j of initialisation ``r`` from ``generator``, head by head (biases stay 0)."""
        for layer in (1, 2):  # per head, as the original creates them: W, then a_i and a_j as (F', 1) matrices
            weight, target, source = (getattr(self, f"{name}{layer}") for name in ("weight", "att_target",
                                                                                    "att_source"))
            for h in range(weight.shape[1]):
                glorot_(weight[r, h], generator)
                glorot_(target[r, h].unsqueeze(1), generator)
                glorot_(source[r, h].unsqueeze(1), generator)

    def _graph(self, hops: Hops, level: int) -> AttentionGraph:
        """The attention graph of block ``level`` (targets sets[level], sources sets[level + 1]), cached."""
        key = ("attention", level)
        if key not in hops.extras:
            block = hops.blocks[level]
            edges = torch.stack([block.col, block.row])
            hops.extras[key] = AttentionGraph(edges, block.num_rows, num_src=block.num_cols)
        return hops.extras[key]

    def _attend(self, z: torch.Tensor, layer: int, hops: Hops, level: int, training: bool) -> torch.Tensor:
        """One attention layer for B = R·heads heads from Z (B, |sources|, F'), or a (R, heads, |sources|, F') view
        of it → (B, |targets|, F') + c. The scores Z·a come from one batched product with [a_j a_i] per head."""
        *lead, sources, width = z.shape
        blocks = math.prod(lead)
        z = z.reshape(blocks, sources, width)  # a copy only for a strided head-major view (evaluation)
        vectors = torch.stack([getattr(self, f"att_source{layer}"), getattr(self, f"att_target{layer}")], dim=-2)
        scores = torch.bmm(vectors.view(blocks, 2, width), z.transpose(1, 2))  # (B, 2, |sources|): narrow side first
        source = scores[:, 0] + getattr(self, f"att_bias_source{layer}").reshape(blocks, 1)
        target, positions = scores[:, 1], hops.positions(level)
        target = target if positions is None else target.index_select(1, positions)
        target = target + getattr(self, f"att_bias_target{layer}").reshape(blocks, 1)
        graph = self._graph(hops, level)
        mask = z_mask = None
        if training and self.coefficient_dropout > 0:  # drawn edge-major, the layout the attention works in
            mask = dropout_mask((graph.num_edges, blocks), self.coefficient_dropout, z.device).t()
        if training and self.input_dropout > 0:
            z_mask = dropout_mask(tuple(z.shape), self.input_dropout, z.device)
        out = attention_heads(z, source, target, graph, 0.2, mask, z_mask)
        return out + getattr(self, f"bias{layer}").reshape(blocks, 1, width)

    def forward(self, nodes: torch.Tensor | None, training: bool) -> torch.Tensor:
        """Logits (R, M, C) at ``nodes`` (None: all): layer 1's heads (ELU, concatenated), then layer 2's, averaged."""
        hops = self.hops.get(nodes)
        inits, (heads1, heads2), hidden = self.inits, self.heads, self.hidden
        p = self.input_dropout if training else 0.0
        rows = self.features.rows(hops, 2)
        num_features = self.weight1.shape[2]
        if p > 0:  # a dropout draw per (initialisation, head): R·heads blocks
            z = DroppedInput(rows, inits * heads1, p).matmul(self.weight1.reshape(-1, num_features, hidden))
        else:  # one product with every head's weights side by side, then head-major
            weight = self.weight1.permute(0, 2, 1, 3).reshape(inits, num_features, heads1 * hidden)
            z = DroppedInput(rows, inits, 0.0).matmul(weight)
            z = z.view(inits, -1, heads1, hidden).transpose(1, 2)  # a head-major view
        h = F.elu(self._attend(z, 1, hops, 1, training))  # (R·heads1, |S1|, hidden)
        h = h.view(inits, heads1, -1, hidden).transpose(1, 2).reshape(inits, -1, heads1 * hidden)
        if heads2 > 1:  # an input dropout draw per output head
            h = h.unsqueeze(1).expand(inits, heads2, *h.shape[1:]).reshape(inits * heads2, *h.shape[1:])
        h = dropout(h, self.input_dropout, training)
        weight = self.weight2.reshape(inits * heads2, heads1 * hidden, -1)
        out = self._attend(stacked_linear(h, weight), 2, hops, 0, training)  # (R·heads2, |T|, C)
        return out.view(inits, heads2, *out.shape[1:]).mean(1)
