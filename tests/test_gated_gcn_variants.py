"""GatedGCN edge-analysis layers (edgefeat, isotropic), the GRU option, the node-task width rule, the WikiCS edge
table and every published GatedGCN parameter total."""

from __future__ import annotations

import pytest
import torch
from conftest import meta_for, one_batch, published_rows, random_graphs
from test_gin import _gru_step

from gnnbench.config.presets import run_config
from gnnbench.data.catalog import describe_dataset
from gnnbench.errors import ConfigError
from gnnbench.models.build import build_model
from gnnbench.models.gated_gcn import GatedGCNLayer, GatedGCNLayerEdgeFeatOnly, GatedGCNLayerIsotropic

# 0→1 (twice), 0→2, 1→2, 2→0, 3→0; node 3 has no in-edges
EDGES = torch.tensor([[0, 0, 0, 1, 2, 3], [1, 1, 2, 2, 0, 0]])
SMALL = dict(model="GatedGCN", L=2, hidden_dim=6, out_dim=6, residual=True, batch_norm=True, dropout=0.0,
             readout="mean", edge_feat=True, in_feat_dropout=0.0)


def test_every_published_gated_gcn_row_is_checked():
    assert len(published_rows("GatedGCN")) == 31


def test_edgefeat_layer_gates_from_the_nodes_only_and_passes_edges_through():
    torch.manual_seed(0)
    layer = GatedGCNLayerEdgeFeatOnly(3, 3, dropout=0.0, batch_norm=False, residual=True).eval()
    assert not hasattr(layer, "C") and not hasattr(layer, "bn_node_e")
    h, e = torch.randn(4, 3), torch.randn(6, 3)
    h_out, e_out = layer(h, e, EDGES)
    num, den = torch.zeros(4, 3), torch.zeros(4, 3)
    for u, v in EDGES.t().tolist():
        sigma = torch.sigmoid(layer.D(h[u]) + layer.E(h[v]))  # D on the source, E on the destination
        num[v] += sigma * layer.B(h[u])
        den[v] += sigma
    expected = h + torch.relu(layer.A(h) + num / (den + 1e-6))
    torch.testing.assert_close(h_out, expected)
    assert e_out is e


def test_isotropic_layer_sums_b_h_over_in_edges_then_bn_relu_residual():
    torch.manual_seed(0)
    layer = GatedGCNLayerIsotropic(3, 3, dropout=0.0, batch_norm=True, residual=True).train()
    assert {name for name, _ in layer.named_children()} == {"A", "B", "bn_node_h"}
    with torch.no_grad():
        layer.bn_node_h.weight.normal_()
        layer.bn_node_h.bias.normal_()
    h, e = torch.randn(4, 3), torch.randn(6, 3)
    h_out, e_out = layer(h, e, EDGES)
    x = layer.A(h)
    for u, v in EDGES.t().tolist():  # parallel edges count twice; node 3 gets A h_3 only
        x[v] = x[v] + layer.B(h[u])
    normed = (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + 1e-5)  # BN with batch statistics
    expected = h + torch.relu(normed * layer.bn_node_h.weight + layer.bn_node_h.bias)
    torch.testing.assert_close(h_out, expected)
    assert e_out is e


@pytest.mark.parametrize(("layer_type", "cls"), [(None, GatedGCNLayer), ("edgereprfeat", GatedGCNLayer),
                                                 ("edgefeat", GatedGCNLayerEdgeFeatOnly),
                                                 ("isotropic", GatedGCNLayerIsotropic)])
def test_layer_type_selects_the_layer_and_every_variant_builds_an_edge_encoder(layer_type, cls):
    cfg = SMALL if layer_type is None else {**SMALL, "layer_type": layer_type}
    model = build_model(cfg, meta_for("graph_regression", 1))
    assert all(type(layer) is cls for layer in model.architecture.layers)
    assert model.edge_encoder is not None  # the original creates embedding_e for every variant


def test_absent_layer_type_is_the_standard_layer_bit_for_bit():
    meta = meta_for("graph_regression", 1)
    torch.manual_seed(0)
    standard = build_model({**SMALL, "layer_type": "edgereprfeat"}, meta).eval()
    default = build_model(SMALL, meta).eval()
    default.load_state_dict(standard.state_dict())
    batch = one_batch(random_graphs(4, seed=1))
    assert torch.equal(standard(batch), default(batch))


def test_unknown_layer_type_is_refused():
    with pytest.raises(ConfigError, match="layer_type must be one of edgereprfeat, edgefeat, isotropic"):
        build_model({**SMALL, "layer_type": "dgl"}, meta_for("graph_regression", 1))


@pytest.mark.parametrize("layer_type", ["edgereprfeat", "edgefeat", "isotropic"])
def test_gru_takes_the_previous_state_as_input_and_the_layer_output_as_hidden(layer_type):
    torch.manual_seed(0)
    model = build_model({**SMALL, "L": 2, "layer_type": layer_type, "use_gru": True},
                        meta_for("graph_regression", 1)).eval()
    arch = model.architecture
    batch = one_batch(random_graphs(3, seed=2))
    with torch.no_grad():
        h = model.node_encoder(batch.x, None)
        e = model.edge_encoder(batch.edge_attr, batch.num_edges)
        out = arch(h, e, batch).nodes
        swapped = h
        for layer in arch.layers:
            h_layer, e = layer(h, e, batch.edge_index)
            h, swapped = _gru_step(arch.gru, h, h_layer), _gru_step(arch.gru, h_layer, h)
        torch.testing.assert_close(out, h)
        assert not torch.allclose(out, swapped, atol=1e-3)
    assert sum(isinstance(m, torch.nn.GRU) for m in arch.modules()) == 1  # one GRU shared by the layers


@pytest.mark.parametrize("task", ["node_classification", "multitask_regression"])
def test_out_dim_is_ignored_for_node_level_tasks(task):
    model = build_model({**SMALL, "out_dim": 4}, meta_for(task))
    assert model.architecture.out_width == 6
    assert all(layer.A.out_features == 6 for layer in model.architecture.layers)
    graph = build_model({**SMALL, "out_dim": 4}, meta_for("graph_regression", 1))
    assert graph.architecture.out_width == 4 and graph.architecture.layers[-1].A.out_features == 4


def test_gru_needs_out_dim_equal_to_hidden_where_out_dim_is_used():
    with pytest.raises(ConfigError, match="use_gru needs out_dim = hidden_dim"):
        build_model({**SMALL, "out_dim": 4, "use_gru": True}, meta_for("graph_regression", 1))


def test_wikics_edges_are_one_learned_row_broadcast_to_every_edge():
    meta = describe_dataset("WikiCS")
    cfg = run_config("WikiCS_node_classification_GatedGCN", {"hidden_dim": 8, "L": 2, "dropout": 0.0})
    torch.manual_seed(0)
    model = build_model(cfg, meta).eval()
    arch = model.architecture
    assert model.edge_encoder is None and tuple(arch.edge_table.weight.shape) == (1, 8)
    batch = one_batch(random_graphs(3, seed=3))
    batch.x = torch.randn(batch.num_nodes, 300)
    with torch.no_grad():
        h = model.node_encoder(batch.x, None)
        out = arch(h, None, batch).nodes
        e = arch.edge_table.weight.repeat(batch.num_edges, 1)
        for layer in arch.layers:
            h, e = layer(h, e, batch.edge_index)
        torch.testing.assert_close(out, h)
    # other datasets without edge features keep Linear(1, hidden) on ones (SBM: 104,003 published)
    other = build_model(cfg, meta_for("node_classification", 10, edge_features=False))
    assert other.edge_encoder is not None and other.architecture.edge_table is None
