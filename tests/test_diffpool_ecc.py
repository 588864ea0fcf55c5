"""DiffPool and ECC of the fair comparison (Errica et al.; released code diningphil/gnn-comparison
``models/graph_classifiers/DiffPool.py``, ``ECC.py`` and the coarsening of ``datasets/manager.py``) against
independent computations: PyG 2.x operators with copied weights (DenseSAGEConv without its root term,
dense_diff_pool, to_dense_batch / to_dense_adj, NNConv, dense_to_sparse, global_mean_pool), per-graph dense formulas
written here, networkx's normalised Laplacian, hand-computed Kron reductions, and batch (in)dependence facts."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import randomise_batch_norms

from gnnbench.data.batching import GraphBatch, GraphLoader, model_dtypes
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns, GraphStore
from gnnbench.errors import ConfigError
from gnnbench.models.graph_classifiers import build_classifier
from gnnbench.models.graph_classifiers.diffpool import (
    DenseSAGEConv,
    DiffPool,
    cluster_counts,
    dense_diff_pool,
    mean_adjacency,
)
from gnnbench.models.graph_classifiers.ecc import (
    ECC,
    ECConv,
    cached_kron_hierarchy,
    decimate,
    dominant_signs,
    kron_hierarchy,
    kron_reduce,
    normalized_laplacian,
    power_start,
)
from gnnbench.models.sparse import to_dense_adjacency, to_dense_batch

FEATURES, CLASSES = 4, 3


# ---------------------------------------------------------------------------------------------------------
# Data


def random_columns(sizes, seed=0, edge_prob=0.35) -> GraphColumns:
    """Random undirected graphs (both directions stored); graph 0 gets an isolated node, graph 1 two components."""
    rng = np.random.default_rng(seed)
    srcs, dsts, counts = [], [], []
    for g, n in enumerate(sizes):
        adj = np.triu(rng.random((n, n)) < edge_prob, 1)
        if n > 1:  # keep every graph non-empty in edges
            adj[0, 1] = True
        if g == 0 and n > 2:
            adj[:, n - 1] = adj[n - 1, :] = False
        if g == 1 and n > 5:
            adj[: n // 2, n // 2:] = False
            adj[n // 2, n // 2 + 1] = True
        src, dst = np.nonzero(adj | adj.T)
        srcs.append(src)
        dsts.append(dst)
        counts.append(src.size)
    total = int(np.sum(sizes))
    return GraphColumns(num_nodes=np.asarray(sizes, dtype=np.int64), num_edges=np.asarray(counts, dtype=np.int64),
                        src=np.concatenate(srcs).astype(np.int32), dst=np.concatenate(dsts).astype(np.int32),
                        node={"x": rng.normal(size=(total, FEATURES)).astype(np.float32)},
                        graph={"y": rng.integers(0, CLASSES, len(sizes)).astype(np.int16)})


def store_of(sizes, seed=0) -> GraphStore:
    return model_dtypes(GraphStore.from_columns(random_columns(sizes, seed)))


def batch_of(store: GraphStore, ids) -> GraphBatch:
    return GraphLoader(store, torch.arange(store.num_graphs), 1).collate(torch.as_tensor(ids, dtype=torch.int64))


def meta() -> DatasetMeta:
    return DatasetMeta(name="test", task="graph_classification", loss="cross_entropy", metric="accuracy",
                       num_outputs=CLASSES, num_graphs=0, node_features=FeatureSpec("continuous", FEATURES),
                       edge_features=None, pe_usage="add", split_sizes=None)



SIZES = (7, 9, 3, 12, 5, 2, 8)
DIFFPOOL_CFG = {"model": "DiffPool", "num_layers": 2, "gnn_dim_hidden": 6, "dim_embedding": 5,
                "dim_embedding_MLP": 7}
ECC_CFG = {"model": "ECC", "num_layers": 2, "dim_embedding": 6, "dropout": 0.0, "dropout_final": 0.0}


# ---------------------------------------------------------------------------------------------------------
# DiffPool


def test_cluster_counts_of_the_paper_datasets():
    """(C1, C2) with two layers and C1 with one, from the datasets' maximum node counts (the released
    datasets/manager.py constants), by the released DiffPool.py's rule."""
    max_nodes = {"NCI1": 111, "DD": 5748, "PROTEINS": 620, "ENZYMES": 126, "IMDB-B": 136, "IMDB-M": 89,
                 "COLLAB": 492, "REDDIT-B": 3782, "REDDIT-5K": 3648}
    two = {"NCI1": [28, 7], "DD": [1437, 360], "PROTEINS": [155, 39], "ENZYMES": [32, 8], "IMDB-B": [34, 9],
           "IMDB-M": [23, 6], "COLLAB": [123, 31], "REDDIT-B": [946, 237], "REDDIT-5K": [912, 228]}
    one = {"NCI1": 12, "DD": 575, "PROTEINS": 62, "ENZYMES": 13, "IMDB-B": 14, "IMDB-M": 9, "COLLAB": 50,
           "REDDIT-B": 379, "REDDIT-5K": 365}
    for name, n in max_nodes.items():
        assert cluster_counts(n, 2) == two[name], name
        assert cluster_counts(n, 1) == [one[name]], name
    torch.manual_seed(0)
    model = build_classifier(DIFFPOOL_CFG, meta(), np.array([30, 126, 4]))  # max_nodes = sizes.max()
    assert model.clusters == [32, 8] and model.max_num_nodes == 126


def test_dense_sage_conv_is_the_pyg14_formula():
    """out = (A·X) / max(rowsum(A), 1) · W + b per graph, no self term, padded rows zeroed; equals PyG 2.x
    DenseSAGEConv with its root weight set to zero and the bias moved there."""
    from torch_geometric.nn import DenseSAGEConv as PygDenseSAGEConv

    store = store_of(SIZES)
    batch = batch_of(store, [0, 3, 5, 2])
    x, mask = to_dense_batch(batch.x, batch.batch, batch.ptr)
    adj = to_dense_adjacency(batch.edge_index, batch.batch, batch.ptr, x.shape[1])
    torch.manual_seed(0)
    conv = DenseSAGEConv(FEATURES, 6)
    out = conv(x, mean_adjacency(adj), mask)
    w, b = conv.lin.weight.detach().double().numpy(), conv.lin.bias.detach().double().numpy()
    for i in range(batch.num_graphs):
        lo, hi = int(batch.ptr[i]), int(batch.ptr[i + 1])
        n = hi - lo
        a = np.zeros((n, n))
        e = batch.edge_index[:, (batch.edge_index[0] >= lo) & (batch.edge_index[0] < hi)] - lo
        a[e[0].numpy(), e[1].numpy()] = 1.0
        xg = batch.x[lo:hi].double().numpy()
        expected = (a @ xg) / np.maximum(a.sum(1), 1)[:, None] @ w.T + b
        np.testing.assert_allclose(out[i, :n].detach().numpy(), expected, atol=1e-5)
        assert torch.all(out[i, n:] == 0)
    ref = PygDenseSAGEConv(FEATURES, 6)
    with torch.no_grad():
        ref.lin_rel.weight.copy_(conv.lin.weight)
        ref.lin_root.weight.zero_()
        ref.lin_root.bias.copy_(conv.lin.bias)
    torch.testing.assert_close(out, ref(x, adj, mask))


def test_dense_diff_pool_matches_pyg_and_the_released_losses():
    """X', A', link and entropy losses equal PyG's dense_diff_pool; the link loss is the released code's
    ‖A − SSᵀ‖_F / numel(A) over the whole padded batch (PyG 2.x normalises the same way), the entropy loss the
    mean row entropy over all B·n rows (padded rows contribute 0) — both checked by per-graph NumPy sums."""
    from torch_geometric.nn import dense_diff_pool as pyg_dense_diff_pool

    gen = torch.Generator().manual_seed(0)
    counts = [5, 8, 3]
    b, n, c = len(counts), max(counts), 4
    mask = torch.arange(n).unsqueeze(0) < torch.tensor(counts).unsqueeze(1)
    x = torch.randn(b, n, 6, generator=gen, dtype=torch.float64) * mask.unsqueeze(-1)
    adj = (torch.rand(b, n, n, generator=gen) < 0.4).double()
    adj = torch.triu(adj, 1)
    adj = (adj + adj.transpose(1, 2)) * (mask.unsqueeze(1) & mask.unsqueeze(2))
    s = torch.randn(b, n, c, generator=gen, dtype=torch.float64)
    ours = dense_diff_pool(x, adj, s, mask)
    theirs = pyg_dense_diff_pool(x, adj, s, mask)
    for got, want in zip(ours, theirs, strict=True):
        torch.testing.assert_close(got, want)
    soft = torch.softmax(s, -1).numpy() * mask.unsqueeze(-1).numpy()
    squared, entropy = 0.0, 0.0
    for g, k in enumerate(counts):
        sg, ag = soft[g, :k], adj[g, :k, :k].numpy()
        squared += np.sum((ag - sg @ sg.T) ** 2)  # padded entries of A − SSᵀ are 0
        entropy += np.sum(-sg * np.log(sg + 1e-15))
    assert ours[2].item() == pytest.approx(np.sqrt(squared) / (b * n * n), rel=1e-9)
    assert ours[3].item() == pytest.approx(entropy / (b * n), rel=1e-9)
    no_mask = dense_diff_pool(x, adj, s)  # later levels: no mask
    for got, want in zip(no_mask, pyg_dense_diff_pool(x, adj, s), strict=True):
        torch.testing.assert_close(got, want)


def pyg_diffpool(model: DiffPool, batch: GraphBatch):
    """The original's forward written with PyG operators (to_dense_batch, to_dense_adj, DenseSAGEConv with the
    root term zeroed, dense_diff_pool), reusing the model's weights, BatchNorms and Linears."""
    from torch_geometric.nn import DenseSAGEConv as PygDenseSAGEConv
    from torch_geometric.nn import dense_diff_pool as pyg_dense_diff_pool
    from torch_geometric.utils import to_dense_adj
    from torch_geometric.utils import to_dense_batch as pyg_to_dense_batch

    def conv(ours, h, adj, mask):
        ref = PygDenseSAGEConv(ours.lin.in_features, ours.lin.out_features)
        with torch.no_grad():
            ref.lin_rel.weight.copy_(ours.lin.weight)
            ref.lin_root.weight.zero_()
        ref.lin_root.bias = ours.lin.bias
        return ref(h, adj, mask)

    def bn(module, h):
        return module(h.reshape(-1, h.shape[-1])).view(h.shape)

    def block(b, h, adj, mask):
        x1 = bn(b.bn1, F.relu(conv(b.conv1, h, adj, mask)))
        x2 = bn(b.bn2, F.relu(conv(b.conv2, x1, adj, mask)))
        out = torch.cat([x1, x2, conv(b.conv3, x2, adj, mask)], dim=-1)
        return b.lin(out) if b.lin is not None else out

    x, mask = pyg_to_dense_batch(batch.x, batch.batch)
    adj = to_dense_adj(batch.edge_index, batch.batch)
    readouts, aux = [], 0.0
    for i, layer in enumerate(model.diffpool_layers):
        m = mask if i == 0 else None
        s, z = block(layer.gnn_pool, x, adj, m), block(layer.gnn_embed, x, adj, m)
        x, adj, link, ent = pyg_dense_diff_pool(z, adj, s, m)
        readouts.append(x.max(dim=1).values)
        aux = aux + link + ent
    readouts.append(block(model.final_embed, x, adj, None).max(dim=1).values)
    return model.lin2(F.relu(model.lin1(torch.cat(readouts, dim=-1)))), aux


@pytest.mark.parametrize("num_layers", [1, 2])
def test_diffpool_matches_the_pyg_reference(num_layers):
    store = store_of(SIZES)
    batch = batch_of(store, [3, 0, 6, 5, 1])
    torch.manual_seed(0)
    model = build_classifier({**DIFFPOOL_CFG, "num_layers": num_layers}, meta(), store.num_nodes.numpy())
    assert len(model.diffpool_layers) == num_layers
    for mode in ("train", "eval"):
        model.train(mode == "train")
        if mode == "eval":
            randomise_batch_norms(model)
        logits = model(batch)
        aux = model.aux_loss
        want_logits, want_aux = pyg_diffpool(model, batch)
        torch.testing.assert_close(logits, want_logits, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(aux, want_aux, atol=1e-6, rtol=1e-5)
    assert aux.dim() == 0


def test_diffpool_eval_logits_are_batch_independent_and_train_bn_counts_padded_rows():
    """Eval mode: a graph's logits are the same alone and in any batch (first-level convs zero the padded rows and
    dense_diff_pool masks Z and S; after pooling there is no padding). Train mode: BN's batch statistics include
    the padded rows, as in the original (they are 0 after the masked conv and ReLU)."""
    store = store_of(SIZES)
    torch.manual_seed(0)
    model = randomise_batch_norms(DiffPool(FEATURES, CLASSES, 12, 2, 6, 5, 7)).eval()
    ids = [2, 3, 5, 0]
    together = model(batch_of(store, ids))
    for row, g in enumerate(ids):
        torch.testing.assert_close(together[row], model(batch_of(store, [g]))[0], atol=1e-5, rtol=1e-5)

    model.train()
    bn = model.diffpool_layers[0].gnn_pool.bn1
    bn.reset_running_stats()
    batch = batch_of(store, [2, 3])  # 3 and 12 nodes: 9 padded rows
    model(batch)
    x, mask = to_dense_batch(batch.x, batch.batch, batch.ptr)
    adj = to_dense_adjacency(batch.edge_index, batch.batch, batch.ptr, x.shape[1])
    with torch.no_grad():
        h = F.relu(model.diffpool_layers[0].gnn_pool.conv1(x, mean_adjacency(adj), mask))
    torch.testing.assert_close(bn.running_mean, bn.momentum * h.reshape(-1, h.shape[-1]).mean(0))
    assert not torch.allclose(bn.running_mean, bn.momentum * h[mask].mean(0))


# ---------------------------------------------------------------------------------------------------------
# ECC: operator


def test_ecconv_matches_pyg_nnconv():
    """Edge-valued and unit-valued (level 0) ECConv equal NNConv(aggr='add') with the same edge network, root
    weight and bias — outputs and gradients."""
    from torch_geometric.nn import NNConv

    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    conv = ECConv(5, 7)
    ref = NNConv(5, 7, nn=conv.nn, aggr="add")  # shares the edge network (its constructor re-initialises it)
    with torch.no_grad():
        ref.lin.weight.copy_(conv.root.weight)
        ref.bias.copy_(conv.root.bias)
    x = torch.randn(9, 5, generator=gen, dtype=torch.float64)
    edge_index = torch.randint(0, 9, (2, 30), generator=gen)  # parallel edges and self loops included
    values = torch.randn(30, generator=gen, dtype=torch.float64)
    conv.double()
    ref.double()
    for edge_value, ref_value in ((values, values.view(-1, 1)), (None, torch.ones(30, 1, dtype=torch.float64))):
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        out, want = conv(xa, edge_index, edge_value), ref(xb, edge_index, ref_value)
        torch.testing.assert_close(out, want)
        weights = torch.randn(out.shape, generator=gen, dtype=torch.float64)
        params = list(conv.parameters())
        grads = torch.autograd.grad((out * weights).sum(), [xa, *params])
        ref_params = [*conv.nn.parameters(), ref.lin.weight, ref.bias]
        ref_grads = torch.autograd.grad((want * weights).sum(), [xb, *ref_params], allow_unused=True)
        torch.testing.assert_close(grads[0], ref_grads[0])
        for got, expected in zip(grads[1:], ref_grads[1:], strict=True):
            torch.testing.assert_close(got, expected)


# ---------------------------------------------------------------------------------------------------------
# ECC: coarsening


def test_normalized_laplacian_matches_networkx():
    import networkx as nx

    columns = random_columns([8], seed=3)  # node 7 is isolated
    lap = normalized_laplacian(8, columns.src, columns.dst)
    graph = nx.Graph()
    graph.add_nodes_from(range(8))
    graph.add_edges_from(zip(columns.src.tolist(), columns.dst.tolist(), strict=True))
    np.testing.assert_allclose(lap, nx.normalized_laplacian_matrix(graph).toarray(), atol=1e-12)
    assert lap[7, 7] == 0


def test_kron_reduction_by_hand_and_by_formula():
    s = 1 / np.sqrt(2)
    # path 0-1-2: eliminating the middle node leaves an edge of weight 1/2 (normalised-Laplacian entries ±1/2)
    path = np.array([[1, -s, 0], [-s, 1, -s], [0, -s, 1]])
    np.testing.assert_allclose(kron_reduce(path, np.array([True, False, True])), [[0.5, -0.5], [-0.5, 0.5]])
    # cycle C4: L = I − A/2, dominant eigenvector (1, −1, 1, −1) (eigenvalue 2): V⁺ is one of the two alternating
    # pairs, which are joined through both eliminated nodes: L' = [[1/2, −1/2], [−1/2, 1/2]]
    cycle = normalized_laplacian(4, np.array([0, 1, 2, 3]), np.array([1, 2, 3, 0]))
    signs, valid = dominant_signs(cycle[None], power_start(0, 0, 0, 4)[None])
    keep, reduced = decimate(cycle, signs[0])
    assert valid[0] and keep.tolist() in ([True, False, True, False], [False, True, False, True])
    np.testing.assert_allclose(reduced, [[0.5, -0.5], [-0.5, 0.5]], atol=1e-12)
    # a random connected graph and random V⁺: the direct formula with an explicit inverse; the reduced Laplacian
    # keeps the null vector D^{1/2}·1 restricted to V⁺ and is symmetric
    rng = np.random.default_rng(1)
    adj = np.triu(rng.random((10, 10)) < 0.4, 1)
    adj[np.arange(9), np.arange(1, 10)] = True
    src, dst = np.nonzero(adj)
    lap = normalized_laplacian(10, src, dst)
    keep = rng.random(10) < 0.5
    keep[:2] = [True, False]
    drop = ~keep
    direct = lap[keep][:, keep] - lap[keep][:, drop] @ np.linalg.inv(lap[drop][:, drop]) @ lap[drop][:, keep]
    reduced = kron_reduce(lap, keep)
    np.testing.assert_allclose(reduced, direct, atol=1e-12)
    np.testing.assert_allclose(reduced, reduced.T, atol=1e-12)
    deg = np.bincount(np.concatenate([src, dst]), minlength=10)
    np.testing.assert_allclose(reduced @ np.sqrt(deg[keep]), 0, atol=1e-12)


def test_degenerate_levels_keep_the_graph():
    # L = c·I: b keeps the sign of its all-negative start, V⁺ is empty → keep everything, L unchanged
    eye = 0.7 * np.eye(3)
    signs, valid = dominant_signs(eye[None], power_start(0, 0, 0, 3)[None])
    assert valid[0] and not signs[0].any()
    keep, lap = decimate(eye, signs[0])
    assert keep.all() and lap is eye
    # Lb = 0 (the original's NaN case) → keep everything
    signs, valid = dominant_signs(np.zeros((1, 3, 3)), power_start(0, 0, 0, 3)[None])
    assert not valid[0]
    assert decimate(np.zeros((3, 3)), None)[0].all()
    # one edge: level 1 keeps one node whose reduced Laplacian is exactly 0 (no edge); level 2 is eye(1) (the
    # original's rule for a single node): one self loop of value 1
    h = kron_hierarchy(np.array([2]), np.array([2]), np.array([0, 1]), np.array([1, 0]), 3)
    assert [int(t.sum()) for t in h.keep] == [1, 1, 1]
    assert [int(c[0]) for c in h.num_nodes] == [2, 1, 1, 1]
    assert [int(c[0]) for c in h.num_edges[1:]] == [0, 1, 1]
    assert h.edge_value[2].tolist() == [1.0] and h.edge_index[2].tolist() == [[0], [0]]


def dense_levels(h, g: int) -> list[np.ndarray]:
    """Graph g's Laplacians of levels 1..R rebuilt from the concatenated edge lists (NumPy offsets, no gather)."""
    out = []
    for level in range(1, len(h.num_nodes)):
        start = int(h.num_edges[level][:g].sum())
        stop = start + int(h.num_edges[level][g])
        n = int(h.num_nodes[level][g])
        lap = np.zeros((n, n), dtype=np.float32)
        rows, cols = h.edge_index[level][:, start:stop].numpy()
        lap[rows, cols] = h.edge_value[level][start:stop].numpy()
        out.append(lap)
    return out


def test_hierarchy_levels_are_kron_reductions_of_each_other():
    columns = random_columns(SIZES, seed=2)
    src, dst = columns.src.astype(np.int64), columns.dst.astype(np.int64)
    h = kron_hierarchy(columns.num_nodes, columns.num_edges, src, dst, 3)
    assert h.num_reductions == 3
    edge_ptr = columns.edge_ptr
    for g, n in enumerate(SIZES):
        s, d = src[edge_ptr[g]:edge_ptr[g + 1]], dst[edge_ptr[g]:edge_ptr[g + 1]]
        laps = [normalized_laplacian(n, s, d), *dense_levels(h, g)]
        for level in range(3):
            start = int(h.num_nodes[level][:g].sum())
            keep = h.keep[level][start:start + int(h.num_nodes[level][g])].numpy()
            assert keep.any()  # V⁺ never empty
            assert int(h.num_nodes[level + 1][g]) == keep.sum()
            nxt = laps[level + 1]
            np.testing.assert_allclose(nxt, nxt.T, atol=1e-6)  # symmetric values
            assert np.array_equal(nxt != 0, (nxt != 0).T)  # symmetric edge pattern
            lap = laps[level].astype(np.float64)
            if lap.shape[0] == 1:
                np.testing.assert_array_equal(nxt, [[1.0]])
            elif keep.all():
                np.testing.assert_allclose(nxt, lap, atol=1e-6)
            else:
                drop = ~keep
                inverse = np.linalg.pinv(lap[drop][:, drop])
                direct = lap[keep][:, keep] - lap[keep][:, drop] @ inverse @ lap[drop][:, keep]
                np.testing.assert_allclose(nxt, direct, atol=1e-5)
    assert int(h.num_nodes[1][0]) < SIZES[0]  # something was pooled
    # deterministic, and the cached variant returns the same levels (a prefix when fewer are asked for)
    again = cached_kron_hierarchy(columns.num_nodes, columns.num_edges, src, dst, 3)
    fewer = cached_kron_hierarchy(columns.num_nodes, columns.num_edges, src, dst, 2)
    for other in (again, fewer):
        for level in range(other.num_reductions):
            assert torch.equal(other.keep[level], h.keep[level])
            assert torch.equal(other.edge_index[level + 1], h.edge_index[level + 1])
            assert torch.equal(other.edge_value[level + 1], h.edge_value[level + 1])
    assert fewer.num_reductions == 2


def test_laplacian_threshold_drops_small_entries_only():
    """DD's rule (t = 1e-4): entries < t, negative off-diagonals included, are removed; V⁺ is unchanged."""
    columns = random_columns(SIZES, seed=2)
    args = (columns.num_nodes, columns.num_edges, columns.src.astype(np.int64), columns.dst.astype(np.int64), 2)
    plain, cut = kron_hierarchy(*args), kron_hierarchy(*args, threshold=1e-4)
    for level in range(2):
        assert torch.equal(plain.keep[level], cut.keep[level])
        values = plain.edge_value[level + 1]
        assert torch.equal(cut.edge_value[level + 1], values[values >= 1e-4])
        assert torch.equal(cut.edge_index[level + 1][0] == cut.edge_index[level + 1][1],
                           torch.ones(cut.edge_value[level + 1].numel(), dtype=torch.bool))
    assert (plain.edge_value[1] < 0).any()


# ---------------------------------------------------------------------------------------------------------
# ECC: model


def pyg_ecc(model: ECC, store: GraphStore, ids: list[int]):
    """The original's forward: per-graph dense Laplacians (recomputed here graph by graph), block diagonal →
    dense_to_sparse edges, NNConv with the model's weights, rows of V⁺ kept, global_mean_pool."""
    from torch_geometric.nn import NNConv, global_mean_pool
    from torch_geometric.utils import dense_to_sparse

    def conv(ours, h, edge_index, values):
        ref = NNConv(ours.in_channels, ours.out_channels, nn=copy.deepcopy(ours.nn), aggr="add")
        ref.nn.load_state_dict(ours.nn.state_dict())  # NNConv's constructor re-initialises its edge network
        with torch.no_grad():
            ref.lin.weight.copy_(ours.root.weight)
            ref.bias.copy_(ours.root.bias)
        return ref(h, edge_index, values.view(-1, 1))

    laps, keeps = [], []
    for g in ids:
        lo, hi = int(store.edge_ptr[g]), int(store.edge_ptr[g + 1])
        lap = normalized_laplacian(int(store.num_nodes[g]), store.edge_index[0, lo:hi].numpy(),
                                   store.edge_index[1, lo:hi].numpy())
        per_level, per_keep = [lap], []
        for level in range(model.num_ecc_layers):
            if lap.shape[0] == 1:
                keep, lap = np.ones(1, dtype=bool), np.eye(1)
            else:
                signs, valid = dominant_signs(lap[None], power_start(0, g, level, lap.shape[0])[None])
                keep, lap = decimate(lap, signs[0] if valid[0] else None)
            per_level.append(lap)
            per_keep.append(keep)
        laps.append(per_level)
        keeps.append(per_keep)
    batch = batch_of(store, ids)
    x, edge_index, values, node_graph = batch.x, batch.edge_index, torch.ones(batch.num_edges), batch.batch

    def level_graph(level):
        block = torch.block_diag(*[torch.tensor(laps[i][level], dtype=torch.float32) for i in range(len(ids))])
        return dense_to_sparse(block)

    for level, layer in enumerate(model.layers):
        if level > 0:
            edge_index, values = level_graph(level)
        for c, bn in ((layer.conv1, layer.bn1), (layer.conv2, layer.bn2), (layer.conv3, layer.bn3)):
            x = bn(F.relu(conv(c, x, edge_index, values)))
        keep = torch.from_numpy(np.concatenate([k[level] for k in keeps]))
        x, node_graph = x[keep], node_graph[keep]
    edge_index, values = level_graph(model.num_ecc_layers)
    x = model.final_conv_bn(F.relu(conv(model.final_conv, x, edge_index, values)))
    x = global_mean_pool(x, node_graph, len(ids))
    return model.fc2(F.relu(model.fc1(x)))


@pytest.mark.parametrize("num_layers", [1, 2])
def test_ecc_matches_the_pyg_reference(num_layers):
    store = store_of(SIZES, seed=4)
    torch.manual_seed(0)
    model = build_classifier({**ECC_CFG, "num_layers": num_layers}, meta(), store.num_nodes.numpy())
    model.prepare(store)
    ids = [3, 0, 6, 1, 5]
    for mode in ("train", "eval"):  # dropout 0: train mode differs by BN batch statistics only
        model.train(mode == "train")
        if mode == "eval":
            randomise_batch_norms(model)
        torch.testing.assert_close(model(batch_of(store, ids)), pyg_ecc(model, store, ids), atol=1e-4, rtol=1e-4)
    assert model.aux_loss == 0.0


def test_ecc_eval_logits_are_batch_independent():
    store = store_of(SIZES, seed=4)
    torch.manual_seed(0)
    model = ECC(FEATURES, CLASSES, 2, 6, dropout=0.3, dropout_final=0.1)
    model.prepare(store)
    randomise_batch_norms(model).eval()
    ids = [4, 1, 6, 0]
    together = model(batch_of(store, ids))
    for row, g in enumerate(ids):
        torch.testing.assert_close(together[row], model(batch_of(store, [g]))[0], atol=1e-5, rtol=1e-5)


def test_training_step_through_the_registry():
    store = store_of(SIZES, seed=5)
    loader = GraphLoader(store, torch.arange(store.num_graphs), 4, shuffle=True, generator=torch.Generator())
    for cfg in ({**DIFFPOOL_CFG}, {**ECC_CFG, "dropout": 0.2, "dropout_final": 0.1, "laplacian_threshold": 1e-4}):
        torch.manual_seed(0)
        model = build_classifier(cfg, meta(), store.num_nodes.numpy())
        if cfg["model"] == "ECC":
            assert model.laplacian_threshold == 1e-4
            with pytest.raises(RuntimeError, match="prepare"):
                model(next(iter(loader)))
        model.prepare(store)
        optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
        for batch in loader:
            logits = model(batch)
            assert logits.shape == (batch.num_graphs, CLASSES)
            loss = F.cross_entropy(logits, batch.y)
            if cfg["model"] == "DiffPool":
                assert model.aux_loss.requires_grad and model.aux_loss.dim() == 0
                loss = loss + model.aux_loss
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            assert all(torch.isfinite(p).all() for p in model.parameters())
    with pytest.raises(ConfigError, match="dropout_final"):
        build_classifier({k: v for k, v in ECC_CFG.items() if k != "dropout_final"}, meta(), np.array([3]))
    with pytest.raises(ConfigError, match="num_layers"):
        build_classifier({**DIFFPOOL_CFG, "num_layers": 0}, meta(), np.array([3]))
