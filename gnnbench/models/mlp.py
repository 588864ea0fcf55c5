"""MLP baseline: ignores the graph structure (spec benchmarking-gnns.md §2.4).

    h ← Dropout(ReLU(W_ℓ h + b_ℓ))            for ℓ = 1..L
    h ← σ(W_g h + b_g) ⊙ h                     if gated
The graph readout is fixed by the architecture, not the config: mean pooling, or sum when gated (the
benchmark ignores the config's ``readout`` for MLPs). With categorical inputs (or PE replacing them) an
embedding of width ``hidden_dim`` precedes the L layers; raw continuous features feed the first layer
directly (no embedding), as in the benchmark's superpixel/TSP/TU/COLLAB MLPs — except WikiCS, whose MLP net
embeds its 300 continuous features with ``Linear(300, hidden)`` before the L layers (spec §2.4; the published
count 110,710 needs that extra layer).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.models.base import Architecture, Representation


class MLP(Architecture):
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

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta) -> MLP:
        feature = meta.node_features
        raw_input = (not cfg.get("pos_enc") or meta.pe_usage == "add") and feature is not None \
            and feature.kind == "continuous" and meta.name != "WikiCS"
        in_dim = feature.size if raw_input else cfg["hidden_dim"]
        model = cls(in_dim, cfg["hidden_dim"], cfg["L"], cfg["dropout"], cfg["gated"])
        model.project_continuous = not raw_input
        return model

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, batch: GraphBatch) -> Representation:
        for layer in self.layers:
            h = torch.relu_(layer(h))
            if self.dropout > 0:
                h = F.dropout(h, self.dropout, self.training)
        if self.gate is not None:
            h = torch.sigmoid(self.gate(h)) * h
        return Representation(h)
