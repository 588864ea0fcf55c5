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


# ---------------------------------------------------------------------------------------------- node splits


def node_meta(name="toy", nodes=0):
    from gnnbench.data.meta import DatasetMeta, FeatureSpec

    return DatasetMeta(name=name, task="node_classification", loss="cross_entropy", metric="accuracy", num_outputs=3,
                       num_graphs=1, node_features=FeatureSpec("continuous", 4), edge_features=None, pe_usage="add",
                       split_sizes=None, statistics={"all": {"nodes": nodes}}, checksum="c" * 64)


def original_split(rs, labels, train_per_class, val_per_class=None, val_size=None, test_size=None):
    """gnn-benchmark's get_train_val_test_split / sample_per_class, transcribed with its loops (one-hot labels)."""
    one_hot = np.zeros((labels.size, labels.max() + 1))
    one_hot[np.arange(labels.size), labels] = 1

    def sample_per_class(n, forbidden=None):
        per_class = {c: [] for c in range(one_hot.shape[1])}
        for c in range(one_hot.shape[1]):
            for i in range(one_hot.shape[0]):
                if one_hot[i, c] > 0.0 and (forbidden is None or i not in forbidden):
                    per_class[c].append(i)
        return np.concatenate([rs.choice(per_class[c], n, replace=False) for c in range(len(per_class))])

    remaining = list(range(labels.size))
    train = sample_per_class(train_per_class)
    if val_per_class is not None:
        val = sample_per_class(val_per_class, forbidden=train)
    else:
        remaining = np.setdiff1d(remaining, train)
        val = rs.choice(remaining, val_size, replace=False)
    forbidden = np.concatenate((train, val))
    if test_size is not None:
        test = rs.choice(np.setdiff1d(remaining, forbidden), test_size, replace=False)
    else:
        test = np.setdiff1d(remaining, forbidden)
    return train, val, test


def test_random_per_class_splits_draw_exactly_as_gnn_benchmark():
    labels = np.random.default_rng(0).integers(0, 3, 400)
    params = {"splits": 4, "train_per_class": 20, "val_per_class": 30, "seed": 2018}
    splits = make_splits(node_meta(), labels, "random_per_class", params)
    seeds = np.random.RandomState(2018).randint(0, 1_000_000, 4)  # the original's job generator
    assert splits.level == "node" and splits.num_folds == 4
    for k, seed in enumerate(seeds):
        train, val, test = original_split(np.random.RandomState(seed), labels, 20, 30)
        fold = splits.fold(k)
        assert fold["train"].tolist() == train.tolist() and fold["val"].tolist() == val.tolist()
        assert fold["test"].tolist() == test.tolist()
        assert np.bincount(labels[fold["train"]]).tolist() == [20] * 3
        assert np.bincount(labels[fold["val"]]).tolist() == [30] * 3
        assert len(fold["test"]) == 400 - 150
    assert splits.fold(0)["train"].tolist() != splits.fold(1)["train"].tolist()


def test_random_sizes_split_matches_the_planetoid_sized_draw_and_skips_unlabelled_nodes():
    labels = np.random.default_rng(1).integers(0, 3, 3000)
    labels[:50] = -1  # e.g. CiteSeer's phantom rows: never drawn
    params = {"splits": 2, "train_per_class": 20, "val_size": 500, "test_size": 1000, "seed": 7}
    splits = make_splits(node_meta(), labels, "random_sizes", params)
    labelled = np.flatnonzero(labels >= 0)
    for k, seed in enumerate(np.random.RandomState(7).randint(0, 1_000_000, 2)):
        fold = splits.fold(k)
        assert [len(fold[p]) for p in ("train", "val", "test")] == [60, 500, 1000]
        assert np.isin(np.concatenate(list(fold.values())), labelled).all()
        # the same draws as the original on the labelled nodes alone (indices mapped back)
        train, val, test = original_split(np.random.RandomState(seed), labels[labelled], 20, val_size=500,
                                          test_size=1000)
        assert fold["train"].tolist() == labelled[train].tolist()
        assert fold["val"].tolist() == labelled[val].tolist() and fold["test"].tolist() == labelled[test].tolist()


def test_a_class_too_small_for_the_split_is_one_line_naming_it():
    labels = np.array([0] * 60 + [1] * 42 + [2] * 80)
    with pytest.raises(ConfigError) as err:
        make_splits(node_meta("CORA-Full"), labels, "random_per_class",
                    {"splits": 1, "train_per_class": 20, "val_per_class": 30, "seed": 0})
    assert "split of CORA-Full: class 1 has only 42 labelled nodes but scheme random_per_class needs 50" in str(
        err.value) and "\n" not in str(err.value)


def test_given_node_split_reads_the_split_column():
    given = np.array([0, 0, 1, 2, -1, 2, 1, 0], dtype=np.int8)
    splits = make_splits(node_meta(), np.zeros(8, dtype=np.int64), "given", {}, given)
    assert splits.folds == [{"train": [0, 1, 7], "val": [2, 6], "test": [3, 5]}]
    with pytest.raises(ConfigError, match="comes without a split"):
        make_splits(node_meta(), np.zeros(8, dtype=np.int64), "given", {}, None)
    with pytest.raises(ConfigError, match="does not apply to dataset toy"):
        make_splits(node_meta(), np.zeros(8, dtype=np.int64), "stratified_kfold", PARAMS)


def test_node_split_files_belong_to_their_dataset(tmp_path):
    from gnnbench.splits import write_splits

    labels = np.repeat([0, 1, 2], 60)
    splits = make_splits(node_meta("Cora", 180), labels, "random_per_class",
                         {"splits": 2, "train_per_class": 20, "val_per_class": 30, "seed": 1})
    path = tmp_path / "splits.json"
    write_splits(path, splits)
    assert read_splits(path, node_meta("Cora", 180)).folds == splits.folds
    with pytest.raises(DataError, match=r"belongs to dataset Cora, not CiteSeer; give the split file of CiteSeer"):
        read_splits(path, node_meta("CiteSeer", 180))
    with pytest.raises(DataError, match="fold 0 refers to nodes outside dataset Cora"):
        read_splits(path, node_meta("Cora", 100))


def test_split_configs_resolve_with_scheme_defaults_and_reject_foreign_keys():
    from gnnbench.splits import resolve_split

    assert resolve_split({"scheme": "random_per_class"}, "s") == {
        "scheme": "random_per_class", "splits": 100, "train_per_class": 20, "val_per_class": 30, "seed": 2018}
    assert resolve_split({"protocol": "stratified_kfold", "folds": 3}, "s")["folds"] == 3  # the older key
    with pytest.raises(ConfigError, match="s.val_size: not a parameter of split scheme random_per_class"):
        resolve_split({"scheme": "random_per_class", "val_size": 5}, "s")


def test_published_sources_are_the_papers_keys_and_the_protocol_names_of_old_say_which_key():
    from gnnbench.papers import DWIVEDI2020, ERRICA2020
    from gnnbench.splits import PUBLISHED_SOURCES, read_published_folds, resolve_split

    assert PUBLISHED_SOURCES == (ERRICA2020, DWIVEDI2020)
    assert resolve_split({"scheme": "published"}, "s") == {"scheme": "published", "source": ERRICA2020, "mirror": ""}
    assert resolve_split({"scheme": "published", "source": DWIVEDI2020}, "s")["source"] == DWIVEDI2020
    for old, new in (("fair-comparison", ERRICA2020), ("benchmarking-gnns", DWIVEDI2020)):
        with pytest.raises(ConfigError) as err:
            resolve_split({"scheme": "published", "source": old}, "datasets.D.split")
        assert str(err.value).startswith(f"datasets.D.split.source: {old!r} was renamed: use source: {new} ")
        with pytest.raises(ConfigError, match=f"{old!r} was renamed: use source: {new} "):
            read_published_folds(old, [], 10)  # a split file's params read directly
    with pytest.raises(ConfigError, match="unknown published split 'pitfalls'; choose one of errica2020, dwivedi2020"):
        resolve_split({"scheme": "published", "source": "pitfalls"}, "s")  # a protocol whose paper released no split


# ------------------------------------------------------------------------------- structure, checked on every read


@pytest.fixture(scope="module")
def csl_split_file(tmp_path_factory):
    """A 5-fold split file of a small CSL (50 graphs) and the dataset's meta."""
    root = tmp_path_factory.mktemp("structure")
    meta = generate_dataset("csl", "CSL", {"copies_per_class": 5}, 0, root / "CSL")
    make_split_file(root / "CSL", "stratified_kfold", PARAMS, root / "splits.json")
    return root / "splits.json", meta


def hand_edited(path, tmp_path, edit) -> str:
    """A copy of the split file at ``path`` with ``edit(folds)`` applied and its checksum recomputed."""
    data = json.loads(path.read_text())
    edit(data["folds"])
    data["checksum"] = sha256_json(data["folds"])
    out = tmp_path / "edited.json"
    out.write_text(json.dumps(data))
    return out


def _overlap(folds):  # fold 2: its first test graph also in train
    folds[2]["train"].append(folds[2]["test"][0])


def _float(folds):
    folds[1]["val"][0] = folds[1]["val"][0] + 0.5


def _integral_float(folds):
    folds[1]["val"][0] = float(folds[1]["val"][0])


def _bool(folds):
    folds[0]["test"].append(True)


def _twice(folds):
    folds[3]["val"].append(folds[3]["val"][0])


def _negative(folds):
    folds[0]["train"][0] = -1


def _too_large(folds):
    folds[4]["test"][0] = 50


def _huge(folds):
    folds[4]["test"][0] = 2**70


def _missing_part(folds):
    del folds[1]["val"]


def _not_a_list(folds):
    folds[1]["train"] = "0,1,2"


STRUCTURE_DEFECTS = [  # edit, the message after "split file PATH: ", whether it is caught without the dataset's meta
    (_overlap, "fold 2: graph {g} is in both train and test; train, val and test must be disjoint", True),
    (_float, "fold 1 val holds {g}, expected integer graph indices", True),
    (_integral_float, "fold 1 val holds {g}, expected integer graph indices", True),
    (_bool, "fold 0 test holds True, expected integer graph indices", True),
    (_twice, "fold 3 val lists graph {g} more than once", True),
    (_negative, "fold 0 refers to graphs outside dataset CSL: graph -1 (0 .. 49)", True),
    (_too_large, "fold 4 refers to graphs outside dataset CSL: graph 50 (0 .. 49)", False),
    (_huge, "fold 4 test holds an index beyond 64 bits", True),
    (_missing_part, "fold 1 must map train, val and test to lists of graph indices", True),
    (_not_a_list, "fold 1 must map train, val and test to lists of graph indices", True),
]


@pytest.mark.parametrize(("edit", "message", "without_meta"), STRUCTURE_DEFECTS,
                         ids=[e.__name__.strip("_") for e, _, _ in STRUCTURE_DEFECTS])
def test_a_hand_edited_split_with_a_valid_checksum_is_refused(csl_split_file, tmp_path, edit, message, without_meta):
    path, meta = csl_split_file
    folds = json.loads(path.read_text())["folds"]
    value = {_overlap: folds[2]["test"][0], _float: folds[1]["val"][0] + 0.5,
             _integral_float: float(folds[1]["val"][0]), _twice: folds[3]["val"][0]}.get(edit)
    edited = hand_edited(path, tmp_path, edit)
    expected = (f"split file {edited}: {message.format(g=value)}; delete it and rerun snakemake to recreate it")
    with pytest.raises(DataError) as err:
        read_splits(edited, meta)
    assert str(err.value) == expected
    if without_meta:  # the structure is checked on every read, also without the dataset at hand
        with pytest.raises(DataError) as err:
            read_splits(edited)
        assert str(err.value) == expected.replace(" (0 .. 49)", "")
    else:
        read_splits(edited)  # the size is only known with the meta


def test_an_intact_split_file_reads_with_and_without_its_dataset(csl_split_file):
    path, meta = csl_split_file
    folds = json.loads(path.read_text())["folds"]
    assert read_splits(path, meta).folds == read_splits(path).folds == folds


def test_training_on_a_hand_edited_split_fails_in_one_line(csl_split_file, tmp_path):
    import subprocess
    import sys

    path, _ = csl_split_file
    edited = hand_edited(path, tmp_path, _overlap)
    result = subprocess.run([sys.executable, "-m", "gnnbench.cli", "train", "benchmarking-gnns", "--dataset",
                             str(path.parent / "CSL"), "--splits", str(edited), "--preset",
                             "CSL_graph_classification_MLP_CSL_100k", "--set", "epochs=1", "--out",
                             str(tmp_path / "run")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith(f"gnnbench: error: split file {edited}: fold 2: graph ")
    assert "Traceback" not in result.stderr and not (tmp_path / "run" / "metrics.json").exists()
