"""TSP labelling at scale: shards (one workflow job each) merged into the dataset, the Concorde backend, the k-NN
heuristic baseline, and their workflow rules.

References are independent: the unsharded in-process build, a fake ``concorde`` executable solving by brute
force, and per-batch F1 with plain Python loops.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import stat
import sys
import textwrap

import numpy as np
import pytest
import torch

from gnnbench.baselines import knn_baseline, knn_scores
from gnnbench.data import tsp_solver
from gnnbench.data.generators import get_generator, resolve_params, tsp
from gnnbench.data.meta import read_meta
from gnnbench.data.store import read_graph_columns
from gnnbench.errors import ConfigError, DataError, GnnbenchError
from gnnbench.pipeline import generate_dataset, label_shard, make_split_file, merge_shards

PARAMS = {"num_train": 7, "num_val": 3, "num_test": 3, "num_nodes": [12, 30], "k": 5, "instances_per_shard": 4}
SEED = 6


def _resolved(**over):
    return resolve_params(get_generator("tsp"), {**PARAMS, **over}, "p")


def _label_all(tmp_path, params, seed=SEED):
    files = []
    for shard in range(tsp.num_shards(params)):
        files.append(tmp_path / f"{shard}.parquet")
        label_shard("tsp", "TSP", params, seed, shard, files[-1])
    return files


@pytest.fixture(scope="module")
def unsharded():
    return tsp.build_tsp(_resolved(), SEED, workers=1)


def _assert_same(a, b):
    for group in ("node", "edge", "graph"):
        assert set(getattr(a, group)) == set(getattr(b, group))
        for key, values in getattr(a, group).items():
            assert np.array_equal(values, getattr(b, group)[key]), key
    assert np.array_equal(a.src, b.src) and np.array_equal(a.dst, b.dst)
    assert np.array_equal(a.num_nodes, b.num_nodes)


# ------------------------------------------------------------------------------------------------ shards


def test_shards_partition_the_instances_in_stored_order():
    params = _resolved()
    assert tsp.num_shards(params) == 4  # 13 instances in shards of 4
    ranges = [tsp.shard_range(params, s) for s in range(4)]
    assert [list(r) for r in ranges] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12]]
    _, point_sets = tsp.sample_graphs(params, SEED)
    for shard, r in enumerate(ranges):
        got = tsp.shard_point_sets(params, SEED, shard)
        assert len(got) == len(r)
        assert all(np.array_equal(a, point_sets[i]) for a, i in zip(got, r, strict=True))


def test_merged_shards_equal_the_unsharded_build_in_any_order(tmp_path, unsharded):
    params = _resolved()
    files = _label_all(tmp_path, params)
    merged = tsp.build_from_shards(params, SEED, files[::-1])
    _assert_same(merged, unsharded)
    # The shard size is not part of the data.
    other = _resolved(instances_per_shard=6)
    (tmp_path / "six").mkdir()
    files6 = _label_all(tmp_path / "six", other)
    _assert_same(tsp.build_from_shards(other, SEED, files6), unsharded)


def test_merge_writes_the_same_dataset_as_direct_generation(tmp_path):
    params = dict(PARAMS)
    files = _label_all(tmp_path, _resolved())
    merge_shards("tsp", "TSP", params, SEED, files, tmp_path / "merged")
    generate_dataset("tsp", "TSP", params, SEED, tmp_path / "direct")
    a, b = (tmp_path / "merged" / "graphs.parquet").read_bytes(), (tmp_path / "direct" / "graphs.parquet").read_bytes()
    assert a == b
    meta = read_meta(tmp_path / "merged")
    cols = read_graph_columns(tmp_path / "merged" / "graphs.parquet")
    train = cols.graph["tour_length"][:PARAMS["num_train"]]
    assert meta.statistics["train"]["tour_length"]["mean"] == pytest.approx(train.mean())
    assert meta.statistics["all"]["tour_length"]["max"] == pytest.approx(cols.graph["tour_length"].max())


def test_bad_shards_give_clear_errors(tmp_path):
    params = _resolved()
    files = _label_all(tmp_path, params)
    with pytest.raises(DataError, match=r"expected shards 0\.\.3 once each, got \[0, 1, 3\]"):
        tsp.build_from_shards(params, SEED, [files[0], files[1], files[3]])
    with pytest.raises(DataError, match=r"expected shards 0\.\.3 once each, got \[0, 0, 1, 2, 3\]"):
        tsp.build_from_shards(params, SEED, [files[0], *files])
    stale = tmp_path / "stale.parquet"
    label_shard("tsp", "TSP", params, SEED + 1, 2, stale)  # another seed
    with pytest.raises(DataError, match="other parameters or seed.*delete .*stale.parquet"):
        tsp.build_from_shards(params, SEED, [files[0], files[1], stale, files[3]])
    files[1].write_bytes(b"not parquet")
    with pytest.raises(DataError, match=r"1.parquet is not a readable shard file"):
        tsp.build_from_shards(params, SEED, files)
    with pytest.raises(DataError, match="does not exist; rerun snakemake"):
        tsp.build_from_shards(params, SEED, [tmp_path / "missing.parquet"])
    with pytest.raises(ConfigError, match=r"shard 4 does not exist.*shards 0\.\.3"):
        label_shard("tsp", "TSP", params, SEED, 4, tmp_path / "x.parquet")
    assert not (tmp_path / "x.parquet").exists()


def test_shard_labelling_reports_progress(tmp_path, caplog):
    params = _resolved()
    with caplog.at_level(logging.INFO, logger="gnnbench.progress"):
        label_shard("tsp", "TSP", params, SEED, 1, tmp_path / "1.parquet")
    lines = [r.getMessage() for r in caplog.records if r.name == "gnnbench.progress"]
    assert lines and lines[-1].startswith("TSP shard 2/4: 4/4 (100%)")


def test_worker_batches_report_progress_per_batch(monkeypatch):
    rng = np.random.default_rng(1)
    sets = [rng.random((int(n), 2), dtype=np.float32) for n in rng.integers(6, 12, 5)]
    monkeypatch.setattr(tsp_solver, "WORKER_BATCH", 2)
    calls = []
    tours = tsp_solver.solve_tours(sets, 1, workers=2, progress=calls.append)
    assert sorted(calls) == [1, 2, 2]  # one call per worker batch of ≤ 2 instances
    direct = tsp_solver.solve_tours(sets, 1, workers=1)
    assert all(np.array_equal(a, b) for a, b in zip(tours, direct, strict=True))


# ------------------------------------------------------------------------------------------------ Concorde

FAKE_CONCORDE = textwrap.dedent('''\
    #!{python}
    """Test double of Concorde's command line: brute-force optimum of a TSPLIB EUC_2D file, .sol output."""
    import itertools, math, os, sys
    args = sys.argv[1:]
    with open(os.environ["FAKE_CONCORDE_LOG"], "a") as log:
        log.write(" ".join(args) + "\\n")
    if os.environ.get("FAKE_CONCORDE_FAIL"):
        print("fake concorde: failing on purpose", file=sys.stderr)
        sys.exit(3)
    out = args[args.index("-o") + 1]
    coords = []
    section = False
    for line in open(args[-1]):
        if line.startswith("NODE_COORD_SECTION"):
            section = True
        elif line.startswith("EOF"):
            break
        elif section:
            _, x, y = line.split()
            coords.append((float(x), float(y)))
    n = len(coords)
    d = [[int(math.hypot(a[0] - b[0], a[1] - b[1]) + 0.5) for b in coords] for a in coords]
    best = min(((0, *p) for p in itertools.permutations(range(1, n))),
               key=lambda t: sum(d[t[i]][t[(i + 1) % n]] for i in range(n)))
    with open(out, "w") as f:
        f.write(f"{{n}}\\n")
        for i in range(0, n, 10):
            f.write(" ".join(map(str, best[i:i + 10])) + "\\n")
''')


@pytest.fixture
def fake_concorde(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "concorde"
    exe.write_text(FAKE_CONCORDE.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "concorde.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CONCORDE_LOG", str(log))
    return log


def _brute_force(points):
    dist = tsp_solver.scaled_distances(points)
    n = len(points)
    return min(sum(int(dist[a, b]) for a, b in zip((0, *p), (*p, 0), strict=True))
               for p in itertools.permutations(range(1, n)))


def test_concorde_backend_labels_with_its_optimal_tours(fake_concorde, tmp_path):
    params = {"num_train": 3, "num_val": 1, "num_test": 1, "num_nodes": [6, 8], "k": 4, "solver": "concorde"}
    meta = generate_dataset("tsp", "TSP", params, 3, tmp_path / "c")
    assert meta.source["solver"].startswith("Concorde")
    calls = fake_concorde.read_text().splitlines()
    assert len(calls) == 5 and all(c.startswith("-s 1 -x -o ") and c.endswith("instance.tsp") for c in calls)
    by_concorde = read_graph_columns(tmp_path / "c" / "graphs.parquet")
    generate_dataset("tsp", "TSP", {**params, "solver": "lkh"}, 3, tmp_path / "l")
    by_lkh = read_graph_columns(tmp_path / "l" / "graphs.parquet")
    assert np.array_equal(by_concorde.edge["y"], by_lkh.edge["y"])  # unique optima: the same tour edges
    _, point_sets = tsp.sample_graphs(_resolved(**params), 3)
    for i, points in enumerate(point_sets):
        tour = tsp_solver.concorde_tour(points, "concorde")
        assert tsp_solver.tour_length(tsp_solver.scaled_distances(points), tour) == _brute_force(points)
        assert by_concorde.graph["tour_length"][i] > 0


def test_concorde_missing_or_failing_is_a_clear_error(fake_concorde, tmp_path, monkeypatch):
    points = np.random.default_rng(0).random((6, 2), dtype=np.float32)
    monkeypatch.setenv("FAKE_CONCORDE_FAIL", "1")
    with pytest.raises(GnnbenchError, match=r"concorde failed on a 6-node instance \(exit 3\): fake concorde: failing"):
        tsp_solver.solve_tours([points], solver="concorde")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="no `concorde` executable is on PATH.*set solver: lkh"):
        tsp_solver.solve_tours([points], solver="concorde")
    with pytest.raises(ConfigError, match=r"p\.solver: unknown TSP solver 'gurobi'; choose one of lkh, concorde"):
        resolve_params(get_generator("tsp"), {"solver": "gurobi"}, "p")


# ------------------------------------------------------------------------------------------------ k-NN baseline


def test_knn_scores_pick_the_k_shortest_out_edges():
    from gnnbench.data.batching import GraphBatch

    # node 0: edges to 1 (0.5), 2 (0.1), 3 (0.3); node 1: to 0 (0.5), 3 (0.2); node 2: to 3 (0.4) — stored unsorted
    edge_index = torch.tensor([[0, 1, 0, 2, 0, 1], [1, 0, 2, 3, 3, 3]])
    dist = torch.tensor([[0.5], [0.5], [0.1], [0.4], [0.3], [0.2]])
    batch = GraphBatch(edge_index=edge_index, batch=torch.zeros(4, dtype=torch.long), ptr=torch.tensor([0, 4]),
                       num_graphs=1, edge_attr=dist)
    assert knn_scores(batch, 2).argmax(1).tolist() == [0, 1, 1, 1, 1, 1]
    assert knn_scores(batch, 1).argmax(1).tolist() == [0, 0, 1, 1, 0, 1]


def test_knn_baseline_is_scored_like_a_model(tmp_path):
    params = {"num_train": 5, "num_val": 3, "num_test": 4, "num_nodes": [15, 30], "k": 6}
    generate_dataset("tsp", "TSP", params, 2, tmp_path / "d")
    make_split_file(tmp_path / "d", "given", {}, tmp_path / "splits.json")
    record = knn_baseline(tmp_path / "d", tmp_path / "splits.json", batch_size=3)
    cols = read_graph_columns(tmp_path / "d" / "graphs.parquet")
    parts = {"train": range(0, 5), "val": range(5, 8), "test": range(8, 12)}
    for part, graphs in parts.items():
        f1s = []
        for start in range(0, len(graphs), 3):  # batches of 3 graphs in split order; F1 per batch, then the mean
            tp = fp = fn = 0
            for g in list(graphs)[start:start + 3]:
                x = cols.graph_at(g)
                for u in range(x["num_nodes"] if "num_nodes" in x else len(x["x"])):
                    out = np.flatnonzero(x["src"] == u)
                    nearest = set(out[np.argsort(x["edge_attr"][out, 0], kind="stable")[:2]].tolist())
                    for e in out:
                        pred, true = e in nearest, x["y"][e] == 1
                        tp, fp, fn = tp + (pred and true), fp + (pred and not true), fn + (true and not pred)
            f1s.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
        assert record[part]["metric"] == pytest.approx(np.mean(f1s), abs=1e-6), part
    assert record["label"] == "k-NN heuristic (k=2)" and record["num_params"] == 0
    assert 0.4 < record["test"]["metric"] < 0.95


def test_knn_baseline_refuses_other_tasks(tmp_path):
    generate_dataset("csl", "CSL", {"copies_per_class": 5}, 1, tmp_path / "csl")
    make_split_file(tmp_path / "csl", "stratified_kfold", {"folds": 5, "val_fraction": 0.25, "seed": 0},
                    tmp_path / "s.json")
    with pytest.raises(ConfigError, match="k-NN tour heuristic needs a TSP-like dataset.*CSL"):
        knn_baseline(tmp_path / "csl", tmp_path / "s.json", 4)


# ------------------------------------------------------------------------------------------ generator hooks


@pytest.fixture
def tsp_copy(monkeypatch):
    """TSP's hooks under another generator name, with a k = 3 heuristic as its baseline: the suite, the pipeline
    and the workflow find sharding and baselines through the generator, not by the name "tsp"."""
    import dataclasses

    from gnnbench.data import generators
    from gnnbench.data.generators.base import Baseline

    copy = dataclasses.replace(tsp.TSP, name="tsp_copy", baselines=(Baseline("knn_k3", "knn_tour", {"k": 3}),))
    monkeypatch.setitem(generators.GENERATORS, "tsp_copy", copy)
    return copy


def _suite_of(generator: str):
    from gnnbench.suite import load_suite

    return load_suite({
        "datasets": {"T": {"generator": generator, "seed": SEED, "params": PARAMS},
                     "C": {"generator": "csl", "params": {"copies_per_class": 5}}},
        "benchmarks": {"T": {"seeds": [1], "models": {"MLP": "TSP_edge_classification_MLP_100k"}},
                       "C": {"seeds": [1], "models": {"GIN": "CSL_graph_classification_GIN_CSL_100k"}}}})


def test_a_generators_sharding_and_baselines_decide_the_suites_jobs(tsp_copy):
    suite = _suite_of("tsp_copy")
    assert suite.sharded_datasets == ["T"]  # CSL builds in one job
    assert suite.label_shard_files("T") == [f"results/datasets/T/label_shards/{i}.parquet" for i in range(4)]
    assert suite.label_shard_files("C") == [] and suite.baseline_files("C") == []
    assert list(suite.baselines("T")) == ["knn_k3"] and suite.baseline_names == ["knn_k3"]
    assert suite.baseline_files("T") == ["results/records/benchmarking-gnns/T/knn_k3/baseline.parquet"]
    assert _suite_of("tsp").baseline_names == ["knn_k2"]  # the paper's heuristic (test F1 0.693)


def test_the_pipeline_shards_merges_and_scores_through_the_hooks(tmp_path, tsp_copy, unsharded):
    from gnnbench.pipeline import score_baseline
    from gnnbench.records import read_runs

    files = []
    for shard in range(4):
        files.append(tmp_path / f"{shard}.parquet")
        label_shard("tsp_copy", "T", PARAMS, SEED, shard, files[-1])
    merge_shards("tsp_copy", "T", PARAMS, SEED, files, tmp_path / "T")
    _assert_same(read_graph_columns(tmp_path / "T" / "graphs.parquet"), unsharded)
    make_split_file(tmp_path / "T", "given", {}, tmp_path / "splits.json")
    score_baseline(tmp_path / "T", tmp_path / "splits.json", 4, "knn_tour", {"k": 3}, tmp_path / "b.json",
                   tmp_path / "b.parquet")
    direct = knn_baseline(tmp_path / "T", tmp_path / "splits.json", 4, k=3)
    record = json.loads((tmp_path / "b.json").read_text())
    assert record["label"] == "k-NN heuristic (k=3)" and record["config"] == {"k": 3, "batch_size": 4}
    assert [record[p]["metric"] for p in ("train", "val", "test")] == [direct[p]["metric"]
                                                                       for p in ("train", "val", "test")]
    rows = read_runs(tmp_path / "b.parquet")
    assert rows["test_score"].tolist() == [direct["test"]["metric"]]


def test_hooks_refuse_what_they_do_not_have(tmp_path):
    from gnnbench.pipeline import score_baseline
    from gnnbench.suite import load_suite

    with pytest.raises(ConfigError, match="generator 'csl' makes its datasets in one job, not in shards"):
        label_shard("csl", "C", {}, 1, 0, tmp_path / "0.parquet")
    with pytest.raises(ConfigError, match="baseline method 'knn' is unknown; choose one of knn_tour"):
        score_baseline(tmp_path, tmp_path / "s.json", 4, "knn", {}, tmp_path / "b.json")
    assert not (tmp_path / "0.parquet").exists() and not (tmp_path / "b.json").exists()
    with pytest.raises(ConfigError, match=r"^resources: 'tsp_label' is now called label_shard .*$"):
        load_suite({"datasets": {"C": {"generator": "csl"}}, "benchmarks": {"C": {"models": {}}},
                    "resources": {"tsp_label": {"cpus": 2}}})
