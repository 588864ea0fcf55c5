"""GatedGCN (Bresson & Laurent) with the edge stream of the benchmark (spec benchmarking-gnns.md §2.2, §2.4).

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

Speed: A, B, D and E are applied in one matrix product; the standard layer's gate and its edge tail are hand-written
autograd functions (:class:`_GatedAggregate`, :class:`_EdgeTail`) that walk the edges in cache-sized chunks and keep
only the edge input and ê for the backward (autograd would keep six or more (E, d) tensors per layer: on 500 PATTERN
graphs an epoch fell from 44 s to ~9 s and the peak from 5.6 to 3.4 GB together with :mod:`gnnbench.allocator`);
they match the autograd formulation to float rounding, a bound the tests check. A constant edge input (the
benchmark's ``ones``) is transformed once, not per edge; the edge update of the last layer is skipped (no head reads
the edge stream) — its result would be discarded, so outputs are unchanged; the isotropic sum is one sparse–dense
product with the adjacency built once per forward pass.

Node-level tasks: the benchmark's SBM and WikiCS GatedGCN (and GraphTheoryProp's) keep every layer at
``hidden_dim`` and ignore ``out_dim``; :meth:`GatedGCN.from_config` reproduces that for node and multitask
tasks. WikiCS: the original's WikiCS net embeds the edges with ``Embedding(1, hidden)`` on an all-zero edge
type (a learned constant edge vector, no bias) instead of the usual ``Linear(1, hidden)`` on ones; on a dataset
that says so (``meta.net_conventions`` "edge_type_table", WikiCS's description) and has no edge features the
model owns that table and broadcasts its row to every edge (the original's (E, 1, hidden) shape quirk, which
breaks its layer, is not reproduced).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.models.base import Architecture, Representation
from gnnbench.models.blocks import gru_update, post_aggregation, stack_widths
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


class _GatedAggregate(torch.autograd.Function):
    """ê = D h[src] + C e + E h[dst] and h_agg = Σ_u σ(ê) ⊙ B h_u / (Σ_u σ(ê) + 1e-6), forward and backward by hand.

    Why: under autograd every step keeps its own edge-sized (E, d) result — C e, D h[src], ê, σ, B h[src],
    σ ⊙ B h[src] — alive for the backward, and allocates each one afresh (≈ 0.2 GB apiece for a batch of 128 PATTERN
    graphs). Here the edges are walked in chunks of ``CHUNK`` through buffers reused from chunk to chunk (they stay in
    cache) and only ê is kept: σ and the gathered rows are recomputed in the backward from ê and (N, d) node
    tensors, and C e is formed chunk by chunk (its gradient too, never as an (E, d) tensor). The terms are added in
    the autograd graph's order; sums differ from it only by float rounding (tests bound it).

    ``e`` (E, d) with C's ``weight`` and ``bias``, or, for the same edge input on every edge, C e itself as one
    (1, d) row and ``weight`` None (the caller transforms the row once under autograd)."""

    CHUNK = 16384  # edges per chunk: (CHUNK, d) float32 buffers of a few MB

    @staticmethod
    def forward(ctx, Bh, Dh, Eh, e, weight, bias, src, dst):
        num_edges, width = src.numel(), Bh.shape[1]
        e_hat = _edge_rows(num_edges, Bh)
        numerator, denominator = Bh.new_zeros(Bh.shape), Bh.new_zeros(Bh.shape)
        rows = min(_GatedAggregate.CHUNK, num_edges)
        sigma, message = Bh.new_empty(rows, width), Bh.new_empty(rows, width)
        for where in _chunks(num_edges):
            start, stop = where.start, where.stop
            s, d, n = src[where], dst[where], stop - start
            out = e_hat[start:stop]
            torch.index_select(Dh, 0, s, out=out)
            if weight is None:
                out += e
            else:
                out += torch.addmm(bias, e[start:stop], weight.t(), out=message[:n])  # C e of the chunk
            out += Eh.index_select(0, d)
            sig = torch.sigmoid(out, out=sigma[:n])
            denominator.index_add_(0, d, sig)
            msg = torch.index_select(Bh, 0, s, out=message[:n]).mul_(sig)
            numerator.index_add_(0, d, msg)
        denominator += 1e-6
        aggregate = numerator.div_(denominator)
        ctx.save_for_backward(Bh, e, weight, e_hat, src, dst, aggregate, denominator)
        return aggregate, e_hat

    @staticmethod
    def backward(ctx, grad_aggregate, grad_e_hat):
        Bh, e, weight, e_hat, src, dst, aggregate, denominator = ctx.saved_tensors
        num_edges, width = e_hat.shape
        grad_num = grad_aggregate / denominator  # ∂/∂numerator
        grad_den = torch.mul(grad_num, aggregate).neg_()  # ∂/∂denominator = −g · num / den²
        grad_Bh, grad_Dh, grad_Eh = Bh.new_zeros(Bh.shape), Bh.new_zeros(Bh.shape), Bh.new_zeros(Bh.shape)
        if weight is None:  # ∂/∂(C e) of the one shared row
            grad_e, grad_weight, grad_bias = Bh.new_zeros(1, width), None, None
        else:
            grad_e = _edge_rows(num_edges, e) if ctx.needs_input_grad[3] else None
            grad_weight, grad_bias = torch.zeros_like(weight), Bh.new_zeros(width)
        rows = min(_GatedAggregate.CHUNK, num_edges)
        sigma, gathered, work = (Bh.new_empty(rows, width) for _ in range(3))
        for where in _chunks(num_edges):
            start, stop = where.start, where.stop
            s, d, n = src[where], dst[where], stop - start
            sig = torch.sigmoid(e_hat[start:stop], out=sigma[:n])
            g_num = torch.index_select(grad_num, 0, d, out=gathered[:n])
            grad_Bh.index_add_(0, s, torch.mul(g_num, sig, out=work[:n]))  # ∂/∂(B h_u) = σ ⊙ g_num[v]
            g = g_num.mul_(torch.index_select(Bh, 0, s, out=work[:n])).add_(grad_den.index_select(0, d))  # ∂/∂σ
            g.mul_(sig).mul_(sig.neg_().add_(1.0))  # ∂/∂ê = ∂/∂σ · σ (1 − σ)
            if grad_e_hat is not None:
                g += grad_e_hat[start:stop]
            grad_Dh.index_add_(0, s, g)
            grad_Eh.index_add_(0, d, g)
            if weight is None:
                grad_e += g.sum(0, keepdim=True)
                continue
            grad_weight.addmm_(g.t(), e[start:stop])
            grad_bias += g.sum(0)
            if grad_e is not None:
                torch.mm(g, weight, out=grad_e[start:stop])
        return grad_Bh, grad_Dh, grad_Eh, grad_e, grad_weight, grad_bias, None, None


class _EdgeTail(torch.autograd.Function):
    """e' = e + ReLU(BN(ê)) over the edges (+ e only with ``residual``), in chunks, keeping nothing edge-sized.

    Under autograd BN's output, the ReLU's output and the sum are three fresh (E, d) tensors and the ReLU's is kept
    for the backward. Here the output is written chunk by chunk from ê and BN's per-channel scale and shift, and the
    backward recomputes ReLU's mask and x̂ = (ê − mean)/σ from ê (which the gate keeps anyway), in two passes: the
    per-channel sums BN's gradient needs, then the gradient. Training mode normalises with the batch statistics and
    updates the running ones like ``nn.BatchNorm1d`` (momentum, unbiased running variance); eval mode uses the
    running ones. Statistics are summed in another order than torch's kernel: float rounding (tests bound it)."""

    @staticmethod
    def forward(ctx, e_hat, e, weight, bias, bn: nn.BatchNorm1d, residual: bool):
        num_edges, width = e_hat.shape
        rows = min(_GatedAggregate.CHUNK, num_edges)
        work = e_hat.new_empty(rows, width)
        if bn.training:  # two passes over chunks (torch's var_mean over dim 0 is ~7× slower than this)
            total = torch.zeros(width, dtype=torch.float64, device=e_hat.device)
            for where in _chunks(num_edges):
                total += e_hat[where].sum(0)
            mean = (total / num_edges).to(e_hat.dtype)
            total.zero_()
            for where in _chunks(num_edges):
                total += torch.sub(e_hat[where], mean, out=work[: where.stop - where.start]).square_().sum(0)
            var = (total / num_edges).to(e_hat.dtype)
            with torch.no_grad():
                bn.num_batches_tracked += 1
                bn.running_mean.mul_(1 - bn.momentum).add_(mean, alpha=bn.momentum)
                unbiased = var * (num_edges / max(num_edges - 1, 1))
                bn.running_var.mul_(1 - bn.momentum).add_(unbiased, alpha=bn.momentum)
        else:
            mean, var = bn.running_mean, bn.running_var
        invstd = torch.rsqrt(var + bn.eps)
        scale = weight * invstd
        shift = bias - mean * scale
        out = _edge_rows(num_edges, e_hat)
        for where in _chunks(num_edges):
            chunk = torch.addcmul(shift, e_hat[where], scale, out=out[where]).relu_()
            if residual:
                chunk += e[where]
        ctx.save_for_backward(e_hat, mean, invstd, weight, scale, shift)
        ctx.training, ctx.residual = bn.training, residual
        return out

    @staticmethod
    def backward(ctx, grad_out):
        e_hat, mean, invstd, weight, scale, shift = ctx.saved_tensors
        num_edges, width = e_hat.shape
        rows = min(_GatedAggregate.CHUNK, num_edges)
        y_buffer, gy_buffer = e_hat.new_empty(rows, width), e_hat.new_empty(rows, width)
        threshold_backward = torch.ops.aten.threshold_backward.grad_input

        def chunks():  # (slice, ∂/∂y where ReLU passes, x̂) of every chunk
            for where in _chunks(num_edges):
                n, x = where.stop - where.start, e_hat[where]
                y = torch.addcmul(shift, x, scale, out=y_buffer[:n])
                gy = threshold_backward(grad_out[where], y, 0.0, grad_input=gy_buffer[:n])
                yield where, gy, torch.sub(x, mean, out=y_buffer[:n]).mul_(invstd)

        sum_gy, sum_gy_xhat = e_hat.new_zeros(width), e_hat.new_zeros(width)
        for _, gy, xhat in chunks():
            sum_gy += gy.sum(0)
            sum_gy_xhat += xhat.mul_(gy).sum(0)
        grad_e_hat = _edge_rows(num_edges, e_hat)
        if ctx.training:  # ∂/∂ê = scale · (gy − mean(gy) − x̂ · mean(gy x̂))
            mean_gy, mean_gy_xhat = sum_gy / num_edges, sum_gy_xhat / num_edges
            for where, gy, xhat in chunks():
                torch.sub(gy, xhat.mul_(mean_gy_xhat).add_(mean_gy), out=grad_e_hat[where]).mul_(scale)
        else:
            for where, gy, _ in chunks():
                torch.mul(gy, scale, out=grad_e_hat[where])
        grad_e = grad_out if ctx.residual else None
        return grad_e_hat, grad_e, sum_gy_xhat, sum_gy, None, None


def _edge_rows(num_rows: int, like: torch.Tensor) -> torch.Tensor:
    """An uninitialised (num_rows, width) tensor whose storage is rounded up to the next of 8 sizes per power of two.

    Batches differ in their edge counts by a few per cent; with malloc keeping freed memory (gnnbench.allocator), a
    block freed by one batch is then the exact size the next batch asks for, instead of a hole just too small for it
    (which made the heap grow by ~1 GB on PATTERN)."""
    rounded = num_rows
    if num_rows > 4096:
        step = 1 << max(num_rows.bit_length() - 4, 0)  # 8 classes per power of two: ≤ 12.5 % over
        rounded = -(-num_rows // step) * step
    return like.new_empty(rounded, like.shape[1])[:num_rows]


def _chunks(num_rows: int):
    """Slices of ``_GatedAggregate.CHUNK`` consecutive rows covering ``num_rows``."""
    step = _GatedAggregate.CHUNK
    return (slice(start, min(start + step, num_rows)) for start in range(0, num_rows, step))


class GatedGCNLayer(_LayerBase):
    def __init__(self, in_dim: int, out_dim: int, dropout: float, batch_norm: bool, residual: bool) -> None:
        super().__init__(in_dim, out_dim, dropout, batch_norm, residual)
        self.A, self.B, self.C, self.D, self.E = (nn.Linear(in_dim, out_dim) for _ in range(5))
        self.bn_node_h = nn.BatchNorm1d(out_dim)
        self.bn_node_e = nn.BatchNorm1d(out_dim)

    def forward(self, h: torch.Tensor, e: torch.Tensor, edge_index: torch.Tensor, edge_output: bool = True,
                adjacency: SparseAdjacency | None = None):
        src, dst = edge_index
        Ah, Bh, Dh, Eh = self._project_abde(h)
        if e.stride(0) == 0:  # the same input on every edge: transform it once
            aggregate, e_hat = _GatedAggregate.apply(Bh, Dh, Eh, self.C(e[:1]), None, None, src, dst)
        else:
            aggregate, e_hat = _GatedAggregate.apply(Bh, Dh, Eh, e, self.C.weight, self.C.bias, src, dst)
        tail = self._tail()
        h_new = post_aggregation(Ah + aggregate, h, self.bn_node_h, **tail)
        e_new = self._edge_tail(e_hat, e) if edge_output else None
        return h_new, e_new

    def _edge_tail(self, e_hat: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        """The layer tail on the edge stream: fused where it is BN → ReLU → (+ e) (:class:`_EdgeTail`)."""
        bn = self.bn_node_e
        if not self.batch_norm or bn.momentum is None or (self.training and e_hat.shape[0] < 2):
            return post_aggregation(e_hat, e, bn, **self._tail())
        e_new = _EdgeTail.apply(e_hat, e, bn.weight, bn.bias, bn, self.residual)
        return F.dropout(e_new, self.dropout, self.training) if self.dropout > 0 else e_new


class GatedGCNLayerEdgeFeatOnly(_LayerBase):
    """"edgefeat": the gate comes from the nodes only (ê_uv = D h_u + E h_v); no C, no ``bn_node_e``; the
    edge input is returned unchanged."""

    def __init__(self, in_dim: int, out_dim: int, dropout: float, batch_norm: bool, residual: bool) -> None:
        super().__init__(in_dim, out_dim, dropout, batch_norm, residual)
        self.A, self.B, self.D, self.E = (nn.Linear(in_dim, out_dim) for _ in range(4))
        self.bn_node_h = nn.BatchNorm1d(out_dim)

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, edge_index: torch.Tensor, edge_output: bool = True,
                adjacency: SparseAdjacency | None = None):
        src, dst = edge_index
        Ah, Bh, Dh, Eh = self._project_abde(h)
        sigma = torch.sigmoid(Dh.index_select(0, src) + Eh.index_select(0, dst))
        numerator = scatter_sum(sigma * Bh.index_select(0, src), dst, h.shape[0])
        denominator = scatter_sum(sigma, dst, h.shape[0])
        h_new = post_aggregation(Ah + numerator / (denominator + 1e-6), h, self.bn_node_h, **self._tail())
        return h_new, e


class GatedGCNLayerIsotropic(_LayerBase):
    """"isotropic": h'_v = A h_v + Σ_u B h_u (no gate); only A, B and ``bn_node_h``; the edge input is
    returned unchanged."""

    def __init__(self, in_dim: int, out_dim: int, dropout: float, batch_norm: bool, residual: bool) -> None:
        super().__init__(in_dim, out_dim, dropout, batch_norm, residual)
        self.A, self.B = nn.Linear(in_dim, out_dim), nn.Linear(in_dim, out_dim)
        self.bn_node_h = nn.BatchNorm1d(out_dim)

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, edge_index: torch.Tensor, edge_output: bool = True,
                adjacency: SparseAdjacency | None = None):
        if adjacency is None:
            adjacency = unit_adjacency(edge_index, h.shape[0], h.dtype)
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
        node_level = meta.task in ("node_classification", "multitask_regression")
        out_dim = cfg["hidden_dim"] if node_level else cfg["out_dim"]  # the benchmark ignores out_dim there
        edge_table = "edge_type_table" in meta.net_conventions and meta.edge_features is None
        return cls(cfg["hidden_dim"], out_dim, cfg["L"], cfg["dropout"], cfg["batch_norm"], cfg["residual"],
                   cfg.get("layer_type", "edgereprfeat"), cfg.get("use_gru", False), edge_table)

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, batch: GraphBatch) -> Representation:
        edge_index = batch.edge_index
        if self.edge_table is not None:
            e = self.edge_table.weight.expand(edge_index.shape[1], -1)  # the same row for every edge
        adjacency = unit_adjacency(edge_index, h.shape[0], h.dtype) if self.isotropic else None
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            h_layer, e = layer(h, e, edge_index, edge_output=i < last, adjacency=adjacency)
            h = h_layer if self.gru is None else gru_update(self.gru, h, h_layer)
        return Representation(h)
