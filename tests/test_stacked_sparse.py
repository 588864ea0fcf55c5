"""Sparse primitives of the stacked models (gnnbench.models.sparse): bags of weighted rows with their prebuilt
transposes against dense products and autograd, replicated and row-selected patterns, Bernoulli positions and
dropout masks against their distributions, bipartite attention blocks against a dense softmax, and the padded
maximum over stacked message sets."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gnnbench.models.sparse import (
    AttentionGraph,
    BagPlan,
    CSRPattern,
    MaxPlan,
    attention_heads,
    bag_mm,
    bernoulli_mask,
    bernoulli_positions,
    dropout_mask,
)


def _random_pattern(rows: int, cols: int, density: float, seed: int, values: bool) -> tuple[CSRPattern, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    dense = (torch.rand(rows, cols, generator=g) < density).float()
    dense[1] = 0  # an empty row
    if values:
        dense *= torch.rand(rows, cols, generator=g) + 0.5
    return CSRPattern.from_sparse(dense.to_sparse_csr()), dense


@pytest.mark.parametrize("values", [False, True])
def test_replicated_pattern_and_its_backward_equal_block_dense_products(values):
    pattern, dense = _random_pattern(7, 5, 0.4, 0, values)
    blocks = 3
    table = torch.randn(blocks, 5, 4, requires_grad=True)
    out = bag_mm(pattern.replicate(blocks), table.reshape(blocks * 5, 4)).view(blocks, 7, 4)
    expected = torch.matmul(dense, table)
    torch.testing.assert_close(out, expected)
    upstream = torch.randn(blocks, 7, 4)
    (grad,) = torch.autograd.grad((out * upstream).sum(), table)
    torch.testing.assert_close(grad, torch.matmul(dense.t(), upstream))
    assert pattern.replicate(blocks) is pattern.replicate(blocks)  # cached per number of blocks


def test_bag_mm_with_learnable_weights_and_lazy_transpose():
    g = torch.Generator().manual_seed(1)
    index = torch.tensor([4, 0, 2, 2, 1, 4, 3, 0])  # a repeated row inside bag 1; bag 3 empty
    offsets = torch.tensor([0, 2, 5, 8])
    plan = BagPlan(index, offsets, num_table_rows=5)
    weights = torch.rand(8, generator=g).requires_grad_()
    table = torch.randn(5, 3, generator=g).requires_grad_()
    out = bag_mm(plan, table, weights)
    bags = torch.tensor([0, 0, 1, 1, 1, 2, 2, 2])
    matrix = torch.zeros(4, 5).index_put((bags, index), weights, accumulate=True)
    torch.testing.assert_close(out, matrix @ table)
    assert torch.equal(out[3], torch.zeros(3))
    upstream = torch.randn(4, 3, generator=g)
    got = torch.autograd.grad((out * upstream).sum(), [table, weights])
    reference = torch.autograd.grad(((matrix @ table) * upstream).sum(), [table, weights])
    for a, b in zip(got, reference, strict=True):
        torch.testing.assert_close(a, b)


def test_select_rows_and_renumber_columns():
    pattern, dense = _random_pattern(8, 8, 0.35, 2, True)
    rows = torch.tensor([6, 1, 3, 6])
    columns = torch.unique(pattern.select(rows).col)
    column_map = torch.full((8,), -1)
    column_map[columns] = torch.arange(columns.numel())
    block = pattern.select(rows, column_map, columns.numel())
    x = torch.randn(1, columns.numel(), 2)
    out = bag_mm(block.replicate(1), x[0]).view(1, 4, 2)
    full = torch.zeros(8, 2)
    full[columns] = x[0]
    torch.testing.assert_close(out[0], dense[rows] @ full)


def test_bernoulli_positions_are_sorted_distinct_and_bernoulli():
    torch.manual_seed(0)
    for n, p in [(200_000, 0.2), (200_000, 0.7), (50, 0.999), (3, 0.5)]:
        pos = bernoulli_positions(n, p)
        assert pos.dtype == torch.int64
        assert bool((pos[1:] > pos[:-1]).all()) and (pos.numel() == 0 or (0 <= int(pos[0]) and int(pos[-1]) < n))
        if n >= 1000:
            assert abs(pos.numel() / n - p) < 5 * math.sqrt(p * (1 - p) / n)
            # gaps between successes are geometric: P(gap = k) = (1 − p)^k p
            gaps = torch.diff(pos) - 1
            observed = torch.bincount(gaps, minlength=6)[:6].double()
            expected = torch.tensor([(1 - p) ** k * p for k in range(6)], dtype=torch.float64) * gaps.numel()
            assert float(((observed - expected) ** 2 / expected).sum()) < 40  # χ², 6 cells: 40 ≫ the 99.9 % point
            # and every position is equally likely: successes fall evenly into 10 slices
            counts = torch.bincount(pos * 10 // n, minlength=10).double()
            assert float(((counts - counts.mean()) ** 2 / counts.mean()).sum()) < 40
    assert bernoulli_positions(0, 0.5).numel() == 0
    assert bernoulli_positions(10, 0.0).numel() == 0
    assert torch.equal(bernoulli_positions(10, 1.0), torch.arange(10))


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_dropout_mask_values_and_rate(p):
    torch.manual_seed(1)
    mask = dropout_mask((50, 40, 30), p)
    assert mask.shape == (50, 40, 30)
    values = torch.unique(mask)
    torch.testing.assert_close(values, torch.tensor([0.0, 1 / (1 - p)]))
    n = mask.numel()
    assert abs(float((mask > 0).float().mean()) - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n)
    assert abs(float(mask.mean()) - 1.0) < 5 * math.sqrt(p / (1 - p) / n)


def test_bipartite_attention_heads_against_dense_softmax():
    g = torch.Generator().manual_seed(3)
    n_dst, n_src, heads, d = 4, 6, 3, 2
    adjacency = (torch.rand(n_dst, n_src, generator=g) < 0.5).float()
    adjacency[:, 0] = 1  # every target has a source
    dst, src = torch.nonzero(adjacency, as_tuple=True)
    graph = AttentionGraph(torch.stack([src, dst]), n_dst, num_src=n_src)
    z = torch.randn(heads, n_src, d, generator=g).requires_grad_()
    el = torch.randn(heads, n_src, generator=g).requires_grad_()
    er = torch.randn(heads, n_dst, generator=g).requires_grad_()
    mask = (torch.rand(heads, graph.num_edges, generator=g) < 0.7).float() / 0.7  # CSR edge order = (dst, src)
    upstream = torch.randn(heads, n_dst, d, generator=g)
    for drop in (None, mask):
        out = attention_heads(z, el, er, graph, 0.2, drop)
        scores = torch.nn.functional.leaky_relu(er[:, :, None] + el[:, None, :], 0.2)
        alpha = torch.softmax(scores.masked_fill(adjacency == 0, float("-inf")), dim=2)
        if drop is not None:
            dense_mask = torch.zeros(heads, n_dst, n_src)
            dense_mask[:, dst, src] = drop
            alpha = alpha * dense_mask
        expected = alpha @ z
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)
        got = torch.autograd.grad((out * upstream).sum(), [z, el, er])
        want = torch.autograd.grad((expected * upstream).sum(), [z, el, er])
        for a, b in zip(got, want, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_padded_max_over_stacked_message_sets():
    g = torch.Generator().manual_seed(4)
    neighbours = {0: [1, 2, 5], 1: [0], 2: [3, 4, 5, 1, 0], 3: []}  # targets → message rows (6 of them)
    rows = torch.tensor([j for i in range(4) for j in neighbours[i]])
    degree = torch.tensor([len(neighbours[i]) for i in range(4)])
    crow = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(degree, 0)])
    plan = MaxPlan(rows, 6, crow, degree)
    messages = torch.rand(3, 6, 5, generator=g).requires_grad_()
    out = plan.max(messages)
    expected = torch.stack([torch.stack([messages[b, neighbours[i]].max(0).values if neighbours[i]
                                         else torch.zeros(5) for i in range(4)]) for b in range(3)])
    torch.testing.assert_close(out, expected)
    upstream = torch.randn(3, 4, 5, generator=g)
    (got,) = torch.autograd.grad((out * upstream).sum(), messages)
    (want,) = torch.autograd.grad((expected * upstream).sum(), messages)
    torch.testing.assert_close(got, want)
    two_dim = plan.max(messages[1].detach())  # the 2-D form (one message set) gives the same numbers
    torch.testing.assert_close(two_dim, expected[1].detach())
    assert np.isfinite(two_dim.numpy()).all()


def test_bernoulli_mask_rate_independence_and_edges():
    torch.manual_seed(2)
    for keep in (0.4, 0.7, 0.03):
        n = 400_001  # odd: the last word is half used
        mask = bernoulli_mask((n,), keep)
        assert mask.dtype == torch.bool and mask.shape == (n,)
        assert abs(float(mask.float().mean()) - keep) < 5 * math.sqrt(keep * (1 - keep) / n)
        # the two trials of one random word, and neighbouring words, are independent: P(both) = keep²
        pairs = mask[: n - 1].view(-1, 2).float()
        assert abs(float((pairs[:, 0] * pairs[:, 1]).mean()) - keep**2) < 5 * math.sqrt(keep**2 / pairs.shape[0])
        shifted = mask[:-2].float() * mask[2:].float()
        assert abs(float(shifted.mean()) - keep**2) < 5 * math.sqrt(keep**2 / shifted.numel())
        # every slice of the stream is equally likely to succeed
        counts = mask.view(-1)[:400_000].view(10, -1).float().sum(1)
        expected = keep * 40_000
        assert float(((counts - expected) ** 2 / (expected * (1 - keep))).sum()) < 40
    assert bool(bernoulli_mask((3, 4), 1.0).all()) and not bool(bernoulli_mask((3, 4), 0.0).any())
    torch.manual_seed(5)
    first = bernoulli_mask((1000,), 0.5)
    torch.manual_seed(5)
    assert torch.equal(first, bernoulli_mask((1000,), 0.5))  # from the global torch RNG
    assert not torch.equal(first, bernoulli_mask((1000,), 0.5))


def test_attention_heads_with_dropout_on_z_against_dense_softmax():
    g = torch.Generator().manual_seed(6)
    n_dst, n_src, heads, d = 5, 7, 4, 3
    adjacency = (torch.rand(n_dst, n_src, generator=g) < 0.5).float()
    adjacency[:, 2] = 1
    dst, src = torch.nonzero(adjacency, as_tuple=True)
    graph = AttentionGraph(torch.stack([src, dst]), n_dst, num_src=n_src)
    z = torch.randn(heads, n_src, d, generator=g).requires_grad_()
    el = torch.randn(heads, n_src, generator=g).requires_grad_()
    er = torch.randn(heads, n_dst, generator=g).requires_grad_()
    z_mask = (torch.rand(heads, n_src, d, generator=g) < 0.6).float() / 0.6
    edge_mask = (torch.rand(graph.num_edges, heads, generator=g) < 0.7).float() / 0.7  # edge-major, as GAT draws it
    upstream = torch.randn(heads, n_dst, d, generator=g)
    for mask in (None, edge_mask.t()):
        out = attention_heads(z, el, er, graph, 0.2, mask, z_mask)
        scores = torch.nn.functional.leaky_relu(er[:, :, None] + el[:, None, :], 0.2)
        alpha = torch.softmax(scores.masked_fill(adjacency == 0, float("-inf")), dim=2)
        if mask is not None:
            dense_mask = torch.zeros(heads, n_dst, n_src)
            dense_mask[:, dst, src] = mask
            alpha = alpha * dense_mask
        expected = alpha @ (z * z_mask)  # the scores see z without its dropout
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)
        got = torch.autograd.grad((out * upstream).sum(), [z, el, er])
        want = torch.autograd.grad((expected * upstream).sum(), [z, el, er])
        for a, b in zip(got, want, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("stacked", [False, True])  # (rows, d): the CSR max product; (B, rows, d): padded blocks
def test_padded_max_sends_each_gradient_to_one_of_tied_rows(stacked):
    # target 0 reads rows 1 and 2, which are equal; target 1 reads row 3 twice (a padded or repeated entry);
    # target 2 reads nothing
    rows = torch.tensor([1, 2, 3, 3])
    degree = torch.tensor([2, 2, 0])
    crow = torch.tensor([0, 2, 4, 4])
    plan = MaxPlan(rows, 4, crow, degree)
    messages = torch.tensor([[5.0, 0.0], [1.0, 2.0], [1.0, 2.0], [3.0, 0.5]])
    messages = (messages.expand(2, -1, -1) if stacked else messages).clone().requires_grad_()
    out = plan.max(messages)
    torch.testing.assert_close(out, torch.tensor([[1.0, 2.0], [3.0, 0.5], [0.0, 0.0]]).expand_as(out))
    upstream = torch.tensor([[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]]).expand_as(out)
    (grad,) = torch.autograd.grad((out * upstream).sum(), messages)
    grad = grad.reshape(-1, 4, 2)
    for g in grad:
        assert torch.equal(g[0], torch.zeros(2))  # nothing from the node without in-edges either
        assert torch.equal(g[1] + g[2], upstream[..., 0, :].reshape(-1, 2)[0])  # to one of the tied rows, once
        assert bool(((g[1] == 0) | (g[2] == 0)).all())
        assert torch.equal(g[3], upstream[..., 1, :].reshape(-1, 2)[0])  # once, though the row is read twice
