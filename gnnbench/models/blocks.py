"""Pieces every message-passing architecture of the benchmark shares (the BN/ReLU/residual/dropout tail), and what
lets every layer run on a plain ``(x, edge_index)`` like PyG's ``conv(x, edge_index)``: :func:`cached_structure`
(the index structures a layer builds from an ``edge_index``, kept for the next call with the same tensor),
:func:`is_edge_index` and :func:`reset_children`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


def is_edge_index(value: Any) -> bool:
    """True for a (2, E) int64/int32 tensor (not a bool mask): how a layer tells a plain PyG-order call
    ``layer(x, edge_index, …)`` from its internal call with a float or bool tensor in that place (edge features,
    pseudo-coordinates, a dense adjacency or node mask)."""
    return (isinstance(value, torch.Tensor) and value.dim() == 2 and value.shape[0] == 2
            and value.dtype in (torch.int64, torch.int32))


class _StructureCache:
    """One cached structure: built from ``edge_index`` (held, so its identity cannot be reused) for a key of the
    other inputs it depends on. Copies and pickles start empty (a cache, not state)."""

    def __init__(self) -> None:
        self.edge_index: torch.Tensor | None = None
        self.version = -1
        self.key: tuple = ()
        self.value: Any = None

    def __deepcopy__(self, memo: dict) -> _StructureCache:
        return _StructureCache()

    def __reduce__(self):
        return (_StructureCache, ())


def cached_structure(module: nn.Module, edge_index: torch.Tensor, key: tuple, build: Callable[[], Any]) -> Any:
    """What ``build()`` returns for this ``edge_index`` and ``key`` (e.g. (num_nodes, dtype)), built once: the last
    result is kept on ``module`` and returned while the same tensor object (same in-place version) comes back with
    the same key — a layer called as ``conv(x, edge_index)`` in every epoch sorts and normalises its edges once."""
    cache = module.__dict__.get("_structure_cache")
    if cache is None:
        cache = module.__dict__["_structure_cache"] = _StructureCache()
    if cache.edge_index is edge_index and cache.version == edge_index._version and cache.key == key:
        return cache.value
    cache.value = build()
    cache.edge_index, cache.version, cache.key = edge_index, edge_index._version, key
    return cache.value


def reset_children(module: nn.Module) -> None:
    """Re-initialise ``module``'s submodules in registration order (= creation order): each child's own
    ``reset_parameters``, or its children's where it has none. For layers built only from ``nn.Linear``/BN/...
    children this repeats the constructor's random draws in the same order (same RNG state → same weights)."""
    for child in module.children():
        if hasattr(child, "reset_parameters"):
            child.reset_parameters()
        else:
            reset_children(child)
