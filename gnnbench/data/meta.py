"""Dataset metadata (``meta.json``) and graph statistics.

``meta.json`` sits beside ``graphs.parquet`` and says how to read it: the task, loss and metric, the
node/edge feature kind and size (vocabulary or width), how positional encodings are used, the split
sizes when the split comes with the data, where the data came from (generator, parameters, seed) and
statistics (nodes and edges per graph, label balance, TSP tour lengths), plus the SHA-256 of ``graphs.parquet``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from gnnbench.data.store import GraphColumns, read_graph_columns, write_graph_store
from gnnbench.errors import DataError
from gnnbench.io import read_json, sha256_file, write_json

META_FORMAT = 1
GRAPHS_FILE = "graphs.parquet"
META_FILE = "meta.json"

TASKS = ("node_classification", "graph_classification", "graph_regression", "edge_classification",
         "link_prediction", "multitask_regression")
SPLIT_ORDER = ("train", "val", "test")  # order of the graphs of a split that comes with the data
PE_USAGES = ("add", "replace")
SUMMARISED_GRAPH_COLUMNS = ("tour_length",)  # per-graph quantities whose distribution meta.json reports (TSP)


@dataclass(frozen=True)
class FeatureSpec:
    """Node or edge input: ``categorical`` integer ids with ``size`` = vocabulary, or ``continuous``
    floats with ``size`` = width."""

    kind: str
    size: int

    def __post_init__(self) -> None:
        if self.kind not in ("categorical", "continuous") or self.size < 1:
            raise ValueError(f"invalid feature spec {self}")


@dataclass
class DatasetMeta:
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

    def __post_init__(self) -> None:
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

    def to_json(self) -> dict:
        return {"format": META_FORMAT, **asdict(self)}

    @classmethod
    def from_json(cls, data: dict, path: Path) -> DatasetMeta:
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
    """Write ``graphs.parquet`` and then ``meta.json`` (statistics and checksum filled in), atomically."""
    out_dir = Path(out_dir)
    graphs = out_dir / GRAPHS_FILE
    write_graph_store(graphs, columns)
    meta.num_graphs = columns.num_graphs
    meta.statistics = dataset_statistics(columns, meta)
    meta.checksum = sha256_file(graphs)
    write_json(out_dir / META_FILE, meta.to_json())
    return meta


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
    """Nodes and (directed) edges per graph (mean/std/min/max) and label balance, overall and per split."""
    stats = {"all": _part_statistics(columns, np.arange(columns.num_graphs), meta)}
    if meta.split_sizes:
        start = 0
        for name in SPLIT_ORDER:  # stored order; meta.json keeps keys sorted, so never rely on dict order
            size = meta.split_sizes[name]
            stats[name] = _part_statistics(columns, np.arange(start, start + size), meta)
            start += size
    return stats
