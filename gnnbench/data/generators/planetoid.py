"""Planetoid citation graphs (Cora, CiteSeer, PubMed) from the original ``ind.*`` files
(docs/datasets.md#planetoid-cora-citeseer-pubmed).

Raw files: the eight ``ind.{name}.{x,y,tx,ty,allx,ally,graph,test.index}`` of kimiyoung/planetoid (what PyTorch
Geometric's ``Planetoid`` downloads), fetched into ``raw_dir/planetoid/{name}/``. The SHA-256 of the Cora and
CiteSeer files is pinned (:data:`PINNED_SHA256`, the published originals); PubMed's is recorded at first download
and verified on every reuse. The pickles (Python 2, latin1) are read with the allow-list unpickler
(:mod:`gnnbench.data.safe_pickle`): only NumPy arrays, a ``defaultdict`` of lists and CSR matrices are accepted.

Parsing (the semantics of PyG's ``read_planetoid_data``, written without dataset-name branches):

* ``allx``/``ally`` are nodes 0..|allx|−1; ``tx``/``ty`` row j is node ``test.index[j]``; the graph has
  N = max(|allx| + |tx|, max(test.index) + 1) nodes. Nodes in [|allx|, N) that no test index names have no
  features and no label: zero feature rows and label −1. This is CiteSeer's fix (15 such nodes, N = 3,327): PyG
  inserts the same zero rows but gives them class 0 (argmax of a zero row); gnnbench marks them unlabelled.
* Labels = argmax of the one-hot rows; an all-zero label row is "no label" (−1).
* Edges: every (key, neighbour) of the ``graph`` dict of lists.
* Public split: train = nodes 0..|y|−1, val = the next 500, test = the ``test.index`` nodes.

``standardize: true`` (the random-split experiments, Shchur et al., Table 1): **Decision**
(docs/datasets.md#planetoid-cora-citeseer-pubmed) — nodes without a label (CiteSeer's 15 phantom test nodes) are removed
first; then Shchur et al.'s preprocessing (:func:`gnnbench.data.transductive.standardize`: unweighted, undirected, no
self loops, largest connected component with nodes in ascending original order, labels re-indexed over the classes
present, binary features, no normalisation). Removing the phantom nodes first gives exactly gnn-benchmark's
``citeseer.npz`` graph (3,312 nodes) and the paper's 2,110 nodes / 3,668 edges after the LCC (keeping them: 2,120 /
3,679). Cora: 2,485 nodes, 5,069 edges, 1,433 features, 7 classes. No ``split`` column: splits are drawn per class
later.

``standardize: false`` (the "Planetoid split" experiment, Shchur et al., Table 2b): no LCC, no self-loop removal, no
binarisation (PubMed keeps its TF-IDF values); adjacency = the symmetric, unweighted graph (duplicate edges merged,
existing self loops kept once); phantom nodes kept (zero features, label −1); node column ``split`` = the public split
and ``split_sizes`` its sizes (Cora 140 / 500 / 1,000).

Graph columns as :func:`gnnbench.data.transductive.to_graph_columns` writes them; ``seed`` is not used (the
conversion is deterministic). ``mirror`` (string) is tried before the canonical URL and is not recorded in
``meta.source`` (the files' SHA-256 are).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from gnnbench.data.download import RawFile
from gnnbench.data.generators.base import Generator
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.pyg_raw import PLANETOID_SHA256
from gnnbench.data.safe_pickle import safe_load, to_csr
from gnnbench.data.store import GraphColumns
from gnnbench.data.transductive import (
    RawGraph,
    node_classification_meta,
    split_codes,
    standardize,
    symmetric_unweighted,
    to_graph_columns,
)
from gnnbench.errors import ConfigError, DataError

NAMES = ("cora", "citeseer", "pubmed")
EXTENSIONS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
URL = "https://github.com/kimiyoung/planetoid/raw/master/data/ind.{name}.{ext}"
VAL_SIZE = 500  # the public split's validation set: the 500 nodes after the training nodes
PUBLISHED = {"cora": (1433, 7), "citeseer": (3703, 6), "pubmed": (500, 3)}  # (features, classes) of the raw files

PINNED_SHA256 = PLANETOID_SHA256  # kimiyoung/planetoid@af6abf46 (the files PyG downloads)

WHAT = "Planetoid file"


def raw_files(params: dict) -> list[RawFile]:
    """The eight ``ind.{name}.*`` files of the dataset (Cora's and CiteSeer's with their pinned SHA-256)."""
    name = params["name"]
    pins = PINNED_SHA256.get(name, {})
    return [RawFile(f"planetoid/{name}/ind.{name}.{ext}", None, (URL.format(name=name, ext=ext),),
                    sha256=pins.get(ext)) for ext in EXTENSIONS]


# ---------------------------------------------------------------------------------------------------------- parsing
def _dense_labels(obj: object, path: Path) -> np.ndarray:
    if not (isinstance(obj, np.ndarray) and obj.ndim == 2 and np.issubdtype(obj.dtype, np.number)):
        raise DataError(f"{WHAT} {path} holds {type(obj).__name__}, expected a 2-d one-hot label array; delete it and "
                        "download it again")
    return obj


def _test_index(path: Path) -> np.ndarray:
    try:
        values = np.loadtxt(path, dtype=np.int64, ndmin=1)
    except (OSError, ValueError) as exc:
        raise DataError(f"{WHAT} {path} is not a list of integers, one per line ({str(exc).splitlines()[0][:120]}); "
                        "delete it and download it again") from None
    return values


def _edges(graph: object, path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(source, target) of every (key, neighbour) of a dict of lists (C-level iteration, no per-node Python code)."""
    if not isinstance(graph, dict) or not all(isinstance(v, (list, tuple)) for v in graph.values()):
        raise DataError(f"{WHAT} {path} holds {type(graph).__name__}, expected a dict of neighbour lists; delete it "
                        "and download it again")
    try:
        keys = np.fromiter(graph.keys(), dtype=np.int64, count=len(graph))
        lengths = np.fromiter(map(len, graph.values()), dtype=np.int64, count=len(graph))
        targets = np.fromiter(itertools.chain.from_iterable(graph.values()), dtype=np.int64, count=int(lengths.sum()))
    except (TypeError, ValueError, OverflowError):
        raise DataError(f"{WHAT} {path}: node ids must be integers; delete it and download it again") from None
    return np.repeat(keys, lengths), targets


def read_planetoid(folder: str | Path, name: str) -> tuple[RawGraph, dict[str, np.ndarray]]:
    """The raw graph (symmetric unweighted adjacency with self loops kept once, features as stored, labels with −1
    for none) and the public split (train/val/test node indices) from the eight files in ``folder``."""
    folder = Path(folder)
    path = {ext: folder / f"ind.{name}.{ext}" for ext in EXTENSIONS}
    loaded = {ext: safe_load(path[ext], WHAT) for ext in ("x", "y", "tx", "ty", "allx", "ally", "graph")}
    x, tx, allx = (to_csr(loaded[e], WHAT, str(path[e])) for e in ("x", "tx", "allx"))
    y, ty, ally = (_dense_labels(loaded[e], path[e]) for e in ("y", "ty", "ally"))
    test_index = _test_index(path["test.index"])
    src, dst = _edges(loaded["graph"], path["graph"])

    def bad(message: str) -> DataError:
        return DataError(f"Planetoid files ind.{name}.* in {folder} do not fit together: {message}; delete them and "
                         "download them again")

    width, classes = allx.shape[1], ally.shape[1]
    if x.shape[1] != width or tx.shape[1] != width:
        raise bad(f"feature widths x {x.shape[1]}, tx {tx.shape[1]}, allx {width} differ")
    if y.shape[1] != classes or ty.shape[1] != classes:
        raise bad(f"label widths y {y.shape[1]}, ty {ty.shape[1]}, ally {classes} differ")
    if x.shape[0] != y.shape[0] or allx.shape[0] != ally.shape[0] or tx.shape[0] != ty.shape[0]:
        raise bad("a feature matrix and its label matrix have different row counts")
    if test_index.size != tx.shape[0]:
        raise bad(f"test.index has {test_index.size} entries but tx has {tx.shape[0]} rows")
    known = allx.shape[0]
    num_nodes = max(known + tx.shape[0], int(test_index.max(initial=-1)) + 1)
    if test_index.size and (test_index.min() < known or np.unique(test_index).size != test_index.size):
        raise bad(f"test.index must name distinct nodes from {known} on (after the allx nodes)")
    if y.shape[0] + VAL_SIZE > known:
        raise bad(f"{y.shape[0]} training + {VAL_SIZE} validation nodes exceed the {known} allx nodes")
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= num_nodes):
        raise bad(f"the graph names a node outside 0..{num_nodes - 1}")

    # rows of [allx; tx; zero rows] go to nodes [0..known-1, test.index, nodes named by neither]
    filled = np.zeros(num_nodes, dtype=bool)
    filled[:known] = True
    filled[test_index] = True
    phantom = np.flatnonzero(~filled)
    position = np.concatenate([np.arange(known), test_index, phantom])
    order = np.empty(num_nodes, dtype=np.int64)
    order[position] = np.arange(num_nodes)
    features = sp.vstack([allx, tx, sp.csr_matrix((phantom.size, width), dtype=np.float32)]).tocsr()[order]
    one_hot = np.concatenate([ally, ty, np.zeros((phantom.size, classes), dtype=ally.dtype)])[order]
    labels = np.where(one_hot.any(axis=1), one_hot.argmax(axis=1), -1).astype(np.int64)

    adjacency = symmetric_unweighted(sp.csr_matrix((np.ones(src.size, np.float32), (src, dst)),
                                                   shape=(num_nodes, num_nodes)))
    graph = RawGraph(adjacency, features.astype(np.float32), labels, np.arange(num_nodes, dtype=np.int64),
                      np.arange(classes, dtype=np.int64))
    split = {"train": np.arange(y.shape[0]), "val": np.arange(y.shape[0], y.shape[0] + VAL_SIZE),
             "test": np.sort(test_index)}
    return graph, split


# -------------------------------------------------------------------------------------------------------- generator
def _build(params: dict, seed: int, raw_dir: Path) -> GraphColumns:
    name = params["name"]
    graph, split = read_planetoid(Path(raw_dir) / "planetoid" / name, name)
    if not params["standardize"]:
        return to_graph_columns(graph.adjacency, graph.features, graph.labels, split_codes(graph.num_nodes, split))
    labelled = np.flatnonzero(graph.labels >= 0)
    keep = RawGraph(graph.adjacency[labelled][:, labelled].tocsr(), graph.features[labelled].tocsr(),
                     graph.labels[labelled], labelled, graph.classes)
    std = standardize(keep)
    return to_graph_columns(std.adjacency, std.features, std.labels)


STANDARDIZE_STEPS = ["remove nodes without a label (CiteSeer's phantom test nodes)", "unweighted", "undirected",
                     "remove self loops", "largest connected component (nodes in ascending original order)",
                     "labels re-indexed over the classes present", "binary features (every stored nonzero = 1)"]
PLANETOID_SPLIT_STEPS = ["symmetric unweighted adjacency (duplicates merged, self loops kept once)",
                         "nodes named by no file: zero features, label -1", "features as stored",
                         "node column split = public split (train: first |y| nodes, val: next 500, test: test.index)"]


def describe(name: str, params: dict, seed: int) -> DatasetMeta:
    """The dataset's description before conversion (feature width and classes of the raw files; the written
    ``meta.json`` takes both from the converted data)."""
    width, classes = PUBLISHED[params["name"]]
    standard = params["standardize"]
    sizes = None if standard else {"train": 20 * classes, "val": VAL_SIZE, "test": 1000}
    source = {"generator": "planetoid", "seed": seed,
              "params": {k: v for k, v in params.items() if k != "mirror"},
              "preprocessing": STANDARDIZE_STEPS if standard else PLANETOID_SPLIT_STEPS,
              "raw_files": {f.relative_path: f.sha256 for f in raw_files(params)}}
    return node_classification_meta(name, classes, FeatureSpec("continuous", width, sparse=True), source, sizes)


def _check(params: dict, where: str) -> None:
    if params["name"] not in NAMES:
        raise ConfigError(f"{where}.name: {params['name']!r} is not a Planetoid dataset; choose one of "
                          f"{', '.join(NAMES)}")


PLANETOID = Generator(
    name="planetoid",
    description="Planetoid citation graphs (cora, citeseer, pubmed) from the original ind.* files; standardised "
                "(LCC, binary features) or with the public split (node classification, one graph)",
    defaults={"name": "cora", "standardize": True, "mirror": ""},
    default_split={"scheme": "random_per_class", "train_per_class": 20, "val_per_class": 30},
    describe=describe,
    build=_build,
    check=_check,
    raw_files=raw_files,
)
