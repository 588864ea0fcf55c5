"""Duplicates and leakage (gnnbench.data.leakage, docs/leakage.md): the exact node rule (open and closed twins, not
duplicated subgraphs), exactness under hash collisions, graph isomorphism beyond WL, the per-fold counts, the note
under a benchmark's table, `gnnbench leakage`, and the real chameleon / squirrel of Platonov et al. (2023) against
the filtered files of their release."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from gnnbench.cli import main
from gnnbench.data import leakage
from gnnbench.data.leakage import (
    DuplicateGroups,
    csr_row_ids,
    feature_ids,
    graph_duplicates,
    node_duplicates,
    released_filter,
    split_leakage,
)
from gnnbench.reporting.leakage import append_note, leakage_note

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real" / "heterophily"
# the release's directed graphs (yandex-research/heterophilous-graphs, data/*_directed.npz) are not among the real
# files; a folder holding them can be named here
RELEASE = Path(os.environ.get("GNNBENCH_HETEROPHILY_RELEASE", REAL))


def undirected(pairs) -> tuple[np.ndarray, np.ndarray]:
    pairs = np.asarray(pairs)
    return np.concatenate([pairs[:, 0], pairs[:, 1]]), np.concatenate([pairs[:, 1], pairs[:, 0]])


def test_open_and_closed_twins_are_duplicates_but_a_duplicated_subgraph_is_not():
    # 0, 1: same features, both joined to 2 and 3 (not to each other): open twins
    # 4, 5: same features, joined to each other and to 6: closed twins
    # 7: features of 0 but joined to 2 only; 8-9 and 10-11: two copies of an edge (8~10, 9~11 in features) — the
    # nodes' neighbours are copies of each other, not the same nodes, so they are not duplicates
    src, dst = undirected([(0, 2), (0, 3), (1, 2), (1, 3), (4, 5), (4, 6), (5, 6), (7, 2), (8, 9), (10, 11)])
    x = np.array([[1, 0], [1, 0], [2, 0], [3, 0], [4, 0], [4, 0], [5, 0], [1, 0], [6, 0], [7, 0], [6, 0], [7, 0]],
                 dtype=np.float32)
    found = node_duplicates(12, src, dst, feature_ids({"x": x}))
    assert [g.tolist() for g in found.groups()] == [[0, 1], [4, 5]]
    assert found.removable().nonzero()[0].tolist() == [1, 5]
    # features decide too: 1 with other features is nobody's duplicate
    x[1, 1] = 0.5
    assert [g.tolist() for g in node_duplicates(12, src, dst, feature_ids({"x": x})).groups()] == [[4, 5]]


def test_rows_are_compared_exactly_when_hashes_collide(monkeypatch):
    # every row hashes to 0: only the exact comparison inside the bucket keeps different rows apart
    monkeypatch.setattr(leakage, "_segment_sum", lambda values, indptr: np.zeros(len(indptr) - 1, dtype=np.uint64))
    indptr = np.array([0, 2, 4, 6, 8, 8])
    indices = np.array([1, 3, 1, 3, 1, 4, 1, 3])
    ids = csr_row_ids(indptr, indices)
    assert ids[0] == ids[1] == ids[3] and len({ids[0], ids[2], ids[4]}) == 3
    values = np.array([1, 1, 1, 2, 1, 1, 1, 1], dtype=np.float32)  # row 1 differs from 0 in a value only
    ids = csr_row_ids(indptr, indices, values)
    assert ids[0] == ids[3] != ids[1]


def test_graphs_equal_under_wl_are_told_apart_and_renumbered_copies_are_found():
    # graph 0: a 6-cycle; 1: two triangles (2-regular too: one WL colour, not isomorphic); 2: the 6-cycle with its
    # nodes renumbered; 3: graph 2 with one edge feature changed
    cycle = [(i, (i + 1) % 6) for i in range(6)]
    triangles = [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)]
    perm = np.array([3, 0, 5, 1, 4, 2])
    renumbered = [(int(perm[u]), int(perm[v])) for u, v in cycle]
    graphs = [undirected(edges) for edges in (cycle, triangles, renumbered, renumbered)]
    src = np.concatenate([s for s, _ in graphs])
    dst = np.concatenate([d for _, d in graphs])
    edge_ids = np.zeros(len(src), dtype=np.int64)
    edge_ids[-1] = 1
    found = graph_duplicates(np.full(4, 6), np.full(4, 12), src, dst, np.zeros(24, dtype=np.int64), edge_ids)
    assert [g.tolist() for g in found.groups()] == [[0, 2]]
    assert found.confirmed
    # above the confirmation size, WL + spectrum alone group them and say so
    unconfirmed = graph_duplicates(np.full(4, 6), np.full(4, 12), src, dst, np.zeros(24, dtype=np.int64), edge_ids,
                                   confirm_nodes=5)
    assert [g.tolist() for g in unconfirmed.groups()] == [[0, 2]] and not unconfirmed.confirmed
    assert "not confirmed" in unconfirmed.rule


def test_csl_classes_are_isomorphism_classes(datasets):
    """CSL's classes are isomorphism classes by design: every graph is a renumbered copy of its class's graph."""
    meta = json.loads((datasets["CSL"] / "meta.json").read_text())
    assert meta["duplicates"] == {"level": "graph", "rule": leakage.GRAPH_RULE, "groups": 10, "members": 50,
                                  "removable": 40, "largest": 5, "confirmed": True, "label_conflicts": 0}


def test_split_counts_items_with_a_duplicate_in_training_and_whether_its_label_agrees():
    found = DuplicateGroups("node", np.array([0, 0, 1, 1, 1, -1, 2, 2]), "r")
    labels = np.array([0, 0, 1, 2, 1, 0, 3, 3])
    folds = [{"train": [0, 2, 5], "val": [6], "test": [1, 3, 4, 7]},
             {"train": [5, 6], "val": [0], "test": [1, 2, 3, 4, 7]}]
    assert split_leakage(found, labels, folds) == [
        {"val": 1, "val_leaked": 0, "val_leaked_same_label": 0,
         "test": 4, "test_leaked": 3, "test_leaked_same_label": 2},  # 1 (label 0 as 0), 3 (2 vs 1), 4 (1 as 2)
        {"val": 1, "val_leaked": 0, "val_leaked_same_label": 0,
         "test": 5, "test_leaked": 1, "test_leaked_same_label": 1}]  # 7 (twin 6 in training)


def test_the_note_warns_above_the_threshold_and_the_job_logs_it(tmp_path, caplog):
    report = {"dataset": "D", "worst_test_fraction": 0.05,
              "duplicates": {"level": "node", "rule": "r", "groups": 2, "members": 5, "removable": 3, "largest": 3,
                             "confirmed": True, "label_conflicts": 1},
              "folds": [{"val": 10, "val_leaked": 0, "val_leaked_same_label": 0,
                         "test": 40, "test_leaked": 2, "test_leaked_same_label": 1},
                        {"val": 10, "val_leaked": 1, "val_leaked_same_label": 1,
                         "test": 40, "test_leaked": 1, "test_leaked_same_label": 1}]}
    text, warning = leakage_note(report, 0.01)
    assert warning.startswith("up to 5.0% of a test part of D has a duplicate in training (threshold 1%)")
    assert text.startswith(f"**Warning: {warning}.**")
    assert ("2 groups of duplicate nodes (5 nodes, 3 removable copies, 1 of them with differing labels; r). Test "
            "nodes with a duplicate in training: 1–2 of 40 per fold (1 with its label); validation nodes with a "
            "duplicate in training: 0–1 of 10 per fold (0–1 with its label).") in text
    assert leakage_note(report, 0.05)[1] is None  # at the threshold: no warning
    table, file = tmp_path / "D.md", tmp_path / "leakage.json"
    table.write_text("| model | score |\n|---|---|\n| A | 1 |\n")
    file.write_text(json.dumps(report))
    with caplog.at_level("WARNING"):
        append_note(table, file, 0.01)
    assert table.read_text().startswith("| model | score |\n|---|---|\n| A | 1 |\n\n**Warning: up to 5.0%")
    assert "leakage: up to 5.0% of a test part of D" in caplog.text


def test_gnnbench_leakage_prints_groups_and_folds(datasets, capsys):
    assert main(["leakage", str(datasets["CSL"]), "--split", str(datasets["CSL_splits"])]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("CSL: 10 groups of duplicate graphs (50 graphs, 40 removable copies, 0 groups with "
                             "differing labels)")
    assert out[1].startswith("  group 0: 5 graphs: ")
    folds = [line.split() for line in out[out.index(next(x for x in out if x.startswith("split "))) + 2:]]
    assert len(folds) == 5 and all(row[4] == row[5] for row in folds)  # every test graph has a twin in training


def test_the_split_stage_writes_leakage_beside_the_split(datasets, tmp_path):
    from gnnbench.pipeline import make_split_file

    out, file = tmp_path / "splits.json", tmp_path / "leakage.json"
    make_split_file(datasets["PATTERN"], "given", {}, out, leakage=file)
    report = json.loads(file.read_text())
    assert report["dataset"] == "PATTERN" and report["split_checksum"] == json.loads(out.read_text())["checksum"]
    assert report["duplicates"]["level"] == "graph" and len(report["folds"]) == 1
    assert report["folds"][0]["test"] == 4


def released_mask(name: str) -> np.ndarray:
    data = np.load(RELEASE / f"{name}_directed.npz")
    edges = data["edges"]
    return released_filter(len(data["node_labels"]), edges[:, 0], edges[:, 1], data["node_labels"])


def load(name: str):
    data = np.load(REAL / f"{name}.npz")
    src, dst = undirected(data["edges"])
    return data, node_duplicates(len(data["node_labels"]), src, dst, feature_ids({"x": data["node_features"]}))


def keys(data) -> np.ndarray:
    """(features, label) of every node as one id over both files: the filtered files keep the original rows."""
    return [row.tobytes() + bytes([label]) for row, label in zip(data["node_features"], data["node_labels"],
                                                                 strict=True)]


@pytest.mark.skipif(not REAL.is_dir(), reason="real heterophily files not available (../shared/data/real absent)")
@pytest.mark.parametrize(("name", "groups", "removable", "left_groups", "leaked"), [
    ("chameleon", 54, 133, 8, (24, 32)), ("squirrel", 8, 9, 0, (1, 3))])
def test_chameleon_and_squirrel_against_the_released_filtered_files(name, groups, removable, left_groups, leaked):
    """The exact rule finds far fewer duplicates (133 and 9 removable copies) than the release dropped (2,277 → 890,
    5,201 → 2,223 nodes): the release drops a different set — nodes without incoming links whose out-links and label
    equal those of a node with incoming links (:func:`released_filter`; their features differ). The filtered file is
    an induced subgraph of the original whose nodes keep their (features, label); ``left_groups`` exact groups remain
    in it (chameleon: 8, with 9 removable copies)."""
    data, found = load(name)
    filtered, left = load(f"{name}_filtered")
    assert (found.num_groups, int(found.removable().sum())) == (groups, removable)
    assert left.num_groups == left_groups and int(left.removable().sum()) == {"chameleon": 9, "squirrel": 0}[name]
    # map the filtered nodes to the original ones by (features, label): all are found
    original = keys(data)
    where = {}
    for i, key in enumerate(original):
        where.setdefault(key, []).append(i)
    mapped = [where.get(key, []) for key in keys(filtered)]
    assert all(mapped)
    assert len(data["node_labels"]) - len(filtered["node_labels"]) == {"chameleon": 1387, "squirrel": 2978}[name]
    # the uniquely mapped ones: their edges in the filtered file are edges of the original graph (induced subgraph)
    unique = {f: m[0] for f, m in enumerate(mapped) if len(m) == 1}
    edges = {(int(u), int(v)) for u, v in data["edges"]} | {(int(v), int(u)) for u, v in data["edges"]}
    kept_edges = [(unique[u], unique[v]) for u, v in filtered["edges"] if u in unique and v in unique]
    assert kept_edges and all(edge in edges for edge in kept_edges)
    # the test parts of the ten fixed splits: nodes with a duplicate in training
    folds = [{part: np.flatnonzero(data[f"{part}_masks"][i]) for part in ("train", "val", "test")} for i in range(10)]
    counts = [row["test_leaked"] for row in split_leakage(found, data["node_labels"], folds)]
    assert (min(counts), max(counts)) == leaked


@pytest.mark.skipif(not (RELEASE / "chameleon_directed.npz").is_file(),
                    reason="the release's directed graphs (data/chameleon_directed.npz, data/squirrel_directed.npz "
                           "of yandex-research/heterophilous-graphs) are not in ../shared/data/real; set "
                           "GNNBENCH_HETEROPHILY_RELEASE to a folder holding them")
@pytest.mark.parametrize(("name", "kept", "per_group"), [
    ("chameleon", 890, {0: 43, 1: 3, 2: 7, 3: 1}), ("squirrel", 2223, {0: 8})])
def test_the_released_filter_is_reproduced_from_the_directed_graphs(name, kept, per_group):
    """2,277 → 890 and 5,201 → 2,223 exactly, the kept nodes' (features, label) those of the filtered file; of the
    exact groups the release drops every member of most, and keeps two or more members of some (chameleon), which
    stay duplicates in its filtered file."""
    dropped = released_mask(name)
    assert int((~dropped).sum()) == kept
    data, filtered = np.load(RELEASE / f"{name}_directed.npz"), np.load(REAL / f"{name}_filtered.npz")
    assert sorted(np.asarray(keys(data), dtype=object)[~dropped]) == sorted(keys(filtered))
    _, found = load(name)
    counts = [int((~dropped[g]).sum()) for g in found.groups()]
    assert {k: counts.count(k) for k in sorted(set(counts))} == per_group


def test_gnnbench_leakage_on_a_folder_without_a_dataset_is_one_line(tmp_path, capsys):
    assert main(["leakage", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"gnnbench: error: dataset metadata {tmp_path / 'meta.json'} does not exist; create it first (run "
                   "snakemake for that file)"]


def test_a_dataset_sets_its_leakage_threshold_and_a_share_above_one_is_refused():
    from conftest import TINY

    from gnnbench.errors import ConfigError
    from gnnbench.suite import load_suite

    config = json.loads(json.dumps(TINY))
    config["datasets"]["CSL"]["leakage_threshold"] = 0.25
    suite = load_suite(config)
    assert suite.datasets["CSL"].leakage_threshold == 0.25
    assert suite.datasets["PATTERN"].leakage_threshold == leakage.DEFAULT_THRESHOLD == 0.01
    config["datasets"]["CSL"]["leakage_threshold"] = 2
    with pytest.raises(ConfigError, match=r"^datasets.CSL.leakage_threshold: 2 is greater than the maximum of 1; "):
        load_suite(config)


def test_a_renumbered_graph_whose_spectrum_holds_zero_is_its_duplicate():
    """Eigenvalues of isomorphic graphs agree only up to rounding (a 0 comes out as ±1e-16): compared with a
    tolerance, not as rounded bytes, which split this graph from its renumbered copy."""
    adjacency = np.array([[0, 1, 1, 1, 0, 0, 0, 0], [1, 0, 0, 1, 0, 1, 0, 1], [1, 0, 0, 0, 1, 1, 0, 0],
                          [1, 1, 0, 0, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0, 0, 0], [0, 1, 1, 0, 0, 0, 1, 0],
                          [0, 0, 0, 0, 0, 1, 0, 1], [0, 1, 0, 0, 0, 0, 1, 0]])
    perm = [2, 6, 1, 5, 3, 7, 4, 0]
    src0, dst0 = np.nonzero(adjacency)
    src1, dst1 = np.nonzero(adjacency[perm][:, perm])
    assert 0 in np.round(np.linalg.eigvalsh(adjacency.astype(float)), 6)
    found = graph_duplicates(np.array([8, 8]), np.array([len(src0), len(src1)]), np.concatenate([src0, src1]),
                             np.concatenate([dst0, dst1]), np.zeros(16, dtype=np.int64),
                             np.zeros(len(src0) + len(src1), dtype=np.int64))
    assert [g.tolist() for g in found.groups()] == [[0, 1]]


def test_gnnbench_splits_and_aggregate_put_the_leakage_note_under_a_table_made_by_hand(datasets, tmp_path):
    """Outside a suite: `gnnbench splits --leakage` writes the report, `gnnbench aggregate --leakage` puts its note
    (and, above the threshold, its warning) under the table. Every test graph of CSL has a twin in training."""
    from gnnbench.protocols.benchmarking_gnns.train import run_records
    from gnnbench.records import write_records

    split, report = tmp_path / "splits.json", tmp_path / "leakage.json"
    assert main(["splits", str(datasets["CSL"]), "--scheme", "stratified_kfold", "--folds", "5", "--out", str(split),
                 "--leakage", str(report)]) == 0
    folds = json.loads(report.read_text())["folds"]
    assert len(folds) == 5 and all(f["test_leaked"] == f["test"] > 0 for f in folds)
    record = tmp_path / "run.parquet"
    write_records(record, run_records({
        "dataset": "CSL", "label": "GIN", "model": "GIN", "seed": 0, "fold": 0, "metric": "accuracy",
        "higher_is_better": True, "data": {"split_scheme": "stratified_kfold"}, "test": {"metric": 50.0, "loss": 1.0},
        "val": {"metric": 50.0, "loss": 1.0}, "train": {"metric": 60.0, "loss": 1.0}, "num_params": 10, "epochs": 1,
        "seconds_per_epoch": 0.1, "total_seconds": 0.2, "total_hours": 0.0, "stop_reason": "epochs",
        "status": "completed", "config": {"model": "GIN", "seed": 0}}))
    out = tmp_path / "CSL"
    assert main(["aggregate", "benchmarking-gnns", str(record), "--out", str(out), "--leakage", str(report)]) == 0
    table = out.with_suffix(".md").read_text()
    sizes = sorted({f["test"] for f in folds})
    span = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]}–{sizes[-1]}"
    assert table.index("| GIN ") < table.index("Leakage check: 10 groups of duplicate graphs")  # table, then note
    assert "**Warning: up to 100.0% of a test part of CSL has a duplicate in training (threshold 1%)" in table
    assert f"Test graphs with a duplicate in training: {span} of {span} per fold" in table
    assert main(["aggregate", "benchmarking-gnns", str(record), "--out", str(out), "--leakage", str(report),
                 "--leakage-threshold", "1"]) == 0
    assert "Warning" not in out.with_suffix(".md").read_text()  # at a threshold of 100 %: the note, no warning


def test_aggregate_leakage_options_are_checked_before_any_table_is_written(tmp_path, capsys):
    for extra, expected in ((["--leakage-threshold", "2"], "--leakage-threshold 2: give a share between 0 and 1"),
                            (["--leakage", str(tmp_path / "none.json")], "no such file")):
        assert main(["aggregate", "benchmarking-gnns", str(tmp_path / "r.parquet"), "--out", str(tmp_path / "T"),
                     *extra]) == 1
        err = capsys.readouterr().err
        assert err.startswith("gnnbench: error: ") and expected in err and len(err.strip().splitlines()) == 1
        assert not list(tmp_path.glob("T.*"))
