"""Evaluation metrics of the benchmark (Dwivedi et al., Appendix C, "Performance Measure" of each dataset; the
released code's ``train/metrics.py``; docs/protocols/benchmarking-gnns.md#metrics-and-losses).

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
* ``f1`` (TSP edges, mean over batches): per batch, binary F1 of the positive class (edge in the tour) of
  argmax predictions, as sklearn's ``f1_score(average='binary')`` (0 when there are no true and no
  predicted positives). A fraction, not a percentage, as in the original.
* ``log10_mse`` (GraphTheoryProp): log10 of the epoch mean of the multitask loss (mean of its six values).
  ``per_task()`` gives log10 of each task's epoch mean, by task name (reported in ``metrics.json``
  and the tables).
* ``roc_auc`` (the binary datasets of Platonov et al.: minesweeper, tolokers, questions; %, global): 100 · the area
  under the ROC curve of the score of class 1 (``scores[:, 1] − scores[:, 0]`` for two logits, or the one
  column), ties given their mean rank, as sklearn's ``roc_auc_score`` (:func:`roc_auc`).
* ``hits@50`` (COLLAB): fraction of positive pairs scored above the 50th highest negative score (OGB's
  Hits@K), over the whole evaluation set.

Every metric is updated as ``update(scores, batch)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from gnnbench.data.batching import GraphBatch
from gnnbench.errors import ConfigError
from gnnbench.training.losses import multitask_parts


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


def positive_score(scores: torch.Tensor) -> torch.Tensor:
    """The score of class 1 of a binary task: the logit difference of two columns, or the one column."""
    return scores[..., 1] - scores[..., 0] if scores.shape[-1] == 2 else scores[..., 0]


def roc_auc(scores: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Area under the ROC curve (a fraction, 0-d float64) of ``scores`` (N,) for binary ``targets`` (N,): the
    Mann–Whitney statistic with tied scores given their mean rank (sklearn's ``roc_auc_score``); NaN when only
    one class occurs."""
    scores, targets = scores.detach().double().reshape(-1), targets.reshape(-1).bool()
    order = torch.argsort(scores)
    sorted_scores = scores[order]
    _, inverse, counts = torch.unique_consecutive(sorted_scores, return_inverse=True, return_counts=True)
    ends = torch.cumsum(counts, 0).double()  # 1-based rank of the last member of each tie group
    mean_rank = ends - (counts.double() - 1) / 2
    ranks = torch.empty_like(scores)
    ranks[order] = mean_rank[inverse]
    positives = int(targets.sum())
    negatives = targets.numel() - positives
    if positives == 0 or negatives == 0:
        return torch.tensor(float("nan"), dtype=torch.float64)
    return (ranks[targets].sum() - positives * (positives + 1) / 2) / (positives * negatives)


class Metric(ABC):
    """Accumulates a metric over the batches of an epoch."""

    name: str
    higher_is_better: bool

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget every batch (called at the start of each pass)."""
        self._sum = torch.zeros((), dtype=torch.float64)
        self._count = 0

    @abstractmethod
    def update(self, scores: torch.Tensor, batch: GraphBatch) -> None:
        """Add one batch's predictions."""

    def compute(self) -> float:
        """The metric over the batches seen since :meth:`reset`."""
        return float(self._sum / max(self._count, 1))

    def per_task(self) -> dict[str, float] | None:
        """Scores per task of a multitask metric (reported beside the overall score), else None."""
        return None


class WeightedAccuracy(Metric):
    """SBM weighted accuracy (%): :func:`sbm_weighted_accuracy` per batch, averaged over batches."""

    name, higher_is_better = "weighted_accuracy", True

    def update(self, scores: torch.Tensor, batch: GraphBatch) -> None:
        """Add one batch's weighted accuracy."""
        self._sum = self._sum + sbm_weighted_accuracy(scores, batch.y).double().cpu()
        self._count += 1  # mean over batches


class Accuracy(Metric):
    """Accuracy (%) over all graphs (or nodes) of the pass: 100 · #correct / #items."""

    name, higher_is_better = "accuracy", True

    def update(self, scores: torch.Tensor, batch: GraphBatch) -> None:
        """Add one batch's correct predictions and its size."""
        y = batch.y
        self._sum = self._sum + 100.0 * (scores.argmax(dim=1) == y).sum().double().cpu()
        self._count += y.numel()  # global over graphs


class MAE(Metric):
    """Mean absolute error per batch, averaged over batches."""

    name, higher_is_better = "mae", False

    def update(self, scores: torch.Tensor, batch: GraphBatch) -> None:
        """Add one batch's mean absolute error."""
        self._sum = self._sum + (scores - batch.y).abs().mean().double().cpu()
        self._count += 1  # mean over batches


def binary_f1(scores: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """F1 of class 1 for argmax predictions of one batch (0-d tensor; 0 when it is undefined, as sklearn)."""
    preds = scores.argmax(dim=1)
    true_pos = ((preds == 1) & (targets == 1)).sum()
    denominator = (preds == 1).sum() + (targets == 1).sum()
    return torch.where(denominator > 0, 2.0 * true_pos / denominator.clamp(min=1), torch.zeros(()))


class F1(Metric):
    """F1 of the positive class (TSP tour edges) per batch, averaged over batches; a fraction."""

    name, higher_is_better = "f1", True

    def update(self, scores: torch.Tensor, batch: GraphBatch) -> None:
        """Add one batch's F1 (:func:`binary_f1`)."""
        self._sum = self._sum + binary_f1(scores, batch.y).double().cpu()
        self._count += 1  # mean over batches


class Log10MSE(Metric):
    """GraphTheoryProp: log10 of the epoch mean of the multitask loss, overall and per task."""

    name, higher_is_better = "log10_mse", False
    # the order of multitask_parts: PNA's node targets, then its graph targets (generators/graph_theory_prop.py)
    TASKS = ("sssp", "eccentricity", "graph_laplacian_features", "is_connected", "diameter", "spectral_radius")

    def __init__(self, batch_size: int = 1) -> None:
        self.batch_size = batch_size
        super().__init__()

    def reset(self) -> None:
        """Forget every batch."""
        self._parts = torch.zeros(6, dtype=torch.float64)
        self._count = 0

    def update(self, scores, batch: GraphBatch) -> None:
        """Add one batch's six loss values (:func:`~gnnbench.training.losses.multitask_parts`)."""
        self._parts = self._parts + multitask_parts(scores, batch, self.batch_size).detach().double().cpu()
        self._count += 1

    def per_task(self) -> dict[str, float]:
        """log10 of each task's epoch mean, by task name."""
        values = torch.log10(self._parts / max(self._count, 1)).tolist()
        return dict(zip(self.TASKS, values, strict=True))

    def compute(self) -> float:
        """log10 of the epoch mean of the six values' mean."""
        return float(torch.log10(self._parts.mean() / max(self._count, 1)))


class HitsAtK(Metric):
    """OGB's Hits@K over the evaluation set: positives (``batch.y`` = 1) scored above the K-th best negative."""

    k = 50
    name, higher_is_better = "hits@50", True

    def reset(self) -> None:
        """Forget every batch."""
        self._pos: list[torch.Tensor] = []
        self._neg: list[torch.Tensor] = []

    def update(self, scores: torch.Tensor, batch: GraphBatch) -> None:
        """Keep one batch's positive and negative scores."""
        positive = batch.y.bool()
        self._pos.append(scores[positive].detach().cpu())
        self._neg.append(scores[~positive].detach().cpu())

    def compute(self) -> float:
        """Hits@K over every pair seen since :meth:`reset`."""
        return hits_at_k(torch.cat(self._pos), torch.cat(self._neg), self.k)


def hits_at_k(pos: torch.Tensor, neg: torch.Tensor, k: int) -> float:
    """OGB's Hits@K (``ogb.linkproppred.Evaluator``): the fraction of positive scores strictly above the K-th
    highest negative score; 1.0 when there are fewer than K negatives."""
    if neg.numel() < k:
        return 1.0
    threshold = torch.topk(neg, k).values[-1]
    return float((pos > threshold).double().mean())


class RocAuc(Metric):
    """ROC AUC (%) of the score of class 1 over all nodes of the pass (:func:`roc_auc`)."""

    name, higher_is_better = "roc_auc", True

    def reset(self) -> None:
        """Forget every batch."""
        self._scores: list[torch.Tensor] = []
        self._targets: list[torch.Tensor] = []

    def update(self, scores: torch.Tensor, batch: GraphBatch) -> None:
        """Keep one batch's scores of class 1 and its targets (the AUC is global, not a mean over batches)."""
        self._scores.append(positive_score(scores).detach().double().cpu())
        self._targets.append(batch.y.detach().cpu())

    def compute(self) -> float:
        """100 · the AUC over every batch since :meth:`reset`."""
        if not self._scores:
            return float("nan")
        return 100.0 * float(roc_auc(torch.cat(self._scores), torch.cat(self._targets)))


METRICS: dict[str, type[Metric]] = {m.name: m for m in (WeightedAccuracy, Accuracy, MAE, F1, Log10MSE, HitsAtK,
                                                         RocAuc)}


def get_metric(name: str, config: dict | None = None) -> Metric:
    """A fresh metric called ``name`` (``log10_mse`` bound to the config's batch size)."""
    if name not in METRICS:
        raise ConfigError(f"dataset metadata names unknown metric {name!r}; known: {', '.join(METRICS)}")
    if name == "log10_mse":
        return Log10MSE((config or {}).get("batch_size", 1))
    return METRICS[name]()
