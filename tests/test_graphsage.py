"""GraphSAGE: every layer against explicit loops on a small directed graph, the original's quirks, the padded
maximum, configuration errors and every published parameter total."""

from __future__ import annotations

import pytest
import torch
from conftest import meta_for, published_rows

from gnnbench.config.presets import run_config
from gnnbench.data.batching import GraphBatch
from gnnbench.data.catalog import describe_dataset
from gnnbench.errors import ConfigError
from gnnbench.models.build import build_model, count_parameters
from gnnbench.models.graphsage import (
    GraphSage,
    GraphSageLayer,
    GraphSageLayerEdgeFeat,
    GraphSageLayerEdgeReprFeat,
)
from gnnbench.models.sparse import InEdges, scatter_max

# 1→2, 0→1, 2→1, 0→2 (deliberately not in destination order); node 0 has no in-edges, 1 and 2 have two each
EDGES = torch.tensor([[1, 0, 2, 0], [2, 1, 1, 2]])


def _batch(edge_index: torch.Tensor, num_nodes: int) -> GraphBatch:
    return GraphBatch(edge_index=edge_index, batch=torch.zeros(num_nodes, dtype=torch.long),
                      ptr=torch.tensor([0, num_nodes]), num_graphs=1)


def _linear(module: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    return module.weight @ x + module.bias


def _bn_eval(x: torch.Tensor, bn: torch.nn.BatchNorm1d) -> torch.Tensor:
    return (x - bn.running_mean) / torch.sqrt(bn.running_var + bn.eps) * bn.weight + bn.bias


def _randomise_bn(bn: torch.nn.BatchNorm1d) -> None:
    with torch.no_grad():
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.normal_()
        bn.bias.normal_()


def _node_apply(layer, x_v: torch.Tensor, c_v: torch.Tensor) -> torch.Tensor:
    z = _linear(layer.nodeapply.linear, torch.cat([x_v, c_v]))
    return torch.relu(z / max(z.norm().item(), 1e-12))


def _sage_reference(layer: GraphSageLayer, h: torch.Tensor, edge_index: torch.Tensor, aggregator: str,
                    x: torch.Tensor | None = None, raw_self: bool = False) -> torch.Tensor:
    """The layer with explicit loops; ``x`` the dropped-out input (default h), ``raw_self`` the wrong variant
    that concatenates h_v instead of the pooled transform."""
    x = h if x is None else x
    if aggregator != "mean":
        x = torch.stack([torch.relu(_linear(layer.pool, row)) for row in x])
    out = []
    for v in range(h.shape[0]):
        messages = [x[u] for u, w in edge_index.t().tolist() if w == v]
        if not messages:
            c = torch.zeros(x.shape[1])
        elif aggregator == "maxpool":
            c = torch.stack(messages).max(0).values
        else:
            c = torch.stack(messages).mean(0)
        out.append(_node_apply(layer, h[v] if raw_self else x[v], c))
    out = torch.stack(out)
    if layer.batchnorm_h is not None:
        out = _bn_eval(out, layer.batchnorm_h)
    return h + out if layer.residual else out


@pytest.mark.parametrize("aggregator", ["maxpool", "mean", "meanpool"])
@pytest.mark.parametrize("batch_norm", [False, True])
def test_layer_matches_explicit_loops(aggregator, batch_norm):
    torch.manual_seed(0)
    layer = GraphSageLayer(4, 4, dropout=0.3, aggregator=aggregator, batch_norm=batch_norm, residual=True).eval()
    if batch_norm:
        _randomise_bn(layer.batchnorm_h)  # ReLU before BN: a BN-then-ReLU order would give other numbers
    h = torch.randn(3, 4)
    edges = InEdges.of(EDGES, 3)
    neighbours = edges.max_plan() if aggregator == "maxpool" else edges.mean_adjacency(h.dtype)
    torch.testing.assert_close(layer(h, neighbours), _sage_reference(layer, h, EDGES, aggregator))


def test_widening_last_layer_has_no_residual():
    torch.manual_seed(0)
    layer = GraphSageLayer(4, 6, dropout=0.0, aggregator="maxpool", batch_norm=False, residual=True).eval()
    h = torch.randn(3, 4)
    assert not layer.residual and layer.nodeapply.linear.weight.shape == (6, 8)
    out = layer(h, InEdges.of(EDGES, 3).max_plan())
    torch.testing.assert_close(out, _sage_reference(layer, h, EDGES, "maxpool"))


@pytest.mark.parametrize("aggregator", ["maxpool", "meanpool"])
def test_self_half_is_the_pooled_transform_not_the_raw_state(aggregator):
    torch.manual_seed(1)
    layer = GraphSageLayer(4, 4, dropout=0.0, aggregator=aggregator, batch_norm=False, residual=False).eval()
    h = torch.randn(3, 4)
    edges = InEdges.of(EDGES, 3)
    out = layer(h, edges.max_plan() if aggregator == "maxpool" else edges.mean_adjacency(h.dtype))
    torch.testing.assert_close(out, _sage_reference(layer, h, EDGES, aggregator))
    assert not torch.allclose(out, _sage_reference(layer, h, EDGES, aggregator, raw_self=True), atol=1e-3)


def test_dropout_acts_on_the_layer_input_only():
    torch.manual_seed(0)
    layer = GraphSageLayer(4, 4, dropout=0.5, aggregator="maxpool", batch_norm=False, residual=True).train()
    h = torch.randn(3, 4)
    plan = InEdges.of(EDGES, 3).max_plan()
    torch.manual_seed(7)
    dropped = torch.nn.functional.dropout(h, 0.5, True)
    torch.manual_seed(7)
    out = layer(h, plan)
    # x = Dropout(h) feeds the pooling; the residual adds the raw h; nothing is dropped after the layer
    torch.testing.assert_close(out, _sage_reference(layer, h, EDGES, "maxpool", x=dropped))


def test_l2_normalisation_comes_before_the_relu():
    torch.manual_seed(0)
    layer = GraphSageLayer(4, 5, dropout=0.0, aggregator="maxpool", batch_norm=False, residual=False).eval()
    out = layer(torch.randn(3, 4), InEdges.of(EDGES, 3).max_plan())
    # ReLU of a unit vector: every row has norm ≤ 1 and non-negative entries
    assert (out >= 0).all() and (out.norm(dim=1) <= 1 + 1e-6).all()


# ------------------------------------------------------------------------------------------------ padded max


def _random_edges(num_nodes: int, num_edges: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    # skewed destinations: a few hubs with many in-edges, several nodes with none
    dst = (torch.rand(num_edges, generator=gen) ** 3 * (num_nodes - 4)).long()
    return torch.stack([torch.randint(0, num_nodes, (num_edges,), generator=gen), dst])


def test_padded_max_matches_scatter_max_and_its_gradient_is_exact():
    edge_index = _random_edges(30, 200, seed=0)
    edges = InEdges.of(edge_index, 30)
    plan = edges.max_plan()
    assert any((pad == 30).any() for pad in plan.pads)  # some degree classes are padded
    assert len(plan.pads) > 3
    x = torch.rand(30, 5, dtype=torch.float64, requires_grad=True)
    expected = scatter_max(x.index_select(0, edge_index[0]), edge_index[1], 30)
    torch.testing.assert_close(plan.max(x), expected)
    assert torch.autograd.gradcheck(plan.max, (x,))


def test_padded_max_over_edge_messages():
    edge_index = _random_edges(12, 60, seed=1)
    edges = InEdges.of(edge_index, 12)
    messages = torch.rand(60, 3, dtype=torch.float64, requires_grad=True)  # in sorted edge order
    expected = scatter_max(messages, edges.dst, 12)
    plan = edges.max_plan(over_edges=True)
    torch.testing.assert_close(plan.max(messages), expected)
    assert torch.autograd.gradcheck(plan.max, (messages,))


def test_graph_without_edges():
    edges = InEdges.of(torch.zeros(2, 0, dtype=torch.long), 3)
    torch.testing.assert_close(edges.max_plan().max(torch.rand(3, 2)), torch.zeros(3, 2))
    model = GraphSage(4, 4, 2, 0.0, True, True, "maxpool", "edgereprfeat")
    out = model(torch.randn(3, 4), torch.randn(0, 4), _batch(torch.zeros(2, 0, dtype=torch.long), 3)).nodes
    assert out.shape == (3, 4) and torch.isfinite(out).all()


# ------------------------------------------------------------------------------------------------ edge variants


def _edge_reference(layer, h: torch.Tensor, edge_index: torch.Tensor, e: torch.Tensor | None):
    """GraphSageLayerEdgeFeat (e None) / EdgeReprFeat with explicit loops → (h', e' per input edge)."""
    messages: dict[int, list[torch.Tensor]] = {v: [] for v in range(h.shape[0])}
    e_new = []
    for k, (u, v) in enumerate(edge_index.t().tolist()):
        e_hat = _linear(layer.B, h[u]) + _linear(layer.B, h[v])
        if e is not None:
            e_hat = e_hat + _linear(layer.C, e[k])
        messages[v].append(torch.relu(torch.sigmoid(e_hat) * _linear(layer.A, h[u])))
        e_new.append(torch.relu(e_hat))
    out = []
    for v in range(h.shape[0]):
        c = torch.stack(messages[v]).max(0).values if messages[v] else torch.zeros(layer.A.out_features)
        out.append(_node_apply(layer, h[v], c))
    h_new = h + torch.stack(out)
    return h_new, (e + torch.stack(e_new) if e is not None else None)


def test_edgefeat_layer_matches_explicit_loops():
    torch.manual_seed(0)
    layer = GraphSageLayerEdgeFeat(4, 4, dropout=0.0, batch_norm=False, residual=True).eval()
    h = torch.randn(3, 4)
    edges = InEdges.of(EDGES, 3)
    expected, _ = _edge_reference(layer, h, EDGES, None)
    torch.testing.assert_close(layer(h, edges, edges.max_plan(over_edges=True)), expected)


def test_edgereprfeat_layer_matches_explicit_loops():
    torch.manual_seed(0)
    layer = GraphSageLayerEdgeReprFeat(4, 4, dropout=0.0, batch_norm=False, residual=True).eval()
    h, e = torch.randn(3, 4), torch.randn(4, 4)
    edges = InEdges.of(EDGES, 3)
    h_out, e_out = layer(h, e[edges.order], edges, edges.max_plan(over_edges=True))
    h_ref, e_ref = _edge_reference(layer, h, EDGES, e)
    torch.testing.assert_close(h_out, h_ref)
    torch.testing.assert_close(e_out, e_ref[edges.order])


def test_edgereprfeat_network_reads_edges_in_the_batch_order():
    torch.manual_seed(0)
    model = GraphSage(4, 4, 2, 0.0, False, True, "maxpool", "edgereprfeat").eval()
    edge_index = _random_edges(8, 30, seed=3)
    h, e = torch.randn(8, 4), torch.randn(30, 4)
    expected, e_mid = _edge_reference(model.layers[0], h, edge_index, e)
    expected, _ = _edge_reference(model.layers[1], expected, edge_index, e_mid)
    torch.testing.assert_close(model(h, e, _batch(edge_index, 8)).nodes, expected)
    # the benchmark's constant edge input (one row broadcast) is transformed once, with the same result
    row = torch.randn(1, 4)
    torch.testing.assert_close(model(h, row.expand(30, -1), _batch(edge_index, 8)).nodes,
                               model(h, row.repeat(30, 1), _batch(edge_index, 8)).nodes)


def test_only_edgereprfeat_builds_an_edge_encoder():
    meta = describe_dataset("OGBL-COLLAB")
    for layer_type, uses in (("isotropic", False), ("edgefeat", False), ("edgereprfeat", True)):
        model = build_model(run_config(f"COLLAB_edge_classification_GraphSage_{layer_type}", {}), meta)
        assert model.architecture.uses_edges is uses
        assert (model.edge_encoder is not None) is uses
    assert GraphSage.uses_edges is False  # the instance decides, the class default stays off


# ------------------------------------------------------------------------------------------------ configuration

SMALL = dict(model="GraphSAGE", L=2, hidden_dim=8, out_dim=8, residual=True, batch_norm=True, dropout=0.0,
             readout="mean", in_feat_dropout=0.0, sage_aggregator="maxpool")


def test_batch_norm_is_created_only_when_asked():
    meta = meta_for("graph_regression", 1)
    with_bn = build_model(SMALL, meta)
    without = build_model({**SMALL, "batch_norm": False}, meta)
    assert all(layer.batchnorm_h is None for layer in without.architecture.layers)
    assert count_parameters(with_bn) - count_parameters(without) == 2 * 8 * 2  # weight + bias, 2 layers
    edge = build_model({**SMALL, "layer_type": "edgereprfeat", "batch_norm": False}, meta)
    assert all(layer.batchnorm_e is None for layer in edge.architecture.layers)


def test_mean_aggregator_has_no_pooling_layer():
    meta = meta_for("graph_regression", 1)
    mean = build_model({**SMALL, "sage_aggregator": "mean"}, meta)
    meanpool = build_model({**SMALL, "sage_aggregator": "meanpool"}, meta)
    assert all(layer.pool is None for layer in mean.architecture.layers)
    assert count_parameters(meanpool) - count_parameters(mean) == 2 * (8 * 8 + 8)
    assert count_parameters(meanpool) == count_parameters(build_model(SMALL, meta))


@pytest.mark.parametrize(("overrides", "message"), [
    ({"sage_aggregator": "lstm"}, "sage_aggregator: unknown aggregator 'lstm'"),
    ({"layer_type": "gated"}, "layer_type: unknown GraphSage layer type 'gated'"),
    ({"layer_type": "edgefeat", "sage_aggregator": "mean"}, "set sage_aggregator to maxpool"),
    ({"layer_type": "edgefeat", "out_dim": 6}, "set out_dim equal to hidden_dim"),
])
def test_bad_settings_raise_one_line_config_errors(overrides, message):
    with pytest.raises(ConfigError) as err:
        build_model({**SMALL, **overrides}, meta_for("graph_regression", 1))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_missing_aggregator_key_is_reported():
    cfg = {k: v for k, v in SMALL.items() if k != "sage_aggregator"}
    with pytest.raises(ConfigError, match="sage_aggregator"):
        build_model(cfg, meta_for("graph_regression", 1))


# ------------------------------------------------------------------------------------------------ published totals


ROWS = published_rows("GraphSAGE")


def test_every_published_graphsage_row_is_checked():
    assert len(ROWS) == 16
    assert {name for name, _, _ in ROWS} >= {f"COLLAB_edge_classification_GraphSage_{t}"
                                             for t in ("edgefeat", "edgereprfeat", "isotropic")}


