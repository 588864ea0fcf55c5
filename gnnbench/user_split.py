"""A user's own split (split scheme ``file``): train / val / test indices read from a JSON file.

Format — a JSON list with one entry per fold (a cross-validation fold, or one of several random splits):

    [{"train": [0, 3, 4, ...], "val": [1, ...], "test": [2, ...]},
     {"train": [...], "val": [...], "test": [...]}]

or an object holding that list under ``"folds"`` (so gnnbench's own split files, ``results/splits/*/splits.json``,
can be reused as they are; their other keys are ignored, except ``"level"``, which must then match the dataset). The
indices count graphs of a multi-graph dataset, or nodes of the one graph of a single-graph (transductive) dataset,
0-based in the order the dataset is stored (a ``graph_file``: the file's order; a ``pyg`` dataset: the class's order).

Checked, each problem one line naming the file, the fold and the part: the structure (keys exactly train, val, test,
none of them twice — a JSON reader would keep the last list and drop the other; lists of integers); every part
non-empty (every protocol trains on train, selects or early-stops on val and scores test); no index twice in a fold,
the three parts disjoint; indices inside the dataset; for node splits, only labelled nodes (a node with label −1
cannot be trained on or scored). All but the labels is checked when the suite is loaded (and the number of folds
taken from the file): the ranges against the graphs the dataset's description counts, or the nodes of its one graph
where the generator states them (``graph_file``, ``csbm``). Everything is checked again when the split stage runs on
the made dataset. Test parts need not partition the dataset (random splits do not).

In a suite: ``split: {scheme: file, path: my_splits.json}`` — a relative path is relative to the suite file's folder.
The workflow's split job takes the file as an input, and the split it writes records the file's SHA-256.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from gnnbench.errors import DataError
from gnnbench.io import DuplicateKey, parse_json

PARTS = ("train", "val", "test")
LEVELS = ("graph", "node")
_COUNTS: dict[tuple, int] = {}  # folds per file state (count_folds)


def _error(path: Path, message: str, fix: str = "fix the file (format: docs/datasets.md#your-own-split)") -> DataError:
    return DataError(f"split file {path}: {message}; {fix}")


def _load(path: Path) -> list:
    if not path.is_file():
        raise _error(path, "does not exist", "check split.path (relative to the suite file)")
    try:
        data = parse_json(path.read_text())
    except DuplicateKey as exc:  # json would keep the last list: the indices of the other would be lost silently
        raise _error(path, f"has {exc}", "give each part once (merge the two lists)") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise _error(path, f"is not readable JSON ({reason})") from None
    return data


def read_folds(path: str | os.PathLike, size: int | None = None, level: str | None = None,
               labels: np.ndarray | None = None) -> list[dict[str, list[int]]]:
    """The folds of a split file, checked (module doc). ``size``: graphs or nodes of the dataset (indices must lie in
    ``0 .. size − 1``); ``level``: ``graph`` or ``node``, compared with the file's ``level`` when it has one;
    ``labels``: node labels of a node split (every index must name a labelled node)."""
    path = Path(path)
    if size is None and labels is not None:
        size = len(labels)
    data = _load(path)
    if isinstance(data, dict):
        declared = data.get("level")
        if declared is not None and declared not in LEVELS:
            raise _error(path, f"'level' is {declared!r}, expected graph or node")
        if declared is not None and level is not None and declared != level:
            raise _error(path, f"holds {declared} indices but the dataset is split by {level}",
                         f"give {level} indices (or drop 'level')")
        data = data.get("folds")
    if not isinstance(data, list) or not data:
        raise _error(path, "expected a non-empty JSON list of folds (or an object with one under \"folds\")")
    unit = level or "index"
    folds = []
    for i, fold in enumerate(data):
        if not isinstance(fold, dict) or sorted(fold) != sorted(PARTS):
            keys = sorted(fold) if isinstance(fold, dict) else type(fold).__name__
            raise _error(path, f"fold {i} has {keys}, expected exactly the keys train, val, test")
        arrays = {}
        for part in PARTS:
            ids = fold[part]
            if not isinstance(ids, list) or not set(map(type, ids)) <= {int}:  # bool, float, str: never an index
                odd = ids if not isinstance(ids, list) else next(v for v in ids if type(v) is not int)
                raise _error(path, f"fold {i} {part} holds {odd!r}, expected a list of integer {unit} indices")
            if not ids:
                raise _error(path, f"fold {i} {part} is empty", "every part needs at least one index (protocols "
                             "train on train, select or early-stop on val, score test)")
            try:
                arrays[part] = np.asarray(ids, dtype=np.int64)
            except OverflowError:
                raise _error(path, f"fold {i} {part} holds an index beyond 64 bits") from None
        every = np.concatenate([arrays[p] for p in PARTS])
        low, high = int(every.min()), int(every.max())
        if low < 0 or (size is not None and high >= size):
            bounds = f" (the dataset has {size} {unit}s: 0 .. {size - 1})" if size is not None else ""
            raise _error(path, f"fold {i} names {unit} {low if low < 0 else high}{bounds}")
        ordered = np.sort(every)
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
        if repeated.size:
            index = int(repeated[0])
            holders = [p for p in PARTS if (arrays[p] == index).any()]
            where = f"{holders[0]} lists it twice" if len(holders) == 1 else f"it is in {' and '.join(holders)}"
            raise _error(path, f"fold {i}: {unit} {index} appears more than once ({where})",
                         "train, val and test must be disjoint, each index once")
        if labels is not None:
            unlabelled = every[np.asarray(labels)[every] < 0]
            if unlabelled.size:
                raise _error(path, f"fold {i} names node {int(unlabelled[0])}, which has no label (-1)",
                             "use labelled nodes only")
        folds.append({p: fold[p] for p in PARTS})
    return folds


def count_folds(path: str | os.PathLike, size: int | None = None, level: str | None = None) -> int:
    """The number of folds of a split file, checked as :func:`read_folds` checks it (``size``, ``level``: what the
    dataset's description tells before it is made; the labels need the made dataset). Kept per process while the
    file is unchanged: a suite asks for it once per benchmark and run listing."""
    path = Path(path)
    try:
        stat = path.stat()
        state = (str(path.absolute()), stat.st_size, stat.st_mtime_ns, size, level)
    except OSError:
        state = None
    if state is None or state not in _COUNTS:
        count = len(read_folds(path, size, level))
        if state is None:
            return count
        _COUNTS[state] = count
    return _COUNTS[state]
