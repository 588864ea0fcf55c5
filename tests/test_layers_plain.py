"""Every layer of ``gnnbench.models`` on a plain ``(x, edge_index)`` call (PyG's ``conv(x, edge_index)``).

For each layer: the plain call equals the call the architecture makes with the batch's structures (same module,
same weights, bit for bit); it equals the update equation of the layer's docstring computed here with dense
matrices on a tiny graph; the structures built from ``edge_index`` are cached for the next call with the same
tensor; and ``reset_parameters()`` restores the weights the constructor drew from the same RNG state.
"""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
import torch.nn.functional as F

from gnnbench.data.batching import GraphBatch

N = 6
# a small directed multigraph: node 5 has no in-edges, one parallel edge (0→1 twice), one self loop (3→3)
EDGES = [(0, 1), (0, 1), (1, 0), (2, 1), (1, 2), (3, 2), (2, 3), (3, 3), (4, 3), (0, 4), (5, 4), (1, 4)]
EDGE_INDEX = torch.tensor(EDGES, dtype=torch.int64).t().contiguous()


def features(width: int, seed: int = 0, rows: int = N) -> torch.Tensor:
    return torch.randn(rows, width, generator=torch.Generator().manual_seed(seed))


def dense_adjacency(edge_index: torch.Tensor = EDGE_INDEX, num_nodes: int = N) -> torch.Tensor:
    """A[v, u] = number of edges u→v (rows: destinations)."""
    a = torch.zeros(num_nodes, num_nodes)
    for u, v in edge_index.t().tolist():
        a[v, u] += 1
    return a


def one_graph_batch(x: torch.Tensor | None = None, edge_index: torch.Tensor = EDGE_INDEX,
                    edge_attr: torch.Tensor | None = None, num_nodes: int = N) -> GraphBatch:
    return GraphBatch(edge_index=edge_index, batch=torch.zeros(num_nodes, dtype=torch.int64),
                      ptr=torch.tensor([0, num_nodes]), num_graphs=1, x=x, edge_attr=edge_attr)


def perturb_(module: torch.nn.Module) -> None:
    with torch.no_grad():
        for p in module.parameters():
            p.add_(1.0)


def assert_reset_restores(build, seed: int = 7, before=None) -> None:
    """``reset_parameters()`` under the constructor's RNG state gives the constructor's parameters. ``before``
    repeats the draws a constructor makes before its own ``reset_parameters()`` call (an ``nn.Linear`` child
    initialises itself when created, then the layer re-initialises it)."""
    torch.manual_seed(seed)
    layer = build()
    initial = copy.deepcopy(layer.state_dict())
    perturb_(layer)
    torch.manual_seed(seed)
    if before is not None:
        before()
    layer.reset_parameters()
    for name, value in layer.state_dict().items():
        assert torch.equal(value, initial[name]), name


def assert_cached(layer: torch.nn.Module, call) -> None:
    """A second call with the same edge_index tensor reuses the structures; copies and pickles start empty."""
    call()
    cache = layer.__dict__["_structure_cache"]
    value = cache.value
    call()
    assert layer.__dict__["_structure_cache"].value is value
    assert copy.deepcopy(layer).__dict__["_structure_cache"].value is None
    assert pickle.loads(pickle.dumps(layer)).__dict__["_structure_cache"].value is None


# ---------------------------------------------------------------------------------------------------------
# GCN


def test_gcn_layer_plain_call():
    from gnnbench.models.gcn import GCN, GCNLayer, gcn_adjacency

    torch.manual_seed(0)
    layer = GCNLayer(4, 3, 0.0, batch_norm=False, residual=False).eval()
    x = features(4)
    plain = layer(x, EDGE_INDEX)
    assert torch.equal(plain, layer(x, gcn_adjacency(EDGE_INDEX, N)))
    a = dense_adjacency()
    d_in, d_out = a.sum(1).clamp(min=1), a.sum(0).clamp(min=1)
    norm = d_in.rsqrt().unsqueeze(1) * a * d_out.rsqrt().unsqueeze(0)
    torch.testing.assert_close(plain, torch.relu(norm @ x @ layer.weight + layer.bias))
    assert_cached(layer, lambda: layer(x, EDGE_INDEX))
    # a whole architecture on a batch = its layers called on (x, edge_index)
    torch.manual_seed(1)
    net = GCN(4, 4, 3, 0.0, batch_norm=True, residual=True).eval()
    h = net(x, None, one_graph_batch()).nodes
    expected = x
    for lay in net.layers:
        expected = lay(expected, EDGE_INDEX)
    assert torch.equal(h, expected)
    assert_reset_restores(lambda: GCNLayer(4, 3, 0.1, True, True))


# ---------------------------------------------------------------------------------------------------------
# GAT


def edge_softmax(scores: torch.Tensor, edge_index: torch.Tensor = EDGE_INDEX, num_nodes: int = N) -> torch.Tensor:
    """Softmax of per-edge scores (E, …) over the in-edges of every destination, one edge at a time."""
    out = torch.empty_like(scores)
    dst = edge_index[1]
    for v in range(num_nodes):
        ids = (dst == v).nonzero().view(-1)
        if ids.numel():
            out[ids] = torch.softmax(scores[ids], dim=0)
    return out


def aggregate(weights: torch.Tensor, messages: torch.Tensor, edge_index: torch.Tensor = EDGE_INDEX,
              num_nodes: int = N) -> torch.Tensor:
    """out[v] = Σ_{edges u→v} weights_e · messages_e, one edge at a time."""
    out = messages.new_zeros(num_nodes, messages.shape[1])
    for i, v in enumerate(edge_index[1].tolist()):
        out[v] += weights[i] * messages[i]
    return out


def test_gat_layer_plain_call():
    from gnnbench.models.gat import GATLayer
    from gnnbench.models.sparse import AttentionGraph

    torch.manual_seed(0)
    heads, d = 2, 3
    layer = GATLayer(6, d, heads, 0.3, batch_norm=False, residual=True).eval()
    x = features(6)
    plain = layer(x, EDGE_INDEX)
    assert torch.equal(plain, layer(x, AttentionGraph(EDGE_INDEX, N)))
    src, dst = EDGE_INDEX
    z = (x @ layer.fc.weight.t()).view(N, heads, d)
    el, er = (z * layer.attn_l).sum(-1), (z * layer.attn_r).sum(-1)  # (N, H)
    alpha = edge_softmax(F.leaky_relu(el[src] + er[dst], 0.2))  # (E, H)
    conv = torch.cat([aggregate(alpha[:, k], z[src, k]) for k in range(heads)], dim=1) + layer.bias
    torch.testing.assert_close(plain, x + F.elu(conv))
    assert_cached(layer, lambda: layer(x, EDGE_INDEX))
    assert_reset_restores(lambda: GATLayer(6, d, heads, 0.3, True, True),
                          before=lambda: torch.nn.Linear(6, heads * d, bias=False))


@pytest.mark.parametrize("layer_type", ["edgefeat", "edgereprfeat", "isotropic"])
def test_custom_gat_layers_plain_call(layer_type):
    from gnnbench.models.gat import LAYER_TYPES, _unit_adjacency_of
    from gnnbench.models.sparse import AttentionGraph

    cls = LAYER_TYPES[layer_type]
    torch.manual_seed(0)
    heads, d = 2, 3
    layer = cls(6, d, heads, 0.2, batch_norm=False, residual=False).eval()
    x, e = features(6), features(6, seed=1, rows=EDGE_INDEX.shape[1])
    h_plain, e_plain = layer(x, EDGE_INDEX, e)
    structure = (_unit_adjacency_of(EDGE_INDEX, N, x.device) if layer_type == "isotropic"
                 else AttentionGraph(EDGE_INDEX, N))
    h_batch, e_batch = layer(x, e, structure)
    assert torch.equal(h_plain, h_batch) and torch.equal(e_plain, e_batch)
    src, dst = EDGE_INDEX
    if layer_type == "isotropic":
        w = layer.fc_weight.reshape(heads * d, -1)
        torch.testing.assert_close(h_plain, F.elu(dense_adjacency() @ x @ w.t()))
        assert e_plain is e
    elif layer_type == "edgefeat":
        outs = []
        for k in range(heads):
            z = x @ layer.fc_weight[k].t()
            a = layer.attn_weight[k]
            alpha = edge_softmax(F.leaky_relu(z[src] @ a[:d] + z[dst] @ a[d:], 0.01))
            outs.append(F.elu(aggregate(alpha, z[src])))
        torch.testing.assert_close(h_plain, torch.cat(outs, dim=1))
        assert e_plain is e
    else:
        h_outs, e_outs = [], []
        for k in range(heads):
            z, y = x @ layer.fc_h_weight[k].t(), e @ layer.fc_e_weight[k].t()
            c = torch.cat([y, z[src], z[dst]], dim=1)
            alpha = edge_softmax(F.leaky_relu(c @ layer.attn_weight[k], 0.01))
            h_outs.append(F.elu(aggregate(alpha, z[src])))
            e_outs.append(F.elu(c @ layer.fc_proj_weight[k].t() + layer.fc_proj_bias[k]))
        torch.testing.assert_close(h_plain, torch.cat(h_outs, dim=1))
        torch.testing.assert_close(e_plain, torch.cat(e_outs, dim=1))
    assert_cached(layer, lambda: layer(x, EDGE_INDEX, e))
    assert_reset_restores(lambda: cls(6, d, heads, 0.2, True, True))


@pytest.mark.parametrize("layer_type", ["dgl", "edgefeat", "edgereprfeat", "isotropic"])
def test_gat_network_equals_its_layers_on_edge_index(layer_type):
    from gnnbench.models.gat import GAT

    torch.manual_seed(2)
    net = GAT(3, 5, 2, 3, 0.0, batch_norm=True, residual=True, layer_type=layer_type).eval()
    x, e = features(6), features(6, seed=1, rows=EDGE_INDEX.shape[1])
    h = net(x, e, one_graph_batch()).nodes
    expected = x
    for i, layer in enumerate(net.layers):
        if layer_type == "dgl":
            expected = layer(expected, EDGE_INDEX)
        else:
            expected, e = layer(expected, EDGE_INDEX, e, edge_output=i < len(net.layers) - 1)
    assert torch.equal(h, expected)


# ---------------------------------------------------------------------------------------------------------
# GraphSAGE


def edge_max(messages: torch.Tensor, edge_index: torch.Tensor = EDGE_INDEX, num_nodes: int = N) -> torch.Tensor:
    """out[v] = elementwise max over the in-edges of v of messages_e (0 without in-edges)."""
    out = messages.new_zeros(num_nodes, messages.shape[1])
    for v in range(num_nodes):
        ids = (edge_index[1] == v).nonzero().view(-1)
        if ids.numel():
            out[v] = messages[ids].max(0).values
    return out


@pytest.mark.parametrize("aggregator", ["maxpool", "mean", "meanpool"])
def test_graphsage_layer_plain_call(aggregator):
    from gnnbench.models.graphsage import GraphSage, GraphSageLayer
    from gnnbench.models.sparse import InEdges

    torch.manual_seed(0)
    layer = GraphSageLayer(4, 4, 0.5, aggregator, batch_norm=False, residual=True).eval()
    x = features(4)
    plain = layer(x, EDGE_INDEX)
    edges = InEdges.of(EDGE_INDEX, N)
    neighbours = edges.max_plan() if aggregator == "maxpool" else edges.mean_adjacency(x.dtype)
    assert torch.equal(plain, layer(x, neighbours))
    pooled = torch.relu(layer.pool(x)) if layer.pool is not None else x
    src = EDGE_INDEX[0]
    if aggregator == "maxpool":
        c = edge_max(pooled[src])
    else:
        a = dense_adjacency()
        c = (a @ pooled) / a.sum(1, keepdim=True).clamp(min=1)
    z = torch.cat([pooled, c], dim=1) @ layer.nodeapply.linear.weight.t() + layer.nodeapply.linear.bias
    torch.testing.assert_close(plain, x + torch.relu(F.normalize(z, dim=1)))
    assert_cached(layer, lambda: layer(x, EDGE_INDEX))
    assert_reset_restores(lambda: GraphSageLayer(4, 3, 0.5, aggregator, True, True))
    torch.manual_seed(1)
    net = GraphSage(4, 3, 3, 0.0, batch_norm=True, residual=True, aggregator=aggregator).eval()
    expected = x
    for lay in net.layers:
        expected = lay(expected, EDGE_INDEX)
    assert torch.equal(net(x, None, one_graph_batch()).nodes, expected)


@pytest.mark.parametrize("layer_type", ["edgefeat", "edgereprfeat"])
def test_graphsage_edge_layers_plain_call(layer_type):
    from gnnbench.models.graphsage import GraphSage, GraphSageLayerEdgeFeat, GraphSageLayerEdgeReprFeat
    from gnnbench.models.sparse import InEdges

    cls = GraphSageLayerEdgeFeat if layer_type == "edgefeat" else GraphSageLayerEdgeReprFeat
    torch.manual_seed(0)
    layer = cls(4, 4, 0.5, batch_norm=False, residual=True).eval()
    x, e = features(4), features(4, seed=1, rows=EDGE_INDEX.shape[1])
    edges = InEdges.of(EDGE_INDEX, N)
    plan = edges.max_plan(over_edges=True)
    src, dst = EDGE_INDEX
    e_hat = layer.B(x)[src] + layer.B(x)[dst]
    if layer_type == "edgereprfeat":
        e_hat = e_hat + layer.C(e)
        h_plain, e_plain = layer(x, EDGE_INDEX, e)
        h_batch, e_sorted = layer(x, e.index_select(0, edges.order), edges, plan)
        assert torch.equal(h_plain, h_batch)
        assert torch.equal(e_plain.index_select(0, edges.order), e_sorted)  # plain: the caller's edge order
        torch.testing.assert_close(e_plain, e + torch.relu(e_hat))
    else:
        h_plain = layer(x, EDGE_INDEX)
        assert torch.equal(h_plain, layer(x, edges, plan))
    c = edge_max(torch.relu(torch.sigmoid(e_hat) * layer.A(x)[src]))
    z = layer.nodeapply.linear(torch.cat([x, c], dim=1))
    torch.testing.assert_close(h_plain, x + torch.relu(F.normalize(z, dim=1)))
    call = (lambda: layer(x, EDGE_INDEX, e)) if layer_type == "edgereprfeat" else (lambda: layer(x, EDGE_INDEX))
    assert_cached(layer, call)
    assert_reset_restores(lambda: cls(4, 4, 0.5, True, True))
    torch.manual_seed(1)
    net = GraphSage(4, 4, 3, 0.0, batch_norm=True, residual=True, layer_type=layer_type).eval()
    expected, stream = x, e
    for i, lay in enumerate(net.layers):
        if layer_type == "edgefeat":
            expected = lay(expected, EDGE_INDEX)
        else:
            expected, stream = lay(expected, EDGE_INDEX, stream, edge_output=i < len(net.layers) - 1)
    assert torch.equal(net(x, e, one_graph_batch()).nodes, expected)


# ---------------------------------------------------------------------------------------------------------
# GIN


@pytest.mark.parametrize("aggregator", ["sum", "mean", "max"])
def test_gin_layer_plain_call(aggregator):
    from gnnbench.models.gin import GIN, GINLayer, NeighbourAggregation

    torch.manual_seed(0)
    layer = GINLayer(4, 2, 0.3, batch_norm=False, residual=True, learn_eps=True, aggregator=aggregator).eval()
    with torch.no_grad():
        layer.eps.fill_(0.25)
    x = features(4)
    plain = layer(x, EDGE_INDEX)
    assert torch.equal(plain, layer(x, NeighbourAggregation(EDGE_INDEX, N, aggregator)))
    a = dense_adjacency()
    if aggregator == "max":
        agg = edge_max(x[EDGE_INDEX[0]])
    else:
        agg = a @ x if aggregator == "sum" else (a @ x) / a.sum(1, keepdim=True).clamp(min=1)
    torch.testing.assert_close(plain, x + torch.relu(layer.mlp(1.25 * x + agg)))
    assert_cached(layer, lambda: layer(x, EDGE_INDEX))
    assert_reset_restores(lambda: GINLayer(4, 3, 0.3, True, True, learn_eps=True, aggregator=aggregator))
    torch.manual_seed(1)
    net = GIN(4, 3, 0.0, batch_norm=True, residual=True, aggregator=aggregator).eval()
    expected = x
    for lay in net.layers:
        expected = lay(expected, EDGE_INDEX)
    assert torch.equal(net(x, None, one_graph_batch()).nodes, expected)


# ---------------------------------------------------------------------------------------------------------
# GatedGCN


@pytest.mark.parametrize("layer_type", ["edgereprfeat", "edgefeat", "isotropic"])
def test_gated_gcn_layers_plain_call(layer_type):
    from gnnbench.models.gated_gcn import LAYER_TYPES, GatedGCN

    cls = LAYER_TYPES[layer_type]
    torch.manual_seed(0)
    layer = cls(4, 4, 0.3, batch_norm=False, residual=True).eval()
    x, e = features(4), features(4, seed=1, rows=EDGE_INDEX.shape[1])
    h_plain, e_plain = layer(x, EDGE_INDEX, e)
    h_batch, e_batch = layer(x, e, EDGE_INDEX)
    assert torch.equal(h_plain, h_batch) and torch.equal(e_plain, e_batch)
    src, dst = EDGE_INDEX
    if layer_type == "isotropic":
        h_ref = layer.A(x) + dense_adjacency() @ layer.B(x)
        assert e_plain is e
        assert_cached(layer, lambda: layer(x, EDGE_INDEX))
    else:
        e_hat = layer.D(x)[src] + layer.E(x)[dst]
        if layer_type == "edgereprfeat":
            e_hat = e_hat + layer.C(e)
            torch.testing.assert_close(e_plain, e + torch.relu(e_hat))
        else:
            assert e_plain is e
        sigma = torch.sigmoid(e_hat)
        ones = torch.ones(len(EDGES))
        h_ref = layer.A(x) + aggregate(ones, sigma * layer.B(x)[src]) / (aggregate(ones, sigma) + 1e-6)
    torch.testing.assert_close(h_plain, x + torch.relu(h_ref))
    assert_reset_restores(lambda: cls(4, 4, 0.3, True, True))
    torch.manual_seed(1)
    net = GatedGCN(4, 4, 3, 0.0, batch_norm=True, residual=True, layer_type=layer_type).eval()
    expected, stream = x, e
    for i, lay in enumerate(net.layers):
        expected, stream = lay(expected, EDGE_INDEX, stream, edge_output=i < len(net.layers) - 1)
    assert torch.equal(net(x, e, one_graph_batch()).nodes, expected)


# ---------------------------------------------------------------------------------------------------------
# MoNet


def test_gmm_layer_plain_call():
    from gnnbench.models.monet import GMMLayer, KernelAdjacency, MoNet, project, pseudo_coordinates
    from gnnbench.models.sparse import InEdges

    torch.manual_seed(0)
    kernels, dim = 3, 2
    layer = GMMLayer(4, 4, dim, kernels, 0.3, batch_norm=False, residual=True).eval()
    with torch.no_grad():
        layer.bias.normal_()
        layer.inv_sigma.uniform_(0.5, 1.5)
    x, pseudo = features(4), torch.rand(len(EDGES), dim, generator=torch.Generator().manual_seed(3))
    plain = layer(x, EDGE_INDEX, pseudo)
    edges = InEdges.of(EDGE_INDEX, N)
    batch = layer(x, pseudo.index_select(0, edges.order).t(), KernelAdjacency(edges, kernels))
    assert torch.equal(plain, batch)
    src = EDGE_INDEX[0]
    w = torch.exp(-0.5 * ((pseudo.unsqueeze(1) - layer.mu) ** 2 * layer.inv_sigma ** 2).sum(-1))  # (E, K)
    messages = layer.fc(x).view(N, kernels, 4)[src]  # (E, K, d_out)
    agg = aggregate(torch.ones(len(EDGES)), (w.unsqueeze(-1) * messages).sum(1))
    torch.testing.assert_close(plain, x + torch.relu(agg) + layer.bias)
    assert_cached(layer, lambda: layer(x, EDGE_INDEX, pseudo))
    assert_reset_restores(lambda: GMMLayer(4, 3, dim, kernels, 0.3, True, True),
                          before=lambda: torch.nn.Linear(4, kernels * 3, bias=False))
    # the network: every layer on (x, edge_index, its projected degree pseudo-coordinates in edge order)
    torch.manual_seed(1)
    net = MoNet(4, 4, 3, 0.0, batch_norm=True, residual=True, kernels=kernels, pseudo_dim=dim).eval()
    unsorted = torch.empty_like(edges.order)
    unsorted[edges.order] = torch.arange(len(EDGES))
    coordinates = pseudo_coordinates(edges, x.dtype)[:, unsorted]  # (2, E) in EDGE_INDEX order
    expected = x
    for lay, projection in zip(net.layers, net.pseudo_proj, strict=True):
        expected = lay(expected, EDGE_INDEX, project(projection, coordinates).t())
    torch.testing.assert_close(net(x, None, one_graph_batch()).nodes, expected)  # degree-pair table: rounding only


# ---------------------------------------------------------------------------------------------------------
# Fair-comparison layers (Errica et al.): DGCNN, GraphSAGE, ECC, DiffPool (GIN uses GINLayer, tested above)


def test_dgcnn_conv_plain_call():
    from gnnbench.models.graph_classifiers.dgcnn import DGCNN, DGCNNConv, closed_mean_adjacency

    torch.manual_seed(0)
    conv = DGCNNConv(4, 3)
    x = features(4)
    plain = conv(x, EDGE_INDEX)
    assert torch.equal(plain, conv(x, closed_mean_adjacency(EDGE_INDEX, N, x.dtype)))
    closed = dense_adjacency() + torch.eye(N)  # one more self loop per node, existing ones kept
    torch.testing.assert_close(plain, closed @ (x @ conv.weight.t() + conv.bias) / closed.sum(1, keepdim=True))
    assert_cached(conv, lambda: conv(x, EDGE_INDEX))
    assert_reset_restores(lambda: DGCNNConv(4, 3))
    torch.manual_seed(1)
    model = DGCNN(4, 2, num_layers=2, embedding_dim=5, k=10).eval()
    expected, hidden = x, []
    for layer in model.convs:
        expected = torch.tanh(layer(expected, EDGE_INDEX))
        hidden.append(expected)
    assert torch.equal(model.node_embeddings(one_graph_batch(x)), torch.cat(hidden, dim=1))


@pytest.mark.parametrize("aggregation", ["add", "mean", "max"])
def test_errica_sage_conv_plain_call(aggregation):
    from gnnbench.models.graph_classifiers.graphsage import ClosedSAGEConv, GraphSAGE, _ClosedNeighbourhood

    torch.manual_seed(0)
    conv = ClosedSAGEConv(4, 3, aggregation)
    x = features(4)  # negative entries: the exact scatter maximum path
    plain = conv(x, EDGE_INDEX)
    assert torch.equal(plain, conv(x, _ClosedNeighbourhood(EDGE_INDEX, N, aggregation, x.dtype)))
    closed = dense_adjacency().fill_diagonal_(0) + torch.eye(N)  # existing loops dropped, one added
    if aggregation == "max":
        agg = torch.stack([x[closed[i] > 0].max(0).values for i in range(N)])
    else:
        agg = closed @ x if aggregation == "add" else closed @ x / closed.sum(1, keepdim=True)
    torch.testing.assert_close(plain, agg @ conv.weight.t() + conv.bias)
    assert_cached(conv, lambda: conv(x, EDGE_INDEX))
    assert_reset_restores(lambda: ClosedSAGEConv(4, 3, aggregation))
    torch.manual_seed(1)
    model = GraphSAGE(4, 2, num_layers=2, dim_embedding=3, aggregation=aggregation).eval()
    h, hidden = x, []
    for layer in model.layers:
        h = layer(h, EDGE_INDEX)
        if model.fc_max is not None:
            h = torch.relu(model.fc_max(h))
        hidden.append(h)
    pooled = torch.cat(hidden, dim=1).max(0, keepdim=True).values
    assert torch.equal(model(one_graph_batch(x)), model.fc2(torch.relu(model.fc1(pooled))))


@pytest.mark.parametrize("valued", [False, True])
def test_ecc_layers_plain_call(valued):
    from gnnbench.models.graph_classifiers.ecc import ECCLayer, ECConv

    torch.manual_seed(0)
    conv = ECConv(3, 2)
    x = features(3)
    values = torch.rand(len(EDGES), generator=torch.Generator().manual_seed(4)) if valued else None
    out = conv(x, EDGE_INDEX, values)
    expected = conv.root(x)
    for i, (u, v) in enumerate(EDGES):
        value = torch.tensor([[1.0 if values is None else float(values[i])]])
        expected[v] = expected[v] + x[u] @ conv.nn(value).view(3, 2)
    torch.testing.assert_close(out, expected)
    assert_reset_restores(lambda: ECConv(3, 2))
    layer = ECCLayer(3, 4, dropout=0.5).eval()
    h = x
    for c, bn in ((layer.conv1, layer.bn1), (layer.conv2, layer.bn2), (layer.conv3, layer.bn3)):
        h = bn(torch.relu(c(h, EDGE_INDEX, values)))
    assert torch.equal(layer(x, EDGE_INDEX, values), h)
    assert_reset_restores(lambda: ECCLayer(3, 4, 0.5))


def test_diffpool_layers_plain_call():
    from gnnbench.models.graph_classifiers.diffpool import (
        DenseSAGEConv,
        DiffPoolLayer,
        SAGEConvolutions,
        mean_adjacency,
    )
    from gnnbench.models.sparse import to_dense_adjacency

    torch.manual_seed(0)
    x = features(4)
    adj = to_dense_adjacency(EDGE_INDEX, torch.zeros(N, dtype=torch.int64), torch.tensor([0, N]))
    conv = DenseSAGEConv(4, 3)
    plain = conv(x, EDGE_INDEX)
    assert torch.equal(plain, conv(x.unsqueeze(0), mean_adjacency(adj)).squeeze(0))
    a = dense_adjacency().t()  # row i: the edges i→j (PyG's dense orientation)
    torch.testing.assert_close(plain, a @ x / a.sum(1, keepdim=True).clamp(min=1) @ conv.lin.weight.t()
                               + conv.lin.bias)
    assert_cached(conv, lambda: conv(x, EDGE_INDEX))
    assert_reset_restores(lambda: DenseSAGEConv(4, 3))
    block = SAGEConvolutions(4, 3, 2).eval()
    assert torch.equal(block(x, EDGE_INDEX), block(x.unsqueeze(0), mean_adjacency(adj)).squeeze(0))
    assert_reset_restores(lambda: SAGEConvolutions(4, 3, 2))
    layer = DiffPoolLayer(4, 3, 2, num_clusters=2).eval()
    for got, want in zip(layer(x, EDGE_INDEX), layer(x.unsqueeze(0), adj), strict=True):
        assert torch.equal(got, want)
    assert_reset_restores(lambda: DiffPoolLayer(4, 3, 2, 2))


# ---------------------------------------------------------------------------------------------------------
# Dense WL-GNN layers (RingGNN, 3WLGNN): the plain call builds the network's dense input [Â ‖ diag(x)]


def dense_reference_input(x: torch.Tensor) -> torch.Tensor:
    """(1, 1 + F, N, N): Â[u, v] = #edges u→v · d_in(u)^-1/2 · d_in(v)^-1/2 (0 for d_in = 0), x on the diagonal."""
    a = dense_adjacency().t()  # row u: the edges u→v
    d = a.sum(0)
    scale = torch.where(d > 0, d.clamp(min=1).rsqrt(), torch.zeros_like(d))
    channels = [scale.unsqueeze(1) * a * scale.unsqueeze(0)] + [torch.diag(x[:, f]) for f in range(x.shape[1])]
    return torch.stack(channels).unsqueeze(0)


@pytest.mark.parametrize("residual", [False, True])
def test_ring_gnn_layer_plain_call(residual):
    from gnnbench.data.meta import FeatureSpec
    from gnnbench.models.dense import DenseLayout, to_dense
    from gnnbench.models.ring_gnn import RingGNNEquivLayer, ring_basis_ops

    torch.manual_seed(0)
    layer = RingGNNEquivLayer(3, 4, layer_norm=False, residual=residual, dropout=0.5, k2_init=0.3).eval()
    with torch.no_grad():
        for p in (*layer.diag_bias_list, layer.all_bias):
            p.normal_()
    x = features(2)
    plain = layer(x, EDGE_INDEX)
    dense = to_dense(one_graph_batch(x), DenseLayout(FeatureSpec("continuous", 2), None))
    torch.testing.assert_close(dense.x, dense_reference_input(x))
    assert torch.equal(plain, layer(dense.x, dense.mask))
    ops = ring_basis_ops(dense.x, dense.mask)  # (1, D, 15, N, N)
    y = [torch.einsum("dsb,zdbij->zsij", c, ops) for c in layer.coeffs_list]
    eye = torch.eye(N)
    out = layer.switch[0] * (y[0] + eye * layer.diag_bias_list[0]) \
        + layer.switch[1] * (y[2] @ (y[1] + eye * layer.diag_bias_list[1])) + layer.all_bias
    out = torch.relu(out)
    if residual:
        out = out + torch.einsum("sd,zdij->zsij", layer.res_x.weight, dense.x) + layer.res_x.bias.view(1, -1, 1, 1)
    torch.testing.assert_close(plain, out)
    assert_reset_restores(lambda: RingGNNEquivLayer(3, 4, True, residual, 0.5, k2_init=0.3))


@pytest.mark.parametrize("residual", [False, True])
def test_three_wl_regular_block_plain_call(residual):
    from gnnbench.models.three_wl_gnn import RegularBlock

    torch.manual_seed(0)
    block = RegularBlock(2, 3, 4, residual=residual)
    x = features(2)
    plain = block(x, EDGE_INDEX)
    inp = dense_reference_input(x)
    assert torch.equal(plain, block(inp, torch.ones(1, 1, N, N)))

    def mlp(module, h):
        for conv in module.convs:
            h = torch.relu(F.conv2d(h, conv.weight, conv.bias))
        return h

    mult = mlp(block.mlp1, inp) @ mlp(block.mlp2, inp)
    out = F.conv2d(torch.cat([inp, mult], dim=1), block.skip.conv.weight, block.skip.conv.bias)
    if residual:
        out = out + torch.einsum("sd,zdij->zsij", block.res_x.weight, inp) + block.res_x.bias.view(1, -1, 1, 1)
    torch.testing.assert_close(plain, out)
    assert_reset_restores(lambda: RegularBlock(2, 3, 4, residual))


def test_only_integer_pairs_count_as_edge_index():
    from gnnbench.models.blocks import is_edge_index

    assert is_edge_index(EDGE_INDEX) and is_edge_index(EDGE_INDEX.int())
    assert not is_edge_index(torch.ones(2, 5, dtype=torch.bool))  # a node mask of two graphs
    assert not is_edge_index(torch.ones(2, 5)) and not is_edge_index(EDGE_INDEX[0]) and not is_edge_index(None)


# ---------------------------------------------------------------------------------------------------------
# MLP (no graph) and label propagation (no weights)


def test_mlp_plain_call_ignores_the_graph():
    from gnnbench.models.mlp import MLP

    torch.manual_seed(0)
    mlp = MLP(4, 5, 2, 0.3, gated=True).eval()
    x = features(4)
    out = mlp(x).nodes
    assert torch.equal(out, mlp(x, EDGE_INDEX).nodes) and torch.equal(out, mlp(x, None, one_graph_batch(x)).nodes)
    h = torch.relu(mlp.layers[1](torch.relu(mlp.layers[0](x))))
    torch.testing.assert_close(out, torch.sigmoid(mlp.gate(h)) * h)
    assert_reset_restores(lambda: MLP(4, 5, 2, 0.3, True))


@pytest.mark.parametrize("variant", ["vanilla", "smoothed"])
def test_label_propagation_from_edge_index(variant):
    from gnnbench.models.labelprop import LabelPropagation

    labels, train = torch.tensor([0, 1, 1, 2, 0, 2]), torch.tensor([0, 3])
    prop = LabelPropagation.from_edge_index(EDGE_INDEX, labels, train, variant, alpha=0.1)
    a = dense_adjacency()
    y0 = torch.zeros(N, 3)
    y0[train, labels[train]] = 1.0
    y = y0.clone()
    if variant == "smoothed":
        a.fill_diagonal_(0)
    d = a.sum(1).clamp(min=1)
    for _ in range(3):
        if variant == "vanilla":
            y = a @ y / d.unsqueeze(1)
            y[train] = y0[train]
        else:
            y = 0.9 * (d.rsqrt().unsqueeze(1) * a * d.rsqrt().unsqueeze(0)) @ y + 0.1 * y0
    torch.testing.assert_close(prop.run(3), y)
