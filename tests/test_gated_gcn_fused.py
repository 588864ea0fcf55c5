"""GatedGCN's hand-written gate and edge tail (:class:`_GatedEdges`) against the plain autograd formulation of the same
layer, written out here; and what they keep for the backward."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.models import gated_gcn
from gnnbench.models.gated_gcn import GatedGCNLayer, _edge_rows


def reference_layer(layer: GatedGCNLayer, bn_h: nn.BatchNorm1d, bn_e: nn.BatchNorm1d, h, e, edge_index):
    """The layer as the benchmark writes it, one autograd op at a time (module docstring of gated_gcn)."""
    src, dst = edge_index
    Ah, Bh, Dh, Eh = (m(h) for m in (layer.A, layer.B, layer.D, layer.E))
    e_hat = Dh[src] + layer.C(e) + Eh[dst]
    sigma = torch.sigmoid(e_hat)
    num = torch.zeros_like(Ah).index_add_(0, dst, sigma * Bh[src])
    den = torch.zeros_like(Ah).index_add_(0, dst, sigma)
    h_new = torch.relu(bn_h(Ah + num / (den + 1e-6)))
    e_new = torch.relu(bn_e(e_hat))
    if layer.residual:
        h_new, e_new = h + h_new, e + e_new
    return h_new, e_new


def graph(num_nodes=40, num_edges=300, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, num_nodes, (2, num_edges), generator=g)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("residual", [True, False])
@pytest.mark.parametrize("constant_edges", [True, False])
def test_fused_layer_matches_autograd_values_gradients_and_running_stats(monkeypatch, training, residual,
                                                                         constant_edges):
    monkeypatch.setattr(gated_gcn._GatedEdges, "CHUNK", 37)  # many chunks, a ragged last one
    torch.manual_seed(0)
    edge_index = graph()
    layer = GatedGCNLayer(6, 6, dropout=0.0, batch_norm=True, residual=residual).double().train(training)
    for bn in (layer.bn_node_h, layer.bn_node_e):
        bn.weight.data.uniform_(0.5, 1.5), bn.bias.data.normal_(), bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2.0)
    bn_h, bn_e = (nn.BatchNorm1d(6).double().train(training) for _ in range(2))
    bn_h.load_state_dict(layer.bn_node_h.state_dict()), bn_e.load_state_dict(layer.bn_node_e.state_dict())
    bn_h.weight, bn_h.bias = layer.bn_node_h.weight, layer.bn_node_h.bias  # shared parameters: one gradient
    bn_e.weight, bn_e.bias = layer.bn_node_e.weight, layer.bn_node_e.bias
    h = torch.randn(40, 6, dtype=torch.float64, requires_grad=True)
    row = torch.randn(1, 6, dtype=torch.float64, requires_grad=True)
    e = row.expand(300, -1) if constant_edges else torch.randn(300, 6, dtype=torch.float64, requires_grad=True)
    inputs = [h, row if constant_edges else e, *layer.parameters()]
    gh, ge = torch.randn(40, 6, dtype=torch.float64), torch.randn(300, 6, dtype=torch.float64)

    fused = layer(h, e, edge_index)
    grads = torch.autograd.grad((fused[0] * gh).sum() + (fused[1] * ge).sum(), inputs)
    plain = reference_layer(layer, bn_h, bn_e, h, e, edge_index)
    expected = torch.autograd.grad((plain[0] * gh).sum() + (plain[1] * ge).sum(), inputs)

    for a, b in zip((*fused, *grads), (*plain, *expected), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)
    for ours, theirs in ((layer.bn_node_e, bn_e), (layer.bn_node_h, bn_h)):  # each updated once per batch
        torch.testing.assert_close(ours.running_mean, theirs.running_mean, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(ours.running_var, theirs.running_var, rtol=1e-12, atol=1e-12)
        assert int(ours.num_batches_tracked) == int(theirs.num_batches_tracked) == int(training)


def test_float32_layer_differs_from_autograd_only_by_rounding():
    """The documented bound: float32 outputs and gradients (values of order 1) within 1e-4 relative / 1e-5 absolute of
    the autograd formulation, with one torch thread or several (sums split across threads round differently)."""
    torch.manual_seed(1)
    edge_index = graph(200, 5000, seed=1)
    layer = GatedGCNLayer(16, 16, dropout=0.0, batch_norm=True, residual=True).train()
    bn_h, bn_e = nn.BatchNorm1d(16), nn.BatchNorm1d(16)
    bn_h.weight, bn_h.bias, bn_e.weight, bn_e.bias = (layer.bn_node_h.weight, layer.bn_node_h.bias,
                                                      layer.bn_node_e.weight, layer.bn_node_e.bias)
    h = torch.randn(200, 16, requires_grad=True)
    e = torch.randn(5000, 16, requires_grad=True)
    target = torch.randn(200, 16), torch.randn(5000, 16)
    fused, plain = layer(h, e, edge_index), reference_layer(layer, bn_h, bn_e, h, e, edge_index)
    inputs = [h, e, *layer.parameters()]
    grads = torch.autograd.grad(sum(F.mse_loss(o, t) for o, t in zip(fused, target, strict=True)), inputs)
    expected = torch.autograd.grad(sum(F.mse_loss(o, t) for o, t in zip(plain, target, strict=True)), inputs)
    for a, b in zip((*fused, *grads), (*plain, *expected), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def edge_sized_saved(run, num_edges: int) -> set[int]:
    """Storages of the (num_edges, ·) tensors autograd keeps for the backward while ``run()`` builds the graph."""
    storages: set[int] = set()

    def pack(t):
        if t.dim() == 2 and t.shape[0] == num_edges:
            storages.add(t.untyped_storage().data_ptr())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        run()
    return storages


def test_a_layer_keeps_only_its_edge_input_for_the_backward():
    torch.manual_seed(0)
    edge_index = graph(50, 400)
    layer = GatedGCNLayer(8, 8, dropout=0.0, batch_norm=True, residual=True).train()
    h, e = torch.randn(50, 8, requires_grad=True), torch.randn(400, 8, requires_grad=True)
    kept = edge_sized_saved(lambda: layer(h, e, edge_index), 400)
    assert kept == {e.untyped_storage().data_ptr()}  # the edge input (for C's gradient and ê), nothing else
    row = torch.randn(1, 8, requires_grad=True)
    assert not edge_sized_saved(lambda: layer(h, row.expand(400, -1), edge_index), 400)  # a constant input: nothing
    bn_h, bn_e = nn.BatchNorm1d(8), nn.BatchNorm1d(8)
    plain = edge_sized_saved(lambda: reference_layer(layer, bn_h, bn_e, h, e, edge_index), 400)
    assert len(plain) >= 5  # autograd keeps C e's input, the gathers' products, σ, BN's input, ReLU's output


def test_edge_rows_round_storage_to_eight_classes_per_power_of_two():
    like = torch.empty(0, 3)
    for rows in (5000, 700_001, 716_800, 749_999):
        t = _edge_rows(rows, like)
        capacity = t.untyped_storage().nbytes() // (3 * 4)
        assert t.shape == (rows, 3) and rows <= capacity <= rows * 1.125
    # batches a few per cent apart ask malloc for the same block
    sizes = {_edge_rows(rows, like).untyped_storage().nbytes() for rows in (700_001, 716_800, 720_000)}
    assert len(sizes) == 1
    assert _edge_rows(100, like).untyped_storage().nbytes() == 100 * 3 * 4  # small: exact


def test_the_backward_allocates_one_edge_sized_tensor_per_layer():
    """The gradient reaching ê through the tail is consumed chunk by chunk; the residual's share of the edge input's
    gradient is added into the same tensor: the backward allocates ∂/∂e and nothing else edge-sized."""
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    num_edges, width = 20000, 8
    edge_index = graph(500, num_edges)
    layer = GatedGCNLayer(width, width, dropout=0.0, batch_norm=True, residual=True).train()
    h, e = torch.randn(500, width, requires_grad=True), torch.randn(num_edges, width, requires_grad=True)
    h_new, e_new = layer(h, e, edge_index)
    grads = torch.ones_like(h_new), torch.randn(num_edges, width)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        torch.autograd.backward((h_new, e_new), grads)
    edge_sized = [ev for ev in prof.events() if ev.name.startswith("aten::empty")
                  and ev.cpu_memory_usage >= num_edges * width * 4]
    assert len(edge_sized) == 1
