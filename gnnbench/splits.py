"""Dataset splits, saved as data.

A split file is JSON:

    {"format": 2, "dataset": NAME, "dataset_checksum": SHA-256 of graphs.parquet,
     "scheme": SCHEME, "level": "graph" | "node", "params": {...},
     "folds": [{"train": [...], "val": [...], "test": [...]}, ...],
     "checksum": SHA-256 of the canonical JSON of "folds"}

``level`` says what the indices count: graphs of a multi-graph dataset, nodes of the one graph of a
transductive (single-graph node-classification) dataset, or ``pair`` — rows of the evaluation pair file
(``pairs.parquet``, :mod:`gnnbench.data.link_pairs`) of a link-prediction dataset. Each entry of ``folds`` is one
partition — a cross-validation fold, or one of the random splits of the "Pitfalls" protocol. Files of format 1
(which named the scheme ``protocol``) are still read.

Schemes
    ``given``             the split that comes with the data: graphs in stored order (SBM, ZINC, ...), or for a
                          single graph its node column ``split`` (0 train, 1 val, 2 test; the Planetoid public
                          split: the first 20 labelled nodes per class, the next 500, the 1,000 test.index nodes;
                          a 2-d column holds one split per column — WikiCS's 20); for a link-prediction dataset
                          the pair rows of each part (OGBL-COLLAB: OGB's time split).
    ``stratified_kfold``  k-fold stratified cross-validation of graphs (test = one fold); the remaining graphs are
                          split again, stratified, into train and val with ``val_fraction`` (CSL: k = 5 and 0.25,
                          i.e. 90 / 30 / 30 graphs per fold). Seeded: the original used scikit-learn's
                          ``StratifiedKFold(shuffle=True)`` + ``train_test_split`` without a seed; gnnbench passes
                          ``seed`` (folds) and ``seed + fold`` (train/val) as ``random_state``.
    ``random_per_class``  ``splits`` random node splits with ``train_per_class`` training and ``val_per_class``
                          validation nodes of every class, the rest test (Shchur et al.: 100 splits, 20 / 30).
    ``random_sizes``      ``splits`` random node splits with ``train_per_class`` training nodes per class and
                          ``val_size`` / ``test_size`` nodes drawn from the rest regardless of class (the
                          Planetoid-sized "another random split" of Shchur et al.: 20 per class / 500 / 1,000).
    ``published``         the split files a paper released for the dataset, imported (``source``, the paper's
                          key as in :mod:`gnnbench.papers`: ``errica2020`` — Errica et al.'s
                          ``data_splits/*/NAME_splits.json``, see :func:`read_fair_comparison_folds`;
                          ``dwivedi2020`` — Dwivedi et al.'s ``{NAME}_{train,val,test}.index`` of the TU sets
                          (10 folds) and CSL (5 folds), see :func:`read_index_folds`). The dataset's generator
                          names the files and the number of folds (raw downloads, checksummed); the workflow
                          fetches them before the split stage. A source spelled as the protocol of its paper
                          (the older spelling) is refused with the paper key to use (:func:`check_source`).
    ``file``              the user's own folds from a JSON file (``path``; in a suite relative to the suite file):
                          graph or node indices per fold, format and checks in :mod:`gnnbench.user_split`.

The random node schemes follow gnn-benchmark's ``get_train_val_test_split`` draw for draw: split k uses
``RandomState(s_k)`` where ``s_k`` is the k-th of ``RandomState(seed).randint(0, 10**6, splits)`` (its job
generator's list; seed 2018 in the paper's configs); training nodes are drawn class by class (class order, nodes
of a class in ascending index, ``choice(..., replace=False)``), then validation nodes the same way among the rest.
Decision: the original took ``s_k`` from Sacred, which derives a captured function's ``_seed`` from the config
seed in a way we do not reproduce, so the exact published index sets are out of reach; ours are as random and
every model sees the same ones (docs/protocols/pitfalls.md#where-gnnbench-departs). Unlabelled nodes (label -1,
e.g. CiteSeer's phantom test rows in the Planetoid files) are never drawn.

Reading checks the file's own checksum (no silent hand edits), that it belongs to the dataset (name and checksum)
and, on every read, each fold's structure: integer indices inside the dataset, none twice, train, val and test
disjoint.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gnnbench.data.meta import DatasetMeta
from gnnbench.data.store import SPLIT_CODES
from gnnbench.errors import ConfigError, DataError
from gnnbench.io import read_json, sha256_file, sha256_json, write_json
from gnnbench.papers import DWIVEDI2020, ERRICA2020, renamed_error
from gnnbench.user_split import read_folds

SCHEMES = ("given", "stratified_kfold", "random_per_class", "random_sizes", "published", "file")
NODE_SCHEMES = ("given", "random_per_class", "random_sizes", "file")  # schemes of a transductive (one-graph) dataset
GRAPH_SCHEMES = ("given", "stratified_kfold", "published", "file")
PUBLISHED_SOURCES = (ERRICA2020, DWIVEDI2020)  # papers whose released split files are read (their paper keys)
SCHEME_DEFAULTS = {
    "given": {},
    "stratified_kfold": {"folds": 5, "val_fraction": 0.25, "seed": 0},
    "random_per_class": {"splits": 100, "train_per_class": 20, "val_per_class": 30, "seed": 2018},
    "random_sizes": {"splits": 1, "train_per_class": 20, "val_size": 500, "test_size": 1000, "seed": 2018},
    "published": {"source": ERRICA2020, "mirror": ""},
    "file": {"path": ""},  # the user's split file (gnnbench.user_split)
}
PARTS = ("train", "val", "test")
FORMAT = 2


@dataclass
class Splits:
    """The splits of one dataset as saved in a split file (module docstring): its folds and what produced them."""

    dataset: str
    dataset_checksum: str
    scheme: str
    params: dict
    folds: list[dict[str, list[int]]]
    level: str = "graph"

    @property
    def num_folds(self) -> int:
        """The number of folds (random splits, cross-validation folds)."""
        return len(self.folds)

    def fold(self, i: int) -> dict[str, np.ndarray]:
        """Fold ``i`` as train / val / test index arrays (int64); a ConfigError names the folds there are."""
        if not 0 <= i < len(self.folds):
            raise ConfigError(f"fold {i} does not exist: the {self.scheme} split of {self.dataset} has "
                              f"{len(self.folds)} fold(s), numbered from 0")
        return {part: np.asarray(self.folds[i][part], dtype=np.int64) for part in PARTS}

    def to_json(self) -> dict:
        """The split file's JSON content (format 2, with the checksum of the folds)."""
        return {"format": FORMAT, "dataset": self.dataset, "dataset_checksum": self.dataset_checksum,
                "scheme": self.scheme, "level": self.level, "params": self.params, "folds": self.folds,
                "checksum": sha256_json(self.folds)}


def resolve_split(split: dict, where: str) -> dict:
    """A split config with its scheme's defaults filled in; ``protocol`` is accepted as the older name of
    ``scheme``. Unknown schemes and keys are ConfigErrors naming ``where``."""
    split = dict(split)
    if "protocol" in split:
        split.setdefault("scheme", split.pop("protocol"))
    scheme = split.pop("scheme", None)
    if scheme not in SCHEMES:
        raise ConfigError(f"{where}.scheme: unknown split scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    defaults = SCHEME_DEFAULTS[scheme]
    unknown = sorted(set(split) - set(defaults))
    if unknown:
        known = ", ".join(defaults) or "none"
        raise ConfigError(f"{where}.{unknown[0]}: not a parameter of split scheme {scheme} (its parameters: {known})")
    resolved = {"scheme": scheme, **defaults, **split}
    if scheme == "published":
        check_source(resolved["source"], f"{where}.source")
    if scheme == "file" and not (isinstance(resolved["path"], str) and resolved["path"]):
        raise ConfigError(f"{where}.path: split scheme file needs the JSON file of folds, e.g. path: my_splits.json "
                          "(docs/datasets.md#your-own-split)")
    return resolved


def check_source(source: object, where: str) -> None:
    """A ConfigError naming ``where`` unless ``source`` is one of :data:`PUBLISHED_SOURCES`."""
    if source in PUBLISHED_SOURCES:
        return
    raise (renamed_error(where, "source", source, PUBLISHED_SOURCES)
           or ConfigError(f"{where}: unknown published split {source!r}; choose one of {', '.join(PUBLISHED_SOURCES)}"))


def make_splits(meta: DatasetMeta, labels: np.ndarray | None, scheme: str, params: dict,
                given: np.ndarray | None = None, published=None, expected_folds: int | None = None) -> Splits:
    """Compute the splits of a dataset under ``scheme`` (see module docstring).

    ``labels``: graph labels (multi-graph datasets) or node labels, -1 = unlabelled (transductive datasets);
    ``given``: the node column ``split`` of a transductive dataset that comes with a split (one column per split
    when it is 2-d), or the part code of every evaluation pair of a link-prediction dataset; ``published``: the
    downloaded split file(s) of scheme ``published`` (a path or a list, in the order the source's reader takes
    them), of which ``expected_folds`` folds are checked when given.
    """
    if meta.task == "link_prediction":  # one graph; the split is the part of every evaluation pair
        if scheme != "given" or given is None:
            raise ConfigError(f"split scheme {scheme!r} does not apply to link-prediction dataset {meta.name}: its "
                              "evaluation pairs come with their split; use given")
        folds = [{part: np.flatnonzero(given == code).tolist() for part, code in SPLIT_CODES.items()}]
        return Splits(meta.name, meta.checksum, scheme, {}, folds, "pair")
    transductive = meta.task == "node_classification" and meta.num_graphs == 1
    level = "node" if transductive else "graph"
    allowed = NODE_SCHEMES if transductive else GRAPH_SCHEMES
    if scheme not in allowed:
        what = "a single-graph node-classification" if transductive else "a multi-graph"
        raise ConfigError(f"split scheme {scheme!r} does not apply to dataset {meta.name} ({what} dataset); "
                          f"use one of {', '.join(allowed)}")
    params = {k: v for k, v in params.items() if k not in ("scheme", "mirror")}
    if scheme == "published":
        if not published:
            raise ConfigError(f"split scheme published needs the released split file(s) of {meta.name}; the "
                              "workflow downloads them (gnnbench splits: --published FILE ...)")
        paths = [published] if isinstance(published, (str, os.PathLike)) else list(published)
        folds = read_published_folds(params["source"], paths, meta.num_graphs)
        if expected_folds is not None and len(folds) != expected_folds:
            raise DataError(f"published split file {paths[0]} has {len(folds)} folds, expected {expected_folds} "
                            f"(the released {params['source']} split of {meta.name}); delete it and rerun to "
                            "download it again")
        return Splits(meta.name, meta.checksum, scheme, params, folds, level)
    if scheme == "file":
        size = meta.num_graphs if not transductive else None if labels is None else len(labels)
        folds = read_folds(params["path"], size, level, labels if transductive else None)
        params = {**params, "sha256": sha256_file(params["path"])}  # which file the folds came from
    elif scheme == "given" and transductive:
        folds = _given_nodes(meta, given)
    elif scheme == "given":
        if not meta.split_sizes:
            raise ConfigError(f"dataset {meta.name} comes without a split; use scheme stratified_kfold")
        folds, start = [{}], 0
        for part in PARTS:
            size = meta.split_sizes[part]
            folds[0][part] = list(range(start, start + size))
            start += size
    elif scheme == "stratified_kfold":
        folds = _stratified_kfold(labels, params["folds"], params["val_fraction"], params["seed"])
    else:
        folds = _random_node_splits(meta.name, labels, scheme, params)
    return Splits(meta.name, meta.checksum, scheme, params, folds, level)


def _given_nodes(meta: DatasetMeta, given: np.ndarray | None) -> list[dict[str, list[int]]]:
    """One fold per column of the node column ``split`` (WikiCS: 20 train/val splits sharing one test set)."""
    if given is None:
        raise ConfigError(f"dataset {meta.name} comes without a split (no node column 'split'); use scheme "
                          "random_per_class")
    given = np.asarray(given).reshape(len(given), -1)
    return [{part: np.flatnonzero(column == code).tolist() for part, code in SPLIT_CODES.items()}
            for column in given.T]


def split_seeds(seed: int, count: int) -> np.ndarray:
    """The per-split seeds of gnn-benchmark's job generator: ``RandomState(seed).randint(0, 10**6, count)``."""
    return np.random.RandomState(seed).randint(0, 1_000_000, count)


def _random_node_splits(dataset: str, labels: np.ndarray | None, scheme: str, params: dict) -> list[dict]:
    if labels is None:
        raise ConfigError(f"split scheme {scheme} needs node labels; dataset {dataset} has none")
    labels = np.asarray(labels, dtype=np.int64)
    classes = np.unique(labels[labels >= 0])
    members = [np.flatnonzero(labels == c) for c in classes]  # ascending node index, as the original lists them
    labelled = np.flatnonzero(labels >= 0)
    check_class_sizes(f"split of {dataset}", np.bincount(labels[labels >= 0]), scheme, params)
    folds = []
    for seed in split_seeds(params["seed"], params["splits"]):
        rs = np.random.RandomState(seed)
        train = np.concatenate([rs.choice(m, params["train_per_class"], replace=False) for m in members])
        if scheme == "random_per_class":
            free = [m[~np.isin(m, train)] for m in members]
            val = np.concatenate([rs.choice(m, params["val_per_class"], replace=False) for m in free])
            test = np.setdiff1d(labelled, np.concatenate([train, val]))
        else:
            val = rs.choice(np.setdiff1d(labelled, train), params["val_size"], replace=False)
            test = rs.choice(np.setdiff1d(labelled, np.concatenate([train, val])), params["test_size"],
                             replace=False)
        folds.append({"train": train.tolist(), "val": val.tolist(), "test": test.tolist()})
    return folds


def check_class_sizes(where: str, class_sizes, scheme: str, params: dict) -> None:
    """Refuse a random node split (scheme random_per_class or random_sizes, resolved ``params``) that the classes
    cannot give: a class (of ``class_sizes``, labelled nodes per class; a class without any is never drawn from) with
    fewer nodes than ``train_per_class`` + ``val_per_class``, or ``val_size`` + ``test_size`` beyond the labelled
    nodes left after training. Checked on the made dataset's labels (:func:`make_splits`) and, where the generator's
    description states the class sizes, when the suite is loaded; ``where`` names the split in the message."""
    sizes = np.asarray(class_sizes, dtype=np.int64)
    present = np.flatnonzero(sizes > 0)
    per_class = params["train_per_class"] + params.get("val_per_class", 0)
    short = present[sizes[present] < per_class]
    if short.size:
        c = int(short[0])
        need = (f"{params['train_per_class']} train + {params['val_per_class']} val"
                if scheme == "random_per_class" else f"{params['train_per_class']} train")
        raise ConfigError(f"{where}: class {c} has only {int(sizes[c])} labelled nodes but scheme {scheme} needs "
                          f"{per_class} per class ({need}); lower the per-class counts or drop small classes from "
                          "the dataset")
    if scheme == "random_sizes":
        rest = int(sizes.sum()) - params["train_per_class"] * present.size
        if params["val_size"] + params["test_size"] > rest:
            raise ConfigError(f"{where}: val_size + test_size = {params['val_size'] + params['test_size']} but only "
                              f"{rest} labelled nodes remain after the training nodes; lower them")


def _stratified_kfold(labels: np.ndarray, k: int, val_fraction: float, seed: int) -> list[dict]:
    from sklearn.model_selection import StratifiedKFold, train_test_split

    if labels is None:
        raise ConfigError("stratified_kfold needs graph labels")
    smallest = int(np.bincount(labels.astype(np.int64)).min())
    if smallest < k:
        raise ConfigError(f"split: {k}-fold stratified cross-validation needs at least {k} graphs per class, the "
                          f"smallest class has {smallest}; lower folds or make more graphs")
    folds = []
    outer = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    for fold, (rest, test) in enumerate(outer.split(np.zeros(len(labels)), labels)):
        train, val = train_test_split(rest, test_size=val_fraction, stratify=labels[rest],
                                      random_state=seed + fold)
        folds.append({"train": sorted(map(int, train)), "val": sorted(map(int, val)),
                      "test": sorted(map(int, test))})
    return folds


def read_published_folds(source: str, paths: list, num_graphs: int) -> list[dict[str, list[int]]]:
    """The folds of a released split of ``source`` from its downloaded files (see the module docstring)."""
    check_source(source, "split.source")
    if source == ERRICA2020:
        if len(paths) != 1:
            raise ConfigError(f"the {ERRICA2020} split is one file (NAME_splits.json), got {len(paths)}")
        return read_fair_comparison_folds(paths[0], num_graphs)
    if len(paths) != 3:  # DWIVEDI2020
        raise ConfigError(f"the {DWIVEDI2020} split is three files (NAME_train.index, NAME_val.index, "
                          f"NAME_test.index, in this order), got {len(paths)}")
    return read_index_folds(*paths, num_graphs=num_graphs)


def _published_error(path, message: str, source: str) -> DataError:
    return DataError(f"published split file {path}: {message}; it is not the {source} split of this dataset "
                     "(delete it and its .sha256 record, then rerun to download it again)")


def _check_fold(parts: dict[str, list], num_graphs: int, bad, i: int) -> None:
    """Integer indices inside the dataset; train, val and test disjoint and covering every graph."""
    arrays = {}
    for part, ids in parts.items():
        if not isinstance(ids, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in ids):
            raise bad(f"fold {i} {part}: expected a list of integer graph indices")
        arrays[part] = np.asarray(ids, dtype=np.int64)
    every = np.concatenate(list(arrays.values()))
    if every.size and (every.min() < 0 or every.max() >= num_graphs):
        raise bad(f"fold {i} refers to graph {int(every.max() if every.max() >= num_graphs else every.min())} "
                  f"but the dataset has {num_graphs} graphs (0 .. {num_graphs - 1})")
    if every.size != num_graphs or np.unique(every).size != num_graphs:
        raise bad(f"fold {i}: train, validation and test must be disjoint and cover all {num_graphs} graphs "
                  f"({every.size} indices, {np.unique(every).size} distinct)")


def _check_partition(folds: list[dict], num_graphs: int, bad) -> None:
    tested = np.zeros(num_graphs, dtype=np.int64)
    for fold in folds:
        tested += np.bincount(np.asarray(fold["test"], dtype=np.int64), minlength=num_graphs)
    if not (tested == 1).all():
        raise bad(f"the test folds do not partition the graphs ({int((tested == 0).sum())} never tested, "
                  f"{int((tested > 1).sum())} tested more than once)")


def read_index_folds(train: str | os.PathLike, val: str | os.PathLike, test: str | os.PathLike, *,
                     num_graphs: int) -> list[dict[str, list[int]]]:
    """The folds of Dwivedi et al.'s split files ``{NAME}_{train,val,test}.index`` (the released code,
    graphdeeplearning/benchmarking-gnns ``data/CSL/`` and ``data/TUs/``): CSV text, one line per fold (CRLF or LF),
    each a comma-separated list of graph indices; line i
    of the three files is fold i, index order kept. Checked like :func:`read_fair_comparison_folds`: the three
    files have the same number of lines; every fold's parts are disjoint and cover the dataset; the test lines
    partition it."""
    rows = {}
    for part, path in (("train", train), ("val", val), ("test", test)):
        path = Path(path)
        try:
            text = path.read_text()
            rows[part] = [[int(v) for v in line.split(",")] for line in text.splitlines() if line.strip()]
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}" if str(exc) else type(exc).__name__
            raise _published_error(path, f"is not comma-separated graph indices, one line per fold ({reason})",
                                   DWIVEDI2020) from None
    counts = {part: len(lines) for part, lines in rows.items()}
    if len(set(counts.values())) != 1 or not counts["test"]:
        raise _published_error(test, f"the three files have {counts['train']} / {counts['val']} / {counts['test']} "
                               "lines (train / val / test), expected one line per fold in each", DWIVEDI2020)
    folds = []
    for i in range(counts["test"]):
        parts = {part: rows[part][i] for part in PARTS}
        _check_fold(parts, num_graphs, lambda m: _published_error(test, m, DWIVEDI2020), i)
        folds.append(parts)
    _check_partition(folds, num_graphs, lambda m: _published_error(test, m, DWIVEDI2020))
    return folds


def read_fair_comparison_folds(path: str | os.PathLike, num_graphs: int) -> list[dict[str, list[int]]]:
    """The folds of an Errica et al. split file (``data_splits/{CHEMICAL,COLLABORATIVE_1,COLLABORATIVE_DEGREE}/
    NAME_splits.json`` of the released code, diningphil/gnn-comparison) as gnnbench folds.

    The file is a JSON list of outer folds ``{"test": [...], "model_selection": [{"train": [...], "validation":
    [...]}]}`` (one hold-out per fold); fold i becomes ``{"train": train, "val": validation, "test": test}`` with
    the file's index order kept — the outer training set is train ∪ val. Checked, each failure one line naming the
    file and fold: the structure; integer indices inside ``0 .. num_graphs − 1``; train, val and test disjoint and
    together every graph; the test folds a partition of all graphs.
    """
    path = Path(path)
    data = read_json(path, "published split file")

    def bad(message: str) -> DataError:
        return _published_error(path, message, ERRICA2020)

    if not isinstance(data, list) or not data:
        raise bad("expected a JSON list of outer folds")
    folds = []
    for i, fold in enumerate(data):
        try:
            selection = fold["model_selection"]
            if len(selection) != 1:
                raise bad(f"fold {i} has {len(selection)} model-selection hold-outs, expected exactly 1")
            parts = {"train": selection[0]["train"], "val": selection[0]["validation"], "test": fold["test"]}
        except (KeyError, TypeError, IndexError):
            raise bad(f"fold {i} lacks test / model_selection[0].train / model_selection[0].validation") from None
        _check_fold(parts, num_graphs, bad, i)
        folds.append({part: parts[part] for part in PARTS})
    _check_partition(folds, num_graphs, bad)
    return folds


def write_splits(path: str | os.PathLike, splits: Splits) -> None:
    """Write ``splits`` as a split file (atomically)."""
    write_json(path, splits.to_json())


def read_splits(path: str | os.PathLike, meta: DatasetMeta | None = None) -> Splits:
    """Read and verify a split file (own checksum, and — with ``meta`` — dataset and index ranges)."""
    path = Path(path)
    data = read_json(path, "split file")
    try:
        fmt = data["format"]
        scheme = data["scheme"] if fmt == FORMAT else data["protocol"]
        splits = Splits(data["dataset"], data["dataset_checksum"], scheme, data["params"], data["folds"],
                        data.get("level", "graph"))
        ok = fmt in (1, FORMAT) and data["checksum"] == sha256_json(splits.folds)
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise DataError(f"split file {path} is corrupt or was edited by hand (checksum mismatch); "
                        "delete it and rerun snakemake to recreate it")
    size = None
    if meta is not None:
        if splits.dataset != meta.name:
            raise DataError(f"split file {path} belongs to dataset {splits.dataset}, not {meta.name}; give the "
                            f"split file of {meta.name} (results/splits/{meta.name}/splits.json)")
        if splits.dataset_checksum != meta.checksum:
            raise DataError(f"split file {path} was made for a different version of dataset {meta.name}; "
                            "delete it and rerun snakemake to recreate it")
        size = {"node": meta.statistics.get("all", {}).get("nodes"),
                "pair": meta.statistics.get("all", {}).get("pairs")}.get(splits.level, meta.num_graphs)
    _check_folds(path, splits, size)
    return splits


def _check_folds(path: Path, splits: Splits, size: int | None) -> None:
    """The structure of every fold, checked on each read (a hand edit passes the checksum once it is recomputed):
    train, val and test are lists of integer indices, inside ``0 .. size − 1`` (``size`` known: with the dataset's
    meta), none listed twice, the three parts disjoint. Vectorised: one sort per fold."""
    unit = {"node": "node", "pair": "pair"}.get(splits.level, "graph")

    def bad(message: str) -> DataError:
        return DataError(f"split file {path}: {message}; delete it and rerun snakemake to recreate it")

    if not isinstance(splits.folds, list) or not splits.folds:
        raise bad("expected a non-empty list of folds under 'folds'")
    for i, fold in enumerate(splits.folds):
        if not isinstance(fold, dict) or any(not isinstance(fold.get(part), list) for part in PARTS):
            raise bad(f"fold {i} must map train, val and test to lists of {unit} indices")
        arrays = {}
        for part, ids in ((part, fold[part]) for part in PARTS):
            if not set(map(type, ids)) <= {int}:  # bool, float, str, None: never an index
                odd = next(v for v in ids if type(v) is not int)
                raise bad(f"fold {i} {part} holds {odd!r}, expected integer {unit} indices")
            try:
                arrays[part] = np.asarray(ids, dtype=np.int64)
            except OverflowError:
                raise bad(f"fold {i} {part} holds an index beyond 64 bits") from None
        every = np.concatenate(list(arrays.values()))
        if not every.size:
            continue
        low, high = int(every.min()), int(every.max())
        if low < 0 or (size is not None and high >= size):
            outside = low if low < 0 else high
            bounds = f" (0 .. {size - 1})" if size is not None else ""
            raise bad(f"fold {i} refers to {unit}s outside dataset {splits.dataset}: {unit} {outside}{bounds}")
        ordered = np.sort(every)
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
        if repeated.size:
            index = int(repeated[0])
            holders = [part for part in PARTS if (arrays[part] == index).any()]
            if len(holders) == 1:
                raise bad(f"fold {i} {holders[0]} lists {unit} {index} more than once")
            raise bad(f"fold {i}: {unit} {index} is in both {' and '.join(holders)}; train, val and test must be "
                      "disjoint")
