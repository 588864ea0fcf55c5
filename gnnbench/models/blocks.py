"""Pieces every message-passing architecture of the benchmark shares (spec benchmarking-gnns.md §2.2)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def stack_widths(hidden_dim: int, out_dim: int, num_layers: int) -> list[tuple[int, int]]:
    """(input, output) widths of L layers: hidden → hidden (L − 1 times), then hidden → out_dim."""
    widths = [hidden_dim] * num_layers + [out_dim]
    return list(zip(widths[:-1], widths[1:], strict=True))


def post_aggregation(x: torch.Tensor, layer_input: torch.Tensor, bn: nn.BatchNorm1d, *, batch_norm: bool,
                     residual: bool, dropout: float, training: bool, activation: bool = True) -> torch.Tensor:
    """The benchmark's layer tail: BN (if batch_norm) → ReLU (if activation) → + layer_input (if residual) →
    dropout. ReLU runs in place only on BN's own output (autograd does not need it)."""
    if batch_norm:
        x = bn(x)
    if activation:
        x = torch.relu_(x) if batch_norm else torch.relu(x)
    if residual:
        x = layer_input + x
    return F.dropout(x, dropout, training) if dropout > 0 else x


def gru_update(gru: nn.GRU, h_prev: torch.Tensor, h_layer: torch.Tensor) -> torch.Tensor:
    """The benchmark's GraphTheoryProp step ``gru(h_prev, h_layer)[1]``: one GRU step whose *input* is the
    previous node state and whose *initial hidden state* is the layer's output; returns the final hidden."""
    return gru(h_prev.unsqueeze(0), h_layer.unsqueeze(0))[1].squeeze(0)
