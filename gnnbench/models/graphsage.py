"""GraphSAGE as the benchmark writes it: its own ``GraphSageLayer`` (not DGL's ``SAGEConv``) and, for the
COLLAB edge-feature analysis, the gated variants ``GraphSageLayerEdgeFeat`` and ``GraphSageLayerEdgeReprFeat``
(Dwivedi et al., Appendix B.1.2, Eqs. 6–8, and Appendix E.2.2, Eqs. 65–69; the released code's
``layers/graphsage_layer.py``). Sums and maxima run over the in-edges u→v of every node v. At the end:
:class:`StackedGraphSage`, the "Pitfalls of GNN Evaluation" network (Shchur et al.; the released code
shchur/gnn-benchmark, ``gnnbench/models/graphsage.py``; docs/protocols/pitfalls.md) trained as R initialisations at
once (:mod:`gnnbench.models.stacked`).

Standard layer (``layer_type`` "isotropic" or absent), ``sage_aggregator`` = maxpool (every published config):

    x   = Dropout(h)
    x   = ReLU(W_pool x + b_pool)                 this *replaces* the node state, so the self half below is
    c_v = max_{u→v} x_u                           the pooled transform of v, not h_v (0 without in-edges)
    z_v = W [x_v ‖ c_v] + b
    h'  = h + BN(ReLU(z / max(‖z‖₂, 1e-12)))     BN only if batch_norm, + h only if residual

``sage_aggregator`` = mean (as in the original: no pooling transform)

    x = Dropout(h);   c_v = mean_{u→v} x_u (0 without in-edges);   z_v = W [x_v ‖ c_v] + b;  then as above

``sage_aggregator`` = meanpool (not in the original, whose unknown aggregators fall back to mean; added for
the "Pitfalls of GNN evaluation" protocol): maxpool with the maximum replaced by the mean,

    x = ReLU(W_pool Dropout(h) + b_pool);   c_v = mean_{u→v} x_u;   z_v = W [x_v ‖ c_v] + b;  then as above

Quirks kept: dropout acts on the layer *input* and there is none after the layer; ReLU comes *before* BN;
``batchnorm_h`` exists only when batch_norm is true (unlike GCN/GatedGCN/MoNet); the residual is off when the
input and output widths differ.

Edge variants (``layer_type`` "edgefeat" / "edgereprfeat"; COLLAB configs that no script runs). With
x = Dropout(h), A, B, C Linear(d_in → d_out):

    ê_uv = B x_u + B x_v                         (edgereprfeat: ê_uv = C e_uv + B x_u + B x_v)
    c_v  = max_{u→v} ReLU(σ(ê_uv) ⊙ A x_u)       (0 without in-edges)
    h'   = h + BN_h(ReLU(normalize(W [x_v ‖ c_v] + b)))
    e'   = e + BN_e(ReLU(ê))                     (edgereprfeat only; e is not dropped out)

[x_v ‖ c_v] has width d_in + d_out against W's 2·d_in inputs, so these layers need d_in = d_out (the
original would fail at run time). Only edgereprfeat reads edges: edgefeat builds no edge encoder (the
published totals count none).

Decisions against the original, so that no setting is silently ignored
(docs/protocols/benchmarking-gnns.md#unknown-settings-are-errors): an unknown ``sage_aggregator``
(the original: mean) or ``layer_type`` (the original: the standard layer) is an error; the edge variants,
which always use the gated max, require ``sage_aggregator`` = maxpool; the unused "lstm" aggregator is not
provided.

Speed: edges are sorted by destination once per batch. The maxima (:class:`~gnnbench.models.sparse.MaxPlan`)
gather every node's in-neighbour rows into dense blocks, one per class of similar in-degrees, and reduce them with
``max(dim=1)``; the backward scatters each output's gradient to the row that attained it, (N, d) work
instead of (E, d). On the CPU this is faster than ``segment_reduce`` and ``scatter_reduce(amax)``, whose backwards
redo (E, d) comparisons (docs/performance.md). Every message of a max is a ReLU output
(≥ 0), so the zero padding row gives exactly the 0 of nodes without in-edges. Means are one CSR sparse–dense
product; [x_v ‖ c_v] is never concatenated (W is split into its two halves).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.errors import ConfigError
from gnnbench.models.base import Architecture, Representation
from gnnbench.models.blocks import cached_structure, is_edge_index, reset_children, stack_widths
from gnnbench.models.sparse import CSRPattern, InEdges, MaxPlan, SparseAdjacency
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
    gather_rows,
    glorot_,
    propagate,
    row_degrees,
    stacked_linear,
    stacked_parameter,
    with_values,
)

AGGREGATORS = ("maxpool", "mean", "meanpool")
LAYER_TYPES = ("isotropic", "edgefeat", "edgereprfeat")


class _NodeApply(nn.Module):
    """ReLU(normalize(W [x ‖ c] + b)) with W split into its x and c halves (no concatenated copy)."""

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.linear = nn.Linear(2 * in_dim, out_dim)

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        weight, width = self.linear.weight, x.shape[1]
        z = F.linear(x, weight[:, :width], self.linear.bias) + F.linear(c, weight[:, width:])
        return torch.relu(F.normalize(z, p=2.0, dim=1, eps=1e-12))


def _tail(z: torch.Tensor, layer_input: torch.Tensor, bn: nn.BatchNorm1d | None, residual: bool) -> torch.Tensor:
    """GraphSAGE's layer tail after the activation: BN (if created) → residual. No dropout."""
    if bn is not None:
        z = bn(z)
    return layer_input + z if residual else z


def _sorted_edges(layer: nn.Module, edge_index: torch.Tensor, num_nodes: int) -> tuple[InEdges, MaxPlan, torch.Tensor]:
    """The edge variants' structures for plain edge indices, cached on ``layer``: the edges sorted by destination,
    their per-edge max plan, and the inverse permutation (sorted position of every original edge)."""
    def build() -> tuple[InEdges, MaxPlan, torch.Tensor]:
        edges = InEdges.of(edge_index, num_nodes)
        inverse = torch.empty_like(edges.order)
        inverse[edges.order] = torch.arange(edges.order.numel(), device=edges.order.device)
        return edges, edges.max_plan(over_edges=True), inverse
    return cached_structure(layer, edge_index, (num_nodes,), build)


class GraphSageLayer(nn.Module):
    r"""The benchmark's GraphSAGE layer (its own ``GraphSageLayer``, not DGL's ``SAGEConv``). Over the in-edges
    u→v of every node v (0 without in-edges):

        x   = Dropout(h);   x = ReLU(W_pool x + b_pool)   (maxpool, meanpool: replaces the node state)
        c_v = max_{u→v} x_u  (maxpool)   or   mean_{u→v} x_u  (mean, meanpool)
        z_v = W [x_v ‖ c_v] + b
        out = h + BN(ReLU(z / max(‖z‖₂, 1e-12)))     (BN if batch_norm, + h if residual and d_in = d_out)

    All weights keep ``nn.Linear``'s default initialisation; ``batchnorm_h`` exists only with batch_norm.

    Args:
        in_dim: input width d_in.
        out_dim: output width d_out.
        dropout: dropout probability on the layer input.
        aggregator: "maxpool", "mean" or "meanpool".
        batch_norm: create and apply ``batchnorm_h``.
        residual: add the input (when d_in = d_out).

    Shapes:
        - input: node features (N, d_in); edge indices (2, E) (the sorted edges and their max plan or mean
          adjacency are built once and cached for that tensor), or the batch's :meth:`InEdges.max_plan` (maxpool)
          / :meth:`InEdges.mean_adjacency` (otherwise).
        - output: node features (N, d_out).
    """

    def __init__(self, in_dim: int, out_dim: int, dropout: float, aggregator: str, batch_norm: bool,
                 residual: bool) -> None:
        super().__init__()
        if aggregator not in AGGREGATORS:
            raise ValueError(f"sage_aggregator: unknown aggregator {aggregator!r}; choose one of "
                             f"{', '.join(AGGREGATORS)}")
        self.aggregator, self.dropout = aggregator, dropout
        self.pool = nn.Linear(in_dim, in_dim) if aggregator.endswith("pool") else None
        self.nodeapply = _NodeApply(in_dim, out_dim)
        self.batchnorm_h = nn.BatchNorm1d(out_dim) if batch_norm else None
        self.residual = residual and in_dim == out_dim

    def reset_parameters(self) -> None:
        """Reset every Linear and BN to PyTorch's initialisation."""
        reset_children(self)

    def forward(self, h: torch.Tensor, neighbours: MaxPlan | SparseAdjacency | torch.Tensor) -> torch.Tensor:
        """``neighbours``: :meth:`InEdges.max_plan` for maxpool, :meth:`InEdges.mean_adjacency` otherwise, or the
        edge indices (2, E)."""
        if isinstance(neighbours, torch.Tensor):
            edge_index, num_nodes, dtype = neighbours, h.shape[0], h.dtype
            maxpool = self.aggregator == "maxpool"
            neighbours = cached_structure(
                self, edge_index, (num_nodes, dtype),
                lambda: InEdges.of(edge_index, num_nodes).max_plan() if maxpool
                else InEdges.of(edge_index, num_nodes).mean_adjacency(dtype))
        x = F.dropout(h, self.dropout, self.training)
        if self.pool is not None:
            x = torch.relu(self.pool(x))  # the pooled transform is the node state from here on
        c = neighbours.max(x) if self.aggregator == "maxpool" else neighbours.propagate(x)
        return _tail(self.nodeapply(x, c), h, self.batchnorm_h, self.residual)


class GraphSageLayerEdgeFeat(nn.Module):
    r"""``layer_type`` "edgefeat": gated max aggregation, no edge input or output. With A, B, W ``nn.Linear``
    (default initialisation), over the in-edges u→v of every node v (0 without in-edges):

        x    = Dropout(h);   ê_uv = B x_u + B x_v
        c_v  = max_{u→v} ReLU(σ(ê_uv) ⊙ A x_u)
        out  = h + BN_h(ReLU(normalize(W [x_v ‖ c_v] + b)))     (BN if batch_norm, + h if residual)

    Args:
        in_dim: input width d_in.
        out_dim: output width d_out (must equal d_in).
        dropout: dropout probability on the layer input.
        batch_norm: create and apply ``batchnorm_h``.
        residual: add the input.

    Shapes:
        - input: node features (N, d_in); edge indices (2, E) (sorted edges and their per-edge max plan are built
          once and cached for that tensor), or the batch's :class:`InEdges` and ``max_plan(over_edges=True)``.
        - output: node features (N, d_out).
    """

    def __init__(self, in_dim: int, out_dim: int, dropout: float, batch_norm: bool, residual: bool) -> None:
        super().__init__()
        if in_dim != out_dim:
            raise ValueError(f"GraphSage layer_type edgefeat/edgereprfeat concatenates a width-{in_dim} node "
                             f"state with a width-{out_dim} aggregate; set out_dim equal to hidden_dim")
        self.A, self.B = nn.Linear(in_dim, out_dim), nn.Linear(in_dim, out_dim)
        self.nodeapply = _NodeApply(in_dim, out_dim)
        self.batchnorm_h = nn.BatchNorm1d(out_dim) if batch_norm else None
        self.dropout, self.residual = dropout, residual

    def reset_parameters(self) -> None:
        """Reset every Linear and BN to PyTorch's initialisation."""
        reset_children(self)

    def _gate_inputs(self, x: torch.Tensor, edges: InEdges) -> tuple[torch.Tensor, torch.Tensor]:
        """(A x_u per edge, B x_u + B x_v per edge) in sorted edge order, from one matrix product."""
        Ax, Bx = F.linear(x, torch.cat([self.A.weight, self.B.weight]),
                          torch.cat([self.A.bias, self.B.bias])).split(self.A.out_features, dim=1)
        return Ax.index_select(0, edges.src), Bx.index_select(0, edges.src) + Bx.index_select(0, edges.dst)

    def _aggregate(self, x: torch.Tensor, h: torch.Tensor, Ax_src: torch.Tensor, e_hat: torch.Tensor,
                   plan: MaxPlan) -> torch.Tensor:
        c = plan.max(torch.relu(torch.sigmoid(e_hat) * Ax_src))
        return _tail(self.nodeapply(x, c), h, self.batchnorm_h, self.residual)

    def forward(self, h: torch.Tensor, edges: InEdges | torch.Tensor, plan: MaxPlan | None = None) -> torch.Tensor:
        """``plan``: ``edges.max_plan(over_edges=True)``; or ``edges`` = edge indices (2, E) and no plan."""
        if isinstance(edges, torch.Tensor):
            edges, plan, _ = _sorted_edges(self, edges, h.shape[0])
        x = F.dropout(h, self.dropout, self.training)
        Ax_src, e_hat = self._gate_inputs(x, edges)
        return self._aggregate(x, h, Ax_src, e_hat, plan)


class GraphSageLayerEdgeReprFeat(GraphSageLayerEdgeFeat):
    r"""``layer_type`` "edgereprfeat": as :class:`GraphSageLayerEdgeFeat` with C e_uv in the gate and an edge
    stream (e is not dropped out):

        x    = Dropout(h);   ê_uv = C e_uv + B x_u + B x_v
        c_v  = max_{u→v} ReLU(σ(ê_uv) ⊙ A x_u)
        out  = h + BN_h(ReLU(normalize(W [x_v ‖ c_v] + b)));    e' = e + BN_e(ReLU(ê))

    Args:
        in_dim: node and edge input width d_in.
        out_dim: output width d_out (must equal d_in).
        dropout: dropout probability on the node input.
        batch_norm: create and apply ``batchnorm_h`` and ``batchnorm_e``.
        residual: add the inputs.

    Shapes:
        - input: ``(h, e, edges, plan)`` with node features (N, d_in), edge features (E, d_in) in the sorted edge
          order of ``edges`` (or one row broadcast, stride 0), :class:`InEdges` and its per-edge max plan; or plain
          ``(x, edge_index, edge_attr)`` with edge features in the order of ``edge_index`` (the structures are
          built once and cached for that tensor).
        - output: (node features (N, d_out), edge features (E, d_out) in the input's edge order, or None with
          ``edge_output=False``).
    """

    def __init__(self, in_dim: int, out_dim: int, dropout: float, batch_norm: bool, residual: bool) -> None:
        super().__init__(in_dim, out_dim, dropout, batch_norm, residual)
        self.C = nn.Linear(in_dim, out_dim)
        self.batchnorm_e = nn.BatchNorm1d(out_dim) if batch_norm else None

    def forward(self, h: torch.Tensor, e: torch.Tensor, edges: InEdges | torch.Tensor, plan: MaxPlan | None = None,
                edge_output: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``e`` (E, d) in the sorted edge order of ``edges``, or one row broadcast to every edge (stride 0); or
        the plain ``(x, edge_index, edge_attr)``."""
        if is_edge_index(e):
            edge_index, e = e, edges
            edges, plan, inverse = _sorted_edges(self, edge_index, h.shape[0])
            if e.stride(0) != 0:
                e = e.index_select(0, edges.order)
            h_new, e_new = self._forward(h, e, edges, plan, edge_output)
            return h_new, None if e_new is None else e_new.index_select(0, inverse)
        return self._forward(h, e, edges, plan, edge_output)

    def _forward(self, h: torch.Tensor, e: torch.Tensor, edges: InEdges, plan: MaxPlan,
                 edge_output: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        x = F.dropout(h, self.dropout, self.training)
        Ax_src, e_hat = self._gate_inputs(x, edges)
        Ce = self.C(e[:1]) if e.stride(0) == 0 else self.C(e)  # a constant edge input is transformed once
        e_hat = e_hat + Ce
        h_new = self._aggregate(x, h, Ax_src, e_hat, plan)
        e_new = _tail(torch.relu(e_hat), e, self.batchnorm_e, self.residual) if edge_output else None
        return h_new, e_new


class GraphSage(Architecture):
    """L GraphSAGE layers: hidden → hidden (L − 1 times), then hidden → out_dim."""

    required = ("L", "hidden_dim", "out_dim", "residual", "batch_norm", "dropout", "sage_aggregator")

    def __init__(self, hidden_dim: int, out_dim: int, num_layers: int, dropout: float, batch_norm: bool,
                 residual: bool, aggregator: str = "maxpool", layer_type: str = "isotropic") -> None:
        super().__init__()
        if layer_type not in LAYER_TYPES:
            raise ValueError(f"layer_type: unknown GraphSage layer type {layer_type!r}; choose one of "
                             f"{', '.join(LAYER_TYPES)}")
        if layer_type != "isotropic" and aggregator != "maxpool":
            raise ValueError(f"sage_aggregator: layer_type {layer_type} always aggregates by a gated max; "
                             f"set sage_aggregator to maxpool (got {aggregator!r})")
        widths = stack_widths(hidden_dim, out_dim, num_layers)
        if layer_type == "isotropic":
            layers = (GraphSageLayer(a, b, dropout, aggregator, batch_norm, residual) for a, b in widths)
        else:
            cls = GraphSageLayerEdgeFeat if layer_type == "edgefeat" else GraphSageLayerEdgeReprFeat
            layers = (cls(a, b, dropout, batch_norm, residual) for a, b in widths)
        self.layers = nn.ModuleList(layers)
        self.aggregator, self.layer_type = aggregator, layer_type
        self.uses_edges = layer_type == "edgereprfeat"
        self.input_width, self.out_width = hidden_dim, out_dim

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta) -> GraphSage:
        """From ``hidden_dim``, ``out_dim``, ``L``, ``dropout``, ``batch_norm``, ``residual``, ``sage_aggregator`` and
        ``layer_type`` (default "isotropic", the standard layer)."""
        return cls(cfg["hidden_dim"], cfg["out_dim"], cfg["L"], cfg["dropout"], cfg["batch_norm"], cfg["residual"],
                   cfg["sage_aggregator"], cfg.get("layer_type") or "isotropic")

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, batch: GraphBatch) -> Representation:
        """The L layers over the batch's in-edges (sorted once, shared by all layers); node embeddings
        (N, out_dim)."""
        edges = InEdges.of(batch.edge_index, h.shape[0])
        if self.layer_type == "edgereprfeat":
            plan = edges.max_plan(over_edges=True)
            if e.stride(0) != 0:
                e = e.index_select(0, edges.order)  # the edge stream lives in sorted order (no head reads it)
            last = len(self.layers) - 1
            for i, layer in enumerate(self.layers):
                h, e = layer(h, e, edges, plan, edge_output=i < last)  # the last edge update would be discarded
        elif self.layer_type == "edgefeat":
            plan = edges.max_plan(over_edges=True)
            for layer in self.layers:
                h = layer(h, edges, plan)
        else:
            neighbours = edges.max_plan() if self.aggregator == "maxpool" else edges.mean_adjacency(h.dtype)
            for layer in self.layers:
                h = layer(h, neighbours)
        return Representation(h)


# ---------------------------------------------------------------------------------------------------------
# "Pitfalls of GNN Evaluation" (the released code shchur/gnn-benchmark, gnnbench/models/graphsage.py): R
# initialisations at once

STACKED_AGGREGATORS = ("mean", "maxpool", "meanpool")


def padded_max_pattern(pattern: CSRPattern) -> CSRPattern:
    """A + I plus the original's padding: every node whose N⁺(i) is smaller than the largest one also reads node 0.

    The released code gathers max-pool neighbours from a dense N × max_degree index matrix filled row by row with
    the columns of A + I and padded with index 0, so node 0's pooled row enters the maximum of every node i with
    |N⁺(i)| < max_j |N⁺(j)| (docs/protocols/pitfalls.md). An entry (i, 0) is added for exactly those nodes,
    unless 0 ∈ N⁺(i) already (a duplicate changes no maximum)."""
    size = pattern.crow[1:] - pattern.crow[:-1]
    reads_zero = torch.zeros(pattern.num_rows, dtype=torch.bool, device=size.device)
    reads_zero[pattern.row[pattern.col == 0]] = True
    padded = torch.nonzero((size < size.max()) & ~reads_zero).view(-1)
    rows = torch.cat([pattern.row, padded])
    cols = torch.cat([pattern.col, torch.zeros_like(padded)])
    return CSRPattern.from_coo(rows, cols, None, pattern.num_rows, pattern.num_cols)


class StackedGraphSage(StackedModel):
    """The released code's two-layer full-batch GraphSAGE for node classification, R initialisations at once.

    A layer with input H (F → F'), over the neighbourhoods N⁺(i) = N(i) ∪ {i} of A + I (diagonal set to 1):

        H_d   = Dropout(H)                                      (one draw, read by every branch)
        mean:      AGG_i = mean_{j ∈ N⁺(i)} (H_d · W_agg)_j                       W_agg (F, F')
        meanpool:  AGG_i = (mean_{j ∈ N⁺(i)} ReLU(H_d · W_pool)_j) · W_agg         W_pool (F, T), W_agg (T, F')
        maxpool:   AGG_i = (max_{j ∈ N⁺(i)} ReLU(H_d · W_pool)_j) · W_agg          (element-wise max)
        O_i   = AGG_i + (H_d · W_self)_i + b;   O_i ← O_i / max(‖O_i‖₂, 1)        (both layers, logits too)

    ReLU after layer 1 only; widths F → ``hidden_size`` → C, T = ``agg_transform_size``. L2 on layer 1's W_agg and
    W_self (not W_pool, not layer 2). Glorot weights (created pool, agg, self per layer, as the original), zero b.
    ``maxpool_pads_with_node0`` (default true) reproduces the released code's padding bug: node 0's pooled row also
    enters the maximum of every node whose N⁺(i) is smaller than the largest (:func:`padded_max_pattern`); false
    gives the correct max over N⁺(i).

    Differs from :class:`GraphSageLayer` above (the benchmarking-gnns layer): neighbourhoods include the node
    itself, self and neighbour terms are *summed* (separate W_self, not a split [x ‖ c] weight), the mean
    aggregator transforms before averaging, the pool transform has no bias, rows are scaled to norm ≤ 1 (not to 1),
    ReLU follows the normalisation, and there is no batch norm or residual.
    """

    l2_parameters = ("agg_weight1", "self_weight1")
    member_keys = ("weight_decay", "dropout_prob")

    def __init__(self, graph: NodeGraph, seeds: list[int], aggregator: str, hidden: int, transform: int | None,
                 dropout_prob: float, weight_decay: float, pads_with_node0: bool = True) -> None:
        super().__init__(graph, weight_decay)
        if aggregator not in STACKED_AGGREGATORS:
            raise ConfigError(f"model GraphSage: unknown aggregator {aggregator!r}; choose one of "
                              f"{', '.join(STACKED_AGGREGATORS)}")
        inits, pooled = len(seeds), aggregator != "mean"
        for layer, (width_in, width_out) in enumerate([(graph.num_features, hidden), (hidden, graph.num_classes)], 1):
            if pooled:
                setattr(self, f"pool_weight{layer}", stacked_parameter(inits, width_in, transform))
            setattr(self, f"agg_weight{layer}", stacked_parameter(inits, transform if pooled else width_in,
                                                                  width_out))
            setattr(self, f"self_weight{layer}", stacked_parameter(inits, width_in, width_out))
            setattr(self, f"bias{layer}", stacked_parameter(inits, width_out))
        self.aggregator, self.dropout_prob = aggregator, dropout_prob
        self.pads_with_node0 = pads_with_node0 and aggregator == "maxpool"
        pattern = adjacency_pattern(graph, self_loops=True)
        if aggregator == "maxpool":
            pattern = padded_max_pattern(pattern) if self.pads_with_node0 else pattern
        else:
            pattern = with_values(pattern, row_degrees(pattern).reciprocal()[pattern.row])  # the mean over N⁺(i)
        self.hops = HopsCache(pattern, depth=2)
        self.features = InputFeatures(graph.features)
        self.reset_parameters(seeds)

    @classmethod
    def from_config(cls, config: ModelConfig, graph: NodeGraph, seeds: list[int]) -> StackedGraphSage:
        """From ``aggregator``, ``agg_transform_size`` (pooling aggregators), ``hidden_size``, ``dropout_prob``,
        ``weight_decay`` and ``maxpool_pads_with_node0`` of a pitfalls model config."""
        aggregator = config.choice("aggregator", STACKED_AGGREGATORS)
        transform = config.positive_int("agg_transform_size") if aggregator != "mean" else None
        return cls(graph, seeds, aggregator, config.positive_int("hidden_size"), transform,
                   config.probability("dropout_prob"), config.nonnegative("weight_decay"),
                   config.flag("maxpool_pads_with_node0", True))

    def init_weights(self, r: int, generator: torch.Generator) -> None:
        """Glorot-uniform pool, agg and self weights of initialisation ``r`` from ``generator``, layer by layer, in
        the original's order (biases stay 0)."""
        for layer in (1, 2):
            for name in ("pool_weight", "agg_weight", "self_weight"):
                if hasattr(self, f"{name}{layer}"):
                    glorot_(getattr(self, f"{name}{layer}")[r], generator)

    def _aggregate(self, x: torch.Tensor, hops: Hops, level: int) -> torch.Tensor:
        """Mean or max of x (R, |sources|, D) over the neighbourhood of every target of block ``level``."""
        if self.aggregator != "maxpool":
            return propagate(hops.blocks[level], x)
        key = ("max", level)
        if key not in hops.extras:
            block = hops.blocks[level]
            hops.extras[key] = MaxPlan(block.col, block.num_cols, block.crow, block.crow[1:] - block.crow[:-1])
        blocks, rows, width = x.shape  # node-major (rows, R·D): every gathered row is one contiguous R·D run
        wide = hops.extras[key].max(x.transpose(0, 1).reshape(rows, blocks * width))  # ReLU outputs ≥ 0 (see MaxPlan)
        return wide.view(-1, blocks, width).transpose(0, 1)

    def _output(self, agg: torch.Tensor, own: torch.Tensor, layer: int) -> torch.Tensor:
        out = agg + own + getattr(self, f"bias{layer}").unsqueeze(1)
        return out / torch.linalg.vector_norm(out, dim=2, keepdim=True).clamp(min=1.0)

    def forward(self, nodes: torch.Tensor | None, training: bool) -> torch.Tensor:
        """Logits (R, M, C) at ``nodes`` (None: all), from the two layers of the class docstring."""
        hops = self.hops.get(nodes)
        inits, p = self.inits, self.dropout_prob if training else 0.0
        x = DroppedInput(self.features.rows(hops, 2), inits, p)  # layer 1: input at S2, output at S1
        if self.aggregator == "mean":
            agg = self._aggregate(x.matmul(self.agg_weight1), hops, 1)
        else:
            pooled = torch.relu(x.matmul(self.pool_weight1))
            agg = stacked_linear(self._aggregate(pooled, hops, 1), self.agg_weight1)
        own = x.matmul(self.self_weight1, self.features.subset(hops, 1))  # the self term at S1 only
        h = torch.relu(self._output(agg, own, 1))  # (R, |S1|, hidden)
        h = dropout(h, p, training)  # layer 2: input at S1, output at T
        if self.aggregator == "mean":  # mean first, then W_agg: the same numbers at |T| rows
            agg = stacked_linear(self._aggregate(h, hops, 0), self.agg_weight2)
        else:
            pooled = torch.relu(stacked_linear(h, self.pool_weight2))
            agg = stacked_linear(self._aggregate(pooled, hops, 0), self.agg_weight2)
        own = stacked_linear(gather_rows(h, hops.positions(0)), self.self_weight2)
        return self._output(agg, own, 2)


__all__ = ["GraphSage", "GraphSageLayer", "GraphSageLayerEdgeFeat", "GraphSageLayerEdgeReprFeat", "StackedGraphSage",
           "padded_max_pattern"]
