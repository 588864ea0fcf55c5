"""GIN (Xu et al., ICLR 2019) as Errica et al. ran it (released code: ``models/graph_classifiers/GIN.py`` of
diningphil/gnn-comparison, first commit 6f85f27 with the HEAD ``aggregation`` key of e174d66).

``hidden_units`` = [h, …] of length n: taken literally from the released code, whose layer list is
``[hidden_units[0]] + hidden_units`` — an input layer 0 **plus** n GIN conv layers:

    x⁽⁰⁾ = MLP₀(x)                                   MLP₀ = Linear(F→h) → BN → ReLU → Linear(h→h) → BN → ReLU
    x⁽ˡ⁾ = MLP_l((1 + ε_l)·x⁽ˡ⁻¹⁾_i + Σ_{j∈N(i)} x⁽ˡ⁻¹⁾_j),   l = 1..n   (PyG ``GINConv``, same MLP shape, h→h)
    out  = Σ_{l=0..n} dropout(term_l),   term_0 = pool(Linear_0(x⁽⁰⁾)),   term_l = Linear_l(pool(x⁽ˡ⁾))

Linear_l: h → #classes; term 0 applies the linear layer **before** pooling (with sum pooling its bias counts once
per node), the others after. ε_l starts at 0 and is learnt iff ``train_eps``. The conv layers are the zoo's
:class:`~gnnbench.models.gin.GINLayer` (``n_mlp=2, batch_norm=True, residual=False, dropout=0``: ReLU(BN(Linear(
ReLU(BN(Linear(·)))))) — exactly the Errica MLP) with a :class:`~gnnbench.models.gin.NeighbourAggregation` sum.

Decisions (docs/protocols/fair-comparison.md#networks):

* ``num_layers(cfg)`` = n = ``len(hidden_units)`` (the conv layers; the input MLP is not counted).
* All widths must be equal (as every published grid value has them); unequal widths are a ValueError rather than
  the original's silently different layer shapes.
* Dropout bug (``dropout_layer0_at_eval``, default True = as run): the original drops term 0 with ``F.dropout``
  without the training flag, so term 0 is also dropped (and rescaled) at evaluation; terms l ≥ 1 only in training
  (dropout on the output terms follows the original GIN code, diningphil/gnn-comparison issue #14).
  False applies dropout to term 0 only in training. The dropouts are ``nn.Dropout`` modules (``dropouts[l]`` for
  term l; the rate is a module's ``p``, not a float attribute of the model, so a wide stack of members with
  different rates can replace them, :mod:`gnnbench.training.wide`); term 0's module is kept in training mode when
  the model is put in eval mode (:meth:`GIN.train`). Each module calls ``F.dropout`` on the same tensor in the same
  order as the original's functional calls, so the masks — and the results — are those of the functional form.
* Pooling = the grid key ``aggregation`` ∈ {sum, mean} (HEAD code). The published numbers predate that key and
  used a per-dataset rule of the first commit (sum for NCI1/DD/PROTEINS/ENZYMES, mean otherwise — in effect mean
  for PROTEINS, whose files are PROTEINS_full); reproduce it by setting ``aggregation`` per dataset in the config,
  as config/suites/fair-comparison.yaml does (docs/protocols/fair-comparison.md#grids).
* Self loops in ``edge_index`` are ignored by the neighbour sum (PyG-1.4 ``GINConv`` removes them; the TU reader
  drops them anyway). Initialisation: PyTorch defaults (nn.Linear, BN weight 1 / bias 0).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.models.gin import GINLayer, NeighbourAggregation
from gnnbench.models.graph_classifiers.base import GraphClassifier
from gnnbench.models.sparse import scatter_mean, scatter_sum

POOLINGS = ("sum", "mean")


class GIN(GraphClassifier):
    """GIN of the fair comparison (module docstring: layers, readout, decisions); ``num_convs`` GIN layers of width
    ``hidden`` after the input MLP."""

    required = ("hidden_units", "train_eps", "aggregation", "dropout")
    # config keys whose values one wide stack can mix (gnnbench.training.best_epoch_stack.HoldoutStack): a member with
    # train_eps false is built with ε a parameter (same initial weights: ε is the constant 0 either way, no random
    # draw) whose gradient is zeroed, so it stays the constant 0 of the run alone
    stack_frozen = {"train_eps": (True, ("eps",))}

    def __init__(self, in_dim: int, num_classes: int, hidden: int, num_convs: int, train_eps: bool,
                 aggregation: str, dropout: float, dropout_layer0_at_eval: bool = True) -> None:
        super().__init__()
        if aggregation not in POOLINGS:
            raise ValueError(f"GIN aggregation (graph pooling) must be sum or mean, got {aggregation!r}")
        if num_convs < 1 or hidden < 1:
            raise ValueError(f"GIN needs at least one conv layer of positive width, got {num_convs} × {hidden}")
        self.first_h = nn.Sequential(nn.Linear(in_dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                                     nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU())
        self.convs = nn.ModuleList(GINLayer(hidden, n_mlp=2, dropout=0.0, batch_norm=True, residual=False,
                                            learn_eps=train_eps) for _ in range(num_convs))
        self.linears = nn.ModuleList(nn.Linear(hidden, num_classes) for _ in range(num_convs + 1))
        self.dropouts = nn.ModuleList(nn.Dropout(float(dropout)) for _ in range(num_convs + 1))  # one per term
        self.aggregation = aggregation
        self.dropout_layer0_at_eval = bool(dropout_layer0_at_eval)

    @property
    def dropout(self) -> float:
        """The dropout rate of every term."""
        return self.dropouts[0].p

    def train(self, mode: bool = True) -> GIN:
        """``nn.Module.train``; with ``dropout_layer0_at_eval`` term 0's dropout stays in training mode (the
        original's ``F.dropout`` without the training flag, module docstring)."""
        super().train(mode)
        if self.dropout_layer0_at_eval:
            self.dropouts[0].train(True)
        return self

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta, sizes: np.ndarray) -> GIN:
        """GIN from ``hidden_units`` (a non-empty list of equal widths, else ValueError), ``train_eps``,
        ``aggregation``, ``dropout`` and ``dropout_layer0_at_eval`` (default True); ``sizes`` is not used."""
        units = cfg["hidden_units"]
        if not isinstance(units, list) or not units or len(set(units)) != 1:
            raise ValueError(f"GIN hidden_units must be a non-empty list of equal widths, got {units}")
        return cls(meta.node_features.size, meta.num_outputs, int(units[0]), len(units), bool(cfg["train_eps"]),
                   cfg["aggregation"], cfg["dropout"], cfg.get("dropout_layer0_at_eval", True))

    @staticmethod
    def num_layers(cfg: dict) -> int | None:
        """The number of GIN conv layers, ``len(hidden_units)`` (the input MLP is not counted)."""
        return len(cfg["hidden_units"])

    def _pool(self, x: torch.Tensor, batch: GraphBatch) -> torch.Tensor:
        reduce = scatter_sum if self.aggregation == "sum" else scatter_mean
        return reduce(x, batch.batch, batch.num_graphs)

    def forward(self, batch: GraphBatch) -> torch.Tensor:
        """Logits (B, C): the sum of the dropped-out readout terms of layer 0 and every GIN layer."""
        src, dst = batch.edge_index
        keep = src != dst  # PyG-1.4 GINConv: remove_self_loops
        edges = batch.edge_index if bool(keep.all()) else batch.edge_index[:, keep]
        aggregate = NeighbourAggregation(edges, batch.num_nodes, "sum", batch.x.dtype)
        x = self.first_h(batch.x)
        out = self.dropouts[0](self._pool(self.linears[0](x), batch))
        for conv, linear, dropout in zip(self.convs, self.linears[1:], self.dropouts[1:], strict=True):
            x = conv(x, aggregate)
            out = out + dropout(linear(self._pool(x, batch)))
        return out
