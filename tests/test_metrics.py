"""Losses and metrics against independent transcriptions of the original's definitions (spec §4, §2.4)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sklearn.metrics import confusion_matrix

from gnnbench.training.losses import cross_entropy, l1, weighted_cross_entropy
from gnnbench.training.metrics import MAE, Accuracy, WeightedAccuracy, sbm_weighted_accuracy


def original_accuracy_sbm(scores: torch.Tensor, targets: torch.Tensor) -> float:
    """The benchmark's train/metrics.py accuracy_SBM, transcribed line by line."""
    S = targets.cpu().numpy()
    C = np.argmax(torch.nn.Softmax(dim=1)(scores).cpu().detach().numpy(), axis=1)
    CM = confusion_matrix(S, C).astype(np.float32)
    nb_classes = CM.shape[0]
    targets = targets.cpu().detach().numpy()
    pr_classes = np.zeros(nb_classes)
    for r in range(nb_classes):
        cluster = np.where(targets == r)[0]
        if cluster.shape[0] != 0:
            pr_classes[r] = CM[r, r] / float(cluster.shape[0])
        else:
            pr_classes[r] = 0.0
    return 100.0 * np.sum(pr_classes) / float(nb_classes)


@pytest.mark.parametrize("case", range(40))
def test_weighted_accuracy_equals_the_original(case):
    rng = np.random.default_rng(case)
    num_classes = int(rng.integers(2, 7))
    n = int(rng.integers(5, 60))
    present = rng.choice(num_classes, size=int(rng.integers(1, num_classes + 1)), replace=False)
    targets = torch.from_numpy(rng.choice(present, n))  # some classes may be absent from the targets
    scores = torch.from_numpy(rng.normal(size=(n, num_classes)))
    if case % 3 == 0:  # mostly right predictions
        scores[torch.arange(n), targets] += 3.0
    ours = float(sbm_weighted_accuracy(scores, targets))
    assert ours == pytest.approx(original_accuracy_sbm(scores, targets), rel=1e-6)  # original: float32 counts


def test_weighted_accuracy_is_mean_recall_in_percent():
    targets = torch.tensor([0, 0, 0, 0, 1, 1])
    scores = F.one_hot(torch.tensor([0, 0, 0, 1, 1, 0]), 2).float()
    assert float(sbm_weighted_accuracy(scores, targets)) == pytest.approx(100 * (3 / 4 + 1 / 2) / 2)


def test_weighted_cross_entropy_formula():
    torch.manual_seed(0)
    scores = torch.randn(10, 3)
    y = torch.tensor([0, 0, 0, 0, 0, 0, 1, 1, 1, 0])  # class 2 absent
    counts = torch.bincount(y, minlength=3).float()
    w = (10 - counts) / 10 * (counts > 0)
    nll = -torch.log_softmax(scores, 1)[torch.arange(10), y]
    expected = (w[y] * nll).sum() / w[y].sum()
    torch.testing.assert_close(weighted_cross_entropy(scores, y), expected)
    # rarer classes weigh more: here class 1 (3 nodes) gets weight 0.7, class 0 (7 nodes) 0.3
    torch.testing.assert_close(w[:2], torch.tensor([0.3, 0.7]))


def test_weighted_cross_entropy_single_class_batch_falls_back_to_plain():
    scores = torch.randn(4, 2)
    y = torch.zeros(4, dtype=torch.long)
    loss = weighted_cross_entropy(scores, y)
    assert torch.isfinite(loss)
    torch.testing.assert_close(loss, F.cross_entropy(scores, y))


def test_plain_losses():
    scores, y = torch.randn(5, 4), torch.tensor([0, 3, 1, 1, 2])
    torch.testing.assert_close(cross_entropy(scores, y), F.cross_entropy(scores, y))
    a, b = torch.randn(6), torch.randn(6)
    torch.testing.assert_close(l1(a, b), (a - b).abs().mean())


def test_accumulation_batch_mean_versus_global():
    # two batches of different sizes: accuracy is global, MAE and weighted accuracy are means of batch values
    s1, y1 = F.one_hot(torch.tensor([0, 1, 1, 1]), 2).float(), torch.tensor([0, 1, 0, 0])  # 2/4 correct
    s2, y2 = F.one_hot(torch.tensor([1]), 2).float(), torch.tensor([1])  # 1/1 correct
    acc = Accuracy()
    acc.update(s1, y1)
    acc.update(s2, y2)
    assert acc.compute() == pytest.approx(100 * 3 / 5)
    wacc = WeightedAccuracy()
    wacc.update(s1, y1)
    wacc.update(s2, y2)
    expected = (float(sbm_weighted_accuracy(s1, y1)) + float(sbm_weighted_accuracy(s2, y2))) / 2
    assert wacc.compute() == pytest.approx(expected)
    mae = MAE()
    mae.update(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.0, 0.0, 0.0]))
    mae.update(torch.tensor([10.0]), torch.tensor([0.0]))
    assert mae.compute() == pytest.approx((2.0 + 10.0) / 2)
    mae.reset()
    assert mae.compute() == 0.0
