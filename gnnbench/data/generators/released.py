"""The published graphs of PATTERN, CLUSTER, MNIST, CIFAR10, TSP and CSL (Dwivedi et al.), converted into the
columns of the generators that regenerate them (docs/datasets.md#the-released-graphs).

gnnbench regenerates these datasets from their recipes (``sbm_pattern``, ``sbm_cluster``, ``superpixels_mnist``,
``superpixels_cifar10``, ``tsp``, ``csl``); generator ``released`` instead reads the exact graphs the benchmark
published, as PyTorch Geometric's ``GNNBenchmarkDataset`` downloads them, so results can be compared on identical
data. Parameter ``name`` picks the dataset; the output has **the same columns, dtypes and DatasetMeta (task, loss,
metric, feature specs, outputs, PE usage, split sizes) as the regenerating generator**, so every preset and model
trains on it unchanged.

Raw files (``raw_dir/dwivedi2020/``, named by the paper that released them — a cache downloaded when it was named
``raw_dir/benchmarking-gnns/`` can be renamed to be reused; ``mirror`` is tried first, as ``mirror/<file name>``):

* PATTERN, CLUSTER, MNIST, CIFAR10, TSP: ``https://data.pyg.org/datasets/benchmarking-gnns/{NAME}_v2.zip``. The
  zip holds one member ``{NAME}_v2.pt`` (PyG's ``raw_file_names``; ``train_data.pt`` / ``val_data.pt`` /
  ``test_data.pt`` are the files PyG's ``process()`` *writes*): a torch-saved list ``[train, val, test]`` of lists
  of dicts of tensors, one dict per graph (PyG builds ``Data(**dict)``). No checksum is published: the SHA-256 is
  recorded at first download and verified on every reuse (:mod:`gnnbench.data.download`).
* CSL: ``https://www.dropbox.com/s/rnbkp5ubgk82ocu/CSL.zip?dl=1`` (the benchmark's and PyG's URL), SHA-256 pinned
  (:data:`CSL_SHA256`, verified on the real file). Members ``graphs_Kary_Deterministic_Graphs.pkl`` (a pickled list
  of 150 SciPy COO matrices 41×41, self loops included) and ``y_Kary_Deterministic_Graphs.pt`` (a torch LongTensor
  of 150 labels); the other members (``X_*``, ``__MACOSX/``) are not read.

Loading never runs code chosen by the file: ``.pt`` files go through ``torch.load(..., weights_only=True)`` (plain
containers and tensors only; a file naming any other class — e.g. PyG's ``Data``, which the older v1 files held —
is a one-line :class:`DataError`, never a fallback to ``weights_only=False``), the CSL pickle through
:func:`gnnbench.data.safe_pickle.safe_load` (SciPy matrices become plain holders, rebuilt by ``to_csr``). A ``.pt``
member is copied to a temporary file beside the zip for ``torch.load`` (deleted afterwards). Every member is read
through :mod:`gnnbench.data.archive`: one declaring more than it may expand to is refused before anything is
decompressed or written, and none is read past its declared size.

Conversion (graphs stored train, val, test, in the release's order, so split scheme ``given`` is the published split;
each graph's edges in the release's order; ``edge_index`` is local to the graph, as PyG stores it):

=========  ==================================================================================================
PATTERN    node ``x`` int16 = the node feature id in {0, 1, 2} (vocabulary 3), node ``y`` int16 (0/1); no edge
CLUSTER    feature column (the benchmark's SBM edge feature is the constant 1, which models recreate — as the
           ``sbm_*`` generators). CLUSTER: ``x`` ∈ 0..6 (vocabulary 7), ``y`` ∈ 0..5. The release's ``x`` may be
           the id itself ((N,) or (N, 1), integral) or its one-hot row ((N, vocabulary), exactly one 1 per row);
           an ``edge_attr``, if present, must be all ones.
MNIST      node ``x`` float32 = [intensity (1 or 3 channels), coordinates (2)]: PyG's ``x`` (intensity) followed by
CIFAR10    PyG's ``pos`` (the benchmark's [mean intensity, row/size, col/size] order, as ``superpixels_*``); a
           release without ``pos`` must hold all C + 2 columns in ``x``. Edge ``edge_attr`` float32 (E, 1) = PyG's
           ``edge_attr`` ((E,) or (E, 1): the kNN affinity); graph ``y`` int16.
TSP        node ``x`` float32 (N, 2) = the coordinates (PyG's ``x``, else ``pos``); edge ``edge_attr`` float32
           (E, 1) = the distance; edge ``y`` int16 (1 = tour edge).
CSL        self loops removed (the benchmark's loader does; PyG too) → 41 nodes and 164 directed edges per graph,
           row-major; node ``x`` int16 = 0 (vocabulary 1); graph ``y`` int16. No split comes with CSL: 5-fold
           cross-validation. A generator has one default split (``given``), so a CSL dataset's config names its
           split (``stratified_kfold``, 5 folds, val_fraction 0.25, as the ``csl`` generator's default); without
           one the suite says so.
=========  ==================================================================================================

Decisions:

* **Superpixel input.** PyG splits the benchmark's node feature [intensity, coordinates] into ``x`` and ``pos``
  (GraphGPS-style pipelines concatenate them back as ``cat([x, pos])``); gnnbench concatenates in that order, which
  is the benchmark's and the ``superpixels_*`` generators' order, and keeps ``pos`` as released (row, col order —
  not checkable offline).
* **Float16.** The benchmark stores superpixel features as float16; gnnbench's generators store float32. The
  release's values are kept exactly as released (float16 values converted exactly to float32), not re-rounded and
  not "un-rounded": all columns are float32 as the generators write them.
* **TSP val/test.** The benchmark's pickle is ``[train, val, test]``, but its loader reads test = f[1] and val = f[2]
  (the released code's ``data/TSP.py``). PyG's ``TSP_v2.pt`` holds the benchmark's graphs (converted by PyG; no script
  is published) and PyG uses ``inputs[1]`` as val and ``inputs[2]`` as test. Whether the conversion went through the
  loader (the swap already applied: PyG's val/test = the benchmark's effective val/test) or straight from the pickle
  (PyG's val/test = the pickle's names) is not documented and cannot be checked offline. gnnbench takes PyG's val as val
  and PyG's test as test — no second swap: (1) it is what every PyG-based result on TSP (e.g. GraphGPS-style pipelines)
  selects and scores on, so numbers stay comparable with them; (2) the two parts are i.i.d. samples of 1,000 graphs from
  one distribution, so either reading gives the same expected score. The ``tsp`` generator likewise uses its val/test as
  named.
* **Sizes.** ``num_train`` / ``num_val`` / ``num_test`` = 0 (default) takes the whole published part, and the
  release must hold exactly the published count (PATTERN 10,000/2,000/2,000, CLUSTER 10,000/1,000/1,000, MNIST
  55,000/5,000/10,000, CIFAR10 45,000/5,000/10,000, TSP 10,000/1,000/1,000) — otherwise it is not the published
  file; a positive value takes the first that many graphs of the part (quick runs). CSL takes all 150 graphs.
* Bad input — an unreadable or truncated zip, a missing member, a forbidden class or global, a wrong structure,
  dtype, shape or value range (ids outside the vocabulary, edges outside the graph, non-finite features) — is a
  one-line :class:`DataError` naming the file and member; nothing is written. ``seed`` is not used.

Speed: the unavoidable Python pass over the loaded dicts only collects tensor references and sizes; features,
edges and labels are concatenated with one ``torch.cat`` per key and checked with NumPy over all graphs at once.
Nearly all the time goes to the restricted ``torch.load(weights_only=True)``, about twice an unrestricted load — the
price of never running the file's code (``python benchmarks/released_speed.py``; figures: docs/performance.md).
"""

from __future__ import annotations

import io
import os
import pickle
import re
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gnnbench.data.archive import check_zip, copy_member, read_member
from gnnbench.data.download import RawFile
from gnnbench.data.generators import csl
from gnnbench.data.generators.base import Generator
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.safe_pickle import safe_load, to_csr
from gnnbench.data.store import GraphColumns
from gnnbench.errors import ConfigError, DataError
from gnnbench.papers import DWIVEDI2020

PYG_URL = "https://data.pyg.org/datasets/benchmarking-gnns/{name}_v2.zip"
CSL_URL = "https://www.dropbox.com/s/rnbkp5ubgk82ocu/CSL.zip?dl=1"
CSL_SHA256 = "b01ec7b67e78746546382cb02951a7d1b19c024ad8835b04254aa7156df0d166"
CSL_GRAPHS = "graphs_Kary_Deterministic_Graphs.pkl"
CSL_LABELS = "y_Kary_Deterministic_Graphs.pt"
CSL_NODES, CSL_EDGES, CSL_CLASSES, CSL_GRAPH_COUNT = 41, 164, 10, 150
RAW_FOLDER = DWIVEDI2020  # raw_dir folder of the released files, named by their paper
SPLITS = ("train", "val", "test")
WHAT = "released dataset zip"


@dataclass(frozen=True)
class Release:
    """One published dataset: its sizes and the DatasetMeta fields of the generator that regenerates it."""

    benchmark_name: str  # the benchmark's (and the presets') dataset name
    generator: str  # the gnnbench generator that regenerates it
    sizes: tuple[int, int, int] | None  # published train / val / test graphs (None: no split, CSL)
    task: str
    loss: str
    metric: str
    num_outputs: int
    node_features: FeatureSpec
    edge_features: FeatureSpec | None
    pe_usage: str = "add"


_NODE = ("node_classification", "weighted_cross_entropy", "weighted_accuracy")
_GRAPH = ("graph_classification", "cross_entropy", "accuracy")
RELEASES = {
    "PATTERN": Release("SBM_PATTERN", "sbm_pattern", (10000, 2000, 2000), *_NODE, 2, FeatureSpec("categorical", 3),
                       None),
    "CLUSTER": Release("SBM_CLUSTER", "sbm_cluster", (10000, 1000, 1000), *_NODE, 6, FeatureSpec("categorical", 7),
                       None),
    "MNIST": Release("MNIST", "superpixels_mnist", (55000, 5000, 10000), *_GRAPH, 10, FeatureSpec("continuous", 3),
                     FeatureSpec("continuous", 1)),
    "CIFAR10": Release("CIFAR10", "superpixels_cifar10", (45000, 5000, 10000), *_GRAPH, 10,
                       FeatureSpec("continuous", 5), FeatureSpec("continuous", 1)),
    "TSP": Release("TSP", "tsp", (10000, 1000, 1000), "edge_classification", "cross_entropy", "f1", 2,
                   FeatureSpec("continuous", 2), FeatureSpec("continuous", 1)),
    "CSL": Release("CSL", "csl", None, *_GRAPH, CSL_CLASSES, FeatureSpec("categorical", 1), None, "replace"),
}
NAMES = tuple(RELEASES)
BENCHMARK_NAMES = {name: release.benchmark_name for name, release in RELEASES.items()}


def raw_file(name: str) -> RawFile:
    """The zip of release ``name``: PyG's ``{name}_v2.zip``, or the benchmark's ``CSL.zip`` (SHA-256 pinned)."""
    if name == "CSL":
        return RawFile(f"{RAW_FOLDER}/CSL.zip", None, (CSL_URL,), CSL_SHA256)
    return RawFile(f"{RAW_FOLDER}/{name}_v2.zip", None, (PYG_URL.format(name=name),))


def raw_files(params: dict) -> list[RawFile]:
    """The raw files the dataset needs: the one zip of ``params["name"]``."""
    return [raw_file(params["name"])]


# ---------------------------------------------------------------------------------------------------------- reading
def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _fix(path: Path) -> str:
    return f"delete {path} (and its .sha256 record) and download it again"


def _member(archive: zipfile.ZipFile, base: str, path: Path) -> zipfile.ZipInfo:
    """The member named ``base`` in any folder (macOS resource forks under ``__MACOSX/`` are ignored)."""
    found = [info for info in archive.infolist() if not info.is_dir() and not info.filename.startswith("__MACOSX/")
             and info.filename.rsplit("/", 1)[-1] == base]
    if len(found) != 1:
        problem = "lacks" if not found else f"holds {len(found)} copies of"
        raise DataError(f"{WHAT} {path} {problem} the member {base}; it is not the published file — {_fix(path)}")
    return found[0]


def _torch_load(source, path: Path, member: str) -> object:
    """``torch.load(weights_only=True)`` of ``member`` of the zip ``path`` (a path or file object holding it); any
    failure is a one-line DataError."""
    import torch

    what = f"{WHAT} {path}: member {member}"
    try:
        check_zip(source, f"{what} (a torch.save zip)")  # torch's reader allocates what a record declares
        return torch.load(source, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"GLOBAL ([\w.]+)", str(exc))
        if found:  # a class or function outside torch's allow-list
            raise DataError(f"{what} holds an object that torch.load(weights_only=True) refuses (it names "
                            f"{found.group(1)}); gnnbench loads only plain containers and tensors (never "
                            f"weights_only=False), and the published file holds none other — {_fix(path)}") from None
        # the restricted unpickler's own message: boilerplate lines, then the reason (e.g. an unknown opcode)
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        reason = next((line for line in lines[1:] if not line.startswith(("Please file", "Check the doc"))), "")
        raise DataError(f"{what} is not a readable torch file (UnpicklingError: {reason[:160] or 'unreadable'}); it "
                        f"is truncated or corrupt — {_fix(path)}") from None
    except (RuntimeError, EOFError, ValueError, OSError, KeyError, IndexError, TypeError, AttributeError,
            MemoryError, zipfile.BadZipFile) as exc:
        raise DataError(f"{what} is not a readable torch file ({_reason(exc)}); it is truncated or corrupt — "
                        f"{_fix(path)}") from None


def read_pyg_zip(path: str | os.PathLike, name: str) -> list[list[dict]]:
    """``[train, val, test]`` of the ``{name}_v2.pt`` member of PyG's zip: lists of dicts of tensors, one per graph."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{WHAT} {path} does not exist; download it first (or place {name}_v2.zip there)")
    base = f"{name}_v2.pt"
    tmp = None
    try:
        with zipfile.ZipFile(path) as archive:
            info = _member(archive, base, path)
            # torch.load seeks back and forth; a compressed zip member cannot, so it is copied out first
            with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{base}.", suffix=".part", delete=False) as out:
                tmp = Path(out.name)
                copy_member(archive, info, out, f"{WHAT} {path}")  # refuses a bomb before writing a byte
        data = _torch_load(tmp, path, base)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as exc:
        raise DataError(f"{WHAT} {path} is not a readable zip archive ({_reason(exc)}); {_fix(path)}") from None
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    if not (isinstance(data, (list, tuple)) and len(data) == 3 and all(isinstance(p, (list, tuple)) for p in data)):
        raise DataError(f"{WHAT} {path}: member {base} does not hold a list [train, val, test] of graph lists (got "
                        f"{type(data).__name__}); it is not the published file — {_fix(path)}")
    return [list(part) for part in data]


# ------------------------------------------------------------------------------------------------------- conversion
class _Part:
    """The graphs of one part (train, val or test) of a release: per-key tensor collection with checks."""

    def __init__(self, graphs: list, where: str) -> None:
        self.graphs, self.where = graphs, where
        bad = next((i for i, g in enumerate(graphs) if not isinstance(g, dict)), None)
        if bad is not None:
            self.fail(f"graph {bad} is a {type(graphs[bad]).__name__}, expected a dict of tensors")

    def fail(self, message: str) -> None:
        raise DataError(f"{self.where}: {message}; it is not the published file")

    def tensors(self, key: str, required: bool = True) -> list | None:
        """The ``key`` tensor of every graph, or None when no graph has the key (and it is optional)."""
        import torch

        values = [g.get(key) for g in self.graphs]
        missing = sum(v is None for v in values)
        if missing == len(values) and values and not required:
            return None
        if missing:
            self.fail(f"{missing} of {len(values)} graphs lack the key {key!r} (keys of graph 0: "
                      f"{sorted(self.graphs[0]) if self.graphs else []})")
        if not all(isinstance(v, torch.Tensor) for v in values):
            self.fail(f"{key!r} is not a tensor in every graph")
        return values

    def cat(self, key: str, values: list, dim: int = 0) -> np.ndarray:
        """All graphs' tensors of ``key`` concatenated along ``dim`` (one torch.cat), as a NumPy array."""
        import torch

        if not values:
            return np.zeros((2, 0) if dim == 1 else (0,), dtype=np.int64)
        try:
            if values[0].dim() == 0:  # scalars (a graph label stored without a dimension)
                return torch.stack(values).numpy()
            return torch.cat(values, dim).numpy()
        except (RuntimeError, TypeError) as exc:
            self.fail(f"the {key!r} tensors of the graphs do not fit together ({_reason(exc)})")

    def lengths(self, values: list, dim: int = 0) -> np.ndarray:
        """Size of every graph's tensor along ``dim`` (int64)."""
        try:
            return np.fromiter((v.shape[dim] for v in values), dtype=np.int64, count=len(values))
        except IndexError:
            self.fail(f"a tensor has fewer than {dim + 1} dimensions")


def _rows(part: _Part, key: str, values: np.ndarray, width: int, n: int) -> np.ndarray:
    """``values`` as (n, width): (n,) is accepted for width 1."""
    if values.ndim == 1 and width == 1:
        values = values[:, None]
    if values.shape != (n, width):
        part.fail(f"{key!r} has shape {tuple(values.shape)} over all graphs, expected ({n}, {width})")
    return values


def _continuous(part: _Part, key: str, values: np.ndarray) -> np.ndarray:
    if values.dtype.kind != "f":
        part.fail(f"{key!r} has dtype {values.dtype}, expected floating point")
    if not np.isfinite(values).all():
        part.fail(f"{key!r} holds non-finite values")
    return values.astype(np.float32)  # float16 → float32 is exact


def _ids(part: _Part, key: str, values: np.ndarray, vocabulary: int) -> np.ndarray:
    """Integer ids in [0, vocabulary): from ids ((N,) / (N, 1)) or one-hot rows ((N, vocabulary)) of any dtype."""
    if values.ndim == 2 and values.shape[1] == vocabulary and vocabulary > 1:
        hot = values == 1
        if not ((hot | (values == 0)).all() and (hot.sum(1) == 1).all()):
            part.fail(f"{key!r} is ({values.shape[0]}, {vocabulary}) but not one-hot (one 1 per row, zeros elsewhere)")
        return hot.argmax(1).astype(np.int16)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        part.fail(f"{key!r} has shape {tuple(values.shape)}; expected ids (N,) or one-hot rows (N, {vocabulary})")
    ids = values.astype(np.int64)
    if (ids != values).any() or (ids.size and (ids.min() < 0 or ids.max() >= vocabulary)):
        part.fail(f"{key!r} holds values outside the integers 0..{vocabulary - 1}")
    return ids.astype(np.int16)


def _labels(part: _Part, key: str, values: np.ndarray, classes: int, length: int, per: str) -> np.ndarray:
    """Class ids (int16) of every graph, node or edge (``per``): one integer label each."""
    values = values.reshape(-1) if values.ndim == 2 and values.shape[1] == 1 else values
    if values.shape != (length,):
        part.fail(f"{key!r} holds {values.size} labels over all graphs, expected {length} (one per {per})")
    return _ids(part, key, values, classes)


def convert_part(graphs: list, name: str, where: str) -> GraphColumns:
    """Graph columns of one part of PyG's release of ``name`` (module doc: columns per dataset)."""
    release = RELEASES[name]
    part = _Part(graphs, where)
    edge_values = part.tensors("edge_index")
    num_edges = part.lengths(edge_values, 1)
    edge_index = part.cat("edge_index", edge_values, 1)
    if edge_index.ndim != 2 or edge_index.shape[0] != 2 or edge_index.dtype.kind not in "iu":
        part.fail(f"'edge_index' is {edge_index.dtype} of shape {tuple(edge_index.shape)} over all graphs, expected "
                  "integers of shape (2, E)")
    x_values = part.tensors("x", required=name != "TSP")
    pos_values = part.tensors("pos", required=False)
    if x_values is None and pos_values is None:
        part.fail("the graphs hold neither 'x' nor 'pos' (the node coordinates)")
    num_nodes = part.lengths(x_values if x_values is not None else pos_values)
    n, e, g = int(num_nodes.sum()), int(num_edges.sum()), len(graphs)
    limit = np.repeat(num_nodes, num_edges)
    if e and (edge_index.min() < 0 or (edge_index >= limit).any()):
        part.fail("an edge names a node outside its graph ('edge_index' is local to each graph)")
    x = part.cat("x", x_values) if x_values is not None else None
    pos = part.cat("pos", pos_values) if pos_values is not None else None
    edge_attr_values = part.tensors("edge_attr", required=release.edge_features is not None)
    edge_attr = part.cat("edge_attr", edge_attr_values) if edge_attr_values is not None else None
    y = part.cat("y", part.tensors("y"))
    node, edge, graph = {}, {}, {}
    if name in ("PATTERN", "CLUSTER"):
        node["x"] = _ids(part, "x", x, release.node_features.size)
        node["y"] = _labels(part, "y", y, release.num_outputs, n, "node")
        if edge_attr is not None and not (_rows(part, "edge_attr", edge_attr, 1, e) == 1).all():
            part.fail("'edge_attr' is not the constant 1 of the benchmark's SBM graphs")
    elif name in ("MNIST", "CIFAR10"):
        width = release.node_features.size
        if pos is None:  # x must then hold the coordinates too
            node["x"] = _continuous(part, "x", _rows(part, "x", x, width, n))
        else:
            node["x"] = np.concatenate([_continuous(part, "x", _rows(part, "x", x, width - 2, n)),
                                        _continuous(part, "pos", _rows(part, "pos", pos, 2, n))], axis=1)
        edge["edge_attr"] = _continuous(part, "edge_attr", _rows(part, "edge_attr", edge_attr, 1, e))
        graph["y"] = _labels(part, "y", y, release.num_outputs, g, "graph")
    else:  # TSP
        node["x"] = _continuous(part, "x", _rows(part, "x" if x is not None else "pos",
                                                 x if x is not None else pos, 2, n))
        edge["edge_attr"] = _continuous(part, "edge_attr", _rows(part, "edge_attr", edge_attr, 1, e))
        edge["y"] = _labels(part, "y", y, release.num_outputs, e, "edge")
    columns = GraphColumns(num_nodes=num_nodes, num_edges=num_edges, src=edge_index[0].astype(np.int32),
                           dst=edge_index[1].astype(np.int32), node=node, edge=edge, graph=graph)
    columns.validate()
    return columns


def split_sizes(params: dict) -> dict[str, int] | None:
    """Graphs per part: ``num_*`` when positive, else the published count (None for CSL)."""
    published = RELEASES[params["name"]].sizes
    if published is None:
        return None
    return {s: params[f"num_{s}"] or size for s, size in zip(SPLITS, published, strict=True)}


def read_pyg_release(path: str | os.PathLike, params: dict) -> GraphColumns:
    """Columns of PyG's release zip of ``params["name"]``: train, val, test (sizes: :func:`split_sizes`)."""
    path, name = Path(path), params["name"]
    data = read_pyg_zip(path, name)
    sizes, published = split_sizes(params), dict(zip(SPLITS, RELEASES[name].sizes, strict=True))
    parts = []
    for split, graphs in zip(SPLITS, data, strict=True):
        wanted, exact = sizes[split], not params[f"num_{split}"]
        if (exact and len(graphs) != wanted) or len(graphs) < wanted:
            raise DataError(f"{WHAT} {path}: the {split} part holds {len(graphs)} graphs, but the published {name} "
                            f"has {published[split]}" + ("" if exact else f" (num_{split} asks for {wanted})")
                            + f"; it is not the published file — {_fix(path)}")
        parts.append(convert_part(graphs[:wanted], name, f"{WHAT} {path}: {name}_v2.pt, {split} part"))
        data[SPLITS.index(split)] = None  # free the loaded tensors early
    return GraphColumns.concat(parts)


def read_csl_zip(path: str | os.PathLike) -> GraphColumns:
    """The 150 CSL graphs of ``CSL.zip``: self loops removed, 41 nodes and 164 edges each, labels as released."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{WHAT} {path} does not exist; download it first (or place CSL.zip there)")
    try:
        with zipfile.ZipFile(path) as archive:
            graphs_info, labels_info = _member(archive, CSL_GRAPHS, path), _member(archive, CSL_LABELS, path)
            graphs_bytes = read_member(archive, graphs_info, f"{WHAT} {path}")
            labels_bytes = read_member(archive, labels_info, f"{WHAT} {path}")
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as exc:
        raise DataError(f"{WHAT} {path} is not a readable zip archive ({_reason(exc)}); {_fix(path)}") from None
    where = f"{WHAT} {path}: member"
    matrices = safe_load(graphs_bytes, "CSL pickle", f"{path} member {CSL_GRAPHS}")
    labels = _torch_load(io.BytesIO(labels_bytes), path, CSL_LABELS)

    def bad(member: str, message: str) -> DataError:
        return DataError(f"{where} {member} {message}; it is not the published CSL — {_fix(path)}")

    if not isinstance(matrices, list) or len(matrices) != CSL_GRAPH_COUNT:
        got = len(matrices) if isinstance(matrices, list) else type(matrices).__name__
        raise bad(CSL_GRAPHS, f"holds {got} graphs, expected a list of {CSL_GRAPH_COUNT} sparse matrices")
    dense = np.empty((CSL_GRAPH_COUNT, CSL_NODES, CSL_NODES), dtype=bool)
    for i, matrix in enumerate(matrices):  # 150 tiny matrices: to_csr checks each pickled state
        csr = to_csr(matrix, f"{where} {CSL_GRAPHS}", f"(graph {i})")
        if csr.shape != (CSL_NODES, CSL_NODES):
            raise bad(CSL_GRAPHS, f"graph {i} is {csr.shape[0]}×{csr.shape[1]}, expected {CSL_NODES}×{CSL_NODES}")
        dense[i] = csr.toarray() != 0
    dense[:, np.arange(CSL_NODES), np.arange(CSL_NODES)] = False  # the benchmark's loader removes self loops
    graph_of, src, dst = np.nonzero(dense)  # row-major per graph
    num_edges = np.bincount(graph_of, minlength=CSL_GRAPH_COUNT).astype(np.int64)
    if (num_edges != CSL_EDGES).any() or (dense != dense.transpose(0, 2, 1)).any():
        first = int(np.flatnonzero((num_edges != CSL_EDGES) | (dense != dense.transpose(0, 2, 1)).any((1, 2)))[0])
        raise bad(CSL_GRAPHS, f"graph {first} has {num_edges[first]} directed edges without self loops or is not "
                  f"symmetric; every CSL graph is 4-regular ({CSL_EDGES} edges)")
    import torch

    y = labels.numpy() if isinstance(labels, torch.Tensor) else None
    if y is None or y.shape != (CSL_GRAPH_COUNT,) or y.dtype.kind not in "iu" or y.min() < 0 or y.max() >= CSL_CLASSES:
        raise bad(CSL_LABELS, f"is not a tensor of {CSL_GRAPH_COUNT} integer labels in 0..{CSL_CLASSES - 1}")
    columns = GraphColumns(num_nodes=np.full(CSL_GRAPH_COUNT, CSL_NODES, dtype=np.int64), num_edges=num_edges,
                           src=src.astype(np.int32), dst=dst.astype(np.int32),
                           node={"x": np.zeros(CSL_GRAPH_COUNT * CSL_NODES, dtype=np.int16)},
                           graph={"y": y.astype(np.int16)})
    columns.validate()
    return columns


# -------------------------------------------------------------------------------------------------------- generator
def _build(params: dict, seed: int, raw_dir: Path) -> GraphColumns:
    path = Path(raw_dir) / raw_file(params["name"]).relative_path
    return read_csl_zip(path) if params["name"] == "CSL" else read_pyg_release(path, params)


def describe(name: str, params: dict, seed: int) -> DatasetMeta:
    """The description of the regenerating generator's dataset (same task, features and split sizes),
    with the release as its source."""
    release, raw = RELEASES[params["name"]], raw_file(params["name"])
    sizes = split_sizes(params)
    return DatasetMeta(
        name=name, task=release.task, loss=release.loss, metric=release.metric, num_outputs=release.num_outputs,
        num_graphs=sum(sizes.values()) if sizes else CSL_GRAPH_COUNT, node_features=release.node_features,
        edge_features=release.edge_features, pe_usage=release.pe_usage, split_sizes=sizes,
        source={"generator": "released", "params": {k: v for k, v in params.items() if k != "mirror"},
                "release": raw.name, "url": raw.urls[0], "benchmark_name": release.benchmark_name,
                "regenerated_by": release.generator, "raw_files": {raw.relative_path: raw.sha256}},
    )


def _check(params: dict, where: str) -> None:
    name = params["name"]
    if name not in RELEASES:
        raise ConfigError(f"{where}.name: {name!r} is not a released dataset; choose one of {', '.join(NAMES)}")
    if name == "CSL":
        for split in SPLITS:
            if params[f"num_{split}"]:
                raise ConfigError(f"{where}.num_{split}: CSL comes without a split (5-fold cross-validation over "
                                  "all 150 graphs); remove num_train, num_val and num_test")


def _default_split(params: dict) -> dict:
    """The published split: the given train/val/test order, or for CSL the benchmark's 5 released folds."""
    return {"scheme": "published", "source": DWIVEDI2020} if params["name"] == "CSL" else {"scheme": "given"}


def _published_splits(params: dict, source: str):
    """CSL's released index files (:func:`gnnbench.data.generators.csl.published_splits`); the other datasets
    come with their split (``given``)."""
    return csl.published_splits({}, source) if params["name"] == "CSL" else None


RELEASED = Generator(
    name="released",
    description="The published PATTERN, CLUSTER, MNIST, CIFAR10, TSP (PyG's GNNBenchmarkDataset zips) or CSL "
                "graphs, in the columns of the generators that regenerate them",
    defaults={"name": "PATTERN", "num_train": 0, "num_val": 0, "num_test": 0, "mirror": ""},
    default_split=_default_split,
    describe=describe,
    build=_build,
    check=_check,
    raw_files=raw_files,
    published_splits=_published_splits,
)
