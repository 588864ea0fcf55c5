"""WikiCS: one Wikipedia graph, node classification with 20 published train/val splits (Mernyei & Cangea 2020;
docs/datasets.md#wikics).

Raw file: ``data.json`` of pmernyei/wiki-cs-dataset (``https://github.com/pmernyei/wiki-cs-dataset/raw/master/
dataset/data.json``, the file the benchmark's ``data/WikiCS.py`` and PyG's ``WikiCS`` read), fetched into
``raw_dir/wikics/data.json``. No checksum is published: its SHA-256 is recorded at first download and verified on
every reuse. Keys: ``features`` (11,701 × 300), ``labels`` (10 classes), ``links`` (adjacency lists),
``train_masks`` / ``val_masks`` / ``stopping_masks`` (20 boolean masks each), ``test_mask`` (one mask).

Conversion, as the benchmark's loader:

* edges: for every node i and every j in ``links[i]`` the edge i → j (node order, list order), then the reversed
  list (j → i) appended — **no deduplication**: a link listed from both ends becomes two parallel edges each way
  (a multigraph; PyG's ``WikiCS`` makes the graph simple instead). No edge features (the benchmark's zeros(E, 1)
  carries no information; its GatedGCN config reads it through an edge-type table, ``edge_type_table``);
* node column ``x`` (float32, 300 dims), ``y`` int16;
* node column ``split`` (int8, (N, 20)): column k is split k — 0 train (``train_masks[k]``), 1 val
  (``val_masks[k]``), 2 test (``test_mask``), −1 none; the split scheme ``given`` makes one fold per column.
  ``stopping_masks`` are unused by the benchmark (its ``data/WikiCS.py``) and not stored.

Bad input — unreadable JSON, missing keys, lengths that do not fit, a link to a node outside the graph, a node in
two parts of one split — is a one-line :class:`DataError` naming the file and the fix; nothing is written.
"""

from __future__ import annotations

import json
from itertools import chain
from pathlib import Path

import numpy as np

from gnnbench.data.download import RawFile
from gnnbench.data.generators.base import Generator
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns
from gnnbench.errors import DataError

URL = "https://github.com/pmernyei/wiki-cs-dataset/raw/master/dataset/data.json"
RAW = RawFile("wikics/data.json", None, (URL,))
NODES, FEATURES, CLASSES, SPLITS = 11701, 300, 10, 20
SPLIT_SIZES = {"train": 580, "val": 1769, "test": 5847}  # split 0 of the published file
WHAT = "WikiCS data.json"


def _fail(path: Path, message: str) -> DataError:
    return DataError(f"{WHAT} {path}: {message}; it is damaged or not the WikiCS release — delete it (and its "
                     ".sha256 record) and download it again")


def read_wikics(path: str | Path) -> GraphColumns:
    """The graph, features, labels and the 20 splits of ``data.json`` as graph columns (module docstring)."""
    path = Path(path)
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise _fail(path, f"is not readable JSON ({type(exc).__name__})") from None
    keys = ("features", "labels", "links", "train_masks", "val_masks", "test_mask")
    if not isinstance(data, dict) or any(k not in data for k in keys):
        raise _fail(path, f"lacks one of the keys {', '.join(keys)}")
    try:
        x = np.asarray(data["features"], dtype=np.float32)
        y = np.asarray(data["labels"], dtype=np.int64)
        train = np.asarray(data["train_masks"], dtype=bool)
        val = np.asarray(data["val_masks"], dtype=bool)
        test = np.asarray(data["test_mask"], dtype=bool)
        links = data["links"]
        degree = np.fromiter(map(len, links), dtype=np.int64, count=len(links))
        targets = np.fromiter(chain.from_iterable(links), dtype=np.int64, count=int(degree.sum()))
    except (TypeError, ValueError) as exc:
        raise _fail(path, f"holds a value of the wrong type ({type(exc).__name__}: {str(exc)[:100]})") from None
    n = y.shape[0]
    if x.ndim != 2 or x.shape[0] != n or degree.size != n or test.shape != (n,):
        raise _fail(path, f"features ({x.shape}), labels ({n}), links ({degree.size}) and test_mask "
                    f"({test.shape}) disagree on the number of nodes")
    if train.ndim != 2 or train.shape != val.shape or train.shape[1] != n:
        raise _fail(path, f"train_masks {train.shape} and val_masks {val.shape} must both be (splits, {n})")
    if targets.size and (targets.min() < 0 or targets.max() >= n):
        raise _fail(path, f"links name node {int(targets.max() if targets.max() >= n else targets.min())}, outside "
                    f"0..{n - 1}")
    if y.min() < 0:
        raise _fail(path, "labels must be class indices ≥ 0")
    overlap = (train & val) | (train & test) | (val & test)
    if overlap.any():
        k, node = (int(v[0]) for v in np.nonzero(overlap))
        raise _fail(path, f"node {node} is in two parts of split {k}")
    split = np.full((n, train.shape[0]), -1, dtype=np.int8)
    split[test] = 2
    split[train.T] = 0
    split[val.T] = 1
    sources = np.repeat(np.arange(n, dtype=np.int64), degree)
    src = np.concatenate([sources, targets])  # i → j in list order, then every edge reversed (no dedup)
    dst = np.concatenate([targets, sources])
    columns = GraphColumns(num_nodes=np.array([n], dtype=np.int64), num_edges=np.array([src.size], dtype=np.int64),
                           src=src.astype(np.int32), dst=dst.astype(np.int32),
                           node={"x": x, "y": y.astype(np.int16), "split": split}, graph={})
    columns.validate()
    return columns


def _build(params: dict, seed: int, raw_dir: Path) -> GraphColumns:
    return read_wikics(Path(raw_dir) / RAW.relative_path)


def describe(name: str, params: dict, seed: int) -> DatasetMeta:
    """The dataset's description: one graph, 300 features, 10 classes, 20 given splits."""
    source = {"generator": "wikics", "seed": seed, "params": {k: v for k, v in params.items() if k != "mirror"},
              "url": URL, "raw_files": {RAW.relative_path: None},
              "preprocessing": ["edges i->j from links[i], then all reversed, not deduplicated (multigraph)",
                                "node column split: one column per published split (train/val masks, test mask)"]}
    return DatasetMeta(name=name, task="node_classification", loss="cross_entropy", metric="accuracy",
                       num_outputs=CLASSES, num_graphs=1, node_features=FeatureSpec("continuous", FEATURES),
                       edge_features=None, pe_usage="add", split_sizes=dict(SPLIT_SIZES), source=source,
                       net_conventions=["embed_continuous_input", "edge_type_table"], given_splits=SPLITS)


WIKICS = Generator(
    name="wikics",
    description="WikiCS: 11,701 Wikipedia articles in 10 computer-science fields, 20 published train/val splits",
    defaults={"mirror": ""},
    default_split={"scheme": "given"},
    describe=describe,
    build=_build,
    raw_files=lambda params: [RAW],
)
