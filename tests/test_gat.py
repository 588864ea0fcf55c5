"""GAT: layers against hand computations and PyG, the sparse attention kernel against autograd, and exact
parameter counts of every published GAT configuration."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import TASK_OUTPUTS, labelled, meta_for, one_batch, published_rows, random_graphs, with_pairs

from gnnbench.config.presets import all_presets, run_config
from gnnbench.data.catalog import describe_dataset
from gnnbench.errors import ConfigError
from gnnbench.models.build import build_model, count_parameters
from gnnbench.models.gat import CustomGATLayer, CustomGATLayerEdgeReprFeat, CustomGATLayerIsotropic, GATLayer
from gnnbench.models.sparse import AttentionGraph, SparseAdjacency, attention

# 3 nodes, directed: 0→1, 2→1, 1→2, 0→2; node 0 has no in-edge.
DIRECTED = torch.tensor([[0, 2, 1, 0], [1, 1, 2, 2]])
IN_EDGES = {0: [], 1: [(0, 0), (1, 2)], 2: [(2, 1), (3, 0)]}  # v: [(edge id, u)]


def _leaky(x: float, slope: float) -> float:
    return x if x > 0 else slope * x


def _softmax(scores: list[float]) -> list[float]:
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    return [x / sum(exps) for x in exps]


def _batch_norm(x: torch.Tensor) -> torch.Tensor:
    """BatchNorm1d in training mode with weight 1, bias 0."""
    return (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + 1e-5)


# ------------------------------------------------------------------------------------------------ GATLayer


def test_gat_layer_matches_hand_computation_on_directed_graph():
    torch.manual_seed(0)
    heads, d = 2, 2
    layer = GATLayer(4, d, heads, dropout=0.0, batch_norm=True, residual=True).train()
    with torch.no_grad():
        layer.bias.normal_()
    h = torch.randn(3, 4)
    W, a_l, a_r, b = (t.detach() for t in (layer.fc.weight, layer.attn_l[0], layer.attn_r[0], layer.bias))
    conv = torch.zeros(3, heads * d)
    for k in range(heads):
        Wk = W[k * d:(k + 1) * d]
        z = [Wk @ h[u] for u in range(3)]
        for v, edges in IN_EDGES.items():
            if edges:
                alpha = _softmax([_leaky(float(a_l[k] @ z[u] + a_r[k] @ z[v]), 0.2) for _, u in edges])
                conv[v, k * d:(k + 1) * d] = sum(a * z[u] for a, (_, u) in zip(alpha, edges, strict=True))
    conv += b  # node 0 (no in-edge) gets the bias alone
    graph = AttentionGraph(DIRECTED, 3)
    torch.testing.assert_close(layer.conv(h, graph), conv)
    torch.testing.assert_close(layer(h, graph), h + F.elu(_batch_norm(conv)))


def test_gat_layer_equals_pyg_gatconv_values_and_gradients():
    from torch_geometric.nn import GATConv

    torch.manual_seed(0)
    columns = random_graphs(6, seed=3, directed=True)
    batch = one_batch(columns)
    n = batch.num_nodes
    ours = GATLayer(5, 3, 4, dropout=0.0, batch_norm=False, residual=False)
    pyg = GATConv(5, 3, 4, add_self_loops=False, bias=True)
    with torch.no_grad():
        pyg.lin.weight.copy_(ours.fc.weight)
        pyg.att_src.copy_(ours.attn_l)
        pyg.att_dst.copy_(ours.attn_r)
        pyg.bias.normal_()
        ours.bias.copy_(pyg.bias)
    h = torch.randn(n, 5, requires_grad=True)
    mine = ours.conv(h, AttentionGraph(batch.edge_index, n))
    theirs = pyg(h, batch.edge_index)
    torch.testing.assert_close(mine, theirs)
    probe = torch.randn_like(mine)
    grads = torch.autograd.grad((mine * probe).sum(), [h, ours.fc.weight, ours.attn_l, ours.attn_r])
    expected = torch.autograd.grad((theirs * probe).sum(), [h, pyg.lin.weight, pyg.att_src, pyg.att_dst])
    for a, b in zip(grads, expected, strict=True):
        torch.testing.assert_close(a, b)


def test_gat_layer_initialisation_and_optional_batch_norm():
    torch.manual_seed(0)
    layer = GATLayer(64, 16, 8, dropout=0.0, batch_norm=False, residual=True)
    assert layer.batchnorm_h is None  # created only with batch_norm (DGL-builtin GATLayer)
    assert torch.count_nonzero(layer.bias) == 0
    # Glorot normal with gain √2: std = √2 · √(2 / (fan_in + fan_out)); attn (1, H, d): fan_in H·d, fan_out d
    assert layer.fc.weight.std().item() == pytest.approx(math.sqrt(2) * math.sqrt(2 / (64 + 128)), rel=0.05)
    attn = torch.cat([layer.attn_l.flatten(), layer.attn_r.flatten()])
    assert attn.std().item() == pytest.approx(math.sqrt(2) * math.sqrt(2 / (128 + 16)), rel=0.2)
    assert GATLayer(64, 16, 3, 0.0, True, True).residual is False  # 64 ≠ 3·16


# ------------------------------------------------------------------------------------------------ attention kernel


def _reference_attention(z, el, er, es, edge_index, slope):
    """Softmax attention with plain autograd ops: one gathered message per edge."""
    from gnnbench.models.sparse import scatter_sum, segment_softmax

    src, dst = edge_index
    n, heads = el.shape
    scores = el[src] + er[dst] + (es if es is not None else 0)
    alpha = segment_softmax(F.leaky_relu(scores, slope), dst, n)
    messages = z.view(n, heads, -1)[src] * alpha.unsqueeze(-1)
    return scatter_sum(messages, dst, n).reshape(n, -1)


def _graphs():
    torch.manual_seed(1)
    n = 9
    edges = torch.randint(0, n - 1, (2, 40))  # node n − 1: no edges at all
    edges = torch.cat([edges, edges[:, :3]], dim=1)  # parallel edges count separately in the softmax
    by_source = edges[:, torch.argsort(edges[0] * n + edges[1])]  # the usual, source-sorted layout
    return n, {"unsorted": edges, "source-sorted": by_source}


@pytest.mark.parametrize("layout", ["unsorted", "source-sorted"])
@pytest.mark.parametrize("edge_scores", [False, True])
def test_sparse_attention_equals_autograd_reference(layout, edge_scores):
    n, graphs = _graphs()
    edge_index = graphs[layout]
    heads, d, e = 3, 4, edge_index.shape[1]
    dt = torch.float64
    inputs = [torch.randn(n, heads * d, dtype=dt), torch.randn(n, heads, dtype=dt), torch.randn(n, heads, dtype=dt)]
    if edge_scores:
        inputs.append(torch.randn(e, heads, dtype=dt))
    inputs = [x.requires_grad_() for x in inputs]
    es = inputs[3] if edge_scores else None
    graph = AttentionGraph(edge_index, n)
    out = attention(*inputs[:3], graph, 0.2, edge_scores=es)
    expected = _reference_attention(*inputs[:3], es, edge_index, 0.2)
    torch.testing.assert_close(out, expected)
    probe = torch.randn_like(out)
    grads = torch.autograd.grad((out * probe).sum(), inputs)
    expected_grads = torch.autograd.grad((expected * probe).sum(), inputs)
    for a, b in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("edge_scores", [False, True])
def test_sparse_attention_with_dropout_has_exact_gradients(edge_scores):
    n, graphs = _graphs()
    edge_index = graphs["source-sorted"]
    graph = AttentionGraph(edge_index, n)
    dt = torch.float64
    inputs = [torch.randn(n, 6, dtype=dt), torch.randn(n, 2, dtype=dt), torch.randn(n, 2, dtype=dt)]
    if edge_scores:
        inputs.append(torch.randn(edge_index.shape[1], 2, dtype=dt))

    def f(*xs):
        torch.manual_seed(5)  # the same dropout mask on every call
        return attention(*xs[:3], graph, 0.01, 0.4, True, xs[3] if edge_scores else None)

    assert torch.autograd.gradcheck(f, [x.requires_grad_() for x in inputs], fast_mode=True)
    out = f(*inputs)
    # dropout acts on the normalised coefficients: with z = 1 every node sums its kept α / (1 − p)
    assert not torch.allclose(out, attention(*inputs[:3], graph, 0.01, edge_scores=inputs[3] if edge_scores else None))


def test_attention_coefficients_of_each_node_sum_to_one():
    n, graphs = _graphs()
    edge_index = graphs["unsorted"]
    heads = 2
    torch.manual_seed(0)
    # z_u = one-hot(u) in every head: the output of v is its row of attention coefficients α_·v
    z = torch.eye(n).repeat(1, heads)
    alpha = attention(z, torch.randn(n, heads), torch.randn(n, heads), AttentionGraph(edge_index, n), 0.2)
    alpha = alpha.view(n, heads, n)
    has_in_edges = torch.bincount(edge_index[1], minlength=n) > 0
    torch.testing.assert_close(alpha.sum(-1)[has_in_edges], torch.ones(int(has_in_edges.sum()), heads))
    assert torch.all(alpha[~has_in_edges] == 0)
    adjacency = torch.zeros(n, n, dtype=torch.bool)
    adjacency[edge_index[1], edge_index[0]] = True
    assert torch.all(alpha[~adjacency.unsqueeze(1).expand(-1, heads, -1)] == 0)
    assert torch.all(alpha[adjacency.unsqueeze(1).expand(-1, heads, -1)] > 0)


# ------------------------------------------------------------------------------------------------ custom layers


def test_custom_edgefeat_layer_matches_hand_computation():
    torch.manual_seed(0)
    heads, d = 2, 2
    layer = CustomGATLayer(4, d, heads, dropout=0.0, batch_norm=True, residual=True).train()
    h, e = torch.randn(3, 4), torch.randn(4, 4)
    h_out, e_out = layer(h, e, AttentionGraph(DIRECTED, 3))
    assert e_out is e  # the edge input passes through unchanged
    expected = torch.zeros(3, heads * d)
    for k in range(heads):  # head k = CustomGATHeadLayer: fc (d × d_in), attn_fc (1 × 2d), slope 0.01
        fc, attn_fc = layer.fc_weight[k].detach(), layer.attn_weight[k].detach()
        z = [fc @ h[u] for u in range(3)]
        head = torch.zeros(3, d)
        for v, edges in IN_EDGES.items():
            if edges:
                alpha = _softmax([_leaky(float(attn_fc @ torch.cat([z[u], z[v]])), 0.01) for _, u in edges])
                head[v] = sum(a * z[u] for a, (_, u) in zip(alpha, edges, strict=True))
        expected[:, k * d:(k + 1) * d] = F.elu(_batch_norm(head))  # BN per head
    torch.testing.assert_close(h_out, h + expected)


@pytest.mark.parametrize("batch_norm", [True, False])  # without BN, which would cancel fc_proj's bias
def test_custom_edgereprfeat_layer_matches_hand_computation(batch_norm):
    torch.manual_seed(0)
    heads, d = 2, 2
    layer = CustomGATLayerEdgeReprFeat(4, d, heads, dropout=0.0, batch_norm=batch_norm, residual=True).train()
    bn = _batch_norm if batch_norm else (lambda x: x)
    h, e = torch.randn(3, 4), torch.randn(4, 4)
    h_out, e_out = layer(h, e, AttentionGraph(DIRECTED, 3))
    expected_h, expected_e = torch.zeros(3, heads * d), torch.zeros(4, heads * d)
    for k in range(heads):
        fc_h, fc_e = layer.fc_h_weight[k].detach(), layer.fc_e_weight[k].detach()
        proj_w, proj_b, attn_fc = (t[k].detach() for t in (layer.fc_proj_weight, layer.fc_proj_bias, layer.attn_weight))
        z = [fc_h @ h[u] for u in range(3)]
        concat = {i: torch.cat([fc_e @ e[i], z[u], z[v]]) for i, (u, v) in enumerate(DIRECTED.t().tolist())}
        head_h, head_e = torch.zeros(3, d), torch.zeros(4, d)
        for i, c in concat.items():
            head_e[i] = proj_w @ c + proj_b
        for v, edges in IN_EDGES.items():
            if edges:
                alpha = _softmax([_leaky(float(attn_fc @ concat[i]), 0.01) for i, _ in edges])
                head_h[v] = sum(a * z[u] for a, (_, u) in zip(alpha, edges, strict=True))
        expected_h[:, k * d:(k + 1) * d] = F.elu(bn(head_h))
        expected_e[:, k * d:(k + 1) * d] = F.elu(bn(head_e))
    torch.testing.assert_close(h_out, h + expected_h)
    torch.testing.assert_close(e_out, e + expected_e)
    # the last layer skips its (unread) edge output without changing the nodes
    h_only, no_edges = layer(h, e, AttentionGraph(DIRECTED, 3), edge_output=False)
    assert no_edges is None
    torch.testing.assert_close(h_only, h_out)


def test_custom_edgereprfeat_constant_edge_input_is_exact():
    torch.manual_seed(0)
    layer = CustomGATLayerEdgeReprFeat(4, 2, 2, dropout=0.0, batch_norm=True, residual=True).train()
    h, constant = torch.randn(3, 4), torch.randn(1, 4)
    graph = AttentionGraph(DIRECTED, 3)
    fast = layer(h, constant.expand(4, -1), graph)
    slow = layer(h, constant.repeat(4, 1), graph)
    for a, b in zip(fast, slow, strict=True):
        torch.testing.assert_close(a, b)


def test_custom_isotropic_layer_matches_hand_computation():
    torch.manual_seed(0)
    heads, d = 2, 2
    layer = CustomGATLayerIsotropic(4, d, heads, dropout=0.0, batch_norm=False, residual=True)
    h, e = torch.randn(3, 4), torch.randn(4, 4)
    adjacency = SparseAdjacency(DIRECTED, torch.ones(4), 3)
    h_out, e_out = layer(h, e, adjacency)
    expected = torch.zeros(3, heads * d)
    for k in range(heads):
        for u, v in DIRECTED.t().tolist():
            expected[v, k * d:(k + 1) * d] += layer.fc_weight[k] @ h[u]
    assert e_out is e
    torch.testing.assert_close(h_out, h + F.elu(expected))


def test_custom_layers_create_per_head_parameters_and_always_a_batch_norm():
    heads, d, d_in = 3, 5, 15
    counts = {
        CustomGATLayer: heads * (d * d_in + 2 * d + 2 * d),  # fc, attn_fc, BN(d)
        CustomGATLayerEdgeReprFeat: heads * (2 * d * d_in + 3 * d * d + d + 3 * d + 4 * d),
        CustomGATLayerIsotropic: heads * (d * d_in + 2 * d),
    }
    for cls, expected in counts.items():
        layer = cls(d_in, d, heads, dropout=0.0, batch_norm=False, residual=True)
        assert sum(p.numel() for p in layer.parameters()) == expected, cls.__name__
    # per head, nn.Linear's default init: U(−1/√fan_in, 1/√fan_in)
    layer = CustomGATLayerEdgeReprFeat(d_in, d, heads, dropout=0.0, batch_norm=False, residual=True)
    assert layer.fc_h_weight.abs().max() <= 1 / math.sqrt(d_in)
    assert layer.fc_proj_weight.abs().max() <= 1 / math.sqrt(3 * d)


# ------------------------------------------------------------------------------------------------ the network


def _build(preset: str, overrides: dict | None = None):
    return build_model(run_config(preset, overrides or {}), describe_dataset(all_presets()[preset]["dataset"]))


PUBLISHED = published_rows("GAT")


def test_every_published_gat_row_is_checked():
    names = {name for name, _, _ in PUBLISHED}
    assert len(PUBLISHED) == 16
    assert {"COLLAB_edge_classification_GAT_edgefeat", "COLLAB_edge_classification_GAT_edgereprfeat",
            "COLLAB_edge_classification_GAT_isotropic", "COLLAB_edge_classification_GAT_40k"} <= names


def test_paper_era_count_without_gatconv_bias():
    # DGL ≤ 0.5 had no GATConv bias: Dwivedi et al., Table 3 prints 102,385 for ZINC GAT 100k = 102,961 − (3·18·8 + 144)
    # (docs/protocols/benchmarking-gnns.md#parameter-counts-and-budgets)
    model = _build("molecules_graph_regression_GAT_ZINC_100k")
    biases = sum(layer.bias.numel() for layer in model.architecture.layers)
    assert biases == 3 * 18 * 8 + 144
    assert count_parameters(model) - biases == 102385


def test_head_split_convention_and_edge_inputs():
    gat = _build("SBMs_node_clustering_GAT_PATTERN_100k").architecture
    assert (gat.input_width, gat.out_width, gat.uses_edges) == (152, 152, False)
    assert [(layer.heads, layer.head_dim) for layer in gat.layers] == [(8, 19)] * 3 + [(1, 152)]
    assert all(layer.residual for layer in gat.layers)
    model = _build("COLLAB_edge_classification_GAT_edgereprfeat")
    assert model.architecture.uses_edges and model.architecture.edge_input_width == 39
    assert model.edge_encoder.layer.in_features == 2  # Linear(2, hidden·heads) on ones (edge_feat false)
    assert _build("COLLAB_edge_classification_GAT_40k").edge_encoder is None


@pytest.mark.parametrize("layer_type", ["dgl", "edgefeat", "edgereprfeat", "isotropic"])
def test_every_task_runs_forward_and_backward(layer_type):
    cfg = dict(model="GAT", L=2, hidden_dim=3, out_dim=6, n_heads=2, residual=True, batch_norm=True, dropout=0.1,
               readout="mean", in_feat_dropout=0.0, layer_type=layer_type, edge_feat=True)
    for task in TASK_OUTPUTS:
        torch.manual_seed(0)
        model = build_model(cfg, meta_for(task))
        batch = one_batch(labelled(random_graphs(4, seed=2), task))
        if task == "link_prediction":
            batch = with_pairs(batch)
        out = model(batch)
        total = sum(o.sum() for o in out) if isinstance(out, tuple) else out.sum()
        total.backward()
        assert torch.isfinite(total), task
        assert model.architecture.layers[0].batchnorm_h.weight.grad is not None, task


def test_layer_type_and_self_loop_options():
    cfg = dict(model="GAT", L=2, hidden_dim=3, out_dim=6, n_heads=2, residual=True, batch_norm=False, dropout=0.0,
               readout="mean", in_feat_dropout=0.0)
    meta = meta_for("node_classification")
    with pytest.raises(ConfigError, match="layer_type"):
        build_model({**cfg, "layer_type": "edgefeet"}, meta)
    with pytest.raises(ConfigError, match="self_loop"):
        build_model({**cfg, "layer_type": "edgefeat", "self_loop": True}, meta)
    torch.manual_seed(0)
    looped = build_model({**cfg, "self_loop": True}, meta).eval()
    plain = build_model(cfg, meta).eval()
    plain.load_state_dict(looped.state_dict())
    batch = one_batch(random_graphs(3, seed=1))
    with_loops = one_batch(random_graphs(3, seed=1))
    n = batch.num_nodes
    with_loops.edge_index = torch.cat([with_loops.edge_index, torch.arange(n).expand(2, n)], dim=1)
    h = looped.node_encoder(batch.x, None)
    torch.testing.assert_close(looped.architecture(h, None, batch).nodes, plain.architecture(h, None, with_loops).nodes)
    assert not torch.allclose(looped.architecture(h, None, batch).nodes, plain.architecture(h, None, batch).nodes)


@pytest.mark.parametrize("layer_type", ["dgl", "edgereprfeat"])
def test_graphs_without_edges(layer_type):
    cfg = dict(model="GAT", L=2, hidden_dim=3, out_dim=6, n_heads=2, residual=True, batch_norm=True, dropout=0.0,
               readout="mean", in_feat_dropout=0.0, layer_type=layer_type, edge_feat=False)
    model = build_model(cfg, meta_for("graph_regression"))
    batch = one_batch(labelled(random_graphs(3, seed=0, edge_prob=0.0), "graph_regression"))
    assert batch.num_edges == 0
    out = model(batch)
    out.sum().backward()
    assert torch.isfinite(out).all()
    # without in-edges a standard layer outputs its bias alone: every node of the first layer gets the same value
    if layer_type == "dgl":
        h = model.node_encoder(batch.x, None)
        graph = AttentionGraph(batch.edge_index, batch.num_nodes)
        conv = model.architecture.layers[0].conv(h, graph)
        torch.testing.assert_close(conv, model.architecture.layers[0].bias.expand_as(conv))
