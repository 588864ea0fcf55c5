"""Every architecture of the zoo with every task head: published parameter counts, permutation
equivariance/invariance, learning, and clear errors for combinations that make no sense."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import TASK_OUTPUTS, labelled, meta_for, one_batch, published_rows, random_graphs, with_pairs

from gnnbench.config.presets import all_presets, run_config
from gnnbench.data.catalog import describe_dataset
from gnnbench.data.store import GraphColumns
from gnnbench.errors import ConfigError
from gnnbench.models.build import build_model, count_parameters
from gnnbench.models.registry import ARCHITECTURES
from gnnbench.training.losses import get_loss

ROWS = published_rows()


def test_the_transcription_covers_every_published_count():
    assert len(ROWS) == 165  # 142 configs with a total + 23 variants run by the released scripts
    assert {name for name, _, _ in ROWS} <= set(all_presets())


@pytest.mark.parametrize(("preset", "overrides", "total"), ROWS,
                         ids=[f"{n}{'+' + ','.join(o) if o else ''}" for n, o, _ in ROWS])
def test_parameter_count_equals_published(preset, overrides, total):
    dataset = describe_dataset(all_presets()[preset]["dataset"])
    assert count_parameters(build_model(run_config(preset, overrides), dataset)) == total


# Small versions of every architecture and layer variant, built from a published config.
def _small(preset: str, **overrides) -> dict:
    return run_config(preset, overrides)


ZINC = "molecules_graph_regression_{}_ZINC_100k"
COLLAB = "COLLAB_edge_classification_{}"
GTP = "GraphTheoryProp_multitask_{}_GraphTheoryProp_100k"
WIDTH = dict(L=2, hidden_dim=16, out_dim=16)
VARIANTS = {
    # wider: the MLP's only nonlinearity path is its own layers, and a 16-wide one often starts with dead units
    "MLP": _small(ZINC.format("MLP"), L=2, hidden_dim=32, out_dim=32),
    "MLP-gated": _small(ZINC.format("MLP"), gated=True, L=2, hidden_dim=32, out_dim=32),
    "GCN": _small(ZINC.format("GCN"), **WIDTH),
    "GraphSage-maxpool": _small(ZINC.format("GraphSage"), **WIDTH),
    "GraphSage-mean": _small(ZINC.format("GraphSage"), sage_aggregator="mean", **WIDTH),
    "GraphSage-meanpool": _small(ZINC.format("GraphSage"), sage_aggregator="meanpool", **WIDTH),
    "GraphSage-edgefeat": _small(COLLAB.format("GraphSage_edgefeat"), **WIDTH),
    "GraphSage-edgereprfeat": _small(COLLAB.format("GraphSage_edgereprfeat"), **WIDTH),
    "GAT": _small(ZINC.format("GAT"), L=2, hidden_dim=4, n_heads=4, out_dim=16),
    "GAT-edgefeat": _small(COLLAB.format("GAT_edgefeat"), L=2, hidden_dim=4, n_heads=3, out_dim=12),
    "GAT-edgereprfeat": _small(COLLAB.format("GAT_edgereprfeat"), L=2, hidden_dim=4, n_heads=3, out_dim=12),
    "GAT-isotropic": _small(COLLAB.format("GAT_isotropic"), L=2, hidden_dim=4, n_heads=3, out_dim=12),
    "MoNet": _small(ZINC.format("MoNet"), **WIDTH),
    "GIN": _small(ZINC.format("GIN"), **WIDTH),
    "GIN-GRU": _small(GTP.format("GIN"), **WIDTH),
    "GatedGCN": _small(ZINC.format("GatedGCN"), edge_feat=True, **WIDTH),
    "GatedGCN-edgefeat": _small(COLLAB.format("GatedGCN_edgefeat"), **WIDTH),
    "GatedGCN-isotropic": _small(COLLAB.format("GatedGCN_isotropic"), **WIDTH),
    "GatedGCN-GRU": _small(GTP.format("GatedGCN"), **WIDTH),
    "RingGNN": _small(ZINC.format("RingGNN"), L=2, hidden_dim=6),
    "3WLGNN": _small(ZINC.format("3WLGNN"), L=2, hidden_dim=8),
    "MF": _small(COLLAB.format("MF"), hidden_dim=16, num_embs=120),
}
TASKS = list(TASK_OUTPUTS)
COMBINATIONS = [(v, t) for v, cfg in VARIANTS.items() for t in TASKS if t in ARCHITECTURES[cfg["model"]].tasks]


def test_every_model_supports_the_tasks_the_benchmark_runs_it_on():
    presets = {n: p for n, p in all_presets().items() if p.get("protocol", "benchmarking-gnns") == "benchmarking-gnns"}
    task_of = {name: describe_dataset(p["dataset"]).task for name, p in presets.items()}
    for name, preset in presets.items():
        assert task_of[name] in ARCHITECTURES[preset["model"]].tasks, name
    assert len(COMBINATIONS) >= 100


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


def _batch(columns: GraphColumns, task: str, pe: torch.Tensor | None = None, pairs: torch.Tensor | None = None):
    batch = one_batch(columns, pe)
    if task == "link_prediction":
        batch = with_pairs(batch)
        if pairs is not None:
            batch.pairs = pairs
    return batch


@pytest.mark.parametrize(("variant", "task"), COMBINATIONS)
@pytest.mark.parametrize("pe_usage", ["add", "replace"])
def test_permutation_equivariance_and_invariance(variant, task, pe_usage):
    """Relabelling the nodes inside each graph permutes node scores and leaves graph, edge and pair scores
    unchanged (edges and pairs keep their order; their endpoints are relabelled)."""
    if variant == "MF":
        pytest.skip("MF embeds node identities: not permutation equivariant by design")
    columns = labelled(random_graphs(5, seed=2, max_nodes=9, directed=True), task)
    meta = meta_for(task, pe_usage=pe_usage)
    torch.manual_seed(0)
    net = build_model({**VARIANTS[variant], "pos_enc": True, "pos_enc_dim": 3}, meta).eval()
    pe = torch.randn(int(columns.num_nodes.sum()), 3)
    permuted, perm = _permute_within_graphs(columns, seed=3)
    inverse = torch.from_numpy(np.argsort(perm))
    with torch.no_grad():
        batch = _batch(columns, task, pe)
        out = net(batch)
        pairs = inverse[batch.pairs] if task == "link_prediction" else None
        out_perm = net(_batch(permuted, task, pe[torch.from_numpy(perm)], pairs))
    node_level = torch.from_numpy(perm)
    if task == "node_classification":
        expected = out[node_level]
    elif task == "multitask_regression":
        expected = (out[0][node_level], out[1])
    else:
        expected = out
    torch.testing.assert_close(out_perm, expected, atol=1e-4, rtol=1e-4)
    num_nodes, num_graphs = int(columns.num_nodes.sum()), columns.num_graphs
    shapes = {"node_classification": (num_nodes, 3), "graph_classification": (num_graphs, 2),
              "graph_regression": (num_graphs,), "edge_classification": (batch.num_edges, 2),
              "link_prediction": (2 * batch.num_edges,), "multitask_regression": ((num_nodes, 3), (num_graphs, 3))}
    got = tuple(o.shape for o in out) if isinstance(out, tuple) else out.shape
    assert got == shapes[task]


LEARNABLE = [(v, t) for v, t in COMBINATIONS if not (v.startswith("MLP") and t == "link_prediction")]


@pytest.mark.parametrize(("variant", "task"), LEARNABLE)
def test_training_steps_reduce_the_loss(variant, task):
    """A few full-batch steps fit the fixture's labels (functions of the node features and the graph). The MLP
    on link prediction is left out: its positive pairs are edges and its negatives random pairs, which a
    structure-blind model cannot tell apart from node features alone (the same link head is trained here for
    every other model)."""
    columns = labelled(random_graphs(16, seed=4, max_nodes=10), task)
    meta = meta_for(task)
    torch.manual_seed(0)
    net = build_model(VARIANTS[variant], meta).train()
    loss_fn = get_loss(meta.loss, {"batch_size": 16})
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    batch = _batch(columns, task)
    losses = []
    for _ in range(80):
        optimizer.zero_grad()
        loss = loss_fn(net(batch), batch)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0], losses[::10]


@pytest.mark.parametrize(("model", "task"), [("MF", "graph_regression"), ("MF", "node_classification"),
                                             ("RingGNN", "link_prediction"), ("3WLGNN", "multitask_regression")])
def test_a_combination_that_makes_no_sense_is_refused_naming_model_and_task(model, task):
    cfg = next(c for c in VARIANTS.values() if c["model"] == model)
    with pytest.raises(ConfigError, match=rf"model {model} cannot do {task}"):
        build_model(cfg, meta_for(task))
