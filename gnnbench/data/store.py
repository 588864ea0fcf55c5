"""Graph store: a Parquet file with one row per graph.

Columns
    ``num_nodes``            int64
    ``src``, ``dst``         large_list<int32>: local node indices of each edge u→v (src = u, dst = v)
    node columns             large_list<T> or large_list<fixed_size_list<T, d>>: one entry per node
    edge columns             as node columns, one entry per edge
    graph columns            T or fixed_size_list<T, d>: one entry per graph
    sparse node columns      a node-level sparse matrix ``name`` (e.g. bag-of-words features) in three list
                             columns: ``name.indices`` large_list<int32> (column id of every nonzero of the graph,
                             row after row), ``name.values`` large_list<float32> (its value) and ``name.row_nnz``
                             large_list<int32> (nonzeros per node, one entry per node)

The schema metadata key ``gnnbench`` holds ``{"format": 1, "node": [...], "edge": [...], "graph": [...]}`` plus,
only when there are sparse columns, ``"sparse": {name: width}``, so that a reader knows which list columns are node-
and which are edge-level (a file without the ``sparse`` key has none). Any Arrow reader (pandas, polars, DuckDB) can
open the file.

In memory the same data lives in columnar form (:class:`GraphColumns`, NumPy): every node column
concatenated over all graphs, with offset pointers ``node_ptr`` / ``edge_ptr``; sparse node columns are CSR
matrices over all nodes of all graphs (:class:`SparseRows`). Reading converts the list columns to that form in one
pass (Arrow's list offsets *are* the pointers); :class:`GraphStore` is the torch twin used for training.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gnnbench.data.archive import CAP, FLOOR, RATIO, allowance
from gnnbench.errors import DataError
from gnnbench.io import atomic_path

if TYPE_CHECKING:  # annotations only: the torch twin imports torch when it is built
    import torch

SPLIT_CODES = {"train": 0, "val": 1, "test": 2}  # values of the node column "split" (-1: in no part)
FORMAT_VERSION = 1
METADATA_KEY = b"gnnbench"
MAX_GRAPH_NODES = int(np.iinfo(np.int32).max)  # src/dst hold int32 local node ids: no graph can have more nodes
BARE_NODE_BYTES = 4  # the constant feature x = 1 (float32) a node of a file without node columns is given
_ALLOWED_DTYPES = {
    np.dtype(t)
    for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64")
}


@dataclass
class SparseRows:
    """A sparse matrix with one row per node (all nodes of all graphs, in store order), in CSR form.

    ``indices`` are the column ids of the nonzeros, in ``[0, width)``, sorted and unique within each row.
    """

    indptr: np.ndarray  # (N+1,) int64, indptr[0] = 0
    indices: np.ndarray  # (nnz,) int32
    values: np.ndarray  # (nnz,) float32
    width: int

    @property
    def num_rows(self) -> int:
        """Number of rows (nodes): ``len(indptr) - 1``."""
        return int(self.indptr.shape[0]) - 1

    @property
    def nnz(self) -> int:
        """Number of stored nonzeros."""
        return int(self.indices.shape[0])

    @classmethod
    def from_scipy(cls, matrix) -> SparseRows:
        """From any SciPy sparse matrix (or dense 2-d array); explicit zeros are dropped, duplicates summed."""
        import scipy.sparse as sp

        csr = sp.csr_matrix(matrix, dtype=np.float32)  # a copy: the caller's matrix is left alone
        csr.sum_duplicates()
        csr.eliminate_zeros()
        return cls(csr.indptr.astype(np.int64), csr.indices.astype(np.int32), csr.data.astype(np.float32),
                   int(csr.shape[1]))

    def to_scipy(self):
        """``scipy.sparse.csr_matrix`` (N, width) float32 sharing these arrays."""
        import scipy.sparse as sp

        return sp.csr_matrix((self.values, self.indices, self.indptr), shape=(self.num_rows, self.width))

    def to_torch(self) -> torch.Tensor:
        """torch sparse CSR tensor (N, width), float32 values, int64 indices."""
        import torch  # here: reading and writing the store needs no torch (table and split jobs never load it)

        with warnings.catch_warnings():  # "sparse CSR support is in beta": construction is stable and tested here
            warnings.simplefilter("ignore", UserWarning)
            return torch.sparse_csr_tensor(torch.from_numpy(self.indptr.astype(np.int64)),
                                           torch.from_numpy(self.indices.astype(np.int64)),
                                           torch.from_numpy(np.ascontiguousarray(self.values, dtype=np.float32)),
                                           size=(self.num_rows, self.width), check_invariants=False)  # validated

    def to_dense(self) -> np.ndarray:
        """(N, width) float32."""
        out = np.zeros((self.num_rows, self.width), dtype=np.float32)
        out[np.repeat(np.arange(self.num_rows), np.diff(self.indptr)), self.indices] = self.values
        return out

    def rows(self, start: int, stop: int) -> SparseRows:
        """Rows ``start:stop`` as their own matrix (copies of the slices)."""
        lo, hi = int(self.indptr[start]), int(self.indptr[stop])
        return SparseRows(self.indptr[start:stop + 1] - lo, self.indices[lo:hi].copy(), self.values[lo:hi].copy(),
                          self.width)

    def validate(self, num_rows: int, name: str = "sparse") -> None:
        """Check dtypes, shapes and the CSR invariants; raise ValueError (a programming error) naming ``name``."""
        ptr, idx, val = self.indptr, self.indices, self.values
        if ptr.dtype != np.int64 or idx.dtype != np.int32 or val.dtype != np.float32:
            raise ValueError(f"sparse column {name!r} must have int64 indptr, int32 indices and float32 values "
                             f"(got {ptr.dtype}, {idx.dtype}, {val.dtype})")
        if ptr.shape != (num_rows + 1,) or idx.ndim != 1 or val.shape != idx.shape:
            raise ValueError(f"sparse column {name!r} must have indptr of shape ({num_rows + 1},) and indices/values "
                             "of one equal length")
        if ptr[0] != 0 or ptr[-1] != idx.shape[0] or (np.diff(ptr) < 0).any():
            raise ValueError(f"sparse column {name!r}: indptr must start at 0, never decrease and end at nnz")
        if not isinstance(self.width, (int, np.integer)) or self.width < 0:
            raise ValueError(f"sparse column {name!r}: width must be a non-negative integer, got {self.width!r}")
        if idx.size and (idx.min() < 0 or idx.max() >= self.width):
            raise ValueError(f"sparse column {name!r}: a column index lies outside [0, {self.width})")
        if idx.size > 1:
            row_start = np.zeros(idx.size, dtype=bool)
            row_start[ptr[:-1][np.diff(ptr) > 0]] = True
            if ((np.diff(idx) <= 0) & ~row_start[1:]).any():
                raise ValueError(f"sparse column {name!r}: column indices must be sorted and unique within each row")

    @staticmethod
    def concat(parts: list[SparseRows]) -> SparseRows:
        """Rows of ``parts`` one after another (equal widths)."""
        widths = {int(p.width) for p in parts}
        if len(widths) != 1:
            raise ValueError(f"cannot concatenate sparse columns of different widths {sorted(widths)}")
        offsets = np.cumsum([0] + [p.nnz for p in parts[:-1]])
        indptr = np.concatenate([parts[0].indptr[:1]] + [p.indptr[1:] + o for p, o in zip(parts, offsets, strict=True)])
        return SparseRows(indptr.astype(np.int64), np.concatenate([p.indices for p in parts]),
                          np.concatenate([p.values for p in parts]), widths.pop())


@dataclass
class GraphColumns:
    """Graphs in concatenated (columnar) NumPy form; the in-memory twin of a Parquet graph store."""

    num_nodes: np.ndarray  # (G,) int64
    num_edges: np.ndarray  # (G,) int64
    src: np.ndarray  # (E,) int32, local index of each edge's source node
    dst: np.ndarray  # (E,) int32, local index of each edge's destination node
    node: dict[str, np.ndarray] = field(default_factory=dict)  # (N, ...) per column
    edge: dict[str, np.ndarray] = field(default_factory=dict)  # (E, ...) per column
    graph: dict[str, np.ndarray] = field(default_factory=dict)  # (G, ...) per column
    sparse: dict[str, SparseRows] = field(default_factory=dict)  # node-level sparse matrices (N rows each)

    @property
    def num_graphs(self) -> int:
        """Number of graphs G."""
        return int(self.num_nodes.shape[0])

    @property
    def node_ptr(self) -> np.ndarray:
        """(G+1,) int64 offsets: the nodes of graph ``i`` are rows ``node_ptr[i]:node_ptr[i+1]`` of every node
        column (computed from ``num_nodes`` on each access)."""
        return _pointers(self.num_nodes)

    @property
    def edge_ptr(self) -> np.ndarray:
        """(G+1,) int64 offsets of each graph's edges in ``src``, ``dst`` and the edge columns (computed from
        ``num_edges`` on each access)."""
        return _pointers(self.num_edges)

    def validate(self) -> None:
        """Check shapes, dtypes and index ranges; raise ValueError on inconsistency (a programming error)."""
        num_nodes, num_edges = int(self.num_nodes.sum()), int(self.num_edges.sum())
        if self.src.shape != (num_edges,) or self.dst.shape != (num_edges,):
            raise ValueError(f"src/dst must have shape ({num_edges},)")
        for level, columns, length in (
            ("node", self.node, num_nodes),
            ("edge", self.edge, num_edges),
            ("graph", self.graph, self.num_graphs),
        ):
            for name, values in columns.items():
                if values.ndim not in (1, 2) or values.shape[0] != length:
                    raise ValueError(f"{level} column {name!r} must have shape ({length},) or ({length}, d)")
                if values.dtype not in _ALLOWED_DTYPES:
                    raise ValueError(f"{level} column {name!r} has unsupported dtype {values.dtype}")
        for name, matrix in self.sparse.items():
            if name in self.node:
                raise ValueError(f"sparse column {name!r} has the name of a node column")
            matrix.validate(num_nodes, name)
        limit = np.repeat(self.num_nodes, self.num_edges)
        if num_edges and (self.src.min() < 0 or self.dst.min() < 0 or (self.src >= limit).any()
                          or (self.dst >= limit).any()):
            raise ValueError("an edge refers to a node outside its graph")

    def graph_at(self, i: int) -> dict[str, np.ndarray]:
        """All columns of graph ``i`` (for inspection and tests, not for hot paths)."""
        n0, n1 = self.node_ptr[i], self.node_ptr[i + 1]
        e0, e1 = self.edge_ptr[i], self.edge_ptr[i + 1]
        out = {"num_nodes": int(self.num_nodes[i]), "src": self.src[e0:e1], "dst": self.dst[e0:e1]}
        out.update({k: v[n0:n1] for k, v in self.node.items()})
        out.update({k: v[e0:e1] for k, v in self.edge.items()})
        out.update({k: v[i] for k, v in self.graph.items()})
        out.update({k: m.rows(n0, n1) for k, m in self.sparse.items()})
        return out

    @staticmethod
    def concat(parts: list[GraphColumns]) -> GraphColumns:
        """Concatenate graph sets with identical column layouts (e.g. chunks made by a generator)."""
        first = parts[0]
        cat = np.concatenate
        return GraphColumns(
            num_nodes=cat([p.num_nodes for p in parts]),
            num_edges=cat([p.num_edges for p in parts]),
            src=cat([p.src for p in parts]),
            dst=cat([p.dst for p in parts]),
            node={k: cat([p.node[k] for p in parts]) for k in first.node},
            edge={k: cat([p.edge[k] for p in parts]) for k in first.edge},
            graph={k: cat([p.graph[k] for p in parts]) for k in first.graph},
            sparse={k: SparseRows.concat([p.sparse[k] for p in parts]) for k in first.sparse},
        )


def node_count_problem(num_nodes: np.ndarray, carried: bool, file_size: int | None) -> str | None:
    """What is wrong with the node counts a file states (``num_nodes``, one per graph), or None; checked before
    anything is allocated for the nodes.

    * No graph has more than :data:`MAX_GRAPH_NODES` (2**31 − 1) nodes: ``src`` / ``dst`` hold int32 ids.
    * Where no column carries one row per node (``carried`` False: no features, no node labels), the counts are all
      there is of the nodes, and what they make gnnbench allocate — :data:`BARE_NODE_BYTES` per node for the
      constant feature, at least — is bounded by the file's size as a zip member's expansion is
      (:func:`gnnbench.data.archive.allowance`: max(64 MiB, 250 × ``file_size``), at most 8 GiB; without a file, 8
      GiB): a file of 1.4 KB may stand for 16,777,216 such nodes, not 10**9.
    """
    too_big = np.flatnonzero(num_nodes > MAX_GRAPH_NODES)
    if too_big.size:
        i = int(too_big[0])
        return (f"graph {i} has num_nodes {int(num_nodes[i])}, more than a graph can have ({MAX_GRAPH_NODES:,}: node "
                "ids are int32)")
    total = int(num_nodes.sum(dtype=np.int64))
    allowed = CAP if file_size is None else allowance(file_size)
    if not carried and total * BARE_NODE_BYTES > allowed:
        bound = (f"a file of {file_size:,} bytes may stand for (max({FLOOR >> 20} MiB, {RATIO} × its size), at most "
                 f"{CAP >> 30} GiB)" if file_size is not None else f"gnnbench allocates without data ({CAP >> 30} GiB)")
        return (f"its graphs have {total:,} nodes in all but no node data (no features x, no per-node column), so "
                f"gnnbench would allocate {BARE_NODE_BYTES} bytes per node ({total * BARE_NODE_BYTES:,} bytes), more "
                f"than {bound}")
    return None


def _pointers(counts: np.ndarray) -> np.ndarray:
    ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr


# ---------------------------------------------------------------------------------------------- writing


def _arrow_values(values: np.ndarray) -> pa.Array:
    flat = pa.array(np.ascontiguousarray(values).reshape(-1))
    if values.ndim == 2:
        return pa.FixedSizeListArray.from_arrays(flat, values.shape[1])
    return flat


def arrow_lists(values: np.ndarray, ptr: np.ndarray) -> pa.Array:
    """A ``large_list`` Arrow array with one list per graph: ``values`` (1-d, or 2-d as fixed-size lists) cut at
    the offsets ``ptr``."""
    return pa.LargeListArray.from_arrays(pa.array(ptr, type=pa.int64()), _arrow_values(values))


def columns_to_table(columns: GraphColumns, extra_metadata: dict | None = None) -> pa.Table:
    """Arrow table (one row per graph) for ``columns``; zero-copy where Arrow allows."""
    columns.validate()
    node_ptr, edge_ptr = columns.node_ptr, columns.edge_ptr
    arrays = {
        "num_nodes": pa.array(columns.num_nodes.astype(np.int64)),
        "src": arrow_lists(columns.src.astype(np.int32, copy=False), edge_ptr),
        "dst": arrow_lists(columns.dst.astype(np.int32, copy=False), edge_ptr),
    }
    layout = {"format": FORMAT_VERSION, "node": [], "edge": [], "graph": []}
    for level, group, ptr in (("node", columns.node, node_ptr), ("edge", columns.edge, edge_ptr)):
        for name, values in group.items():
            _check_name(name, arrays)
            arrays[name] = arrow_lists(values, ptr)
            layout[level].append(name)
    for name, values in columns.graph.items():
        column = graph_column_name(name, layout)
        _check_name(column, arrays)
        arrays[column] = _arrow_values(values)
        layout["graph"].append(name)
    if columns.sparse:
        layout["sparse"] = {}
        for name, matrix in columns.sparse.items():
            nnz_ptr = matrix.indptr[node_ptr]  # nonzeros before each graph's first node
            for suffix, values, ptr in (("indices", matrix.indices, nnz_ptr), ("values", matrix.values, nnz_ptr),
                                        ("row_nnz", np.diff(matrix.indptr).astype(np.int32), node_ptr)):
                _check_name(f"{name}.{suffix}", arrays)
                arrays[f"{name}.{suffix}"] = arrow_lists(values, ptr)
            layout["sparse"][name] = int(matrix.width)
    metadata = {METADATA_KEY: json.dumps(layout).encode()}
    if extra_metadata:
        metadata[b"gnnbench_extra"] = json.dumps(extra_metadata, sort_keys=True).encode()
    return pa.table(arrays).replace_schema_metadata(metadata)


def graph_column_name(name: str, layout: dict) -> str:
    """Parquet column of the graph-level column ``name``: ``graph.<name>`` when a node or edge column has the same
    name (a multitask dataset has node-level and graph-level targets, both called ``y``), else ``name``."""
    return f"graph.{name}" if name in layout["node"] or name in layout["edge"] else name


def _check_name(name: str, existing: dict) -> None:
    if name in existing:
        raise ValueError(f"column name {name!r} is used twice")


def write_graph_store(path: str | os.PathLike, columns: GraphColumns, row_group_size: int = 1024) -> None:
    """Write ``columns`` to a Parquet graph store at ``path`` atomically (zstd, no dictionary encoding)."""
    table = columns_to_table(columns)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", use_dictionary=False, row_group_size=row_group_size,
                       write_page_checksum=True)


# ---------------------------------------------------------------------------------------------- reading


def read_parquet(path: Path, what: str) -> pa.Table:
    """The Parquet file at ``path`` as an Arrow table, with its page checksums verified; a missing, corrupt or
    truncated file raises a DataError that names it as ``what`` and says how to recreate it."""
    if not path.is_file():
        raise DataError(f"{what} {path} does not exist; run snakemake (or the gnnbench command) that creates it")
    if path.stat().st_size == 0:
        raise DataError(f"{what} {path} is empty (0 bytes), not a Parquet file; delete it and rerun snakemake to "
                        "recreate it")
    try:  # page checksums (CRC32) catch corrupted bytes that would otherwise decode to wrong values
        return pq.read_table(path, page_checksum_verification=True)
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        reason = str(exc).splitlines()[0][:200]
        raise DataError(
            f"{what} {path} is corrupt or truncated ({reason}); delete it and rerun snakemake to recreate it"
        ) from None


def _numpy(arr: pa.Array) -> np.ndarray:
    out = arr.to_numpy(zero_copy_only=False)
    return out if out.flags.writeable else out.copy()


def _values(arr: pa.Array) -> np.ndarray:
    if pa.types.is_fixed_size_list(arr.type):
        width = arr.type.list_size
        return _numpy(arr.flatten()).reshape(-1, width)
    return _numpy(arr)


def list_column(table: pa.Table, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(values, pointers) of a list column; pointers start at 0."""
    arr = table.column(name).combine_chunks()
    offsets = np.asarray(arr.offsets, dtype=np.int64)
    return _values(arr.flatten()), offsets - offsets[0]


def read_graph_columns(path: str | os.PathLike, what: str = "graph store") -> GraphColumns:
    """Read a Parquet graph store into :class:`GraphColumns`, checking its layout and index ranges."""
    path = Path(path)
    table = read_parquet(path, what)
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        raise DataError(f"{what} {path} has no gnnbench layout metadata; it was not written by gnnbench — "
                        "delete it and rerun snakemake to recreate it")
    try:
        layout = json.loads(raw)
        if not isinstance(layout, dict) or not all(isinstance(layout.get(k), list) for k in ("node", "edge", "graph")):
            raise ValueError("not a layout")
        sparse_widths = layout.get("sparse", {})
        if not isinstance(sparse_widths, dict) or not all(
                isinstance(w, int) and not isinstance(w, bool) and w >= 0 for w in sparse_widths.values()):
            raise ValueError("not a layout")
    except (ValueError, UnicodeDecodeError):
        raise DataError(f"{what} {path} has unreadable gnnbench layout metadata; delete it and rerun snakemake to "
                        "recreate it") from None
    if layout.get("format") != FORMAT_VERSION:
        raise DataError(f"{what} {path} has store format {layout.get('format')}, this gnnbench reads "
                        f"{FORMAT_VERSION}; delete it and rerun snakemake to recreate it")
    try:
        num_nodes = _numpy(table.column("num_nodes").combine_chunks()).astype(np.int64)
        problem = "a graph has a negative num_nodes" if (num_nodes < 0).any() else node_count_problem(
            num_nodes, bool(layout["node"] or sparse_widths), path.stat().st_size)
        if problem is not None:
            raise DataError(f"{what} {path}: {problem}; delete it and rerun snakemake to recreate it")
        src, edge_ptr = list_column(table, "src")
        dst, dst_ptr = list_column(table, "dst")
        node_ptr = _pointers(num_nodes)
        node, edge, graph = {}, {}, {}
        for name in layout["node"]:
            node[name], ptr = list_column(table, name)
            _same(ptr, node_ptr, path, what, name, "nodes")
        for name in layout["edge"]:
            edge[name], ptr = list_column(table, name)
            _same(ptr, edge_ptr, path, what, name, "edges")
        for name in layout["graph"]:
            graph[name] = _values(table.column(graph_column_name(name, layout)).combine_chunks())
        sparse = {name: _read_sparse(table, name, width, node_ptr, path, what)
                  for name, width in sparse_widths.items()}
    except KeyError as exc:
        raise DataError(f"{what} {path} lacks column {exc}; delete it and rerun snakemake to recreate it") from None
    _same(dst_ptr, edge_ptr, path, what, "dst", "edges")
    columns = GraphColumns(num_nodes, np.diff(edge_ptr), src.astype(np.int32, copy=False),
                           dst.astype(np.int32, copy=False), node, edge, graph, sparse)
    try:
        columns.validate()
    except ValueError as exc:
        raise DataError(f"{what} {path} is inconsistent ({exc}); delete it and rerun snakemake") from None
    return columns


def _read_sparse(table: pa.Table, name: str, width: int, node_ptr: np.ndarray, path: Path, what: str) -> SparseRows:
    """A sparse node column from its three list columns, checking that they agree with each other."""
    row_nnz, ptr = list_column(table, f"{name}.row_nnz")
    _same(ptr, node_ptr, path, what, f"{name}.row_nnz", "nodes")
    indices, nnz_ptr = list_column(table, f"{name}.indices")
    values, values_ptr = list_column(table, f"{name}.values")
    indptr = _pointers(row_nnz.astype(np.int64))
    for column, got in ((f"{name}.indices", nnz_ptr), (f"{name}.values", values_ptr)):
        if got.shape != node_ptr.shape or not np.array_equal(got, indptr[node_ptr]):
            raise DataError(f"{what} {path}: column {column!r} does not have one entry per nonzero of {name!r} "
                            "(the sum of its row_nnz) in each graph; delete it and rerun snakemake to recreate it")
    dtypes = (row_nnz.dtype, indices.dtype, values.dtype)
    if dtypes != (np.dtype(np.int32), np.dtype(np.int32), np.dtype(np.float32)):
        raise DataError(f"{what} {path}: sparse column {name!r} has dtypes {tuple(str(d) for d in dtypes)} for "
                        "(row_nnz, indices, values), expected (int32, int32, float32); delete it and rerun snakemake")
    return SparseRows(indptr, indices, values, width)


def _same(ptr: np.ndarray, expected: np.ndarray, path: Path, what: str, name: str, unit: str) -> None:
    if ptr.shape != expected.shape or not np.array_equal(ptr, expected):
        raise DataError(f"{what} {path}: column {name!r} does not have one entry per {unit[:-1]} "
                        f"of each graph; delete it and rerun snakemake to recreate it")


# ---------------------------------------------------------------------------------------------- torch


@dataclass
class GraphStore:
    """All graphs of a dataset as contiguous torch tensors plus offset pointers (training-time form).

    Sparse node columns are densified into ``node[name]`` (float32), so every loader works on them unchanged; the
    sparse form stays available in ``sparse`` (e.g. for full-batch models that multiply the CSR matrix directly).
    """

    node_ptr: torch.Tensor  # (G+1,) int64
    edge_ptr: torch.Tensor  # (G+1,) int64
    edge_index: torch.Tensor  # (2, E) int32, local node indices
    node: dict[str, torch.Tensor]
    edge: dict[str, torch.Tensor]
    graph: dict[str, torch.Tensor]
    sparse: dict[str, SparseRows] = field(default_factory=dict)

    @property
    def num_graphs(self) -> int:
        """Number of graphs G."""
        return self.node_ptr.numel() - 1

    @property
    def num_nodes(self) -> torch.Tensor:
        """(G,) int64: the node count of every graph."""
        return self.node_ptr.diff()

    @property
    def num_edges(self) -> torch.Tensor:
        """(G,) int64: the edge count of every graph."""
        return self.edge_ptr.diff()

    @classmethod
    def from_columns(cls, columns: GraphColumns) -> GraphStore:
        """The torch form of ``columns``: NumPy arrays become tensors sharing their memory where they are
        contiguous, ``edge_index`` stacks ``src`` and ``dst``, and sparse node columns are also densified into
        ``node``."""
        import torch  # here: reading and writing the store needs no torch (table and split jobs never load it)

        def tensors(group: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
            return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in group.items()}

        return cls(
            node_ptr=torch.from_numpy(columns.node_ptr),
            edge_ptr=torch.from_numpy(columns.edge_ptr),
            edge_index=torch.from_numpy(np.stack([columns.src, columns.dst]).astype(np.int32, copy=False)),
            node={**tensors(columns.node), **{k: torch.from_numpy(m.to_dense()) for k, m in columns.sparse.items()}},
            edge=tensors(columns.edge),
            graph=tensors(columns.graph),
            sparse=dict(columns.sparse),
        )


def load_graph_store(path: str | os.PathLike) -> GraphStore:
    """Read a Parquet graph store straight into training-time tensors."""
    return GraphStore.from_columns(read_graph_columns(path))
