"""MoNet: the GMM network against explicit loops on a small directed graph, bias after the residual, one
pseudo-coordinate projection per layer, the sparse kernel product and its gradients, initialisation, and
every published parameter total."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import meta_for, published_rows

from gnnbench.data.batching import GraphBatch
from gnnbench.models.build import build_model, count_parameters
from gnnbench.models.monet import DegreePairs, GMMLayer, KernelAdjacency, MoNet, pseudo_coordinates
from gnnbench.models.sparse import InEdges

# 1→2, 0→1, 2→1, 0→2, 1→2 again (a parallel edge counts twice); node 0 has no in-edges
EDGES = torch.tensor([[1, 0, 2, 0, 1], [2, 1, 1, 2, 2]])


def _batch(edge_index: torch.Tensor, num_nodes: int) -> GraphBatch:
    return GraphBatch(edge_index=edge_index, batch=torch.zeros(num_nodes, dtype=torch.long),
                      ptr=torch.tensor([0, num_nodes]), num_graphs=1)


def _bn_eval(x: torch.Tensor, bn: torch.nn.BatchNorm1d) -> torch.Tensor:
    return (x - bn.running_mean) / torch.sqrt(bn.running_var + bn.eps) * bn.weight + bn.bias


def _randomise(model: MoNet) -> None:
    """Non-trivial μ, σ⁻¹, biases and BN statistics, so that every term of the layer shows in the output."""
    with torch.no_grad():
        for layer in model.layers:
            layer.mu.normal_(0, 0.5)
            layer.inv_sigma.uniform_(0.5, 2.0)
            layer.bias.normal_()
            layer.bn_node_h.running_mean.normal_()
            layer.bn_node_h.running_var.uniform_(0.5, 2.0)
            layer.bn_node_h.weight.normal_()
            layer.bn_node_h.bias.normal_()


def _monet_reference(model: MoNet, h: torch.Tensor, edge_index: torch.Tensor, bias_first: bool = False):
    """The MoNet stack with explicit loops over edges and kernels. ``bias_first``: the wrong variant that adds
    the bias to the aggregate (as DGL's GMMConv does) instead of after the residual."""
    n = h.shape[0]
    edges = edge_index.t().tolist()
    deg = [sum(1 for _, v in edges if v == node) for node in range(n)]  # in-degree
    for layer, projection in zip(model.layers, model.pseudo_proj, strict=True):
        linear = projection[0]
        kernels, _ = layer.mu.shape
        fc = (h @ layer.fc.weight.t()).view(n, kernels, -1)
        x = torch.zeros(n, fc.shape[2])
        for u, v in edges:
            p = torch.tensor([1 / math.sqrt(deg[u] + 1), 1 / math.sqrt(deg[v] + 1)])
            q = torch.tanh(linear.weight @ p + linear.bias)  # this layer's own projection
            for k in range(kernels):
                w = torch.exp(-0.5 * ((q - layer.mu[k]) ** 2 * layer.inv_sigma[k] ** 2).sum())
                x[v] += w * fc[u, k]
        if bias_first:
            x = x + layer.bias
        if layer.batch_norm:
            x = _bn_eval(x, layer.bn_node_h)
        x = torch.relu(x)
        if layer.residual:
            x = h + x
        h = x if bias_first else x + layer.bias
    return h


@pytest.mark.parametrize("batch_norm", [False, True])
def test_network_matches_explicit_loops(batch_norm):
    torch.manual_seed(0)
    model = MoNet(4, 5, 2, dropout=0.2, batch_norm=batch_norm, residual=True, kernels=3, pseudo_dim=2).eval()
    _randomise(model)
    h = torch.randn(3, 4)
    assert model.layers[0].residual and not model.layers[1].residual  # 4 → 4, then 4 → 5
    torch.testing.assert_close(model(h, None, _batch(EDGES, 3)).nodes, _monet_reference(model, h, EDGES))


def test_other_kernel_counts_and_pseudo_dimensions():
    torch.manual_seed(1)
    model = MoNet(3, 3, 2, dropout=0.0, batch_norm=True, residual=True, kernels=5, pseudo_dim=3).eval()
    _randomise(model)
    h = torch.randn(3, 3)
    torch.testing.assert_close(model(h, None, _batch(EDGES, 3)).nodes, _monet_reference(model, h, EDGES))


def test_bias_is_added_after_the_residual():
    torch.manual_seed(0)
    model = MoNet(4, 4, 1, dropout=0.0, batch_norm=True, residual=True, kernels=3, pseudo_dim=2).eval()
    _randomise(model)
    with torch.no_grad():
        model.layers[0].bias.fill_(-3.0)  # would be clipped by the ReLU if it came before it
    h = torch.randn(3, 4)
    out = model(h, None, _batch(EDGES, 3)).nodes
    torch.testing.assert_close(out, _monet_reference(model, h, EDGES))
    assert not torch.allclose(out, _monet_reference(model, h, EDGES, bias_first=True), atol=1e-3)
    with torch.no_grad():
        model.layers[0].bias.add_(1.5)
    torch.testing.assert_close(model(h, None, _batch(EDGES, 3)).nodes, out + 1.5)  # shifts the output exactly


def test_each_layer_has_its_own_pseudo_coordinate_projection():
    torch.manual_seed(0)
    model = MoNet(4, 4, 3, dropout=0.0, batch_norm=False, residual=False, kernels=3, pseudo_dim=2).eval()
    assert len(model.pseudo_proj) == 3
    assert len({id(p[0].weight) for p in model.pseudo_proj}) == 3
    h = torch.randn(3, 4)
    torch.testing.assert_close(model(h, None, _batch(EDGES, 3)).nodes, _monet_reference(model, h, EDGES))
    one_layer = MoNet(4, 4, 1, dropout=0.0, batch_norm=False, residual=False, kernels=3, pseudo_dim=2).eval()
    one_layer.layers[0].load_state_dict(model.layers[0].state_dict())
    one_layer.pseudo_proj[0].load_state_dict(model.pseudo_proj[0].state_dict())
    first = one_layer(h, None, _batch(EDGES, 3)).nodes
    before = model(h, None, _batch(EDGES, 3)).nodes
    with torch.no_grad():  # the last layer's projection changes only what the last layer sees
        model.pseudo_proj[2][0].weight.add_(1.0)
    assert not torch.allclose(model(h, None, _batch(EDGES, 3)).nodes, before)
    torch.testing.assert_close(one_layer(h, None, _batch(EDGES, 3)).nodes, first)


def test_pseudo_coordinates_use_in_degrees():
    edges = InEdges.of(EDGES, 3)
    pseudo = pseudo_coordinates(edges, torch.float32)  # (2, E) in sorted edge order
    in_degree = {0: 0, 1: 2, 2: 3}
    for k in range(EDGES.shape[1]):
        u, v = edges.src[k].item(), edges.dst[k].item()
        expected = torch.tensor([(in_degree[u] + 1) ** -0.5, (in_degree[v] + 1) ** -0.5])
        torch.testing.assert_close(pseudo[:, k], expected)
    pairs = DegreePairs(edges, torch.float32)  # the table every edge reads holds the same numbers
    torch.testing.assert_close(pairs.table_t.index_select(1, pairs.index), pseudo)


def test_dropout_follows_the_bias():
    torch.manual_seed(0)
    model = MoNet(4, 4, 1, dropout=0.5, batch_norm=False, residual=True, kernels=3, pseudo_dim=2).train()
    with torch.no_grad():
        model.layers[0].bias.fill_(10.0)
    out = model(torch.randn(50, 4), None, _batch(torch.zeros(2, 0, dtype=torch.long), 50)).nodes
    # nodes without in-edges: h + ReLU(0) + bias, then dropped (0) or scaled by 2
    assert ((out == 0) | (out > 5)).all() and (out == 0).any()


# ------------------------------------------------------------------------------------------------ kernel product


def _random_edges(num_nodes: int, num_edges: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, num_nodes, (2, num_edges), generator=gen)  # with self loops and parallel edges


def test_kernel_product_matches_loops_and_gradients():
    edge_index = _random_edges(9, 40, seed=0)
    edges = InEdges.of(edge_index, 9)
    adjacency = KernelAdjacency(edges, 3)
    torch.manual_seed(0)
    weights = torch.rand(40, 3, dtype=torch.float64, requires_grad=True)
    x = torch.randn(9 * 3, 4, dtype=torch.float64, requires_grad=True)
    expected = torch.zeros(9, 4, dtype=torch.float64)
    for k_edge, (u, v) in enumerate(zip(edges.src.tolist(), edges.dst.tolist(), strict=True)):
        for k in range(3):
            expected[v] += weights[k_edge, k] * x[u * 3 + k]
    torch.testing.assert_close(adjacency.propagate(weights, x), expected)
    assert torch.autograd.gradcheck(adjacency.propagate, (weights, x))


def test_graph_without_edges():
    model = MoNet(4, 4, 2, dropout=0.0, batch_norm=True, residual=True, kernels=3, pseudo_dim=2)
    h = torch.randn(3, 4, requires_grad=True)
    out = model(h, None, _batch(torch.zeros(2, 0, dtype=torch.long), 3)).nodes
    out.sum().backward()
    assert out.shape == (3, 4) and torch.isfinite(h.grad).all()


def test_network_gradients_reach_every_parameter():
    torch.manual_seed(0)
    model = MoNet(4, 4, 2, dropout=0.0, batch_norm=False, residual=True, kernels=3, pseudo_dim=2).double().eval()
    _randomise(model)
    batch = _batch(_random_edges(10, 50, seed=2), 10)
    h = torch.randn(10, 4, dtype=torch.float64, requires_grad=True)
    params = {n: p for n, p in model.named_parameters() if "bn_node_h" not in n}  # BN is created but off
    grads = torch.autograd.grad(model(h, None, batch).nodes.square().sum(), list(params.values()))
    assert all(g.abs().sum() > 0 for g in grads)  # μ, σ⁻¹ and the projections of every layer are trained too
    names = ["layers.0.mu", "layers.0.inv_sigma", "pseudo_proj.0.0.weight", "layers.1.fc.weight"]

    def forward(h, *values):
        replaced = {**params, **dict(zip(names, values, strict=True))}
        return torch.func.functional_call(model, replaced, (h, None, batch)).nodes

    assert torch.autograd.gradcheck(forward, (h, *(params[n].detach().clone().requires_grad_() for n in names)))


# ------------------------------------------------------------------------------------------------ parameters


def test_initialisation_follows_the_original():
    torch.manual_seed(0)
    layer = GMMLayer(200, 300, dim=2, kernels=4000, dropout=0.0, batch_norm=True, residual=True)
    assert abs(layer.mu.std().item() - 0.1) < 0.005 and abs(layer.mu.mean().item()) < 0.005
    assert (layer.inv_sigma == 1).all() and (layer.bias == 0).all()
    fan_in, fan_out = 200, 4000 * 300
    expected_std = math.sqrt(2) * math.sqrt(2 / (fan_in + fan_out))  # xavier_normal with gain √2
    assert abs(layer.fc.weight.std().item() / expected_std - 1) < 0.02
    assert layer.fc.bias is None


def test_batch_norm_exists_even_when_unused():
    meta = meta_for("graph_regression", 1)
    cfg = dict(model="MoNet", L=2, hidden_dim=8, out_dim=8, residual=True, batch_norm=True, dropout=0.0,
               readout="mean", in_feat_dropout=0.0, kernel=3, pseudo_dim_MoNet=2)
    with_bn, without = build_model(cfg, meta), build_model({**cfg, "batch_norm": False}, meta)
    assert count_parameters(with_bn) == count_parameters(without)


ROWS = published_rows("MoNet")


def test_every_published_monet_row_is_checked():
    assert len(ROWS) == 14


