"""The platonov2023 zoo (Platonov et al. 2023's released baselines, gnnbench/models/heterophily): parameter counts of
the released code, every module against its equation computed densely, attention normalisation, the order of
normalisation and residual, the inputs (SGC, adjacency, identity), the registry's checks, and R members stacked
under vmap equal to their own models."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import HETEROPHILY_CODE, published_rows

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.errors import ConfigError
from gnnbench.models.build import build_model, check_buildable, count_parameters
from gnnbench.models.heterophily.gat import GATModule, GATSepModule
from gnnbench.models.heterophily.gcn import GCNModule
from gnnbench.models.heterophily.inputs import InputLinear, sgc_features
from gnnbench.models.heterophily.network import FeedForward, Residual
from gnnbench.models.heterophily.sage import SAGEModule
from gnnbench.models.heterophily.transformer import TransformerAttentionModule, TransformerAttentionSepModule
from gnnbench.models.registry import families
from gnnbench.papers import PLATONOV2023
from gnnbench.training.functional_stack import FunctionalStackStep

FAMILIES = ["ResNet", "GCN", "SAGE", "GAT", "GAT-sep", "GT", "GT-sep"]
# node features, nodes, classes: tolokers and chameleon as their .npz files of the released repository hold them,
# roman-empire as its README's table gives it
DATASETS = {"tolokers": (10, 11758, 2), "chameleon": (2325, 2277, 5), "roman-empire": (300, 22662, 18)}
REAL = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "real" / "heterophily"
ROWS = published_rows(source=HETEROPHILY_CODE)
TYPES = {"num_layers": int, "hidden_dim": int, "num_heads": int, "hidden_dim_multiplier": float, "dropout": float}


def node_meta(features: int = 3, classes: int = 5, nodes: int | None = None, loss: str = "cross_entropy",
              graphs: int = 1) -> DatasetMeta:
    return DatasetMeta(name="toy", task="node_classification", loss=loss, metric="accuracy", num_outputs=classes,
                       num_graphs=graphs, node_features=FeatureSpec("continuous", features), edge_features=None,
                       pe_usage="add", split_sizes=None, statistics={"all": {"nodes": nodes}} if nodes else {})


def row_config(overrides: dict) -> dict:
    config = {"variant": PLATONOV2023}
    for key, value in overrides.items():
        config[key] = value.split(",") if key == "input_features" else TYPES.get(key, str)(value)
    return config


def toy_graph() -> tuple[torch.Tensor, torch.Tensor]:
    """Five nodes: an undirected path 0-1-2-3 (both directions) plus 4 → 0, so node 4 has no in-edges."""
    pairs = [(0, 1), (1, 2), (2, 3)]
    edges = [p for a, b in pairs for p in ((a, b), (b, a))] + [(4, 0)]
    x = torch.tensor([[1.0, -2.0, 0.5, 3.0], [0.0, 1.0, -1.0, 2.0], [2.0, 0.0, 1.0, -1.0], [-1.0, 1.5, 0.0, 0.5],
                      [0.5, 0.5, 2.0, 0.0]])
    return x, torch.tensor(edges).t()


def dense(edge_index: torch.Tensor, n: int) -> torch.Tensor:
    """A[v, u] = number of edges u → v (rows: targets)."""
    a = torch.zeros(n, n)
    a.index_put_((edge_index[1], edge_index[0]), torch.ones(edge_index.shape[1]), accumulate=True)
    return a


def feed_forward(ff: FeedForward, x: torch.Tensor) -> torch.Tensor:
    """The feed-forward block's equation from its weights (no dropout)."""
    hidden = F.gelu(x @ ff.linear_1.weight.t() + ff.linear_1.bias)
    return hidden @ ff.linear_2.weight.t() + ff.linear_2.bias


def with_loops(edge_index: torch.Tensor, n: int) -> torch.Tensor:
    return torch.cat([edge_index, torch.arange(n).expand(2, n)], dim=1)


# ------------------------------------------------------------------------------------------ parameter counts


def test_the_released_counts_cover_every_family_depth_and_input():
    assert len(ROWS) == 139  # 3 datasets × (7 families + ResNet+SGC, ResNet+adj) × 5 depths + 4 other settings
    assert {o["model"] for _, o, _ in ROWS} == set(FAMILIES) == set(families(PLATONOV2023))


@pytest.mark.parametrize(("name", "overrides", "total"), ROWS, ids=[name.split(" ")[0] for name, _, _ in ROWS])
def test_parameter_count_equals_the_released_code(name, overrides, total):
    features, nodes, classes = DATASETS[name.split("/")[0]]
    model = build_model(row_config(overrides), node_meta(features, classes, nodes))
    assert count_parameters(model) == total


@pytest.mark.skipif(not (REAL / "chameleon.npz").exists(), reason="real heterophily files absent (../shared/data)")
def test_the_counts_sizes_are_those_of_the_released_files():
    for name in ("tolokers", "chameleon"):
        with np.load(REAL / f"{name}.npz") as data:
            nodes, features = data["node_features"].shape
            classes = len(np.unique(data["node_labels"]))
        assert DATASETS[name] == (features, nodes, classes)


# ------------------------------------------------------------------------------------------ modules vs equations


def test_gcn_module_is_the_symmetric_propagation_with_self_loops_then_feed_forward():
    x, edge_index = toy_graph()
    graph = with_loops(edge_index, 5)
    torch.manual_seed(0)
    module = GCNModule(4, hidden_dim_multiplier=2.0).eval()
    a = dense(graph, 5)
    out_degree = a.sum(0)  # column u of A: the edges leaving u
    assert out_degree.tolist() == [2, 3, 3, 2, 2]
    propagation = a / torch.sqrt(out_degree.unsqueeze(1) * out_degree.unsqueeze(0))
    assert propagation[0, 1].item() == pytest.approx(1 / math.sqrt(6))  # edge 1 → 0: degrees 3 and 2
    assert propagation[0, 4].item() == pytest.approx(1 / 2)  # edge 4 → 0: degrees 2 and 2
    assert torch.allclose(module(x, graph), feed_forward(module.feed_forward_module, propagation @ x), atol=1e-6)


def test_sage_module_feeds_ego_and_neighbour_mean_to_one_feed_forward():
    x, edge_index = toy_graph()
    torch.manual_seed(0)
    module = SAGEModule(4).eval()
    a = dense(edge_index, 5)
    mean = a @ x / a.sum(1, keepdim=True).clamp(min=1)
    assert torch.equal(mean[4], torch.zeros(4))  # no in-neighbours: zero message
    assert torch.allclose(mean[0], (x[1] + x[4]) / 2)
    assert module.feed_forward_module.linear_1.in_features == 8
    assert torch.allclose(module(x, edge_index), feed_forward(module.feed_forward_module, torch.cat([x, mean], 1)),
                          atol=1e-6)


def dense_gat(module: GATModule, x: torch.Tensor, edge_index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(attention (H, N targets, N sources), message (N, d)) of the released GAT, densely: head k owns the channels
    j·H + k."""
    n, heads = x.shape[0], module.num_heads
    z = module.input_linear(x)
    su, sv = module.attn_linear_u(z), module.attn_linear_v(z)  # (N, H)
    scores = F.leaky_relu(sv.t().unsqueeze(2) + su.t().unsqueeze(1), 0.2)  # [k, v, u]
    mask = dense(edge_index, n) > 0
    alpha = torch.softmax(scores.masked_fill(~mask, -math.inf), dim=2).nan_to_num(0.0)
    per_head = [alpha[k] @ z[:, k::heads] for k in range(heads)]  # head k: the channels j·H + k
    return alpha, torch.stack(per_head, dim=2).reshape(n, module.dim)


@pytest.mark.parametrize("separate", [False, True])
def test_gat_modules_are_the_released_attention(separate):
    x, edge_index = toy_graph()
    graph = edge_index if separate else with_loops(edge_index, 5)
    torch.manual_seed(1)
    module = (GATSepModule if separate else GATModule)(4, num_heads=2).eval()
    alpha, message = dense_gat(module, x, graph)
    with torch.no_grad():
        z = module.input_linear(x)
        expected = feed_forward(module.feed_forward_module, torch.cat([z, message], 1) if separate else message)
        assert torch.allclose(module(x, graph), expected, atol=1e-5)
        coefficients = module.attention(z, graph)  # (E, H)
    # every node's coefficients sum to 1 over its in-edges, per head; node 4 (GAT-sep: no in-edges) has none
    sums = torch.zeros(5, 2).index_add_(0, graph[1], coefficients)
    expected_sums = torch.tensor([1.0, 1, 1, 1, 0 if separate else 1]).unsqueeze(1).expand(5, 2)
    assert torch.allclose(sums, expected_sums, atol=1e-6)
    assert torch.allclose(coefficients, alpha[:, graph[1], graph[0]].t(), atol=1e-6)


def dense_transformer(module: TransformerAttentionModule, x: torch.Tensor, edge_index: torch.Tensor):
    """(attention (H, N targets, N sources), message (N, d)): query of the source, key of the target, heads in
    blocks of d/H channels."""
    n, heads, width = x.shape[0], module.num_heads, module.head_dim
    q, k, v = module.attn_query(x), module.attn_key(x), module.attn_value(x)
    mask = dense(edge_index, n) > 0
    alphas, messages = [], []
    for h in range(heads):
        block = slice(h * width, (h + 1) * width)
        scores = (k[:, block] @ q[:, block].t()) / math.sqrt(width)  # [v, u] = q_u · k_v
        alphas.append(torch.softmax(scores.masked_fill(~mask, -math.inf), dim=1).nan_to_num(0.0))
        messages.append(alphas[-1] @ v[:, block])
    return torch.stack(alphas), torch.cat(messages, dim=1)


@pytest.mark.parametrize("separate", [False, True])
def test_transformer_attention_modules_are_the_released_attention(separate):
    x, edge_index = toy_graph()
    graph = edge_index if separate else with_loops(edge_index, 5)
    torch.manual_seed(2)
    module = (TransformerAttentionSepModule if separate else TransformerAttentionModule)(4, num_heads=2).eval()
    with torch.no_grad():
        alpha, message = dense_transformer(module, x, graph)
        out = module.output_linear
        expected = (torch.cat([x, message], 1) if separate else message) @ out.weight.t() + out.bias
        assert torch.allclose(module(x, graph), expected, atol=1e-5)
        coefficients = module.attention(x, graph)
    sums = torch.zeros(5, 2).index_add_(0, graph[1], coefficients)
    assert torch.allclose(sums[:4], torch.ones(4, 2), atol=1e-6)
    assert torch.allclose(sums[4], torch.full((2,), 0.0 if separate else 1.0), atol=1e-6)
    assert torch.allclose(coefficients, alpha[:, graph[1], graph[0]].t(), atol=1e-6)
    # the released form is not symmetric in q and k: exchanging them changes the coefficients
    swapped = module.attn_query.weight.detach().clone()
    with torch.no_grad():
        module.attn_query.weight.copy_(module.attn_key.weight)
        module.attn_key.weight.copy_(swapped)
        assert not torch.allclose(module.attention(x, graph), coefficients)


def dense_module(name: str, module: torch.nn.Module, x: torch.Tensor, graph: torch.Tensor) -> torch.Tensor:
    """The module's output from its equation, computed densely (the functions above)."""
    if name == "GCN":
        a = dense(graph, 5)
        degrees = a.sum(0)
        return feed_forward(module.feed_forward_module, a / torch.sqrt(degrees.unsqueeze(1) * degrees) @ x)
    if name == "SAGE":
        a = dense(graph, 5)
        mean = a @ x / a.sum(1, keepdim=True).clamp(min=1)
        return feed_forward(module.feed_forward_module, torch.cat([x, mean], 1))
    if name.startswith("GAT"):
        _, message = dense_gat(module, x, graph)
        z = module.input_linear(x)
        return feed_forward(module.feed_forward_module, torch.cat([z, message], 1) if module.separate else message)
    _, message = dense_transformer(module, x, graph)
    return module.output_linear(torch.cat([x, message], 1) if module.separate else message)


MODULES = {"GCN": lambda: GCNModule(4), "SAGE": lambda: SAGEModule(4), "GAT": lambda: GATModule(4, num_heads=2),
           "GAT-sep": lambda: GATSepModule(4, num_heads=2), "GT": lambda: TransformerAttentionModule(4, num_heads=2),
           "GT-sep": lambda: TransformerAttentionSepModule(4, num_heads=2)}


@pytest.mark.parametrize("name", MODULES)
def test_gradients_of_the_sparse_message_passing_equal_the_dense_equations(name):
    """The sparse products (a CSR / embedding-bag sum; per-head attention sums with their sampled backward) give
    the dense equation's gradients for the inputs and every weight, attention weights included; for GCN and SAGE a
    parallel edge (1 → 0 twice) counts twice (the dense attention above knows no parallel edges)."""
    x, edge_index = toy_graph()
    if name in ("GCN", "SAGE"):
        edge_index = torch.cat([edge_index, torch.tensor([[1], [0]])], 1)
    graph = with_loops(edge_index, 5) if name in ("GCN", "GAT", "GT") else edge_index
    torch.manual_seed(4)
    module = MODULES[name]().eval()
    probe = torch.randn(5, 4)
    grads = []
    for compute in (lambda inputs: module(inputs, graph), lambda inputs: dense_module(name, module, inputs, graph)):
        inputs = x.clone().requires_grad_(True)
        module.zero_grad()
        (compute(inputs) * probe).sum().backward()
        grads.append([inputs.grad] + [p.grad.clone() for p in module.parameters()])
    assert all(g is not None for g in grads[0])
    for sparse_grad, dense_grad in zip(*grads, strict=True):
        assert torch.allclose(sparse_grad, dense_grad, atol=1e-5), name


def test_residual_normalises_the_module_input_and_adds_the_unnormalised_input():
    torch.manual_seed(3)
    x = torch.randn(5, 4) * 3 + 1
    module = FeedForward(4).eval()
    norm = torch.nn.LayerNorm(4)
    out = Residual(module, norm)(x, torch.zeros(2, 0, dtype=torch.long))
    assert torch.allclose(out, x + feed_forward(module, F.layer_norm(x, (4,))), atol=1e-6)


@pytest.mark.parametrize("normalization", ["LayerNorm", "None"])
def test_network_is_input_layer_residual_blocks_final_norm_output(normalization):
    x, edge_index = toy_graph()
    torch.manual_seed(4)
    config = {"model": "ResNet", "variant": PLATONOV2023, "num_layers": 1, "hidden_dim": 6, "dropout": 0.5,
              "normalization": normalization}
    model = build_model(config, node_meta(4, 3)).eval()
    norm = (lambda t: F.layer_norm(t, (6,))) if normalization == "LayerNorm" else (lambda t: t)
    lin = model.input_linear
    h = F.gelu(x @ lin.weight.t() + lin.bias)  # dropout after the Linear, before GELU (identity in eval)
    h = h + feed_forward(model.residual_modules[0].module, norm(h))
    expected = norm(h) @ model.output_linear.weight.t() + model.output_linear.bias
    batch = GraphBatch(edge_index, torch.zeros(5, dtype=torch.long), torch.tensor([0, 5]), 1, x=x)
    with torch.no_grad():
        assert torch.allclose(model(batch), expected, atol=1e-5)
        assert torch.equal(model(x, edge_index), model(batch))  # the plain (x, edge_index) call
    assert [type(m.module).__name__ for m in model.residual_modules] == ["FeedForward"]
    # training: dropout on the input Linear's output, then GELU; the block's dropouts after each of its Linears
    ff = model.residual_modules[0].module
    model.train()
    torch.manual_seed(9)
    h = F.gelu(F.dropout(x @ lin.weight.t() + lin.bias, 0.5))
    inner = F.dropout(norm(h) @ ff.linear_1.weight.t() + ff.linear_1.bias, 0.5)
    h = h + F.dropout(F.gelu(inner) @ ff.linear_2.weight.t() + ff.linear_2.bias, 0.5)
    expected = norm(h) @ model.output_linear.weight.t() + model.output_linear.bias
    torch.manual_seed(9)
    with torch.no_grad():
        assert torch.allclose(model(batch), expected, atol=1e-5)


def test_gcn_gat_gt_add_a_self_loop_to_every_node_the_others_read_the_graph_as_given():
    x, edge_index = toy_graph()
    for family, loops in [("GCN", True), ("GAT", True), ("GT", True), ("SAGE", False), ("GAT-sep", False),
                          ("GT-sep", False), ("ResNet", False)]:
        model = build_model({"model": family, "variant": PLATONOV2023, "hidden_dim": 4, "num_heads": 2},
                            node_meta(4, 3))
        assert model.graph(edge_index, 5).shape[1] == edge_index.shape[1] + 5 * loops, family


def test_layers_of_gt_are_attention_then_feed_forward_each_residual():
    model = build_model({"model": "GT-sep", "variant": PLATONOV2023, "num_layers": 2, "hidden_dim": 8,
                         "num_heads": 2}, node_meta(4, 3))
    assert [type(m.module).__name__ for m in model.residual_modules] == [
        "TransformerAttentionSepModule", "FeedForward", "TransformerAttentionSepModule", "FeedForward"]


# ------------------------------------------------------------------------------------------ inputs


def test_sgc_features_are_five_propagations_with_one_self_loop_per_node():
    x, edge_index = toy_graph()
    graph = torch.cat([edge_index, torch.tensor([[2], [2]])], dim=1)  # a self loop already present: replaced
    a = dense(edge_index, 5) + torch.eye(5)
    out_degree = a.sum(0)
    s = a / torch.sqrt(out_degree.unsqueeze(1) * out_degree.unsqueeze(0))
    assert torch.allclose(sgc_features(x, graph), torch.linalg.matrix_power(s, 5) @ x, atol=1e-5)


def test_input_layer_is_one_linear_on_the_released_concatenation():
    x, edge_index = toy_graph()
    graph = torch.cat([edge_index, torch.tensor([[1], [1]])], dim=1)  # adjacency inputs leave self loops out
    torch.manual_seed(5)
    layer = InputLinear(4, 6, ["adjacency", "identity", "sgc", "original"], num_nodes=5)
    assert layer.features == ("original", "sgc", "identity", "adjacency")
    assert layer.weight.shape == (6, 4 + 4 + 5 + 5)
    adjacency = dense(edge_index, 5).t()  # row i: A[i, j] = 1 for an edge i → j
    assert adjacency[4].tolist() == [1, 0, 0, 0, 0] and adjacency[0].tolist() == [0, 1, 0, 0, 0]
    inputs = torch.cat([x, sgc_features(x, graph), torch.eye(5), adjacency], dim=1)
    with torch.no_grad():
        assert torch.allclose(layer(x, graph), inputs @ layer.weight.t() + layer.bias, atol=1e-5)
        assert torch.allclose(layer(x, graph), layer(x, graph))  # from the cache the second time


def test_node_wide_inputs_refuse_another_graph_and_a_dataset_of_many_graphs():
    x, edge_index = toy_graph()
    layer = InputLinear(4, 6, ["original", "adjacency"], num_nodes=7)
    with pytest.raises(ValueError, match="a graph of 7 nodes; got 5"):
        layer(x, edge_index)
    config = {"model": "ResNet", "variant": PLATONOV2023, "input_features": ["original", "adjacency"]}
    with pytest.raises(ConfigError, match="input_features: adjacency give one input per node of one graph, but "
                                          "dataset toy has 3 graphs"):
        check_buildable(config, node_meta(graphs=3))
    with pytest.raises(ConfigError, match=r"input_features must name each of original, sgc, identity, adjacency at "
                                          r"most once .*, got \['original', 'sgc', 'sgc'\]; e.g. \[original\]"):
        check_buildable({**config, "input_features": ["original", "sgc", "sgc"]}, node_meta())


# ------------------------------------------------------------------------------------------ registry and checks


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_builds_through_the_registry_and_scores_every_node(family):
    meta = node_meta(4, 5, nodes=5)
    config = {"model": family, "variant": PLATONOV2023, "num_layers": 2, "hidden_dim": 8, "num_heads": 2,
              "input_features": ["original", "sgc", "identity", "adjacency"]}
    assert check_buildable(config, meta).variant == PLATONOV2023
    x, edge_index = toy_graph()
    torch.manual_seed(6)
    model = build_model(config, meta)
    out = model(x, edge_index)
    assert out.shape == (5, 5) and torch.isfinite(out).all()
    out.sum().backward()
    assert all(p.grad is not None for p in model.parameters())


def test_two_classes_get_one_output_and_cross_entropy_datasets_are_refused_for_them():
    config = {"model": "GCN", "variant": PLATONOV2023, "hidden_dim": 8}
    assert build_model(config, node_meta(4, 2, loss="bce")).output_linear.out_features == 1
    assert build_model(config, node_meta(4, 3)).output_linear.out_features == 3
    with pytest.raises(ConfigError, match="model GCN \\(platonov2023\\) gives two classes one logit .* dataset toy "
                                          "is trained with cross_entropy"):
        check_buildable(config, node_meta(4, 2))


def test_impossible_settings_are_one_line_config_errors():
    meta = node_meta()
    with pytest.raises(ConfigError, match=r"model GAT \(platonov2023\) on dataset toy: hidden_dim \(10\) must be a "
                                          r"multiple of num_heads \(4\); change the config"):
        build_model({"model": "GAT", "variant": PLATONOV2023, "hidden_dim": 10, "num_heads": 4}, meta)
    with pytest.raises(ConfigError, match="normalization must be one of None, LayerNorm, BatchNorm, got 'layer'"):
        build_model({"model": "SAGE", "variant": PLATONOV2023, "normalization": "layer"}, meta)
    with pytest.raises(ConfigError, match="reads continuous node features .* dataset toy has none; set "
                                          "input_features: \\[identity\\]"):
        check_buildable({"model": "ResNet", "variant": PLATONOV2023},
                        DatasetMeta("toy", "node_classification", "cross_entropy", "accuracy", 3, 1, None, None, "add",
                                    None))


def test_defaults_are_the_released_train_py_defaults():
    model = build_model({"model": "GT-sep", "variant": PLATONOV2023}, node_meta(10, 2))
    assert len(model.residual_modules) == 10  # 5 layers × (attention, feed-forward)
    assert model.input_linear.out_features == 512 and model.residual_modules[0].module.num_heads == 8
    assert isinstance(model.output_normalization, torch.nn.LayerNorm) and model.dropout.p == 0.2


# ------------------------------------------------------------------------------------------ stacks


@pytest.mark.parametrize("family", ["GCN", "SAGE", "GAT-sep", "GT", "ResNet"])
def test_a_vmapped_stack_of_members_equals_each_members_own_model(family):
    x, edge_index = toy_graph()
    batch = GraphBatch(edge_index, torch.zeros(5, dtype=torch.long), torch.tensor([0, 5]), 1, x=x)
    config = {"model": family, "variant": PLATONOV2023, "num_layers": 2, "hidden_dim": 8, "num_heads": 2,
              "normalization": "BatchNorm", "input_features": ["original", "sgc"]}
    meta = node_meta(4, 3, nodes=5)
    seeds = [11, 12, 13]
    parts = {p: torch.tensor(nodes) for p, nodes in (("train", [0, 1]), ("val", [2, 3]), ("test", [4]))}
    # raises NotStackable where vmap fails or a member's output differs from its own forward pass
    step = FunctionalStackStep(lambda: build_model(config, meta), batch, torch.tensor([0, 1, 2, 0, 1]), parts,
                               learning_rate=0.01, weight_decay=0.0, criterion="loss", patience=5, max_epochs=3,
                               init_ids=[0, 1, 2], seeds=seeds, dropout_seed=0)
    step.skeleton.eval()
    with torch.no_grad():
        stacked, _ = step._forward(step.params, step.buffers)
    for r, seed in enumerate(seeds):
        torch.manual_seed(seed)
        own = build_model(config, meta).eval()
        assert torch.allclose(stacked[r], own(batch), atol=1e-5)
    assert not torch.allclose(stacked[0], stacked[1])


def test_config_values_are_checked_and_converted_as_keys_of_the_zoo():
    from gnnbench.config.presets import run_config

    config = run_config(None, {"model": "GT", "variant": PLATONOV2023, "input_features": "[original, sgc]",
                               "normalization": "None", "hidden_dim_multiplier": "2"})
    assert config["input_features"] == ["original", "sgc"] and config["hidden_dim_multiplier"] == 2.0
    assert config["normalization"] == "None"
    with pytest.raises(ConfigError, match=r"^--set.input_features: input_features must be a list of names, got 3; "
                                          "fix the value$"):
        run_config(None, {"model": "GT", "variant": PLATONOV2023, "input_features": 3}, where="--set")
    with pytest.raises(ConfigError, match="normalization must be one of None, LayerNorm, BatchNorm, got 'Layer'"):
        run_config(None, {"model": "GT", "variant": PLATONOV2023, "normalization": "Layer"})
    with pytest.raises(ConfigError, match=r"^model GT \(platonov2023\) on dataset toy: num_heads must be at least 1, "
                                          "got 0; change the config$"):
        build_model(run_config(None, {"model": "GT", "variant": PLATONOV2023, "num_heads": 0}), node_meta())
    # another zoo's lists stay lists of positive integers
    with pytest.raises(ConfigError, match="hidden_units must be a non-empty list of positive integers"):
        run_config(None, {"model": "GIN", "variant": "errica2020", "hidden_units": [64, 0]})


def test_fit_budget_fits_hidden_dim_of_the_zoos_models_at_the_given_depth():
    from gnnbench.config.budget import fit_preset

    meta = node_meta(20, 4)
    fit = fit_preset("toy", "SAGE", 200_000, 3, meta)
    assert fit.config["num_layers"] == 3 and fit.config["variant"] == PLATONOV2023

    def count(width: int) -> int:
        return count_parameters(build_model({**fit.config, "hidden_dim": width}, meta))

    assert fit.total_params == count(fit.hidden_dim)
    assert abs(count(fit.hidden_dim) - 200_000) <= min(abs(count(fit.hidden_dim + d) - 200_000) for d in (-1, 1))
    with pytest.raises(ConfigError, match="^fit-budget: GT \\(platonov2023\\) splits hidden_dim into num_heads heads"):
        fit_preset("toy", "GT", 200_000, 3, meta)
    assert fit_preset("toy", "GT", 200_000, 2, meta, overrides={"num_heads": 1}).config["num_layers"] == 2


@pytest.mark.skipif(not (REAL / "chameleon_filtered.npz").exists(),
                    reason="real heterophily files absent (../shared/data)")
def test_inputs_on_the_real_chameleon_filtered_graph():
    with np.load(REAL / "chameleon_filtered.npz") as data:
        x = torch.from_numpy(data["node_features"])
        edges = torch.from_numpy(data["edges"]).t()
    n = x.shape[0]
    edge_index = torch.cat([edges, edges.flip(0)], dim=1)  # stored once per undirected edge: both directions
    a = dense(edge_index, n) + torch.eye(n)
    degree = a.sum(0)
    s = a / torch.sqrt(degree.unsqueeze(1) * degree.unsqueeze(0))
    expected = x.double()
    for _ in range(5):
        expected = s.double() @ expected
    assert torch.allclose(sgc_features(x, edge_index).double(), expected, rtol=1e-4, atol=1e-5)
    meta = node_meta(x.shape[1], 5, nodes=n)
    config = {"model": "GAT-sep", "variant": PLATONOV2023, "num_layers": 1, "hidden_dim": 16, "num_heads": 4,
              "input_features": ["original", "sgc", "adjacency"]}
    model = build_model(config, meta).eval()
    assert model.input_linear.weight.shape == (16, 2 * 2325 + 890)
    with torch.no_grad():
        out = model(x, edge_index)
    assert out.shape == (n, 5) and torch.isfinite(out).all()
