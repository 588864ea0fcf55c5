"""GAT's lean attention (no attention dropout): the same values and gradients as the sparse attention kernel and a
plain-autograd reference, and what it keeps for the backward (one float and one bool per edge and head)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gnnbench.models.gat import GATLayer, lean_attention
from gnnbench.models.sparse import AttentionGraph, attention, scatter_sum, segment_softmax


def _reference(z, el, er, edge_index, slope):
    """Softmax attention with plain autograd ops: one gathered message per edge."""
    src, dst = edge_index
    n, heads = el.shape
    alpha = segment_softmax(F.leaky_relu(el[src] + er[dst], slope), dst, n)
    return scatter_sum(z.view(n, heads, -1)[src] * alpha.unsqueeze(-1), dst, n).reshape(n, -1)


def _edges(layout: str) -> tuple[int, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    n = 40
    edges = torch.randint(0, n - 1, (2, 400), generator=g)  # node n − 1: no edges at all
    edges = torch.cat([edges, edges[:, :5]], dim=1)  # parallel edges count separately in the softmax
    if layout == "source-sorted":
        edges = edges[:, torch.argsort(edges[0] * n + edges[1])]
    return n, edges


def _inputs(n: int, heads: int, d: int, dtype: torch.dtype) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(2)
    return [torch.randn(n, heads * d, dtype=dtype, generator=g).requires_grad_(),
            torch.randn(n, heads, dtype=dtype, generator=g).requires_grad_(),
            torch.randn(n, heads, dtype=dtype, generator=g).requires_grad_()]


@pytest.mark.parametrize("layout", ["unsorted", "source-sorted"])
@pytest.mark.parametrize("heads", [1, 3])
def test_lean_attention_equals_sparse_kernel_and_reference_float64(layout, heads):
    n, edge_index = _edges(layout)
    graph = AttentionGraph(edge_index, n)
    inputs = _inputs(n, heads, 4, torch.float64)
    out = lean_attention(*inputs, graph, 0.2)
    kernel = attention(*inputs, graph, 0.2)
    reference = _reference(*inputs, edge_index, 0.2)
    assert torch.equal(out, kernel)  # the same products in the same order
    torch.testing.assert_close(out, reference)
    probe = torch.randn_like(out)
    grads = torch.autograd.grad((out * probe).sum(), inputs)
    for expected in (torch.autograd.grad((kernel * probe).sum(), inputs),
                     torch.autograd.grad((reference * probe).sum(), inputs)):
        for a, b in zip(grads, expected, strict=True):
            torch.testing.assert_close(a, b)
    assert torch.autograd.gradcheck(lambda *xs: lean_attention(*xs, graph, 0.2), inputs, fast_mode=True)


def test_lean_attention_equals_sparse_kernel_bitwise_in_float32():
    n, edge_index = _edges("source-sorted")
    graph = AttentionGraph(edge_index, n)
    inputs = _inputs(n, 8, 5, torch.float32)
    out, kernel = lean_attention(*inputs, graph, 0.2), attention(*inputs, graph, 0.2)
    assert torch.equal(out, kernel)
    probe = torch.randn_like(out)
    for a, b in zip(torch.autograd.grad((out * probe).sum(), inputs),
                    torch.autograd.grad((kernel * probe).sum(), inputs), strict=True):
        assert torch.equal(a, b)


def test_lean_attention_keeps_one_float_and_one_bool_per_edge_and_head():
    n, edge_index = _edges("source-sorted")
    heads, d, e = 4, 3, edge_index.shape[1]
    graph = AttentionGraph(edge_index, n)
    z, el, er = (x.detach() for x in _inputs(n, heads, d, torch.float32))
    z.requires_grad_()
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        lean_attention(z, el, er, graph, 0.2)
    per_edge = [t for t in saved if t.numel() == heads * e]
    assert sorted(str(t.dtype) for t in per_edge) == ["torch.bool", "torch.float32"]
    node_level = sum(t.numel() for t in saved if t.numel() != heads * e)
    assert node_level <= 3 * n * heads * (d + 1)  # [z, 1], the output and the denominators


def test_gat_layer_without_dropout_uses_lean_attention_with_identical_training_step():
    torch.manual_seed(0)
    n, edge_index = _edges("unsorted")
    graph = AttentionGraph(edge_index, n)
    layer = GATLayer(12, 3, 4, dropout=0.0, batch_norm=True, residual=True).double().train()
    h = torch.randn(n, 12, dtype=torch.float64, requires_grad=True)
    out = layer(h, graph)
    probe = torch.randn_like(out)
    grads = torch.autograd.grad((out * probe).sum(), [h, *layer.parameters()])
    # the same layer through the sparse kernel (as with attention dropout, here p = 0)
    heads, d = layer.heads, layer.head_dim
    w = layer.fc.weight
    per_head = w.view(heads, d, -1)
    fused = torch.cat([w, torch.einsum("hd,hdi->hi", layer.attn_l[0], per_head),
                       torch.einsum("hd,hdi->hi", layer.attn_r[0], per_head)])
    z, el, er = (h @ fused.t()).split([heads * d, heads, heads], dim=1)
    conv = attention(z, el, er, graph, 0.2) + layer.bias
    expected = h + F.elu(layer.batchnorm_h(conv))
    torch.testing.assert_close(out, expected)
    for a, b in zip(grads, torch.autograd.grad((expected * probe).sum(), [h, *layer.parameters()]), strict=True):
        torch.testing.assert_close(a, b)


def test_lean_attention_without_edges_gives_zeros():
    graph = AttentionGraph(torch.zeros(2, 0, dtype=torch.int64), 5)
    z, el, er = _inputs(5, 2, 3, torch.float64)
    out = lean_attention(z, el, er, graph, 0.2)
    assert torch.equal(out, torch.zeros(5, 6, dtype=torch.float64))
