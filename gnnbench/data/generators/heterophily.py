"""Platonov et al.'s heterophilous graphs with their ten splits (docs/datasets.md#heterophilous-graphs).

Raw file: ``data/{name}.npz`` of yandex-research/heterophilous-graphs (the released code and data of "A critical
look at the evaluation of GNNs under heterophily", ICLR 2023; MIT licence), fetched into ``raw_dir/heterophily/``.
The SHA-256 of every file of the release (commit a431395) is pinned (:data:`PINNED_SHA256`); roman_empire,
amazon_ratings and questions are kept in Git LFS there, so their SHA-256 is recorded at first download and verified
on every reuse, and ``meta.source.raw_sha256`` holds the value of the file that was read.

``name``: the five new datasets (roman_empire, amazon_ratings, minesweeper, tolokers, questions), chameleon and
squirrel — as used before (``chameleon``), without their duplicate nodes (``*_filtered``) and with directed edges
(``*_directed``) — and actor, texas, texas_4_classes, cornell, wisconsin (the released code's ``--dataset``
choices, with ``_`` for ``-``).

Reading (``np.load(allow_pickle=False)``, so no object arrays and no code; every member first checked by
:func:`gnnbench.data.archive.check_member`): ``node_features`` (N, D), ``node_labels`` (N,), ``edges`` (E, 2) and
``train_masks`` / ``val_masks`` / ``test_masks`` (10, N), as the released ``datasets.py`` reads them. A missing key,
arrays that disagree on N or a node in two parts of a split is a one-line :class:`DataError` naming the file.

What is stored, as the released ``datasets.py`` builds its graph:

* edges: the files store an undirected edge once; for every dataset but the ``*_directed`` ones both directions
  are stored (``dgl.to_bidirected``: reverse edges added, duplicates merged); a ``*_directed`` dataset keeps its
  edges as stored. Self loops are not added: the released code adds them for GCN, GAT and GT only, which is the
  model's business (the zoo's layers), not the dataset's;
* features as stored (float32; the bag-of-words features of chameleon, squirrel, actor and the WebKB graphs, under
  6% nonzero, as the sparse node column ``x``, the others dense);
* labels as stored; the binary datasets (minesweeper, tolokers, questions) are trained with a binary cross-entropy
  (``loss: binary_cross_entropy``: on the one logit of the released models) and scored by ROC AUC (``metric:
  roc_auc``, on the score of class 1), the others with cross-entropy and by accuracy, as the released code does;
* the ten splits as the node column ``split`` (int8, (N, 10)): column k is split k (0 train, 1 val, 2 test, −1
  none); the split scheme ``given`` makes one fold per column.

Statistics: ``meta.json``'s ``statistics.all`` holds nodes, undirected edges, classes, edge and adjusted homophily
measured on the stored graph (:mod:`gnnbench.data.homophily`), and ``source.published_statistics`` the paper's
Table 1 row where the paper prints one (``gnnbench/data/heterophily_table1.csv``).
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from gnnbench.data.archive import open_npz
from gnnbench.data.download import RawFile
from gnnbench.data.generators.base import Generator
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import SPLIT_CODES, GraphColumns, SparseRows
from gnnbench.errors import ConfigError, DataError

URL = "https://github.com/yandex-research/heterophilous-graphs/raw/main/data/{file}"
SPLITS = 10
# SHA-256 of the released files (git show a431395:data/{name}.npz | sha256sum); None: stored in Git LFS there
PINNED_SHA256: dict[str, str | None] = {
    "roman_empire": None,
    "amazon_ratings": None,
    "minesweeper": "e664c8dacf1e8ac466c2c09ed4b237bd2c5541f47a6eae9c6092cb87f16412b3",
    "tolokers": "dacf3ac94cec53d03cd2adb5255c08b33dee1656c33ca8164a464bd9450a1667",
    "questions": None,
    "chameleon": "4c640bd2877fc4f9f101531e2f977bc16445a54e09a5cb01178df608e552f3fd",
    "chameleon_directed": "34aea6b6888063544232100d53d4aa7e87e37953ec8dd3a7092afb25bb2f0328",
    "chameleon_filtered": "bf46f07e1fb5249280447e5fe3100f3e82fc4b93ad1e13ffcfdec924b6ac0bb5",
    "chameleon_filtered_directed": "5a2d40701407188f1661d37a326484b49cc15251e0dedaa7bd380873dac80f21",
    "squirrel": "d436e3b42c0546b105241c0ab0766097074e68e55f67b133eeb9b0162e55cbd9",
    "squirrel_directed": "3f0436486716cf77b651c372e54f6b4c2cc52262e7faeeab584a34b41bae2616",
    "squirrel_filtered": "f06370ffb3116c5de8b7a600005400b2293c025e0ce2f6916d8201a825505ac7",
    "squirrel_filtered_directed": "0526e53252f0b052124f7390829c32e923d432acaf64206191a1144a07b39620",
    "actor": "c350eef06b2c2a9bf8218be2b57cac6d4003d0922eb597a039e9123f75817816",
    "texas": "b164b99e6c3d43e4ab07488ec59bd8c815f90cbc1bd4cf425ce587d2b534d844",
    "texas_4_classes": "2da438ba7f41fd82e0953e2c9f63ef18e5a58da51ae6369cb5f5010bdf0e67bd",
    "cornell": "684c54ba3daa13b0ba1f04a3d6dd1b1175c1ae9bdeb982851fd4ff96d3aac298",
    "wisconsin": "2543c89838cfc75f737f7c4664cc1d097f8268602c20b2d1bd4f21407df9c074",
}
NAMES = tuple(PINNED_SHA256)
# (features, classes) of each file, for the description before the data is read (the written meta.json takes both
# from the data)
SIZES = {"roman_empire": (300, 18), "amazon_ratings": (300, 5), "minesweeper": (7, 2), "tolokers": (10, 2),
         "questions": (301, 2), "chameleon": (2325, 5), "squirrel": (2089, 5), "actor": (932, 5),
         "texas": (1703, 5), "texas_4_classes": (1703, 5), "cornell": (1703, 5), "wisconsin": (1703, 5)}
BINARY = ("minesweeper", "tolokers", "questions")  # scored by ROC AUC in the released code
KEYS = ("node_features", "node_labels", "edges", "train_masks", "val_masks", "test_masks")
TABLE1 = Path(__file__).resolve().parents[1] / "heterophily_table1.csv"
WHAT = "heterophilous-graphs npz file"
# datasets whose features are bags of words (under 6% nonzero): stored as the sparse node column x
BAG_OF_WORDS = ("chameleon", "squirrel", "actor", "texas", "texas_4_classes", "cornell", "wisconsin")


def directed(name: str) -> bool:
    """Whether dataset ``name`` keeps its edges as stored (the released code: no ``to_bidirected``)."""
    return name.endswith("_directed")


def base_name(name: str) -> str:
    """The dataset ``name`` without ``_filtered`` / ``_directed`` (the key of :data:`SIZES`)."""
    return name.replace("_filtered", "").replace("_directed", "")


def raw_file(name: str) -> RawFile:
    """The npz file of dataset ``name`` (a key of :data:`PINNED_SHA256`), fetched into ``raw_dir/heterophily/``."""
    file = f"{name}.npz"
    return RawFile(f"heterophily/{file}", None, (URL.format(file=file),), sha256=PINNED_SHA256[name])


@cache
def published_statistics() -> dict[str, dict[str, float]]:
    """The paper's Table 1 by dataset name (:data:`TABLE1`): nodes, edges, avg_degree, node_features, classes,
    edge_homophily, adjusted_homophily, label_informativeness."""
    with TABLE1.open(encoding="utf-8") as handle:
        rows = csv.DictReader(line for line in handle if not line.startswith("#"))
        return {row.pop("dataset"): {k: (int(v) if k in ("nodes", "edges", "node_features", "classes")
                                         else float(v)) for k, v in row.items()} for row in rows}


FIX = "it is damaged or not the release — delete it (and its .sha256 record) and download it again"


def _fail(path: Path, message: str) -> DataError:
    return DataError(f"{WHAT} {path}: {message}; {FIX}")


def read_heterophily(path: str | Path, name: str) -> GraphColumns:
    """The graph, features, labels and ten splits of one released npz file as graph columns (module docstring);
    ``name`` decides whether the edges are doubled (every dataset but ``*_directed``)."""
    path = Path(path)
    with open_npz(path, WHAT, FIX) as archive:
        missing = [key for key in KEYS if key not in archive.files]
        if missing:
            raise _fail(path, f"lacks the key {missing[0]!r} (expected {', '.join(KEYS)})")
        x, y, edges, train, val, test = (archive[key] for key in KEYS)
    n = y.shape[0] if y.ndim == 1 else -1
    if n < 0 or x.ndim != 2 or x.shape[0] != n or not np.issubdtype(y.dtype, np.integer) or y.min(initial=0) < 0:
        raise _fail(path, f"node_features {x.shape} and node_labels {y.shape} ({y.dtype}) must be (N, D) and N "
                    "class indices ≥ 0")
    if edges.ndim != 2 or edges.shape[1] != 2 or not np.issubdtype(edges.dtype, np.integer):
        raise _fail(path, f"edges must be (E, 2) integers, got {edges.dtype} {edges.shape}")
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        raise _fail(path, f"edges name a node outside 0..{n - 1}")
    for key, mask in (("train_masks", train), ("val_masks", val), ("test_masks", test)):
        if mask.shape != (SPLITS, n) or mask.dtype != bool:
            raise _fail(path, f"{key} must be ({SPLITS}, {n}) booleans, got {mask.dtype} {mask.shape}")
    overlap = (train & val) | (train & test) | (val & test)
    if overlap.any():
        k, node = (int(v[0]) for v in np.nonzero(overlap))
        raise _fail(path, f"node {node} is in two parts of split {k}")
    split = np.full((n, SPLITS), -1, dtype=np.int8)
    for part, mask in (("train", train), ("val", val), ("test", test)):
        split[mask.T] = SPLIT_CODES[part]
    src, dst = edges[:, 0].astype(np.int64), edges[:, 1].astype(np.int64)
    if not directed(name):
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    # sorted by (src, dst); to_bidirected merges duplicate edges, a directed graph keeps every stored edge
    keys = src * max(n, 1) + dst
    keys = np.sort(keys) if directed(name) else np.unique(keys)
    src, dst = keys // max(n, 1), keys % max(n, 1)
    node: dict[str, np.ndarray] = {"y": y.astype(np.int16), "split": split}
    sparse: dict[str, SparseRows] = {}
    x = x.astype(np.float32)
    if base_name(name) in BAG_OF_WORDS:
        sparse["x"] = SparseRows.from_scipy(sp.csr_matrix(x))
    else:
        node["x"] = x
    columns = GraphColumns(num_nodes=np.array([n], dtype=np.int64), num_edges=np.array([src.size], dtype=np.int64),
                           src=src.astype(np.int32), dst=dst.astype(np.int32), node=node, sparse=sparse)
    columns.validate()
    return columns


def raw_files(params: dict) -> list[RawFile]:
    """The raw files the dataset needs: its one npz file."""
    return [raw_file(params["name"])]


def _build(params: dict, seed: int, raw_dir: Path) -> GraphColumns:
    return read_heterophily(Path(raw_dir) / raw_file(params["name"]).relative_path, params["name"])


def describe(name: str, params: dict, seed: int) -> DatasetMeta:
    """The dataset's description before conversion: one graph, the file's feature width and classes, ten given
    splits; ROC AUC for the binary datasets, accuracy otherwise; the paper's Table 1 row in ``source``."""
    dataset = params["name"]
    width, classes = SIZES[base_name(dataset)]
    steps = ["edges as stored (directed)" if directed(dataset) else
             "edges stored once made bidirected (both directions, duplicates merged; dgl.to_bidirected)",
             "no self loops added (GCN, GAT and GT add their own)", "features and labels as stored",
             "node column split: one column per released split (train/val/test masks)"]
    source = {"generator": "heterophily", "seed": seed, "params": {k: v for k, v in params.items() if k != "mirror"},
              "url": URL.format(file=f"{dataset}.npz"), "preprocessing": steps,
              "raw_files": {raw_file(dataset).relative_path: PINNED_SHA256[dataset]}}
    if dataset in published_statistics():
        source["published_statistics"] = published_statistics()[dataset]
    binary = base_name(dataset) in BINARY
    return DatasetMeta(name=name, task="node_classification",
                       loss="binary_cross_entropy" if binary else "cross_entropy",
                       metric="roc_auc" if binary else "accuracy", num_outputs=classes, num_graphs=1,
                       node_features=FeatureSpec("continuous", width, sparse=base_name(dataset) in BAG_OF_WORDS),
                       edge_features=None, pe_usage="add", split_sizes=None, source=source, given_splits=SPLITS)


def _check(params: dict, where: str) -> None:
    if params["name"] not in PINNED_SHA256:
        hint = " (names use _ where the paper writes -)" if params["name"].replace("-", "_") in NAMES else ""
        raise ConfigError(f"{where}.name: {params['name']!r} is not a dataset of Platonov et al.{hint}; choose one "
                          f"of {', '.join(NAMES)}")


HETEROPHILY = Generator(
    name="heterophily",
    description="Platonov et al.'s heterophilous graphs (roman-empire, amazon-ratings, minesweeper, tolokers, "
                "questions; chameleon and squirrel with and without duplicate nodes; actor and the WebKB graphs) "
                "with their ten released splits (node classification)",
    defaults={"name": "roman_empire", "mirror": ""},
    default_split={"scheme": "given"},
    describe=describe,
    build=_build,
    check=_check,
    raw_files=raw_files,
)
