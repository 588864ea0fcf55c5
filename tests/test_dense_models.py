"""Dense WL-GNNs (RingGNN, 3WLGNN): dense input, layers against transcriptions of the released code's layers
(graphdeeplearning/benchmarking-gnns ``layers/ring_gnn_equiv_layer.py``, ``layers/three_wl_gnn_layers.py``),
padding, counts."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import meta_for, published_rows, random_graphs

from gnnbench.config.presets import run_config
from gnnbench.data.batching import GraphBatch, GraphLoader, model_dtypes
from gnnbench.data.catalog import describe_dataset
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.models.build import build_model
from gnnbench.models.dense import DenseLayout, to_dense
from gnnbench.models.ring_gnn import RingGNNEquivLayer, average_node_count, ring_basis_ops
from gnnbench.models.three_wl_gnn import RegularBlock, diag_offdiag_maxpool

DENSE_TASKS = ("node_classification", "graph_classification", "graph_regression", "edge_classification")


# ------------------------------------------------------------------------------------------------ helpers


def make_batch(graphs: list[dict]) -> GraphBatch:
    """Disjoint union of graphs given as dicts: n, edges [(src, dst)], and optional x, edge_attr, pe."""
    counts = torch.tensor([g["n"] for g in graphs])
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])
    edge_index = torch.cat([torch.tensor(g["edges"]).t() + ptr[i] for i, g in enumerate(graphs)], dim=1)

    def cat(key):
        return torch.cat([torch.as_tensor(g[key]) for g in graphs]) if key in graphs[0] else None

    return GraphBatch(edge_index=edge_index, batch=torch.repeat_interleave(torch.arange(len(graphs)), counts),
                      ptr=ptr, num_graphs=len(graphs), x=cat("x"), edge_attr=cat("edge_attr"), pe=cat("pe"))


# A 3-node directed graph; node 0 has no in-edge, so its row of Â is 0 (1/√0 → 0).
EDGES = [(0, 1), (1, 2), (0, 2), (2, 1)]
A_HAT = [[0.0, 0.0, 0.0], [0.0, 0.0, 0.5], [0.0, 0.5, 0.0]]  # in-degrees (0, 2, 2): Â[1,2] = Â[2,1] = 1/√(2·2)


def expected_adjacency(n: int, edges: list[tuple[int, int]]) -> np.ndarray:
    a = np.zeros((n, n))
    for s, d in edges:
        a[s, d] += 1.0  # A[src, dst]
    deg = a.sum(0)  # column sums = in-degrees
    inv = np.array([1 / math.sqrt(v) if v > 0 else 0.0 for v in deg])
    return inv[:, None] * a * inv[None, :]


def dense_of(graph: dict, dataset: str, cfg: dict | None = None) -> torch.Tensor:
    layout = DenseLayout.from_config(cfg or {}, describe_dataset(dataset))
    return to_dense(make_batch([graph]), layout, torch.float64).x[0]


def loader(columns, graph_ids):
    store = model_dtypes(GraphStore.from_columns(columns))
    return GraphLoader(store, torch.arange(store.num_graphs), len(graph_ids)).collate(torch.tensor(graph_ids))


# ------------------------------------------------------------------------------------------------ dense input


def test_adjacency_channel_is_in_degree_normalised_with_src_dst_orientation():
    np.testing.assert_allclose(expected_adjacency(3, EDGES), A_HAT)
    x = dense_of({"n": 3, "edges": EDGES, "x": torch.tensor([2, 0, 1])}, "SBM_PATTERN")
    np.testing.assert_allclose(x[0].numpy(), A_HAT)


def test_sbm_input_is_one_hot_on_the_diagonal():
    labels = [2, 0, 1]
    x = dense_of({"n": 3, "edges": EDGES, "x": torch.tensor(labels)}, "SBM_PATTERN")
    expected = np.zeros((1 + 3, 3, 3))
    expected[0] = A_HAT
    for i, c in enumerate(labels):
        expected[1 + c, i, i] = 1.0
    np.testing.assert_allclose(x.numpy(), expected)


@pytest.mark.parametrize("edge_feat", [False, True])
def test_molecule_input_atoms_on_the_diagonal_bonds_off_it(edge_feat):
    atoms, bonds = [5, 0, 27], [1, 2, 3, 1]
    graph = {"n": 3, "edges": EDGES, "x": torch.tensor(atoms), "edge_attr": torch.tensor(bonds)}
    x = dense_of(graph, "ZINC", {"edge_feat": edge_feat})
    expected = np.zeros((1 + 28 + (4 if edge_feat else 0), 3, 3))  # bond-type-0 channel allocated, unused
    expected[0] = A_HAT
    for i, a in enumerate(atoms):
        expected[1 + a, i, i] = 1.0
    if edge_feat:
        for (s, d), b in zip(EDGES, bonds, strict=True):
            expected[1 + 28 + b, s, d] = 1.0
    np.testing.assert_allclose(x.numpy(), expected)


def test_csl_input_with_and_without_pe():
    graph = {"n": 3, "edges": EDGES, "x": torch.zeros(3, dtype=torch.int64), "pe": torch.randn(3, 20)}
    plain = dense_of(graph, "CSL", {"pos_enc": False})
    expected = np.zeros((2, 3, 3))  # the constant feature 0 on the diagonal: channel 1 all zero
    expected[0] = A_HAT
    np.testing.assert_allclose(plain.numpy(), expected)
    with_pe = dense_of(graph, "CSL", {"pos_enc": True, "pos_enc_dim": 20})
    expected = np.zeros((21, 3, 3))
    expected[0] = A_HAT
    for i in range(3):
        for k in range(20):
            expected[1 + k, i, i] = graph["pe"][i, k]
    np.testing.assert_allclose(with_pe.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("edge_feat", [False, True])
def test_tsp_input_coordinates_on_the_diagonal_distances_off_it(edge_feat):
    coords = torch.tensor([[0.1, 0.2], [0.5, 0.9], [0.7, 0.3]])
    dist = torch.tensor([[0.8], [0.6], [0.3], [0.6]])
    graph = {"n": 3, "edges": EDGES, "x": coords, "edge_attr": dist}
    x = dense_of(graph, "TSP", {"edge_feat": edge_feat})
    expected = np.zeros((1 + 2 + int(edge_feat), 3, 3))
    expected[0] = A_HAT
    for i in range(3):
        expected[1, i, i], expected[2, i, i] = coords[i]
    if edge_feat:
        for (s, d), v in zip(EDGES, dist[:, 0], strict=True):
            expected[3, s, d] = v
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-6)


def test_added_pe_is_appended_as_diagonal_channels():
    graph = {"n": 3, "edges": EDGES, "x": torch.tensor([2, 0, 1]), "pe": torch.randn(3, 2)}
    x = dense_of(graph, "SBM_PATTERN", {"pos_enc": True, "pos_enc_dim": 2})
    assert x.shape == (1 + 3 + 2, 3, 3)
    np.testing.assert_allclose(x[:4].numpy(), dense_of(graph, "SBM_PATTERN").numpy())
    for k in range(2):
        np.testing.assert_allclose(x[4 + k].numpy(), np.diag(graph["pe"][:, k].double().numpy()))


def test_padded_batch_holds_each_graph_in_its_corner_and_zeros_elsewhere():
    g0 = {"n": 3, "edges": EDGES, "x": torch.tensor([5, 0, 27]), "edge_attr": torch.tensor([1, 2, 3, 1])}
    g1 = {"n": 5, "edges": [(0, 4), (4, 0), (1, 3), (2, 2), (0, 4)], "x": torch.tensor([1, 2, 3, 4, 6]),
          "edge_attr": torch.tensor([2, 2, 1, 3, 2])}
    layout = DenseLayout.from_config({"edge_feat": True}, describe_dataset("ZINC"))
    dense = to_dense(make_batch([g0, g1]), layout, torch.float64)
    assert dense.x.shape == (2, 33, 5, 5)
    assert dense.mask.tolist() == [[True] * 3 + [False] * 2, [True] * 5]
    torch.testing.assert_close(dense.x[0, :, :3, :3], dense_of(g0, "ZINC", {"edge_feat": True}))
    assert dense.x[0, :, 3:].abs().sum() == 0 and dense.x[0, :, :, 3:].abs().sum() == 0
    torch.testing.assert_close(dense.x[1], dense_of(g1, "ZINC", {"edge_feat": True}))
    # a self loop, and a parallel edge counted twice (as in the coalesced sparse matrix of the original)
    np.testing.assert_allclose(dense.x[1, 0].numpy(), expected_adjacency(5, g1["edges"]))


# ------------------------------------------------------------------------------------------------ RingGNN ops


def reference_ops(x: np.ndarray) -> np.ndarray:
    """The 15 basis ops of the released ``layers/ring_gnn_equiv_layer.py`` ("inf" normalisation; Dwivedi et al.,
    Eq. 36) on one graph's (D, m, m) tensor, written out entry by entry → (15, D, m, m)."""
    d, m, _ = x.shape
    ops = np.zeros((15, d, m, m))
    for c in range(d):
        a = x[c]
        trace, total = np.trace(a), a.sum()
        row, col = a.sum(1), a.sum(0)  # row sum = over the last index, column sum = over the first
        for i in range(m):
            ops[0, c, i, i] = a[i, i]
            ops[1, c, i, i] = trace / m
            ops[2, c, i, i] = row[i] / m
            ops[3, c, i, i] = col[i] / m
            ops[4, c, i, i] = total / m**2
            for j in range(m):
                ops[5, c, i, j] = col[i] / m
                ops[6, c, i, j] = row[i] / m
                ops[7, c, i, j] = col[j] / m
                ops[8, c, i, j] = row[j] / m
                ops[9, c, i, j] = a[i, j]
                ops[10, c, i, j] = a[j, i]
                ops[11, c, i, j] = a[i, i]
                ops[12, c, i, j] = a[j, j]
                ops[13, c, i, j] = trace / m
                ops[14, c, i, j] = total / m**2
    return ops


@pytest.mark.parametrize("op", range(15))
def test_each_ring_basis_op_matches_the_original_on_a_3_node_graph_also_when_padded(op):
    torch.manual_seed(op)
    small, big = torch.randn(2, 3, 3, dtype=torch.float64), torch.randn(2, 5, 5, dtype=torch.float64)
    x = torch.zeros(2, 2, 5, 5, dtype=torch.float64)
    x[0, :, :3, :3], x[1] = small, big
    mask = torch.tensor([[True] * 3 + [False] * 2, [True] * 5])
    ops = ring_basis_ops(x, mask)
    np.testing.assert_allclose(ops[0, :, op, :3, :3].numpy(), reference_ops(small.numpy())[op], atol=1e-12)
    assert ops[0, :, op, 3:].abs().sum() == 0 and ops[0, :, op, :, 3:].abs().sum() == 0
    np.testing.assert_allclose(ops[1, :, op].numpy(), reference_ops(big.numpy())[op], atol=1e-12)


def reference_ring_layer(layer: RingGNNEquivLayer, x: np.ndarray) -> np.ndarray:
    """The original's layer on one graph (D, m, m), radius 2, dropout 0 — ``RingGNNEquivLayer`` of the released
    ``layers/ring_gnn_equiv_layer.py`` transcribed with NumPy."""
    ops = reference_ops(x)
    c = [p.detach().double().numpy() for p in layer.coeffs_list]
    b = [p.detach().double().numpy().reshape(-1, 1, 1) for p in layer.diag_bias_list]
    s0, s1 = (p.item() for p in layer.switch)
    eye = np.eye(x.shape[-1])
    y = [np.einsum("dsb,bdij->sij", ck, ops) for ck in c]
    out0 = y[0] + eye * b[0]
    out1 = np.einsum("sij,sjk->sik", y[2], y[1] + eye * b[1])  # diag_bias_list[2] unused
    out = s0 * out0 + s1 * out1 + layer.all_bias.detach().double().numpy()[0]
    if layer.ln_x is not None:
        mean = out.mean(axis=(1, 2), keepdims=True)
        var = out.var(axis=(1, 2), keepdims=True)
        a_, b_ = (p.detach().double().numpy().reshape(-1, 1, 1) for p in (layer.ln_x.a, layer.ln_x.b))
        out = a_ * (out - mean) / np.sqrt(var + 1e-6) + b_
    out = np.maximum(out, 0)
    if layer.res_x is not None:
        w, bias = layer.res_x.weight.detach().double().numpy(), layer.res_x.bias.detach().double().numpy()
        out = out + np.einsum("sd,dij->sij", w, x) + bias[:, None, None]
    return out


def randomise(module: torch.nn.Module) -> torch.nn.Module:
    torch.manual_seed(1)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    return module


@pytest.mark.parametrize(("layer_norm", "residual"), [(False, False), (False, True), (True, True)])
def test_ring_layer_matches_the_original_per_graph_in_a_padded_batch(layer_norm, residual):
    layer = randomise(RingGNNEquivLayer(2, 3, layer_norm, residual, dropout=0.0, radius=2)).double()
    torch.manual_seed(2)
    small, big = torch.randn(2, 3, 3, dtype=torch.float64), torch.randn(2, 5, 5, dtype=torch.float64)
    x = torch.zeros(2, 2, 5, 5, dtype=torch.float64)
    x[0, :, :3, :3], x[1] = small, big
    out = layer(x, torch.tensor([[True] * 3 + [False] * 2, [True] * 5]))
    np.testing.assert_allclose(out[0, :, :3, :3].detach().numpy(), reference_ring_layer(layer, small.numpy()),
                               rtol=1e-9, atol=1e-9)
    assert out[0, :, 3:].abs().sum() == 0 and out[0, :, :, 3:].abs().sum() == 0
    np.testing.assert_allclose(out[1].detach().numpy(), reference_ring_layer(layer, big.numpy()), rtol=1e-9,
                               atol=1e-9)


def test_ring_layer_parameters_and_initialisation():
    torch.manual_seed(0)
    layer = RingGNNEquivLayer(60, 40, layer_norm=False, residual=False, dropout=0.0, k2_init=0.25)
    assert len(layer.coeffs_list) == 3 and len(layer.diag_bias_list) == 3  # the third bias is never used
    for c in layer.coeffs_list:
        assert c.shape == (60, 40, 15)
        assert abs(c.std().item() - math.sqrt(2 / 100)) < 0.01
    assert all(b.abs().sum() == 0 for b in layer.diag_bias_list) and layer.all_bias.abs().sum() == 0
    assert [p.item() for p in layer.switch] == [1.0, 0.25]


def test_average_node_count_sets_the_switch_init():
    meta = describe_dataset("SBM_PATTERN")
    assert average_node_count(meta) == 1.0  # no statistics: k2_init = 0.5
    meta.statistics = {"all": {"nodes_per_graph": {"mean": 50.2}}}
    assert average_node_count(meta) == 51.0
    meta.statistics["train"] = {"nodes_per_graph": {"mean": 116.3}}
    assert average_node_count(meta) == 117.0
    model = build_model(run_config("SBMs_node_clustering_RingGNN_PATTERN_100k", {}), meta)
    assert model.architecture.equi_modulelist[1].switch[1].item() == pytest.approx(0.5 / 117)


# ------------------------------------------------------------------------------------------------ 3WLGNN


def reference_regular_block(block: RegularBlock, x: np.ndarray) -> np.ndarray:
    """RegularBlock on one graph (D, m, m), written with explicit per-position and per-channel products."""

    def conv(module, t):
        w = module.weight.detach().double().numpy().reshape(module.weight.shape[0], -1)
        return np.einsum("sd,dij->sij", w, t) + module.bias.detach().double().numpy()[:, None, None]

    def mlp(m, t):
        for c in m.convs:
            t = np.maximum(conv(c, t), 0)
        return t

    a, b = mlp(block.mlp1, x), mlp(block.mlp2, x)
    mult = np.stack([a[s] @ b[s] for s in range(a.shape[0])])
    out = conv(block.skip.conv, np.concatenate([x, mult]))
    if block.res_x is not None:
        out = out + conv(block.res_x, x)  # a Linear's weight/bias have the 1×1 conv's shapes (after reshape)
    return out


@pytest.mark.parametrize(("depth", "residual"), [(2, False), (2, True), (1, False), (3, True)])
def test_regular_block_matches_explicit_computation_per_graph_in_a_padded_batch(depth, residual):
    block = randomise(RegularBlock(depth, 3, 4, residual)).double()
    torch.manual_seed(3)
    small, big = torch.randn(3, 3, 3, dtype=torch.float64), torch.randn(3, 5, 5, dtype=torch.float64)
    x = torch.zeros(2, 3, 5, 5, dtype=torch.float64)
    x[0, :, :3, :3], x[1] = small, big
    mask = torch.tensor([[True] * 3 + [False] * 2, [True] * 5]).double()
    out = block(x, (mask[:, :, None] * mask[:, None, :]).unsqueeze(1)).detach()
    np.testing.assert_allclose(out[0, :, :3, :3].numpy(), reference_regular_block(block, small.numpy()), rtol=1e-9)
    assert out[0, :, 3:].abs().sum() == 0 and out[0, :, :, 3:].abs().sum() == 0
    np.testing.assert_allclose(out[1].numpy(), reference_regular_block(block, big.numpy()), rtol=1e-9)


def test_regular_block_initialisation_is_xavier_with_zero_bias():
    torch.manual_seed(0)
    block = RegularBlock(2, 30, 50)
    convs = [*block.mlp1.convs, *block.mlp2.convs, block.skip.conv]
    for conv in convs:
        out_ch, in_ch = conv.weight.shape[:2]
        bound = math.sqrt(6 / (in_ch + out_ch))
        assert conv.weight.abs().max() <= bound and conv.weight.abs().max() > 0.9 * bound
        assert conv.bias.abs().sum() == 0


def reference_maxpool(x: np.ndarray) -> np.ndarray:
    """The original diag_offdiag_maxpool on one graph (S, m, m) → (2S,)."""
    max_diag = np.diagonal(x, axis1=1, axis2=2).max(axis=1)
    val = abs(max_diag.max() + (-x).max())
    max_offdiag = (x - val * np.eye(x.shape[-1])).max(axis=(1, 2))
    return np.concatenate([max_diag, max_offdiag])


def test_diag_offdiag_maxpool_matches_the_original_per_graph_including_one_node_graphs():
    torch.manual_seed(4)
    sizes = [3, 1, 1, 5]  # one node: max_offdiag = X_00 − val, so val (over the real entries only) matters
    graphs = [torch.randn(2, n, n, dtype=torch.float64) + 3.0 for n in sizes]  # > 0: padded zeros win max(−X)
    graphs[2] = -graphs[2]  # < 0: padded zeros would win max_diag and max_offdiag
    x = torch.zeros(4, 2, 5, 5, dtype=torch.float64)
    for b, g in enumerate(graphs):
        x[b, :, : sizes[b], : sizes[b]] = g
    mask = torch.arange(5) < torch.tensor(sizes).unsqueeze(1)
    out = diag_offdiag_maxpool(x, mask)
    for b, g in enumerate(graphs):
        np.testing.assert_allclose(out[b].numpy(), reference_maxpool(g.numpy()), rtol=1e-12)


# ------------------------------------------------------------------------------------------------ models


SMALL = {
    "RingGNN": dict(model="RingGNN", L=2, hidden_dim=5, radius=2, residual=False, layer_norm=False, dropout=0.0,
                    edge_feat=True),
    "RingGNN-res-ln": dict(model="RingGNN", L=2, hidden_dim=5, radius=2, residual=True, layer_norm=True,
                           dropout=0.0, edge_feat=True),
    "3WLGNN": dict(model="3WLGNN", L=2, hidden_dim=5, depth_of_mlp=2, residual=False, edge_feat=True),
    "3WLGNN-res": dict(model="3WLGNN", L=3, hidden_dim=5, depth_of_mlp=2, residual=True, edge_feat=True),
}


@pytest.mark.parametrize("task", DENSE_TASKS)
@pytest.mark.parametrize("variant", sorted(SMALL))
def test_padded_batch_gives_the_per_graph_results(variant, task):
    torch.manual_seed(0)
    model = build_model(SMALL[variant], meta_for(task)).double().eval()
    columns = random_graphs(5, seed=2, min_nodes=1, max_nodes=9, directed=True)
    together = model(loader(columns, list(range(5))))
    alone = torch.cat([model(loader(columns, [i])) for i in range(5)])
    assert together.shape == alone.shape
    torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-5)


def single_graph():
    return loader(random_graphs(1, seed=5, min_nodes=6, max_nodes=6, directed=True), [0])


def test_ring_gnn_readouts_read_column_sums_of_every_layer():
    batch = single_graph()
    torch.manual_seed(0)
    for task in DENSE_TASKS:
        model = build_model(SMALL["RingGNN"], meta_for(task)).double().eval()
        arch = model.architecture
        x = to_dense(batch, arch.layout, torch.float64).x
        tensors = [x]
        for layer in arch.equi_modulelist:
            tensors.append(layer(tensors[-1], torch.ones(1, x.shape[-1], dtype=torch.bool)))
        per_node = torch.cat([t.sum(2) for t in tensors], dim=1)[0].t()  # Σ over dim 2 → (n, Σ depth)
        out = model(batch)
        if task == "node_classification":
            torch.testing.assert_close(out, model.head.mlp(per_node))
        elif task == "edge_classification":
            src, dst = batch.edge_index
            torch.testing.assert_close(out, model.head.mlp(torch.cat([per_node[src], per_node[dst]], dim=1)))
        else:  # Σ over both node dims of every tensor, concatenated
            graph = torch.cat([t.sum((2, 3)) for t in tensors], dim=1)
            expected = model.head.mlp(graph)
            torch.testing.assert_close(out, expected.squeeze(-1) if task == "graph_regression" else expected)


def test_three_wl_gnn_readouts():
    batch = single_graph()
    torch.manual_seed(0)
    for task in DENSE_TASKS:
        model = build_model(SMALL["3WLGNN"], meta_for(task)).double().eval()
        arch = model.architecture
        x = to_dense(batch, arch.layout, torch.float64).x
        n = x.shape[-1]
        tensors = [x]
        for block in arch.reg_blocks:
            tensors.append(block(tensors[-1], torch.ones(1, 1, n, n, dtype=torch.float64)))
        out = model(batch)
        if task == "node_classification":  # Σ_blocks Linear(column sums)
            assert arch.head_style(task) == "per_layer"
            expected = sum(lin(t.sum(2)[0].t()) for lin, t in zip(model.head.linears, tensors[1:], strict=True))
        elif task == "edge_classification":  # MLPReadout([h_u ‖ h_v]), h = column sums of [input, blocks]
            assert arch.head_style(task) == "mlp"
            h = torch.cat([t.sum(2) for t in tensors], dim=1)[0].t()
            src, dst = batch.edge_index
            expected = model.head.mlp(torch.cat([h[src], h[dst]], dim=1))
        else:  # Σ_blocks Linear(diag_offdiag_maxpool(block)); the input tensor is not read
            assert arch.head_style(task) == "per_layer"
            expected = sum(lin(torch.from_numpy(reference_maxpool(t[0].detach().numpy())).unsqueeze(0))
                           for lin, t in zip(model.head.linears, tensors[1:], strict=True))
            expected = expected.squeeze(-1) if task == "graph_regression" else expected
        torch.testing.assert_close(out, expected)


@pytest.mark.parametrize("model", ["RingGNN", "3WLGNN"])
@pytest.mark.parametrize("task", ["link_prediction", "multitask_regression"])
def test_link_prediction_and_multitask_are_refused_with_a_reason(model, task):
    with pytest.raises(ConfigError, match="never ran dense WL-GNNs"):
        build_model(SMALL[model], meta_for(task))


def test_edge_feat_needs_edge_features():
    with pytest.raises(ConfigError, match="edge_feat is true but the dataset has no edge features"):
        build_model(SMALL["RingGNN"], meta_for("graph_regression", edge_features=False))


@pytest.fixture
def one_thread():
    """Tiny tensors: one thread avoids OpenMP hand-off costs that dominate on a busy 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_training_step_reduces_the_loss(one_thread):
    columns = random_graphs(4, seed=7, min_nodes=4, max_nodes=8)
    batch = loader(columns, list(range(4)))
    target = torch.tensor([0.5, -0.5, 1.0, 0.0])
    for variant, lr in (("RingGNN", 1e-3), ("3WLGNN", 1e-2)):
        torch.manual_seed(0)
        model = build_model(SMALL[variant], meta_for("graph_regression"))
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        losses = []
        for _ in range(12):
            opt.zero_grad()
            loss = (model(batch) - target).abs().mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[-1] < 0.8 * losses[0], (variant, losses)


# ------------------------------------------------------------------------------------------------ counts


def test_every_dense_row_of_the_published_counts_is_checked():
    rows = published_rows("RingGNN", "3WLGNN")
    assert len(rows) == 44
    assert sum(1 for _, o, _ in rows if o.get("edge_feat") == "True") == 12
    assert sum(1 for _, o, _ in rows if "hidden_dim" in o) == 4





def padded(small: torch.Tensor, big: torch.Tensor) -> torch.Tensor:
    """A (2, D, 4, 4) batch of a 3-node and a 4-node graph (differentiable in the real entries only: padded
    entries are constants, so ReLU kinks at the exact zeros of padding are not probed)."""
    return torch.stack([torch.nn.functional.pad(small, (0, 1, 0, 1)), big])


@pytest.mark.parametrize("radius", [1, 2])
def test_ring_layer_gradients_are_exact_despite_in_place_ops(radius):
    layer = randomise(RingGNNEquivLayer(2, 2, layer_norm=False, residual=True, dropout=0.0, radius=radius)).double()
    torch.manual_seed(5)
    small, big = torch.randn(2, 3, 3, dtype=torch.float64), torch.randn(2, 4, 4, dtype=torch.float64)
    mask = torch.tensor([[True] * 3 + [False], [True] * 4])
    inputs = [small.requires_grad_(), big.requires_grad_(), *layer.parameters()]
    assert torch.autograd.gradcheck(lambda a, b, *_: layer(padded(a, b), mask), inputs)


def test_regular_block_gradients_are_exact_despite_in_place_ops():
    block = randomise(RegularBlock(2, 2, 3, residual=True)).double()
    torch.manual_seed(5)
    small, big = torch.randn(2, 3, 3, dtype=torch.float64), torch.randn(2, 4, 4, dtype=torch.float64)
    mask = torch.tensor([[1.0] * 3 + [0.0], [1.0] * 4], dtype=torch.float64)
    pair = (mask[:, :, None] * mask[:, None, :]).unsqueeze(1)
    inputs = [small.requires_grad_(), big.requires_grad_(), *block.parameters()]
    assert torch.autograd.gradcheck(lambda a, b, *_: block(padded(a, b), pair), inputs)
