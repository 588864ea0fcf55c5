"""MLP baseline: ignores the graph structure (Dwivedi et al., Appendix D, "Graph-agnostic NNs"; the released code's
``nets/*/mlp_net.py``). At the end: the "Pitfalls of GNN Evaluation" baselines :class:`StackedMLP` and
:class:`StackedLogReg` (Shchur et al.; the released code shchur/gnn-benchmark, ``gnnbench/models/mlp.py`` and
``logregr.py``; docs/protocols/pitfalls.md), trained as R initialisations at once (:mod:`gnnbench.models.stacked`).

    h ← Dropout(ReLU(W_ℓ h + b_ℓ))            for ℓ = 1..L
    h ← σ(W_g h + b_g) ⊙ h                     if gated
The graph readout is fixed by the architecture, not the config: mean pooling, or sum when gated (the
benchmark ignores the config's ``readout`` for MLPs). With categorical inputs (or PE replacing them) an
embedding of width ``hidden_dim`` precedes the L layers; raw continuous features feed the first layer
directly (no embedding), as in the benchmark's superpixel/TSP/TU/COLLAB MLPs — except on datasets whose description
says the benchmark's nets embed them (``meta.net_conventions`` "embed_continuous_input": WikiCS, whose MLP net embeds
its 300 features with ``Linear(300, hidden)`` before the L layers, ``nets/WikiCS_node_classification/mlp_net.py``;
the published count 110,710 needs that extra layer: docs/protocols/benchmarking-gnns.md#wikics-nets).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.models.base import Architecture, Representation
from gnnbench.models.blocks import reset_children
from gnnbench.models.stacked import (
    DroppedInput,
    InputFeatures,
    ModelConfig,
    NodeGraph,
    NodeRows,
    StackedModel,
    dropout,
    glorot_,
    stacked_linear,
    stacked_parameter,
)


class MLP(Architecture):
    r"""The benchmark's MLP baseline: L node-wise layers, the graph is not read:

        h ← Dropout(ReLU(W_ℓ h + b_ℓ))            ℓ = 1..L
        h ← σ(W_g h + b_g) ⊙ h                     if gated

    Args:
        in_dim: input width.
        hidden_dim: width of every layer.
        num_layers: L.
        dropout: dropout probability after every layer.
        gated: end with the gate.

    Shapes:
        - input: node features (N, in_dim); edge input and batch optional (never read), so ``mlp(x)`` and
          ``mlp(x, edge_index)`` work like a message-passing layer's plain call.
        - output: :class:`Representation` with nodes (N, hidden_dim).
    """

    project_continuous = False  # raw continuous features feed the first layer (see from_config)
    required = ("L", "hidden_dim", "dropout", "gated")

    def __init__(self, in_dim: int, hidden_dim: int, num_layers: int, dropout: float, gated: bool) -> None:
        super().__init__()
        widths = [in_dim] + [hidden_dim] * num_layers
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:], strict=True))
        self.gate = nn.Linear(hidden_dim, hidden_dim) if gated else None
        self.dropout = dropout
        self.input_width, self.out_width = in_dim, hidden_dim
        self.readout = "sum" if gated else "mean"

    def reset_parameters(self) -> None:
        """Reset every Linear to PyTorch's initialisation."""
        reset_children(self)

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta) -> MLP:
        """From ``hidden_dim``, ``L``, ``dropout`` and ``gated``; the input width is the raw continuous features' or,
        after an embedding, ``hidden_dim`` (module docstring)."""
        feature = meta.node_features
        raw_input = (not cfg.get("pos_enc") or meta.pe_usage == "add") and feature is not None \
            and feature.kind == "continuous" and "embed_continuous_input" not in meta.net_conventions
        in_dim = feature.size if raw_input else cfg["hidden_dim"]
        model = cls(in_dim, cfg["hidden_dim"], cfg["L"], cfg["dropout"], cfg["gated"])
        model.project_continuous = not raw_input
        return model

    def forward(self, h: torch.Tensor, e: torch.Tensor | None = None, batch: GraphBatch | None = None
                ) -> Representation:
        """The L node-wise layers (and the gate); node embeddings (N, hidden_dim)."""
        for layer in self.layers:
            h = torch.relu_(layer(h))
            if self.dropout > 0:
                h = F.dropout(h, self.dropout, self.training)
        if self.gate is not None:
            h = torch.sigmoid(self.gate(h)) * h
        return Representation(h)


# ---------------------------------------------------------------------------------------------------------
# "Pitfalls of GNN Evaluation" baselines (the released code shchur/gnn-benchmark, gnnbench/models/mlp.py and
# logregr.py): R initialisations at once


class StackedMLP(StackedModel):
    """The released code's two-layer MLP baseline on node features (no graph), R initialisations at once:

        H = ReLU(Dropout(X) · W₁ + b₁);   Z = Dropout(H) · W₂ + b₂          W₁ (F, hidden), W₂ (hidden, C)

    Dropout p = ``dropout_prob`` on both layers' inputs (on the stored entries of sparse features); L2 on W₁ and
    W₂; Glorot W, zero b. Only the rows asked for are computed.

    Differs from :class:`MLP` above (the benchmarking-gnns network): two layers with the class logits as the
    second layer's output, dropout before each product (not after the activation), no gating or readout.
    """

    l2_parameters = ("weight1", "weight2")
    member_keys = ("weight_decay", "dropout_prob")

    def __init__(self, graph: NodeGraph, seeds: list[int], hidden: int, dropout_prob: float,
                 weight_decay: float) -> None:
        super().__init__(graph, weight_decay)
        inits = len(seeds)
        self.weight1 = stacked_parameter(inits, graph.num_features, hidden)
        self.bias1 = stacked_parameter(inits, hidden)
        self.weight2 = stacked_parameter(inits, hidden, graph.num_classes)
        self.bias2 = stacked_parameter(inits, graph.num_classes)
        self.dropout_prob = dropout_prob
        self.features = InputFeatures(graph.features)
        self.rows = NodeRows(graph.num_nodes, graph.edge_index.device)
        self.reset_parameters(seeds)

    @classmethod
    def from_config(cls, config: ModelConfig, graph: NodeGraph, seeds: list[int]) -> StackedMLP:
        """From ``hidden_size``, ``dropout_prob`` and ``weight_decay`` of a pitfalls model config."""
        return cls(graph, seeds, config.positive_int("hidden_size"), config.probability("dropout_prob"),
                   config.nonnegative("weight_decay"))

    def init_weights(self, r: int, generator: torch.Generator) -> None:
        """Glorot-uniform W₁, W₂ of initialisation ``r`` from ``generator`` (biases stay 0)."""
        glorot_(self.weight1[r], generator)
        glorot_(self.weight2[r], generator)

    def forward(self, nodes: torch.Tensor | None, training: bool) -> torch.Tensor:
        """Logits Z (R, M, C) at ``nodes`` (None: all)."""
        rows = self.rows.get(nodes)
        p = self.dropout_prob if training else 0.0
        h = DroppedInput(self.features.rows(rows, 0), self.inits, p).matmul(self.weight1)
        h = dropout(torch.relu(h + self.bias1.unsqueeze(1)), p, training)
        return stacked_linear(h, self.weight2) + self.bias2.unsqueeze(1)


class StackedLogReg(StackedModel):
    """The released code's logistic regression (softmax regression) on node features, R initialisations at once:

        Z = X · W + b           W (F, C); no dropout; L2 on W; Glorot W, zero b

    Only the rows asked for are computed, with one sparse product for all initialisations."""

    l2_parameters = ("weight",)

    def __init__(self, graph: NodeGraph, seeds: list[int], weight_decay: float) -> None:
        super().__init__(graph, weight_decay)
        inits = len(seeds)
        self.weight = stacked_parameter(inits, graph.num_features, graph.num_classes)
        self.bias = stacked_parameter(inits, graph.num_classes)
        self.features = InputFeatures(graph.features)
        self.rows = NodeRows(graph.num_nodes, graph.edge_index.device)
        self.reset_parameters(seeds)

    @classmethod
    def from_config(cls, config: ModelConfig, graph: NodeGraph, seeds: list[int]) -> StackedLogReg:
        """From ``weight_decay`` of a pitfalls model config."""
        return cls(graph, seeds, config.nonnegative("weight_decay"))

    def init_weights(self, r: int, generator: torch.Generator) -> None:
        """Glorot-uniform W of initialisation ``r`` from ``generator`` (b stays 0)."""
        glorot_(self.weight[r], generator)

    def forward(self, nodes: torch.Tensor | None, training: bool) -> torch.Tensor:
        """Logits Z = X W + b (R, M, C) at ``nodes`` (None: all)."""
        rows = self.rows.get(nodes)
        return DroppedInput(self.features.rows(rows, 0), self.inits, 0.0).matmul(self.weight) + self.bias.unsqueeze(1)
