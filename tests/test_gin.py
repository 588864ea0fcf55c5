"""GIN: the layer against hand computations, the per-layer readout of every task head, the GRU option and
the published parameter totals."""

from __future__ import annotations

import pytest
import torch
from conftest import meta_for, one_batch, published_rows, random_graphs, with_pairs

from gnnbench.errors import ConfigError
from gnnbench.models.build import build_model, count_parameters
from gnnbench.models.gin import GINLayer, NeighbourAggregation

# 0→1 (twice: parallel edges count twice, as in DGL), 0→2, 1→2, 2→0, 3→0; node 3 has no in-edges
EDGES = torch.tensor([[0, 0, 0, 1, 2, 3], [1, 1, 2, 2, 0, 0]])
SMALL = dict(model="GIN", L=2, hidden_dim=6, residual=True, batch_norm=True, dropout=0.0, readout="sum",
             n_mlp_GIN=2, learn_eps_GIN=True, neighbor_aggr_GIN="sum", in_feat_dropout=0.0)


def test_every_published_gin_row_is_checked():
    assert len(published_rows("GIN")) == 17


def _bn_eval(x, bn):
    return (x - bn.running_mean) / torch.sqrt(bn.running_var + bn.eps) * bn.weight + bn.bias


def _randomise(layer):
    with torch.no_grad():
        layer.eps.fill_(0.3)
        for bn in [*layer.mlp.batch_norms, layer.bn_node_h]:
            bn.running_mean.normal_()
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.normal_()
            bn.bias.normal_()


@pytest.mark.parametrize("aggregator", ["sum", "mean", "max"])
def test_gin_layer_matches_hand_computation(aggregator):
    torch.manual_seed(0)
    layer = GINLayer(3, n_mlp=2, dropout=0.0, batch_norm=True, residual=True, learn_eps=True).eval()
    _randomise(layer)
    h = torch.randn(4, 3)
    reduce = {"sum": lambda rows: rows.sum(0), "mean": lambda rows: rows.mean(0),
              "max": lambda rows: rows.max(0).values}[aggregator]
    agg = torch.zeros(4, 3)
    for v in range(4):
        sources = [u for u, w in EDGES.t().tolist() if w == v]
        if sources:  # nodes without in-edges get 0 (DGL builtin reducers)
            agg[v] = reduce(h[sources])
    x = (1 + 0.3) * h + agg
    lin0, lin1 = layer.mlp.linears
    x = lin1(torch.relu(_bn_eval(lin0(x), layer.mlp.batch_norms[0])))  # Linear → BN → ReLU → Linear
    expected = h + torch.relu(_bn_eval(x, layer.bn_node_h))  # BN → ReLU → residual
    out = layer(h, NeighbourAggregation(EDGES, 4, aggregator))
    torch.testing.assert_close(out, expected)


def test_gin_single_layer_mlp_is_one_linear_and_flags_are_honoured():
    torch.manual_seed(0)
    layer = GINLayer(3, n_mlp=1, dropout=0.0, batch_norm=False, residual=False, learn_eps=False).train()
    assert len(layer.mlp.linears) == 1 and len(layer.mlp.batch_norms) == 0
    h = torch.randn(4, 3)
    agg = torch.stack([h[2] + h[3], 2 * h[0], h[0] + h[1], torch.zeros(3)])
    expected = torch.relu(layer.mlp.linears[0](h + agg))  # ε = 0, no BN even in training, no residual
    torch.testing.assert_close(layer(h, NeighbourAggregation(EDGES, 4, "sum")), expected)


def test_eps_is_a_parameter_only_when_learned():
    meta = meta_for("graph_regression", 1)
    learned = build_model(SMALL, meta)
    fixed = build_model({**SMALL, "learn_eps_GIN": False}, meta)
    assert count_parameters(learned) - count_parameters(fixed) == SMALL["L"]
    layer = fixed.architecture.layers[0]
    assert "eps" in dict(layer.named_buffers()) and "eps" not in dict(layer.named_parameters())
    batch = one_batch(random_graphs(3))
    learned(batch).sum().backward()
    assert learned.architecture.layers[0].eps.grad is not None


def _layer_states(model, batch, x=None):
    """h^0 (the embedding), h^1, ..., h^L by calling the layers one after the other."""
    h = model.node_encoder(batch.x if x is None else x, None)
    aggregate = NeighbourAggregation(batch.edge_index, h.shape[0], "sum")
    states = [h]
    for layer in model.architecture.layers:
        states.append(layer(states[-1], aggregate))
    return states


@pytest.mark.parametrize("readout", ["sum", "mean", "max"])
def test_graph_score_is_the_sum_of_per_layer_scores_of_pooled_states(readout):
    torch.manual_seed(0)
    model = build_model({**SMALL, "readout": readout}, meta_for("graph_classification", 2)).eval()
    batch = one_batch(random_graphs(4, seed=1))
    with torch.no_grad():
        states = _layer_states(model, batch)
        expected = torch.zeros(batch.num_graphs, 2)
        for g in range(batch.num_graphs):
            for linear, h in zip(model.head.linears, states, strict=True):
                rows = h[batch.batch == g]
                pooled = {"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0).values}[readout]
                expected[g] += linear(pooled)
        torch.testing.assert_close(model(batch), expected)
    assert len(model.head.linears) == SMALL["L"] + 1


def test_node_and_edge_scores_sum_over_layers():
    torch.manual_seed(0)
    batch = one_batch(random_graphs(3, seed=2))
    node_model = build_model(SMALL, meta_for("node_classification", 3)).eval()
    edge_model = build_model(SMALL, meta_for("edge_classification", 2)).eval()
    src, dst = batch.edge_index
    with torch.no_grad():
        states = _layer_states(node_model, batch)
        expected = sum(lin(h) for lin, h in zip(node_model.head.linears, states, strict=True))
        torch.testing.assert_close(node_model(batch), expected)
        states = _layer_states(edge_model, batch)
        expected = 0
        for pair, h in zip(edge_model.head.pair_mlps, states, strict=True):  # Linear(2d, d) → ReLU → Linear(d, c)
            expected = expected + pair.out(torch.relu(pair.hidden(torch.cat([h[src], h[dst]], dim=1))))
        torch.testing.assert_close(edge_model(batch), expected)


def test_multitask_uses_per_layer_node_and_set2set_scores():
    torch.manual_seed(0)
    model = build_model(SMALL, meta_for("multitask_regression")).eval()
    batch = one_batch(random_graphs(3, seed=3))
    head = model.head
    with torch.no_grad():
        states = _layer_states(model, batch)
        node, graph = model(batch)
        torch.testing.assert_close(node, sum(lin(h) for lin, h in zip(head.node_linears, states, strict=True)))
        expected = sum(lin(head.set2set(h, batch.batch, batch.num_graphs))
                       for lin, h in zip(head.graph_linears, states, strict=True))
        torch.testing.assert_close(graph, expected)


def test_link_prediction_scores_pairs_from_the_last_layer_only():
    torch.manual_seed(0)
    model = build_model(SMALL, meta_for("link_prediction", 1)).eval()
    batch = with_pairs(one_batch(random_graphs(3, seed=4)))
    assert model.architecture.head_style("link_prediction") == "mlp"
    assert model.head.mlp.layers[0].in_features == 2 * SMALL["hidden_dim"]
    u, v = batch.pairs
    with torch.no_grad():
        h = _layer_states(model, batch)[-1]
        x = torch.cat([h[u], h[v]], dim=1)
        for layer in model.head.mlp.layers:
            x = torch.relu(layer(x))
        torch.testing.assert_close(model(batch), model.head.mlp.out(x).squeeze(-1))


def _gru_step(gru, x, h):
    """One step of torch.nn.GRU written out: input x, hidden h (gate order r, z, n)."""
    w_ir, w_iz, w_in = gru.weight_ih_l0.chunk(3)
    w_hr, w_hz, w_hn = gru.weight_hh_l0.chunk(3)
    b_ir, b_iz, b_in = gru.bias_ih_l0.chunk(3)
    b_hr, b_hz, b_hn = gru.bias_hh_l0.chunk(3)
    r = torch.sigmoid(x @ w_ir.T + b_ir + h @ w_hr.T + b_hr)
    z = torch.sigmoid(x @ w_iz.T + b_iz + h @ w_hz.T + b_hz)
    n = torch.tanh(x @ w_in.T + b_in + r * (h @ w_hn.T + b_hn))
    return (1 - z) * n + z * h


def test_gru_takes_the_previous_state_as_input_and_the_layer_output_as_hidden():
    torch.manual_seed(0)
    model = build_model({**SMALL, "use_gru": True}, meta_for("graph_regression", 1)).eval()
    arch = model.architecture
    batch = one_batch(random_graphs(3, seed=5))
    with torch.no_grad():
        h0 = model.node_encoder(batch.x, None)
        aggregate = NeighbourAggregation(batch.edge_index, h0.shape[0], "sum")
        layer_out = arch.layers[0](h0, aggregate)
        expected = _gru_step(arch.gru, h0, layer_out)
        swapped = _gru_step(arch.gru, layer_out, h0)
        rep = arch(h0, None, batch)
        torch.testing.assert_close(rep.layers[1], expected)  # the readout sees the GRU's output
        assert not torch.allclose(rep.layers[1], swapped, atol=1e-3)
        torch.testing.assert_close(rep.layers[2], _gru_step(arch.gru, expected, arch.layers[1](expected, aggregate)))
    assert sum(isinstance(m, torch.nn.GRU) for m in arch.modules()) == 1  # one GRU shared by the layers


@pytest.mark.parametrize(("change", "message"), [
    ({"readout": "median"}, "GIN pools graphs with readout sum, mean or max"),
    ({"neighbor_aggr_GIN": "lstm"}, "neighbor_aggr_GIN must be one of sum, mean, max"),
    ({"n_mlp_GIN": 0}, "n_mlp_GIN must be at least 1"),
])
def test_bad_gin_configs_are_refused(change, message):
    with pytest.raises(ConfigError, match=message):
        build_model({**SMALL, **change}, meta_for("graph_regression", 1))
