"""Dataset metadata (``meta.json``) and graph statistics.

``meta.json`` sits beside ``graphs.parquet`` and says how to read it: the task, loss and metric, the
node/edge feature kind and size (vocabulary or width), how positional encodings are used, the split
sizes when the split comes with the data, where the data came from (generator, parameters, seed) and
statistics (nodes and edges per graph, label balance, TSP tour lengths), its duplicate nodes or graphs
(``duplicates``, :mod:`gnnbench.data.leakage`), plus the SHA-256 of ``graphs.parquet``.

Transductive datasets (node classification on one graph: Cora, CiteSeer, ...) follow these conventions:

* node column ``y`` int16, the class of each node, ``-1`` = no label (such a node is never scored);
* node features either a dense node column ``x`` or a sparse column ``x`` (:class:`~gnnbench.data.store.SparseRows`,
  ``FeatureSpec(sparse=True)``);
* optional node column ``split`` int8 (0 train, 1 val, 2 test, -1 none) when a split comes with the data (the
  Planetoid public split); ``split_sizes`` then holds its node counts;
* statistics (:func:`transductive_statistics`) describe the one graph — nodes, undirected edges, self loops,
  isolated nodes, feature width and nonzeros, class sizes — instead of per-graph distributions, and, per split part,
  the node and class counts. ``num_outputs`` and the feature width are taken from the data when it is written
  (:func:`write_dataset`): a generator cannot know how many classes survive preprocessing before it runs.

Multi-graph datasets whose split sizes are known only after conversion (AQSOL: molecules are filtered; ZINC-full:
the sizes of the downloaded pickles) carry an int8 graph column ``split`` (0 train, 1 val, 2 test; graphs stored
train, then val, then test); :func:`write_dataset` sets ``split_sizes`` from its counts.
Link-prediction datasets (OGBL-COLLAB: one graph and the node pairs it is evaluated on) also hold ``pairs.parquet``
(:mod:`gnnbench.data.link_pairs`), written before ``graphs.parquet`` and recorded in ``extra_files`` (name → SHA-256);
``split_sizes`` are its rows per part and the statistics are :func:`~gnnbench.data.link_pairs.link_statistics`.
``pe_solver`` says how Laplacian PE are computed (``sparse``: the original's ARPACK variant, for COLLAB).
"""

from __future__ import annotations

import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from gnnbench.data.homophily import homophily
from gnnbench.data.leakage import dataset_duplicates, dataset_labels
from gnnbench.data.link_pairs import PAIRS_FILE, LinkPairs, link_statistics, write_pairs
from gnnbench.data.store import SPLIT_CODES, GraphColumns, read_graph_columns, read_parquet, write_graph_store
from gnnbench.errors import DataError
from gnnbench.io import read_json, sha256_file, write_json

log = logging.getLogger(__name__)

META_FORMAT = 1
GRAPHS_FILE = "graphs.parquet"
META_FILE = "meta.json"

TASKS = ("node_classification", "graph_classification", "graph_regression", "edge_classification",
         "link_prediction", "multitask_regression")
SPLIT_ORDER = ("train", "val", "test")  # order of the graphs of a split that comes with the data
PE_USAGES = ("add", "replace")
PE_SOLVERS = ("dense", "sparse")
# see DatasetMeta.net_conventions
NET_CONVENTIONS = ("embed_continuous_input", "edge_type_table", "edge_ones_node_width")
SUMMARISED_GRAPH_COLUMNS = ("tour_length",)  # per-graph quantities whose distribution meta.json reports (TSP)


@dataclass(frozen=True)
class FeatureSpec:
    """Node or edge input: ``categorical`` integer ids with ``size`` = vocabulary, or ``continuous``
    floats with ``size`` = width; ``sparse`` continuous features are stored as a sparse node column."""

    kind: str
    size: int
    sparse: bool = False

    def to_json(self) -> dict:
        """The feature description as ``meta.json`` stores it: ``kind``, ``size`` and, only when true, ``sparse``."""
        out = {"kind": self.kind, "size": self.size}
        if self.sparse:  # omitted when false: meta.json of dense datasets stays as it was
            out["sparse"] = True
        return out

    def __post_init__(self) -> None:
        if (self.kind not in ("categorical", "continuous") or self.size < 1 or not isinstance(self.sparse, bool)
                or (self.sparse and self.kind != "continuous")):
            raise ValueError(f"invalid feature spec {self}")


@dataclass
class DatasetMeta:
    """What ``meta.json`` says about a dataset: how to read ``graphs.parquet`` (task, loss, metric, feature kinds and
    sizes, PE usage, split sizes), where the data came from (``source``) and its ``statistics``; see the module
    docstring."""

    name: str
    task: str
    loss: str
    metric: str
    num_outputs: int  # classes (classification) or targets (regression); node targets for multitask
    num_graphs: int
    node_features: FeatureSpec | None
    edge_features: FeatureSpec | None
    pe_usage: str  # "add": PE projection added to the node embedding; "replace": PE is the only input
    split_sizes: dict[str, int] | None  # sizes of a split that comes with the data (train, val, test)
    source: dict = field(default_factory=dict)
    statistics: dict = field(default_factory=dict)
    checksum: str = ""  # SHA-256 of graphs.parquet
    num_graph_outputs: int = 0  # graph-level targets of a multitask dataset (node and graph "y" columns)
    # how the benchmark's networks for this dataset differ from the defaults (a dataset's description, so that no
    # model tests dataset names): "embed_continuous_input" — every model, MLP included, embeds continuous node
    # features with a Linear before its layers; "edge_type_table" — models that use edges but get no edge
    # features read one learned edge vector, Embedding(1, hidden), instead of Linear(1, hidden) on ones (WikiCS);
    # "edge_ones_node_width" — the constant edge input is ones(E, d) with d the node feature width, not 1 (the
    # benchmark's TU loader)
    net_conventions: list[str] = field(default_factory=list)
    given_splits: int = 1  # splits that come with the data (columns of the node column ``split``; WikiCS: 20)
    # how the Laplacian PE of the dataset is computed (gnnbench.features.laplacian_pe): "dense" (exact) or "sparse"
    # (ARPACK eigs, tol 1e-2: the original's COLLAB loader; one graph of 235,868 nodes has no dense decomposition)
    pe_solver: str = "dense"
    # SHA-256 of the dataset's files beside graphs.parquet (link prediction: pairs.parquet, gnnbench.data.link_pairs)
    extra_files: dict[str, str] = field(default_factory=dict)
    # duplicate nodes (transductive) or graphs, found when the dataset is written (gnnbench.data.leakage,
    # docs/leakage.md): level, rule, groups, members, removable (members beyond one per group), largest, confirmed
    # (every group checked exactly) and label_conflicts (groups whose labels differ); empty: not checked (link
    # prediction, or a dataset written before the check)
    duplicates: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.net_conventions) - set(NET_CONVENTIONS)
        if unknown:
            raise ValueError(f"unknown net conventions {sorted(unknown)}")
        if self.pe_solver not in PE_SOLVERS:
            raise ValueError(f"unknown pe_solver {self.pe_solver!r}")
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}")
        if self.pe_usage not in PE_USAGES:
            raise ValueError(f"unknown pe_usage {self.pe_usage!r}")

    @property
    def label_level(self) -> str:
        """Where the ``y`` column lives: node, edge or graph (multitask: node, plus a graph-level ``y``)."""
        if self.task.startswith(("node", "multitask")):
            return "node"
        return "edge" if self.task.startswith(("edge", "link")) else "graph"

    @property
    def transductive(self) -> bool:
        """Node classification on one graph (train/val/test are sets of nodes of that graph)."""
        return self.task == "node_classification" and self.num_graphs == 1

    def to_json(self) -> dict:
        """The content of ``meta.json``: every field plus the format version; optional fields at their default
        are left out."""
        out = {"format": META_FORMAT, **asdict(self)}
        for key in ("node_features", "edge_features"):
            spec = getattr(self, key)
            out[key] = None if spec is None else spec.to_json()
        if not self.net_conventions:  # omitted when empty: meta.json of other datasets stays as it was
            del out["net_conventions"]
        if self.given_splits == 1:
            del out["given_splits"]
        if self.pe_solver == "dense":  # omitted when default, likewise
            del out["pe_solver"]
        if not self.extra_files:
            del out["extra_files"]
        if not self.duplicates:
            del out["duplicates"]
        return out

    @classmethod
    def from_json(cls, data: dict, path: Path) -> DatasetMeta:
        """The metadata stored in ``data`` (the parsed ``meta.json`` at ``path``); a DataError naming the file when
        its format version or content is not what this gnnbench writes."""
        if data.get("format") != META_FORMAT:
            raise DataError(f"dataset metadata {path} has format {data.get('format')}, expected "
                            f"{META_FORMAT}; delete the dataset folder and rerun snakemake")
        data = {k: v for k, v in data.items() if k != "format"}
        try:
            for key in ("node_features", "edge_features"):
                if data.get(key) is not None:
                    data[key] = FeatureSpec(**data[key])
            return cls(**data)
        except (TypeError, ValueError) as exc:
            raise DataError(f"dataset metadata {path} is invalid ({exc}); delete the dataset folder and "
                            "rerun snakemake") from None


def read_meta(dataset_dir: str | os.PathLike) -> DatasetMeta:
    """The metadata of the dataset in ``dataset_dir`` (its ``meta.json``)."""
    path = Path(dataset_dir) / META_FILE
    return DatasetMeta.from_json(read_json(path, "dataset metadata"), path)


def read_dataset(dataset_dir: str | os.PathLike) -> tuple[DatasetMeta, GraphColumns]:
    """``meta.json`` and ``graphs.parquet`` of a dataset folder, checking the graphs against the recorded checksum."""
    dataset_dir = Path(dataset_dir)
    meta = read_meta(dataset_dir)
    graphs = dataset_dir / GRAPHS_FILE
    columns = read_graph_columns(graphs)
    if sha256_file(graphs) != meta.checksum:
        raise DataError(f"{graphs} does not match the checksum in its meta.json; delete {dataset_dir} and rerun "
                        "snakemake to regenerate the dataset")
    return meta, columns


def write_dataset(out_dir: str | os.PathLike, columns: GraphColumns, meta: DatasetMeta) -> DatasetMeta:
    """Write ``graphs.parquet`` and then ``meta.json`` (statistics and checksum filled in), atomically.

    Columns with evaluation pairs (link prediction, :class:`~gnnbench.data.link_pairs.LinkColumns`) first write
    ``pairs.parquet``, recorded in ``meta.extra_files``; ``split_sizes`` are then the pair rows of each part."""
    out_dir = Path(out_dir)
    graphs = out_dir / GRAPHS_FILE
    pairs = getattr(columns, "pairs", None)
    if pairs is not None:
        meta.extra_files[PAIRS_FILE] = write_pairs(out_dir / PAIRS_FILE, pairs, int(columns.num_nodes.sum()))
        meta.split_sizes = {part: int(np.count_nonzero(pairs.part == code)) for part, code in SPLIT_CODES.items()}
    write_graph_store(graphs, columns)
    meta.num_graphs = columns.num_graphs
    if meta.transductive:
        _refine_transductive(columns, meta)
    elif "split" in columns.graph:
        meta.split_sizes = graph_split_sizes(columns.graph["split"])
    meta.statistics = dataset_statistics(columns, meta) if pairs is None else link_statistics(columns, pairs)
    duplicates = dataset_duplicates(columns, meta)
    meta.duplicates = {} if duplicates is None else duplicates.summary(dataset_labels(columns, meta))
    meta.checksum = sha256_file(graphs)
    write_json(out_dir / META_FILE, meta.to_json())
    return meta


def read_pairs(dataset_dir: str | os.PathLike, meta: DatasetMeta) -> LinkPairs:
    """The evaluation pairs of a link-prediction dataset, checked against the SHA-256 in its ``meta.json``."""
    dataset_dir = Path(dataset_dir)
    path = dataset_dir / PAIRS_FILE
    expected = meta.extra_files.get(PAIRS_FILE)
    if expected is None:
        raise DataError(f"dataset metadata {dataset_dir / 'meta.json'} records no {PAIRS_FILE}; {meta.name} is not "
                        f"a link-prediction dataset written by gnnbench — delete {dataset_dir} and rerun snakemake")
    table = read_parquet(path, "link-prediction pair file")
    if sha256_file(path) != expected:
        raise DataError(f"{path} does not match the checksum in its meta.json; delete {dataset_dir} and rerun "
                        "snakemake to regenerate the dataset")
    try:
        columns = {name: table.column(name).to_numpy() for name in ("src", "dst", "part", "label")}
    except KeyError as exc:
        raise DataError(f"{path} lacks column {exc}; delete {dataset_dir} and rerun snakemake") from None
    pairs = LinkPairs(src=columns["src"].astype(np.int64), dst=columns["dst"].astype(np.int64),
                      part=columns["part"].astype(np.int8), label=columns["label"].astype(np.int8))
    try:
        pairs.validate(int(meta.statistics.get("all", {}).get("nodes", 0)))
    except ValueError as exc:
        raise DataError(f"{path} is inconsistent ({exc}); delete {dataset_dir} and rerun snakemake") from None
    return pairs


def _summary(values: np.ndarray) -> dict[str, float]:
    values = np.asarray(values, dtype=np.float64)
    return {"mean": float(values.mean()), "std": float(values.std()), "min": float(values.min()),
            "max": float(values.max())}


def _part_statistics(columns: GraphColumns, graph_ids: np.ndarray, meta: DatasetMeta) -> dict:
    stats = {
        "graphs": int(graph_ids.size),
        "nodes_per_graph": _summary(columns.num_nodes[graph_ids]),
        "edges_per_graph": _summary(columns.num_edges[graph_ids]),
    }
    if meta.task.endswith("classification"):
        in_part = np.isin(np.arange(columns.num_graphs), graph_ids)
        if meta.label_level == "node":
            labels = columns.node["y"][np.repeat(in_part, columns.num_nodes)]
        elif meta.label_level == "edge":
            labels = columns.edge["y"][np.repeat(in_part, columns.num_edges)]
        else:
            labels = columns.graph["y"][graph_ids]
        counts = np.bincount(labels.astype(np.int64), minlength=meta.num_outputs)
        stats["label_fraction"] = [round(float(c) / max(1, labels.size), 6) for c in counts]
    else:  # regression: one summary per target column (multitask: the graph-level targets)
        y = columns.graph["y"][graph_ids]
        stats["target"] = _summary(y) if y.ndim == 1 else [_summary(y[:, j]) for j in range(y.shape[1])]
    for name in SUMMARISED_GRAPH_COLUMNS:
        if name in columns.graph:
            stats[name] = _summary(columns.graph[name][graph_ids])
    return stats


def dataset_statistics(columns: GraphColumns, meta: DatasetMeta) -> dict:
    """Nodes and (directed) edges per graph (mean/std/min/max) and label balance, overall and per split;
    transductive datasets: :func:`transductive_statistics` of the split that comes with the data (if any)."""
    if meta.transductive:
        return transductive_statistics(columns, meta, split_parts(columns))
    stats = {"all": _part_statistics(columns, np.arange(columns.num_graphs), meta)}
    if meta.split_sizes:
        start = 0
        for name in SPLIT_ORDER:  # stored order; meta.json keeps keys sorted, so never rely on dict order
            size = meta.split_sizes[name]
            stats[name] = _part_statistics(columns, np.arange(start, start + size), meta)
            start += size
    return stats


# ------------------------------------------------------------------------------------------ transductive datasets


def _feature_width_and_nonzeros(columns: GraphColumns) -> tuple[int, int]:
    if "x" in columns.sparse:
        return int(columns.sparse["x"].width), columns.sparse["x"].nnz
    x = columns.node.get("x")
    if x is None:
        return 0, 0
    return (int(x.shape[1]) if x.ndim == 2 else 1), int(np.count_nonzero(x))


def _refine_transductive(columns: GraphColumns, meta: DatasetMeta) -> None:
    """Class count and feature width from the data (what preprocessing left), split sizes from the split column."""
    y = columns.node["y"]
    classes = int(y.max()) + 1 if y.size and y.max() >= 0 else 0
    if classes != meta.num_outputs:
        log.info("%s: %d classes in the data (described: %d)", meta.name, classes, meta.num_outputs)
        meta.num_outputs = classes
    width, _ = _feature_width_and_nonzeros(columns)
    spec = meta.node_features
    if spec is not None and spec.kind == "continuous" and width and width != spec.size:
        log.info("%s: %d feature columns in the data (described: %d)", meta.name, width, spec.size)
        meta.node_features = FeatureSpec(spec.kind, width, spec.sparse)
    parts = split_parts(columns)
    if parts is not None:
        meta.split_sizes = {part: int(nodes.size) for part, nodes in parts.items()}


def graph_split_sizes(codes: np.ndarray) -> dict[str, int]:
    """Graphs per part of the split in the graph column ``split``; its codes must be stored train, val, test."""
    if not np.isin(codes, list(SPLIT_CODES.values())).all() or (np.diff(codes) < 0).any():
        raise ValueError("graph column 'split' must hold codes 0, 1, 2 in non-decreasing order")
    return {part: int(np.count_nonzero(codes == code)) for part, code in SPLIT_CODES.items()}


def split_parts(columns: GraphColumns) -> dict[str, np.ndarray] | None:
    """Node indices of each part of the split stored in the node column ``split`` (None without that column; the
    first split when the column holds several)."""
    codes = columns.node.get("split")
    if codes is None:
        return None
    codes = codes[:, 0] if codes.ndim == 2 else codes
    return {part: np.flatnonzero(codes == code) for part, code in SPLIT_CODES.items()}


def transductive_statistics(columns: GraphColumns, meta: DatasetMeta,
                            parts: dict[str, np.ndarray] | None = None) -> dict:
    """Statistics of a single-graph node-classification dataset, and node/class counts of each part of a split.

    ``all``: ``nodes``; ``edges`` = undirected node pairs {u, v}, u ≠ v, joined by an edge in either direction,
    each counted once (Table 3's "edges"); ``self_loops`` = nodes with an edge to themselves; ``isolated_nodes`` =
    nodes without an edge to another node (a self loop alone leaves a node isolated); ``features`` = feature width
    and ``feature_nonzeros`` = stored nonzeros of ``x``; ``classes`` = ``meta.num_outputs``; ``class_sizes`` =
    labelled nodes per class; ``unlabelled_nodes`` = nodes with ``y`` = -1; ``edge_homophily`` and
    ``adjusted_homophily`` of those undirected pairs (:mod:`gnnbench.data.homophily`, Platonov et al.'s Table 1).
    ``parts`` (part name → node indices, e.g. train/val/test) adds, per part: ``nodes``, ``class_sizes`` and
    ``unlabelled_nodes``.
    """
    n = int(columns.num_nodes[0])
    src, dst = columns.src.astype(np.int64), columns.dst.astype(np.int64)
    loop = src == dst
    lo, hi = np.minimum(src[~loop], dst[~loop]), np.maximum(src[~loop], dst[~loop])
    pairs = np.unique(lo * n + hi)
    touched = np.zeros(n, dtype=bool)
    touched[pairs // n] = True
    touched[pairs % n] = True
    width, nonzeros = _feature_width_and_nonzeros(columns)
    y = columns.node["y"].astype(np.int64)

    def counts(nodes: np.ndarray) -> dict:
        labels = y[nodes]
        return {"nodes": int(nodes.size),
                "class_sizes": np.bincount(labels[labels >= 0], minlength=meta.num_outputs).tolist(),
                "unlabelled_nodes": int(np.count_nonzero(labels < 0))}

    everything = counts(np.arange(n))
    stats = {"all": {
        "nodes": n, "edges": int(pairs.size), "self_loops": int(np.unique(src[loop]).size),
        "isolated_nodes": int(n - np.count_nonzero(touched)), "features": width, "feature_nonzeros": nonzeros,
        "classes": int(meta.num_outputs), "class_sizes": everything["class_sizes"],
        "unlabelled_nodes": everything["unlabelled_nodes"], **homophily(src, dst, y),
    }}
    for part, nodes in (parts or {}).items():
        stats[part] = counts(np.asarray(nodes, dtype=np.int64))
    return stats
