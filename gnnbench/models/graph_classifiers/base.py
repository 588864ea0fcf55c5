"""The contract of the fair-comparison graph classifiers (the networks of Errica et al.; released code:
diningphil/gnn-comparison ``models/graph_classifiers/``).

These are the networks of Errica et al. as they ran them: each is a complete graph classifier (its own input layer,
message passing, pooling and output MLP), so they do not go through the benchmarking-gnns encoder → architecture →
head composition (:mod:`gnnbench.models`), whose heads and encoders differ from these. Where an operator is the same
as a layer of the zoo, the file reuses that layer.

A classifier:

* ``forward(batch)`` takes a :class:`~gnnbench.data.batching.GraphBatch` (``x`` (N, F) float node features,
  ``edge_index`` with both directions of every undirected edge, ``batch``, ``ptr``, ``num_graphs``,
  ``graph_ids``) and returns logits (B, C);
* ``aux_loss`` — a scalar tensor of extra loss terms of the last forward pass (DiffPool's link and entropy losses),
  0.0 for the others; the trainer adds it to the cross entropy;
* ``from_config(cfg, meta, sizes)`` builds it from a flat run config, the dataset's
  :class:`~gnnbench.data.meta.DatasetMeta` and ``sizes``, the node count of every graph of the dataset (np.int64,
  all graphs: what DGCNN's k percentile and DiffPool's maximum node count are computed from — data, not dataset
  names);
* ``prepare(store)`` — optional per-dataset precomputation (ECC's coarsening hierarchy), called once with the
  whole :class:`~gnnbench.data.store.GraphStore` before training; batches then name their graphs by ``graph_ids``;
* ``required`` — the config keys it reads; ``num_layers(cfg)`` — its depth for the "median number of layers
  selected" column (None for the structure-agnostic baselines).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from gnnbench.data.meta import DatasetMeta


class GraphClassifier(nn.Module):
    """Base class of a complete graph classifier of the fair comparison (the module docstring gives the contract).
    ``required`` lists the config keys :meth:`from_config` reads; ``aux_loss`` is 0.0 unless a forward pass sets
    it."""

    required: tuple[str, ...] = ()

    def __init__(self) -> None:
        super().__init__()
        self.aux_loss: torch.Tensor | float = 0.0

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta, sizes: np.ndarray) -> GraphClassifier:
        """The classifier a flat run config describes, for a dataset with metadata ``meta`` and the node counts
        ``sizes`` of all its graphs."""
        raise NotImplementedError

    @staticmethod
    def num_layers(cfg: dict) -> int | None:
        """The depth of the configuration ``cfg`` for the "median number of layers selected" column: its
        ``num_layers`` by default."""
        return cfg.get("num_layers")

    def prepare(self, store) -> None:  # noqa: B027 - optional hook
        """Per-dataset precomputation (default: none)."""


class StructureAgnosticBaseline(GraphClassifier):
    """The two baselines (Molecular Fingerprint, DeepMultisets): ``__init__(in_dim, num_classes, hidden_units)``
    with one width ``hidden_units`` and no depth to report."""

    required = ("hidden_units",)

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta, sizes: np.ndarray) -> StructureAgnosticBaseline:
        """The baseline with the dataset's input width and class count and width ``hidden_units`` (an integer,
        else ValueError); ``sizes`` is not used."""
        if not isinstance(cfg["hidden_units"], int):
            raise ValueError(f"{cls.__name__} hidden_units is one width (an integer), got {cfg['hidden_units']!r}")
        return cls(meta.node_features.size, meta.num_outputs, int(cfg["hidden_units"]))

    @staticmethod
    def num_layers(cfg: dict) -> int | None:
        """None: a structure-agnostic baseline has no message-passing depth to report."""
        return None
