"""Evaluation metrics of the benchmark (spec benchmarking-gnns.md §4).

The original averages some metrics over mini-batches (each batch weighs the same, the smaller last batch
included) and computes others globally; gnnbench keeps both behaviours, so scores depend on the
evaluation batch size exactly as in the paper:

* ``weighted_accuracy`` (SBM, %, mean over batches): per batch, labels = sorted union of targets and
  predictions, nb = their number; for r = 0..nb−1, recall_r = CM[r, r] / #(targets == r) if class r occurs
  in the targets else 0, where CM is the confusion matrix over those labels; value = 100 · Σ_r recall_r / nb.
  (The original indexes CM by position and counts targets by value; identical whenever the present labels
  are 0..nb−1, i.e. in practice always. Reproduced literally.)
* ``accuracy`` (graph classification, %, global): 100 · #correct / #graphs.
* ``mae`` (regression, mean over batches of the batch's mean absolute error).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from gnnbench.errors import ConfigError


def sbm_weighted_accuracy(scores: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Weighted accuracy of one batch, in percent (0-d tensor)."""
    preds = scores.argmax(dim=1)
    labels = torch.unique(torch.cat([targets, preds]))  # sorted
    nb = labels.numel()
    size = int(max(labels.max(), nb - 1)) + 1
    hits_by_label = torch.bincount(targets[preds == targets], minlength=size)
    count_by_label = torch.bincount(targets, minlength=size)
    diag = hits_by_label[labels].double()  # CM[r, r] for the r-th present label
    count = count_by_label[:nb].double()  # #(targets == r)
    recall = torch.where(count > 0, diag / count.clamp(min=1), torch.zeros_like(diag))
    return 100.0 * recall.sum() / nb


class Metric(ABC):
    """Accumulates a metric over the batches of an epoch."""

    name: str
    higher_is_better: bool

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._sum = torch.zeros((), dtype=torch.float64)
        self._count = 0

    @abstractmethod
    def update(self, scores: torch.Tensor, y: torch.Tensor) -> None:
        """Add one batch's predictions."""

    def compute(self) -> float:
        return float(self._sum / max(self._count, 1))


class WeightedAccuracy(Metric):
    name, higher_is_better = "weighted_accuracy", True

    def update(self, scores: torch.Tensor, y: torch.Tensor) -> None:
        self._sum = self._sum + sbm_weighted_accuracy(scores, y).double().cpu()
        self._count += 1  # mean over batches


class Accuracy(Metric):
    name, higher_is_better = "accuracy", True

    def update(self, scores: torch.Tensor, y: torch.Tensor) -> None:
        self._sum = self._sum + 100.0 * (scores.argmax(dim=1) == y).sum().double().cpu()
        self._count += y.numel()  # global over graphs


class MAE(Metric):
    name, higher_is_better = "mae", False

    def update(self, scores: torch.Tensor, y: torch.Tensor) -> None:
        self._sum = self._sum + (scores - y).abs().mean().double().cpu()
        self._count += 1  # mean over batches


METRICS: dict[str, type[Metric]] = {m.name: m for m in (WeightedAccuracy, Accuracy, MAE)}


def get_metric(name: str) -> Metric:
    if name not in METRICS:
        raise ConfigError(f"dataset metadata names unknown metric {name!r}; known: {', '.join(METRICS)}")
    return METRICS[name]()
