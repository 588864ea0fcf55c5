"""GIN (Xu et al.) as the benchmark's ``GINLayer`` inside its per-layer readout (Dwivedi et al., Appendix B.1.2,
Eqs. 19–20, and B.1.3; the released code's ``layers/gin_layer.py`` and ``nets/*/gin_net.py``).

For every node v (sums over the in-edges u→v):

    h'_v = MLP((1 + ε) h_v + AGG_{u→v} h_u)          AGG = sum (all configs), mean or max
    h    ← Dropout(h + ReLU(BN_h(h')))                 (BN only with batch_norm; residual only with residual)

``MLP`` has ``n_mlp_GIN`` linear layers, hidden → hidden: Linear → BN → ReLU → … → Linear (linear output; the
inner BNs are used whatever ``batch_norm`` says; one layer = a single Linear). ε starts at 0 and is a
learnable scalar with ``learn_eps_GIN`` (all configs), else a buffer (not counted). ``bn_node_h`` is always
created. Mean and max give 0 to nodes without in-edges, like DGL's builtin reducers. Every layer is
hidden → hidden; ``out_dim`` is ignored, as in the original.

Readout (the heads' ``per_layer`` style): the representation is [h^0 (the input embedding), h^1, …, h^L]
and every task head sums one score per layer — Linear(h^ℓ) per node, Linear(pool(h^ℓ)) per graph with the
config's ``readout`` (sum, mean or max; anything else is refused, as the original raises), the TSP edge MLP on
[h^ℓ_u ‖ h^ℓ_v], and for GraphTheoryProp Linear(h^ℓ) per node plus Linear(Set2Set(h^ℓ)) per graph. Link
prediction (COLLAB) is the exception: the original scores pairs from the last layer only with the MLP head.

``use_gru`` (GraphTheoryProp): after every layer h ← GRU(input = h_prev, h0 = h_layer) — the *previous*
state is the GRU input and the layer output its initial hidden state (the original's argument order); the
GRU's final hidden state is the new h, and that is what the readout sees. One ``nn.GRU(hidden, hidden)`` is
shared by all layers.

Speed: the neighbour sum (and mean) is one sparse–dense product with the batch's adjacency, built once per
forward pass and shared by all layers (much faster on CPU than gathering a message per edge and scattering
it back); max gathers the source rows and reduces them with ``scatter_reduce``.
"""

from __future__ import annotations

import torch
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.models.base import Architecture, Representation
from gnnbench.models.blocks import cached_structure, gru_update, post_aggregation, reset_children
from gnnbench.models.sparse import SparseAdjacency, degree, scatter_max, unit_adjacency

AGGREGATORS = ("sum", "mean", "max")
GRAPH_READOUTS = ("sum", "mean", "max")


class GINMLP(nn.Module):
    """The original ``MLP(num_layers, d, d, d)``: (Linear → BN → ReLU) × (num_layers − 1) → Linear."""

    def __init__(self, num_layers: int, dim: int) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"n_mlp_GIN must be at least 1, got {num_layers}")
        self.linears = nn.ModuleList(nn.Linear(dim, dim) for _ in range(num_layers))
        self.batch_norms = nn.ModuleList(nn.BatchNorm1d(dim) for _ in range(num_layers - 1))

    def reset_parameters(self) -> None:
        """Reset every Linear and BN to PyTorch's initialisation."""
        reset_children(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(Linear → BN → ReLU) × (num_layers − 1) → Linear on (N, d)."""
        for linear, bn in zip(self.linears, self.batch_norms, strict=False):
            x = torch.relu_(bn(linear(x)))  # in place on BN's own output: autograd does not need it
        return self.linears[-1](x)


class NeighbourAggregation:
    """Σ, mean or max of the in-neighbours' rows for every node of a batch (0 for nodes without in-edges).

    Built once per batch and shared by the layers: sum and mean are one CSR product with unit (sum) or
    1/in-degree (mean) weights; parallel edges count once per edge, as in DGL."""

    def __init__(self, edge_index: torch.Tensor, num_nodes: int, aggregator: str,
                 dtype: torch.dtype = torch.float32) -> None:
        if aggregator not in AGGREGATORS:
            raise ValueError(f"neighbor_aggr_GIN must be one of {', '.join(AGGREGATORS)}, got {aggregator!r}")
        self.aggregator, self.num_nodes = aggregator, num_nodes
        self.src, self.dst = edge_index
        if aggregator == "max":
            return
        if aggregator == "sum":
            self.adjacency = unit_adjacency(edge_index, num_nodes, dtype)
        else:  # mean: weight 1 / in-degree(v) on every edge u→v
            weights = degree(self.dst, num_nodes, dtype).clamp_(min=1).reciprocal_().index_select(0, self.dst)
            self.adjacency = SparseAdjacency(edge_index, weights, num_nodes)

    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        if self.aggregator == "max":
            return scatter_max(h.index_select(0, self.src), self.dst, self.num_nodes)
        return self.adjacency.propagate(h)


class GINLayer(nn.Module):
    r"""The benchmark's ``GINLayer``. For every node v, over its in-edges u→v (parallel edges count once per edge):

        h'_v = MLP((1 + ε) h_v + AGG_{u→v} h_u)        AGG = sum, mean or max (0 without in-edges)
        out  = Dropout(h + ReLU(BN_h(h')))              (BN if batch_norm, + h if residual)

    MLP = (Linear → BN → ReLU) × (n_mlp − 1) → Linear, hidden → hidden (its BNs always apply); ε starts at
    ``init_eps``, learnable with learn_eps, else a buffer; ``bn_node_h`` always exists.

    Args:
        dim: input and output width d.
        n_mlp: number of linear layers of the MLP.
        dropout: dropout probability on the output.
        batch_norm: apply ``bn_node_h``.
        residual: add the input.
        learn_eps: ε is a parameter (else a buffer).
        init_eps: the initial ε.
        aggregator: AGG of a plain ``(x, edge_index)`` call ("sum", "mean" or "max"; a batch's
            :class:`NeighbourAggregation` brings its own).

    Shapes:
        - input: node features (N, d); edge indices (2, E) (the aggregation's adjacency is built once and cached
          for that tensor), or a :class:`NeighbourAggregation` (a batch's, shared by all layers).
        - output: node features (N, d).
    """

    def __init__(self, dim: int, n_mlp: int, dropout: float, batch_norm: bool, residual: bool,
                 learn_eps: bool, init_eps: float = 0.0, aggregator: str = "sum") -> None:
        super().__init__()
        if aggregator not in AGGREGATORS:
            raise ValueError(f"neighbor_aggr_GIN must be one of {', '.join(AGGREGATORS)}, got {aggregator!r}")
        self.aggregator, self.init_eps = aggregator, float(init_eps)
        self.mlp = GINMLP(n_mlp, dim)
        eps = torch.tensor([float(init_eps)])
        if learn_eps:
            self.eps = nn.Parameter(eps)
        else:
            self.register_buffer("eps", eps)
        self.bn_node_h = nn.BatchNorm1d(dim)
        self.dropout, self.batch_norm, self.residual = dropout, batch_norm, residual

    def reset_parameters(self) -> None:
        """Reset the MLP and BN; ε back to its initial value."""
        self.mlp.reset_parameters()
        with torch.no_grad():
            self.eps.fill_(self.init_eps)
        self.bn_node_h.reset_parameters()

    def forward(self, h: torch.Tensor, aggregate: NeighbourAggregation | torch.Tensor) -> torch.Tensor:
        """h'_v = MLP((1 + ε) h_v + AGG_{u→v} h_u), then BN → ReLU → residual → dropout: (N, d) → (N, d)."""
        if isinstance(aggregate, torch.Tensor):
            edge_index, num_nodes, dtype = aggregate, h.shape[0], h.dtype
            aggregate = cached_structure(self, edge_index, (num_nodes, dtype),
                                         lambda: NeighbourAggregation(edge_index, num_nodes, self.aggregator, dtype))
        x = torch.addcmul(aggregate(h), h, 1 + self.eps)  # (1 + ε) h_v + AGG_u h_u
        return post_aggregation(self.mlp(x), h, self.bn_node_h, batch_norm=self.batch_norm,
                                residual=self.residual, dropout=self.dropout, training=self.training)


class GIN(Architecture):
    """L GIN layers, hidden → hidden; per-layer readout over [h^0, …, h^L] (last layer only for links)."""

    required = ("L", "hidden_dim", "residual", "batch_norm", "dropout", "n_mlp_GIN", "learn_eps_GIN",
                "neighbor_aggr_GIN")

    def __init__(self, hidden_dim: int, num_layers: int, dropout: float, batch_norm: bool, residual: bool,
                 n_mlp: int = 2, learn_eps: bool = True, aggregator: str = "sum", use_gru: bool = False) -> None:
        super().__init__()
        if aggregator not in AGGREGATORS:
            raise ValueError(f"neighbor_aggr_GIN must be one of {', '.join(AGGREGATORS)}, got {aggregator!r}")
        self.layers = nn.ModuleList(GINLayer(hidden_dim, n_mlp, dropout, batch_norm, residual, learn_eps,
                                             aggregator=aggregator) for _ in range(num_layers))
        self.gru = nn.GRU(hidden_dim, hidden_dim) if use_gru else None
        self.aggregator = aggregator
        self.input_width = self.out_width = hidden_dim
        self.layer_widths = [hidden_dim] * (num_layers + 1)

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta) -> GIN:
        """From ``hidden_dim``, ``L``, ``dropout``, ``batch_norm``, ``residual``, ``n_mlp_GIN``, ``learn_eps_GIN``,
        ``neighbor_aggr_GIN`` and ``use_gru``; a graph task's ``readout`` must be sum, mean or max."""
        if meta.task in ("graph_classification", "graph_regression"):
            readout = cfg.get("readout", "mean")
            if readout not in GRAPH_READOUTS:  # the original raises NotImplementedError
                raise ValueError(f"GIN pools graphs with readout sum, mean or max, not {readout!r}")
        return cls(cfg["hidden_dim"], cfg["L"], cfg["dropout"], cfg["batch_norm"], cfg["residual"],
                   cfg["n_mlp_GIN"], cfg["learn_eps_GIN"], cfg["neighbor_aggr_GIN"], cfg.get("use_gru", False))

    def head_style(self, task: str) -> str:
        """``per_layer`` (one score per layer, summed), except ``mlp`` on the last layer for link prediction."""
        return "mlp" if task == "link_prediction" else "per_layer"

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, batch: GraphBatch) -> Representation:
        """The L layers; the representation holds the last layer's nodes and [h^0, …, h^L] for the readout."""
        aggregate = NeighbourAggregation(batch.edge_index, h.shape[0], self.aggregator, h.dtype)
        hidden = [h]
        for layer in self.layers:
            h_layer = layer(h, aggregate)
            h = gru_update(self.gru, h, h_layer) if self.gru is not None else h_layer
            hidden.append(h)
        return Representation(h, layers=hidden)
