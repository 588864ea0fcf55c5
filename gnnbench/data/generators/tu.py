"""TU Dortmund graph-classification datasets from their zip files (Morris et al., TUDataset;
docs/datasets.md#tu-dortmund-datasets).

Raw file: ``https://www.chrsmrrs.com/graphkerneldatasets/{name}.zip`` (the URL PyTorch Geometric's ``TUDataset``
and DGL's ``LegacyTUDataset`` download), fetched into ``raw_dir/tu/{name}.zip``. No checksum is published: the
SHA-256 is recorded at first download and verified on every reuse (:mod:`gnnbench.data.download`), and
``meta.source.raw_sha256`` holds the value of the file that was read. ``mirror`` is tried before the canonical URL
(``mirror/{name}.zip``) and is not recorded.

Reading (:func:`read_tu_zip`): the archive is read in memory with :mod:`zipfile` (nothing is extracted; each member
through :func:`gnnbench.data.archive.read_member`, which refuses a member declaring more than it may expand to). Members
are found by file name in any folder (the published zips store ``NAME//NAME_A.txt``): ``NAME_A.txt`` (edge list, 1-based
global node ids, ``u, v`` per line), ``NAME_graph_indicator.txt`` (graph id of node i, 1-based),
``NAME_graph_labels.txt`` (one label per graph) are required; ``NAME_node_labels.txt`` and ``NAME_node_attributes.txt``
are read when present. Edge labels/attributes are not read (no model of the protocol uses them: Errica et al.'s released
code parses them and never reads them). Every file is parsed by ``np.loadtxt`` in one call; grouping into graphs is
vectorised.

Conversion (the semantics of PyG's ``read_tu_data``):

* graph k (0-based) = TU graph id k + 1, TU order kept (as the released code's ``datasets/manager.py``); nodes of a
  graph are its rows of the indicator, which must be non-decreasing (nodes stored graph by graph, as PyG assumes) with
  every graph 1..G present;
* edges: undirected and simple — every listed edge in both directions, duplicates merged (IMDB-BINARY lists each edge
  twice per direction), **self loops dropped** (PyG's reader drops them; the four checked zips have none). Stored
  row-major per graph with local node indices (sorted by source, then destination);
* graph labels re-indexed to 0..C−1 in ascending order of the label value (PyG: ``unique(return_inverse)``); on
  the nine datasets this equals the released code's rule (−1 → 0, labels starting at 1 shifted down by 1,
  ``datasets/tu_utils.py``);
* node features (node column ``x``, float32, (N, d)), by ``features``:

  =========================  ===================================================================================
  ``labels``                 one-hot node label, index = label − min label (min over the dataset), width =
                             max − min + 1 (PyG; several label columns: one block per column). The released code
                             uses width = max label (+1 when labels start at 0) with label v at slot v−1 — the
                             same width and a column permutation for labels starting at 0 or 1, as on every
                             dataset here
  ``labels_and_attributes``  the one-hot labels, then the continuous node attributes (the released code's order;
                             ENZYMES 3 + 18)
  ``attributes``             the node attributes only (Dwivedi et al.'s TU input, DGL's ``LegacyTUDataset``:
                             ENZYMES 18, PROTEINS_full 29)
  ``constant``               the scalar 1 per node (Errica et al.'s "SOCIAL_1")
  ``degree``                 the scalar degree per node (Errica et al.'s "SOCIAL_DEGREE"): the raw number of distinct
                             neighbours (networkx degree of the simple graph without self loops), not one-hot,
                             not normalised, no constant column
  ``""`` (default)           Errica et al.'s choice for the dataset (their ``datasets/manager.py``): ``labels`` for
                             DD, NCI1, PROTEINS, PROTEINS_full; ``labels_and_attributes`` for ENZYMES. The social
                             sets have two variants and no default: ``constant`` or ``degree`` must be given. With
                             ``variant: dwivedi2020``: DGL's ``LegacyTUDataset`` rule the benchmark used —
                             ``attributes`` when the dataset has them (ENZYMES 18, PROTEINS_full 29), else
                             ``labels`` (DD 89), else ``constant``
  =========================  ===================================================================================

* graph column ``y`` int16; no edge features. ``variant: dwivedi2020`` marks the dataset with the net
  convention ``edge_ones_node_width``: the benchmark's loader gives every edge ``ones(E, in_dim)``, which its
  GatedGCN projects with ``Linear(in_dim, hidden)`` (the released code's ``data/TUs.py`` and
  ``nets/TUs_graph_classification/gated_gcn_net.py``).

Released splits (split scheme ``published``, :func:`published_splits`): Errica et al.'s ``NAME_splits.json``
(``source: errica2020``) and Dwivedi et al.'s ``NAME_{train,val,test}.index`` (``source: dwivedi2020``: DD,
ENZYMES, PROTEINS_full, COLLAB, 10 folds of 80 / 10 / 10 %). ``variant`` and ``source`` take the paper keys of
:mod:`gnnbench.models.registry`.

Decision: the released code's cleaning (keep graphs with > 1 node and ≥ 1 edge) is not applied — it removes no graph of
the nine datasets and the official split files index the full TU graph counts (docs/datasets.md#tu-dortmund-datasets).
``name`` must be one of :data:`PUBLISHED` (graphs, classes, node label width, attribute width from the TU collection);
the converted data must match that row, otherwise the file is not the published dataset (a one-line :class:`DataError`).

Bad input — an unreadable zip, a missing member, a malformed line, counts that do not fit (indicator vs graph
labels, node labels/attributes vs nodes, an edge naming a node outside 1..N or joining two graphs), ``labels`` for
a dataset without node labels — is a one-line :class:`DataError` naming the file (and member) and the fix;
nothing is written (the dataset folder is written only after a successful conversion). ``seed`` is not used.
"""

from __future__ import annotations

import io
import logging
import warnings
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gnnbench.data.archive import read_member
from gnnbench.data.download import RawFile
from gnnbench.data.generators.base import Generator, PublishedSplit
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns
from gnnbench.errors import ConfigError, DataError
from gnnbench.papers import DWIVEDI2020, ERRICA2020, renamed_error

log = logging.getLogger(__name__)

URL = "https://www.chrsmrrs.com/graphkerneldatasets/{name}.zip"
WHAT = "TU dataset zip"
# name → (graphs, classes, one-hot node label width, node attribute width); 0 = the dataset has none
PUBLISHED = {
    "DD": (1178, 2, 89, 0),
    "ENZYMES": (600, 6, 3, 18),
    "NCI1": (4110, 2, 37, 0),
    "PROTEINS": (1113, 2, 3, 1),
    "PROTEINS_full": (1113, 2, 3, 29),
    "IMDB-BINARY": (1000, 2, 0, 0),
    "IMDB-MULTI": (1500, 3, 0, 0),
    "REDDIT-BINARY": (2000, 2, 0, 0),
    "REDDIT-MULTI-5K": (4999, 5, 0, 0),
    "COLLAB": (5000, 3, 0, 0),
}
SPEC_FEATURES = {"DD": "labels", "NCI1": "labels", "PROTEINS": "labels", "PROTEINS_full": "labels",
                 "ENZYMES": "labels_and_attributes"}  # Errica et al.'s choice; the social sets: constant or degree
FEATURES = ("labels", "labels_and_attributes", "attributes", "constant", "degree")
# Errica et al.'s released splits (diningphil/gnn-comparison ``data_splits/``): one file per dataset and, for the
# social sets, per feature variant
SPLITS_URL = "https://raw.githubusercontent.com/diningphil/gnn-comparison/master/data_splits/{group}/{name}_splits.json"
SPLITS_SHA256 = {
    "CHEMICAL/DD": "3acb1dbb1c7d52d019be2996ba52b9e1e7e9410eb5a84aad2eff766392aba8a8",
    "CHEMICAL/ENZYMES": "105daf1c521fbbb05c1500fba13446d74d7d2a85d385b8e4b1f08b4b4e00541a",
    "CHEMICAL/NCI1": "1c961b85422fb557edade036f614869bb996323efd21dbfa4b40ff1b80304924",
    "CHEMICAL/PROTEINS_full": "785c4225474a5467427b704e424602e6a4b88ebd3463cf152d3ec82d2422cd6a",
    "COLLABORATIVE_1/COLLAB": "11c131c4e59f00a58396ac5b1efa31794726a98215d31b0377c9accd09954071",
    "COLLABORATIVE_1/IMDB-BINARY": "9a5d452b422121d071fd5f84ecceabbe49e61dfcc0a0585698270627bf741d76",
    "COLLABORATIVE_1/IMDB-MULTI": "d2f2f0fbcc4ca1eae97d78c184ab4207133ec873c4640a05bfa92f915c4298a6",
    "COLLABORATIVE_1/REDDIT-BINARY": "d7d1f34723d9c8ca54976619c63c4c31d656db114837afb28599647503efa293",
    "COLLABORATIVE_1/REDDIT-MULTI-5K": "b063ce3d340cd458bc611085eaa7ddf7ee4580849a5541e3ec8fc0119dd285b3",
    "COLLABORATIVE_DEGREE/COLLAB": "2942761086c699bf268dfbdeaec1537e8601bd69f65ef7c850744e2b4784921b",
    "COLLABORATIVE_DEGREE/IMDB-BINARY": "da73a722e88ee867b67e10efc2791c15fed0eab280c95269b9d814d145398d9a",
    "COLLABORATIVE_DEGREE/IMDB-MULTI": "f4a59c65f15096a9449e4e1c4bba6ce4e364bd025b05486d5183b63ead1ccb92",
    "COLLABORATIVE_DEGREE/REDDIT-BINARY": "1584c163a9b452ff105169fb08e485f95c0f3a51ee238cecbaf9a0572c8597e4",
    "COLLABORATIVE_DEGREE/REDDIT-MULTI-5K": "b59b740df2acd7e8518ee56a8c298810ae0bfca7a8da04077bc549b8ba7ba583",
}
# Dwivedi et al.'s released 10-fold splits (graphdeeplearning/benchmarking-gnns): data/TUs/{name}_{part}.index
INDEX_URL = "https://raw.githubusercontent.com/graphdeeplearning/benchmarking-gnns/master/data/TUs/{name}_{part}.index"
INDEX_SHA256 = {
    ("COLLAB", "train"): "040c5721105d964712aa5e833ca2193771e58b8239938596f6069f32e95ea6c7",
    ("COLLAB", "val"): "4ca5c47d6adc18479f929e9d9ce14dafce4eab6f9aaabec115b9d15793a76f58",
    ("COLLAB", "test"): "2a2b3bf5aa955762a9275949d89d0647eb028fd086e6366474f962c82632da3c",
    ("DD", "train"): "74879d1f06d447e717c380bea4a4fcad1ae131d5ad18f061f68931b4fa8b3d1b",
    ("DD", "val"): "781f2463329e4a4fcdeac8303eb2cfdedec16e5b7281c91e6ddc8f9a1f2d2d3b",
    ("DD", "test"): "ae737877825713baf7bf12d6f0f49e147dc727ce291f7489f0b8d31a6e5f9024",
    ("ENZYMES", "train"): "529cef68e6a4ff122224b7ad300437d08d1f02ac54a7abdd95803fb20dad7cdf",
    ("ENZYMES", "val"): "9301b77fb3d7238cd863a4ac954bad997f8c40927d5fc77ec6deaab4dd25d2c7",
    ("ENZYMES", "test"): "1f7cff482f173ecc8940c56b8dce70a4766ddd90bf69cc16506fdca8b3aa292f",
    ("PROTEINS_full", "train"): "73a3579b8a6e24971203f3d84aade6847e36c02e886acf2248dec1ccf54be845",
    ("PROTEINS_full", "val"): "83f24461a70bf49b9cf36be21da7beed9d3ed2a778288e480de9aba261e16db9",
    ("PROTEINS_full", "test"): "af2d7a2d8d0a609e419b6ba857e663b79fa66f92b28b19aad49b648e23c91fdb",
}
# the fair comparison's features (Errica et al. §5, the released datasets/manager.py), or the benchmark's TU loader
VARIANTS = ("", DWIVEDI2020)
REQUIRED = ("A", "graph_indicator", "graph_labels")
OPTIONAL = ("node_labels", "node_attributes")


@dataclass
class TUGraphs:
    """The graphs of a TU zip as read: per-graph node and edge counts, local edge indices, raw labels."""

    num_nodes: np.ndarray  # (G,) int64
    num_edges: np.ndarray  # (G,) int64
    src: np.ndarray  # (E,) int64, local source index (both directions, merged, no self loops, row-major)
    dst: np.ndarray  # (E,) int64
    graph_labels: np.ndarray  # (G,) int64, as in the file
    node_labels: np.ndarray | None  # (N, k) int64, as in the file
    node_attributes: np.ndarray | None  # (N, d) float64
    self_loops_dropped: int

    @property
    def degree(self) -> np.ndarray:
        """Number of distinct neighbours of every node (all graphs, store order)."""
        ptr = np.concatenate([[0], np.cumsum(self.num_nodes)])
        offset = np.repeat(ptr[:-1], self.num_edges)
        return np.bincount(self.src + offset, minlength=int(ptr[-1]))


def raw_file(name: str) -> RawFile:
    """The zip of TU dataset ``name``, fetched into ``raw_dir/tu/`` (SHA-256 recorded at first download)."""
    return RawFile(f"tu/{name}.zip", None, (URL.format(name=name),))


def raw_files(params: dict) -> list[RawFile]:
    """The raw files the dataset needs: its one zip."""
    return [raw_file(params["name"])]


def published_splits(params: dict, source: str) -> PublishedSplit | None:
    """The released split of the dataset by ``source``, or None when that paper released none for it.

    ``errica2020`` — Errica et al.'s split file: CHEMICAL files serve DD, NCI1, ENZYMES and PROTEINS (their
    PROTEINS is PROTEINS_full: same graphs and order); the social sets have one file per feature variant —
    COLLABORATIVE_1 for ``constant``, COLLABORATIVE_DEGREE for ``degree`` (the two variants were split
    separately). ``dwivedi2020`` — Dwivedi et al.'s ``{name}_{train,val,test}.index`` (DD, ENZYMES,
    PROTEINS_full and COLLAB; 10 folds). SHA-256 pinned from the released files; the split's ``mirror`` (a folder
    URL holding the files by name) is tried first."""
    name, features = params["name"], resolved_features(params)
    if source == DWIVEDI2020:
        if (name, "test") not in INDEX_SHA256:
            return None
        return PublishedSplit(tuple(RawFile(f"tu/splits/{DWIVEDI2020}/{name}_{part}.index", None,
                                            (INDEX_URL.format(name=name, part=part),), INDEX_SHA256[(name, part)])
                                    for part in ("train", "val", "test")), folds=10)
    if source != ERRICA2020:
        return None
    if name in SPEC_FEATURES:
        group, file_name = "CHEMICAL", "PROTEINS_full" if name == "PROTEINS" else name
    elif features in ("constant", "degree"):
        group, file_name = "COLLABORATIVE_1" if features == "constant" else "COLLABORATIVE_DEGREE", name
    else:
        return None
    raw = RawFile(f"tu/splits/{group}/{file_name}_splits.json", None,
                  (SPLITS_URL.format(group=group, name=file_name),), SPLITS_SHA256[f"{group}/{file_name}"])
    return PublishedSplit((raw,), folds=10)


def resolved_features(params: dict) -> str:
    """``params["features"]``, or the default of the variant when it is empty: the fair comparison's choice for
    the dataset (Errica et al. §5 and the released code's datasets/manager.py), or — ``variant: dwivedi2020`` —
    DGL's ``LegacyTUDataset`` rule the benchmark used (Dwivedi et al., TU datasets of the released code): the node
    attributes when the dataset has them (they override the labels), else the one-hot node labels, else a
    constant."""
    if params["features"]:
        return params["features"]
    if params.get("variant") == DWIVEDI2020:
        _, _, label_width, attribute_width = PUBLISHED[params["name"]]
        return "attributes" if attribute_width else "labels" if label_width else "constant"
    return SPEC_FEATURES[params["name"]]


# ---------------------------------------------------------------------------------------------------------- reading
def _members(archive: zipfile.ZipFile, name: str, path: Path) -> dict[str, zipfile.ZipInfo]:
    """The TU members of the archive by suffix (``A``, ``graph_indicator``, ...), wherever they are stored."""
    wanted = {f"{name}_{suffix}.txt": suffix for suffix in REQUIRED + OPTIONAL}
    found: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        base = info.filename.rstrip("/").rsplit("/", 1)[-1]
        if info.is_dir() or base not in wanted:
            continue
        suffix = wanted[base]
        if suffix in found:
            raise DataError(f"{WHAT} {path} holds {base} twice ({found[suffix].filename}, {info.filename}); it is "
                            "not a published TU zip — delete it and download it again")
        found[suffix] = info
    for suffix in REQUIRED:
        if suffix not in found:
            raise DataError(f"{WHAT} {path} lacks {name}_{suffix}.txt (TU format: {name}/{name}_A.txt, "
                            f"_graph_indicator.txt, _graph_labels.txt); it is not the {name} dataset or is damaged "
                            "— delete it (and its .sha256 record) and download it again")
    return found


def _table(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, dtype: type, columns: int | None = None,
           ) -> np.ndarray:
    """A comma/space separated numeric text member as a 2-d array (one row per line), parsed in one call."""
    try:
        data = read_member(archive, info, f"{WHAT} {path}")
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise DataError(f"{WHAT} {path}: member {info.filename} cannot be read ({_reason(exc)}); the zip is damaged "
                        "— delete it (and its .sha256 record) and download it again") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an empty member: loadtxt warns, the result is empty
            values = np.loadtxt(io.BytesIO(data), delimiter=",", dtype=dtype, ndmin=2)
    except ValueError as exc:
        raise DataError(f"{WHAT} {path}: member {info.filename} is not a table of numbers ({_reason(exc)}); delete "
                        "the zip (and its .sha256 record) and download it again") from None
    if values.size == 0:
        values = values.reshape(0, columns or 1)
    if columns is not None and values.shape[1] != columns:
        raise DataError(f"{WHAT} {path}: member {info.filename} has {values.shape[1]} columns per line, expected "
                        f"{columns}; delete the zip (and its .sha256 record) and download it again")
    return values


def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:160] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def read_tu_zip(path: str | Path, name: str) -> TUGraphs:
    """The graphs of TU dataset ``name`` from its zip (module doc: members, edge convention, checks)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{WHAT} {path} does not exist; download it first (or place {name}.zip there)")
    try:
        with zipfile.ZipFile(path) as archive:
            members = _members(archive, name, path)
            tables = {suffix: _table(archive, info, path, np.float64 if suffix == "node_attributes" else np.int64,
                                     2 if suffix == "A" else None)
                      for suffix, info in members.items()}
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise DataError(f"{WHAT} {path} is not a readable zip archive ({_reason(exc)}); delete it (and its .sha256 "
                        "record) and download it again") from None

    def bad(suffix: str, message: str) -> DataError:
        return DataError(f"{WHAT} {path}: {members[suffix].filename} {message}; the zip is damaged or not the {name} "
                         "dataset — delete it (and its .sha256 record) and download it again")

    indicator = _single(tables["graph_indicator"], bad, "graph_indicator")
    labels = _single(tables["graph_labels"], bad, "graph_labels")
    edges = tables["A"]
    num_graphs, total = labels.size, indicator.size
    if total == 0 or num_graphs == 0:
        raise bad("graph_indicator" if total == 0 else "graph_labels", "is empty")
    if indicator.min() < 1 or indicator.max() != num_graphs:
        raise bad("graph_indicator", f"names graphs {indicator.min()}..{indicator.max()}, but "
                  f"{members['graph_labels'].filename} has {num_graphs} labels (graphs 1..{num_graphs})")
    if (np.diff(indicator) < 0).any():
        line = int(np.flatnonzero(np.diff(indicator) < 0)[0]) + 2
        raise bad("graph_indicator", f"is not sorted by graph (line {line}); nodes must be stored graph by graph")
    num_nodes = np.bincount(indicator - 1, minlength=num_graphs).astype(np.int64)
    if (num_nodes == 0).any():
        raise bad("graph_indicator", f"names no node of graph {int(np.flatnonzero(num_nodes == 0)[0]) + 1}")
    outside = (edges < 1) | (edges > total)
    if outside.any():
        row = int(np.flatnonzero(outside.any(axis=1))[0])
        raise bad("A", f"line {row + 1} names node {int(edges[row][outside[row]][0])}, outside 1..{total} (the "
                  "nodes of graph_indicator)")
    u, v = edges[:, 0] - 1, edges[:, 1] - 1
    across = indicator[u] != indicator[v]
    if across.any():
        row = int(np.flatnonzero(across)[0])
        raise bad("A", f"line {row + 1} joins nodes of graphs {indicator[u[row]]} and {indicator[v[row]]}")
    loops = u == v
    u, v = u[~loops], v[~loops]
    key = np.unique(np.concatenate([u * total + v, v * total + u]))  # sorted: graph, then source, then target
    src, dst = np.divmod(key, total)
    graph_of = indicator[src] - 1
    ptr = np.concatenate([[0], np.cumsum(num_nodes)])
    optional = {}
    for suffix in OPTIONAL:
        if suffix in tables:
            if tables[suffix].shape[0] != total:
                raise bad(suffix, f"has {tables[suffix].shape[0]} lines for the {total} nodes of graph_indicator")
            optional[suffix] = tables[suffix]
    return TUGraphs(num_nodes=num_nodes, num_edges=np.bincount(graph_of, minlength=num_graphs).astype(np.int64),
                    src=src - ptr[graph_of], dst=dst - ptr[graph_of], graph_labels=labels,
                    node_labels=optional.get("node_labels"), node_attributes=optional.get("node_attributes"),
                    self_loops_dropped=int(loops.sum()))


def _single(table: np.ndarray, bad, suffix: str) -> np.ndarray:
    if table.shape[1] != 1:
        raise bad(suffix, f"has {table.shape[1]} values per line, expected 1")
    return table[:, 0]


def one_hot_labels(labels: np.ndarray) -> np.ndarray:
    """PyG's node-label encoding: per label column, one-hot of label − min (width max − min + 1), blocks
    concatenated; float32 (N, width)."""
    shifted = labels - labels.min(axis=0, keepdims=True)
    widths = shifted.max(axis=0) + 1
    offsets = np.concatenate([[0], np.cumsum(widths)[:-1]])
    out = np.zeros((labels.shape[0], int(widths.sum())), dtype=np.float32)
    rows = np.repeat(np.arange(labels.shape[0]), labels.shape[1])
    out[rows, (shifted + offsets).ravel()] = 1.0
    return out


def node_features(graphs: TUGraphs, features: str, path: Path, name: str) -> np.ndarray:
    """Node column ``x`` (float32, (N, d)) for ``features`` (module doc)."""
    total = int(graphs.num_nodes.sum())
    parts = []
    if features in ("labels", "labels_and_attributes"):
        if graphs.node_labels is None:
            raise DataError(f"{WHAT} {path} has no {name}_node_labels.txt, so features: {features} is impossible; "
                            "use features: constant or degree (the social datasets)")
        parts.append(one_hot_labels(graphs.node_labels))
    if features in ("labels_and_attributes", "attributes"):
        if graphs.node_attributes is None:
            raise DataError(f"{WHAT} {path} has no {name}_node_attributes.txt, so features: {features} is "
                            "impossible; use features: labels, constant or degree")
        parts.append(graphs.node_attributes.astype(np.float32))
    if features == "constant":
        parts.append(np.ones((total, 1), dtype=np.float32))
    if features == "degree":
        parts.append(graphs.degree.astype(np.float32)[:, None])
    return np.concatenate(parts, axis=1)


# -------------------------------------------------------------------------------------------------------- generator
def _width(name: str, features: str) -> int:
    _, _, label_width, attribute_width = PUBLISHED[name]
    return {"labels": label_width, "labels_and_attributes": label_width + attribute_width,
            "attributes": attribute_width}.get(features, 1)


def _build(params: dict, seed: int, raw_dir: Path) -> GraphColumns:
    name, features = params["name"], resolved_features(params)
    path = Path(raw_dir) / raw_file(name).relative_path
    graphs = read_tu_zip(path, name)
    x = node_features(graphs, features, path, name)
    classes, y = np.unique(graphs.graph_labels, return_inverse=True)
    published = PUBLISHED[name]
    got = (graphs.num_nodes.size, classes.size, x.shape[1])
    expected = (published[0], published[1], _width(name, features))
    if got != expected:
        raise DataError(f"{WHAT} {path} gives {got[0]} graphs, {got[1]} classes and {got[2]} node features "
                        f"({features}), but the published {name} has {expected[0]}, {expected[1]} and {expected[2]}; "
                        "it is not the published file — delete it (and its .sha256 record) and download it again")
    if graphs.self_loops_dropped:
        log.info("%s: dropped %d self loops (PyG's convention)", path, graphs.self_loops_dropped)
    columns = GraphColumns(num_nodes=graphs.num_nodes, num_edges=graphs.num_edges, src=graphs.src.astype(np.int32),
                           dst=graphs.dst.astype(np.int32), node={"x": x}, graph={"y": y.astype(np.int16)})
    columns.validate()
    return columns


def describe(name: str, params: dict, seed: int) -> DatasetMeta:
    """The dataset's description: published graph and class counts, the width of the resolved ``features``."""
    dataset, features = params["name"], resolved_features(params)
    graphs, classes, _, _ = PUBLISHED[dataset]
    source = {"generator": "tu", "seed": seed, "params": {k: v for k, v in params.items() if k != "mirror"},
              "features": features, "url": URL.format(name=dataset),
              "preprocessing": ["graphs in TU order (graph k = TU graph id k+1), no graph removed",
                                "edges undirected: both directions, duplicates merged, self loops dropped",
                                "graph labels re-indexed to 0..C-1 in ascending label order",
                                f"node features: {features}"],
              "raw_files": {raw_file(dataset).relative_path: None}}
    # the benchmark's TU loader gives every edge ones(in_dim) (the released code's data/TUs.py)
    conventions = ["edge_ones_node_width"] if params.get("variant") == DWIVEDI2020 else []
    return DatasetMeta(name=name, task="graph_classification", loss="cross_entropy", metric="accuracy",
                       num_outputs=classes, num_graphs=graphs,
                       node_features=FeatureSpec("continuous", _width(dataset, features)), edge_features=None,
                       pe_usage="add", split_sizes=None, source=source, net_conventions=conventions)


def _check(params: dict, where: str) -> None:
    name, features = params["name"], params["features"]
    if name not in PUBLISHED:
        raise ConfigError(f"{where}.name: {name!r} is not a supported TU dataset; choose one of "
                          f"{', '.join(PUBLISHED)}")
    if features and features not in FEATURES:
        raise ConfigError(f"{where}.features: {features!r} is unknown; choose one of {', '.join(FEATURES)} (or leave "
                          "it empty for Errica et al.'s choice for the dataset)")
    if params["variant"] not in VARIANTS:
        raise (renamed_error(f"{where}.variant", "variant", params["variant"], VARIANTS)
               or ConfigError(f"{where}.variant: {params['variant']!r} is unknown; use {DWIVEDI2020} (the benchmark's "
                              "TU loader: DGL's feature rule, edge input ones of the node width) or leave it empty"))
    if not features and name not in SPEC_FEATURES and not params["variant"]:
        raise ConfigError(f"{where}.features: {name} has no node labels and two feature variants (Errica et al.); set "
                          "features: constant or features: degree")
    _, _, label_width, attribute_width = PUBLISHED[name]
    resolved = resolved_features(params)
    if (resolved in ("labels", "labels_and_attributes") and not label_width) or (
            resolved in ("labels_and_attributes", "attributes") and not attribute_width):
        lacking = "node labels" if resolved != "attributes" and not label_width else "node attributes"
        raise ConfigError(f"{where}.features: {name} has no {lacking}, so {resolved!r} is impossible; use "
                          f"{', '.join(f for f in FEATURES if _width(name, f))}")


TU = Generator(
    name="tu",
    description="TU Dortmund graph-classification datasets (DD, PROTEINS(_full), NCI1, ENZYMES, IMDB-BINARY/MULTI, "
                "REDDIT-BINARY/MULTI-5K, COLLAB) from their zips, with the fair-comparison node features",
    defaults={"name": "ENZYMES", "features": "", "variant": "", "mirror": ""},
    default_split={"scheme": "stratified_kfold", "folds": 10, "val_fraction": 0.1, "seed": 0},
    describe=describe,
    build=_build,
    check=_check,
    raw_files=raw_files,
    published_splits=published_splits,
)
