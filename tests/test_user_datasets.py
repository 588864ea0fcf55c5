"""Datasets from outside the package: generator ``pyg`` (any PyG dataset class), generator ``graph_file`` (a ``.pt``
list of PyG ``Data`` or a Parquet file in the store's columns) and split scheme ``file`` (the user's folds).

Independent checks: the converted store is compared with the PyG objects' own per-graph tensors (``dataset[i]``,
not the collated tensors the converter reads); PyG's Planetoid on the real Cora/CiteSeer files is compared with
gnnbench's own ``planetoid`` generator on the same files; every bad file and every bad split file ends in one line
and writes nothing.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import torch.serialization
import yaml
from torch_geometric.data import Data, Dataset, HeteroData, InMemoryDataset
from torch_geometric.datasets import FakeDataset, KarateClub

from gnnbench.cli import main
from gnnbench.data import graph_import as gf
from gnnbench.data.generators import generate, get_generator, resolve_params
from gnnbench.data.generators import pyg as pyg_generator
from gnnbench.data.meta import read_dataset
from gnnbench.data.store import read_graph_columns
from gnnbench.errors import ConfigError, DataError
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.splits import make_splits, read_splits
from gnnbench.suite import load_suite, load_suite_file
from gnnbench.user_split import read_folds

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real" / "planetoid"
needs_planetoid = pytest.mark.skipif(not (REAL / "cora" / "raw").is_dir() or not (REAL / "citeseer" / "raw").is_dir(),
                                     reason="real Planetoid files not available (../shared/data/real is absent)")
FAKE = {"class": "FakeDataset", "args": {"num_graphs": 12, "avg_num_nodes": 9, "avg_degree": 3.0, "num_channels": 5,
                                         "edge_dim": 3, "num_classes": 4}}


def seeded_pyg(cls, seed: int, **args):
    """The class constructed under the seeding the generator documents (torch, NumPy and Python seeded)."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)
    return cls(**args)


def graph_of(columns, i: int) -> dict:
    return columns.graph_at(i)


def assert_same_as_pyg(columns, graphs: list[Data]) -> None:
    """Every graph of the store equals the PyG graph's own tensors (edges, x, edge_attr, y)."""
    assert columns.num_graphs == len(graphs)
    assert columns.num_nodes.tolist() == [g.num_nodes for g in graphs]
    assert columns.num_edges.tolist() == [g.num_edges for g in graphs]
    for i, g in enumerate(graphs):
        got = graph_of(columns, i)
        assert np.array_equal(np.stack([got["src"], got["dst"]]), g.edge_index.numpy())
        if g.x is not None:
            x = g.x.numpy()
            assert np.array_equal(got["x"], x if x.dtype.kind == "f" else x.reshape(-1))
        if g.edge_attr is not None:
            attr = g.edge_attr.numpy()
            assert np.array_equal(got["edge_attr"], attr.reshape(len(got["src"]), -1) if attr.dtype.kind == "f"
                                  else attr.reshape(-1))
        assert np.array_equal(np.asarray(got["y"]).reshape(-1), g.y.numpy().reshape(-1))


def one_line(capsys, *args) -> tuple[int, str]:
    """Run the command in this process; (exit status, its only stderr line)."""
    capsys.readouterr()
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    return status, lines[0]


# ------------------------------------------------------------------------------------------------------ generator pyg
def test_fake_dataset_converts_to_the_pyg_objects_own_tensors(tmp_path):
    columns, meta = generate("pyg", "FAKE", FAKE, 7, raw_dir=tmp_path)
    dataset = seeded_pyg(FakeDataset, 7, **FAKE["args"])
    assert_same_as_pyg(columns, [dataset[i] for i in range(len(dataset))])
    assert meta.task == "graph_classification" and meta.loss == "cross_entropy"
    assert meta.num_graphs == 12 and meta.num_outputs == int(dataset._data.y.max()) + 1
    assert (meta.node_features.kind, meta.node_features.size) == ("continuous", 5)
    assert (meta.edge_features.kind, meta.edge_features.size) == ("continuous", 3)
    assert columns.graph["y"].dtype == np.int16 and columns.node["x"].dtype == np.float32
    assert meta.split_sizes is None and get_generator("pyg").default_split(resolve_params(
        get_generator("pyg"), FAKE, "p")) == {"scheme": "stratified_kfold"}


def test_pyg_conversion_is_seeded_reproducible_and_leaves_the_global_generators_alone(tmp_path):
    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    first, _ = generate("pyg", "FAKE", FAKE, 7, raw_dir=tmp_path)
    assert torch.equal(torch.rand(3), expected_next)  # the caller's torch stream continues where it was
    again, _ = generate("pyg", "FAKE", FAKE, 7, raw_dir=tmp_path)
    other, _ = generate("pyg", "FAKE", FAKE, 8, raw_dir=tmp_path)
    assert np.array_equal(first.node["x"], again.node["x"]) and np.array_equal(first.src, again.src)
    assert first.node["x"].shape != other.node["x"].shape or not np.array_equal(first.node["x"], other.node["x"])


def test_in_memory_datasets_are_converted_from_their_collated_tensors(tmp_path, monkeypatch):
    def per_graph(*args, **kwargs):
        raise AssertionError("an InMemoryDataset must not be converted graph by graph")

    monkeypatch.setattr(pyg_generator, "collate_graphs", per_graph)
    columns, _ = generate("pyg", "FAKE", FAKE, 7, raw_dir=tmp_path)
    assert columns.num_graphs == 12


def test_karate_club_is_one_graph_for_node_classification(tmp_path):
    columns, meta = generate("pyg", "KARATE", {"class": "torch_geometric.datasets.KarateClub"}, 0, raw_dir=tmp_path)
    data = KarateClub()[0]
    assert_same_as_pyg(columns, [data])
    assert (meta.task, meta.num_graphs, meta.num_outputs, meta.transductive) == ("node_classification", 1, 4, True)
    assert columns.num_nodes.tolist() == [34] and columns.num_edges.tolist() == [156]
    # KarateClub has a train_mask only: no complete split, so none is stored and random node splits are the default
    assert "split" not in columns.node and meta.split_sizes is None
    assert any("no val_mask, test_mask" in step for step in meta.source["preprocessing"])
    params = resolve_params(get_generator("pyg"), {"class": "KarateClub"}, "p")
    assert get_generator("pyg").default_split(params) == {"scheme": "random_per_class"}


def test_node_labels_over_many_graphs_and_the_task_override(tmp_path):
    node_task = {"class": "FakeDataset", "args": {**FAKE["args"], "task": "node"}}
    columns, meta = generate("pyg", "NODES", node_task, 3, raw_dir=tmp_path)
    dataset = seeded_pyg(FakeDataset, 3, **node_task["args"])
    assert_same_as_pyg(columns, [dataset[i] for i in range(len(dataset))])
    assert (meta.task, meta.num_graphs, meta.transductive) == ("node_classification", 12, False)
    assert columns.node["y"].dtype == np.int16 and "y" not in columns.graph

    regression, meta = generate("pyg", "REG", {**FAKE, "task": "graph_regression"}, 7, raw_dir=tmp_path)
    labels = seeded_pyg(FakeDataset, 7, **FAKE["args"])._data.y.numpy()
    assert (meta.task, meta.loss, meta.metric, meta.num_outputs) == ("graph_regression", "l1", "mae", 1)
    assert regression.graph["y"].dtype == np.float32 and np.array_equal(regression.graph["y"], labels)
    with pytest.raises(DataError, match=r"task node_classification needs one label per node, but 'y' has one per "
                                        r"graph; set task: graph_classification"):
        generate("pyg", "BAD", {**FAKE, "task": "node_classification"}, 7, raw_dir=tmp_path)


class PartDataset(InMemoryDataset):
    """Offline stand-in for a class whose constructor selects a part (``split=``): 6 / 2 / 3 graphs whose label is
    the part's index and whose node count tells them apart."""

    SIZES = {"train": 6, "val": 2, "test": 3}

    def __init__(self, root: str, split: str = "train") -> None:
        self.split = split
        super().__init__(root)
        code = list(self.SIZES).index(split)
        graphs = [Data(x=torch.full((2 + i, 2), float(code)), edge_index=torch.tensor([[0, 1], [1, 0]]),
                       y=torch.tensor([code % 2])) for i in range(self.SIZES[split])]
        self.data, self.slices = self.collate(graphs)

    @property
    def raw_file_names(self) -> list[str]:
        return []

    @property
    def processed_file_names(self) -> list[str]:
        return []

    def download(self) -> None:
        pass

    def process(self) -> None:
        pass


class OnDisk(Dataset):
    """A dataset that is not in memory: converted graph by graph (the fallback)."""

    def __init__(self) -> None:
        super().__init__(None)

    def len(self) -> int:
        return 5

    def get(self, i: int) -> Data:
        return Data(x=torch.arange(3 + i, dtype=torch.long)[:, None] % 4, edge_index=torch.tensor([[0, 2], [2, 1]]),
                    edge_attr=torch.tensor([[0.5], [1.5]]), y=torch.tensor([[float(i), -float(i)]]))


def test_parts_named_by_splits_become_the_given_split(tmp_path):
    params = {"class": "test_user_datasets:PartDataset",
              "splits": {"train": {"split": "train"}, "val": {"split": "val"}, "test": {"split": "test"}}}
    columns, meta = generate("pyg", "PARTS", params, 0, raw_dir=tmp_path)
    assert meta.split_sizes == {"train": 6, "val": 2, "test": 3}
    assert columns.graph["split"].tolist() == [0] * 6 + [1] * 2 + [2] * 3
    assert columns.num_nodes.tolist() == [2, 3, 4, 5, 6, 7, 2, 3, 2, 3, 4]
    assert columns.node["x"][columns.node_ptr[6], 0] == 1.0 and columns.node["x"][-1, 0] == 2.0  # val, test parts
    assert get_generator("pyg").default_split(resolve_params(get_generator("pyg"), params, "p")) == {"scheme": "given"}
    assert (tmp_path / "pyg" / "PartDataset").is_dir()  # root = <raw_dir>/pyg/<Class>


def test_a_dataset_that_is_not_in_memory_is_converted_graph_by_graph(tmp_path):
    columns, meta = generate("pyg", "DISK", {"class": "test_user_datasets.OnDisk"}, 0, raw_dir=tmp_path)
    assert_same_as_pyg(columns, [OnDisk()[i] for i in range(5)])
    assert (meta.node_features.kind, meta.node_features.size) == ("categorical", 4)  # one integer column
    assert columns.node["x"].dtype == np.int16 and columns.node["x"].ndim == 1
    assert (meta.task, meta.num_outputs) == ("graph_regression", 2)  # float (1, 2) per graph: two targets
    assert columns.graph["y"].shape == (5, 2)


@pytest.mark.parametrize("params, message", [
    ({"class": "NoSuchDataset"}, "datasets.X.params.class: module torch_geometric.datasets has no NoSuchDataset; fix "
                                 "the class name"),
    ({"class": "no_such_module:Thing"}, "datasets.X.params.class: cannot import no_such_module (ModuleNotFoundError: "
                                        "No module named 'no_such_module'); install the package or fix the class path"),
    ({"class": "torch_geometric.data.Data"}, "datasets.X.params.class: torch_geometric.data.Data is not a "
                                             "torch_geometric.data.Dataset subclass; name a PyG dataset class"),
    ({"class": "Planetoid", "args": {"name": "Cora", "root": "/tmp"}}, "datasets.X.params.args.root: not accepted "
                                                                      "(gnnbench sets it to resources/raw/pyg/<Class>);"
                                                                      " remove it"),
    ({"class": "FakeDataset", "splits": {"train": {}}}, "datasets.X.params.splits: expected a mapping train / val / "
                                                        "test -> constructor arguments"),
    ({"class": "FakeDataset", "task": "link_prediction"}, "datasets.X.params.task: 'link_prediction' is not a task"),
    ({"args": {}}, "datasets.X.params.class: generator pyg needs the dataset class"),
])
def test_pyg_config_errors_are_one_line_before_anything_is_constructed(params, message):
    with pytest.raises(ConfigError) as info:
        load_suite({"datasets": {"X": {"generator": "pyg", "params": params}},
                    "benchmarks": {"X": {"models": {"GCN": {"model": "GCN", "budget": 100000, "layers": 4}},
                                         "seeds": [1]}}})
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_a_failing_constructor_is_one_line_naming_the_class(tmp_path, capsys):
    status, line = one_line(capsys, "generate", "pyg", "--name", "X", "--set", "class=KarateClub", "--set",
                            "args={no_such_argument: 1}", "--out", tmp_path / "X")
    assert status == 1
    assert line.startswith("gnnbench: error: PyG dataset KarateClub(no_such_argument=1) failed (TypeError: ")
    assert "fix params.args" in line and not (tmp_path / "X").exists()


@needs_planetoid
@pytest.mark.parametrize("name, pyg_name", [("cora", "Cora"), ("citeseer", "CiteSeer")])
def test_planetoid_through_pyg_equals_the_planetoid_generator(tmp_path, name, pyg_name):
    """PyG's Planetoid and gnnbench's planetoid generator (standardize: false) read the same eight files. Equal:
    nodes, features, the public split, the labels of every labelled node, every edge between two distinct nodes.
    Different, as documented: gnnbench keeps the self loops of the graph file once, PyG drops them (CiteSeer: 124;
    Cora has none); CiteSeer's 15 nodes named by no file are unlabelled (-1) in gnnbench, class 0 in PyG."""
    shutil.copytree(REAL / name / "raw", tmp_path / "raw" / "pyg" / "Planetoid" / pyg_name / "raw")
    shutil.copytree(REAL / name / "raw", tmp_path / "raw" / "planetoid" / name)
    ours, ours_meta = generate("planetoid", "A", {"name": name, "standardize": False}, 0, raw_dir=tmp_path / "raw")
    theirs, meta = generate("pyg", "B", {"class": "Planetoid", "args": {"name": pyg_name}}, 0,
                            raw_dir=tmp_path / "raw")
    assert meta.task == "node_classification" and meta.transductive and meta.split_sizes == ours_meta.split_sizes
    assert ours.num_nodes.tolist() == theirs.num_nodes.tolist() == [{"cora": 2708, "citeseer": 3327}[name]]
    assert np.array_equal(ours.sparse["x"].to_dense(), theirs.node["x"])
    assert np.array_equal(ours.node["split"], theirs.node["split"])
    labelled = ours.node["y"] >= 0
    assert np.array_equal(ours.node["y"][labelled], theirs.node["y"][labelled])
    assert (~labelled).sum() == {"cora": 0, "citeseer": 15}[name] and (theirs.node["y"][~labelled] == 0).all()
    loops = ours.src == ours.dst
    assert loops.sum() == {"cora": 0, "citeseer": 124}[name] and not (theirs.src == theirs.dst).any()
    ours_edges = set(zip(ours.src[~loops].tolist(), ours.dst[~loops].tolist(), strict=True))
    assert ours_edges == set(zip(theirs.src.tolist(), theirs.dst.tolist(), strict=True))
    assert theirs.num_edges[0] == len(ours_edges)  # no duplicates either
    if name == "cora":  # the pyg dataset's own split runs through split scheme given like the Planetoid split
        assert meta.num_outputs == 7 and meta.node_features.size == 1433


# ---------------------------------------------------------------------------------------------- generator graph_file
def make_graphs() -> list[Data]:
    generator = torch.Generator().manual_seed(0)
    graphs = []
    for i, n in enumerate((4, 6, 3, 5)):
        edges = torch.randint(0, n, (2, 2 * n), generator=generator)
        graphs.append(Data(x=torch.randn(n, 3, generator=generator), edge_index=edges,
                           edge_attr=torch.randint(0, 5, (2 * n,), generator=generator), y=torch.tensor([i % 2]),
                           name=f"g{i}"))
    return graphs


def test_a_pt_list_round_trips_through_parquet_and_equals_the_data(tmp_path):
    graphs = make_graphs()
    torch.save(graphs, tmp_path / "graphs.pt")
    from_pt, meta = generate("graph_file", "PT", {"path": str(tmp_path / "graphs.pt")}, 0)
    assert_same_as_pyg(from_pt, graphs)
    assert (meta.task, meta.num_graphs, meta.num_outputs) == ("graph_classification", 4, 2)
    assert (meta.edge_features.kind, meta.edge_features.size) == ("categorical", 5)  # integer ids ≥ 0
    assert any("ignored attributes: name" in step for step in meta.source["preprocessing"])
    assert len(meta.source["file_sha256"]) == 64

    summary = gf.write_graphs(tmp_path / "graphs.parquet", graphs)
    assert summary.num_graphs == 4
    from_parquet, meta2 = generate("graph_file", "PQ", {"path": str(tmp_path / "graphs.parquet")}, 0)
    for group in ("node", "edge", "graph"):
        left, right = getattr(from_pt, group), getattr(from_parquet, group)
        assert left.keys() == right.keys()
        for key in left:
            assert left[key].dtype == right[key].dtype and np.array_equal(left[key], right[key])
    assert np.array_equal(from_pt.src, from_parquet.src) and meta2.edge_features == meta.edge_features

    # the same graphs as a plain Parquet file (pandas style: lists of lists, no gnnbench metadata), read by column name
    table = pa.table({"num_nodes": [g.num_nodes for g in graphs],
                      "src": [g.edge_index[0].tolist() for g in graphs],
                      "dst": [g.edge_index[1].tolist() for g in graphs],
                      "x": [g.x.tolist() for g in graphs], "edge_attr": [g.edge_attr.tolist() for g in graphs],
                      "y": [int(g.y) for g in graphs], "comment": ["a", "b", "c", "d"]})
    pq.write_table(table, tmp_path / "plain.parquet")
    plain, meta3 = generate("graph_file", "PLAIN", {"path": str(tmp_path / "plain.parquet")}, 0)
    assert_same_as_pyg(plain, graphs)
    assert any("ignored columns: comment" in step for step in meta3.source["preprocessing"])


def test_one_data_in_a_pt_file_and_a_gnnbench_store_as_graph_file(tmp_path):
    data = KarateClub()[0]
    data.val_mask = torch.zeros(34, dtype=torch.bool)
    data.val_mask[[5, 6]] = True
    data.test_mask = ~(data.train_mask | data.val_mask)
    torch.save(data, tmp_path / "karate.pt")
    out = tmp_path / "datasets" / "KARATE"
    meta = generate_dataset("graph_file", "KARATE", {"path": str(tmp_path / "karate.pt")}, 0, out)
    assert meta.split_sizes == {"train": 4, "val": 2, "test": 28} and meta.transductive
    written = read_graph_columns(out / "graphs.parquet")
    assert written.node["split"][data.val_mask.numpy()].tolist() == [1, 1]
    # a store gnnbench wrote is itself a graph file: same columns back
    again, meta2 = generate("graph_file", "AGAIN", {"path": str(out / "graphs.parquet")}, 0)
    assert meta2.split_sizes == meta.split_sizes
    for key in written.node:
        assert np.array_equal(written.node[key], again.node[key])


@needs_planetoid
def test_a_store_with_sparse_features_round_trips_as_graph_file(tmp_path):
    shutil.copytree(REAL / "cora" / "raw", tmp_path / "raw" / "planetoid" / "cora")
    out = tmp_path / "CORA"
    generate_dataset("planetoid", "CORA", {"name": "cora", "standardize": False}, 0, out, raw_dir=tmp_path / "raw")
    stored = read_graph_columns(out / "graphs.parquet")
    again, meta = generate("graph_file", "CORA2", {"path": str(out / "graphs.parquet")}, 0)
    assert meta.node_features.sparse and meta.node_features.size == 1433 and meta.split_sizes["train"] == 140
    assert np.array_equal(again.sparse["x"].indices, stored.sparse["x"].indices)
    assert np.array_equal(again.sparse["x"].values, stored.sparse["x"].values)
    assert np.array_equal(again.src, stored.src) and np.array_equal(again.node["y"], stored.node["y"])


class Payload:
    """Unpickling this would create ``marker`` (``os.system("touch ...")``)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("content, named", [
    ("payload", "posix.system"),
    ("payload_in_list", "posix.system"),
    ("hetero", "torch_geometric.data.hetero_data.HeteroData"),  # on PyG's process-wide allow-list, not on ours
])
def test_a_hostile_pt_is_refused_in_one_line_and_runs_nothing(tmp_path, capsys, content, named):
    marker = tmp_path / "marker"
    obj = {"payload": Payload(marker), "payload_in_list": [make_graphs()[0], Payload(marker)],
           "hetero": [HeteroData()]}[content]
    torch.save(obj, tmp_path / "evil.pt")
    before = set(torch.serialization.get_safe_globals())
    status, line = one_line(capsys, "generate", "graph_file", "--name", "X", "--set", f"path={tmp_path / 'evil.pt'}",
                            "--out", tmp_path / "X")
    assert status == 1
    assert line == (f"gnnbench: error: graph file {tmp_path / 'evil.pt'}: names {named}, which gnnbench does not "
                    "load (a .pt graph file may hold only tensors and torch_geometric.data.Data; nothing else is "
                    "unpickled); save a list of plain Data objects: torch.save([data, ...], path)")
    assert not marker.exists() and not (tmp_path / "X").exists()
    assert set(torch.serialization.get_safe_globals()) == before  # the process-wide allow-list is restored


def bad_pt(path: Path, case: str) -> None:
    good = make_graphs()
    if case == "edge_out_of_range":
        good[2].edge_index[:, 1] = torch.tensor([1, 3])  # graph 2 has 3 nodes
    elif case == "no_labels":
        for g in good:
            del g.y
    elif case == "node_labels_short":
        for g in good:
            g.y = torch.zeros(g.num_nodes - (g is good[1]), dtype=torch.long)
    elif case == "float_edge_index":
        good = [Data(x=torch.ones(2, 1), edge_index=torch.tensor([[0.0], [1.0]]), y=torch.tensor([0]))] * 2
    elif case == "attributes_differ":
        del good[1].edge_attr
    elif case == "not_torch":
        path.write_bytes(b"this is not a torch file")
        return
    torch.save(good, path)


def bad_parquet(path: Path, case: str) -> None:
    columns = {"num_nodes": [2, 3], "src": [[0], [0, 2]], "dst": [[1], [1, 0]], "x": [[1.0, 2.0], [0.0, 1.0, 2.0]],
               "y": [0, 1]}
    if case == "missing_column":
        del columns["dst"]
    elif case == "float_src":
        columns["src"] = [[0.0], [0.0, 2.0]]
    elif case == "x_length":
        columns["x"] = [[1.0, 2.0], [0.0, 1.0]]
    elif case == "x_strings":
        columns["x"] = [["a", "b"], ["c", "d", "e"]]
    elif case == "split_unsorted":
        columns["split"] = [2, 0]
    pq.write_table(pa.table(columns), path)


@pytest.mark.parametrize("suffix, case, message", [
    (".pt", "edge_out_of_range", "edge 1 of graph 2 joins nodes 1 -> 3, outside the graph's 3 nodes (0 .. 2); node "
                                 "ids of edges are local to their graph"),
    (".pt", "no_labels", "has no labels 'y'; give y: one label per graph, per node or per edge"),
    (".pt", "node_labels_short", "'y' has 5 entries in graph 1, which has 6 nodes and 12 edges; give one label per "
                                 "graph (shape (1,) or (1, k) per graph), per node or per edge"),
    (".pt", "float_edge_index", "'edge_index' must be an integer tensor of shape (2, E), got torch.float32 (2, 2); "),
    (".pt", "attributes_differ", "the graphs do not fit together ("),
    (".pt", "not_torch", "is not a readable torch file ("),
    (".parquet", "missing_column", "lacks the column 'dst' (it has: num_nodes, src, x, y); "),
    (".parquet", "float_src", "column 'src' holds float64 (), expected a list of integer node ids per graph; "),
    (".parquet", "x_length", "column 'x' has 2 entries in graph 1, which has 3 nodes; give one entry per node"),
    (".parquet", "x_strings", "column 'x' holds string, expected numbers; "),
    (".parquet", "split_unsorted", "'split' is not sorted: graphs must be stored train first, then val, then test; "
                                   "sort the graphs by split"),
])
def test_each_bad_graph_file_is_one_line_and_writes_nothing(tmp_path, capsys, suffix, case, message):
    path = tmp_path / f"bad{suffix}"
    (bad_pt if suffix == ".pt" else bad_parquet)(path, case)
    out = tmp_path / "datasets" / "X"
    status, line = one_line(capsys, "generate", "graph_file", "--name", "X", "--set", f"path={path}", "--out", out)
    assert status == 1
    assert line.startswith(f"gnnbench: error: graph file {path}: {message}"), line
    assert not out.exists() and not (tmp_path / "datasets").exists()


def test_edge_labels_make_an_edge_classification_dataset(tmp_path):
    graphs = [Data(x=torch.ones(3, 2), edge_index=torch.tensor([[0, 1, 2, 0], [1, 2, 0, 2]]),
                   y=torch.tensor([0, 2, 1, 0]) + i % 2) for i in range(4)]
    torch.save(graphs, tmp_path / "edges.pt")
    columns, meta = generate("graph_file", "E", {"path": str(tmp_path / "edges.pt")}, 0)
    assert (meta.task, meta.num_outputs, meta.loss, meta.metric) == ("edge_classification", 4, "cross_entropy",
                                                                     "accuracy")
    assert columns.edge["y"].tolist() == torch.cat([g.y for g in graphs]).tolist() and "y" not in columns.node


def test_graph_file_config_errors(tmp_path):
    gen = get_generator("graph_file")
    with pytest.raises(ConfigError, match=r"p.path: 'graphs.csv' is neither a .pt file"):
        resolve_params(gen, {"path": "graphs.csv"}, "p")
    with pytest.raises(ConfigError, match="p.path: generator graph_file needs the file"):
        resolve_params(gen, {}, "p")
    with pytest.raises(DataError, match=r"graph file .*missing.pt: does not exist; check the dataset's params.path "
                                        r"\(relative to the suite file\)"):
        generate("graph_file", "X", {"path": str(tmp_path / "missing.pt")}, 0)


# ----------------------------------------------------------------------------------------------- suites and split files
def folds_of(n: int, k: int) -> list[dict]:
    order = np.random.RandomState(0).permutation(n)
    folds = []
    for i in range(k):
        test = np.sort(order[i::k])
        rest = np.setdiff1d(order, test)
        folds.append({"train": rest[: len(rest) * 3 // 4].tolist(), "val": rest[len(rest) * 3 // 4:].tolist(),
                      "test": test.tolist()})
    return folds


def test_a_suite_finds_graph_and_split_files_relative_to_itself_and_splits_by_the_file(tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    torch.save(make_graphs() * 5, project / "graphs.pt")  # 20 graphs
    folds = folds_of(20, 4)
    (project / "folds.json").write_text(json.dumps(folds))
    suite = {"datasets": {"MINE": {"generator": "graph_file", "params": {"path": "graphs.pt"},
                                   "split": {"scheme": "file", "path": "folds.json"}}},
             "benchmarks": {"MINE": {"protocol": "fair-comparison", "models": {"B": "fair_Baseline_chemical"}}}}
    (project / "suite.yaml").write_text(yaml.safe_dump(suite))
    monkeypatch.chdir(tmp_path)  # elsewhere: the paths are the suite file's
    loaded = load_suite_file(project / "suite.yaml")
    spec = loaded.datasets["MINE"]
    assert spec.params["path"] == str(project / "graphs.pt") and spec.split["path"] == str(project / "folds.json")
    assert spec.num_folds == 4 and loaded.benchmarks["MINE"].folds == [0, 1, 2, 3]
    assert loaded.raw_files("MINE") == [str(project / "graphs.pt")]  # inputs of the dataset and split jobs
    assert loaded.split_raw_files("MINE") == [str(project / "folds.json")]

    data_dir = tmp_path / "results" / "datasets" / "MINE"
    generate_dataset(spec.generator, "MINE", spec.params, spec.seed, data_dir)
    split = dict(spec.split)
    make_split_file(data_dir, split.pop("scheme"), split, tmp_path / "splits.json")
    meta, _ = read_dataset(data_dir)
    written = read_splits(tmp_path / "splits.json", meta)
    assert written.folds == folds and written.scheme == "file" and written.level == "graph"
    assert len(written.params["sha256"]) == 64
    assert read_folds(tmp_path / "splits.json", 20, "graph") == folds  # gnnbench's own split file is a split file
    assert main(["splits", str(data_dir), "--scheme", "file", "--path", str(project / "folds.json"), "--out",
                 str(tmp_path / "cli.json")]) == 0
    assert read_splits(tmp_path / "cli.json", meta).folds == folds

    (project / "folds.json").write_text(json.dumps(folds[:1] + [{"train": [0], "val": [1]}]))
    with pytest.raises(DataError, match=r"split file .*folds.json: fold 1 has \['train', 'val'\], expected exactly "
                                        r"the keys train, val, test"):
        load_suite_file(project / "suite.yaml")


@pytest.mark.parametrize("content, message", [
    ("not json", "is not readable JSON ("),
    ([], "expected a non-empty JSON list of folds"),
    ([{"train": [0], "val": [1], "test": [2], "extra": []}], "fold 0 has ['extra', 'test', 'train', 'val'], expected "
                                                             "exactly the keys train, val, test"),
    ([{"train": [0, 1.0], "val": [2], "test": [3]}], "fold 0 train holds 1.0, expected a list of integer graph "
                                                     "indices"),
    ([{"train": [0, True], "val": [2], "test": [3]}], "fold 0 train holds True, expected a list of integer graph "
                                                      "indices"),
    ([{"train": [0], "val": [], "test": [3]}], "fold 0 val is empty; every part needs at least one index"),
    ([{"train": [0, 1], "val": [1], "test": [3]}], "fold 0: graph 1 appears more than once (it is in train and val); "
                                                   "train, val and test must be disjoint"),
    ([{"train": [0, 0], "val": [1], "test": [3]}], "fold 0: graph 0 appears more than once (train lists it twice)"),
    ([{"train": [0], "val": [1], "test": [10]}], "fold 0 names graph 10 (the dataset has 10 graphs: 0 .. 9)"),
    ([{"train": [-1], "val": [1], "test": [2]}], "fold 0 names graph -1 (the dataset has 10 graphs: 0 .. 9)"),
    ({"level": "node", "folds": [{"train": [0], "val": [1], "test": [2]}]}, "holds node indices but the dataset is "
                                                                             "split by graph; give graph indices"),
])
def test_each_bad_split_file_is_one_line(tmp_path, content, message):
    path = tmp_path / "folds.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(DataError) as info:
        read_folds(path, 10, "graph")
    assert str(info.value).startswith(f"split file {path}: {message}") and "\n" not in str(info.value)


def test_node_split_files_name_labelled_nodes_only_and_the_scheme_needs_a_path(tmp_path):
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps([{"train": [0, 1], "val": [2], "test": [4]}]))
    labels = np.array([0, 1, 0, -1, 1])
    assert read_folds(path, level="node", labels=labels) == [{"train": [0, 1], "val": [2], "test": [4]}]
    path.write_text(json.dumps([{"train": [0, 1], "val": [2], "test": [3]}]))
    with pytest.raises(DataError, match=r"fold 0 names node 3, which has no label \(-1\); use labelled nodes only"):
        read_folds(path, level="node", labels=labels)
    with pytest.raises(ConfigError, match=r"datasets.X.split.path: split scheme file needs the JSON file of folds"):
        load_suite({"datasets": {"X": {"generator": "pyg", "params": {"class": "KarateClub"},
                                       "split": {"scheme": "file"}}},
                    "benchmarks": {"X": {"protocol": "pitfalls", "models": {"GCN": "pitfalls_GCN"}}}})


def test_the_protocols_own_split_schemes_work_on_converted_datasets(tmp_path):
    fake, fake_meta = generate("pyg", "FAKE", {**FAKE, "args": {**FAKE["args"], "num_graphs": 40,
                                                                "num_classes": 2}}, 1, raw_dir=tmp_path)
    labels = fake.graph["y"]
    kfold = make_splits(fake_meta, labels, "stratified_kfold", {"folds": 4, "val_fraction": 0.25, "seed": 0})
    tested = np.concatenate([kfold.fold(i)["test"] for i in range(4)])
    assert np.array_equal(np.sort(tested), np.arange(40))  # the test folds partition the graphs
    for i in range(4):
        fold = kfold.fold(i)
        assert np.intersect1d(fold["train"], fold["test"]).size == 0
        counts = np.bincount(labels[fold["test"]], minlength=2)
        assert abs(counts[0] - np.bincount(labels, minlength=2)[0] / 4) <= 1  # stratified

    karate, karate_meta = generate("pyg", "KARATE", {"class": "KarateClub"}, 0, raw_dir=tmp_path)
    per_class = make_splits(karate_meta, karate.node["y"], "random_per_class",
                            {"splits": 3, "train_per_class": 2, "val_per_class": 1, "seed": 2018})
    for i in range(3):
        fold = per_class.fold(i)
        assert np.bincount(karate.node["y"][fold["train"]], minlength=4).tolist() == [2, 2, 2, 2]
        assert np.bincount(karate.node["y"][fold["val"]], minlength=4).tolist() == [1, 1, 1, 1]
        assert sorted(np.concatenate([fold["train"], fold["val"], fold["test"]]).tolist()) == list(range(34))

