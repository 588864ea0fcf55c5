"""The original CYCLES pickle (k = 6, n = 56) as graph columns, for exact comparisons with the released data.

The benchmark does not generate CYCLES: it downloads ``datasets_kcycle_k=6_nsamples=10000.pickle`` (from cvignac/SMP,
through the Dropbox link in :data:`URL`) and converts it (the released code's ``data/cycles/prepare_cycles.ipynb`` and
``data/cycles.py``; docs/datasets.md#cycles-as-released). This
module reads that file into exactly the columns :mod:`gnnbench.data.generators.cycles` produces, so the released
graphs and ours go through the same store, loaders and models:

* the file unpickles to ``(datasets_params, datasets)``: aligned lists, one entry per graph-size setting; each params
  entry is a dict with key ``'n'`` (the *average* node count; cvignac/SMP ``cycles_main.py``); the entry with
  ``n`` = 56 is used;
* its samples are ``(networkx_graph, y, label)``; ``y`` is ignored (as by SMP and the benchmark); the class is 1 iff
  ``label == 'has-kcycle'``;
* split by position: train = samples [0, 9000), val = [9000, 10000), test = [10000, 20000) (the benchmark's test is
  "the rest", which is these 10,000 samples); stored train, val, test in that order, as the generator does;
* columns: ``num_nodes`` int64; every undirected networkx edge in both directions, row-major per graph (sorted by
  source, then destination; the generator's order — the benchmark's DGL graphs list the edges in ``nx.to_edgelist``
  order instead, which changes no model output); node ``x`` = 1.0 float32 (n, 1); edge ``edge_attr`` = 1.0 float32
  (E, 1); graph ``y`` int16.

Decisions where neither the paper nor the released code says (docs/datasets.md#cycles-as-released):

* Node ids: when a graph's nodes are the integers 0..n−1 they are used as they are (as DGL's conversion does);
  any other node labels are numbered in the graph's node order.
* Self-loops (none expected) give one edge u → u, and a repeated edge (a multigraph) is stored once.
* The negative label string is not documented anywhere (SMP's and the benchmark's code only test for
  ``'has-kcycle'``). Labels must be strings, and at most one string other than ``'has-kcycle'`` may occur (it is
  taken as the negative class); anything else is an error rather than a silent 0.
* With more samples than the requested split sizes, test takes the first ``num_test`` after train and val.
* The file's MD5 is not published (:data:`MD5` is None): the download records its SHA-256
  (:mod:`gnnbench.data.download`), and :func:`describe_release` writes the SHA-256 of the file actually read into
  ``meta.source``.

Security: the file is read by gnnbench's allow-list unpickler (:func:`gnnbench.data.safe_pickle.safe_load`), never
by ``pickle.load``, so it cannot run code. Allowed are plain containers and numbers, NumPy arrays, and — for this file
only (:data:`gnnbench.data.safe_pickle.NETWORKX_GRAPHS`) — ``networkx.classes.graph.Graph`` with the node/edge/degree/
adjacency views a graph caches; these are not constructed (networkx is not even imported): each becomes a plain
holder of its pickled state, and the conversion reads a graph's node dict (``_node``; networkx 1.x: ``node``) and
adjacency dict (``_adj``; 1.x: ``adj``) from it, checking that they fit together. Any other global — a function, a
``DiGraph`` — is a one-line :class:`DataError`. The file's SHA-256 is not published and no verified copy was
available, so it is not pinned: the download records it and every reuse checks that record (pin it with the
``sha256`` parameter once you have a copy you trust).

Speed: one Python pass over the graphs collects node ids, degrees and neighbour lists with C-level list operations
(the pickled dicts leave no alternative); sources, ordering and features are then built with NumPy over all edges at
once. The allow-list reading costs about what ``pickle.load`` does (figures: docs/performance.md).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from gnnbench.data.download import RawFile, recorded_sha256
from gnnbench.data.generators.base import Generator
from gnnbench.data.meta import DatasetMeta, FeatureSpec, write_dataset
from gnnbench.data.safe_pickle import NETWORKX_GRAPHS, PickledGraph, safe_load
from gnnbench.data.store import GraphColumns
from gnnbench.errors import DataError
from gnnbench.io import sha256_file

FILE_NAME = "datasets_kcycle_k=6_nsamples=10000.pickle"
RELATIVE_PATH = f"cycles/{FILE_NAME}"  # under the raw-data folder
URL = "https://www.dropbox.com/s/e1nd889j7vfunnh/datasets_kcycle_k%3D6_nsamples%3D10000.pickle?dl=1"
MD5: str | None = None  # not published anywhere we know; the download records a SHA-256 instead
POSITIVE_LABEL = "has-kcycle"
CYCLE_LENGTH = 6
DEFAULT_N = 56
SPLITS = ("train", "val", "test")


def _load(path: Path) -> object:
    """The unpickled file, networkx graphs as :class:`~gnnbench.data.safe_pickle.PickledGraph` holders."""
    if not path.is_file():
        raise DataError(f"CYCLES release {path} not found; download {FILE_NAME} from {URL} and place it there")
    return safe_load(path, "CYCLES release", extra=NETWORKX_GRAPHS,
                     fix=f"delete it and download {FILE_NAME} again from {URL}")


def _graph_dicts(graph: PickledGraph) -> tuple[dict, dict] | None:
    """The node dict and adjacency dict of a pickled networkx graph (networkx ≥ 2 or 1.x names), or None."""
    state = graph.state
    if not isinstance(state, dict):
        return None
    nodes = state.get("_node", state.get("node"))
    adj = state.get("_adj", state.get("adj"))
    if type(nodes) is not dict or type(adj) is not dict:
        return None
    return nodes, adj


def _samples(data: object, path: Path, n: int) -> list:
    """The sample list of the setting with average node count ``n``."""
    structure = "a pair (datasets_params, datasets) of aligned lists"
    if not (isinstance(data, (tuple, list)) and len(data) == 2
            and all(isinstance(part, (tuple, list)) for part in data) and len(data[0]) == len(data[1])):
        raise DataError(f"CYCLES release {path} does not hold {structure} (got {type(data).__name__}); it is not "
                        f"the CYCLES pickle: download {FILE_NAME} again from {URL}")
    params, datasets = data
    if not all(isinstance(p, dict) and "n" in p for p in params):
        raise DataError(f"CYCLES release {path}: every datasets_params entry must be a dict with key 'n'; it is not "
                        f"the CYCLES pickle: download {FILE_NAME} again from {URL}")
    available = [p["n"] for p in params]
    if n not in available:
        raise DataError(f"CYCLES release {path} has no setting with n = {n} (available n: "
                        f"{', '.join(map(str, available)) or 'none'}); use one of those or the k = 6 file from {URL}")
    samples = datasets[available.index(n)]
    if not isinstance(samples, (tuple, list)):
        raise DataError(f"CYCLES release {path}: the n = {n} dataset is a {type(samples).__name__}, expected a list "
                        "of (graph, y, label) samples")
    return samples


def read_cycles_pickle(path: str | os.PathLike, n: int = DEFAULT_N, num_train: int = 9000, num_val: int = 1000,
                       num_test: int = 10000) -> GraphColumns:
    """Graph columns of the released CYCLES pickle's setting ``n``: train, val, test by position (module doc)."""
    path = Path(path)
    samples = _samples(_load(path), path, n)
    total = num_train + num_val + num_test
    if len(samples) < total:
        raise DataError(f"CYCLES release {path}: the n = {n} dataset has {len(samples)} samples, fewer than the "
                        f"{num_train} + {num_val} + {num_test} = {total} requested for train, val and test; lower "
                        "the split sizes")
    samples = samples[:total]
    num_nodes = np.empty(total, dtype=np.int64)
    labels: list[object] = []
    degrees: list[int] = []  # per node, in each graph's node order
    node_ids: list[int] = []  # id of every node, in each graph's node order
    nbrs_flat: list[int] = []  # neighbour ids of every node, node after node: each undirected edge appears twice
    for i, sample in enumerate(samples):  # unavoidable pass over Python objects; everything else is vectorised
        dicts = (_graph_dicts(sample[0]) if isinstance(sample, (tuple, list)) and len(sample) == 3
                 and isinstance(sample[0], PickledGraph) else None)
        if dicts is None:
            raise DataError(f"CYCLES release {path}: sample {i} of the n = {n} dataset is not a (networkx graph, "
                            f"y, label) triple (got {type(sample).__name__}); it is not the CYCLES pickle")
        node, adj = dicts
        nodes = list(node)
        if list(adj) != nodes:  # networkx keeps both dicts in node order; anything else is not a pickled Graph
            raise _malformed(path, n, i, "its adjacency does not list its nodes in node order")
        try:
            if nodes == list(range(len(nodes))):  # the usual case: C-speed list operations only
                node_ids.extend(nodes)
                for nbrs in adj.values():
                    degrees.append(len(nbrs))
                    nbrs_flat.extend(nbrs)
            else:  # integers 0..n-1 in another order keep their values; other labels are numbered in node order
                identity = set(nodes) == set(range(len(nodes)))
                index = {v: (v if identity else k) for k, v in enumerate(nodes)}
                node_ids.extend(index[v] for v in nodes)
                for nbrs in adj.values():
                    degrees.append(len(nbrs))
                    nbrs_flat.extend(index[v] for v in nbrs)
        except (KeyError, TypeError) as exc:  # a neighbour that is no node, neighbours that are not a dict
            raise _malformed(path, n, i, f"its adjacency is not a dict of neighbour dicts of its nodes "
                             f"({type(exc).__name__})") from None
        num_nodes[i] = len(nodes)
        labels.append(sample[2])
    y = _labels(labels, path, n)

    degree = np.asarray(degrees, dtype=np.int64)
    src = np.repeat(np.asarray(node_ids, dtype=np.int64), degree)
    graph_of = np.repeat(np.repeat(np.arange(total, dtype=np.int64), num_nodes), degree)
    dst = _neighbours(nbrs_flat, num_nodes[graph_of], graph_of, path, n)
    # row-major per graph: one sort of the key (graph, source, destination); a multigraph's repeats are dropped
    base = int(num_nodes.max(initial=1))
    key = np.sort((graph_of * base + src) * base + dst)
    key = key[np.concatenate([[True], key[1:] != key[:-1]])] if key.size else key
    graph_of, rest = np.divmod(key, base * base)
    src, dst = np.divmod(rest, base)
    num_edges = np.bincount(graph_of, minlength=total).astype(np.int64)
    columns = GraphColumns(
        num_nodes=num_nodes, num_edges=num_edges, src=src.astype(np.int32), dst=dst.astype(np.int32),
        node={"x": np.ones((int(num_nodes.sum()), 1), dtype=np.float32)},
        edge={"edge_attr": np.ones((int(num_edges.sum()), 1), dtype=np.float32)},
        graph={"y": y},
    )
    columns.validate()
    return columns


def _neighbours(nbrs_flat: list, limit: np.ndarray, graph_of: np.ndarray, path: Path, n: int) -> np.ndarray:
    """The neighbour ids as int64, each checked to lie in 0..(its graph's node count − 1)."""
    try:
        dst = np.asarray(nbrs_flat)
    except (TypeError, ValueError, OverflowError):  # e.g. ints too large for int64
        dst = np.zeros(len(nbrs_flat), dtype=object)
    if dst.size and dst.dtype.kind not in "iu":
        raise _malformed(path, n, None, "a neighbour id is not an integer")
    outside = np.flatnonzero((dst < 0) | (dst >= limit))
    if outside.size:
        raise _malformed(path, n, int(graph_of[outside[0]]), "a neighbour is not one of its nodes 0..n-1")
    return dst.astype(np.int64, copy=False)


def _malformed(path: Path, n: int, i: int | None, problem: str) -> DataError:
    which = "a networkx graph" if i is None else f"the networkx graph of sample {i}"
    return DataError(f"CYCLES release {path}: {which} of the n = {n} dataset is malformed ({problem}); it is not the "
                     f"CYCLES pickle — delete it and download {FILE_NAME} again from {URL}")


def _labels(labels: list[object], path: Path, n: int) -> np.ndarray:
    values = np.asarray(labels, dtype=object)
    bad = sorted({repr(v) for v in labels if not isinstance(v, str)})
    negatives = sorted({v for v in labels if isinstance(v, str) and v != POSITIVE_LABEL})
    if bad or len(negatives) > 1:
        found = bad + [repr(v) for v in negatives]
        raise DataError(f"CYCLES release {path}: unknown labels {', '.join(found)} in the n = {n} dataset; expected "
                        f"{POSITIVE_LABEL!r} and one negative label string; it is not the CYCLES pickle")
    return (values == POSITIVE_LABEL).astype(np.int16)


def describe_release(name: str, path: str | os.PathLike, n: int = DEFAULT_N, num_train: int = 9000,
                     num_val: int = 1000, num_test: int = 10000) -> DatasetMeta:
    """Metadata of the converted release, as :mod:`~gnnbench.data.generators.cycles` describes its own data (same
    task, loss, metric, features and PE usage); ``source`` records the file name, URL and the file's SHA-256."""
    sizes = {"train": num_train, "val": num_val, "test": num_test}
    path = Path(path)
    return DatasetMeta(
        name=name, task="graph_classification", loss="cross_entropy", metric="accuracy", num_outputs=2,
        num_graphs=sum(sizes.values()), node_features=FeatureSpec("continuous", 1),
        edge_features=FeatureSpec("continuous", 1), pe_usage="replace", split_sizes=sizes,
        source={"release": FILE_NAME, "file": path.name, "url": URL, "md5": MD5, "sha256": sha256_file(path),
                "n": n, "cycle_length": CYCLE_LENGTH, "positive_label": POSITIVE_LABEL},
    )


def convert_release(path: str | os.PathLike, out_dir: str | os.PathLike, name: str = "CYCLES", n: int = DEFAULT_N,
                    num_train: int = 9000, num_val: int = 1000, num_test: int = 10000) -> DatasetMeta:
    """Write the release as a dataset folder (``graphs.parquet`` + ``meta.json``, atomically)."""
    columns = read_cycles_pickle(path, n, num_train, num_val, num_test)
    return write_dataset(out_dir, columns, describe_release(name, path, n, num_train, num_val, num_test))


# ------------------------------------------------------------------------------------------------ generator
#
# ``cycles_release``: the released file as a dataset of the workflow. The raw file is downloaded by the workflow's
# raw_download rule (or by ``generate``) into raw_dir/cycles/; its MD5 is unknown, so the download records its
# SHA-256 beside it, and the build refuses a file whose SHA-256 differs from that record, or from ``sha256`` when
# the config pins one (do pin it once you have verified a copy: then every machine checks the same bytes).


def _raw_files(params: dict) -> list:
    return [RawFile(RELATIVE_PATH, MD5, (URL,))]


def _verified_path(params: dict, raw_dir: Path) -> Path:
    path = Path(raw_dir) / RELATIVE_PATH
    got = sha256_file(path)
    for expected, what in ((recorded_sha256(path), "the SHA-256 recorded when it was downloaded"),
                           (params["sha256"] or None, "params.sha256 of the config")):
        if expected is not None and got != expected:
            raise DataError(f"{path} has SHA-256 {got}, not {expected} ({what}); delete it (and its .sha256 record) "
                            "to download it again, or fix the pinned value")
    return path


def _build_release(params: dict, seed: int, raw_dir: Path) -> GraphColumns:
    path = _verified_path(params, raw_dir)
    return read_cycles_pickle(path, params["n"], params["num_train"], params["num_val"], params["num_test"])


def _describe_release(name: str, params: dict, seed: int) -> DatasetMeta:
    sizes = {"train": params["num_train"], "val": params["num_val"], "test": params["num_test"]}
    return DatasetMeta(
        name=name, task="graph_classification", loss="cross_entropy", metric="accuracy", num_outputs=2,
        num_graphs=sum(sizes.values()), node_features=FeatureSpec("continuous", 1),
        edge_features=FeatureSpec("continuous", 1), pe_usage="replace", split_sizes=sizes,
        source={"generator": "cycles_release", "release": FILE_NAME, "url": URL, "md5": MD5,
                "params": {k: v for k, v in params.items() if k != "mirror"}, "n": params["n"],
                "cycle_length": CYCLE_LENGTH, "positive_label": POSITIVE_LABEL},
    )


CYCLES_RELEASE = Generator(
    name="cycles_release",
    description="CYCLES as released (the original pickle, downloaded and checksummed): 6-cycle detection",
    defaults={"num_train": 9000, "num_val": 1000, "num_test": 10000, "n": DEFAULT_N, "mirror": "",
              "sha256": ""},
    default_split={"scheme": "given"},
    describe=_describe_release,
    build=_build_release,
    raw_files=_raw_files,
)
