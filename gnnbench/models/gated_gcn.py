"""GatedGCN (Bresson & Laurent) with the edge stream of the benchmark (Dwivedi et al., Appendix B.1.2, Eqs. 16–18,
and Appendix E.2.1, Eqs. 52–57 for the edge-analysis variants; the released code's ``layers/gated_gcn_layer.py`` and
``nets/*/gated_gcn_net.py``).

Standard layer (``layer_type`` "edgereprfeat" or absent), for every edge u→v (sums over the in-edges of v):

    ê_uv = C e_uv + D h_u + E h_v
    σ_uv = sigmoid(ê_uv)
    h'_v = A h_v + (Σ_u σ_uv ⊙ B h_u) / (Σ_u σ_uv + 1e-6)
    h ← Dropout(h + ReLU(BN_h(h'))),   e ← Dropout(e + ReLU(BN_e(ê)))

The edge stream carries the pre-sigmoid ê. Residuals apply only when input and output widths agree.
``bn_node_e`` is always created, like the original (it counts in the parameter total).

Edge-analysis variants of TSP/COLLAB (``layer_type``), with the same BN/ReLU/residual/dropout tail on h:

* "edgefeat" (``GatedGCNLayerEdgeFeatOnly``): no C, no ``bn_node_e``; ê_uv = D h_u + E h_v gates the same
  normalised sum; the edge input is returned unchanged.
* "isotropic" (``GatedGCNLayerIsotropic``): only A, B and ``bn_node_h``; h'_v = A h_v + Σ_u B h_u (no gate);
  the edge input is returned unchanged.

The edge encoder is built for every variant (the original creates ``embedding_e`` even where the layers never
read it, and it counts in the parameter total).

``use_gru`` (GraphTheoryProp): after every layer h ← GRU(input = h_prev, h0 = h_layer) — the previous state
is the GRU *input* and the layer output its *initial hidden state* (the original's argument order); the
GRU's final hidden state is the new h. One ``nn.GRU(hidden, hidden)`` is shared by all layers.

Speed: A, B, D and E are applied in one matrix product; the standard layer's gate and its edge tail are one hand-written
autograd function (:class:`_GatedEdges`) that walks the edges in cache-sized chunks and keeps only the edge input for
the backward (autograd would keep six or more (E, d) tensors per layer; the time and memory saved are on the
docs/performance.md page); it matches the autograd formulation to float rounding, a bound the tests check. A constant
edge input (the benchmark's ``ones``) is transformed once, not per edge; the edge update of the last layer is skipped
(no head reads the edge stream) — its result would be discarded, so outputs are unchanged; the isotropic sum is one
sparse–dense product with the adjacency built once per forward pass.

Node-level tasks: the benchmark's SBM and WikiCS GatedGCN (and GraphTheoryProp's) keep every layer at
``hidden_dim`` and ignore ``out_dim``; :meth:`GatedGCN.from_config` reproduces that for node and multitask
tasks. WikiCS: the original's WikiCS net embeds the edges with ``Embedding(1, hidden)`` on an all-zero edge
type (a learned constant edge vector, no bias) instead of the usual ``Linear(1, hidden)`` on ones; on a dataset
that says so (``meta.net_conventions`` "edge_type_table", WikiCS's description) and has no edge features the
model owns that table and broadcasts its row to every edge (the original's (E, 1, hidden) shape quirk, which
breaks its layer, is not reproduced: docs/protocols/benchmarking-gnns.md#wikics-nets).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.models.base import Architecture, Representation
from gnnbench.models.blocks import cached_structure, gru_update, is_edge_index, post_aggregation, stack_widths
from gnnbench.models.sparse import SparseAdjacency, scatter_sum, unit_adjacency


class _LayerBase(nn.Module):
    """Shared settings of the three layer types (the BN/ReLU/residual/dropout tail)."""

    def __init__(self, in_dim: int, out_dim: int, dropout: float, batch_norm: bool, residual: bool) -> None:
        super().__init__()
        self.dropout, self.batch_norm = dropout, batch_norm
        self.residual = residual and in_dim == out_dim

    def reset_parameters(self) -> None:
        for module in self.children():
            module.reset_parameters()

    def _project_abde(self, h: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """A h, B h, D h, E h in one matrix product."""
        linears = (self.A, self.B, self.D, self.E)
        weight = torch.cat([m.weight for m in linears])
        bias = torch.cat([m.bias for m in linears])
        return F.linear(h, weight, bias).split(self.A.out_features, dim=1)

    def _tail(self) -> dict:
        return {"batch_norm": self.batch_norm, "residual": self.residual, "dropout": self.dropout,
                "training": self.training}


class _GatedEdges(torch.autograd.Function):
    """The gate and, optionally, the edge tail of a standard layer, forward and backward by hand, in edge chunks:

        ê = D h[src] + C e + E h[dst],  h_agg = Σ_u σ(ê) ⊙ B h_u / (Σ_u σ(ê) + 1e-6)
        tail (``bn`` given):  e' = ReLU(BN(ê)) (+ the residual input)

    Returns (h_agg, e') with the tail, else (h_agg, ê).

    Why: under autograd every step keeps its own edge-sized (E, d) result — C e, D h[src], ê, σ, B h[src],
    σ ⊙ B h[src], BN's and ReLU's outputs — alive for the backward, and allocates each one afresh (≈ 0.2 GB apiece for
    a batch of 128 PATTERN graphs). Here the edges are walked in chunks of ``CHUNK`` through buffers reused from chunk
    to chunk (they stay in cache) and nothing edge-sized is kept but the edge input (the previous layer's output,
    alive anyway): ê, σ, the gathered rows, ReLU's mask and x̂ = (ê − mean)/σ_BN are recomputed chunk by chunk in the
    backward from the edge input and (N, d) node tensors, by the same operations on the same chunks as in the forward
    (so the same values). That costs C e once more per backward pass over the edges (two with the tail: BN's gradient
    needs two sums over all edges first), a small share of an epoch, and saves one (E, d) tensor per layer from the
    end of the forward to the layer's backward. The gradient reaching ê from the tail is consumed chunk by chunk, so
    the backward allocates one edge-sized tensor, the gradient of the edge input (which already holds the residual's
    share). The terms are added in the autograd graph's order; sums differ from it only by float rounding (tests
    bound it).

    ``e`` (E, d) with C's ``weight`` and ``bias``, or, for the same edge input on every edge, C e itself as one
    (1, d) row and ``weight`` None (the caller transforms the row once under autograd). Tail: ``bn`` the
    ``BatchNorm1d`` (training mode normalises with the batch statistics, summed in float64 by chunks, and updates the
    running ones like ``nn.BatchNorm1d``: momentum, unbiased running variance; eval mode uses the running ones),
    ``bn_weight``/``bn_bias`` its parameters, ``residual`` whether e' adds the edge input, ``skip`` the residual
    input when it is not ``e`` (the constant case: the (E, d) input whose row C transformed)."""

    CHUNK = 16384  # edges per chunk: (CHUNK, d) float32 buffers of a few MB

    @staticmethod
    def forward(ctx, Bh, Dh, Eh, e, weight, bias, bn_weight, bn_bias, skip, src, dst, bn, residual):
        num_edges, width = src.numel(), Bh.shape[1]
        e_hat = _edge_rows(num_edges, Bh)
        numerator, denominator = Bh.new_zeros(Bh.shape), Bh.new_zeros(Bh.shape)
        rows = min(_GatedEdges.CHUNK, num_edges)
        sigma, message = Bh.new_empty(rows, width), Bh.new_empty(rows, width)
        for where in _chunks(num_edges):
            s, d, n = src[where], dst[where], where.stop - where.start
            out = _pre_activation(e_hat[where], Dh, Eh, e, weight, bias, s, d, where, message[:n])
            sig = torch.sigmoid(out, out=sigma[:n])
            denominator.index_add_(0, d, sig)
            msg = torch.index_select(Bh, 0, s, out=message[:n]).mul_(sig)
            numerator.index_add_(0, d, msg)
        denominator += 1e-6
        aggregate = numerator.div_(denominator)
        ctx.tail = bn is not None
        ctx.training = ctx.tail and bn.training
        ctx.residual = residual
        saved = (Bh, Dh, Eh, e, weight, bias, src, dst, aggregate, denominator)
        if not ctx.tail:
            ctx.save_for_backward(*saved)
            return aggregate, e_hat
        mean, invstd = _bn_statistics(e_hat, bn, sigma)
        scale = bn_weight * invstd
        shift = bn_bias - mean * scale
        residual_input = skip if skip is not None else e
        e_new = _edge_rows(num_edges, e_hat)
        for where in _chunks(num_edges):
            chunk = torch.addcmul(shift, e_hat[where], scale, out=e_new[where]).relu_()
            if residual:
                chunk += residual_input[where]
        ctx.save_for_backward(*saved, mean, invstd, scale, shift)
        return aggregate, e_new

    @staticmethod
    def backward(ctx, grad_aggregate, grad_second):
        Bh, Dh, Eh, e, weight, bias, src, dst, aggregate, denominator, *bn_saved = ctx.saved_tensors
        num_edges, width = src.numel(), Bh.shape[1]
        grad_num = grad_aggregate / denominator  # ∂/∂numerator
        grad_den = torch.mul(grad_num, aggregate).neg_()  # ∂/∂denominator = −g · num / den²
        grad_Bh, grad_Dh, grad_Eh = Bh.new_zeros(Bh.shape), Bh.new_zeros(Bh.shape), Bh.new_zeros(Bh.shape)
        rows = min(_GatedEdges.CHUNK, num_edges)
        pre, sigma, gathered, work = (Bh.new_empty(rows, width) for _ in range(4))

        def e_hat(where):  # ê of the rows ``where``, as the forward computed it (in ``pre``)
            n = where.stop - where.start
            return _pre_activation(pre[:n], Dh, Eh, e, weight, bias, src[where], dst[where], where, work[:n])

        tail = None
        if ctx.tail:
            tail = _TailGradient(grad_second, bn_saved, ctx.training, rows)
            for where in _chunks(num_edges):
                tail.accumulate(where, e_hat(where))
        residual_share = ctx.tail and ctx.residual  # ∂/∂e' reaches the residual input: e, or skip for a constant e
        if weight is None:  # ∂/∂(C e) of the one shared row
            grad_e, grad_weight, grad_bias = Bh.new_zeros(1, width), None, None
        else:
            grad_e = _edge_rows(num_edges, e) if ctx.needs_input_grad[3] else None
            grad_weight, grad_bias = torch.zeros_like(weight), Bh.new_zeros(width)
        for where in _chunks(num_edges):
            s, d, n = src[where], dst[where], where.stop - where.start
            x = e_hat(where)
            sig = torch.sigmoid(x, out=sigma[:n])
            g_num = torch.index_select(grad_num, 0, d, out=gathered[:n])
            grad_Bh.index_add_(0, s, torch.mul(g_num, sig, out=work[:n]))  # ∂/∂(B h_u) = σ ⊙ g_num[v]
            g = g_num.mul_(torch.index_select(Bh, 0, s, out=work[:n])).add_(grad_den.index_select(0, d))  # ∂/∂σ
            g.mul_(sig).mul_(sig.neg_().add_(1.0))  # ∂/∂ê = ∂/∂σ · σ (1 − σ)
            if tail is not None:
                g += tail.chunk(where, x)  # ∂/∂ê through BN and ReLU
            elif grad_second is not None:
                g += grad_second[where]
            grad_Dh.index_add_(0, s, g)
            grad_Eh.index_add_(0, d, g)
            if weight is None:
                grad_e += g.sum(0, keepdim=True)
                continue
            grad_weight.addmm_(g.t(), e[where])
            grad_bias += g.sum(0)
            if grad_e is not None:
                chunk = torch.mm(g, weight, out=grad_e[where])
                if residual_share:
                    chunk += grad_second[where]  # the residual's share of ∂/∂e
        if tail is None:
            return grad_Bh, grad_Dh, grad_Eh, grad_e, grad_weight, grad_bias, None, None, None, None, None, None, None
        grad_skip = grad_second if residual_share and weight is None else None
        return (grad_Bh, grad_Dh, grad_Eh, grad_e, grad_weight, grad_bias, tail.sum_gy_xhat, tail.sum_gy, grad_skip,
                None, None, None, None)


def _pre_activation(out, Dh, Eh, e, weight, bias, s, d, where: slice, work):
    """ê = D h[src] + C e + E h[dst] of the edges ``where`` (sources ``s``, destinations ``d``) into ``out``; C e is
    the shared row when ``weight`` is None, else formed in ``work``. The forward and the backward both call this, so
    the backward's recomputed ê is the forward's."""
    torch.index_select(Dh, 0, s, out=out)
    if weight is None:
        out += e
    else:
        out += torch.addmm(bias, e[where], weight.t(), out=work)
    out += Eh.index_select(0, d)
    return out


def _bn_statistics(x: torch.Tensor, bn: nn.BatchNorm1d, work: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, 1/sqrt(var + eps)) over the rows of ``x``: the batch's in training (two passes over chunks, summed in
    float64, faster on the CPU than torch's var_mean over dim 0; the running statistics are updated like
    ``nn.BatchNorm1d``), the running ones in eval mode. ``work``: a (CHUNK, d) buffer."""
    num_rows, width = x.shape
    if not bn.training:
        return bn.running_mean, torch.rsqrt(bn.running_var + bn.eps)
    total = torch.zeros(width, dtype=torch.float64, device=x.device)
    for where in _chunks(num_rows):
        total += x[where].sum(0)
    mean = (total / num_rows).to(x.dtype)
    total.zero_()
    for where in _chunks(num_rows):
        total += torch.sub(x[where], mean, out=work[: where.stop - where.start]).square_().sum(0)
    var = (total / num_rows).to(x.dtype)
    with torch.no_grad():
        bn.num_batches_tracked += 1
        bn.running_mean.mul_(1 - bn.momentum).add_(mean, alpha=bn.momentum)
        unbiased = var * (num_rows / max(num_rows - 1, 1))
        bn.running_var.mul_(1 - bn.momentum).add_(unbiased, alpha=bn.momentum)
    return mean, torch.rsqrt(var + bn.eps)


class _TailGradient:
    """∂/∂ê of e' = ReLU(BN(ê)) (+ skip), chunk by chunk, from ê and ∂/∂e' (``grad_out``).

    BN's gradient in training mode, scale · (gy − mean(gy) − x̂ · mean(gy x̂)) with gy the gradient behind the ReLU,
    needs two sums over all edges first (:meth:`accumulate` over every chunk, before any :meth:`chunk`); they are also
    the gradients of BN's bias and weight. ReLU's mask and x̂ are recomputed from ê in each pass."""

    def __init__(self, grad_out, saved, training: bool, rows: int) -> None:
        self.grad_out, self.training = grad_out, training
        self.mean, self.invstd, self.scale, self.shift = saved
        self.work, self.gy = (grad_out.new_empty(rows, grad_out.shape[1]) for _ in range(2))
        self.sum_gy, self.sum_gy_xhat = grad_out.new_zeros(grad_out.shape[1]), grad_out.new_zeros(grad_out.shape[1])
        self.rows, self.means = 0, None

    def _gy_xhat(self, where: slice, x: torch.Tensor):
        n = where.stop - where.start
        y = torch.addcmul(self.shift, x, self.scale, out=self.work[:n])
        gy = torch.ops.aten.threshold_backward.grad_input(self.grad_out[where], y, 0.0, grad_input=self.gy[:n])
        return gy, torch.sub(x, self.mean, out=self.work[:n]).mul_(self.invstd)

    def accumulate(self, where: slice, x: torch.Tensor) -> None:
        """Add the rows ``where`` (ê: ``x``) to the sums of gy and gy x̂."""
        gy, xhat = self._gy_xhat(where, x)
        self.sum_gy += gy.sum(0)
        self.sum_gy_xhat += xhat.mul_(gy).sum(0)
        self.rows += where.stop - where.start

    def chunk(self, where: slice, x: torch.Tensor) -> torch.Tensor:
        """∂/∂ê of the rows ``where`` (ê: ``x``), in a buffer the next call overwrites."""
        gy, xhat = self._gy_xhat(where, x)
        if self.training:
            if self.means is None:
                self.means = self.sum_gy_xhat / self.rows, self.sum_gy / self.rows
            mean_gy_xhat, mean_gy = self.means
            return gy.sub_(xhat.mul_(mean_gy_xhat).add_(mean_gy)).mul_(self.scale)
        return gy.mul_(self.scale)


def _edge_rows(num_rows: int, like: torch.Tensor) -> torch.Tensor:
    """An uninitialised (num_rows, width) tensor whose storage is rounded up to the next of 8 sizes per power of two.

    Batches differ in their edge counts by a few per cent; rounded, successive batches ask malloc for the same
    sequence of block sizes, so with malloc keeping freed memory (gnnbench.allocator) the holes one batch leaves are
    the ones the next batch fills, instead of holes just too small for it: a lower peak and less time
    (docs/performance.md)."""
    rounded = num_rows
    if num_rows > 4096:
        step = 1 << max(num_rows.bit_length() - 4, 0)  # 8 classes per power of two: ≤ 12.5 % over
        rounded = -(-num_rows // step) * step
    return like.new_empty(rounded, like.shape[1])[:num_rows]


def _chunks(num_rows: int):
    """Slices of ``_GatedEdges.CHUNK`` consecutive rows covering ``num_rows``."""
    step = _GatedEdges.CHUNK
    return (slice(start, min(start + step, num_rows)) for start in range(0, num_rows, step))


def _call_order(e: torch.Tensor | None, edge_index) -> tuple[torch.Tensor | None, torch.Tensor]:
    """(e, edge_index) of a call in the architecture's order ``(h, e, edge_index)`` or PyG's plain
    ``(x, edge_index, edge_attr)`` (edge_attr optional where the layer does not read it)."""
    if is_edge_index(e) and not is_edge_index(edge_index):
        return edge_index, e
    return e, edge_index


class GatedGCNLayer(_LayerBase):
    r"""The benchmark's GatedGCN layer with its edge stream. For every edge u→v (sums over the in-edges of v;
    A…E ``nn.Linear`` with the default initialisation):

        ê_uv = C e_uv + D h_u + E h_v;   σ_uv = sigmoid(ê_uv)
        h'_v = A h_v + (Σ_{u→v} σ_uv ⊙ B h_u) / (Σ_{u→v} σ_uv + 1e-6)
        out  = Dropout(h + ReLU(BN_h(h'))),   e' = Dropout(e + ReLU(BN_e(ê)))   (+ input iff residual, d_in = d_out)

    Args:
        in_dim: input width d_in.
        out_dim: output width d_out.
        dropout: dropout probability on the outputs.
        batch_norm: apply the BNs (always created).
        residual: add the inputs (when d_in = d_out).

    Shapes:
        - input: node features (N, d_in), edge features (E, d_in) (or one row broadcast, stride 0) and edge
          indices (2, E), as ``(h, e, edge_index)`` or PyG's ``(x, edge_index, edge_attr)``.
        - output: (node features (N, d_out), edge features (E, d_out), or None with ``edge_output=False``).
    """

    def __init__(self, in_dim: int, out_dim: int, dropout: float, batch_norm: bool, residual: bool) -> None:
        super().__init__(in_dim, out_dim, dropout, batch_norm, residual)
        self.A, self.B, self.C, self.D, self.E = (nn.Linear(in_dim, out_dim) for _ in range(5))
        self.bn_node_h = nn.BatchNorm1d(out_dim)
        self.bn_node_e = nn.BatchNorm1d(out_dim)

    def forward(self, h: torch.Tensor, e: torch.Tensor, edge_index: torch.Tensor, edge_output: bool = True,
                adjacency: SparseAdjacency | None = None):
        """(out, e') of the update in the class docstring; ``edge_output`` false skips e' (the last layer's, which no
        head reads) and returns None for it. ``adjacency`` is not read (the isotropic variant's)."""
        e, edge_index = _call_order(e, edge_index)
        src, dst = edge_index
        Ah, Bh, Dh, Eh = self._project_abde(h)
        bn = self.bn_node_e
        fused_tail = (edge_output and self.batch_norm and bn.momentum is not None
                      and not (self.training and src.numel() < 2))  # else BN's own checks and errors
        tail = (bn.weight, bn.bias) if fused_tail else (None, None)
        constant = e.stride(0) == 0  # the same input on every edge: transform it once
        skip = e if constant and fused_tail and self.residual else None
        gate_input = (self.C(e[:1]), None, None) if constant else (e, self.C.weight, self.C.bias)
        aggregate, e_out = _GatedEdges.apply(Bh, Dh, Eh, *gate_input, *tail, skip, src, dst,
                                             bn if fused_tail else None, self.residual)
        h_new = post_aggregation(Ah + aggregate, h, self.bn_node_h, **self._tail())
        if not edge_output:
            return h_new, None
        if not fused_tail:  # e_out is ê
            return h_new, post_aggregation(e_out, e, bn, **self._tail())
        return h_new, F.dropout(e_out, self.dropout, self.training) if self.dropout > 0 else e_out


class GatedGCNLayerEdgeFeatOnly(_LayerBase):
    r""""edgefeat": the gate comes from the nodes only; no C, no ``bn_node_e``; the edge input is returned
    unchanged. For every edge u→v (sums over the in-edges of v):

        σ_uv = sigmoid(D h_u + E h_v)
        h'_v = A h_v + (Σ_{u→v} σ_uv ⊙ B h_u) / (Σ_{u→v} σ_uv + 1e-6)
        out  = Dropout(h + ReLU(BN_h(h')))

    Args:
        in_dim: input width d_in.
        out_dim: output width d_out.
        dropout: dropout probability on the outputs.
        batch_norm: apply the BNs (always created).
        residual: add the inputs (when d_in = d_out).

    Shapes:
        - input: node features (N, d_in), edge features (not read; may be None) and edge indices (2, E), as
          ``(h, e, edge_index)`` or PyG's ``(x, edge_index[, edge_attr])``.
        - output: (node features (N, d_out), the edge input unchanged).
    """

    def __init__(self, in_dim: int, out_dim: int, dropout: float, batch_norm: bool, residual: bool) -> None:
        super().__init__(in_dim, out_dim, dropout, batch_norm, residual)
        self.A, self.B, self.D, self.E = (nn.Linear(in_dim, out_dim) for _ in range(4))
        self.bn_node_h = nn.BatchNorm1d(out_dim)

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, edge_index: torch.Tensor | None = None,
                edge_output: bool = True, adjacency: SparseAdjacency | None = None):
        """(out, e): the node update of the class docstring and the edge input unchanged."""
        e, edge_index = _call_order(e, edge_index)
        src, dst = edge_index
        Ah, Bh, Dh, Eh = self._project_abde(h)
        sigma = torch.sigmoid(Dh.index_select(0, src) + Eh.index_select(0, dst))
        numerator = scatter_sum(sigma * Bh.index_select(0, src), dst, h.shape[0])
        denominator = scatter_sum(sigma, dst, h.shape[0])
        h_new = post_aggregation(Ah + numerator / (denominator + 1e-6), h, self.bn_node_h, **self._tail())
        return h_new, e


class GatedGCNLayerIsotropic(_LayerBase):
    r""""isotropic": no gate; only A, B and ``bn_node_h``; the edge input is returned unchanged:

        h'_v = A h_v + Σ_{u→v} B h_u          (parallel edges count once per edge)
        out  = Dropout(h + ReLU(BN_h(h')))

    Args:
        in_dim: input width d_in.
        out_dim: output width d_out.
        dropout: dropout probability on the outputs.
        batch_norm: apply the BNs (always created).
        residual: add the inputs (when d_in = d_out).

    Shapes:
        - input: node features (N, d_in), edge features (not read; may be None) and edge indices (2, E), as
          ``(h, e, edge_index)`` or PyG's ``(x, edge_index[, edge_attr])``; the unit adjacency is the batch's
          (``adjacency``) or built once and cached for that edge_index tensor.
        - output: (node features (N, d_out), the edge input unchanged).
    """

    def __init__(self, in_dim: int, out_dim: int, dropout: float, batch_norm: bool, residual: bool) -> None:
        super().__init__(in_dim, out_dim, dropout, batch_norm, residual)
        self.A, self.B = nn.Linear(in_dim, out_dim), nn.Linear(in_dim, out_dim)
        self.bn_node_h = nn.BatchNorm1d(out_dim)

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, edge_index: torch.Tensor | None = None,
                edge_output: bool = True, adjacency: SparseAdjacency | None = None):
        """(out, e): h'_v = A h_v + Σ_{u→v} B h_u through the tail, and the edge input unchanged."""
        e, edge_index = _call_order(e, edge_index)
        if adjacency is None:
            num_nodes, dtype = h.shape[0], h.dtype
            adjacency = cached_structure(self, edge_index, (num_nodes, dtype),
                                         lambda: unit_adjacency(edge_index, num_nodes, dtype))
        weight = torch.cat([self.A.weight, self.B.weight])
        bias = torch.cat([self.A.bias, self.B.bias])
        Ah, Bh = F.linear(h, weight, bias).split(self.A.out_features, dim=1)
        h_new = post_aggregation(Ah + adjacency.propagate(Bh), h, self.bn_node_h, **self._tail())
        return h_new, e


LAYER_TYPES = {"edgereprfeat": GatedGCNLayer, "edgefeat": GatedGCNLayerEdgeFeatOnly,
               "isotropic": GatedGCNLayerIsotropic}


class GatedGCN(Architecture):
    """L GatedGCN layers: hidden → hidden (L − 1 times), then hidden → out_dim."""

    uses_edges = True
    required = ("L", "hidden_dim", "out_dim", "residual", "batch_norm", "dropout")

    def __init__(self, hidden_dim: int, out_dim: int, num_layers: int, dropout: float, batch_norm: bool,
                 residual: bool, layer_type: str = "edgereprfeat", use_gru: bool = False,
                 edge_table: bool = False) -> None:
        super().__init__()
        if layer_type not in LAYER_TYPES:
            # the original silently falls back to the standard layer; a typo is more likely than intent here
            # (docs/protocols/benchmarking-gnns.md#unknown-settings-are-errors)
            raise ValueError(f"layer_type must be one of {', '.join(LAYER_TYPES)}, got {layer_type!r}")
        layer_cls = LAYER_TYPES[layer_type]
        self.layers = nn.ModuleList(layer_cls(a, b, dropout, batch_norm, residual)
                                    for a, b in stack_widths(hidden_dim, out_dim, num_layers))
        if use_gru and out_dim != hidden_dim:
            raise ValueError(f"use_gru needs out_dim = hidden_dim (GRU({hidden_dim}, {hidden_dim})), got {out_dim}")
        self.gru = nn.GRU(hidden_dim, hidden_dim) if use_gru else None
        self.isotropic = layer_cls is GatedGCNLayerIsotropic
        # "edge_type_table" (WikiCS): Embedding(1, hidden) owned here instead of an edge encoder (module docstring)
        self.edge_table = nn.Embedding(1, hidden_dim) if edge_table else None
        self.uses_edges = not edge_table
        self.input_width, self.out_width = hidden_dim, out_dim

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta) -> GatedGCN:
        """From ``hidden_dim``, ``out_dim`` (ignored for node and multitask tasks, as the benchmark's nets), ``L``,
        ``dropout``, ``batch_norm``, ``residual``, ``layer_type`` and ``use_gru``; the edge table where the dataset's
        description asks for it (module docstring)."""
        node_level = meta.task in ("node_classification", "multitask_regression")
        out_dim = cfg["hidden_dim"] if node_level else cfg["out_dim"]  # the benchmark ignores out_dim there
        edge_table = "edge_type_table" in meta.net_conventions and meta.edge_features is None
        return cls(cfg["hidden_dim"], out_dim, cfg["L"], cfg["dropout"], cfg["batch_norm"], cfg["residual"],
                   cfg.get("layer_type", "edgereprfeat"), cfg.get("use_gru", False), edge_table)

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, batch: GraphBatch) -> Representation:
        """The L layers (with the GRU update after each when ``use_gru``); node embeddings (N, out_dim)."""
        edge_index = batch.edge_index
        if self.edge_table is not None:
            e = self.edge_table.weight.expand(edge_index.shape[1], -1)  # the same row for every edge
        adjacency = unit_adjacency(edge_index, h.shape[0], h.dtype) if self.isotropic else None
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            h_layer, e = layer(h, e, edge_index, edge_output=i < last, adjacency=adjacency)
            h = h_layer if self.gru is None else gru_update(self.gru, h, h_layer)
        return Representation(h)


# ---------------------------------------------------------------------------------------------- wide forms
# The layers in a wide stack (gnnbench.training.wide): the projections as grouped products, not the block-diagonal
# matrices their concatenated weights would become.

def _wide_project_abde(self, h: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """GatedGCN's A h, B h, D h, E h, each (N, R·out) (its own form concatenates the weights, which would be the
    block-diagonal matrices here)."""
    return tuple(m(h) for m in (self.A, self.B, self.D, self.E))  # four grouped products, no copies


def _wide_gated_forward(self, h: torch.Tensor, e: torch.Tensor, edge_index: torch.Tensor, edge_output: bool = True,
                       adjacency=None):
    """The benchmark's standard GatedGCN layer (``GatedGCNLayer``) in autograd operations with grouped products:
    its fused edge function would read C's weight as the block-diagonal matrix (R times the arithmetic on every
    edge). Same formula and tail; sums in another order (rounding), more memory for the backward."""
    e, edge_index = _call_order(e, edge_index)
    src, dst = edge_index
    Ah, Bh, Dh, Eh = self._project_abde(h)
    constant = e.stride(0) == 0  # the same input on every edge: transform it once
    Ce = self.C(e[:1]) if constant else self.C(e)
    e_hat = Dh.index_select(0, src) + Ce + Eh.index_select(0, dst)
    sigma = torch.sigmoid(e_hat)
    num_nodes = h.shape[0]
    numerator = scatter_sum(sigma * Bh.index_select(0, src), dst, num_nodes)
    denominator = scatter_sum(sigma, dst, num_nodes)
    h_new = post_aggregation(Ah + numerator / (denominator + 1e-6), h, self.bn_node_h, **self._tail())
    if not edge_output:
        return h_new, None
    return h_new, post_aggregation(e_hat, e, self.bn_node_e, **self._tail())


def _wide_isotropic_forward(self, h: torch.Tensor, e, edge_index=None, edge_output: bool = True, adjacency=None):
    """``GatedGCNLayerIsotropic.forward`` with its A and B as grouped products (not the block-diagonal matrices)."""
    e, edge_index = _call_order(e, edge_index)
    if adjacency is None:
        num_nodes, dtype = h.shape[0], h.dtype
        adjacency = cached_structure(self, edge_index, (num_nodes, dtype),
                                     lambda: unit_adjacency(edge_index, num_nodes, dtype))
    h_new = post_aggregation(self.A(h) + adjacency.propagate(self.B(h)), h, self.bn_node_h, **self._tail())
    return h_new, e


_LayerBase.WIDE_FORM = {"methods": {"_project_abde": _wide_project_abde}}
GatedGCNLayer.WIDE_FORM = {"methods": {"_project_abde": _wide_project_abde, "forward": _wide_gated_forward}}
GatedGCNLayerIsotropic.WIDE_FORM = {"methods": {"forward": _wide_isotropic_forward}}
