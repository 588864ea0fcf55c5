"""The stacked trainer's per-epoch helpers give exactly the numbers of their straightforward forms: the best-weight
copy by runs of rows (``index_copy_``), and the scores read from a contiguous copy of strided logits
(``F.cross_entropy`` / ``argmax`` over the logits as given)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gnnbench.training.init_stack import copy_rows, masked_scores, row_spans


def test_row_spans_group_consecutive_rows():
    assert row_spans(torch.tensor([], dtype=torch.int64)) == []
    assert row_spans(torch.tensor([0, 1, 2, 3])) == [(0, 4)]
    assert row_spans(torch.tensor([1, 2, 4, 6, 7, 8])) == [(1, 2), (4, 1), (6, 3)]


@pytest.mark.parametrize("rows", [[0, 1, 2, 3, 4, 5], [2], [0, 2, 3, 5], [1, 2, 3, 4]])
def test_copy_rows_equals_index_copy(rows):
    generator = torch.Generator().manual_seed(0)
    src = torch.randn(6, 5, 3, generator=generator)
    dst = torch.randn(6, 5, 3, generator=generator)
    expected = dst.clone().index_copy_(0, torch.tensor(rows), src.index_select(0, torch.tensor(rows)))
    copy_rows(dst, src, row_spans(torch.tensor(rows)))
    assert torch.equal(dst, expected)


def _reference_scores(logits, targets):
    runs, nodes, classes = logits.shape
    ce = F.cross_entropy(logits.reshape(runs * nodes, classes), targets.repeat(runs), reduction="none")
    accuracy = (logits.argmax(dim=2) == targets).double().mean(dim=1) * 100.0
    return ce.view(runs, nodes).mean(dim=1), accuracy


@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("shape", [(20, 210, 7), (3, 50, 3), (5, 33, 41)])
def test_masked_scores_of_strided_logits_equal_the_direct_computation(shape, strided):
    runs, nodes, classes = shape
    generator = torch.Generator().manual_seed(1)
    logits = torch.randn(runs, classes, nodes, generator=generator).mul_(4).transpose(1, 2)  # a transposed product
    if not strided:
        logits = logits.contiguous()
    logits[0, :3] = 0.5  # ties: the first maximal class counts, as argmax
    targets = torch.randint(0, classes, (nodes,), generator=generator)
    leaf, reference_leaf = logits.clone().requires_grad_(), logits.clone().requires_grad_()
    loss, accuracy = masked_scores(leaf, targets)
    expected_loss, expected_accuracy = _reference_scores(reference_leaf, targets)
    assert torch.equal(loss, expected_loss) and torch.equal(accuracy, expected_accuracy)
    (loss * torch.arange(1.0, runs + 1)).sum().backward()
    (expected_loss * torch.arange(1.0, runs + 1)).sum().backward()
    assert torch.equal(leaf.grad, reference_leaf.grad)


def test_replicated_parent_entries_gather_the_subset_of_every_block():
    from gnnbench.models.sparse import CSRPattern

    generator = torch.Generator().manual_seed(2)
    dense = (torch.rand(9, 6, generator=generator) < 0.4).float()
    parent = CSRPattern.from_sparse(dense.to_sparse_csr())
    subset = parent.select(torch.tensor([1, 4, 7, 8]))
    blocks = 3
    mask = torch.rand(blocks * parent.nnz, generator=generator) < 0.5
    entries = subset.replicated_parent_entries(blocks, parent.nnz)
    expected = mask.view(blocks, -1).index_select(1, subset.parent_entries).reshape(-1)
    assert torch.equal(mask.index_select(0, entries), expected)
    assert subset.replicated_parent_entries(blocks, parent.nnz) is entries  # cached
