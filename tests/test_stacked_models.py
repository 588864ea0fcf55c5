"""Stacked "Pitfalls" models (R initialisations at once): every model against a dense single-initialisation
reference written here from the released code's equations (shchur/gnn-benchmark ``gnnbench/models/``), GCN against
PyG's GCNConv, gradients, initialisation per seed, L2 terms, parameter counts on CORA's dimensions (Shchur et al.,
Table 4), dropout statistics, the max-pool padding bug against the original's padded gather (numpy), logits at node
subsets, and dropping initialisations the way the trainer does."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from gnnbench.errors import ConfigError
from gnnbench.models.sparse import CSRPattern
from gnnbench.models.stacked import (
    DroppedInput,
    NodeGraph,
    build_stacked_model,
    count_stacked_parameters,
    dropout,
)

SEEDS = [11, 22, 33]

CONFIGS = {
    "GCN": {"model": "GCN", "hidden_size": 6, "dropout_prob": 0.5, "weight_decay": 1e-3},
    "GCN-loops": {"model": "GCN", "hidden_size": 6, "dropout_prob": 0.5, "weight_decay": 1e-3, "gcn_self_loops": True},
    "GAT": {"model": "GAT", "hidden_size": 3, "num_heads": [4, 1], "input_dropout_prob": 0.6,
            "coefficient_dropout_prob": 0.3, "weight_decay": 1e-2},
    "GAT-2heads": {"model": "GAT", "hidden_size": 3, "num_heads": [2, 2], "input_dropout_prob": 0.6,
                   "coefficient_dropout_prob": 0.3, "weight_decay": 1e-2},
    "MoNet": {"model": "MoNet", "hidden_size": 5, "num_kernels": 2, "r": 2, "dropout_prob": 0.7, "weight_decay": 0.05},
    "MoNet-3": {"model": "MoNet", "hidden_size": 4, "num_kernels": 3, "r": 3, "dropout_prob": 0.7,
                "weight_decay": 0.05},
    "GS-mean": {"model": "GraphSAGE", "aggregator": "mean", "hidden_size": 5, "dropout_prob": 0.4,
                "weight_decay": 0.1},
    "GS-maxpool": {"model": "GraphSAGE", "aggregator": "maxpool", "hidden_size": 5, "agg_transform_size": 4,
                   "dropout_prob": 0.3, "weight_decay": 5e-3},
    "GS-maxpool-correct": {"model": "GraphSAGE", "aggregator": "maxpool", "hidden_size": 5, "agg_transform_size": 4,
                           "dropout_prob": 0.3, "weight_decay": 5e-3, "maxpool_pads_with_node0": False},
    "GS-meanpool": {"model": "GraphSAGE", "aggregator": "meanpool", "hidden_size": 5, "agg_transform_size": 3,
                    "dropout_prob": 0.2, "weight_decay": 1e-2},
    "MLP": {"model": "MLP", "hidden_size": 6, "dropout_prob": 0.8, "weight_decay": 1e-2},
    "LogReg": {"model": "LogReg", "weight_decay": 5e-4},
}


# ---------------------------------------------------------------------------------------------------------
# Test graphs


def random_graph(n: int = 24, features: int = 9, classes: int = 3, seed: int = 0, self_loop: bool = False,
                 binary: bool = True) -> NodeGraph:
    """A random undirected graph (both directions stored, no duplicates) with varied degrees, sparse features
    (one all-zero row), optionally one stored self loop (unstandardised data)."""
    rng = np.random.default_rng(seed)
    pairs = set()
    for i in range(1, n):  # a random tree keeps it connected, extra edges vary the degrees
        pairs.add((int(rng.integers(0, i)), i))
    for _ in range(n):
        a, b = rng.integers(0, n, 2)
        if a != b:
            pairs.add((int(min(a, b)), int(max(a, b))))
    src = [a for a, b in pairs] + [b for a, b in pairs]
    dst = [b for a, b in pairs] + [a for a, b in pairs]
    if self_loop:
        src.append(3)
        dst.append(3)
    x = (rng.random((n, features)) < 0.35).astype(np.float32)
    x[5] = 0
    if not binary:
        x *= rng.uniform(0.2, 2.0, x.shape).astype(np.float32)
    features_csr = torch.tensor(x).to_sparse_csr()
    return NodeGraph(n, torch.tensor([src, dst], dtype=torch.int64), features_csr, classes)


def dense_adjacency(graph: NodeGraph) -> torch.Tensor:
    """A[target, source] = 1 for every stored edge source → target."""
    a = torch.zeros(graph.num_nodes, graph.num_nodes)
    a[graph.edge_index[1], graph.edge_index[0]] = 1.0
    return a


def with_diagonal(a: torch.Tensor) -> torch.Tensor:
    a = a.clone()
    a.fill_diagonal_(1.0)
    return a


# ---------------------------------------------------------------------------------------------------------
# Dense single-initialisation references (the released code's layers), reading the model's parameters at index r


def gcn_reference(model, graph: NodeGraph, r: int, self_loops: bool) -> torch.Tensor:
    a = dense_adjacency(graph)
    if self_loops:
        a = with_diagonal(a)
    scale = a.sum(1).clamp(min=1).rsqrt()
    a_hat = scale[:, None] * a * scale[None, :]
    x = graph.features.to_dense()
    h = torch.relu(a_hat @ (x @ model.weight1[r]) + model.bias1[r])
    return a_hat @ (h @ model.weight2[r]) + model.bias2[r]


def gat_reference(model, graph: NodeGraph, r: int) -> torch.Tensor:
    a = with_diagonal(dense_adjacency(graph))

    def head(h, w, a_i, a_j, b_i, b_j, c):
        z = h @ w
        e = F.leaky_relu((z @ a_i + b_i)[:, None] + (z @ a_j + b_j)[None, :], 0.2)  # row i = target
        alpha = torch.softmax(e.masked_fill(a == 0, float("-inf")), dim=1)
        return alpha @ z + c

    def layer(h, n):
        return [head(h, getattr(model, f"weight{n}")[r, k], getattr(model, f"att_target{n}")[r, k],
                     getattr(model, f"att_source{n}")[r, k], getattr(model, f"att_bias_target{n}")[r, k],
                     getattr(model, f"att_bias_source{n}")[r, k], getattr(model, f"bias{n}")[r, k])
                for k in range(getattr(model, f"weight{n}").shape[1])]

    h = torch.cat([F.elu(out) for out in layer(graph.features.to_dense(), 1)], dim=1)
    return torch.stack(layer(h, 2)).mean(0)


def monet_reference(model, graph: NodeGraph, r: int) -> torch.Tensor:
    a = with_diagonal(dense_adjacency(graph))
    degree = a.sum(1)
    rows, cols = torch.nonzero(a, as_tuple=True)
    u = torch.stack([degree[rows].rsqrt(), degree[cols].rsqrt()], dim=1)  # (1/√deg_i, 1/√deg_j), i the target
    u = torch.tanh(u @ model.coordinate_weight[r] + model.coordinate_bias[r])
    kernels = []
    for k in range(model.mu.shape[1]):
        w = torch.exp(-0.5 * (u - model.mu[r, k]).square() / (1e-14 + model.sigma[r, k].square())).prod(1)
        m = torch.zeros_like(a).index_put((rows, cols), w)
        kernels.append(m / (1e-14 + m.sum(1, keepdim=True)))
    x = graph.features.to_dense()
    h = torch.relu(sum(kernels[k] @ (x @ model.weight1[r, :, k]) for k in range(len(kernels))))
    return sum(kernels[k] @ (h @ model.weight2[r, :, k]) for k in range(len(kernels)))


def _normalise(o: torch.Tensor) -> torch.Tensor:
    return o / o.norm(dim=1, keepdim=True).clamp(min=1.0)


def graphsage_reference(model, graph: NodeGraph, r: int, aggregator: str) -> torch.Tensor:
    """Mean aggregators and the *correct* max over N⁺(i) (the padded original is tested separately)."""
    a = with_diagonal(dense_adjacency(graph))
    mean = a / a.sum(1, keepdim=True)

    def layer(h, n):
        if aggregator == "mean":
            agg = mean @ (h @ getattr(model, f"agg_weight{n}")[r])
        else:
            pooled = torch.relu(h @ getattr(model, f"pool_weight{n}")[r])
            if aggregator == "meanpool":
                pooled = mean @ pooled
            else:
                pooled = torch.stack([pooled[a[i] > 0].max(0).values for i in range(graph.num_nodes)])
            agg = pooled @ getattr(model, f"agg_weight{n}")[r]
        return _normalise(agg + h @ getattr(model, f"self_weight{n}")[r] + getattr(model, f"bias{n}")[r])

    return layer(torch.relu(layer(graph.features.to_dense(), 1)), 2)


def mlp_reference(model, graph: NodeGraph, r: int) -> torch.Tensor:
    h = torch.relu(graph.features.to_dense() @ model.weight1[r] + model.bias1[r])
    return h @ model.weight2[r] + model.bias2[r]


def logreg_reference(model, graph: NodeGraph, r: int) -> torch.Tensor:
    return graph.features.to_dense() @ model.weight[r] + model.bias[r]


REFERENCES = {
    "GCN": lambda m, g, r: gcn_reference(m, g, r, False),
    "GCN-loops": lambda m, g, r: gcn_reference(m, g, r, True),
    "GAT": gat_reference,
    "GAT-2heads": gat_reference,
    "MoNet": monet_reference,
    "MoNet-3": monet_reference,
    "GS-mean": lambda m, g, r: graphsage_reference(m, g, r, "mean"),
    "GS-maxpool-correct": lambda m, g, r: graphsage_reference(m, g, r, "maxpool"),
    "GS-meanpool": lambda m, g, r: graphsage_reference(m, g, r, "meanpool"),
    "MLP": mlp_reference,
    "LogReg": logreg_reference,
}


def perturb_(model, seed: int = 5) -> None:
    """Nonzero biases and moved kernels, so that every parameter matters in the comparisons."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=g))


# ---------------------------------------------------------------------------------------------------------
# Equality with the references


@pytest.mark.parametrize("name", list(REFERENCES))
@pytest.mark.parametrize("graph_kind", ["standard", "self_loop_tfidf"])
def test_logits_and_gradients_equal_dense_reference(name, graph_kind):
    graph = random_graph() if graph_kind == "standard" else random_graph(seed=1, self_loop=True, binary=False)
    model = build_stacked_model(CONFIGS[name], graph, SEEDS)
    perturb_(model)
    logits = model(None, training=False)
    assert logits.shape == (len(SEEDS), graph.num_nodes, graph.num_classes)
    weights = torch.randn(logits.shape, generator=torch.Generator().manual_seed(1))
    params = list(model.parameters())
    grads = torch.autograd.grad((logits * weights).sum(), params)
    expected = torch.stack([REFERENCES[name](model, graph, r) for r in range(len(SEEDS))])
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)
    expected_grads = torch.autograd.grad((expected * weights).sum(), params, allow_unused=True)
    for p, got, want in zip(params, grads, expected_grads, strict=True):
        assert want is not None, f"the reference does not read a parameter of shape {tuple(p.shape)}"
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_each_initialisation_equals_the_model_built_alone(name):
    graph = random_graph(seed=2)
    stacked = build_stacked_model(CONFIGS[name], graph, SEEDS)
    logits = stacked(None, training=False)
    for r, seed in enumerate(SEEDS):
        alone = build_stacked_model(CONFIGS[name], graph, [seed])
        for (key, p), q in zip(stacked.named_parameters(), alone.parameters(), strict=True):
            assert torch.equal(p[r], q[0]), key
        torch.testing.assert_close(alone(None, training=False)[0], logits[r], rtol=0, atol=1e-6)
    other = build_stacked_model(CONFIGS[name], graph, [SEEDS[0] + 1])
    assert not torch.equal(next(other.parameters())[0], next(stacked.parameters())[0])


@pytest.mark.parametrize("name", list(CONFIGS))
def test_logits_at_nodes_are_the_full_rows(name):
    graph = random_graph(seed=3)
    model = build_stacked_model(CONFIGS[name], graph, SEEDS)
    perturb_(model)
    full = model(None, training=False)
    for nodes in (torch.tensor([7, 0, 19, 7]), torch.tensor([4]), torch.arange(graph.num_nodes).flip(0)):
        torch.testing.assert_close(model(nodes, training=False), full[:, nodes], rtol=0, atol=2e-6)


def test_gcn_matches_pyg_gcnconv():
    from torch_geometric.nn import GCNConv

    for self_loops in (False, True):
        for graph in (random_graph(seed=4), random_graph(seed=5, self_loop=True)):
            config = dict(CONFIGS["GCN"], gcn_self_loops=self_loops)
            model = build_stacked_model(config, graph, SEEDS)
            perturb_(model)
            logits = model(None, training=False)
            x = graph.features.to_dense()
            for r in range(len(SEEDS)):
                convs = []
                for n in (1, 2):
                    weight = getattr(model, f"weight{n}")[r].detach()
                    conv = GCNConv(weight.shape[0], weight.shape[1], add_self_loops=self_loops, normalize=True)
                    conv.lin.weight.data = weight.t().clone()
                    conv.bias.data = getattr(model, f"bias{n}")[r].detach().clone()
                    convs.append(conv)
                h = torch.relu(convs[0](x, graph.edge_index))
                torch.testing.assert_close(logits[r], convs[1](h, graph.edge_index), rtol=1e-5, atol=1e-5)


def test_dense_features_give_the_same_model():
    sparse = random_graph(seed=6)
    dense = NodeGraph(sparse.num_nodes, sparse.edge_index, sparse.features.to_dense(), sparse.num_classes)
    for name in ("GCN", "GAT", "MoNet", "GS-maxpool", "MLP", "LogReg"):
        a = build_stacked_model(CONFIGS[name], sparse, SEEDS)
        b = build_stacked_model(CONFIGS[name], dense, SEEDS)
        torch.testing.assert_close(a(None, training=False), b(None, training=False), rtol=1e-5, atol=1e-6)
        torch.manual_seed(0)
        out = b(torch.tensor([1, 2, 3]), training=True)  # dense dropout path runs and keeps the shape
        assert out.shape == (len(SEEDS), 3, sparse.num_classes)


# ---------------------------------------------------------------------------------------------------------
# Initialisation, L2, parameter counts


def test_initialisation_glorot_zero_biases_and_monet_kernels():
    graph = random_graph(features=400, seed=7)
    gcn = build_stacked_model(dict(CONFIGS["GCN"], hidden_size=64), graph, [1, 2])
    bound = math.sqrt(6 / (400 + 64))
    w = gcn.weight1.detach()
    assert w.abs().max() <= bound and w.abs().max() > 0.95 * bound
    assert abs(w.std().item() - bound / math.sqrt(3)) < 0.02 * bound  # uniform on [-a, a]: std a/√3
    assert torch.count_nonzero(gcn.bias1) == 0 and torch.count_nonzero(gcn.bias2) == 0
    monet = build_stacked_model(CONFIGS["MoNet-3"], graph, [1, 2])
    means = torch.tensor([-1 + 1 / 6, -1 + 1 / 6 + 2 / 3, -1 + 1 / 6 + 4 / 3])  # −1 + 1/(2K) + 2k/K
    torch.testing.assert_close(monet.mu.detach(), means.view(1, 3, 1).expand(2, 3, 3))
    assert torch.equal(monet.sigma.detach(), torch.ones(2, 3, 3))
    assert torch.count_nonzero(monet.coordinate_bias) == 0
    gat = build_stacked_model(CONFIGS["GAT"], graph, [1])
    assert gat.att_target1.abs().max() <= math.sqrt(6 / (3 + 1))  # a as an (F', 1) matrix
    assert torch.count_nonzero(gat.att_bias_target1) == 0 and torch.count_nonzero(gat.bias1) == 0


L2_TENSORS = {  # the released code's L2 terms: which weights each model regularises
    "GCN": ["weight1"],
    "GAT": ["weight1", "att_target1", "att_source1", "weight2", "att_target2", "att_source2"],
    "MoNet": ["weight1"],
    "GS-mean": ["agg_weight1", "self_weight1"],
    "GS-maxpool": ["agg_weight1", "self_weight1"],
    "GS-meanpool": ["agg_weight1", "self_weight1"],
    "MLP": ["weight1", "weight2"],
    "LogReg": ["weight"],
}


@pytest.mark.parametrize("name", list(L2_TENSORS))
def test_l2_penalty_is_half_lambda_sum_of_squares_of_exactly_the_listed_tensors(name):
    graph = random_graph(seed=8)
    model = build_stacked_model(CONFIGS[name], graph, SEEDS)
    perturb_(model)
    lam = CONFIGS[name]["weight_decay"]
    params = dict(model.named_parameters())
    expected = [sum(float((params[key][r].detach().double() ** 2).sum()) for key in L2_TENSORS[name]) * lam / 2
                for r in range(len(SEEDS))]
    penalty = model.l2_penalty()
    assert penalty.shape == (len(SEEDS),)
    np.testing.assert_allclose(penalty.detach().numpy(), expected, rtol=1e-5)
    grads = torch.autograd.grad(penalty.sum(), list(params.values()), allow_unused=True)
    for (key, p), g in zip(params.items(), grads, strict=True):
        if key in L2_TENSORS[name]:
            torch.testing.assert_close(g, lam * p.detach())
        else:
            assert g is None or torch.count_nonzero(g) == 0, key


# paper Table 4 (rounded to thousands) and the exact counts on CORA (1,433 features, 7 classes)
CORA_COUNTS = {
    "GCN": (dict(CONFIGS["GCN"], hidden_size=64), 1433 * 64 + 64 + 64 * 7 + 7, 92),  # 92,231
    # 8 heads × (W 1433·8 + a_i 8 + a_j 8 + b_i + b_j + bias 8) + 1 head × (W 64·7 + 7 + 7 + 1 + 1 + 7)
    "GAT": (dict(CONFIGS["GAT"], hidden_size=8, num_heads=[8, 1]), 8 * (1433 * 8 + 8 + 8 + 1 + 1 + 8)
            + (64 * 7 + 7 + 7 + 1 + 1 + 7), 92),  # 92,391
    # G: 2 kernels × (1433·32 + 32·7), W_c 2·2 + b_c 2, μ and σ 2 kernels × 2 each
    "MoNet": (dict(CONFIGS["MoNet"], hidden_size=32), 2 * (1433 * 32 + 32 * 7) + 4 + 2 + 4 + 4, 92),  # 92,174
    "GS-mean": (dict(CONFIGS["GS-mean"], hidden_size=32), 2 * 1433 * 32 + 32 + 2 * 32 * 7 + 7, 92),  # 92,199
    "GS-maxpool": (dict(CONFIGS["GS-maxpool"], hidden_size=32, agg_transform_size=32),
                   1433 * 32 + 32 * 32 + 1433 * 32 + 32 + 32 * 32 + 32 * 7 + 32 * 7 + 7, 94),  # 94,247
    "GS-meanpool": (dict(CONFIGS["GS-meanpool"], hidden_size=32, agg_transform_size=8),
                    1433 * 8 + 8 * 32 + 1433 * 32 + 32 + 32 * 8 + 8 * 7 + 32 * 7 + 7, 58),  # 58,151
    "MLP": (dict(CONFIGS["MLP"], hidden_size=64), 1433 * 64 + 64 + 64 * 7 + 7, 92),  # 92,231
    "LogReg": (CONFIGS["LogReg"], 1433 * 7 + 7, 10),  # 10,038
}


@pytest.mark.parametrize("name", list(CORA_COUNTS))
def test_parameter_counts_on_cora_dimensions_match_table_4(name):
    config, exact, table_thousands = CORA_COUNTS[name]
    graph = random_graph(n=12, features=1433, classes=7, seed=9)
    model = build_stacked_model(config, graph, SEEDS)
    assert count_stacked_parameters(model) == exact
    assert round(exact / 1000) == table_thousands
    assert all(p.shape[0] == len(SEEDS) for p in model.parameters())


def test_exact_cora_counts_as_stated():
    assert [CORA_COUNTS[k][1] for k in CORA_COUNTS] == [92231, 92391, 92174, 92199, 94247, 58151, 92231, 10038]


# ---------------------------------------------------------------------------------------------------------
# Dropout


def _dropped_dense(rows: CSRPattern, blocks: int, p: float) -> tuple[DroppedInput, torch.Tensor]:
    """One draw and the dropped-out copies it multiplies with, read off through identity weights."""
    drawn = DroppedInput(rows, blocks, p)
    eye = torch.eye(rows.num_cols).expand(blocks, -1, -1).contiguous()
    return drawn, drawn.matmul(eye)


@pytest.mark.parametrize("p", [0.8, 0.5])  # kept entries only / all entries weighted by the mask
def test_sparse_input_dropout_statistics_and_gradient(p):
    graph = random_graph(n=60, features=30, seed=10)
    x = graph.features.to_dense()
    rows = CSRPattern.from_sparse(graph.features)
    blocks = 4
    assert (DroppedInput(rows, blocks, p).weights is None) == (1 - p <= DroppedInput.KEPT_ONLY_BELOW)
    torch.manual_seed(0)
    total, kept, draws = torch.zeros(blocks, *x.shape), 0, 300
    for _ in range(draws):
        drawn, xd = _dropped_dense(rows, blocks, p)
        assert torch.all((xd == 0) | torch.isclose(xd, x / (1 - p)))  # kept entries scaled by 1/(1 − p)
        assert torch.all(xd[:, x == 0] == 0)  # only stored entries
        assert not torch.equal(xd[0], xd[1])  # independent per block
        kept += int((xd != 0).sum())
        total += xd
    stored = int((x != 0).sum()) * blocks * draws
    assert abs(kept / stored - (1 - p)) < 4 * math.sqrt(p * (1 - p) / stored)
    sigma = math.sqrt(p / (1 - p) / draws)  # std of the mean of x·Bernoulli(1 − p)/(1 − p) over the draws, x = 1
    torch.testing.assert_close(total / draws, x.expand(blocks, -1, -1), atol=5 * sigma, rtol=0)  # expectation
    assert abs(float((total / draws)[:, x != 0].mean()) - 1.0) < 0.02
    # the backward's column-major grouping of this draw: ∂/∂W_b ⟨X_b W_b, G_b⟩ = X_bᵀ G_b
    drawn, xd = _dropped_dense(rows, blocks, p)
    weight = torch.randn(blocks, x.shape[1], 5, requires_grad=True)
    upstream = torch.randn(blocks, x.shape[0], 5)
    out = drawn.matmul(weight)
    torch.testing.assert_close(out, torch.bmm(xd, weight.detach()), rtol=1e-5, atol=1e-5)
    (grad,) = torch.autograd.grad((out * upstream).sum(), weight)
    torch.testing.assert_close(grad, torch.bmm(xd.transpose(1, 2), upstream), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sparse", [True, False])
def test_input_dropout_with_a_rate_per_member(sparse):
    # tuning trials stacked (docs/tuning.md#cost): 3 members with rates 0, 0.5, 0.8, two heads each (6 blocks); a
    # member of rate 0 keeps its input exactly, the others' kept entries are scaled by their own 1/(1 − p) and kept
    # at their own rates; the backward (the mask's per-entry scales in column-major order) matches the dense product
    graph = random_graph(n=80, features=40, seed=12)
    x = graph.features.to_dense()
    rows = CSRPattern.from_sparse(graph.features) if sparse else x
    rates, blocks = torch.tensor([0.0, 0.5, 0.8], dtype=torch.float64), 6  # as the model holds them
    torch.manual_seed(2)
    drawn = DroppedInput(rows, blocks, rates)
    xd = drawn.matmul(torch.eye(x.shape[1]).expand(blocks, -1, -1).contiguous())
    assert torch.equal(xd[0], x) and torch.equal(xd[1], x)  # member 0's two heads
    kept: dict[int, list[float]] = {1: [], 2: []}
    for b in range(2, blocks):
        p = float(rates[b // 2])
        assert torch.all((xd[b] == 0) | torch.isclose(xd[b], x / (1 - p))) and torch.all(xd[b][x == 0] == 0)
        kept[b // 2].append(float((xd[b] != 0).sum()) / float((x != 0).sum()))
    assert abs(np.mean(kept[1]) - 0.5) < 0.1 and abs(np.mean(kept[2]) - 0.2) < 0.1
    weight = torch.randn(blocks, x.shape[1], 5, requires_grad=True)
    upstream = torch.randn(blocks, x.shape[0], 5)
    (grad,) = torch.autograd.grad((drawn.matmul(weight) * upstream).sum(), weight)
    torch.testing.assert_close(grad, torch.bmm(xd.transpose(1, 2), upstream), rtol=1e-5, atol=1e-5)
    # the hidden layers' dropout: member 0 untouched, the others at their own scale
    h = torch.ones(3, 50, 16)
    out = dropout(h, rates, training=True)  # float64 rates: 1/(1 − p) rounded once, as a single rate's
    assert torch.equal(out[0], h[0]) and set(out[1].unique().tolist()) <= {0.0, 2.0}
    assert set(out[2].unique().tolist()) <= {0.0, 5.0} and torch.equal(dropout(h, rates, training=False), h)


@pytest.mark.parametrize("p", [0.9, 0.4])
def test_tfidf_input_dropout_keeps_values_and_gradient(p):
    graph = random_graph(n=30, features=12, seed=11, binary=False)
    x = graph.features.to_dense()
    rows = CSRPattern.from_sparse(graph.features)
    torch.manual_seed(1)
    drawn, xd = _dropped_dense(rows, 3, p)
    assert torch.all((xd == 0) | torch.isclose(xd, x / (1 - p)))
    assert bool((xd != 0).any())
    weight = torch.randn(3, 12, 4, requires_grad=True)
    upstream = torch.randn(3, 30, 4)
    (grad,) = torch.autograd.grad((drawn.matmul(weight) * upstream).sum(), weight)
    torch.testing.assert_close(grad, torch.bmm(xd.transpose(1, 2), upstream), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("p", [0.0, 0.5, 0.8])
@pytest.mark.parametrize("sparse", [True, False])
def test_a_product_at_a_subset_of_rows_uses_the_same_draw(p, sparse):
    """GraphSAGE's self term reads the same dropped-out input as its pooled term, at fewer rows."""
    from gnnbench.models.stacked import Hops, InputFeatures, adjacency_pattern

    graph = random_graph(n=40, features=15, seed=16)
    if not sparse:
        graph = NodeGraph(graph.num_nodes, graph.edge_index, graph.features.to_dense(), graph.num_classes)
    features = InputFeatures(graph.features)
    hops = Hops(adjacency_pattern(graph, self_loops=True), torch.tensor([3, 17, 30]), depth=2)
    subset, positions = features.subset(hops, 1), hops.positions(1)
    assert positions.numel() < hops.size(2)
    torch.manual_seed(5)
    drawn = DroppedInput(features.rows(hops, 2), 4, p)
    weight = torch.randn(4, 15, 6, requires_grad=True)
    full = drawn.matmul(weight)
    part = drawn.matmul(weight, subset)
    torch.testing.assert_close(part, full[:, positions], rtol=1e-5, atol=1e-6)
    upstream = torch.randn(part.shape)
    (got,) = torch.autograd.grad((part * upstream).sum(), weight)
    (want,) = torch.autograd.grad((full[:, positions] * upstream).sum(), weight)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["GCN", "GAT", "MoNet", "GS-maxpool", "GS-meanpool", "MLP"])
def test_training_dropout_differs_per_initialisation_and_preserves_the_mean(name):
    graph = random_graph(seed=12)
    model = build_stacked_model(CONFIGS[name], graph, [5, 5, 5])  # identical initialisations
    eval_logits = model(None, training=False)
    assert torch.equal(eval_logits[0], eval_logits[1])
    torch.manual_seed(3)
    first = model(None, training=True)
    assert not torch.allclose(first[0], first[1])  # each initialisation draws its own masks
    assert not torch.allclose(first, model(None, training=True))  # and new ones every call
    torch.manual_seed(3)
    assert torch.equal(first, model(None, training=True))  # from the global RNG


def test_dropout_keeps_the_expectation_of_a_linear_model():
    """Nonnegative inputs and weights, zero first bias: the ReLU is the identity, so the MLP is linear in both
    dropped-out inputs and the mean over many initialisations' independent draws is the dropout-free output."""
    graph = random_graph(n=40, features=20, seed=13)
    draws = 4000
    model = build_stacked_model(dict(CONFIGS["MLP"], dropout_prob=0.6), graph, [1] * draws)
    with torch.no_grad():
        model.weight1.abs_()
        x = graph.features.to_dense()
        expected = (x @ model.weight1[0]) @ model.weight2[0]
        torch.manual_seed(4)
        logits = model(None, training=True)
    spread = logits.std(0) / math.sqrt(draws)
    assert bool((spread > 0).any())
    assert bool(((logits.mean(0) - expected).abs() <= 4.5 * spread + 1e-6).all())


# ---------------------------------------------------------------------------------------------------------
# The max-pool padding bug of the released code (shchur/gnn-benchmark gnnbench/models/graphsage.py; see
# docs/protocols/pitfalls.md#reproduced-as-released)


def _original_padded_maxpool(model, graph: NodeGraph, r: int) -> np.ndarray:
    """GS-maxpool as the released TensorFlow code computes it, in numpy: neighbour lists from the COO entries of
    A + I (setdiag(1)) written row by row into an N × max_degree matrix of zeros (index 0 pads short rows), then
    ``tf.gather`` + ``reduce_max``."""
    import scipy.sparse as sp

    n = graph.num_nodes
    src, dst = graph.edge_index.numpy()
    adj = sp.csr_matrix((np.ones(src.size, dtype=np.float32), (dst, src)), shape=(n, n)).tolil()
    adj.setdiag(1.0)
    adj = adj.tocsr()
    coo = adj.tocoo()
    degrees = np.asarray(adj.sum(axis=1)).ravel()
    neighbours = np.zeros((n, int(degrees.max())), dtype=np.int32)
    insert, previous = 0, 0
    for k, node in enumerate(coo.row):  # the original's loop
        if node != previous:
            insert = 0
        neighbours[node, insert] = coo.col[k]
        insert += 1
        previous = node
    param = {k: v[r].detach().numpy().astype(np.float64) for k, v in model.named_parameters()}

    def layer(h, n_):
        pooled = np.maximum(h @ param[f"pool_weight{n_}"], 0)
        agg = pooled[neighbours].max(axis=1) @ param[f"agg_weight{n_}"]
        out = agg + h @ param[f"self_weight{n_}"] + param[f"bias{n_}"]
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1.0)

    return layer(np.maximum(layer(graph.features.to_dense().numpy().astype(np.float64), 1), 0), 2)


def test_maxpool_reproduces_the_original_padding_with_node0():
    # a hand-made graph: a hub 1 (degree 4) and node 0 a leaf; nodes 4–6 are far from 0 and have small N⁺(i),
    # so the original's padding lets node 0's pooled row into their maxima
    edges = [(0, 2), (1, 2), (1, 3), (1, 4), (1, 5), (5, 6), (6, 4)]
    src = [a for a, b in edges] + [b for a, b in edges]
    dst = [b for a, b in edges] + [a for a, b in edges]
    x = torch.zeros(7, 4)
    x[0] = torch.tensor([9.0, 9.0, 9.0, 9.0])  # node 0's pooled row dominates wherever it is read
    x[1:, 0] = 1.0
    x[3, 1] = x[4, 2] = x[6, 3] = 1.0
    graph = NodeGraph(7, torch.tensor([src, dst]), x.to_sparse_csr(), 2)
    padded = build_stacked_model(CONFIGS["GS-maxpool"], graph, SEEDS)
    correct = build_stacked_model(CONFIGS["GS-maxpool-correct"], graph, SEEDS)
    with torch.no_grad():
        for model in (padded, correct):
            model.pool_weight1.abs_()  # positive pooled features: node 0 wins the maxima it takes part in
    for r in range(len(SEEDS)):
        original = _original_padded_maxpool(padded, graph, r)
        np.testing.assert_allclose(padded(None, training=False)[r].detach().numpy(), original, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(correct(None, training=False)[r].detach().numpy(),
                                   graphsage_reference(correct, graph, r, "maxpool").detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
    # |N⁺(i)|: 2, 5, 3, 2, 3, 3, 3 — every node but the hub 1 is padded with node 0. Nodes 0 and 2 read node 0
    # anyway (and so do their neighbourhoods' layer-1 outputs), so only 1, 3, 4, 5, 6 can change
    differs = (padded(None, training=False) - correct(None, training=False)).abs().amax(dim=(0, 2)) > 1e-6
    assert differs.tolist() == [False, True, False, True, True, True, True]


# ---------------------------------------------------------------------------------------------------------
# Trainer rules: dropping initialisations, errors


@pytest.mark.parametrize("name", list(CONFIGS))
def test_dropping_initialisations_by_index_select_keeps_the_rest(name):
    graph = random_graph(seed=14)
    model = build_stacked_model(CONFIGS[name], graph, [1, 2, 3, 4])
    perturb_(model)
    nodes = torch.tensor([0, 3, 8, 15])
    with torch.no_grad():  # no autograd graph may hold the parameters when their .data changes shape
        before = model(nodes, training=False)
    model(nodes, training=True).sum().backward()  # caches for R = 4 exist now
    keep = torch.tensor([3, 1])
    for p in model.parameters():
        p.data = p.data.index_select(0, keep)
        p.grad = None
    assert model.inits == 2
    torch.testing.assert_close(model(nodes, training=False), before[keep], rtol=0, atol=1e-6)
    out = model(nodes, training=True)
    out.sum().backward()
    assert out.shape == (2, 4, graph.num_classes)
    assert all(p.grad is None or p.grad.shape == p.shape for p in model.parameters())
    assert model.l2_penalty().shape == (2,)


def test_config_errors_are_one_line_config_errors():
    graph = random_graph(seed=15)
    cases = [
        ({"model": "GIN"}, "unknown model"),
        ({"model": "GCN", "dropout_prob": 0.5, "weight_decay": 0.1}, "hidden_size"),
        (dict(CONFIGS["GS-mean"], aggregator="lstm"), "aggregator"),
        (dict(CONFIGS["GCN"], dropout_prob=1.5), "dropout_prob"),
        (dict(CONFIGS["GAT"], num_heads=[8]), "num_heads"),
        (dict(CONFIGS["GCN"], gcn_self_loops="yes"), "gcn_self_loops"),
        (dict(CONFIGS["MoNet"], num_kernels=0), "num_kernels"),
    ]
    for config, word in cases:
        with pytest.raises(ConfigError) as info:
            build_stacked_model(config, graph, SEEDS)
        assert word in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ConfigError):
        build_stacked_model(CONFIGS["GCN"], graph, [])


# ---------------------------------------------------------------------------------------------------------
# Training mode: GAT with every dropout draw recorded, against the dense reference with the same draws


class _Recorder:
    """Wraps a mask-drawing function and keeps what it returns, in call order."""

    def __init__(self, draw) -> None:
        self.draw, self.calls = draw, []

    def __call__(self, *args, **kwargs):
        out = self.draw(*args, **kwargs)
        self.calls.append(out)
        return out


def gat_training_reference(model, graph: NodeGraph, r: int, draws: dict) -> torch.Tensor:
    """The released code's GAT with dropout for initialisation r, dense, given the draws: ``input`` (R·H1, nnz) bool
    over X's stored entries (CSR order), ``coef1``/``coef2`` (E, R·H) over the edges of A + I (CSR order), ``z1``/
    ``z2`` (R·H, N, F') and ``h`` (R·H2, N, H1·F') inverted-dropout masks."""
    a = with_diagonal(dense_adjacency(graph))
    edge_rows, edge_cols = torch.nonzero(a, as_tuple=True)  # row-major = the attention's CSR edge order
    x = graph.features.to_dense()
    stored = CSRPattern.from_sparse(graph.features)
    heads1, heads2 = model.heads

    def head(h, n, k, coef, z_mask):
        z = h @ getattr(model, f"weight{n}")[r, k]
        target = z @ getattr(model, f"att_target{n}")[r, k] + getattr(model, f"att_bias_target{n}")[r, k]
        source = z @ getattr(model, f"att_source{n}")[r, k] + getattr(model, f"att_bias_source{n}")[r, k]
        e = F.leaky_relu(target[:, None] + source[None, :], 0.2)
        alpha = torch.softmax(e.masked_fill(a == 0, float("-inf")), dim=1)
        dropped = alpha * torch.zeros_like(a).index_put((edge_rows, edge_cols), coef)  # not renormalised
        return dropped @ (z * z_mask) + getattr(model, f"bias{n}")[r, k]

    layer1 = []
    for k in range(heads1):
        b = r * heads1 + k
        kept = draws["input"][b].float() / (1 - model.input_dropout)
        xd = torch.zeros_like(x).index_put((stored.row, stored.col), x[stored.row, stored.col] * kept)
        layer1.append(F.elu(head(xd, 1, k, draws["coef1"][:, b], draws["z1"][b])))
    h = torch.cat(layer1, dim=1)
    return torch.stack([head(h * draws["h"][r * heads2 + k], 2, k, draws["coef2"][:, r * heads2 + k],
                             draws["z2"][r * heads2 + k]) for k in range(heads2)]).mean(0)


@pytest.mark.parametrize("name", ["GAT", "GAT-2heads"])
def test_gat_training_mode_equals_dense_reference_with_the_same_draws(name, monkeypatch):
    import gnnbench.models.gat as gat_module
    import gnnbench.models.stacked as stacked_module

    graph = random_graph(seed=17)
    model = build_stacked_model(CONFIGS[name], graph, SEEDS)
    perturb_(model)
    inputs = _Recorder(stacked_module.bernoulli_mask)
    attention_masks = _Recorder(gat_module.dropout_mask)
    hidden_masks = _Recorder(stacked_module.dropout_mask)
    monkeypatch.setattr(stacked_module, "bernoulli_mask", inputs)
    monkeypatch.setattr(gat_module, "dropout_mask", attention_masks)
    monkeypatch.setattr(stacked_module, "dropout_mask", hidden_masks)
    torch.manual_seed(7)
    logits = model(None, training=True)
    assert len(inputs.calls) == 1 and len(attention_masks.calls) == 4 and len(hidden_masks.calls) == 1
    blocks = len(SEEDS) * model.heads[0]
    coef1, z1, coef2, z2 = attention_masks.calls
    draws = {"input": inputs.calls[0].view(blocks, -1), "coef1": coef1, "z1": z1, "h": hidden_masks.calls[0],
             "coef2": coef2, "z2": z2}
    assert 0.3 < float(draws["input"].float().mean()) < 0.5  # keep rate 0.4: the draw was recorded, not replaced
    expected = torch.stack([gat_training_reference(model, graph, r, draws) for r in range(len(SEEDS))])
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)
    weights = torch.randn(logits.shape, generator=torch.Generator().manual_seed(2))
    params = list(model.parameters())
    got = torch.autograd.grad((logits * weights).sum(), params)
    want = torch.autograd.grad((expected * weights).sum(), params)
    for p, g, w in zip(params, got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5, msg=f"gradient of a {tuple(p.shape)} parameter")


_HEAP_PROBE = """
import ctypes, importlib.util
if {apply}:  # the module alone (the package would import torch, whose allocations would blur the measurement)
    spec = importlib.util.spec_from_file_location("allocator", {path!r})
    allocator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(allocator)
    assert allocator.keep_freed_memory() and allocator.keep_freed_memory()  # idempotent
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]

def heap():
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith("[heap]"):
            start, end = (int(a, 16) for a in line.split()[0].split("-"))
            return end - start
    return 0

before = heap()
block = libc.malloc(64 << 20)
ctypes.memset(block, 1, 64 << 20)
libc.free(block)
print(heap() - before)
"""


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="glibc's mallopt")
def test_keep_freed_memory_serves_large_blocks_from_the_heap_and_keeps_them():
    """After :func:`keep_freed_memory` a freed 64 MB block stays in the process heap (no fresh mapping next time);
    with glibc's defaults it is a separate mapping, returned to the system on free."""
    import pathlib
    import subprocess
    import sys

    path = str(pathlib.Path(__file__).resolve().parents[1] / "gnnbench" / "allocator.py")
    grown = {apply: int(subprocess.run([sys.executable, "-c", _HEAP_PROBE.format(path=path, apply=apply)],
                                       capture_output=True, text=True, check=True).stdout)
             for apply in (True, False)}
    assert grown[True] > 48 << 20  # the block came from the heap (less what the heap had free) and stayed there
    assert grown[False] < 8 << 20
