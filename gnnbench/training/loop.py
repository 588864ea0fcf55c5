"""One training epoch and one evaluation pass; shared by full runs and the speed benchmarks."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch

from gnnbench.data.batching import GraphBatch
from gnnbench.features.laplacian_pe import random_sign_flip
from gnnbench.training.metrics import Metric

Loss = Callable[[torch.Tensor, GraphBatch], torch.Tensor]


def train_epoch(model: torch.nn.Module, batches: Iterable[GraphBatch], optimizer: torch.optim.Optimizer,
                loss_fn: Loss, metric: Metric, device: torch.device, flip_pe: bool = True) -> tuple[float, float]:
    """One pass over the training batches; returns (mean loss over batches, metric in train mode).

    With ``flip_pe`` every batch's positional encodings get one random sign per dimension (training only).
    """
    model.train()
    metric.reset()
    total_loss, num_batches = torch.zeros((), dtype=torch.float64), 0
    for batch in batches:
        batch = batch.to(device, non_blocking=True)
        if flip_pe and batch.pe is not None:
            batch.pe = random_sign_flip(batch.pe)
        optimizer.zero_grad(set_to_none=True)
        scores = model(batch)
        loss = loss_fn(scores, batch)
        loss.backward()
        optimizer.step()
        total_loss += loss.detach().double().cpu()
        num_batches += 1
        metric.update(_detach(scores), batch)
    return float(total_loss / max(num_batches, 1)), metric.compute()


@torch.no_grad()
def evaluate(model: torch.nn.Module, batches: Iterable[GraphBatch], loss_fn: Loss, metric: Metric,
             device: torch.device) -> tuple[float, float]:
    """(mean loss over batches, metric) in eval mode; positional encodings are never flipped here."""
    model.eval()
    metric.reset()
    total_loss, num_batches = torch.zeros((), dtype=torch.float64), 0
    for batch in batches:
        batch = batch.to(device, non_blocking=True)
        scores = model(batch)
        total_loss += loss_fn(scores, batch).double().cpu()
        num_batches += 1
        metric.update(scores, batch)
    return float(total_loss / max(num_batches, 1)), metric.compute()


def _detach(scores):
    return tuple(s.detach() for s in scores) if isinstance(scores, tuple) else scores.detach()
