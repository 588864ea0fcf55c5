"""Models: exact parameter counts, layers against hand computations, equivariance, and learning."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import labelled, meta_for, one_batch, random_graphs

from gnnbench.config.presets import all_presets, run_config
from gnnbench.data.catalog import describe_dataset
from gnnbench.data.meta import FeatureSpec
from gnnbench.data.store import GraphColumns
from gnnbench.errors import ConfigError
from gnnbench.models import build_model, count_parameters
from gnnbench.models.gated_gcn import GatedGCNLayer
from gnnbench.models.gcn import GCNLayer, gcn_adjacency
from gnnbench.models.readout import MLPReadout
from gnnbench.models.scatter import scatter_max, scatter_mean, scatter_sum
from gnnbench.training.losses import get_loss

# Parameter totals the original code prints (spec benchmarking-gnns.md §1.1, DGL 0.6.1), transcribed here
# independently of config/presets/*.yaml.
PUBLISHED_COUNTS = {
    ("SBMs_node_clustering_MLP_PATTERN_100k", ()): 105263,
    ("SBMs_node_clustering_MLP_PATTERN_500k", ()): 506819,
    ("SBMs_node_clustering_GCN_PATTERN_100k", ()): 100923,
    ("SBMs_node_clustering_GCN_PATTERN_500k", ()): 500823,
    ("SBMs_node_clustering_GatedGCN_PATTERN_100k", ()): 104003,
    ("SBMs_node_clustering_GatedGCN_PATTERN_500k", ()): 502223,
    ("SBMs_node_clustering_GatedGCN_PATTERN_PE_500k", ()): 502457,
    ("CSL_graph_classification_MLP_CSL_100k", ()): 98335,
    ("CSL_graph_classification_MLP_CSL_PE_100k", ()): 101235,
    ("CSL_graph_classification_GCN_CSL_100k", ()): 100927,
    ("CSL_graph_classification_GCN_CSL_PE_100k", ()): 103847,
    ("CSL_graph_classification_GatedGCN_CSL_100k", ()): 104007,
    ("CSL_graph_classification_GatedGCN_CSL_PE_100k", ()): 105407,
    ("molecules_graph_regression_MLP_ZINC_100k", ()): 108975,
    ("molecules_graph_regression_MLP_ZINC_500k", ()): 505225,
    ("molecules_graph_regression_GCN_ZINC_100k", ()): 103077,
    ("molecules_graph_regression_GCN_ZINC_500k", ()): 505079,
    ("molecules_graph_regression_GatedGCN_ZINC_100k", ()): 105735,
    ("molecules_graph_regression_GatedGCN_ZINC_500k", ()): 504153,
    ("molecules_graph_regression_GatedGCN_ZINC_PE_500k", ()): 504855,
    ("molecules_graph_regression_GatedGCN_ZINC_100k", (("edge_feat", True),)): 105875,
    ("molecules_graph_regression_GatedGCN_ZINC_500k", (("edge_feat", True),)): 504309,
    ("molecules_graph_regression_GatedGCN_ZINC_PE_500k", (("edge_feat", True),)): 505011,
    ("molecules_graph_regression_MLP_AQSOL_100k", ()): 114525,
    ("molecules_graph_regression_GCN_AQSOL_100k", ()): 108442,
    ("molecules_graph_regression_GatedGCN_AQSOL_100k", ()): 108325,
    ("molecules_graph_regression_GatedGCN_AQSOL_100k", (("edge_feat", True),)): 108535,
    ("molecules_graph_regression_GatedGCN_AQSOL_PE_500k", (("edge_feat", True),)): 507663,
}


def count(preset: str, overrides: dict | None = None) -> int:
    dataset = describe_dataset(all_presets()[preset]["dataset"])
    return count_parameters(build_model(run_config(preset, overrides), dataset))


@pytest.mark.parametrize(("preset", "overrides"), sorted(PUBLISHED_COUNTS), ids=lambda v: str(v))
def test_parameter_count_equals_published(preset, overrides):
    assert count(preset, dict(overrides)) == PUBLISHED_COUNTS[(preset, overrides)]


def test_every_preset_with_a_known_total_builds_to_it():
    checked = 0
    for name, preset in all_presets().items():
        if "total_params" in preset:
            assert count(name) == preset["total_params"], name
            checked += 1
        for run in preset["runs"] if isinstance(preset["runs"], list) else []:
            if "total_params" in run:
                assert count(name, run["set"]) == run["total_params"], (name, run["set"])
    assert checked == 27  # every non-withheld total of the MLP, GCN and GatedGCN rows


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
    h_skip, e_skip = model.architecture(h, batch.edge_index, e)
    h_full, e_full = model.architecture(h, batch.edge_index, e, edge_output=True)
    torch.testing.assert_close(h_skip, h_full)
    assert e_skip is None and e_full.shape == (batch.num_edges, 8)


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
    torch.testing.assert_close(arch(h, torch.zeros(2, 0, dtype=torch.long))[0], expected)


# ------------------------------------------------------------------------------------------------ composition

TASKS = [("node_classification", 3), ("graph_classification", 2), ("graph_regression", 1)]
SMALL = {
    "MLP": dict(model="MLP", L=2, hidden_dim=16, dropout=0.0, gated=False, in_feat_dropout=0.0),
    "GCN": dict(model="GCN", L=2, hidden_dim=16, out_dim=16, residual=True, batch_norm=True, dropout=0.0,
                readout="mean", in_feat_dropout=0.0),
    "GatedGCN": dict(model="GatedGCN", L=2, hidden_dim=16, out_dim=16, residual=True, batch_norm=True,
                     dropout=0.0, readout="mean", edge_feat=True, in_feat_dropout=0.0),
}


def _permute_within_graphs(columns: GraphColumns, seed: int) -> tuple[GraphColumns, np.ndarray]:
    """Relabel nodes inside each graph; returns the new columns and perm with new_node[i] = old_node[perm[i]]."""
    rng = np.random.default_rng(seed)
    ptr = columns.node_ptr
    perm = np.concatenate([ptr[g] + rng.permutation(n) for g, n in enumerate(columns.num_nodes)])
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(len(perm))
    graph_of_edge = np.repeat(np.arange(columns.num_graphs), columns.num_edges)
    offsets = ptr[graph_of_edge]
    src = inverse[columns.src + offsets] - offsets
    dst = inverse[columns.dst + offsets] - offsets
    node = {k: v[perm] for k, v in columns.node.items()}
    return GraphColumns(columns.num_nodes, columns.num_edges, src.astype(np.int32), dst.astype(np.int32), node,
                        dict(columns.edge), dict(columns.graph)), perm


@pytest.mark.parametrize("model", SMALL)
@pytest.mark.parametrize(("task", "outputs"), TASKS)
@pytest.mark.parametrize("pe_usage", ["add", "replace"])
def test_permutation_equivariance_and_invariance(model, task, outputs, pe_usage):
    columns = labelled(random_graphs(6, seed=2), task, outputs)
    meta = meta_for(task, outputs, pe_usage=pe_usage)
    torch.manual_seed(0)
    net = build_model({**SMALL[model], "pos_enc": True, "pos_enc_dim": 3}, meta).eval()
    pe = torch.randn(int(columns.num_nodes.sum()), 3)
    permuted, perm = _permute_within_graphs(columns, seed=3)
    with torch.no_grad():
        out = net(one_batch(columns, pe))
        out_perm = net(one_batch(permuted, pe[torch.from_numpy(perm)]))
    if task.startswith("node"):
        torch.testing.assert_close(out_perm, out[torch.from_numpy(perm)], atol=1e-5, rtol=1e-4)
    else:
        torch.testing.assert_close(out_perm, out, atol=1e-5, rtol=1e-4)
    assert out.shape == ((int(columns.num_nodes.sum()), outputs) if task.startswith("node")
                         else (columns.num_graphs,) if outputs == 1 else (columns.num_graphs, outputs))


@pytest.mark.parametrize("model", SMALL)
@pytest.mark.parametrize(("task", "outputs"), TASKS)
def test_training_steps_reduce_the_loss(model, task, outputs):
    columns = labelled(random_graphs(16, seed=4), task, outputs)
    meta = meta_for(task, outputs)
    torch.manual_seed(0)
    net = build_model(SMALL[model], meta).train()
    loss_fn = get_loss(meta.loss)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    batch = one_batch(columns)
    losses = []
    for _ in range(60):
        optimizer.zero_grad()
        loss = loss_fn(net(batch), batch.y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.6 * losses[0], losses[::10]


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
