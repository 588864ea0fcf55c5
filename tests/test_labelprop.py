"""Label propagation (Shchur et al.; the released code's ``gnnbench/models/labelprop.py``): both variants against a
dense numpy reference over several steps, clamping of the training rows, the state as logits, and configuration
errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gnnbench.errors import ConfigError
from gnnbench.models.labelprop import LabelPropagation
from gnnbench.models.stacked import NodeGraph


def _graph(self_loop: bool) -> tuple[NodeGraph, np.ndarray]:
    """12 nodes, 3 classes, undirected edges stored both ways; node 11 isolated; optionally a self loop at 6."""
    pairs = {(i, i + 1) for i in range(10)} | {(0, 5), (2, 7), (3, 9), (1, 8)}
    src = [a for a, b in pairs] + [b for a, b in pairs]
    dst = [b for a, b in pairs] + [a for a, b in pairs]
    if self_loop:
        src.append(6)
        dst.append(6)
    adjacency = np.zeros((12, 12))
    adjacency[dst, src] = 1.0
    features = torch.zeros(12, 2).to_sparse_csr()
    graph = NodeGraph(12, torch.tensor([src, dst]), features, 3)
    return graph, adjacency


def _reference(adjacency: np.ndarray, labels: np.ndarray, train: np.ndarray, variant: str, alpha: float,
               steps: int) -> list[np.ndarray]:
    n = adjacency.shape[0]
    y0 = np.zeros((n, 3))
    y0[train, labels[train]] = 1.0
    a = adjacency.copy()
    if variant == "smoothed":
        np.fill_diagonal(a, 0.0)  # the original's normalize_adj removes self loops
    degree = np.maximum(a.sum(1), 1.0)
    y, states = y0.copy(), []
    for _ in range(steps):
        if variant == "vanilla":
            y = (a @ y) / degree[:, None]
            y[train] = y0[train]
        else:
            y = (1 - alpha) * (a / np.sqrt(degree)[:, None] / np.sqrt(degree)[None, :]) @ y + alpha * y0
        states.append(y.copy())
    return states


@pytest.mark.parametrize("variant", ["vanilla", "smoothed"])
@pytest.mark.parametrize("self_loop", [False, True])
def test_propagation_matches_dense_reference_over_steps(variant, self_loop):
    graph, adjacency = _graph(self_loop)
    labels = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2])
    train = np.array([0, 4, 8, 9])
    model = LabelPropagation(graph, torch.tensor(labels), torch.tensor(train), variant, 0.05)
    expected = _reference(adjacency, labels, train, variant, 0.05, steps=6)
    initial = np.zeros((12, 3))
    initial[train, labels[train]] = 1
    np.testing.assert_array_equal(model.state.numpy(), initial)
    for want in expected:
        model.step()
        np.testing.assert_allclose(model.state.numpy(), want, rtol=1e-5, atol=1e-7)
    assert np.abs(model.state.numpy()[[1, 2, 3]]).sum() > 0  # labels reached unlabelled nodes
    np.testing.assert_array_equal(model.state.numpy()[11], 0)  # the isolated node stays 0
    if self_loop and variant == "vanilla":  # the stored loop counts in D⁻¹A (the released code uses A as given)
        loopless = _reference(adjacency - np.diag(np.diag(adjacency)), labels, train, variant, 0.05, 6)[-1]
        assert not np.allclose(model.state.numpy(), loopless)


def test_vanilla_clamps_training_rows_and_smoothed_does_not():
    graph, _ = _graph(False)
    labels = torch.tensor([2, 1, 0, 0, 1, 2, 0, 1, 2, 0, 1, 2])
    train = torch.tensor([1, 3, 6])
    vanilla = LabelPropagation(graph, labels, train, "vanilla", 0.2)
    smoothed = LabelPropagation(graph, labels, train, "smoothed", 0.2)
    for _ in range(5):
        vanilla.step()
        smoothed.step()
    one_hot = torch.nn.functional.one_hot(labels[train], 3).float()
    assert torch.equal(vanilla.state[train], one_hot)
    assert not torch.allclose(smoothed.state[train], one_hot)
    assert torch.equal(vanilla.state[train].argmax(1), labels[train])


def test_state_is_settable_and_logits_read_its_rows():
    graph, _ = _graph(False)
    model = LabelPropagation(graph, torch.zeros(12, dtype=torch.long), torch.tensor([0]), "vanilla", 0.0)
    best = model.state.clone()
    model.step()
    model.step()
    assert not torch.equal(model.state, best)
    model.state = best
    logits = model.logits(torch.tensor([3, 0, 3]))
    assert logits.shape == (1, 3, 3)
    assert torch.equal(logits[0], best[[3, 0, 3]])
    assert model.logits(None).shape == (1, 12, 3)


def test_errors():
    graph, _ = _graph(False)
    with pytest.raises(ConfigError, match="prop_type"):
        LabelPropagation(graph, torch.zeros(12, dtype=torch.long), torch.tensor([0]), "personalized", 0.1)
    with pytest.raises(ConfigError, match="return_prob"):
        LabelPropagation(graph, torch.zeros(12, dtype=torch.long), torch.tensor([0]), "smoothed", 1.5)
