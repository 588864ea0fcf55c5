"""GAT as the benchmark uses it (spec benchmarking-gnns.md §2.2, §2.4): DGL 0.6.1 ``GATConv`` inside an
ELU/BN/residual layer, and the per-head custom layers of the TSP/COLLAB edge-feature analysis.

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

Decisions: ``layer_type`` is honoured on every dataset (the original reads it only for TSP/COLLAB); an
unknown value is a config error (the original silently falls back to the standard layer); ``self_loop``
(false in every config) is supported for the standard layer only, since added loops have no edge input.
The custom layers' per-head modules are stored stacked (head k's ``fc.weight`` is ``fc_weight[k]``, its
BN(d) is a slice of one BN(H·d): per-feature statistics, so the same numbers) — same parameter count.

Speed. One GEMM per layer for all heads: the attention vectors (and edgereprfeat's projection P) are
folded into the node/edge weight matrices, so z, a_l·z, a_r·z (and P's node parts) come out together.
The attention never materialises a message per edge (notes above :class:`AttentionGraph`): the aggregation
and its backward are products with block-diagonal sparse matrices (one block per head), the softmax
denominator comes out of the same product, and the CSR structures are built once per forward and shared
by all layers. A constant edge input is transformed once, and the last edgereprfeat layer skips its edge
output, which no head reads. On a PATTERN-sized batch (15.7k nodes, 837k edges) this is ~7× less CPU
time per training step than gather/scatter message passing.
"""

from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.models.base import Architecture, Representation
from gnnbench.models.scatter import SparseAdjacency, add_self_loops, scatter_max

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


class AttentionGraph:
    """The edges of a batch sorted by destination (CSR order), with block-diagonal CSR structures built on
    demand and shared by every layer of a forward pass. ``perm[i]`` is the original index of CSR edge i."""

    def __init__(self, edge_index: torch.Tensor, num_nodes: int) -> None:
        src, dst = edge_index
        self.edge_index, self.num_nodes, self.num_edges = edge_index, num_nodes, src.numel()
        self.perm = _argsort(dst)
        self.src, self.dst = src[self.perm], dst[self.perm]
        self._perm_t: torch.Tensor | None = None
        self._structures: dict[tuple[int, int, bool], tuple[torch.Tensor, torch.Tensor]] = {}

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
            n, e = self.num_nodes, self.num_edges
            rows, cols = (self.edge_index[0], self.dst[self.perm_t]) if transpose else (self.dst, self.src)
            dtype = torch.int32 if blocks * max(n, e) < 2 ** 31 else torch.int64  # int32: faster kernels
            device = cols.device
            crow = torch.zeros(n + 1, dtype=dtype, device=device)
            torch.cumsum(torch.bincount(rows, minlength=n), 0, out=crow[1:])
            block = torch.arange(blocks, dtype=dtype, device=device).unsqueeze(1)
            block_crow = torch.cat([(crow[:-1] + block * e).reshape(-1), crow.new_full((1,), blocks * e)])
            block_col = (cols.to(dtype) + (block % dense_blocks) * n).reshape(-1)
            self._structures[key] = (block_crow, block_col)
        return self._structures[key]

    def spmm(self, values: torch.Tensor, dense: torch.Tensor, transpose: bool = False) -> torch.Tensor:
        """out[k, v] = Σ_{u→v} values[k, uv] · dense[k mod K', u] (Σ over out-edges with ``transpose``).

        values (K, E) in CSR order; dense (K', N, W) with K' dividing K; out (K, N, W). One sparse product
        with a block-diagonal matrix whose block k is M_k[v, u] = values[k, uv]."""
        blocks, (dense_blocks, n, width) = values.shape[0], dense.shape
        if self.num_edges == 0:
            return dense.new_zeros(blocks, n, width)
        if transpose:
            values = values.index_select(1, self.perm_t)
        crow, col = self._structure(blocks, dense_blocks, transpose)
        with warnings.catch_warnings():  # "sparse CSR support is in beta": CSR @ dense is stable and tested here
            warnings.simplefilter("ignore", UserWarning)
            matrix = torch.sparse_csr_tensor(crow, col, values.reshape(-1), (blocks * n, dense_blocks * n),
                                             check_invariants=False)
        return (matrix @ dense.reshape(dense_blocks * n, width)).view(blocks, n, width)

    def sddmm(self, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        """r[k, uv] = ⟨left[k, v], right[k, u]⟩ for every CSR edge u→v; left, right (K, N, W) → (K, E)."""
        blocks, n, width = left.shape
        if self.num_edges == 0:
            return left.new_zeros(blocks, 0)
        crow, col = self._structure(blocks, blocks, False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            pattern = torch.sparse_csr_tensor(crow, col, left.new_zeros(blocks * self.num_edges),
                                              (blocks * n, blocks * n), check_invariants=False)
            sampled = torch.sparse.sampled_addmm(pattern, left.reshape(blocks * n, width),
                                                 right.reshape(blocks * n, width).t(), beta=0.0)
        return sampled.values().view(blocks, self.num_edges)

    def max_in(self, x: torch.Tensor) -> torch.Tensor:
        """max_{u→v} x[k, u] for every node v, x (K, N) → (K, N); 0 where v has no in-edge."""
        if x.device.type != "cpu" or not self.num_edges:  # the max-reducing sparse product is CPU-only
            return scatter_max(x.index_select(1, self.src).t(), self.dst, self.num_nodes).t()
        crow, col = self._structure(1, 1, False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            ones = torch.sparse_csr_tensor(crow, col, x.new_ones(self.num_edges), (self.num_nodes,) * 2,
                                           check_invariants=False)
        return torch.sparse.mm(ones, x.t().contiguous(), "amax").t()


def _argsort(index: torch.Tensor) -> torch.Tensor:
    """Stable argsort of node ids (in int32 where they fit: about twice as fast)."""
    if index.numel() and index.numel() < 2 ** 31 and int(index.max()) < 2 ** 31:
        index = index.to(torch.int32)
    return torch.argsort(index, stable=True)


class _Attention(torch.autograd.Function):
    """h'_v = Σ_u α_uv z_u with α = softmax over the in-edges of v of LeakyReLU(el_u + er_v (+ es_uv)),
    optional dropout on α; all heads at once. z (N, H·d), el/er (N, H), es (E, H) in edge order or None."""

    @staticmethod
    def forward(ctx, z, el, er, es, graph: AttentionGraph, slope: float, dropout: float):
        n, heads = el.shape
        d = z.shape[1] // heads
        src, dst = graph.src, graph.dst
        el_t, er_t = el.t().contiguous(), er.t().contiguous()  # head-major (H, N): one block per head
        s = el_t.index_select(1, src)
        s += er_t.index_select(1, dst)
        if es is not None:
            s += es.t().index_select(1, graph.perm)
        s = F.leaky_relu_(s, slope)
        if es is None:  # LeakyReLU is monotone: max_u s_uv = LeakyReLU(max_u el_u + er_v), node-level work
            shift = F.leaky_relu_(graph.max_in(el_t) + er_t, slope)
        else:
            shift = scatter_max(s.t(), dst, n).t()
        mask = None
        if dropout > 0:
            mask = torch.empty_like(s).bernoulli_(1 - dropout).div_(1 - dropout)
        # the fast backward needs w and q = w · LeakyReLU'(a) side by side: keep room for q next to w
        fast = mask is None and es is None
        values = s.new_empty(2 * heads if fast and any(ctx.needs_input_grad[:3]) else heads, s.shape[1])
        w = torch.sub(s, shift.index_select(1, dst), out=values[:heads]).exp_()  # max edge of a node: 1
        zp = z.new_empty(heads, n, d + 1)  # [z, 1]: the softmax denominator comes out of the same product
        zp[..., :d] = z.view(n, heads, d).transpose(0, 1)
        zp[..., d] = 1
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
        ctx.graph, ctx.slope, ctx.has_es = graph, slope, es is not None
        return out.transpose(0, 1).reshape(n, heads * d)

    @staticmethod
    def backward(ctx, grad_out):
        s, mask, zp, out, den = ctx.saved_tensors
        values, graph, slope = ctx.values, ctx.graph, ctx.slope
        heads, n, d1 = zp.shape
        d = d1 - 1
        w = values[:heads]
        grad = zp.new_empty(heads, n, d1)  # [∂P, ∂den]
        torch.div(grad_out.view(n, heads, d).transpose(0, 1), den.unsqueeze(-1), out=grad[..., :d])
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
            ones = zp.new_ones(1, n, 1)
            grad_er = graph.spmm(per_edge, ones)[..., 0]
            grad_el = graph.spmm(per_edge, ones, transpose=True)[..., 0]
            if ctx.has_es:
                grad_es = torch.empty_like(per_edge.t())
                grad_es[graph.perm] = per_edge.t()
        grad_z = grad_z.transpose(0, 1).reshape(n, heads * d)
        return grad_z, grad_el.t(), grad_er.t(), grad_es, None, None, None


def attention(z: torch.Tensor, el: torch.Tensor, er: torch.Tensor, graph: AttentionGraph, slope: float,
              dropout: float = 0.0, training: bool = False, edge_scores: torch.Tensor | None = None,
              ) -> torch.Tensor:
    """Σ_u α_uv z_u per head, α = Dropout(softmax_u LeakyReLU_slope(el_u + er_v (+ edge_scores_uv))).

    z (N, H·d), el/er (N, H), edge_scores (E, H) in the batch's edge order → (N, H·d); 0 without in-edges."""
    return _Attention.apply(z, el, er, edge_scores, graph, slope, dropout if training else 0.0)


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


# ---------------------------------------------------------------------------------------------------------
# Standard layer: DGL 0.6.1 GATConv → flatten → BN → ELU → residual.


class GATLayer(nn.Module):
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
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_normal_(self.fc.weight, gain=gain)
        nn.init.xavier_normal_(self.attn_l, gain=gain)
        nn.init.xavier_normal_(self.attn_r, gain=gain)
        nn.init.zeros_(self.bias)
        if self.batchnorm_h is not None:
            self.batchnorm_h.reset_parameters()

    def conv(self, h: torch.Tensor, graph: AttentionGraph) -> torch.Tensor:
        """GATConv alone (heads flattened): (N, d_in) → (N, H·d)."""
        heads, d = self.heads, self.head_dim
        x = F.dropout(h, self.dropout, self.training) if self.dropout > 0 else h
        w = self.fc.weight  # (H·d, d_in)
        per_head = w.view(heads, d, -1)
        # a_l·(W_k x) = (a_l,k W_k) x: fold the attention vectors into the projection, one GEMM for all
        fused = torch.cat([w, torch.einsum("hd,hdi->hi", self.attn_l[0], per_head),
                           torch.einsum("hd,hdi->hi", self.attn_r[0], per_head)])
        z, el, er = (x @ fused.t()).split([heads * d, heads, heads], dim=1)
        return attention(z, el, er, graph, 0.2, self.dropout, self.training) + self.bias

    def forward(self, h: torch.Tensor, graph: AttentionGraph) -> torch.Tensor:
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
    """``layer_type`` "edgefeat" (``CustomGATHeadLayer`` × H): node attention only; the edge input passes through."""

    def __init__(self, in_dim: int, head_dim: int, heads: int, dropout: float, batch_norm: bool,
                 residual: bool) -> None:
        super().__init__(in_dim, head_dim, heads, dropout, batch_norm, residual)
        self.fc_weight = self._head_weight()
        self.attn_weight = nn.Parameter(torch.empty(heads, 2 * head_dim))  # head k's attn_fc.weight = [k]
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _linear_init_(self.fc_weight, self.in_dim)
        _linear_init_(self.attn_weight, 2 * self.head_dim)
        self.batchnorm_h.reset_parameters()

    def forward(self, h: torch.Tensor, e: torch.Tensor, graph: AttentionGraph, edge_output: bool = True):
        heads, d = self.heads, self.head_dim
        w = self.fc_weight
        fused = torch.cat([w.reshape(heads * d, -1), torch.einsum("hd,hdi->hi", self.attn_weight[:, :d], w),
                           torch.einsum("hd,hdi->hi", self.attn_weight[:, d:], w)])
        z, s_src, s_dst = (h @ fused.t()).split([heads * d, heads, heads], dim=1)
        out = attention(z, s_src, s_dst, graph, 0.01, self.dropout, self.training)
        return self._finish(out, h, self.batchnorm_h), e


class CustomGATLayerEdgeReprFeat(_CustomHeads):
    """``layer_type`` "edgereprfeat" (``CustomGATHeadLayerEdgeReprFeat`` × H): attention on [y_uv ‖ z_u ‖ z_v]
    and a new edge representation P [y_uv ‖ z_u ‖ z_v] + b_P per head."""

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
        _linear_init_(self.fc_h_weight, self.in_dim)
        _linear_init_(self.fc_e_weight, self.in_dim)
        _linear_init_(self.fc_proj_weight, 3 * self.head_dim)
        _linear_init_(self.fc_proj_bias, 3 * self.head_dim)
        _linear_init_(self.attn_weight, 3 * self.head_dim)
        self.batchnorm_h.reset_parameters()
        self.batchnorm_e.reset_parameters()

    def forward(self, h: torch.Tensor, e: torch.Tensor, graph: AttentionGraph, edge_output: bool = True):
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
    """``layer_type`` "isotropic" (``CustomGATHeadLayerIsotropic`` × H): plain sum of W h_u over in-edges."""

    def __init__(self, in_dim: int, head_dim: int, heads: int, dropout: float, batch_norm: bool,
                 residual: bool) -> None:
        super().__init__(in_dim, head_dim, heads, dropout, batch_norm, residual)
        self.fc_weight = self._head_weight()
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _linear_init_(self.fc_weight, self.in_dim)
        self.batchnorm_h.reset_parameters()

    def forward(self, h: torch.Tensor, e: torch.Tensor, adjacency: SparseAdjacency, edge_output: bool = True):
        """``adjacency``: the 0/1 in-edge adjacency (parallel edges count twice, like DGL's sum)."""
        w = self.fc_weight.reshape(self.heads * self.head_dim, -1)
        if w.shape[0] <= w.shape[1]:  # project first when it shrinks the features
            out = adjacency.propagate(h @ w.t())
        else:
            out = adjacency.propagate(h) @ w.t()
        return self._finish(out, h, self.batchnorm_h), e


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
        return cls(cfg["hidden_dim"], cfg["out_dim"], cfg["n_heads"], cfg["L"], cfg["dropout"], cfg["batch_norm"],
                   cfg["residual"], cfg.get("layer_type") or "dgl", cfg.get("self_loop", False))

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, batch: GraphBatch) -> Representation:
        edge_index = batch.edge_index
        if self.layer_type == "dgl":
            if self.self_loop:
                edge_index = add_self_loops(edge_index, h.shape[0])
            graph = AttentionGraph(edge_index, h.shape[0])
            for layer in self.layers:
                h = layer(h, graph)
            return Representation(h)
        if self.layer_type == "isotropic":
            graph = SparseAdjacency(edge_index, torch.ones(edge_index.shape[1], device=h.device), h.shape[0])
        else:
            graph = AttentionGraph(edge_index, h.shape[0])
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            h, e = layer(h, e, graph, edge_output=i < last)
        return Representation(h)
