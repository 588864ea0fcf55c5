"""Vectorised mini-batching: gather_ranges, GraphLoader against PyG's Batch.from_data_list, shuffling, dtypes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.nn import GCNConv, global_mean_pool

from gnnbench.data.batching import GraphBatch, GraphLoader, gather_ranges, model_dtypes
from gnnbench.data.store import GraphColumns, GraphStore


def random_columns(seed: int, num_graphs: int = 15, node_y: bool = False, y_width: int = 0) -> GraphColumns:
    """Random graphs; graph 0 has one node and no edges, graph 1 has no edges.

    ``x`` is int16 (N,), ``edge_attr`` float32 (E, 2); ``y`` is node-level int16 (N,) when ``node_y``,
    else graph-level: the graph's index as int64 (G,), or (G, y_width) float32 when ``y_width``.
    """
    rng = np.random.default_rng(seed)
    num_nodes = rng.integers(2, 9, num_graphs)
    num_nodes[0] = 1
    num_edges = rng.integers(1, 20, num_graphs)
    num_edges[:2] = 0
    limit = np.repeat(num_nodes, num_edges)
    total_nodes, total_edges = int(num_nodes.sum()), int(num_edges.sum())
    columns = GraphColumns(
        num_nodes=num_nodes.astype(np.int64),
        num_edges=num_edges.astype(np.int64),
        src=(rng.random(total_edges) * limit).astype(np.int32),
        dst=(rng.random(total_edges) * limit).astype(np.int32),
        node={"x": rng.integers(0, 30, total_nodes).astype(np.int16)},
        edge={"edge_attr": rng.normal(size=(total_edges, 2)).astype(np.float32)},
    )
    if node_y:
        columns.node["y"] = rng.integers(0, 3, total_nodes).astype(np.int16)
    elif y_width:
        columns.graph["y"] = rng.normal(size=(num_graphs, y_width)).astype(np.float32)
    else:
        columns.graph["y"] = np.arange(num_graphs, dtype=np.int64)
    columns.validate()
    return columns


def pyg_graphs(columns: GraphColumns, pe: np.ndarray | None = None) -> list[Data]:
    """One torch_geometric Data per graph, sliced out of the NumPy columns with plain Python."""
    graphs = []
    node_ptr, edge_ptr = columns.node_ptr, columns.edge_ptr
    for i in range(columns.num_graphs):
        n0, n1, e0, e1 = node_ptr[i], node_ptr[i + 1], edge_ptr[i], edge_ptr[i + 1]
        data = Data(
            x=torch.tensor(columns.node["x"][n0:n1]),
            edge_index=torch.tensor(np.stack([columns.src[e0:e1], columns.dst[e0:e1]]), dtype=torch.int64),
            edge_attr=torch.tensor(columns.edge["edge_attr"][e0:e1]),
            num_nodes=int(columns.num_nodes[i]),
        )
        if "y" in columns.node:
            data.y = torch.tensor(columns.node["y"][n0:n1])
        else:
            y = columns.graph["y"][i]
            data.y = torch.tensor(y[None] if y.ndim else y)  # (1, d) rows, or 0-d scalars stacked to (B,)
        if pe is not None:
            data.pe = torch.tensor(pe[n0:n1])
        graphs.append(data)
    return graphs


def assert_same_tensor(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert torch.equal(actual, expected)


def assert_matches_pyg(batch: GraphBatch, reference: Batch, with_pe: bool = False) -> None:
    for name in ("x", "edge_index", "edge_attr", "y", "batch", "ptr"):
        assert_same_tensor(getattr(batch, name), reference[name])
    if with_pe:
        assert_same_tensor(batch.pe, reference.pe)
    else:
        assert batch.pe is None
    assert batch.num_graphs == reference.num_graphs
    assert batch.num_nodes == reference.num_nodes
    assert batch.num_edges == reference.num_edges


def graph_ids(batch: GraphBatch) -> list[int]:
    """Graph indices of a batch, read back from the graph-level label ``y`` (= graph index)."""
    return batch.y.tolist()


# ------------------------------------------------------------------------------------------ gather_ranges


def reference_ranges(starts: list[int], counts: list[int]) -> list[int]:
    out = []
    for start, count in zip(starts, counts, strict=True):
        out.extend(range(start, start + count))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_gather_ranges_matches_python(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 40))
    starts = rng.integers(0, 1000, size)
    counts = rng.integers(0, 6, size)
    counts[rng.random(size) < 0.3] = 0
    counts[0] = 0
    got = gather_ranges(torch.from_numpy(starts), torch.from_numpy(counts))
    assert got.dtype == torch.int64
    assert got.tolist() == reference_ranges(starts.tolist(), counts.tolist())


def test_gather_ranges_edge_cases():
    empty = torch.zeros(0, dtype=torch.int64)
    assert gather_ranges(empty, empty).tolist() == []
    assert gather_ranges(torch.tensor([4, 9]), torch.tensor([0, 0])).tolist() == []
    assert gather_ranges(torch.tensor([7, 2, 7]), torch.tensor([2, 3, 1])).tolist() == [7, 8, 2, 3, 4, 7]


# ------------------------------------------------------------------------------------ batches versus PyG


@pytest.mark.parametrize("kind", ["graph_y", "graph_y_2d", "node_y"])
def test_batches_equal_pyg_batch_from_data_list(kind):
    columns = random_columns(1, node_y=kind == "node_y", y_width=3 if kind == "graph_y_2d" else 0)
    store = GraphStore.from_columns(columns)
    data = pyg_graphs(columns)
    ids = torch.tensor([7, 0, 12, 1, 4, 14, 9, 3])  # includes the one-node and the edgeless graph, unsorted
    loader = GraphLoader(store, ids, batch_size=3)
    batches = list(loader)
    assert len(batches) == len(loader) == 3
    for k, batch in enumerate(batches):
        chunk = ids[3 * k : 3 * k + 3].tolist()
        assert_matches_pyg(batch, Batch.from_data_list([data[i] for i in chunk]))
        if kind == "graph_y":
            assert graph_ids(batch) == chunk


def test_batch_with_positional_encodings():
    columns = random_columns(2)
    pe = np.random.default_rng(2).normal(size=(int(columns.num_nodes.sum()), 4)).astype(np.float32)
    store = GraphStore.from_columns(columns)
    data = pyg_graphs(columns, pe)
    ids = torch.tensor([5, 0, 11, 2, 1])
    batch = GraphLoader(store, ids, batch_size=10, pe=torch.from_numpy(pe)).collate(ids)
    assert_matches_pyg(batch, Batch.from_data_list([data[i] for i in ids.tolist()]), with_pe=True)
    assert graph_ids(batch) == ids.tolist()


def test_whole_store_in_one_batch_is_the_store_itself():
    columns = random_columns(3)
    store = GraphStore.from_columns(columns)
    batch = GraphLoader(store, torch.arange(store.num_graphs), batch_size=1000).collate(torch.arange(15))
    assert_same_tensor(batch.ptr, store.node_ptr)
    assert_same_tensor(batch.x, store.node["x"])
    assert_same_tensor(batch.edge_attr, store.edge["edge_attr"])
    offsets = torch.repeat_interleave(store.node_ptr[:-1], store.num_edges)
    assert_same_tensor(batch.edge_index, store.edge_index.long() + offsets)


def test_to_pyg_and_pyg_operators():
    columns = random_columns(4)
    columns.node["feat"] = np.random.default_rng(4).normal(size=(int(columns.num_nodes.sum()), 5)).astype(
        np.float32)
    store = GraphStore.from_columns(columns)
    # use the float features as x, so that GCNConv can consume them
    store.node["x"] = store.node.pop("feat")
    ids = torch.tensor([3, 8, 0, 13, 1, 6])
    pe = torch.randn(int(columns.num_nodes.sum()), 2, generator=torch.Generator().manual_seed(0))
    batch = GraphLoader(store, ids, batch_size=6, pe=pe).collate(ids)

    pyg = batch.to_pyg()
    assert isinstance(pyg, Batch)
    for name in ("x", "edge_index", "edge_attr", "y", "batch", "ptr", "pe"):
        assert_same_tensor(pyg[name], getattr(batch, name))
    assert pyg.num_graphs == batch.num_graphs == 6
    assert pyg.num_nodes == batch.num_nodes

    data = [
        Data(x=store.node["x"][store.node_ptr[i] : store.node_ptr[i + 1]],
             edge_index=store.edge_index[:, store.edge_ptr[i] : store.edge_ptr[i + 1]].long())
        for i in ids.tolist()
    ]
    reference = Batch.from_data_list(data)

    pooled = global_mean_pool(batch.x, batch.batch, size=batch.num_graphs)
    torch.testing.assert_close(pooled, global_mean_pool(reference.x, reference.batch))
    node_ptr = store.node_ptr.tolist()
    expected = torch.stack([store.node["x"][node_ptr[i] : node_ptr[i + 1]].mean(0) for i in ids.tolist()])
    torch.testing.assert_close(pooled, expected)

    torch.manual_seed(0)
    conv = GCNConv(5, 4)
    with torch.no_grad():
        torch.testing.assert_close(conv(batch.x, batch.edge_index), conv(reference.x, reference.edge_index))
        torch.testing.assert_close(conv(pyg.x, pyg.edge_index), conv(reference.x, reference.edge_index))


def test_batch_to_device_moves_every_tensor():
    store = GraphStore.from_columns(random_columns(5))
    batch = GraphLoader(store, torch.arange(4), batch_size=4).collate(torch.arange(4))
    moved = batch.to("meta")
    assert moved.num_graphs == 4
    for name in ("x", "edge_index", "edge_attr", "y", "batch", "ptr"):
        assert getattr(moved, name).device.type == "meta"
        assert getattr(moved, name).shape == getattr(batch, name).shape
        assert getattr(batch, name).device.type == "cpu"
    assert moved.pe is None


# ------------------------------------------------------------------------------------------- shuffling


def epoch_ids(loader: GraphLoader) -> list[list[int]]:
    return [graph_ids(batch) for batch in loader]


def shuffled_loader(store: GraphStore, indices: torch.Tensor, seed: int, batch_size: int = 4) -> GraphLoader:
    return GraphLoader(store, indices, batch_size, shuffle=True, generator=torch.Generator().manual_seed(seed))


def test_equal_seeds_give_identical_batches():
    columns = random_columns(6, num_graphs=23)
    store = GraphStore.from_columns(columns)
    indices = torch.arange(23)
    first, second = shuffled_loader(store, indices, 7), shuffled_loader(store, indices, 7)
    for _ in range(2):  # two epochs; the global torch seed must not matter
        torch.manual_seed(1)
        batches_a = list(first)
        torch.manual_seed(2)
        batches_b = list(second)
        assert len(batches_a) == len(batches_b) == 6
        for a, b in zip(batches_a, batches_b, strict=True):
            for name in ("x", "edge_index", "edge_attr", "y", "batch", "ptr"):
                assert_same_tensor(getattr(a, name), getattr(b, name))


def test_different_seeds_give_different_orders():
    store = GraphStore.from_columns(random_columns(7, num_graphs=23))
    indices = torch.arange(23)
    assert epoch_ids(shuffled_loader(store, indices, 1)) != epoch_ids(shuffled_loader(store, indices, 2))


def test_every_epoch_visits_each_index_once_in_a_new_order():
    columns = random_columns(8, num_graphs=30)
    store = GraphStore.from_columns(columns)
    data = pyg_graphs(columns)
    indices = torch.tensor([29, 3, 4, 5, 11, 12, 13, 17, 18, 20, 21, 22, 25])  # a subset, not 0..n-1
    loader = shuffled_loader(store, indices, 3, batch_size=5)
    orders = []
    for _ in range(3):
        batches = list(loader)
        assert [b.num_graphs for b in batches] == [5, 5, 3]
        for batch in batches:
            assert_matches_pyg(batch, Batch.from_data_list([data[i] for i in graph_ids(batch)]))
        order = [i for batch in batches for i in graph_ids(batch)]
        assert sorted(order) == sorted(indices.tolist())
        orders.append(order)
    assert orders[0] != orders[1] and orders[1] != orders[2] and orders[0] != orders[2]
    assert orders[0] != indices.tolist()


def test_no_shuffle_keeps_the_given_order():
    store = GraphStore.from_columns(random_columns(9, num_graphs=12))
    indices = torch.tensor([11, 0, 5, 6, 2, 9, 1])
    loader = GraphLoader(store, indices, batch_size=3)
    assert epoch_ids(loader) == [[11, 0, 5], [6, 2, 9], [1]]
    assert epoch_ids(loader) == [[11, 0, 5], [6, 2, 9], [1]]


def test_shuffle_without_generator_or_bad_batch_size_raises():
    store = GraphStore.from_columns(random_columns(10))
    with pytest.raises(ValueError, match="Generator"):
        GraphLoader(store, torch.arange(5), 2, shuffle=True)
    with pytest.raises(ValueError, match="batch_size"):
        GraphLoader(store, torch.arange(5), 0)


@pytest.mark.parametrize(("num", "batch_size"), [(23, 4), (24, 4), (1, 4), (7, 7), (7, 1), (5, 100)])
def test_length_and_last_batch(num, batch_size):
    store = GraphStore.from_columns(random_columns(11, num_graphs=25))
    loader = shuffled_loader(store, torch.arange(num), 0, batch_size=batch_size)
    sizes = [batch.num_graphs for batch in loader]
    assert len(loader) == math.ceil(num / batch_size) == len(sizes)
    assert sizes[:-1] == [batch_size] * (len(sizes) - 1)
    assert sizes[-1] == num - batch_size * (len(sizes) - 1)
    assert sum(sizes) == num


# ------------------------------------------------------------------------------------------ model_dtypes


def test_model_dtypes():
    columns = random_columns(12, num_graphs=6)
    columns.node["half"] = np.random.default_rng(0).normal(size=int(columns.num_nodes.sum())).astype(np.float16)
    columns.node["code"] = np.arange(int(columns.num_nodes.sum()), dtype=np.uint8)
    columns.edge["weight"] = np.linspace(0, 1, int(columns.num_edges.sum()), dtype=np.float64)
    columns.graph["value"] = np.random.default_rng(1).normal(size=(6, 2)).astype(np.float64)
    columns.graph["count"] = np.arange(6, dtype=np.int32)
    store = GraphStore.from_columns(columns)
    converted = model_dtypes(store)

    expected = {
        ("node", "x"): torch.int64, ("node", "half"): torch.float32, ("node", "code"): torch.int64,
        ("edge", "edge_attr"): torch.float32, ("edge", "weight"): torch.float32,
        ("graph", "y"): torch.int64, ("graph", "value"): torch.float32, ("graph", "count"): torch.int64,
    }
    assert {(level, name) for level in ("node", "edge", "graph") for name in getattr(converted, level)} == set(
        expected)
    for (level, name), dtype in expected.items():
        new, old = getattr(converted, level)[name], getattr(store, level)[name]
        assert new.dtype == dtype
        assert torch.equal(new, old.to(dtype))
    assert converted.node["x"].dtype == torch.int64 and store.node["x"].dtype == torch.int16  # original kept
    assert store.graph["value"].dtype == torch.float64
    assert converted.edge_index.dtype == torch.int32
    assert torch.equal(converted.edge_index, store.edge_index)
    assert torch.equal(converted.node_ptr, store.node_ptr) and torch.equal(converted.edge_ptr, store.edge_ptr)

    batch = GraphLoader(converted, torch.arange(6), 6).collate(torch.tensor([4, 1]))
    assert batch.x.dtype == torch.int64 and batch.y.dtype == torch.int64
    assert batch.edge_attr.dtype == torch.float32 and batch.edge_index.dtype == torch.int64
