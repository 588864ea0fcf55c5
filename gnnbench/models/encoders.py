"""Input encoders: node features and positional encodings → node embeddings; edge features → edge
embeddings (Dwivedi et al., Appendix B.1.1, Eq. 1, and §3 for the positional encodings; the embedding layers of the
released code's nets, ``nets/<task>/*_net.py``).

Node input
    categorical ids → ``Embedding(vocab, width)``; continuous features → ``Linear(d, width)``, or, for
    architectures that consume raw features themselves (MLP), passed through unchanged.
Positional encodings (k dims)
    ``Linear(k, width)(pe)`` is *added* to the node embedding (SBM, molecules, ...) or *replaces* the node
    input entirely (CSL, CYCLES) — a property of the dataset (``meta.pe_usage``).
Edge input (models that use edges)
    with ``edge_feat`` and edge features: categorical → ``Embedding``, continuous → ``Linear``;
    otherwise the benchmark's constant input ``ones(E, d)`` → ``Linear(d, width)`` (d = 1, or the width
    of the continuous edge features the dataset has, or — TU datasets of the benchmark, whose loader sets
    ``ones(E, in_dim)`` — the node feature width: ``ones_width``).
"""

from __future__ import annotations

import torch
from torch import nn

from gnnbench.data.meta import FeatureSpec


def _input_layer(feature: FeatureSpec, width: int) -> nn.Module:
    if feature.kind == "categorical":
        return nn.Embedding(feature.size, width)
    return nn.Linear(feature.size, width)


class NodeEncoder(nn.Module):
    """Node input → width ``width``: ``Embedding`` or ``Linear`` of the features (or the raw features when
    ``project_continuous`` is false), plus ``Linear(pe_dim, width)(pe)``, or that projection alone when the positional
    encodings replace the node input (``pe_usage`` "replace")."""

    def __init__(self, feature: FeatureSpec | None, width: int, pe_dim: int | None = None,
                 pe_usage: str = "add", project_continuous: bool = True) -> None:
        super().__init__()
        replace = pe_dim is not None and pe_usage == "replace"
        self.embedding: nn.Module | None = None
        if not replace:
            if feature is None:
                raise ValueError("a dataset without node features needs positional encodings that replace them")
            if feature.kind == "categorical" or project_continuous:
                self.embedding = _input_layer(feature, width)
            elif pe_dim is not None:
                raise ValueError("positional encodings cannot be added to raw continuous features")
        self.pe_projection = nn.Linear(pe_dim, width) if pe_dim is not None else None

    def forward(self, x: torch.Tensor | None, pe: torch.Tensor | None) -> torch.Tensor:
        """h = Emb(x) + Linear(pe) (each term where it exists); (N, width)."""
        if self.embedding is None and self.pe_projection is not None:  # PE replaces the node input
            return self.pe_projection(pe)
        h = self.embedding(x) if self.embedding is not None else x
        if self.pe_projection is not None:
            h = h + self.pe_projection(pe)
        return h


class EdgeEncoder(nn.Module):
    """Edge input → width ``width``: ``Embedding`` / ``Linear`` of the edge features with ``use_features``
    (``edge_feat``), else ``Linear(ones_width, width)`` of the constant input ``ones``."""

    def __init__(self, feature: FeatureSpec | None, use_features: bool, width: int,
                 ones_width: int | None = None) -> None:
        super().__init__()
        self.use_features = use_features
        if use_features:
            if feature is None:
                raise ValueError("edge_feat is true but the dataset has no edge features")
            self.layer = _input_layer(feature, width)
        else:
            if ones_width is None:
                ones_width = feature.size if feature is not None and feature.kind == "continuous" else 1
            self.layer = nn.Linear(ones_width, width)

    def forward(self, edge_attr: torch.Tensor | None, num_edges: int) -> torch.Tensor:
        """(num_edges, width) edge embeddings; the constant input's embedding is one row broadcast to every edge."""
        if self.use_features:
            return self.layer(edge_attr)
        # Linear(ones) is the same vector for every edge: compute it once and broadcast.
        ones = torch.ones(1, self.layer.in_features, dtype=self.layer.weight.dtype, device=self.layer.weight.device)
        return self.layer(ones).expand(num_edges, -1)
