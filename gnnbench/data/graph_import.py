"""Graphs from outside the package: PyG ``Data`` objects and user files, converted into the graph store.

Two generators use this module: ``pyg`` (any ``torch_geometric`` dataset class,
:mod:`gnnbench.data.generators.pyg`) and ``graph_file`` (a file the user already has,
:mod:`gnnbench.data.generators.graph_file`). Both first turn their source into *raw* graph columns (a
:class:`~gnnbench.data.store.GraphColumns` whose arrays may have any numeric dtype) and then through
:func:`to_columns` into the store's conventions, so every source is described and checked the same way.

Graph files (``graph_file``'s ``path``)
    ``.pt`` / ``.pth``: ``torch.save`` of a list of ``torch_geometric.data.Data`` (or of one ``Data``). Read with
    ``torch.load(..., weights_only=True)`` whose allow-list is, for the duration of the call, exactly torch's own
    (tensors, storages, ``OrderedDict``) plus :data:`PT_ALLOWED` — ``Data`` and the three classes a pickled ``Data``
    names (``DataEdgeAttr``, ``DataTensorAttr``, ``GlobalStorage``). PyG widens torch's process-wide allow-list on
    import (``HeteroData``, ``ClusterData``, ...); those are refused here too. A file naming any other global — a
    ``__reduce__`` payload, a ``HeteroData``, an ``EdgeIndex`` — is a one-line :class:`DataError`, nothing is
    constructed from it.

    ``.parquet``: one row per graph. A graph store gnnbench wrote (``results/datasets/*/graphs.parquet``, or
    :func:`write_graphs`) is read by its own layout metadata, sparse columns included. Any other Parquet file (pandas,
    polars, DuckDB) is read by column name:

    ==============  =======================================================================================
    ``num_nodes``   integer ≥ 1 (required)
    ``src``,        list of integers per graph, one per edge u→v: local node ids in 0..num_nodes−1 (required;
    ``dst``         an undirected graph lists both directions)
    ``x``           node features: a list per graph with one number or one fixed-length list of numbers per node
    ``edge_attr``   edge features: likewise, one entry per edge
    ``y``           labels (required): one value (or a fixed-length list: several regression targets) per graph, or
                    a list with one value per node or per edge
    ``split``       optional split that comes with the data: one code per graph, stored train graphs first, then
                    val, then test (0 train, 1 val, 2 test); or, for one graph, a list with one code per node
                    (−1: in no part)
    ==============  =======================================================================================

    Other columns are ignored (and listed in ``meta.json``'s ``source.preprocessing``).

Conversion (:func:`to_columns`; PyG objects as their tensors are, no per-graph Python loop on collated datasets)
    * edges as given (no symmetrisation, self loops and duplicates kept), in the graph's own order;
    * node features ``x``: a single column of non-negative integers becomes a categorical id (vocabulary =
      max + 1; gnnbench's encoders embed it); any other numbers become float32 (N, d) continuous features. No ``x``:
      the constant 1 per node (the TU convention for graphs without features). ``edge_attr`` likewise (none: no
      edge features);
    * labels ``y``: one per node → node classification (−1 = unlabelled); one per edge → edge classification;
      one per graph → graph classification (integer) or graph regression (float; (G, k) = k targets). Where the
      counts cannot tell (every graph with one node, or as many edges as nodes), per graph comes before per node
      before per edge.
      Classification labels are class indices kept as given (classes = max + 1, int16). The generator's ``task``
      overrides the inferred task where the level agrees (e.g. integer graph labels as regression targets);
    * a split that comes with the data (PyG: ``train_mask``/``val_mask``/``test_mask`` of one graph, each (N,) or
      (N, k) for k splits; files: the ``split`` column) becomes the store's ``split`` column, so split scheme
      ``given`` uses it;
    * other attributes (``pos``, ``edge_weight``, strings, ...) are ignored and listed.

Every problem — a missing, empty or unreadable file, missing columns or labels, a wrong dtype, an edge naming a node
outside its graph, lengths that do not fit the graph, node counts no data backs
(:func:`~gnnbench.data.store.node_count_problem`, checked before anything is allocated for the nodes) — is one line
naming the source and the fix, raised before anything is written (the dataset folder is written only after a
successful conversion).
"""

from __future__ import annotations

import os
import pickle
import re
import threading
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gnnbench.data.archive import check_zip
from gnnbench.data.meta import DatasetMeta, FeatureSpec, graph_split_sizes
from gnnbench.data.store import (
    METADATA_KEY,
    SPLIT_CODES,
    GraphColumns,
    _read_sparse,
    graph_column_name,
    node_count_problem,
    write_graph_store,
)
from gnnbench.errors import ConfigError, DataError

TASKS = ("node_classification", "graph_classification", "graph_regression", "edge_classification")
TASK_LEVEL = {"node_classification": "node", "edge_classification": "edge", "graph_classification": "graph",
              "graph_regression": "graph"}


def check_task(task: str, where: str) -> None:
    """A ``task`` parameter (generators ``pyg`` and ``graph_file``): empty (inferred from y) or one of :data:`TASKS`;
    a ConfigError at ``where`` otherwise."""
    if task and task not in TASKS:
        raise ConfigError(f"{where}.task: {task!r} is not a task gnnbench infers; choose one of {', '.join(TASKS)} "
                          "(or leave it empty to infer it from y)")


LOSS_METRIC = {"node_classification": ("cross_entropy", "accuracy"),
               "edge_classification": ("cross_entropy", "accuracy"),
               "graph_classification": ("cross_entropy", "accuracy"), "graph_regression": ("l1", "mae")}
PT_SUFFIXES = (".pt", ".pth")
PARQUET_SUFFIXES = (".parquet",)
MASKS = ("train_mask", "val_mask", "test_mask")
FILE_FIX = ("fix the file (formats: docs/datasets.md#graphs-you-already-have; gnnbench.data.graph_import.write_graphs "
            "writes a valid one)")
EMPTY_FIX = ("write the graphs into it, one per row or list item (formats: docs/datasets.md#graphs-you-already-have; "
             "gnnbench.data.graph_import.write_graphs writes a valid one)")
_MAX_CLASSES = np.iinfo(np.int16).max
_LOAD_LOCK = threading.Lock()  # torch's allow-list is process-wide: one restricted load at a time


@dataclass
class GraphSummary:
    """What :func:`to_columns` found: the dataset's description without its data (``describe`` of the generators)."""

    task: str
    num_outputs: int
    num_graphs: int
    node_features: FeatureSpec
    edge_features: FeatureSpec | None
    split_sizes: dict[str, int] | None
    given_splits: int = 1
    notes: list[str] = field(default_factory=list)  # the conversion's steps and what it ignored
    # what a suite checks a split against before the dataset is made: for one graph with node labels, its nodes
    # and labelled nodes per class (the keys of gnnbench.data.meta.transductive_statistics' "all")
    statistics: dict = field(default_factory=dict)

    def meta(self, name: str, source: dict) -> DatasetMeta:
        """The :class:`DatasetMeta` of this summary for dataset ``name`` (the task's loss and metric; the
        conversion's notes as ``source.preprocessing``)."""
        loss, metric = LOSS_METRIC[self.task]
        return DatasetMeta(name=name, task=self.task, loss=loss, metric=metric, num_outputs=self.num_outputs,
                           num_graphs=self.num_graphs, node_features=self.node_features,
                           edge_features=self.edge_features, pe_usage="add", split_sizes=self.split_sizes,
                           source={**source, "preprocessing": list(self.notes)}, given_splits=self.given_splits,
                           statistics=dict(self.statistics))

    def default_split(self) -> dict:
        """The split scheme when the suite names none: the data's own split where it has one, else
        random_per_class for one graph with node labels, stratified_kfold for graph labels."""
        if self.split_sizes:
            return {"scheme": "given"}
        if self.task == "node_classification" and self.num_graphs == 1:
            return {"scheme": "random_per_class"}
        return {"scheme": "stratified_kfold"} if self.task == "graph_classification" else {"scheme": "given"}


class _Source:
    """Names a source in error messages: ``what`` (e.g. "graph file x.pt") and the general fix; ``size``: the bytes
    of the source's file, which bound the nodes it may state without data (:func:`~gnnbench.data.store.
    node_count_problem`), None for a source that is no one file."""

    def __init__(self, what: str, fix: str, size: int | None = None) -> None:
        self.what, self.fix, self.size = what, fix, size

    def error(self, message: str, fix: str | None = None) -> DataError:
        return DataError(f"{self.what}: {message}; {fix or self.fix}")


# ------------------------------------------------------------------------------------------------------ PyG objects
def _numpy(tensor, key: str, src: _Source) -> np.ndarray:
    import torch

    if tensor.is_complex() or tensor.dtype in (torch.uint16, torch.uint32, torch.uint64):
        raise src.error(f"'{key}' has dtype {tensor.dtype}, expected integers, floats or booleans")
    if tensor.is_floating_point() and tensor.dtype not in (torch.float32, torch.float64):
        tensor = tensor.float()  # float16 / bfloat16: NumPy has no bfloat16
    return tensor.detach().cpu().numpy()


def from_pyg(data, slices: dict | None, src: _Source) -> tuple[GraphColumns, list[str]]:
    """Raw columns of a collated PyG ``Data`` (``InMemoryDataset._data`` with its ``slices``; ``slices`` empty or
    None: one graph), and notes of what was ignored. Per-graph sizes come from the slices (vectorised: no loop over
    graphs); each attribute's level is checked against them."""
    import torch

    store = data.to_dict()
    multi = bool(slices)
    tensors = {k: v for k, v in store.items() if isinstance(v, torch.Tensor)}
    ignored = sorted(k for k in store if k not in tensors and k != "num_nodes")
    edge_index = tensors.get("edge_index")
    if edge_index is None:
        raise src.error("the graphs have no 'edge_index'", "give every Data an edge_index (2, E) of node ids")
    if edge_index.dim() != 2 or edge_index.shape[0] != 2 or edge_index.is_floating_point() or edge_index.dtype == \
            torch.bool:
        raise src.error(f"'edge_index' must be an integer tensor of shape (2, E), got {edge_index.dtype} "
                        f"{tuple(edge_index.shape)}")
    if multi:
        ptr = {k: np.asarray(v, dtype=np.int64) for k, v in slices.items()}
        num_graphs = len(ptr["edge_index"]) - 1
        num_edges = np.diff(ptr["edge_index"])
        explicit = getattr(data, "_num_nodes", None)
        if isinstance(explicit, (list, tuple)) and len(explicit) == num_graphs and all(
                isinstance(n, int) for n in explicit):
            num_nodes = np.asarray(explicit, dtype=np.int64)
        elif "x" in ptr or "pos" in ptr:
            num_nodes = np.diff(ptr["x" if "x" in ptr else "pos"])
        else:
            raise src.error("the graphs have neither 'x' nor 'num_nodes'", "set Data.num_nodes (or give node features "
                            "x) in every graph")

        def lengths(key: str) -> np.ndarray:
            return np.diff(ptr[key])
    else:
        num_graphs, num_edges = 1, np.array([edge_index.shape[1]], dtype=np.int64)
        n = store.get("num_nodes")
        if n is None:
            holder = tensors.get("x", tensors.get("pos"))
            if holder is None:
                raise src.error("the graph has neither 'x' nor 'num_nodes'", "set Data.num_nodes (or give node "
                                "features x)")
            n = holder.shape[0] if holder.dim() else 1
        num_nodes = np.array([int(n)], dtype=np.int64)

        def lengths(key: str) -> np.ndarray:
            value = tensors[key]
            return np.array([value.shape[data.__cat_dim__(key, value)] if value.dim() else 1], dtype=np.int64)

    def check_level(key: str, expected: np.ndarray, unit: str) -> np.ndarray:
        got = lengths(key)
        bad = np.flatnonzero(got != expected)
        if bad.size:
            i = int(bad[0])
            raise src.error(f"'{key}' has {got[i]} rows in graph {i}, which has {expected[i]} {unit}", src.fix)
        return _numpy(tensors[key], key, src)

    columns = GraphColumns(num_nodes=num_nodes, num_edges=num_edges.astype(np.int64),
                           src=_numpy(edge_index[0], "edge_index", src), dst=_numpy(edge_index[1], "edge_index", src))
    if "x" in tensors:
        columns.node["x"] = check_level("x", num_nodes, "nodes")
    if "edge_attr" in tensors:
        columns.edge["edge_attr"] = check_level("edge_attr", num_edges, "edges")
    if "y" in tensors:
        got = lengths("y")
        if multi and (got == 1).all():
            columns.graph["y"] = _numpy(tensors["y"], "y", src)
        elif (got == num_nodes).all():
            columns.node["y"] = _numpy(tensors["y"], "y", src)
        elif (got == num_edges).all():
            columns.edge["y"] = _numpy(tensors["y"], "y", src)
        elif not multi and tensors["y"].numel() == 1:
            columns.graph["y"] = _numpy(tensors["y"].reshape(1), "y", src)
        else:
            i = int(np.flatnonzero((got != 1) & (got != num_nodes) & (got != num_edges))[0]) if multi else 0
            raise src.error(f"'y' has {got[i]} entries in graph {i}, which has {num_nodes[i]} nodes and "
                            f"{num_edges[i]} edges", "give one label per graph (shape (1,) or (1, k) per graph), "
                            "per node or per edge")
    masks = [k for k in MASKS if k in tensors]
    notes = []
    if masks and not multi:
        split = _mask_split({k: check_level(k, num_nodes, "nodes") for k in masks}, src)
        if isinstance(split, str):
            notes.append(split)
        else:
            columns.node["split"] = split
            notes.append("node column split = train_mask / val_mask / test_mask (0 train, 1 val, 2 test, -1 none)")
    elif masks:
        notes.append(f"ignored {', '.join(masks)} (a split of several graphs is given by graph order: use the "
                     "generator's splits parameter or a split file)")
    used = {"edge_index", "x", "edge_attr", "y", *MASKS}
    ignored = sorted(set(ignored) | {k for k in tensors if k not in used})
    if ignored:
        notes.append(f"ignored attributes: {', '.join(ignored)}")
    return columns, notes


def _mask_split(masks: dict[str, np.ndarray], src: _Source) -> np.ndarray | str:
    """The node column ``split`` (int8, (N,) or (N, k)) from boolean masks; a note instead when the masks do not
    make a split (one missing or a part empty)."""
    missing = [k for k in MASKS if k not in masks]
    if missing:
        return f"ignored {', '.join(sorted(masks))}: no {', '.join(missing)}, so the data has no complete split"
    arrays = {k: np.asarray(v).astype(bool) for k, v in masks.items()}
    arrays = {k: v[:, None] if v.ndim == 1 else v for k, v in arrays.items()}
    widths = {v.shape[1] if v.ndim == 2 else -1 for v in arrays.values()}
    k = max(widths)
    if -1 in widths or widths - {1, k}:
        raise src.error(f"the masks have shapes {', '.join(f'{n} {tuple(v.shape)}' for n, v in arrays.items())}",
                        "give masks of shape (N,) or (N, k) with one k")
    n = next(iter(arrays.values())).shape[0]
    full = {part: np.broadcast_to(arrays[f"{part}_mask"], (n, k)) for part in ("train", "val", "test")}
    overlap = (full["train"] & full["val"]) | (full["train"] & full["test"]) | (full["val"] & full["test"])
    if overlap.any():
        node, column = (int(v[0]) for v in np.nonzero(overlap))
        raise src.error(f"node {node} is in two of train_mask, val_mask and test_mask (split {column})",
                        "the dataset's masks must be disjoint")
    empty = [part for part, mask in full.items() if not mask.any(axis=0).all()]
    if empty:
        return f"ignored the masks: {', '.join(empty)} is empty in a split"
    split = np.full((n, k), -1, dtype=np.int8)
    for part, mask in full.items():
        split[mask] = SPLIT_CODES[part]
    return split[:, 0] if k == 1 else split


def collate_graphs(graphs: list, src: _Source) -> tuple[GraphColumns, list[str]]:
    """Raw columns of a list of PyG ``Data`` (PyG's own collate: one ``torch.cat`` per attribute)."""
    from torch_geometric.data import Data, InMemoryDataset

    if not graphs:
        raise src.error("holds no graphs", "save a non-empty list of Data")
    bad = next((i for i, g in enumerate(graphs) if not isinstance(g, Data)), None)
    if bad is not None:
        raise src.error(f"item {bad} is a {type(graphs[bad]).__name__}, expected torch_geometric.data.Data")
    try:
        data, slices = InMemoryDataset.collate(list(graphs))
    except (KeyError, AttributeError, RuntimeError, TypeError, ValueError, IndexError) as exc:
        raise src.error(f"the graphs do not fit together ({_reason(exc)})", "every Data must have the same "
                        "attributes, with the same trailing shapes and dtypes") from None
    return from_pyg(data, slices, src)


def _reason(exc: BaseException, limit: int = 160) -> str:
    """``Type: first meaningful line`` of an exception, cut at a word boundary within ``limit`` characters. torch's
    weights-only loader wraps its reason ("Unsupported operand 24") in paragraphs of advice: the reason is kept."""
    text = str(exc)
    if "WeightsUnpickler error:" in text:
        text = text.split("WeightsUnpickler error:", 1)[1]
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(line) > limit:
        line = line[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " ..."
    return f"{type(exc).__name__}: {line}" if line else type(exc).__name__


# ---------------------------------------------------------------------------------------------------- to the store
def _feature(values: np.ndarray, key: str, unit: str, src: _Source) -> tuple[np.ndarray, FeatureSpec]:
    """A node or edge input: one column of non-negative integers → categorical ids; else float32 (n, d)."""
    if values.dtype.kind not in "biuf":
        raise src.error(f"'{key}' has dtype {values.dtype}, expected numbers")
    if values.ndim == 2 and values.shape[1] == 1 and values.dtype.kind in "iu":
        values = values[:, 0]
    if values.dtype.kind in "iu" and values.ndim == 1 and (values.size == 0 or values.min() >= 0):
        size = int(values.max(initial=0)) + 1
        return values.astype(np.int16 if size <= _MAX_CLASSES else np.int64), FeatureSpec("categorical", size)
    values = values.astype(np.float32)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2 or values.shape[1] == 0:
        raise src.error(f"'{key}' has shape {values.shape}, expected one number or one row of numbers per {unit}")
    if not np.isfinite(values).all():
        raise src.error(f"'{key}' holds NaN or infinite values")
    return values, FeatureSpec("continuous", int(values.shape[1]))


def _labels(y: np.ndarray, level: str, task: str, src: _Source) -> tuple[np.ndarray, int]:
    """Labels in the store's dtype and the number of outputs (classes or targets)."""
    if y.dtype.kind not in "biuf":
        raise src.error(f"'y' has dtype {y.dtype}, expected numbers")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if task == "graph_regression":
        y = y.astype(np.float32)
        if y.ndim not in (1, 2) or not np.isfinite(y).all():
            raise src.error(f"'y' (shape {y.shape}) must hold finite regression targets, one value or one row per "
                            "graph")
        return y, 1 if y.ndim == 1 else int(y.shape[1])
    if y.ndim != 1:
        raise src.error(f"'y' has shape {y.shape}: {task} needs one class index per {level} (multi-label targets "
                        "are not supported)")
    if y.dtype.kind == "f":
        if not np.isfinite(y).all() or (np.mod(y, 1) != 0).any():
            raise src.error("'y' holds non-integer values but the task is classification",
                            "store class indices, or set task: graph_regression for real-valued graph targets")
    y = y.astype(np.int64)
    low = -1 if level == "node" else 0  # −1 = unlabelled node
    if y.size and y.min() < low:
        raise src.error(f"'y' holds {int(y.min())}; class indices start at 0"
                        + (" (-1 marks an unlabelled node)" if level == "node" else ""))
    classes = int(y.max(initial=-1)) + 1
    if classes < 1:
        raise src.error("'y' labels no node", "label at least one node")
    if classes > _MAX_CLASSES:
        raise src.error(f"'y' names {classes} classes, more than gnnbench stores ({_MAX_CLASSES})")
    return y.astype(np.int16), classes


def _split(codes: np.ndarray, level: str, src: _Source) -> tuple[np.ndarray, dict[str, int], int]:
    """The store's ``split`` column (int8), its sizes (of the first split) and the number of splits."""
    codes = np.asarray(codes)
    if codes.dtype.kind not in "iu" or codes.ndim not in (1, 2) or (level == "graph" and codes.ndim != 1):
        raise src.error(f"'split' ({codes.dtype} {codes.shape}) must hold integer codes, one per {level}",
                        "use 0 train, 1 val, 2 test" + (", -1 none" if level == "node" else ""))
    allowed = [-1, 0, 1, 2] if level == "node" else [0, 1, 2]
    if not np.isin(codes, allowed).all():
        raise src.error(f"'split' holds codes other than {', '.join(map(str, allowed))}",
                        "use 0 train, 1 val, 2 test" + (", -1 none" if level == "node" else ""))
    if level == "graph" and (np.diff(codes) < 0).any():
        raise src.error("'split' is not sorted: graphs must be stored train first, then val, then test",
                        "sort the graphs by split")
    table = codes.reshape(len(codes), -1)
    empty = [part for part, code in SPLIT_CODES.items() if not (table == code).any(axis=0).all()]
    if empty:
        raise src.error(f"'split' leaves {', '.join(empty)} empty", "every part needs at least one "
                        f"{level} (every protocol selects or early-stops on val)")
    sizes = {part: int(np.count_nonzero(table[:, 0] == code)) for part, code in SPLIT_CODES.items()}
    if level == "graph":
        sizes = graph_split_sizes(codes)
    return codes.astype(np.int8), sizes, int(table.shape[1])


def to_columns(raw: GraphColumns, task: str, src: _Source, notes: list[str] | None = None,
               ) -> tuple[GraphColumns, GraphSummary]:
    """Store columns and their summary from raw columns (module doc: the conversion rules); ``task`` empty: inferred
    from the labels."""
    notes = list(notes or [])
    num_nodes = np.asarray(raw.num_nodes)
    num_edges = np.asarray(raw.num_edges)
    if num_nodes.dtype.kind not in "iu" or num_nodes.ndim != 1 or num_nodes.size == 0:
        raise src.error("no graphs, or node counts that are not integers")
    if (num_nodes < 1).any():
        raise src.error(f"graph {int(np.flatnonzero(num_nodes < 1)[0])} has no nodes", "every graph needs a node")
    problem = node_count_problem(num_nodes, bool(raw.node or raw.sparse), src.size)
    if problem is not None:  # before x = 1 per node is allocated
        raise src.error(problem, "give each graph's true num_nodes")
    if raw.src.dtype.kind not in "iu" or raw.dst.dtype.kind not in "iu":
        raise src.error(f"the edges' node ids have dtype {raw.src.dtype} / {raw.dst.dtype}, expected integers")
    total_edges = int(num_edges.sum())
    if raw.src.shape != (total_edges,) or raw.dst.shape != (total_edges,):
        raise src.error(f"{raw.src.shape[0]} sources and {raw.dst.shape[0]} targets for {total_edges} edges")
    limit = np.repeat(num_nodes, num_edges)
    outside = (raw.src < 0) | (raw.dst < 0) | (raw.src >= limit) | (raw.dst >= limit)
    if outside.any():
        e = int(np.flatnonzero(outside)[0])
        graph = int(np.searchsorted(np.cumsum(num_edges), e, side="right"))
        first = int(np.cumsum(num_edges)[graph - 1]) if graph else 0
        raise src.error(f"edge {e - first} of graph {graph} joins nodes {int(raw.src[e])} -> {int(raw.dst[e])}, "
                        f"outside the graph's {int(num_nodes[graph])} nodes (0 .. {int(num_nodes[graph]) - 1})",
                        "node ids of edges are local to their graph")

    levels = [level for level, group in (("node", raw.node), ("edge", raw.edge), ("graph", raw.graph))
              if "y" in group]
    if not levels:
        raise src.error("has no labels 'y'", "give y: one label per graph, per node or per edge")
    level = levels[0]
    inferred = {"node": "node_classification", "edge": "edge_classification"}.get(level) or (
        "graph_regression" if raw.graph["y"].dtype.kind == "f" else "graph_classification")
    if task and TASK_LEVEL[task] != level:
        raise src.error(f"task {task} needs one label per {TASK_LEVEL[task]}, but 'y' has one per {level}",
                        f"set task: {inferred} (or leave task empty) or change the labels")
    task = task or inferred
    if level == "graph" and num_nodes.size == 1:
        raise src.error("one graph with a graph-level label: nothing to train and test on",
                        "give many graphs, or one label per node")
    group = {"node": raw.node, "edge": raw.edge, "graph": raw.graph}[level]
    y, outputs = _labels(np.asarray(group["y"]), level, task, src)
    notes.append(f"task {task}" + (" (inferred from y)" if task == inferred else ""))

    node, edge, graph, sparse = {}, {}, {}, {}
    {"node": node, "edge": edge, "graph": graph}[level]["y"] = y
    if "x" in raw.sparse:
        sparse["x"] = raw.sparse["x"]
        node_spec = FeatureSpec("continuous", int(raw.sparse["x"].width), sparse=True)
    elif "x" in raw.node:
        node["x"], node_spec = _feature(np.asarray(raw.node["x"]), "x", "node", src)
    else:
        node["x"], node_spec = np.ones((int(num_nodes.sum()), 1), dtype=np.float32), FeatureSpec("continuous", 1)
        notes.append("no node features: x = 1 per node")
    edge_spec = None
    if "edge_attr" in raw.edge:
        edge["edge_attr"], edge_spec = _feature(np.asarray(raw.edge["edge_attr"]), "edge_attr", "edge", src)
    split_sizes, given = None, 1
    for split_level, holder in (("node", raw.node), ("graph", raw.graph)):
        if "split" not in holder:
            continue
        if split_level == "node" and not (task == "node_classification" and num_nodes.size == 1):
            raise src.error("a node-level 'split' needs one graph with node labels",
                            "split several graphs by a graph-level split (one code per graph) or a split file")
        codes, split_sizes, given = _split(holder["split"], split_level, src)
        (node if split_level == "node" else graph)["split"] = codes
    columns = GraphColumns(num_nodes=num_nodes.astype(np.int64), num_edges=num_edges.astype(np.int64),
                           src=raw.src.astype(np.int32), dst=raw.dst.astype(np.int32), node=node, edge=edge,
                           graph=graph, sparse=sparse)
    columns.validate()
    statistics = {}
    if task == "node_classification" and num_nodes.size == 1:
        labelled = y[y >= 0]
        statistics["all"] = {"nodes": int(num_nodes[0]), "unlabelled_nodes": int(y.size - labelled.size),
                             "class_sizes": np.bincount(labelled, minlength=outputs).tolist()}
    summary = GraphSummary(task=task, num_outputs=outputs, num_graphs=int(num_nodes.size), node_features=node_spec,
                           edge_features=edge_spec, split_sizes=split_sizes, given_splits=given,
                           notes=["edges as given (no symmetrisation; self loops and duplicates kept)", *notes],
                           statistics=statistics)
    return columns, summary


# --------------------------------------------------------------------------------------------------------- .pt files
def _pt_allowed() -> list:
    from torch_geometric.data import Data
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import GlobalStorage

    return [Data, DataEdgeAttr, DataTensorAttr, GlobalStorage]


PT_ALLOWED = ("torch_geometric.data.data.Data", "torch_geometric.data.data.DataEdgeAttr",
              "torch_geometric.data.data.DataTensorAttr", "torch_geometric.data.storage.GlobalStorage")
"""The globals a ``.pt`` graph file may name beyond torch's own tensor classes (module doc)."""


def load_pt(path: Path, src: _Source) -> list:
    """The graphs of a ``.pt`` file: a list of ``Data`` (one ``Data`` is a list of one), loaded with
    ``weights_only=True`` and only :data:`PT_ALLOWED` beyond torch's own classes."""
    import torch
    import torch.serialization as serialization

    allowed = _pt_allowed()
    try:
        check_zip(path, src.what)  # torch's reader allocates what a record declares
        with _LOAD_LOCK:
            saved = serialization.get_safe_globals()
            serialization.clear_safe_globals()
            try:
                serialization.add_safe_globals(allowed)
                with warnings.catch_warnings():  # e.g. "Detected pickle protocol 4": the outcome is reported alone
                    warnings.simplefilter("ignore")
                    obj = torch.load(path, map_location="cpu", weights_only=True)
            finally:
                serialization.clear_safe_globals()
                serialization.add_safe_globals(saved)
    except pickle.UnpicklingError as exc:
        found = re.search(r"GLOBAL ([\w.]+)", str(exc))
        if found:
            raise src.error(f"names {found.group(1)}, which gnnbench does not load (a .pt graph file may hold only "
                            "tensors and torch_geometric.data.Data; nothing else is unpickled)",
                            "save a list of plain Data objects: torch.save([data, ...], path)") from None
        raise src.error(f"is not a readable torch file ({_reason(exc)})") from None
    except (RuntimeError, EOFError, ValueError, OSError, KeyError, IndexError, TypeError, AttributeError,
            MemoryError, zipfile.BadZipFile) as exc:
        raise src.error(f"is not a readable torch file ({_reason(exc)})") from None
    graphs = obj if isinstance(obj, (list, tuple)) else [obj]
    return list(graphs)


# ---------------------------------------------------------------------------------------------------- Parquet files
def _list_values(column, name: str, src: _Source) -> tuple[np.ndarray, np.ndarray]:
    """(values, per-row pointers) of a list column; values (n,) or (n, d) for fixed-length inner lists."""
    import pyarrow as pa

    arr = column.combine_chunks()
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        raise src.error(f"column '{name}' holds {arr.type}, expected a list per graph")
    offsets = np.asarray(arr.offsets, dtype=np.int64)
    return _values(arr.flatten(), name, src), offsets - offsets[0]


def _values(arr, name: str, src: _Source) -> np.ndarray:
    """A flat Arrow array of numbers, or of equal-length lists of numbers, as (n,) or (n, d) NumPy."""
    import pyarrow as pa

    if pa.types.is_fixed_size_list(arr.type) or pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        if arr.null_count:
            raise src.error(f"column '{name}' has missing (null) entries")
        if pa.types.is_fixed_size_list(arr.type):
            width = arr.type.list_size
        else:
            widths = np.diff(np.asarray(arr.offsets, dtype=np.int64))
            width = int(widths[0]) if widths.size else 0
            if (widths != width).any():
                raise src.error(f"column '{name}' has rows of different lengths ({int(widths.min())} .. "
                                f"{int(widths.max())} numbers)", "give every node (edge) the same number of values")
        flat = _values(arr.flatten(), name, src)
        if flat.ndim != 1:
            raise src.error(f"column '{name}' is nested deeper than a list of numbers per entry")
        return flat.reshape(-1, width)
    if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type) or pa.types.is_boolean(arr.type)):
        raise src.error(f"column '{name}' holds {arr.type}, expected numbers")
    if arr.null_count:
        raise src.error(f"column '{name}' has missing (null) entries")
    return np.asarray(arr.to_numpy(zero_copy_only=False))


def read_parquet(path: Path, src: _Source) -> tuple[GraphColumns, list[str]]:
    """Raw columns of a Parquet graph file (module doc: columns, layout), and notes of what was ignored."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise src.error(f"is not a readable Parquet file ({_reason(exc)})") from None
    if table.num_rows == 0:  # its columns then have no type to check ("holds null")
        raise src.error("is empty (0 rows: no graphs)", EMPTY_FIX)
    names = table.column_names
    for required in ("num_nodes", "src", "dst", ):
        if required not in names:
            raise src.error(f"lacks the column '{required}' (it has: {', '.join(names) or 'none'})")
    counts = table.column("num_nodes").combine_chunks()
    if not pa.types.is_integer(counts.type) or counts.null_count:
        raise src.error(f"column 'num_nodes' holds {counts.type}, expected one integer per graph")
    num_nodes = np.asarray(counts.to_numpy(), dtype=np.int64)
    if (num_nodes < 1).any():
        raise src.error(f"graph {int(np.flatnonzero(num_nodes < 1)[0])} has num_nodes < 1", "every graph needs a node")
    edges = {}
    for name in ("src", "dst"):
        values, ptr = _list_values(table.column(name), name, src)
        if values.ndim != 1 or values.dtype.kind not in "iu":
            raise src.error(f"column '{name}' holds {values.dtype} {values.shape[1:]}, expected a list of integer "
                            "node ids per graph")
        edges[name] = (values, ptr)
    if not np.array_equal(edges["src"][1], edges["dst"][1]):
        i = int(np.flatnonzero(np.diff(edges["src"][1]) != np.diff(edges["dst"][1]))[0])
        raise src.error(f"graph {i} has {int(np.diff(edges['src'][1])[i])} sources (src) and "
                        f"{int(np.diff(edges['dst'][1])[i])} targets (dst)", "give one src and one dst per edge")
    num_edges = np.diff(edges["src"][1])
    raw = GraphColumns(num_nodes=num_nodes, num_edges=num_edges, src=edges["src"][0], dst=edges["dst"][0])
    node_ptr = np.concatenate([[0], np.cumsum(num_nodes)])
    layout = (table.schema.metadata or {}).get(METADATA_KEY)
    notes = []
    if layout is not None:  # a graph store gnnbench wrote: its layout says each column's level
        try:
            layout = json.loads(layout)
            levels = [(name, level) for level in ("node", "edge", "graph") for name in layout[level]]
            sparse = dict(layout.get("sparse", {}))
        except (ValueError, KeyError, TypeError):
            raise src.error("has unreadable gnnbench layout metadata") from None
        columns = {name: graph_column_name(name, layout) if level == "graph" else name for name, level in levels}
    else:
        levels, sparse, columns = [], {}, {}
        for name in names:
            if name in ("x", "y", "split", "edge_attr"):
                levels.append((name, {"x": "node", "edge_attr": "edge"}.get(name, "?")))
                columns[name] = name
        ignored = sorted(set(names) - {"num_nodes", "src", "dst", *columns})
        if ignored:
            notes.append(f"ignored columns: {', '.join(ignored)}")
    for name, level in levels:
        column = table.column(columns[name]) if columns[name] in names else None
        if column is None:
            raise src.error(f"lacks the column '{columns[name]}' its layout metadata names")
        if level == "?":  # y or split of a file without layout: per graph, or a list per node / per edge
            if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
                lengths = np.diff(_list_values(column, name, src)[1])
                level = "node" if np.array_equal(lengths, num_nodes) else (
                    "edge" if np.array_equal(lengths, num_edges) else "")
                if not level:
                    i = int(np.flatnonzero((lengths != num_nodes) & (lengths != num_edges))[0])
                    raise src.error(f"column '{name}' has {lengths[i]} entries in graph {i}, which has "
                                    f"{num_nodes[i]} nodes and {num_edges[i]} edges",
                                    "give one value per graph, or a list with one value per node or per edge")
            else:
                level = "graph"
        if level == "graph":
            raw.graph[name] = _values(column.combine_chunks(), name, src)
            continue
        values, ptr = _list_values(column, name, src)
        expected = num_nodes if level == "node" else num_edges
        bad = np.flatnonzero(np.diff(ptr) != expected)
        if bad.size:
            i = int(bad[0])
            raise src.error(f"column '{name}' has {int(np.diff(ptr)[i])} entries in graph {i}, which has "
                            f"{int(expected[i])} {level}s", f"give one entry per {level}")
        (raw.node if level == "node" else raw.edge)[name] = values
    for name, width in sparse.items():
        raw.sparse[name] = _read_sparse(table, name, width, node_ptr, path, src.what)
    return raw, notes


# ---------------------------------------------------------------------------------------------------------- reading
def read_graph_file(path: str | os.PathLike, task: str = "") -> tuple[GraphColumns, GraphSummary]:
    """Store columns and summary of a graph file (``.pt`` or ``.parquet``, module doc)."""
    path = Path(path)
    src = _Source(f"graph file {path}", FILE_FIX)
    if not path.is_file():
        raise src.error("does not exist", "check the dataset's params.path (relative to the suite file)")
    src.size = path.stat().st_size
    if src.size == 0:
        raise src.error("is empty (0 bytes)", EMPTY_FIX)
    suffix = path.suffix.lower()
    if suffix in PT_SUFFIXES:
        raw, notes = collate_graphs(load_pt(path, src), src)
    elif suffix in PARQUET_SUFFIXES:
        raw, notes = read_parquet(path, src)
    else:
        raise src.error(f"has suffix {path.suffix!r}", "use .pt (a list of PyG Data) or .parquet")
    return to_columns(raw, task, src, notes)


def write_graphs(path: str | os.PathLike, graphs: Any, task: str = "") -> GraphSummary:
    """Write ``graphs`` — a list of PyG ``Data``, one ``Data``, or :class:`GraphColumns` in the store's conventions —
    as a Parquet graph file (a gnnbench graph store, written atomically) that generator ``graph_file`` reads back to
    the same columns. Checked like any graph file: a problem raises a DataError and writes nothing."""
    src = _Source(f"graphs for {path}", "fix the graphs (docs/datasets.md#graphs-you-already-have)")
    if isinstance(graphs, GraphColumns):
        raw, notes = graphs, []
    else:
        raw, notes = collate_graphs(graphs if isinstance(graphs, (list, tuple)) else [graphs], src)
    columns, summary = to_columns(raw, task, src, notes)
    write_graph_store(path, columns)
    return summary
