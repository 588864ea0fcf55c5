"""GraphSAGE (Hamilton et al., NeurIPS 2017) as Errica et al. ran it (Errica et al. §5: global max pooling, no
neighbour sampling; released code: ``models/graph_classifiers/GraphSAGE.py`` of diningphil/gnn-comparison at HEAD
c524e97, run under PyG 1.4.2).

``num_layers`` = L convolutions of width d = ``dim_embedding`` with the PyG-1.4 ``SAGEConv`` (``normalize=False``,
``concat=False``) and neighbourhood aggregation AGG = ``aggregation`` ∈ {add, mean, max}:

    x'_i = W · AGG_{j ∈ N(i) ∪ {i}} x_j + b        (one weight matrix: self loop inside the aggregation)
    max only:  x ← ReLU(fc_max(x')) after every conv, ONE Linear(d→d) shared by all layers
    logits = fc2(ReLU(fc1(maxpool_graph([x⁽¹⁾ ‖ … ‖ x⁽ᴸ⁾]))))     fc1: L·d → d, fc2: d → #classes

For add/mean there is no non-linearity between the convs (as the code). Full neighbourhoods, no sampling.

Decisions (docs/protocols/fair-comparison.md#networks):

* PyG-1.4 semantics, not PyG ≥ 1.5's W₁x_i + W₂·AGG_{N(i)} x_j (root weight) — which is also why the
  ``aggregation`` grid key matters: the original assigned ``conv.aggr`` after construction, honoured by PyG 1.4 and
  silently ignored by 2.x (fixed upstream in c524e97). Here the aggregation is applied as configured.
* Self loops as PyG-1.4's ``add_remaining_self_loops``: existing loops are dropped and exactly one per node is added
  (a graph with explicit self loops gives the same result as without them). The aggregation runs in input space
  before the linear map, literally (mean = Σ / (|N(i)| + 1); max = elementwise maximum, exact for negative values:
  a scatter maximum when the input has negative entries, else — every layer after the first, whose input is a
  ReLU output — the zoo's faster :class:`~gnnbench.models.sparse.MaxPlan`).
* Initialisation: nn.Linear defaults — the same U(±1/√fan_in) law PyG 1.4's ``SAGEConv.reset_parameters`` draws its
  weight and bias from.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.models.blocks import cached_structure
from gnnbench.models.graph_classifiers.base import GraphClassifier
from gnnbench.models.sparse import InEdges, MaxPlan, SparseAdjacency, degree, scatter_max, unit_adjacency

AGGREGATIONS = ("add", "mean", "max")


class _ClosedNeighbourhood:
    """AGG over N(i) ∪ {i} (one self loop per node, existing loops dropped), built once per batch."""

    def __init__(self, edge_index: torch.Tensor, num_nodes: int, aggregation: str, dtype: torch.dtype) -> None:
        src, dst = edge_index
        keep = src != dst
        loops = torch.arange(num_nodes, device=edge_index.device)
        self.src = torch.cat([src[keep], loops])
        self.dst = torch.cat([dst[keep], loops])
        self.aggregation, self.num_nodes = aggregation, num_nodes
        self.plan: MaxPlan | None = None
        edges = torch.stack([self.src, self.dst])
        if aggregation == "add":
            self.adjacency = unit_adjacency(edges, num_nodes, dtype)
        elif aggregation == "mean":
            weights = degree(self.dst, num_nodes, dtype).reciprocal_().index_select(0, self.dst)
            self.adjacency = SparseAdjacency(edges, weights, num_nodes)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.aggregation != "max":
            return self.adjacency.propagate(x)
        if bool((x.detach() < 0).any()):  # raw input features: a gathered scatter maximum, exact for any sign
            return scatter_max(x.index_select(0, self.src), self.dst, self.num_nodes)
        if self.plan is None:  # ReLU outputs (every layer after the first): the faster MaxPlan, exact for x ≥ 0
            self.plan = InEdges.of(torch.stack([self.src, self.dst]), self.num_nodes).max_plan()
        return self.plan.max(x)


class ClosedSAGEConv(nn.Linear):
    r"""PyG-1.4 ``SAGEConv(normalize=False, concat=False)``: one weight matrix applied after aggregating over the
    closed neighbourhood (existing self loops dropped, exactly one added per node):

        x'_i = W · AGG_{j ∈ N(i) ∪ {i}} x_j + b          AGG = add, mean or max (over in-edges j→i)

    An ``nn.Linear`` (``weight``, ``bias``; PyTorch's default U(±1/√F) initialisation, PyG 1.4's law).

    Args:
        in_features: input width F.
        out_features: output width F'.
        aggregation: AGG of a plain ``(x, edge_index)`` call ("add", "mean" or "max"; a batch's neighbourhood
            brings its own).

    Shapes:
        - input: node features (N, F); edge indices (2, E) (the closed neighbourhood is built once and cached for
          that tensor), or the batch's ``_ClosedNeighbourhood`` (shared by all layers).
        - output: node features (N, F').
    """

    def __init__(self, in_features: int, out_features: int, aggregation: str = "add") -> None:
        super().__init__(in_features, out_features)
        if aggregation not in AGGREGATIONS:
            raise ValueError(f"GraphSAGE aggregation must be one of {', '.join(AGGREGATIONS)}, got {aggregation!r}")
        self.aggregation = aggregation

    def forward(self, x: torch.Tensor, aggregate: _ClosedNeighbourhood | torch.Tensor) -> torch.Tensor:
        """x'_i = W · AGG_{j ∈ N(i) ∪ {i}} x_j + b; ``aggregate`` is an edge index or the batch's neighbourhood."""
        if isinstance(aggregate, torch.Tensor):
            edge_index, num_nodes, dtype = aggregate, x.shape[0], x.dtype
            aggregate = cached_structure(self, edge_index, (num_nodes, dtype),
                                         lambda: _ClosedNeighbourhood(edge_index, num_nodes, self.aggregation, dtype))
        return F.linear(aggregate(x), self.weight, self.bias)


class GraphSAGE(GraphClassifier):
    """GraphSAGE of the fair comparison (module docstring: convolutions, readout, decisions)."""

    required = ("num_layers", "dim_embedding", "aggregation")

    def __init__(self, in_dim: int, num_classes: int, num_layers: int, dim_embedding: int, aggregation: str) -> None:
        super().__init__()
        if aggregation not in AGGREGATIONS:
            raise ValueError(f"GraphSAGE aggregation must be one of {', '.join(AGGREGATIONS)}, got {aggregation!r}")
        if num_layers < 1 or dim_embedding < 1:
            raise ValueError(f"GraphSAGE needs num_layers ≥ 1 and dim_embedding ≥ 1, got {num_layers}, "
                             f"{dim_embedding}")
        self.aggregation = aggregation
        self.fc_max = nn.Linear(dim_embedding, dim_embedding) if aggregation == "max" else None
        self.layers = nn.ModuleList(ClosedSAGEConv(in_dim if i == 0 else dim_embedding, dim_embedding, aggregation)
                                    for i in range(num_layers))
        self.fc1 = nn.Linear(num_layers * dim_embedding, dim_embedding)
        self.fc2 = nn.Linear(dim_embedding, num_classes)

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta, sizes: np.ndarray) -> GraphSAGE:
        """GraphSAGE from ``num_layers``, ``dim_embedding`` and ``aggregation``; ``sizes`` is not used."""
        return cls(meta.node_features.size, meta.num_outputs, int(cfg["num_layers"]), int(cfg["dim_embedding"]),
                   cfg["aggregation"])

    def forward(self, batch: GraphBatch) -> torch.Tensor:
        """Logits (B, C): the convolutions' outputs concatenated, max-pooled per graph, then the two-layer MLP."""
        x = batch.x
        aggregate = _ClosedNeighbourhood(batch.edge_index, batch.num_nodes, self.aggregation, x.dtype)
        x_all = []
        for conv in self.layers:
            x = conv(x, aggregate)
            if self.fc_max is not None:
                x = torch.relu(self.fc_max(x))
            x_all.append(x)
        pooled = scatter_max(torch.cat(x_all, dim=1), batch.batch, batch.num_graphs)
        return self.fc2(torch.relu(self.fc1(pooled)))
