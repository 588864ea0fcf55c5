"""Dataset splits, saved as data.

A split file is JSON::

    {"format": 1, "dataset": NAME, "dataset_checksum": SHA-256 of graphs.parquet,
     "protocol": "given" | "stratified_kfold", "params": {...},
     "folds": [{"train": [...], "val": [...], "test": [...]}, ...],
     "checksum": SHA-256 of the canonical JSON of "folds"}

Protocols
    ``given``            the train/val/test split that comes with the data, in stored order (SBM, ZINC, ...).
    ``stratified_kfold`` k-fold stratified cross-validation (test = one fold); the remaining graphs are split
                         again, stratified, into train and val with ``val_fraction`` (CSL: k = 5 and 0.25,
                         i.e. 90 / 30 / 30 graphs per fold). Seeded: the original used scikit-learn's
                         ``StratifiedKFold(shuffle=True)`` + ``train_test_split`` without a seed; gnnbench
                         passes ``seed`` (folds) and ``seed + fold`` (train/val) as ``random_state``.

Reading checks the file's own checksum (no silent hand edits) and that it belongs to the dataset file
it is used with.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gnnbench.data.meta import DatasetMeta
from gnnbench.errors import ConfigError, DataError
from gnnbench.io import read_json, sha256_json, write_json

PROTOCOLS = ("given", "stratified_kfold")
PARTS = ("train", "val", "test")


@dataclass
class Splits:
    dataset: str
    dataset_checksum: str
    protocol: str
    params: dict
    folds: list[dict[str, list[int]]]

    @property
    def num_folds(self) -> int:
        return len(self.folds)

    def fold(self, i: int) -> dict[str, np.ndarray]:
        if not 0 <= i < len(self.folds):
            raise ConfigError(f"fold {i} does not exist: the {self.protocol} split of {self.dataset} has "
                              f"{len(self.folds)} fold(s), numbered from 0")
        return {part: np.asarray(self.folds[i][part], dtype=np.int64) for part in PARTS}

    def to_json(self) -> dict:
        return {"format": 1, "dataset": self.dataset, "dataset_checksum": self.dataset_checksum,
                "protocol": self.protocol, "params": self.params, "folds": self.folds,
                "checksum": sha256_json(self.folds)}


def make_splits(meta: DatasetMeta, labels: np.ndarray | None, protocol: str, params: dict) -> Splits:
    """Compute the splits of a dataset under ``protocol`` (see module docstring)."""
    if protocol == "given":
        if not meta.split_sizes:
            raise ConfigError(f"dataset {meta.name} comes without a split; use protocol stratified_kfold")
        folds, start = [{}], 0
        for part in PARTS:
            size = meta.split_sizes[part]
            folds[0][part] = list(range(start, start + size))
            start += size
    elif protocol == "stratified_kfold":
        folds = _stratified_kfold(labels, params["folds"], params["val_fraction"], params["seed"])
    else:
        raise ConfigError(f"unknown split protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    return Splits(meta.name, meta.checksum, protocol, params, folds)


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


def write_splits(path: str | os.PathLike, splits: Splits) -> None:
    write_json(path, splits.to_json())


def read_splits(path: str | os.PathLike, meta: DatasetMeta | None = None) -> Splits:
    """Read and verify a split file (own checksum, index ranges, and dataset when ``meta`` is given)."""
    path = Path(path)
    data = read_json(path, "split file")
    try:
        splits = Splits(data["dataset"], data["dataset_checksum"], data["protocol"], data["params"],
                        data["folds"])
        ok = data["format"] == 1 and data["checksum"] == sha256_json(splits.folds)
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise DataError(f"split file {path} is corrupt or was edited by hand (checksum mismatch); "
                        "delete it and rerun snakemake to recreate it")
    if meta is not None:
        if splits.dataset_checksum != meta.checksum:
            raise DataError(f"split file {path} was made for a different version of dataset {meta.name}; "
                            "delete it and rerun snakemake to recreate it")
        for i, fold in enumerate(splits.folds):
            all_ids = np.concatenate([np.asarray(fold[p], dtype=np.int64) for p in PARTS])
            if all_ids.size and (all_ids.min() < 0 or all_ids.max() >= meta.num_graphs):
                raise DataError(f"split file {path}: fold {i} refers to graphs outside dataset {meta.name}; "
                                "delete it and rerun snakemake to recreate it")
    return splits
