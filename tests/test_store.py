"""Parquet graph store: exact round trips, readability by other Arrow tools, errors, atomicity, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from gnnbench.data.store import (
    METADATA_KEY,
    GraphColumns,
    columns_to_table,
    load_graph_store,
    read_graph_columns,
    write_graph_store,
)
from gnnbench.errors import DataError

NODE_COLUMNS = ("x", "feat", "half", "flag")
EDGE_COLUMNS = ("edge_attr", "w")
GRAPH_COLUMNS = ("y", "label", "target")


def random_graphs(seed: int, num_graphs: int = 12) -> list[dict[str, np.ndarray]]:
    """Per-graph arrays; graph 0 has one node and no edges, graph 1 has several nodes and no edges."""
    rng = np.random.default_rng(seed)
    graphs = []
    for i in range(num_graphs):
        n = 1 if i == 0 else int(rng.integers(2, 9))
        e = 0 if i in (0, 1) else int(rng.integers(1, 3 * n))
        graphs.append({
            "num_nodes": n,
            "src": rng.integers(0, n, e).astype(np.int32),
            "dst": rng.integers(0, n, e).astype(np.int32),
            "x": rng.integers(-300, 300, n).astype(np.int16),
            "feat": rng.normal(size=(n, 3)).astype(np.float32),
            "half": rng.normal(size=n).astype(np.float16),
            "flag": rng.random(n) < 0.5,
            "edge_attr": rng.integers(0, 5, e).astype(np.int16),
            "w": rng.normal(size=(e, 2)).astype(np.float32),
            "y": np.float64(rng.normal()),
            "label": np.int64(rng.integers(-(2**40), 2**40)),
            "target": rng.normal(size=4).astype(np.float32),
        })
    return graphs


def to_columns(graphs: list[dict[str, np.ndarray]]) -> GraphColumns:
    """Columnar form of per-graph arrays, built with plain concatenation."""
    return GraphColumns(
        num_nodes=np.array([g["num_nodes"] for g in graphs], dtype=np.int64),
        num_edges=np.array([len(g["src"]) for g in graphs], dtype=np.int64),
        src=np.concatenate([g["src"] for g in graphs]),
        dst=np.concatenate([g["dst"] for g in graphs]),
        node={k: np.concatenate([g[k] for g in graphs]) for k in NODE_COLUMNS},
        edge={k: np.concatenate([g[k] for g in graphs]) for k in EDGE_COLUMNS},
        graph={k: np.stack([g[k] for g in graphs]) for k in GRAPH_COLUMNS},
    )


def assert_arrays_equal(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert np.array_equal(actual, expected)


def assert_columns_equal(actual: GraphColumns, expected: GraphColumns) -> None:
    for name in ("num_nodes", "num_edges", "src", "dst", "node_ptr", "edge_ptr"):
        assert_arrays_equal(getattr(actual, name), getattr(expected, name))
    for level in ("node", "edge", "graph"):
        got, want = getattr(actual, level), getattr(expected, level)
        assert list(got) == list(want)
        for name in want:
            assert_arrays_equal(got[name], want[name])


def assert_data_error(excinfo: pytest.ExceptionInfo, path: Path, *phrases: str) -> None:
    message = str(excinfo.value)
    assert "\n" not in message
    assert str(path) in message
    for phrase in phrases:
        assert phrase in message


# ------------------------------------------------------------------------------------------- round trip


def test_columns_helper_layout():
    columns = to_columns(random_graphs(0))
    columns.validate()
    assert columns.num_graphs == 12
    assert columns.num_nodes[0] == 1 and columns.num_edges[0] == 0 and columns.num_edges[1] == 0
    assert {k: (v.dtype, v.ndim) for k, v in columns.node.items()} == {
        "x": (np.int16, 1), "feat": (np.float32, 2), "half": (np.float16, 1), "flag": (np.bool_, 1)}
    assert {k: (v.dtype, v.ndim) for k, v in columns.graph.items()} == {
        "y": (np.float64, 1), "label": (np.int64, 1), "target": (np.float32, 2)}


@pytest.mark.parametrize("row_group_size", [1024, 5, 1])
def test_round_trip_is_exact(tmp_path, row_group_size):
    graphs = random_graphs(1)
    columns = to_columns(graphs)
    path = tmp_path / "graphs.parquet"
    write_graph_store(path, columns, row_group_size=row_group_size)
    back = read_graph_columns(path)

    assert_columns_equal(back, columns)
    assert back.num_graphs == len(graphs)
    assert_arrays_equal(back.node_ptr, np.concatenate([[0], np.cumsum([g["num_nodes"] for g in graphs])]))
    assert_arrays_equal(back.edge_ptr, np.concatenate([[0], np.cumsum([len(g["src"]) for g in graphs])]))
    for i, graph in enumerate(graphs):
        got = back.graph_at(i)
        assert got["num_nodes"] == graph["num_nodes"]
        for name in ("src", "dst", *NODE_COLUMNS, *EDGE_COLUMNS, *GRAPH_COLUMNS):
            assert_arrays_equal(np.asarray(got[name]), np.asarray(graph[name]))


def test_round_trip_of_empty_store(tmp_path):
    columns = GraphColumns(
        num_nodes=np.zeros(0, np.int64), num_edges=np.zeros(0, np.int64),
        src=np.zeros(0, np.int32), dst=np.zeros(0, np.int32),
        node={"feat": np.zeros((0, 3), np.float32)}, edge={"w": np.zeros(0, np.int16)},
        graph={"y": np.zeros(0, np.float64)},
    )
    path = tmp_path / "empty.parquet"
    write_graph_store(path, columns)
    back = read_graph_columns(path)
    assert_columns_equal(back, columns)
    assert back.num_graphs == 0


def test_store_is_one_row_per_graph_for_arrow_and_pandas(tmp_path):
    graphs = random_graphs(2)
    path = tmp_path / "graphs.parquet"
    write_graph_store(path, to_columns(graphs), row_group_size=4)

    table = pq.read_table(path)
    assert table.num_rows == len(graphs)
    assert table.schema.field("num_nodes").type == pa.int64()
    assert table.schema.field("src").type == pa.large_list(pa.int32())
    assert table.schema.field("feat").type == pa.large_list(pa.list_(pa.float32(), 3))
    assert table.schema.field("target").type == pa.list_(pa.float32(), 4)
    layout = json.loads(table.schema.metadata[METADATA_KEY])
    assert layout == {"format": 1, "node": list(NODE_COLUMNS), "edge": list(EDGE_COLUMNS),
                      "graph": list(GRAPH_COLUMNS)}

    frame = pd.read_parquet(path)
    assert len(frame) == len(graphs)
    assert frame["num_nodes"].tolist() == [g["num_nodes"] for g in graphs]
    for i, graph in enumerate(graphs):
        assert list(frame["src"][i]) == graph["src"].tolist()
        assert list(frame["dst"][i]) == graph["dst"].tolist()
        assert list(frame["x"][i]) == graph["x"].tolist()
        assert len(frame["feat"][i]) == graph["num_nodes"]
        assert len(frame["edge_attr"][i]) == len(graph["src"])
        assert frame["y"][i] == graph["y"]
        assert frame["label"][i] == graph["label"]


def test_load_graph_store_gives_tensors(tmp_path):
    graphs = random_graphs(3)
    columns = to_columns(graphs)
    path = tmp_path / "graphs.parquet"
    write_graph_store(path, columns)
    store = load_graph_store(path)

    counts_n = torch.tensor([g["num_nodes"] for g in graphs])
    counts_e = torch.tensor([len(g["src"]) for g in graphs])
    assert store.node_ptr.dtype == torch.int64 and store.edge_ptr.dtype == torch.int64
    assert torch.equal(store.node_ptr, torch.cat([torch.zeros(1, dtype=torch.int64), counts_n.cumsum(0)]))
    assert torch.equal(store.edge_ptr, torch.cat([torch.zeros(1, dtype=torch.int64), counts_e.cumsum(0)]))
    assert torch.equal(store.num_nodes, counts_n) and torch.equal(store.num_edges, counts_e)
    assert store.num_graphs == len(graphs)

    num_edges = int(counts_e.sum())
    assert store.edge_index.shape == (2, num_edges)
    assert store.edge_index.dtype == torch.int32
    assert np.array_equal(store.edge_index[0].numpy(), columns.src)
    assert np.array_equal(store.edge_index[1].numpy(), columns.dst)

    for level in ("node", "edge", "graph"):
        tensors, arrays = getattr(store, level), getattr(columns, level)
        assert list(tensors) == list(arrays)
        for name, values in arrays.items():
            assert isinstance(tensors[name], torch.Tensor)
            assert_arrays_equal(tensors[name].numpy(), values)
    assert store.node["x"].dtype == torch.int16
    assert store.node["half"].dtype == torch.float16
    assert store.node["flag"].dtype == torch.bool
    assert store.graph["y"].dtype == torch.float64


# ---------------------------------------------------------------------------------------------- errors


def test_missing_file(tmp_path):
    path = tmp_path / "nowhere" / "graphs.parquet"
    with pytest.raises(DataError) as excinfo:
        read_graph_columns(path)
    assert_data_error(excinfo, path, "does not exist", "run snakemake")


def test_truncated_file(tmp_path):
    path = tmp_path / "graphs.parquet"
    write_graph_store(path, to_columns(random_graphs(4)))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError) as excinfo:
        read_graph_columns(path)
    assert_data_error(excinfo, path, "corrupt or truncated", "delete it", "rerun")


def test_garbage_bytes(tmp_path):
    path = tmp_path / "graphs.parquet"
    path.write_bytes(np.random.default_rng(0).bytes(5000))
    with pytest.raises(DataError) as excinfo:
        load_graph_store(path)
    assert_data_error(excinfo, path, "corrupt or truncated", "delete it", "rerun")


def test_parquet_without_gnnbench_metadata(tmp_path):
    path = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"num_nodes": [3, 2], "src": [[0, 1], []], "dst": [[1, 2], []]}), path)
    with pytest.raises(DataError) as excinfo:
        read_graph_columns(path)
    assert_data_error(excinfo, path, "no gnnbench layout metadata", "delete it", "rerun")


def write_tampered(path: Path, columns: GraphColumns, name: str, array: pa.Array) -> None:
    """Write ``columns`` with column ``name`` replaced by ``array``, keeping gnnbench's schema metadata."""
    table = columns_to_table(columns)
    metadata = table.schema.metadata
    table = table.set_column(table.schema.get_field_index(name), name, array)
    pq.write_table(table.replace_schema_metadata(metadata), path)


def test_node_column_lengths_not_matching_num_nodes(tmp_path):
    columns = to_columns(random_graphs(5))
    # Same total number of nodes, but one node moved from graph 2 to graph 3.
    offsets = columns.node_ptr.copy()
    offsets[3] -= 1
    bad = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), pa.array(columns.node["x"]))
    path = tmp_path / "graphs.parquet"
    write_tampered(path, columns, "x", bad)
    assert pq.read_table(path).schema.metadata[METADATA_KEY] == columns_to_table(columns).schema.metadata[
        METADATA_KEY]
    with pytest.raises(DataError) as excinfo:
        read_graph_columns(path)
    assert_data_error(excinfo, path, "'x'", "one entry per node", "delete it", "rerun")


@pytest.mark.parametrize("name", ["dst", "edge_attr"])
def test_edge_column_lengths_not_matching_src(tmp_path, name):
    columns = to_columns(random_graphs(5))
    offsets = columns.edge_ptr.copy()
    offsets[4] += 1  # same total number of edges, one edge moved from graph 4 to graph 3
    values = columns.dst if name == "dst" else columns.edge[name]
    bad = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), pa.array(values))
    path = tmp_path / "graphs.parquet"
    write_tampered(path, columns, name, bad)
    with pytest.raises(DataError) as excinfo:
        read_graph_columns(path)
    assert_data_error(excinfo, path, f"'{name}'", "one entry per edge", "delete it", "rerun")


def test_edge_index_out_of_range(tmp_path):
    graphs = random_graphs(6)
    columns = to_columns(graphs)
    src = columns.src.copy()
    src[columns.edge_ptr[2]] = graphs[2]["num_nodes"]  # first edge of graph 2 points one past its last node
    bad = pa.LargeListArray.from_arrays(pa.array(columns.edge_ptr, pa.int64()), pa.array(src))
    path = tmp_path / "graphs.parquet"
    write_tampered(path, columns, "src", bad)
    with pytest.raises(DataError) as excinfo:
        read_graph_columns(path)
    assert_data_error(excinfo, path, "inconsistent", "outside its graph", "delete it", "rerun")


def test_missing_layout_column_and_wrong_format(tmp_path):
    columns = to_columns(random_graphs(7))
    table = columns_to_table(columns)
    path = tmp_path / "no_feat.parquet"
    pq.write_table(table.drop_columns(["feat"]).replace_schema_metadata(table.schema.metadata), path)
    with pytest.raises(DataError) as excinfo:
        read_graph_columns(path)
    assert_data_error(excinfo, path, "lacks column", "feat", "delete it", "rerun")

    layout = json.loads(table.schema.metadata[METADATA_KEY])
    layout["format"] = 99
    path = tmp_path / "future.parquet"
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps(layout).encode()}), path)
    with pytest.raises(DataError) as excinfo:
        read_graph_columns(path)
    assert_data_error(excinfo, path, "format 99", "delete it", "rerun")


@pytest.mark.parametrize("metadata", [b"{not json", b"\xff\xfe", b"[1, 2]", b'{"format": 1}'])
def test_unreadable_layout_metadata(tmp_path, metadata):
    table = columns_to_table(to_columns(random_graphs(3)))
    path = tmp_path / "bad_meta.parquet"
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: metadata}), path)
    with pytest.raises(DataError) as excinfo:
        read_graph_columns(path)
    assert_data_error(excinfo, path, "unreadable gnnbench layout metadata", "delete it", "rerun")


def test_single_byte_corruption_never_decodes_to_other_values(tmp_path):
    """Page checksums: a flipped byte in the data part is an error, or (in bytes that carry no data, such as
    page statistics) harmless — never silently different values."""
    path = tmp_path / "graphs.parquet"
    columns = to_columns(random_graphs(5, num_graphs=40))
    write_graph_store(path, columns)
    data = path.read_bytes()
    footer = int.from_bytes(data[-8:-4], "little") + 8  # metadata length + length field + magic
    detected = 0
    for position in range(4, len(data) - footer, max(1, (len(data) - footer) // 60)):
        corrupt = bytearray(data)
        corrupt[position] ^= 0x5A
        path.write_bytes(bytes(corrupt))
        try:
            read = read_graph_columns(path)
        except DataError:
            detected += 1
            continue
        assert_columns_equal(read, columns)
    assert detected >= 50


# ------------------------------------------------------------------------------- atomicity, determinism


def failing_write_table(written: list[Path]):
    def write_table(table, where, **kwargs):
        Path(where).write_bytes(b"PAR1 half a file")
        written.append(Path(where))
        raise OSError("simulated disk full")

    return write_table


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    written: list[Path] = []
    monkeypatch.setattr(pq, "write_table", failing_write_table(written))
    target = tmp_path / "graphs.parquet"
    with pytest.raises(OSError, match="simulated disk full"):
        write_graph_store(target, to_columns(random_graphs(8)))
    assert len(written) == 1 and written[0].parent == tmp_path and written[0] != target
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_failed_write_keeps_existing_target(tmp_path, monkeypatch):
    target = tmp_path / "graphs.parquet"
    write_graph_store(target, to_columns(random_graphs(9)))
    before = target.read_bytes()
    written: list[Path] = []
    monkeypatch.setattr(pq, "write_table", failing_write_table(written))
    with pytest.raises(OSError, match="simulated disk full"):
        write_graph_store(target, to_columns(random_graphs(10)))
    assert len(written) == 1 and written[0] != target
    assert target.read_bytes() == before
    assert list(tmp_path.iterdir()) == [target]


def test_successful_write_replaces_target_and_leaves_no_temp(tmp_path):
    target = tmp_path / "graphs.parquet"
    write_graph_store(target, to_columns(random_graphs(11)))
    replacement = to_columns(random_graphs(12, num_graphs=5))
    write_graph_store(target, replacement)
    assert list(tmp_path.iterdir()) == [target]
    assert_columns_equal(read_graph_columns(target), replacement)


def test_same_input_gives_identical_bytes(tmp_path):
    columns = to_columns(random_graphs(13))
    write_graph_store(tmp_path / "a.parquet", columns)
    write_graph_store(tmp_path / "b.parquet", to_columns(random_graphs(13)))
    write_graph_store(tmp_path / "c.parquet", to_columns(random_graphs(14)))
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert (tmp_path / "a.parquet").read_bytes() != (tmp_path / "c.parquet").read_bytes()


# ------------------------------------------------------------------------------ GraphColumns in memory


def _bad(change):
    def make() -> GraphColumns:
        columns = to_columns(random_graphs(15))
        change(columns)
        return columns

    return make


@pytest.mark.parametrize("make", [
    pytest.param(_bad(lambda c: setattr(c, "src", c.src[:-1])), id="src-too-short"),
    pytest.param(_bad(lambda c: setattr(c, "dst", np.append(c.dst, 0).astype(np.int32))), id="dst-too-long"),
    pytest.param(_bad(lambda c: c.node.update(x=c.node["x"][:-1])), id="node-length"),
    pytest.param(_bad(lambda c: c.edge.update(w=c.edge["w"][1:])), id="edge-length"),
    pytest.param(_bad(lambda c: c.graph.update(y=c.graph["y"][:-2])), id="graph-length"),
    pytest.param(_bad(lambda c: c.node.update(feat=c.node["feat"][:, :, None])), id="3-d"),
    pytest.param(_bad(lambda c: c.node.update(x=c.node["x"].astype(np.complex64))), id="complex-dtype"),
    pytest.param(_bad(lambda c: c.graph.update(y=c.graph["y"].astype(object))), id="object-dtype"),
    pytest.param(_bad(lambda c: c.src.__setitem__(c.edge_ptr[2], c.num_nodes[2])), id="src-outside-graph"),
    pytest.param(_bad(lambda c: c.dst.__setitem__(c.edge_ptr[3], -1)), id="negative-dst"),
])
def test_validate_rejects_inconsistent_columns(tmp_path, make):
    with pytest.raises(ValueError):
        make().validate()
    with pytest.raises(ValueError):
        write_graph_store(tmp_path / "bad.parquet", make())
    assert list(tmp_path.iterdir()) == []


def test_validate_accepts_edge_to_last_node():
    graphs = random_graphs(16)
    graphs[3]["src"][0] = graphs[3]["num_nodes"] - 1
    to_columns(graphs).validate()


def test_duplicate_column_name_is_rejected(tmp_path):
    columns = to_columns(random_graphs(17))
    columns.edge["feat"] = columns.edge["w"]
    with pytest.raises(ValueError, match="'feat'"):
        write_graph_store(tmp_path / "dup.parquet", columns)
    columns = to_columns(random_graphs(17))
    columns.node["src"] = columns.node["x"]
    with pytest.raises(ValueError, match="'src'"):
        write_graph_store(tmp_path / "dup.parquet", columns)
    assert list(tmp_path.iterdir()) == []


def test_graph_column_may_share_a_node_column_name(tmp_path):
    """Multitask datasets have node-level and graph-level targets both called ``y``."""
    columns = to_columns(random_graphs(17))
    columns.graph["x"] = columns.graph["y"] * 2
    write_graph_store(tmp_path / "both.parquet", columns)
    back = read_graph_columns(tmp_path / "both.parquet")
    np.testing.assert_array_equal(back.graph["x"], columns.graph["x"])
    np.testing.assert_array_equal(back.node["x"], columns.node["x"])


def test_concat_and_graph_at():
    graphs = random_graphs(18, num_graphs=10)
    parts = [to_columns(graphs[:3]), to_columns(graphs[3:4]), to_columns(graphs[4:])]
    joined = GraphColumns.concat(parts)
    assert_columns_equal(joined, to_columns(graphs))
    assert joined.num_graphs == 10
    for i, graph in enumerate(graphs):
        got = joined.graph_at(i)
        assert set(got) == set(graph)
        assert got["num_nodes"] == graph["num_nodes"]
        for name, value in graph.items():
            if name != "num_nodes":
                assert_arrays_equal(np.asarray(got[name]), np.asarray(value))
    # graph_at of a later part refers to that part's own (local) edge indices and rows
    assert_arrays_equal(joined.graph_at(3)["feat"], parts[1].graph_at(0)["feat"])
    assert_arrays_equal(joined.graph_at(9)["src"], parts[2].graph_at(5)["src"])


# --------------------------------------------------------------------------------------- sparse node columns


def random_sparse(num_rows: int, width: int, seed: int, density: float = 0.3):
    """A scipy CSR matrix with some empty rows (independent reference for SparseRows)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    dense = (rng.random((num_rows, width)) < density) * rng.normal(size=(num_rows, width))
    dense[::4] = 0.0  # every fourth row empty
    return sp.csr_matrix(dense.astype(np.float32))


def with_sparse(seed: int, num_graphs: int = 9) -> GraphColumns:
    from gnnbench.data.store import SparseRows

    columns = to_columns(random_graphs(seed, num_graphs))
    n = int(columns.num_nodes.sum())
    columns.sparse = {"bow": SparseRows.from_scipy(random_sparse(n, 11, seed)),
                      "tf": SparseRows.from_scipy(random_sparse(n, 3, seed + 1, density=0.6))}
    return columns


def test_sparse_rows_conversions_match_scipy():
    from gnnbench.data.store import SparseRows

    matrix = random_sparse(13, 7, 0)
    rows = SparseRows.from_scipy(matrix)
    rows.validate(13)
    assert rows.indptr.dtype == np.int64 and rows.indices.dtype == np.int32 and rows.values.dtype == np.float32
    assert rows.width == 7 and rows.num_rows == 13 and rows.nnz == matrix.nnz
    np.testing.assert_array_equal(rows.to_dense(), matrix.toarray())
    t = rows.to_torch()
    assert t.layout == torch.sparse_csr and t.shape == (13, 7) and t.dtype == torch.float32
    assert t.crow_indices().dtype == torch.int64 and t.col_indices().dtype == torch.int64
    np.testing.assert_array_equal(t.to_dense().numpy(), matrix.toarray())
    np.testing.assert_array_equal(rows.rows(3, 9).to_dense(), matrix.toarray()[3:9])
    # explicit zeros and unsorted duplicates in the input are canonicalised
    import scipy.sparse as sp

    messy = sp.csr_matrix((np.array([2.0, 0.0, 1.0, 3.0], np.float32), np.array([2, 0, 2, 1]), np.array([0, 3, 4])),
                          shape=(2, 3))
    canon = SparseRows.from_scipy(messy)
    assert canon.indices.tolist() == [2, 1] and canon.values.tolist() == [3.0, 3.0]
    assert canon.indptr.tolist() == [0, 1, 2]


@pytest.mark.parametrize("row_group_size", [1024, 2])
def test_sparse_round_trip_is_exact(tmp_path, row_group_size):
    columns = with_sparse(20)
    path = tmp_path / "graphs.parquet"
    write_graph_store(path, columns, row_group_size=row_group_size)
    back = read_graph_columns(path)
    assert_columns_equal(back, columns)
    assert list(back.sparse) == ["bow", "tf"]
    for name, want in columns.sparse.items():
        got = back.sparse[name]
        assert got.width == want.width
        for attr in ("indptr", "indices", "values"):
            assert_arrays_equal(getattr(got, attr), getattr(want, attr))
    schema = pq.read_table(path).schema
    layout = json.loads(schema.metadata[METADATA_KEY])
    assert layout["sparse"] == {"bow": 11, "tf": 3} and layout["node"] == list(NODE_COLUMNS)
    assert schema.field("bow.indices").type == pa.large_list(pa.int32())
    assert schema.field("bow.values").type == pa.large_list(pa.float32())
    assert schema.field("bow.row_nnz").type == pa.large_list(pa.int32())
    # one list entry per nonzero of each graph / per node, readable by pandas
    frame = pd.read_parquet(path)
    dense = columns.sparse["bow"].to_dense()
    ptr = columns.node_ptr
    for i in range(columns.num_graphs):
        block = dense[ptr[i]:ptr[i + 1]]
        assert list(frame["bow.row_nnz"][i]) == np.count_nonzero(block, axis=1).tolist()
        assert list(frame["bow.indices"][i]) == np.nonzero(block)[1].tolist()
        np.testing.assert_array_equal(np.asarray(frame["bow.values"][i], np.float32), block[np.nonzero(block)])


def test_store_without_sparse_columns_has_no_sparse_key(tmp_path):
    path = tmp_path / "graphs.parquet"
    write_graph_store(path, to_columns(random_graphs(21)))
    assert "sparse" not in json.loads(pq.read_table(path).schema.metadata[METADATA_KEY])
    assert read_graph_columns(path).sparse == {}


def test_sparse_graph_at_concat_and_densified_store(tmp_path):
    columns = with_sparse(22)
    dense = columns.sparse["bow"].to_dense()
    ptr = columns.node_ptr
    for i in range(columns.num_graphs):
        np.testing.assert_array_equal(columns.graph_at(i)["bow"].to_dense(), dense[ptr[i]:ptr[i + 1]])
    graphs = random_graphs(22, 9)
    from gnnbench.data.store import SparseRows

    parts = []
    for lo, hi in ((0, 4), (4, 5), (5, 9)):
        part = to_columns(graphs[lo:hi])
        part.sparse = {k: m.rows(int(ptr[lo]), int(ptr[hi])) for k, m in columns.sparse.items()}
        parts.append(part)
    joined = GraphColumns.concat(parts)
    for name, want in columns.sparse.items():
        for attr in ("indptr", "indices", "values"):
            assert_arrays_equal(getattr(joined.sparse[name], attr), getattr(want, attr))
    with pytest.raises(ValueError, match="different widths"):
        SparseRows.concat([columns.sparse["bow"], columns.sparse["tf"]])
    path = tmp_path / "graphs.parquet"
    write_graph_store(path, columns)
    store = load_graph_store(path)
    assert store.node["bow"].dtype == torch.float32 and store.node["bow"].shape == (int(ptr[-1]), 11)
    np.testing.assert_array_equal(store.node["bow"].numpy(), dense)
    np.testing.assert_array_equal(store.node["tf"].numpy(), columns.sparse["tf"].to_dense())
    assert set(store.node) == set(NODE_COLUMNS) | {"bow", "tf"} and set(store.sparse) == {"bow", "tf"}


def _sparse_bad(change):
    def make() -> GraphColumns:
        columns = with_sparse(23)
        change(columns.sparse["bow"], columns)
        return columns

    return make


def _swap_first_two(m, _):
    row = int(np.flatnonzero(np.diff(m.indptr) >= 2)[0])
    lo = int(m.indptr[row])
    m.indices[lo], m.indices[lo + 1] = m.indices[lo + 1], m.indices[lo]


def _duplicate(m, _):
    row = int(np.flatnonzero(np.diff(m.indptr) >= 2)[0])
    lo = int(m.indptr[row])
    m.indices[lo + 1] = m.indices[lo]


@pytest.mark.parametrize("make, phrase", [
    pytest.param(_sparse_bad(_swap_first_two), "sorted and unique", id="unsorted"),
    pytest.param(_sparse_bad(_duplicate), "sorted and unique", id="duplicate"),
    pytest.param(_sparse_bad(lambda m, _: m.indices.__setitem__(0, 11)), "outside [0, 11)", id="out-of-range"),
    pytest.param(_sparse_bad(lambda m, _: setattr(m, "values", m.values.astype(np.float64))), "float32", id="dtype"),
    pytest.param(_sparse_bad(lambda m, _: setattr(m, "indptr", m.indptr[:-1])), "indptr of shape", id="rows"),
    pytest.param(_sparse_bad(lambda m, _: m.indptr.__setitem__(-1, m.indptr[-1] - 1)), "end at nnz", id="nnz"),
    pytest.param(_sparse_bad(lambda m, c: c.node.update(bow=c.node["x"])), "name of a node column", id="name"),
])
def test_sparse_validation_errors(tmp_path, make, phrase):
    with pytest.raises(ValueError) as info:
        make().validate()
    assert phrase in str(info.value) and "'bow'" in str(info.value)
    with pytest.raises(ValueError):
        write_graph_store(tmp_path / "bad.parquet", make())
    assert list(tmp_path.iterdir()) == []


def test_sparse_column_name_clash_with_other_columns(tmp_path):
    columns = with_sparse(24)
    columns.node["bow.indices"] = columns.node["x"]
    with pytest.raises(ValueError, match="'bow.indices' is used twice"):
        write_graph_store(tmp_path / "dup.parquet", columns)


def test_corrupt_sparse_columns_are_one_line_data_errors(tmp_path):
    columns = with_sparse(25)
    m = columns.sparse["bow"]
    ptr = columns.node_ptr
    nnz_ptr = m.indptr[ptr]
    path = tmp_path / "graphs.parquet"

    def expect(*phrases):
        with pytest.raises(DataError) as excinfo:
            read_graph_columns(path)
        assert_data_error(excinfo, path, *phrases, "delete it")

    # row_nnz: a node moved to the next graph
    moved = ptr.copy()
    moved[3] -= 1
    write_tampered(path, columns, "bow.row_nnz", pa.LargeListArray.from_arrays(
        pa.array(moved, pa.int64()), pa.array(np.diff(m.indptr).astype(np.int32))))
    expect("'bow.row_nnz'", "one entry per node")
    # indices: one nonzero moved from graph 5 to graph 4 (total unchanged, per-graph count wrong)
    shifted = nnz_ptr.copy()
    shifted[5] += 1
    write_tampered(path, columns, "bow.indices", pa.LargeListArray.from_arrays(
        pa.array(shifted, pa.int64()), pa.array(m.indices)))
    expect("'bow.indices'", "one entry per nonzero")
    # a column id outside the width: caught by validation
    bad = m.indices.copy()
    bad[0] = 99
    write_tampered(path, columns, "bow.indices", pa.LargeListArray.from_arrays(
        pa.array(nnz_ptr, pa.int64()), pa.array(bad)))
    expect("inconsistent", "outside [0, 11)")
    # values stored as float64
    write_tampered(path, columns, "bow.values", pa.LargeListArray.from_arrays(
        pa.array(nnz_ptr, pa.int64()), pa.array(m.values.astype(np.float64))))
    expect("'bow'", "expected (int32, int32, float32)")
    # a missing part
    table = columns_to_table(columns)
    pq.write_table(table.drop_columns(["tf.values"]).replace_schema_metadata(table.schema.metadata), path)
    expect("lacks column", "tf.values")
    # an unreadable width in the layout
    layout = json.loads(table.schema.metadata[METADATA_KEY])
    for widths in ({"bow": "11"}, ["bow"], {"bow": -1}):
        pq.write_table(table.replace_schema_metadata(
            {METADATA_KEY: json.dumps({**layout, "sparse": widths}).encode()}), path)
        expect("unreadable gnnbench layout metadata")
