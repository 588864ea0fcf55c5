"""Losses and metrics against independent transcriptions of the original's definitions (the released code's
``train/metrics.py`` and the nets' ``loss`` methods; docs/protocols/benchmarking-gnns.md#metrics-and-losses)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sklearn.metrics import confusion_matrix, f1_score

from gnnbench.training.losses import cross_entropy, get_loss, l1, multitask_parts, weighted_cross_entropy
from gnnbench.training.metrics import (
    F1,
    MAE,
    Accuracy,
    HitsAtK,
    WeightedAccuracy,
    binary_f1,
    get_metric,
    sbm_weighted_accuracy,
)


class Y:
    """Stands in for a GraphBatch: losses and metrics read ``batch.y``."""

    def __init__(self, y):
        self.y = y

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
    torch.testing.assert_close(weighted_cross_entropy(scores, Y(y)), expected)
    # rarer classes weigh more: here class 1 (3 nodes) gets weight 0.7, class 0 (7 nodes) 0.3
    torch.testing.assert_close(w[:2], torch.tensor([0.3, 0.7]))


def test_weighted_cross_entropy_single_class_batch_falls_back_to_plain():
    scores = torch.randn(4, 2)
    y = torch.zeros(4, dtype=torch.long)
    loss = weighted_cross_entropy(scores, Y(y))
    assert torch.isfinite(loss)
    torch.testing.assert_close(loss, F.cross_entropy(scores, y))


def test_plain_losses():
    scores, y = torch.randn(5, 4), torch.tensor([0, 3, 1, 1, 2])
    torch.testing.assert_close(cross_entropy(scores, Y(y)), F.cross_entropy(scores, y))
    a, b = torch.randn(6), torch.randn(6)
    torch.testing.assert_close(l1(a, Y(b)), (a - b).abs().mean())


def test_accumulation_batch_mean_versus_global():
    # two batches of different sizes: accuracy is global, MAE and weighted accuracy are means of batch values
    s1, y1 = F.one_hot(torch.tensor([0, 1, 1, 1]), 2).float(), torch.tensor([0, 1, 0, 0])  # 2/4 correct
    s2, y2 = F.one_hot(torch.tensor([1]), 2).float(), torch.tensor([1])  # 1/1 correct
    acc = Accuracy()
    acc.update(s1, Y(y1))
    acc.update(s2, Y(y2))
    assert acc.compute() == pytest.approx(100 * 3 / 5)
    wacc = WeightedAccuracy()
    wacc.update(s1, Y(y1))
    wacc.update(s2, Y(y2))
    expected = (float(sbm_weighted_accuracy(s1, y1)) + float(sbm_weighted_accuracy(s2, y2))) / 2
    assert wacc.compute() == pytest.approx(expected)
    mae = MAE()
    mae.update(torch.tensor([1.0, 2.0, 3.0]), Y(torch.tensor([0.0, 0.0, 0.0])))
    mae.update(torch.tensor([10.0]), Y(torch.tensor([0.0])))
    assert mae.compute() == pytest.approx((2.0 + 10.0) / 2)
    mae.reset()
    assert mae.compute() == 0.0


# ------------------------------------------------------------------------------------------------ TSP F1


@pytest.mark.parametrize("seed", range(8))
def test_binary_f1_equals_sklearn(seed):
    gen = torch.Generator().manual_seed(seed)
    n = int(torch.randint(1, 40, (), generator=gen))
    scores = torch.randn(n, 2, generator=gen)
    y = (torch.rand(n, generator=gen) < 0.2 * (seed % 4)).long()  # includes batches without positives
    expected = f1_score(y.numpy(), scores.argmax(1).numpy(), average="binary", zero_division=0)
    assert float(binary_f1(scores, y)) == pytest.approx(expected)


def test_f1_is_a_mean_over_batches():
    s1, y1 = F.one_hot(torch.tensor([1, 1, 0, 0]), 2).float(), torch.tensor([1, 0, 0, 1])  # F1 = 0.5
    s2, y2 = F.one_hot(torch.tensor([1]), 2).float(), torch.tensor([1])  # F1 = 1
    metric = F1()
    metric.update(s1, Y(y1))
    metric.update(s2, Y(y2))
    assert metric.compute() == pytest.approx(0.75) and not metric.name.endswith("%")


# ------------------------------------------------------------------------------------------------ multitask


class MultiBatch:
    def __init__(self, y, y_graph, batch):
        self.y, self.y_graph, self.batch = y, y_graph, batch
        self.num_nodes, self.num_graphs = batch.numel(), int(batch.max()) + 1


def test_multitask_loss_transcribes_the_original():
    torch.manual_seed(0)
    batch = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2])
    node_scores, y = torch.randn(9, 3), torch.randn(9, 3)
    graph_scores, y_graph = torch.randn(3, 3), torch.randn(3, 3)
    config_batch_size = 4  # the original normalises by the configured batch size, not the 3 graphs here
    avg_nodes = 9 / config_batch_size
    node_parts = []
    for t in range(3):  # original: per task, squared errors summed per graph / avg_nodes, mean over graphs
        per_graph = [((node_scores[batch == g, t] - y[batch == g, t]) ** 2).sum() / avg_nodes for g in range(3)]
        node_parts.append(torch.stack(per_graph).mean())
    graph_parts = [((graph_scores[:, t] - y_graph[:, t]) ** 2).mean() for t in range(3)]
    expected = torch.stack(node_parts + graph_parts)
    got = multitask_parts((node_scores, graph_scores), MultiBatch(y, y_graph, batch), config_batch_size)
    torch.testing.assert_close(got, expected)
    loss = get_loss("multitask_mse", {"batch_size": config_batch_size})
    torch.testing.assert_close(loss((node_scores, graph_scores), MultiBatch(y, y_graph, batch)), expected.mean())
    metric = get_metric("log10_mse", {"batch_size": config_batch_size})
    metric.update((node_scores, graph_scores), MultiBatch(y, y_graph, batch))
    metric.update((node_scores * 0, graph_scores * 0), MultiBatch(y, y_graph, batch))
    second = multitask_parts((node_scores * 0, graph_scores * 0), MultiBatch(y, y_graph, batch), config_batch_size)
    epoch_means = (expected + second) / 2
    assert metric.compute() == pytest.approx(float(torch.log10(epoch_means.mean())), rel=1e-6)
    assert list(metric.per_task()) == ["sssp", "eccentricity", "graph_laplacian_features", "is_connected", "diameter",
                                       "spectral_radius"]
    from gnnbench.data.generators.graph_theory_prop import GRAPH_TARGETS, NODE_TARGETS

    assert metric.TASKS == NODE_TARGETS + GRAPH_TARGETS  # the generator's target columns, in order
    assert list(metric.per_task().values()) == pytest.approx(torch.log10(epoch_means).tolist(), rel=1e-5, abs=1e-6)


# ------------------------------------------------------------------------------------------------ COLLAB


def test_link_loss_and_hits_at_k():
    scores = torch.tensor([3.0, -1.0, 0.5, 2.0, -2.0, 0.0])
    y = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    p = torch.sigmoid(scores)
    expected = -torch.log(p[:3] + 1e-15).mean() - torch.log(1 - p[3:] + 1e-15).mean()
    torch.testing.assert_close(get_loss("link_bce")(scores, Y(y)), expected)
    torch.manual_seed(1)
    hits = HitsAtK()
    pos, neg = torch.randn(300), torch.randn(500)
    hits.update(torch.cat([pos[:100], neg[:200]]), Y(torch.cat([torch.ones(100), torch.zeros(200)])))
    hits.update(torch.cat([pos[100:], neg[200:]]), Y(torch.cat([torch.ones(200), torch.zeros(300)])))
    kth_best_negative = sorted(neg.tolist(), reverse=True)[49]  # OGB: positives above the 50th best negative
    assert hits.compute() == pytest.approx(sum(v > kth_best_negative for v in pos.tolist()) / 300)
