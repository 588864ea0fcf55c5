"""The fair-comparison graph classifiers (Errica et al.'s DGCNN, GIN, GraphSAGE and the two baselines, as in the
released code diningphil/gnn-comparison ``models/graph_classifiers/``) against independent computations: PyG
operators with copied weights where PyG 2.x has the same operator (GINConv, SortAggregation, SAGEConv without root
weight over explicit self loops, to_dense_batch/to_dense_adj), per-graph dense references written here, closed-form
parameter counts, batch independence, and the DGCNN k rule on the real TU node counts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import randomise_batch_norms
from torch import nn

from gnnbench.data.batching import GraphBatch, GraphLoader, model_dtypes
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns, GraphStore
from gnnbench.errors import ConfigError
from gnnbench.models.graph_classifiers import build_classifier, classifier_class
from gnnbench.models.graph_classifiers.dgcnn import sort_pool, sortpool_k
from gnnbench.models.sparse import to_dense_adjacency, to_dense_batch

FEATURES, CLASSES = 5, 3
TU_DIR = Path("/work/shared/data/real/tu")


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny tensors: intra-op threads only contend (seconds per test on a loaded 2-core machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ---------------------------------------------------------------------------------------------------------
# Small random graphs, batched directly


def random_graphs(sizes, seed=0, features=FEATURES, edge_prob=0.4):
    """[(x (n, F) float32, edges (2, E) local, both directions of every undirected edge)]."""
    rng = np.random.default_rng(seed)
    graphs = []
    for n in sizes:
        adj = np.triu(rng.random((n, n)) < edge_prob, 1)
        src, dst = np.nonzero(adj | adj.T)
        x = torch.from_numpy(rng.normal(size=(n, features)).astype(np.float32))
        graphs.append((x, torch.from_numpy(np.stack([src, dst])).long()))
    return graphs


def collate(graphs) -> GraphBatch:
    counts = torch.tensor([x.shape[0] for x, _ in graphs])
    ptr = torch.zeros(len(graphs) + 1, dtype=torch.int64)
    torch.cumsum(counts, 0, out=ptr[1:])
    edge_index = torch.cat([edges + ptr[i] for i, (_, edges) in enumerate(graphs)], dim=1)
    return GraphBatch(edge_index=edge_index, batch=torch.repeat_interleave(torch.arange(len(graphs)), counts),
                      ptr=ptr, num_graphs=len(graphs), x=torch.cat([x for x, _ in graphs]))


def meta(features=FEATURES, classes=CLASSES) -> DatasetMeta:
    return DatasetMeta(name="test", task="graph_classification", loss="cross_entropy", metric="accuracy",
                       num_outputs=classes, num_graphs=0, node_features=FeatureSpec("continuous", features),
                       edge_features=None, pe_usage="add", split_sizes=None)


def build(cfg, sizes=(5, 8, 12), features=FEATURES, classes=CLASSES, seed=0):
    torch.manual_seed(seed)
    return build_classifier(cfg, meta(features, classes), np.asarray(sizes))



def count(model) -> int:
    return sum(p.numel() for p in model.parameters())


GIN_CFG = dict(model="GIN", hidden_units=[6, 6, 6], train_eps=True, aggregation="sum", dropout=0.0,
               dropout_layer0_at_eval=False)
SAGE_CFG = dict(model="GraphSAGE", num_layers=3, dim_embedding=7, aggregation="mean")
DGCNN_CFG = dict(model="DGCNN", num_layers=2, embedding_dim=4, k=10, dense_dim=9)
MF_CFG = dict(model="MolecularFingerprint", hidden_units=8)
DM_CFG = dict(model="DeepMultisets", hidden_units=8)


# ---------------------------------------------------------------------------------------------------------
# Shared primitives: padded dense batches


def test_dense_batch_and_adjacency_match_pyg():
    from torch_geometric.utils import to_dense_adj
    from torch_geometric.utils import to_dense_batch as pyg_to_dense_batch

    graphs = random_graphs([3, 1, 6, 4], seed=3)
    batch = collate(graphs)
    batch.edge_index = torch.cat([batch.edge_index, torch.tensor([[0, 7], [1, 7]])], dim=1)  # a parallel edge, a loop
    dense, mask = to_dense_batch(batch.x, batch.batch, batch.ptr)
    expected, expected_mask = pyg_to_dense_batch(batch.x, batch.batch)
    torch.testing.assert_close(dense, expected)
    assert torch.equal(mask, expected_mask)
    adjacency = to_dense_adjacency(batch.edge_index, batch.batch, batch.ptr)
    torch.testing.assert_close(adjacency, to_dense_adj(batch.edge_index, batch.batch))
    assert adjacency[0, 0, 1] == 2  # parallel edges add up

    padded, padded_mask = to_dense_batch(batch.x, batch.batch, batch.ptr, max_nodes=9)
    assert padded.shape == (4, 9, FEATURES) and not padded_mask[:, 6:].any()
    torch.testing.assert_close(padded[:, :6], expected)
    weights = torch.rand(batch.num_edges)
    weighted = to_dense_adjacency(batch.edge_index, batch.batch, batch.ptr, 9, values=weights)
    assert not weighted[:, 6:].any() and not weighted[:, :, 6:].any()
    torch.testing.assert_close(weighted[:, :6, :6], to_dense_adj(batch.edge_index, batch.batch, edge_attr=weights))
    with pytest.raises(ValueError, match="more than max_nodes"):
        to_dense_batch(batch.x, batch.batch, batch.ptr, max_nodes=5)


# ---------------------------------------------------------------------------------------------------------
# GIN (released models/graph_classifiers/GIN.py)


def pyg_gin_conv(layer, train_eps):
    """torch_geometric's GINConv with Errica's MLP, weights copied from a zoo GINLayer."""
    from torch_geometric.nn import GINConv

    h = layer.bn_node_h.num_features
    mlp = nn.Sequential(nn.Linear(h, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Linear(h, h), nn.BatchNorm1d(h), nn.ReLU())
    conv = GINConv(mlp, train_eps=train_eps)  # resets the MLP: copy the weights afterwards
    mlp[0].load_state_dict(layer.mlp.linears[0].state_dict())
    mlp[1].load_state_dict(layer.mlp.batch_norms[0].state_dict())
    mlp[3].load_state_dict(layer.mlp.linears[1].state_dict())
    mlp[4].load_state_dict(layer.bn_node_h.state_dict())
    with torch.no_grad():
        conv.eps.copy_(layer.eps)
    return conv


@pytest.mark.parametrize("training", [True, False])
def test_gin_conv_layer_is_pyg_ginconv_with_errica_mlp(training):
    model = randomise_batch_norms(build(GIN_CFG))
    batch = collate(random_graphs([4, 7, 9], seed=1))
    layer = model.convs[0]
    with torch.no_grad():
        layer.eps.fill_(0.3)
    reference = pyg_gin_conv(layer, train_eps=True)
    model.train(training)
    reference.train(training)
    h = torch.randn(batch.num_nodes, 6)
    from gnnbench.models.gin import NeighbourAggregation

    out = layer(h, NeighbourAggregation(batch.edge_index, batch.num_nodes, "sum"))
    torch.testing.assert_close(out, reference(h, batch.edge_index))


@pytest.mark.parametrize("aggregation", ["sum", "mean"])
def test_gin_forward_matches_pyg_reference(aggregation):
    from torch_geometric.nn import global_add_pool, global_mean_pool

    model = randomise_batch_norms(build({**GIN_CFG, "aggregation": aggregation})).eval()
    with torch.no_grad():
        for i, conv in enumerate(model.convs):
            conv.eps.fill_(0.1 * (i + 1))
    graphs = random_graphs([4, 7, 1, 9], seed=2)
    batch = collate(graphs)
    pool = global_add_pool if aggregation == "sum" else global_mean_pool
    convs = [pyg_gin_conv(conv, True).eval() for conv in model.convs]
    with torch.no_grad():
        x = model.first_h(batch.x)  # Linear → BN → ReLU → Linear → BN → ReLU (a plain Sequential)
        expected = pool(model.linears[0](x), batch.batch)  # layer 0: linear before pooling
        for conv, linear in zip(convs, model.linears[1:], strict=True):
            x = conv(x, batch.edge_index)
            expected = expected + linear(pool(x, batch.batch))  # conv layers: linear after pooling
        torch.testing.assert_close(model(batch), expected)
    # with sum pooling, the layer-0 bias counts once per node: swapping linear and pooling would differ
    if aggregation == "sum":
        with torch.no_grad():
            swapped = model.linears[0](pool(model.first_h(batch.x), batch.batch))
            assert not torch.allclose(swapped, pool(model.linears[0](model.first_h(batch.x)), batch.batch))


def test_gin_ignores_self_loops_like_pyg_1_4():
    model = randomise_batch_norms(build(GIN_CFG)).eval()
    batch = collate(random_graphs([4, 6], seed=4))
    with torch.no_grad():
        plain = model(batch)
        loops = torch.arange(batch.num_nodes).expand(2, -1)
        batch.edge_index = torch.cat([batch.edge_index, loops], dim=1)
        torch.testing.assert_close(model(batch), plain)


def test_gin_dropout_bug_switch():
    graphs = random_graphs([4, 7, 5], seed=5)
    batch = collate(graphs)
    buggy = randomise_batch_norms(build({**GIN_CFG, "dropout": 0.5, "dropout_layer0_at_eval": True})).eval()
    fixed = randomise_batch_norms(build({**GIN_CFG, "dropout": 0.5, "dropout_layer0_at_eval": False})).eval()
    fixed.load_state_dict(buggy.state_dict())
    with torch.no_grad():
        torch.manual_seed(0)
        first, second = buggy(batch), buggy(batch)
        assert not torch.allclose(first, second)  # the as-run model is stochastic in eval mode
        clean = fixed(batch)
        torch.testing.assert_close(fixed(batch), clean)
        # only term 0 is dropped: out_bug − out_fixed = dropout(term0) − term0 ∈ {−term0, +term0} (p = 0.5)
        term0 = torch.zeros(3, CLASSES).index_add_(0, batch.batch, buggy.linears[0](buggy.first_h(batch.x)))
        for out in (first, second):
            diff = out - clean
            ok = torch.isclose(diff, -term0, atol=1e-5) | torch.isclose(diff, term0, atol=1e-5)
            assert ok.all()
    default = build({k: v for k, v in GIN_CFG.items() if k != "dropout_layer0_at_eval"} | {"dropout": 0.5})
    assert default.dropout_layer0_at_eval  # the original's behaviour is the default
    no_dropout = build({**GIN_CFG, "dropout": 0.0, "dropout_layer0_at_eval": True}).eval()
    with torch.no_grad():
        torch.testing.assert_close(no_dropout(batch), no_dropout(batch))


@pytest.mark.parametrize("units,train_eps", [([64, 64, 64, 64], True), ([32, 32], False), ([64], True)])
def test_gin_parameter_count_and_depth(units, train_eps):
    h, n, f, c = units[0], len(units), 7, 2
    model = build({**GIN_CFG, "hidden_units": units, "train_eps": train_eps}, features=f, classes=c)
    mlp0 = (f * h + h) + 2 * h + (h * h + h) + 2 * h
    conv = 2 * (h * h + h) + 2 * (2 * h) + (1 if train_eps else 0)
    readout = (n + 1) * (h * c + c)
    assert count(model) == mlp0 + n * conv + readout
    assert len(model.convs) == n  # hidden_units of length n = n conv layers after the input MLP
    assert classifier_class("GIN").num_layers({"hidden_units": units}) == n


def test_gin_rejects_bad_configs():
    with pytest.raises(ConfigError, match="equal widths"):
        build({**GIN_CFG, "hidden_units": [32, 64]})
    with pytest.raises(ConfigError, match="sum or mean"):
        build({**GIN_CFG, "aggregation": "max"})
    with pytest.raises(ConfigError, match="train_eps"):
        build({k: v for k, v in GIN_CFG.items() if k != "train_eps"})


# ---------------------------------------------------------------------------------------------------------
# GraphSAGE (released models/graph_classifiers/GraphSAGE.py)


def sage_reference(model, graphs, aggregation):
    """PyG-1.4 SAGEConv semantics per graph on dense matrices: W·AGG_{N(i)∪{i}} x_j + b."""
    logits = []
    for x, edges in graphs:
        n = x.shape[0]
        closed = torch.zeros(n, n)
        closed[edges[1], edges[0]] = 1.0  # closed[i, j] = 1 for j ∈ N(i)
        closed.fill_diagonal_(1.0)  # ∪ {i}
        h, layers = x, []
        for conv in model.layers:
            if aggregation == "add":
                agg = closed @ h
            elif aggregation == "mean":
                agg = closed @ h / closed.sum(1, keepdim=True)
            else:
                agg = torch.stack([h[closed[i] > 0].max(0).values for i in range(n)])
            h = agg @ conv.weight.T + conv.bias
            if aggregation == "max":
                h = torch.relu(h @ model.fc_max.weight.T + model.fc_max.bias)
            layers.append(h)
        pooled = torch.cat(layers, dim=1).max(0).values
        logits.append(model.fc2(torch.relu(model.fc1(pooled))))
    return torch.stack(logits)


@pytest.mark.parametrize("aggregation", ["add", "mean", "max"])
def test_graphsage_matches_dense_reference(aggregation):
    model = build({**SAGE_CFG, "aggregation": aggregation}).eval()
    graphs = random_graphs([5, 1, 8, 3], seed=6)
    with torch.no_grad():
        torch.testing.assert_close(model(collate(graphs)), sage_reference(model, graphs, aggregation))


@pytest.mark.parametrize("aggregation", ["add", "mean", "max"])
def test_graphsage_conv_is_pyg_sageconv_without_root_weight_over_self_loops(aggregation):
    """PyG 2.x SAGEConv(root_weight=False) on edges with one self loop per node = PyG-1.4 SAGEConv."""
    from torch_geometric.nn import SAGEConv

    model = build({**SAGE_CFG, "aggregation": aggregation, "num_layers": 1}).eval()
    batch = collate(random_graphs([6, 4], seed=7))
    conv = SAGEConv(FEATURES, 7, aggr=aggregation.replace("add", "sum"), root_weight=False)
    with torch.no_grad():
        conv.lin_l.weight.copy_(model.layers[0].weight)
        conv.lin_l.bias.copy_(model.layers[0].bias)
        loops = torch.arange(batch.num_nodes).expand(2, -1)
        h = conv(batch.x, torch.cat([batch.edge_index, loops], dim=1))
        if aggregation == "max":
            h = torch.relu(model.fc_max(h))
        expected = model.fc2(torch.relu(model.fc1(torch.stack([h[batch.batch == g].max(0).values
                                                                for g in range(2)]))))
        torch.testing.assert_close(model(batch), expected)
        batch.edge_index = torch.cat([batch.edge_index, loops], dim=1)  # existing loops: replaced, not doubled
        torch.testing.assert_close(model(batch), expected)


@pytest.mark.parametrize("aggregation", ["add", "max"])
def test_graphsage_parameter_count(aggregation):
    layers, d, f, c = 5, 32, 7, 4
    model = build({**SAGE_CFG, "aggregation": aggregation, "num_layers": layers, "dim_embedding": d},
                  features=f, classes=c)
    expected = (f * d + d) + (layers - 1) * (d * d + d) + (layers * d * d + d) + (d * c + c)
    if aggregation == "max":
        expected += d * d + d  # one fc_max shared by all layers
    assert count(model) == expected
    with pytest.raises(ConfigError, match="aggregation"):
        build({**SAGE_CFG, "aggregation": "sum"})


# ---------------------------------------------------------------------------------------------------------
# DGCNN (released models/graph_classifiers/DGCNN.py)


def dgcnn_embedding_reference(model, graphs):
    """tanh(D̃⁻¹(A + I)(H Wᵀ + b)) per graph, dense; all conv outputs concatenated."""
    out = []
    for x, edges in graphs:
        n = x.shape[0]
        closed = torch.zeros(n, n)
        closed[edges[1], edges[0]] = 1.0
        closed += torch.eye(n)
        h, hidden = x, []
        for conv in model.convs:
            h = torch.tanh(closed @ (h @ conv.weight.T + conv.bias) / closed.sum(1, keepdim=True))
            hidden.append(h)
        out.append(torch.cat(hidden, dim=1))
    return torch.cat(out)


def test_dgcnn_convolutions_match_dense_reference():
    model = build(DGCNN_CFG).eval()
    graphs = random_graphs([5, 1, 12, 8], seed=8)
    with torch.no_grad():
        embeddings = model.node_embeddings(collate(graphs))
        assert embeddings.shape == (26, 2 * 4 + 1)
        torch.testing.assert_close(embeddings, dgcnn_embedding_reference(model, graphs))


@pytest.mark.parametrize("k", [3, 10])
def test_sort_pool_matches_pyg(k):
    from torch_geometric.nn.aggr import SortAggregation

    batch = collate(random_graphs([5, 1, 12, 8, 3], seed=9))
    h = torch.randn(batch.num_nodes, 4)  # distinct values: no ties to break
    pooled = sort_pool(h, batch.batch, batch.ptr, k)
    torch.testing.assert_close(pooled, SortAggregation(k)(h, batch.batch))
    # the single-node graph: its row, then zero rows
    single = pooled[1].view(k, 4)
    torch.testing.assert_close(single[0], h[5])
    assert not single[1:].any()


def test_sort_pool_is_stable_among_ties_and_differentiable():
    batch = collate(random_graphs([4, 3], seed=10))
    h = torch.tensor([[1.0, 0.5], [2.0, 0.5], [3.0, 0.9], [4.0, 0.1], [5.0, 0.0], [6.0, 0.0], [7.0, 0.2]],
                     requires_grad=True)
    pooled = sort_pool(h, batch.batch, batch.ptr, 4).view(2, 4, 2)
    assert pooled[0, :, 0].tolist() == [3.0, 1.0, 2.0, 4.0]  # 0.9, then the tied 0.5s in batch order, then 0.1
    assert pooled[1, :, 0].tolist() == [7.0, 5.0, 6.0, 0.0]
    pooled.sum().backward()
    assert torch.equal(h.grad, torch.ones_like(h))
    # many ties in larger graphs (where an unstable sort reorders them): batch order within each value
    batch = collate(random_graphs([60, 45, 70], seed=10))
    levels = torch.randint(0, 3, (batch.num_nodes,), generator=torch.Generator().manual_seed(0)).float()
    h = torch.stack([torch.arange(batch.num_nodes).float(), levels], dim=1)
    pooled = sort_pool(h, batch.batch, batch.ptr, 70).view(3, 70, 2)
    for g in range(3):
        nodes = range(int(batch.ptr[g]), int(batch.ptr[g + 1]))
        expected = sorted(nodes, key=lambda v: -levels[v].item())  # Python's sort is stable
        assert pooled[g, : len(expected), 0].tolist() == [float(v) for v in expected]


def test_dgcnn_forward_matches_reference_pipeline():
    from torch_geometric.nn.aggr import SortAggregation

    model = build({**DGCNN_CFG, "k": 11}).eval()
    graphs = random_graphs([5, 14, 12, 8], seed=11)
    batch = collate(graphs)
    with torch.no_grad():
        pooled = SortAggregation(11)(dgcnn_embedding_reference(model, graphs), batch.batch)
        h = F.max_pool1d(F.relu(F.conv1d(pooled.unsqueeze(1), model.conv1d_params1.weight,
                                         model.conv1d_params1.bias, stride=9)), 2, 2)
        h = F.relu(F.conv1d(h, model.conv1d_params2.weight, model.conv1d_params2.bias))
        assert h.shape == (4, 32, 11 // 2 - 4)
        dense1, dense2 = model.dense_layer[0], model.dense_layer[3]
        expected = dense2(F.relu(dense1(h.flatten(1))))
        torch.testing.assert_close(model(batch), expected)


@pytest.mark.parametrize("layers,emb,k", [(2, 32, 30), (4, 64, 48), (3, 32, 10)])
def test_dgcnn_parameter_count(layers, emb, k):
    f, c, dense = 7, 2, 128
    model = build({"model": "DGCNN", "num_layers": layers, "embedding_dim": emb, "k": k}, features=f, classes=c)
    d = layers * emb + 1
    convs = (f * emb + emb) + (layers - 1) * (emb * emb + emb) + (emb + 1)
    head = (16 * d + 16) + (32 * 16 * 5 + 32) + ((k // 2 - 4) * 32 * dense + dense) + (dense * c + c)
    assert model.k == k and count(model) == convs + head  # dense_dim defaults to 128


def test_sortpool_k_rule():
    sizes = np.arange(100, 0, -1)  # 1..100, unsorted
    assert sortpool_k(0.6, sizes) == 60 and sortpool_k(0.9, sizes) == 90
    assert sortpool_k(0.5, np.array([3, 4, 5, 6])) == 10  # never below 10
    assert sortpool_k(0.3, np.array([50, 10, 20, 40, 30])) == 20  # ceil(1.5) − 1 = index 1 of the sorted sizes
    assert sortpool_k(25, sizes) == 25 and sortpool_k(25.0, sizes) == 25
    for bad in (9, 0, -0.5, 12.5, True):
        with pytest.raises(ValueError):
            sortpool_k(bad, sizes)
    with pytest.raises(ConfigError, match="at least 10"):
        build({**DGCNN_CFG, "k": 8})
    assert build({**DGCNN_CFG, "k": 0.9}, sizes=np.arange(1, 41)).k == 36


@pytest.mark.parametrize("name,expected", [("ENZYMES", (36, 48)), ("PROTEINS_full", (32, 81)),
                                           ("IMDB-BINARY", (18, 31))])
def test_sortpool_k_rule_reproduces_the_papers_table(name, expected):
    """The released DGCNN.py's hard-coded k table = the DGCNN authors' rule on the real node counts."""
    path = TU_DIR / f"{name}.zip"
    if not path.is_file():
        pytest.skip(f"{path} is not available (the real TU zips live under /work/shared)")
    from gnnbench.data.generators.tu import read_tu_zip

    sizes = read_tu_zip(path, name).num_nodes
    assert (sortpool_k(0.6, sizes), sortpool_k(0.9, sizes)) == expected


# ---------------------------------------------------------------------------------------------------------
# Structure-agnostic baselines (released MolecularFingerprint.py, DeepMultisets.py)


def test_baselines_match_their_formulas_and_ignore_structure():
    graphs = random_graphs([4, 1, 7], seed=12)
    batch = collate(graphs)
    sums = torch.stack([x.sum(0) for x, _ in graphs])
    fingerprint, multisets = build(MF_CFG).eval(), build(DM_CFG).eval()
    lin1, lin2 = fingerprint.mlp[0], fingerprint.mlp[2]
    with torch.no_grad():
        expected_mf = torch.relu(lin2(torch.relu(lin1(sums))))  # ReLU on the logits, as run
        expected_dm = torch.stack([
            multisets.fc_global2(torch.relu(multisets.fc_global1(torch.relu(multisets.fc_vertex(x)).sum(0))))
            for x, _ in graphs])
        torch.testing.assert_close(fingerprint(batch), expected_mf)
        torch.testing.assert_close(multisets(batch), expected_dm)
        assert (fingerprint(batch) >= 0).all()
        for edge_index in (torch.zeros(2, 0, dtype=torch.long), batch.edge_index.flip(1)[:, ::2],
                           torch.randint(0, batch.num_nodes, (2, 30))):
            rewired = GraphBatch(edge_index=edge_index, batch=batch.batch, ptr=batch.ptr, num_graphs=3, x=batch.x)
            torch.testing.assert_close(fingerprint(rewired), expected_mf)
            torch.testing.assert_close(multisets(rewired), expected_dm)
    f, c, h = 7, 4, 32
    assert count(build({**MF_CFG, "hidden_units": h}, features=f, classes=c)) == (f * h + h) + (h * c + c)
    assert count(build({**DM_CFG, "hidden_units": h}, features=f, classes=c)) == (f * h + h) + (h * h + h) + (h * c + c)
    assert classifier_class("MolecularFingerprint").num_layers(MF_CFG) is None
    assert classifier_class("DeepMultisets").num_layers(DM_CFG) is None


# ---------------------------------------------------------------------------------------------------------
# All models: batch independence, the contract, training through a real loader


ALL_CFGS = [GIN_CFG, {**GIN_CFG, "aggregation": "mean", "train_eps": False}, SAGE_CFG,
            {**SAGE_CFG, "aggregation": "max"}, {**SAGE_CFG, "aggregation": "add"}, DGCNN_CFG, MF_CFG, DM_CFG]


@pytest.mark.parametrize("cfg", ALL_CFGS, ids=lambda c: f"{c['model']}-{c.get('aggregation', '')}")
def test_eval_logits_do_not_depend_on_the_rest_of_the_batch(cfg):
    model = randomise_batch_norms(build(cfg)).eval()
    graphs = random_graphs([5, 1, 13, 8, 3, 11], seed=13)
    with torch.no_grad():
        together = model(collate(graphs))
        assert together.shape == (6, CLASSES) and torch.isfinite(together).all()
        alone = torch.cat([model(collate([g])) for g in graphs])
        torch.testing.assert_close(together, alone)
        order = [4, 2, 0, 5, 1, 3]
        torch.testing.assert_close(model(collate([graphs[i] for i in order])), together[order])


@pytest.mark.parametrize("cfg", ALL_CFGS[::2] + [{**SAGE_CFG, "aggregation": "max"}, DM_CFG],
                         ids=lambda c: f"{c['model']}-{c.get('aggregation', '')}")
def test_training_through_a_graph_loader_reduces_the_loss(cfg):
    rng = np.random.default_rng(0)
    sizes = rng.integers(3, 14, 24)
    graphs = random_graphs(sizes, seed=14, features=3)
    labels = np.array([int(x[:, 0].mean() > 0) for x, _ in graphs], dtype=np.int16)
    columns = GraphColumns(num_nodes=sizes.astype(np.int64),
                           num_edges=np.array([e.shape[1] for _, e in graphs], dtype=np.int64),
                           src=torch.cat([e[0] for _, e in graphs]).numpy().astype(np.int32),
                           dst=torch.cat([e[1] for _, e in graphs]).numpy().astype(np.int32),
                           node={"x": torch.cat([x for x, _ in graphs]).numpy()}, graph={"y": labels})
    store = model_dtypes(GraphStore.from_columns(columns))
    batch = GraphLoader(store, torch.arange(24), 24).collate(torch.arange(24))
    torch.testing.assert_close(batch.x, collate(graphs).x)
    model = build(cfg, sizes=sizes, features=3, classes=2)
    assert set(model.required) <= set(cfg) and model.aux_loss == 0.0
    optimiser = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(25):
        optimiser.zero_grad()
        loss = F.cross_entropy(model(batch), batch.y.long())
        loss.backward()
        if not losses:
            assert all(p.grad is not None for p in model.parameters()), "a parameter gets no gradient"
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < 0.9 * losses[0]
