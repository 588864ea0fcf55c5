"""GCN as the benchmark uses it: DGL ``GraphConv(norm='both')`` inside a BN/ReLU/residual/dropout layer
(Dwivedi et al., Appendix B.1.2, Eq. 5 with Eqs. 21–22; the released code's ``layers/gcn_layer.py``); and
:class:`StackedGCN`, the "Pitfalls of GNN Evaluation" network (Shchur et al.; the released code shchur/gnn-benchmark,
``gnnbench/models/gcn.py``; docs/protocols/pitfalls.md) trained as R initialisations at once
(:mod:`gnnbench.models.stacked`).

For every edge u→v, with out- and in-degrees clamped at 1 and no self loops:

    h'_v = b + Σ_{u→v} d_out(u)^{-1/2} d_in(v)^{-1/2} W h_u
    h'   = Dropout(h + ReLU(BN(h')))          (residual only when input and output widths agree)

PyG's ``GCNConv`` normalises both ends by the *in*-degree and adds self loops; the two agree only on
symmetric graphs without self loops, so this layer is written on torch primitives to match the
benchmark on directed graphs (kNN graphs of TSP and superpixels) as well. W is Glorot-uniform and b zero,
as in DGL; ``batchnorm_h`` is always created (it counts in the parameter total even when unused).

The normalised adjacency Â[v, u] = d_out(u)^{-1/2} d_in(v)^{-1/2} is built once per batch as a CSR
matrix and every layer aggregates with one sparse–dense product (much faster on the CPU than gathering a
message per edge and scattering it back; docs/performance.md).
"""

from __future__ import annotations

import torch
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.models.base import Architecture, Representation
from gnnbench.models.blocks import cached_structure, post_aggregation, stack_widths
from gnnbench.models.sparse import SparseAdjacency, add_self_loops, degree
from gnnbench.models.stacked import (
    DroppedInput,
    HopsCache,
    InputFeatures,
    ModelConfig,
    NodeGraph,
    StackedModel,
    adjacency_pattern,
    dropout,
    glorot_,
    propagate,
    row_degrees,
    stacked_linear,
    stacked_parameter,
    with_values,
)
from gnnbench.models.wide_ops import wide_matmul


def gcn_adjacency(edge_index: torch.Tensor, num_nodes: int) -> SparseAdjacency:
    """Â with Â[v, u] = d_out(u)^{-1/2} d_in(v)^{-1/2} for every edge u→v (degrees clamped at 1)."""
    src, dst = edge_index
    out_scale = degree(src, num_nodes).clamp_(min=1).pow_(-0.5)
    in_scale = degree(dst, num_nodes).clamp_(min=1).pow_(-0.5)
    return SparseAdjacency(edge_index, out_scale[src] * in_scale[dst], num_nodes)


class GCNLayer(nn.Module):
    r"""The benchmark's GCN layer: DGL ``GraphConv(norm='both')`` (no self loops added) followed by the
    BN → ReLU → residual → dropout tail. For every edge u→v (parallel edges add up), degrees clamped at 1:

        h'_v = b + Σ_{u→v} d_out(u)^{-1/2} d_in(v)^{-1/2} W h_u
        out  = Dropout(h + ReLU(BN(h')))      (BN if batch_norm, ReLU if activation, + h if residual)

    W is Glorot-uniform, b zero; ``batchnorm_h`` always exists (it counts in the parameter total).

    Args:
        in_dim: input width d_in.
        out_dim: output width d_out.
        dropout: dropout probability on the output.
        batch_norm: apply ``batchnorm_h``.
        residual: add the input (only when d_in = d_out).
        activation: apply ReLU.

    Shapes:
        - input: node features (N, d_in); edge indices (2, E) (the normalised adjacency is built once and
          cached for that tensor), or the :class:`SparseAdjacency` of :func:`gcn_adjacency` (a batch's, shared
          by all layers).
        - output: node features (N, d_out).
    """

    def __init__(self, in_dim: int, out_dim: int, dropout: float, batch_norm: bool, residual: bool,
                 activation: bool = True) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_dim, out_dim))
        self.bias = nn.Parameter(torch.empty(out_dim))
        self.batchnorm_h = nn.BatchNorm1d(out_dim)
        self.dropout, self.batch_norm, self.activation = dropout, batch_norm, activation
        self.residual = residual and in_dim == out_dim
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """DGL's initialisation: W Glorot-uniform, b = 0; BN reset."""
        nn.init.xavier_uniform_(self.weight)
        nn.init.zeros_(self.bias)
        self.batchnorm_h.reset_parameters()

    def forward(self, h: torch.Tensor, adjacency: SparseAdjacency | torch.Tensor) -> torch.Tensor:
        """``adjacency``: the normalised adjacency of :func:`gcn_adjacency`, or the edge indices (2, E)."""
        if isinstance(adjacency, torch.Tensor):
            edge_index, num_nodes = adjacency, h.shape[0]
            adjacency = cached_structure(self, edge_index, (num_nodes,),
                                         lambda: gcn_adjacency(edge_index, num_nodes))
        if self.weight.shape[0] > self.weight.shape[1]:  # multiply first when it shrinks the features
            x = adjacency.propagate(h @ self.weight) + self.bias
        else:
            x = torch.addmm(self.bias, adjacency.propagate(h), self.weight)
        return post_aggregation(x, h, self.batchnorm_h, batch_norm=self.batch_norm, residual=self.residual,
                                dropout=self.dropout, training=self.training, activation=self.activation)


def _wide_forward(self, h: torch.Tensor, adjacency) -> torch.Tensor:
    """The benchmark's ``GCNLayer.forward`` with a grouped product for W: (R, in, out)."""
    if isinstance(adjacency, torch.Tensor):
        edge_index, num_nodes = adjacency, h.shape[0]
        adjacency = cached_structure(self, edge_index, (num_nodes,), lambda: gcn_adjacency(edge_index, num_nodes))
    weight, bias = self._parameters["weight"], self._parameters["bias"].reshape(-1)
    if weight.shape[1] > weight.shape[2]:  # multiply first when it shrinks the features
        x = adjacency.propagate(wide_matmul(h, weight)) + bias
    else:
        x = wide_matmul(adjacency.propagate(h), weight) + bias
    return post_aggregation(x, h, self.batchnorm_h, batch_norm=self.batch_norm, residual=self.residual,
                            dropout=self.dropout, training=self.training, activation=self.activation)


# the layer in a wide stack (gnnbench.training.wide): W as (R, in, out), one grouped product for every member
GCNLayer.WIDE_FORM = {"tensors": ("weight", "bias"), "methods": {"forward": _wide_forward}}


class GCN(Architecture):
    """L GCN layers: hidden → hidden (L − 1 times), then hidden → out_dim."""

    required = ("L", "hidden_dim", "out_dim", "residual", "batch_norm", "dropout")

    def __init__(self, hidden_dim: int, out_dim: int, num_layers: int, dropout: float, batch_norm: bool,
                 residual: bool, self_loop: bool = False) -> None:
        super().__init__()
        self.layers = nn.ModuleList(GCNLayer(a, b, dropout, batch_norm, residual)
                                    for a, b in stack_widths(hidden_dim, out_dim, num_layers))
        self.self_loop = self_loop
        self.input_width, self.out_width = hidden_dim, out_dim

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta) -> GCN:
        """From ``hidden_dim``, ``out_dim``, ``L``, ``dropout``, ``batch_norm``, ``residual`` and ``self_loop``."""
        return cls(cfg["hidden_dim"], cfg["out_dim"], cfg["L"], cfg["dropout"], cfg["batch_norm"],
                   cfg["residual"], cfg.get("self_loop", False))

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, batch: GraphBatch) -> Representation:
        """The L layers with the batch's normalised adjacency (built once, shared); node embeddings (N, out_dim)."""
        edge_index = batch.edge_index
        if self.self_loop:
            edge_index = add_self_loops(edge_index, h.shape[0])
        adjacency = gcn_adjacency(edge_index, h.shape[0])
        for layer in self.layers:
            h = layer(h, adjacency)
        return Representation(h)


# ---------------------------------------------------------------------------------------------------------
# "Pitfalls of GNN Evaluation" (the released code shchur/gnn-benchmark, gnnbench/models/gcn.py): R initialisations
# at once


class StackedGCN(StackedModel):
    """The released code's two-layer GCN for node classification, R initialisations at once (parameters (R, …)):

        H₁ = ReLU(Â · (Dropout(X) · W₁) + b₁)          W₁ (F, hidden)
        Z  = Â · (Dropout(H₁) · W₂) + b₂               W₂ (hidden, C); logits, no activation

    Â = D^-1/2 A D^-1/2 with the degrees of A and no self loops (``gcn_self_loops: false``, the released code's
    ``renormalize_adj``, which builds A + I but returns the normalised A) or D̃^-1/2 (A + I) D̃^-1/2
    (``gcn_self_loops: true``, Kipf & Welling and the paper; the diagonal set to 1). Degree 0 is clamped to 1
    (no edges there either way). Dropout p = ``dropout_prob`` on the input of both layers, on the sparse features'
    stored entries. L2: λ/2·‖W₁‖² only (the original: "L2 regularization only on first layer"). Glorot W, zero b.

    Differs from :class:`GCN` above (the benchmarking-gnns layer): no batch norm, residual or per-layer dropout
    after the activation; symmetric normalisation of an undirected graph; dropout before the product; two layers
    with the class logits as the second layer's output. Logits at T are computed as (Â_T · Dropout(H₁)) · W₂ + b₂
    from H₁ at the neighbours of T only (the same numbers as Â(H₁W₂) + b₂, by associativity).
    """

    l2_parameters = ("weight1",)
    member_keys = ("weight_decay", "dropout_prob")

    def __init__(self, graph: NodeGraph, seeds: list[int], hidden: int, dropout_prob: float, weight_decay: float,
                 self_loops: bool = False) -> None:
        super().__init__(graph, weight_decay)
        inits = len(seeds)
        self.weight1 = stacked_parameter(inits, graph.num_features, hidden)
        self.bias1 = stacked_parameter(inits, hidden)
        self.weight2 = stacked_parameter(inits, hidden, graph.num_classes)
        self.bias2 = stacked_parameter(inits, graph.num_classes)
        self.dropout_prob, self.self_loops = dropout_prob, self_loops
        pattern = adjacency_pattern(graph, self_loops)
        scale = row_degrees(pattern).clamp_(min=1).rsqrt_()
        self.hops = HopsCache(with_values(pattern, scale[pattern.row] * scale[pattern.col]), depth=2)
        self.features = InputFeatures(graph.features)
        self.reset_parameters(seeds)

    @classmethod
    def from_config(cls, config: ModelConfig, graph: NodeGraph, seeds: list[int]) -> StackedGCN:
        """From ``hidden_size``, ``dropout_prob``, ``weight_decay`` and ``gcn_self_loops`` of a pitfalls model
        config."""
        return cls(graph, seeds, config.positive_int("hidden_size"), config.probability("dropout_prob"),
                   config.nonnegative("weight_decay"), config.flag("gcn_self_loops", False))

    def init_weights(self, r: int, generator: torch.Generator) -> None:
        """Glorot-uniform W₁, W₂ of initialisation ``r`` from ``generator`` (biases stay 0)."""
        glorot_(self.weight1[r], generator)
        glorot_(self.weight2[r], generator)

    def forward(self, nodes: torch.Tensor | None, training: bool) -> torch.Tensor:
        """Logits Z (R, M, C) at ``nodes`` (None: all), from the two layers of the class docstring."""
        hops = self.hops.get(nodes)
        inits, p = self.inits, self.dropout_prob if training else 0.0
        x = DroppedInput(self.features.rows(hops, 2), inits, p).matmul(self.weight1)  # (R, |S2|, hidden)
        h = propagate(hops.blocks[1], x)  # (R, |S1|, hidden)
        h = torch.relu(h + self.bias1.unsqueeze(1))
        h = propagate(hops.blocks[0], dropout(h, p, training))  # (R, |T|, hidden)
        return stacked_linear(h, self.weight2) + self.bias2.unsqueeze(1)

