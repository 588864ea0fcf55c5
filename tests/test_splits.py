"""Split files: the CSL cross-validation protocol, the given SBM split, and integrity checks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gnnbench.data.meta import read_meta
from gnnbench.data.store import read_graph_columns
from gnnbench.errors import ConfigError, DataError
from gnnbench.io import sha256_json
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.splits import make_splits, read_splits

PARAMS = {"folds": 5, "val_fraction": 0.25, "seed": 0}


@pytest.fixture(scope="module")
def csl(tmp_path_factory):
    folder = tmp_path_factory.mktemp("csl") / "CSL"
    generate_dataset("csl", "CSL", {}, 0, folder)
    return read_meta(folder), read_graph_columns(folder / "graphs.parquet").graph["y"]


def test_csl_cross_validation_is_stratified_90_30_30(csl):
    meta, labels = csl
    splits = make_splits(meta, labels, "stratified_kfold", PARAMS)
    assert splits.num_folds == 5
    tests = []
    for i in range(5):
        fold = splits.fold(i)
        assert [len(fold[p]) for p in ("train", "val", "test")] == [90, 30, 30]
        assert not set(fold["train"]) & set(fold["val"]) and not set(fold["test"]) & (set(fold["train"])
                                                                                       | set(fold["val"]))
        assert sorted(np.concatenate(list(fold.values()))) == list(range(150))
        for part, per_class in (("train", 9), ("val", 3), ("test", 3)):  # stratified: equal share of each class
            assert np.bincount(labels[fold[part]], minlength=10).tolist() == [per_class] * 10
        tests.append(fold["test"])
    assert sorted(np.concatenate(tests)) == list(range(150))  # the test folds partition the dataset


def test_splits_are_seeded(csl):
    meta, labels = csl
    a = make_splits(meta, labels, "stratified_kfold", PARAMS)
    b = make_splits(meta, labels, "stratified_kfold", PARAMS)
    c = make_splits(meta, labels, "stratified_kfold", {**PARAMS, "seed": 1})
    assert a.folds == b.folds and a.folds != c.folds


def test_given_split_follows_stored_order(tmp_path):
    folder = tmp_path / "PATTERN"
    meta = generate_dataset("sbm_pattern", "PATTERN", {"num_train": 6, "num_val": 3, "num_test": 2, "num_patterns": 2},
                            0, folder)
    splits = make_splits(meta, None, "given", {})
    assert splits.folds == [{"train": [0, 1, 2, 3, 4, 5], "val": [6, 7, 8], "test": [9, 10]}]
    with pytest.raises(ConfigError, match="fold 1 does not exist"):
        splits.fold(1)


def test_split_files_are_checked_on_read(tmp_path):
    folder = tmp_path / "CSL"
    generate_dataset("csl", "CSL", {}, 0, folder)
    path = tmp_path / "splits.json"
    make_split_file(folder, "stratified_kfold", PARAMS, path)
    meta = read_meta(folder)
    data = json.loads(path.read_text())
    assert data["dataset_checksum"] == meta.checksum and data["checksum"] == sha256_json(data["folds"])
    assert read_splits(path, meta).folds == data["folds"]

    edited = dict(data, folds=[dict(data["folds"][0], test=data["folds"][0]["test"][:-1])] + data["folds"][1:])
    path.write_text(json.dumps(edited))
    with pytest.raises(DataError, match="corrupt or was edited by hand"):
        read_splits(path, meta)
    path.write_text("{not json")
    with pytest.raises(DataError, match="is not valid JSON"):
        read_splits(path, meta)

    other = generate_dataset("csl", "CSL", {}, 1, tmp_path / "CSL1")  # another seed: another dataset file
    make_split_file(folder, "stratified_kfold", PARAMS, path)
    with pytest.raises(DataError, match="made for a different version of dataset CSL"):
        read_splits(path, other)


def test_cross_validation_needs_enough_graphs_per_class(tmp_path):
    meta = generate_dataset("csl", "CSL", {"copies_per_class": 4}, 0, tmp_path / "CSL")
    labels = read_graph_columns(tmp_path / "CSL" / "graphs.parquet").graph["y"]
    with pytest.raises(ConfigError, match="5-fold stratified cross-validation needs at least 5 graphs per class, "
                                          "the smallest class has 4"):
        make_splits(meta, labels, "stratified_kfold", PARAMS)
