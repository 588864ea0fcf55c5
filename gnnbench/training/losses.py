"""Losses of the benchmark (spec benchmarking-gnns.md §2.4), by the name ``meta.json`` gives."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from gnnbench.errors import ConfigError


def weighted_cross_entropy(scores: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """SBM loss: cross-entropy with per-batch class weights w_c = (V − n_c) / V, 0 for absent classes.

    V = nodes in the batch, n_c = nodes of class c. The weighted mean is Σ_i w_{y_i} nll_i / Σ_i w_{y_i}.
    Decision: a batch whose nodes all share one class has all-zero weights (the original returns NaN);
    gnnbench falls back to the unweighted loss there.
    """
    num = y.numel()
    counts = torch.bincount(y, minlength=scores.shape[1]).to(scores.dtype)
    weight = (num - counts) / num
    if not bool((weight * (counts > 0)).any()):
        return F.cross_entropy(scores, y)
    return F.cross_entropy(scores, y, weight=weight)


def cross_entropy(scores: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(scores, y)


def l1(scores: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.l1_loss(scores, y)


LOSSES: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "weighted_cross_entropy": weighted_cross_entropy,
    "cross_entropy": cross_entropy,
    "l1": l1,
}


def get_loss(name: str) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    if name not in LOSSES:
        raise ConfigError(f"dataset metadata names unknown loss {name!r}; known: {', '.join(LOSSES)}")
    return LOSSES[name]
