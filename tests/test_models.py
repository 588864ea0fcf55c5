"""Models: exact parameter counts, layers against hand computations, equivariance, and learning."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from conftest import meta_for, one_batch, random_graphs

from gnnbench.config.presets import all_presets, run_config
from gnnbench.data.catalog import describe_dataset
from gnnbench.data.meta import FeatureSpec
from gnnbench.errors import ConfigError
from gnnbench.models.build import build_model, count_parameters
from gnnbench.models.gated_gcn import GatedGCNLayer
from gnnbench.models.gcn import GCNLayer, gcn_adjacency
from gnnbench.models.readout import MLPReadout
from gnnbench.models.sparse import scatter_max, scatter_mean, scatter_sum


def count(preset: str, overrides: dict | None = None) -> int:
    dataset = describe_dataset(all_presets()[preset]["dataset"])
    return count_parameters(build_model(run_config(preset, overrides), dataset))


def test_every_preset_with_a_known_total_builds_to_it():
    checked = 0
    for name, preset in all_presets().items():
        if preset.get("protocol", "benchmarking-gnns") != "benchmarking-gnns":
            continue  # other protocols' presets build other networks (tests/test_stacked_models.py)
        if "total_params" in preset:
            assert count(name) == preset["total_params"], name
            checked += 1
        for run in preset["runs"] if isinstance(preset["runs"], list) else []:
            if "total_params" in run:
                assert count(name, run["set"]) == run["total_params"], (name, run["set"])
    assert checked == 142  # every non-withheld total of the 200 configs


def test_params_command_prints_a_bare_integer():
    out = subprocess.run([sys.executable, "-m", "gnnbench.cli", "params", "--preset",
                          "molecules_graph_regression_GatedGCN_ZINC_100k", "--set", "edge_feat=true"],
                         capture_output=True, text=True, check=True)
    assert out.stdout == "105875\n"
    bad = subprocess.run([sys.executable, "-m", "gnnbench.cli", "params", "--preset", "GCN_ZINC"],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "unknown preset 'GCN_ZINC'" in bad.stderr


def test_mlp_readout_widths_follow_integer_halving():
    readout = MLPReadout(70, 3)
    shapes = [tuple(m.weight.shape) for m in [*readout.layers, readout.out]]
    assert shapes == [(35, 70), (17, 35), (3, 17)]


# ------------------------------------------------------------------------------------------------ primitives


def test_scatter_reductions_match_python_loops():
    torch.manual_seed(0)
    src = torch.randn(9, 3)
    index = torch.tensor([0, 2, 2, 0, 4, 4, 4, 0, 2])
    for fn, ref in ((scatter_sum, lambda rows: rows.sum(0)), (scatter_mean, lambda rows: rows.mean(0)),
                    (scatter_max, lambda rows: rows.max(0).values)):
        out = fn(src, index, 6)
        for i in range(6):
            rows = src[index == i]
            expected = ref(rows) if len(rows) else torch.zeros(3)  # empty segments give 0
            torch.testing.assert_close(out[i], expected)


# ------------------------------------------------------------------------------------------------ GCN

DIRECTED = torch.tensor([[0, 0, 1, 2], [1, 2, 2, 0]])  # 0→1, 0→2, 1→2, 2→0


def _gcn_reference(h, edge_index, weight, bias):
    """DGL GraphConv(norm='both'): b + Σ_{u→v} d_out(u)^-½ d_in(v)^-½ W h_u, degrees clamped at 1."""
    n = h.shape[0]
    out_deg = torch.zeros(n).index_add_(0, edge_index[0], torch.ones(edge_index.shape[1])).clamp(min=1)
    in_deg = torch.zeros(n).index_add_(0, edge_index[1], torch.ones(edge_index.shape[1])).clamp(min=1)
    out = bias.repeat(n, 1)
    for u, v in edge_index.t().tolist():
        out[v] += (h[u] @ weight) / (out_deg[u].sqrt() * in_deg[v].sqrt())
    return out


def test_gcn_layer_matches_hand_computation_on_directed_graph():
    torch.manual_seed(0)
    layer = GCNLayer(4, 4, dropout=0.0, batch_norm=False, residual=True).eval()
    with torch.no_grad():
        layer.bias.normal_()
    h = torch.randn(3, 4)
    expected = h + torch.relu(_gcn_reference(h, DIRECTED, layer.weight, layer.bias))
    torch.testing.assert_close(layer(h, gcn_adjacency(DIRECTED, 3)), expected)


def test_gcn_normalisation_agrees_with_pyg_only_on_symmetric_graphs():
    from torch_geometric.nn import GCNConv

    torch.manual_seed(0)
    ours = GCNLayer(4, 5, dropout=0.0, batch_norm=False, residual=False, activation=False)
    pyg = GCNConv(4, 5, add_self_loops=False, normalize=True)
    with torch.no_grad():
        pyg.lin.weight.copy_(ours.weight.t())
        pyg.bias.copy_(ours.bias)
    h = torch.randn(3, 4)
    symmetric = torch.cat([DIRECTED, DIRECTED.flip(0)], dim=1)
    torch.testing.assert_close(ours(h, gcn_adjacency(symmetric, 3)), pyg(h, symmetric))
    # directed: PyG normalises by in-degree at both ends, the benchmark (DGL) by out-degree at the source
    assert not torch.allclose(ours(h, gcn_adjacency(DIRECTED, 3)), pyg(h, DIRECTED), atol=1e-3)


def test_gcn_self_loop_option_adds_one_loop_per_node():
    meta = meta_for("node_classification", 3)
    cfg = dict(model="GCN", L=2, hidden_dim=32, out_dim=32, residual=False, batch_norm=False, dropout=0.0,
               readout="mean", in_feat_dropout=0.0)
    torch.manual_seed(0)
    with_loops = build_model({**cfg, "self_loop": True}, meta).eval()
    without = build_model({**cfg, "self_loop": False}, meta).eval()
    without.load_state_dict(with_loops.state_dict())
    batch = one_batch(random_graphs(3, seed=1))
    n = batch.num_nodes
    looped = one_batch(random_graphs(3, seed=1))
    looped.edge_index = torch.cat([looped.edge_index, torch.arange(n).expand(2, n)], dim=1)
    torch.testing.assert_close(with_loops(batch), without(looped))
    assert not torch.allclose(with_loops(batch), without(batch))


# ------------------------------------------------------------------------------------------------ GatedGCN


def test_gated_gcn_layer_matches_hand_computation():
    torch.manual_seed(0)
    layer = GatedGCNLayer(3, 3, dropout=0.0, batch_norm=False, residual=True).eval()
    h, e = torch.randn(3, 3), torch.randn(4, 3)
    h_out, e_out = layer(h, e, DIRECTED)
    A, B, C, D, E = (lambda x, m=m: m(x) for m in (layer.A, layer.B, layer.C, layer.D, layer.E))
    num, den = torch.zeros(3, 3), torch.zeros(3, 3)
    e_hat = torch.zeros(4, 3)
    for k, (u, v) in enumerate(DIRECTED.t().tolist()):
        e_hat[k] = C(e[k]) + D(h[u]) + E(h[v])  # D on the source, E on the destination
        num[v] += torch.sigmoid(e_hat[k]) * B(h[u])
        den[v] += torch.sigmoid(e_hat[k])
    h_new = A(h) + num / (den + 1e-6)
    torch.testing.assert_close(h_out, h + torch.relu(h_new))
    torch.testing.assert_close(e_out, e + torch.relu(e_hat))


def test_gated_gcn_constant_edge_input_is_exact():
    torch.manual_seed(0)
    layer = GatedGCNLayer(3, 3, dropout=0.0, batch_norm=True, residual=True).train()
    h = torch.randn(3, 3)
    constant = torch.randn(1, 3)
    fast = layer(h, constant.expand(4, -1), DIRECTED)
    slow = layer(h, constant.repeat(4, 1), DIRECTED)
    for a, b in zip(fast, slow, strict=True):
        torch.testing.assert_close(a, b)


def test_gated_gcn_skips_the_unused_last_edge_update_without_changing_nodes():
    meta = meta_for("graph_regression", 1)
    cfg = run_config("molecules_graph_regression_GatedGCN_ZINC_100k", {"L": 2, "hidden_dim": 8, "out_dim": 8})
    torch.manual_seed(0)
    model = build_model(cfg, meta).eval()
    batch = one_batch(random_graphs(4))
    h = model.node_encoder(batch.x, None)
    e = model.edge_encoder(None, batch.num_edges)
    skipped = model.architecture(h, e, batch).nodes
    h_full, e_full = h, e
    for layer in model.architecture.layers:
        h_full, e_full = layer(h_full, e_full, batch.edge_index, edge_output=True)
    torch.testing.assert_close(skipped, h_full)
    assert e_full.shape == (batch.num_edges, 8)


# ------------------------------------------------------------------------------------------------ MLP


def test_mlp_gate_and_forced_readout():
    meta = meta_for("graph_regression", 1)
    base = dict(model="MLP", L=2, hidden_dim=6, dropout=0.0, readout="max", in_feat_dropout=0.0)
    gated = build_model({**base, "gated": True}, meta).eval()
    plain = build_model({**base, "gated": False}, meta).eval()
    assert gated.architecture.readout == "sum" and plain.architecture.readout == "mean"  # config readout ignored
    assert gated.head.readout == "sum" and plain.head.readout == "mean"
    h = torch.randn(5, 6)
    arch = gated.architecture
    expected = h
    for layer in arch.layers:
        expected = torch.relu(layer(expected))
    expected = torch.sigmoid(arch.gate(expected)) * expected
    torch.testing.assert_close(arch(h, None, None).nodes, expected)


# ------------------------------------------------------------------------------------------------ composition

SMALL = {
    "MLP": dict(model="MLP", L=2, hidden_dim=16, dropout=0.0, gated=False, in_feat_dropout=0.0),
    "GCN": dict(model="GCN", L=2, hidden_dim=16, out_dim=16, residual=True, batch_norm=True, dropout=0.0,
                readout="mean", in_feat_dropout=0.0),
    "GatedGCN": dict(model="GatedGCN", L=2, hidden_dim=16, out_dim=16, residual=True, batch_norm=True,
                     dropout=0.0, readout="mean", edge_feat=True, in_feat_dropout=0.0),
}


# ------------------------------------------------------------------------------------------------ encoders


def test_pe_is_added_or_replaces_the_node_input():
    torch.manual_seed(0)
    adds = build_model({**SMALL["GCN"], "pos_enc": True, "pos_enc_dim": 3}, meta_for("node_classification", 3))
    replaces = build_model({**SMALL["GCN"], "pos_enc": True, "pos_enc_dim": 3},
                           meta_for("node_classification", 3, pe_usage="replace"))
    x, pe = torch.tensor([0, 4, 2]), torch.randn(3, 3)
    enc = adds.node_encoder
    torch.testing.assert_close(enc(x, pe), enc.embedding(x) + enc.pe_projection(pe))
    assert replaces.node_encoder.embedding is None
    torch.testing.assert_close(replaces.node_encoder(x, pe), replaces.node_encoder.pe_projection(pe))


def test_edge_encoder_uses_ones_unless_edge_feat():
    torch.manual_seed(0)
    meta = meta_for("graph_regression", 1)
    off = build_model({**SMALL["GatedGCN"], "edge_feat": False}, meta).edge_encoder
    on = build_model(SMALL["GatedGCN"], meta).edge_encoder
    attr = torch.tensor([0, 3, 1])
    torch.testing.assert_close(off(attr, 3), off.layer(torch.ones(3, 1)))
    torch.testing.assert_close(on(attr, 3), on.layer.weight[attr])


def test_continuous_inputs_feed_the_mlp_directly():
    meta = meta_for("graph_classification", 2)
    meta.node_features = FeatureSpec("continuous", 3)
    mlp = build_model(dict(SMALL["MLP"], L=4), meta)
    assert mlp.node_encoder.embedding is None and mlp.architecture.layers[0].in_features == 3
    assert len(mlp.architecture.layers) == 4
    gcn = build_model(SMALL["GCN"], meta)
    assert isinstance(gcn.node_encoder.embedding, torch.nn.Linear) and gcn.node_encoder.embedding.in_features == 3


@pytest.mark.parametrize(("cfg", "message"), [
    ({**SMALL["GCN"], "model": "GraphTransformer"}, "unknown model 'GraphTransformer'"),
    ({k: v for k, v in SMALL["GCN"].items() if k != "hidden_dim"}, "needs config key(s) hidden_dim"),
    ({**SMALL["GCN"], "readout": "median"}, "unknown readout 'median'"),
    ({**SMALL["GCN"], "pos_enc": True}, "pos_enc_dim"),
])
def test_bad_model_configs_raise_one_line_config_errors(cfg, message):
    with pytest.raises(ConfigError) as err:
        build_model(cfg, meta_for("node_classification", 3))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_edge_features_requested_on_a_dataset_without_them():
    with pytest.raises(ConfigError, match="edge_feat is true but the dataset has no edge features"):
        build_model(SMALL["GatedGCN"], meta_for("graph_regression", 1, edge_features=False))


def test_3wlgnn_per_block_scorers_are_xavier_with_zero_bias_and_gin_keeps_the_default():
    torch.manual_seed(0)
    wl = build_model(run_config("molecules_graph_regression_3WLGNN_ZINC_100k"), describe_dataset("ZINC"))
    gin = build_model(run_config("molecules_graph_regression_GIN_ZINC_100k"), describe_dataset("ZINC"))
    for linear in wl.head.linears:
        assert torch.count_nonzero(linear.bias) == 0
        fan_in, fan_out = linear.weight.shape[1], linear.weight.shape[0]
        assert linear.weight.abs().max() <= (6 / (fan_in + fan_out)) ** 0.5
    assert all(torch.count_nonzero(linear.bias) > 0 for linear in gin.head.linears)  # PyTorch default init
