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
        scores = _scored(model(batch), batch)
        loss = loss_fn(scores, batch)
        loss.backward()
        optimizer.step()
        total_loss += loss.detach().double().cpu()
        num_batches += 1
        metric.update(_detach(scores), batch)
    return float(total_loss / max(num_batches, 1)), metric.compute()


def train_epoch_accumulated(model: torch.nn.Module, graphs: Iterable[GraphBatch], optimizer: torch.optim.Optimizer,
                            loss_fn: Loss, metric: Metric, device: torch.device, accumulate: int,
                            flip_pe: bool = True) -> tuple[float, float]:
    """The original dense-model schedule (RingGNN/3WLGNN; ``train_epoch_dense`` in the released code's
    ``train/train_*.py``; docs/protocols/benchmarking-gnns.md#dense-wl-gnns-train-on-mini-batches): one graph per
    forward pass; gradients are zeroed once at the start of the epoch, every graph's loss is back-propagated, and the
    optimizer steps (then zeroes) whenever the 0-based graph counter is a multiple of ``accumulate`` (the config's
    batch size). The first update therefore uses one graph, later ones the *sum* of ``accumulate`` graphs'
    gradients, and the epoch's leftover gradients are discarded. ``graphs`` must yield one graph per batch.
    """
    model.train()
    metric.reset()
    optimizer.zero_grad(set_to_none=True)
    total_loss, num_graphs = torch.zeros((), dtype=torch.float64), 0
    for step, graph in enumerate(graphs):
        graph = graph.to(device, non_blocking=True)
        if flip_pe and graph.pe is not None:
            graph.pe = random_sign_flip(graph.pe)
        scores = model(graph)
        loss = loss_fn(scores, graph)
        loss.backward()
        if step % accumulate == 0:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        total_loss += loss.detach().double().cpu()
        num_graphs += 1
        metric.update(_detach(scores), graph)
    return float(total_loss / max(num_graphs, 1)), metric.compute()


@torch.no_grad()
def evaluate(model: torch.nn.Module, batches: Iterable[GraphBatch], loss_fn: Loss, metric: Metric,
             device: torch.device) -> tuple[float, float]:
    """(mean loss over batches, metric) in eval mode; positional encodings are never flipped here."""
    model.eval()
    metric.reset()
    total_loss, num_batches = torch.zeros((), dtype=torch.float64), 0
    for batch in batches:
        batch = batch.to(device, non_blocking=True)
        scores = _scored(model(batch), batch)
        total_loss += loss_fn(scores, batch).double().cpu()
        num_batches += 1
        metric.update(scores, batch)
    return float(total_loss / max(num_batches, 1)), metric.compute()


def _scored(scores: torch.Tensor, batch: GraphBatch) -> torch.Tensor:
    """The scores the loss and metric see: those of ``batch.targets`` when the batch is one graph with node sets
    (full-graph training on WikiCS: every node is computed, one split part is scored)."""
    return scores if batch.targets is None else scores.index_select(0, batch.targets)


def _detach(scores):
    return tuple(s.detach() for s in scores) if isinstance(scores, tuple) else scores.detach()


def member_scores(out, split: Callable, members: int) -> list:
    """A wide stack's output (last dimension R·C, member-major blocks; a tuple for a multitask model) as one score
    tensor (or tuple) per member: views, no copies."""
    if isinstance(out, tuple):
        return list(zip(*(split(o).unbind(0) for o in out), strict=True))
    return list(split(out).unbind(0))


def train_epoch_members(stack: torch.nn.Module, split: Callable, members: int, batches: Iterable[GraphBatch],
                        optimizer, loss_fn: Loss, metrics: list[Metric], device: torch.device,
                        flip_pe: bool = True) -> tuple[torch.Tensor, list[float]]:
    """:func:`train_epoch` for a wide stack of ``members`` models (:mod:`gnnbench.training.wide`) on shared batches:
    each member's loss is its own batch loss; one backward of their sum gives every member exactly its own gradient
    (the members share no parameter). Returns (float64 (R,) mean loss over batches, each member's metric). With
    ``flip_pe`` every batch's positional encodings get one random sign per dimension, shared by the members."""
    stack.train()
    for metric in metrics:
        metric.reset()
    total_loss, num_batches = torch.zeros(members, dtype=torch.float64), 0
    for batch in batches:
        batch = batch.to(device, non_blocking=True)
        if flip_pe and batch.pe is not None:
            batch.pe = random_sign_flip(batch.pe)
        optimizer.zero_grad()
        scores = member_scores(_scored(stack(batch), batch), split, members)
        losses = torch.stack([loss_fn(s, batch) for s in scores])
        losses.sum().backward()
        optimizer.step()
        total_loss += losses.detach().double().cpu()
        num_batches += 1
        for metric, s in zip(metrics, scores, strict=True):
            metric.update(_detach(s), batch)
    return total_loss / max(num_batches, 1), [metric.compute() for metric in metrics]


@torch.no_grad()
def evaluate_members(stack: torch.nn.Module, split: Callable, members: int, batches: Iterable[GraphBatch],
                     loss_fn: Loss, metrics: list[Metric], device: torch.device) -> tuple[torch.Tensor, list[float]]:
    """:func:`evaluate` for a wide stack: (float64 (R,) mean loss over batches, each member's metric)."""
    stack.eval()
    for metric in metrics:
        metric.reset()
    total_loss, num_batches = torch.zeros(members, dtype=torch.float64), 0
    for batch in batches:
        batch = batch.to(device, non_blocking=True)
        scores = member_scores(_scored(stack(batch), batch), split, members)
        total_loss += torch.stack([loss_fn(s, batch) for s in scores]).double().cpu()
        num_batches += 1
        for metric, s in zip(metrics, scores, strict=True):
            metric.update(s, batch)
    return total_loss / max(num_batches, 1), [metric.compute() for metric in metrics]
