"""TSP dataset generator and solvers (docs/datasets.md#tsp).

The reference answers are computed here independently of the implementation: k nearest neighbours and tour
labels with explicit loops, optimal tours by brute force (n ≤ 8) and by Held–Karp (checked against brute
force). Seeds are fixed, so every test is deterministic.
"""

from __future__ import annotations

import hashlib
import itertools
import math

import numpy as np
import pytest

from gnnbench.data import tsp_solver
from gnnbench.data.catalog import describe_dataset
from gnnbench.data.generators import get_generator, resolve_params
from gnnbench.data.generators import tsp as tsp_gen
from gnnbench.data.meta import read_meta
from gnnbench.data.store import GraphColumns, read_graph_columns
from gnnbench.errors import ConfigError
from gnnbench.pipeline import generate_dataset

SMALL = {"num_train": 8, "num_val": 4, "num_test": 4, "num_nodes": [20, 45], "k": 6}
SPLITS = ("train", "val", "test")


def _generate(tmp_path_factory, params: dict, seed: int):
    out = tmp_path_factory.mktemp(f"tsp_{seed}")
    generate_dataset("tsp", "TSP", params, seed, out)
    return out, read_meta(out), read_graph_columns(out / "graphs.parquet")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return _generate(tmp_path_factory, SMALL, 3)


def _points_and_edges(cols: GraphColumns, i: int):
    g = cols.graph_at(i)
    return g["x"], g["src"], g["dst"], g["edge_attr"], g["y"]


def _ref_distances(points: np.ndarray) -> np.ndarray:
    """Float64 Euclidean distances with plain loops."""
    p = points.astype(np.float64)
    n = len(p)
    d = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            dx, dy = p[i, 0] - p[j, 0], p[i, 1] - p[j, 1]
            d[i, j] = math.sqrt(dx * dx + dy * dy)
    return d


def _ref_scaled(points: np.ndarray) -> np.ndarray:
    d = _ref_distances(points)
    return np.array([[int(np.rint(v * 10**6)) for v in row] for row in d], dtype=np.int64)


def _brute_force_length(dist: np.ndarray) -> int:
    n = len(dist)
    return min(sum(int(dist[a, b]) for a, b in zip((0, *p), (*p, 0), strict=True))
               for p in itertools.permutations(range(1, n)))


def _random_points(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.random((n, 2), dtype=np.float32)


# ------------------------------------------------------------------------------------------------- solvers


def test_scaled_distances_are_rounded_micro_units():
    pts = _random_points(np.random.default_rng(0), 9)
    d = tsp_solver.scaled_distances(pts)
    assert d.dtype == np.int64
    assert np.array_equal(d, _ref_scaled(pts))
    assert np.array_equal(d, d.T) and (np.diag(d) == 0).all()
    # LKH multiplies costs by PRECISION = 100 into a C int: the largest possible distance must fit.
    assert math.ceil(math.sqrt(2) * tsp_solver.SCALE) * 100 < 2**31 - 1


def test_held_karp_matches_brute_force():
    rng = np.random.default_rng(1)
    for n in (2, 3, 4, 5, 6, 7, 8, 8):
        dist = tsp_solver.scaled_distances(_random_points(rng, n))
        length, tour = tsp_solver.held_karp(dist)
        assert sorted(tour.tolist()) == list(range(n))
        assert tsp_solver.tour_length(dist, tour) == length
        if n >= 3:
            assert length == _brute_force_length(dist)


def test_lkh_tours_are_optimal_on_small_instances():
    """LKH (as the generator calls it) against the exact Held–Karp optimum: equal integer lengths."""
    rng = np.random.default_rng(2)
    runs = tsp_gen.TSP.defaults["lkh_runs"]
    sizes = [4, 5, 6, 7, 8, 9, 10, 11] * 3  # 24 instances
    for n in sizes:
        dist = tsp_solver.scaled_distances(_random_points(rng, n))
        tour = tsp_solver.lkh_tour(dist, runs)
        assert sorted(tour.tolist()) == list(range(n))
        assert tsp_solver.tour_length(dist, tour) == tsp_solver.held_karp(dist)[0], f"n={n}"


def test_solver_workers_give_the_same_tours(monkeypatch):
    """Worker processes (leak containment, parallelism) and in-process solving agree; order does not matter."""
    rng = np.random.default_rng(4)
    sets = [_random_points(rng, int(n)) for n in rng.integers(5, 40, 7)]
    direct = tsp_solver.solve_tours(sets, 1, workers=1)
    assert all(sorted(t.tolist()) == list(range(len(p))) for t, p in zip(direct, sets, strict=True))
    reverse = tsp_solver.solve_tours(sets[::-1], 1, workers=1)[::-1]
    assert all(np.array_equal(a, b) for a, b in zip(direct, reverse, strict=True))
    monkeypatch.setattr(tsp_solver, "IN_PROCESS_BUDGET", 0)
    monkeypatch.setattr(tsp_solver, "LEAK_BUDGET", 8 * 40 * 40 * 3)  # forces several worker batches
    pooled = tsp_solver.solve_tours(sets, 1, workers=2)
    assert len(pooled) == len(sets)
    assert all(np.array_equal(a, b) for a, b in zip(direct, pooled, strict=True))


# ------------------------------------------------------------------------------------------------ generator


def test_registry_meta_and_config_checks():
    gen = get_generator("tsp")
    assert gen.default_split == {"scheme": "given"}
    params = resolve_params(gen, None, "p")
    assert params["num_nodes"] == [50, 500] and params["k"] == 25
    meta = gen.describe("TSP", params, 0)
    assert (meta.task, meta.loss, meta.metric, meta.num_outputs) == ("edge_classification", "cross_entropy", "f1", 2)
    assert meta.label_level == "edge" and meta.pe_usage == "add"
    assert (meta.node_features.kind, meta.node_features.size) == ("continuous", 2)
    assert (meta.edge_features.kind, meta.edge_features.size) == ("continuous", 1)
    assert meta.split_sizes == {"train": 10000, "val": 1000, "test": 1000} and meta.num_graphs == 12000
    published = describe_dataset("TSP")  # the catalog's description of the published dataset agrees
    for field in ("task", "loss", "metric", "num_outputs", "node_features", "edge_features", "split_sizes"):
        assert getattr(meta, field) == getattr(published, field), field
    with pytest.raises(ConfigError, match="k"):
        resolve_params(gen, {"num_nodes": [10, 20], "k": 10}, "p")
    resolve_params(gen, {"num_nodes": [10, 20], "k": 9}, "p")


def test_columns_dtypes_and_meta(small):
    _, meta, cols = small
    n_graphs = sum(SMALL[f"num_{s}"] for s in SPLITS)
    assert meta.num_graphs == cols.num_graphs == n_graphs
    assert meta.split_sizes == {s: SMALL[f"num_{s}"] for s in SPLITS}
    assert set(cols.node) == {"x"} and set(cols.edge) == {"edge_attr", "y"} and set(cols.graph) == {"tour_length"}
    x, e, y = cols.node["x"], cols.edge["edge_attr"], cols.edge["y"]
    assert x.dtype == np.float32 and x.shape == (cols.num_nodes.sum(), 2) and (x >= 0).all() and (x < 1).all()
    assert e.dtype == np.float32 and e.shape == (cols.num_edges.sum(), 1)
    assert y.dtype in (np.int8, np.int16) and set(np.unique(y).tolist()) <= {0, 1}
    assert ((cols.num_nodes >= 20) & (cols.num_nodes <= 45)).all()
    assert np.array_equal(cols.num_edges, SMALL["k"] * cols.num_nodes)
    assert set(meta.statistics) == {"all", *SPLITS}


def test_edges_are_the_k_nearest_neighbours(small):
    _, _, cols = small
    k = SMALL["k"]
    for i in range(cols.num_graphs):
        x, src, dst, attr, _ = _points_and_edges(cols, i)
        n = len(x)
        d = _ref_distances(x)
        expected_src, expected_dst = [], []
        for u in range(n):  # k nearest other nodes, nearest first, ties by index
            order = sorted((v for v in range(n) if v != u), key=lambda v, u=u: (d[u, v], v))[:k]
            expected_src += [u] * k
            expected_dst += order
        assert src.tolist() == expected_src
        assert dst.tolist() == expected_dst
        assert np.array_equal(attr[:, 0], d[src, dst].astype(np.float32))


def test_labels_mark_tour_edges(small):
    _, _, cols = small
    for i in range(cols.num_graphs):
        x, src, dst, _, y = _points_and_edges(cols, i)
        n = len(x)
        tour = tsp_solver.lkh_tour(tsp_solver.scaled_distances(x), tsp_gen.TSP.defaults["lkh_runs"])
        assert sorted(tour.tolist()) == list(range(n))
        tour_edges = {frozenset((int(tour[t]), int(tour[(t + 1) % n]))) for t in range(n)}
        expected = [int(frozenset((int(u), int(v))) in tour_edges) for u, v in zip(src, dst, strict=True)]
        assert y.tolist() == expected
        per_node = np.bincount(src[y == 1], minlength=n)
        assert per_node.max() <= 2
        label = {(int(u), int(v)): int(t) for u, v, t in zip(src, dst, y, strict=True)}
        for (u, v), t in label.items():  # symmetric where both directions exist
            if (v, u) in label:
                assert label[(v, u)] == t
        # Most tour edges of a random instance join near neighbours: with k = 6 nearly all are present.
        covered = sum(((a, b) in label or (b, a) in label) for a, b in (tuple(sorted(s)) for s in tour_edges))
        assert covered >= 0.9 * n


def test_complete_knn_graph_labels_an_optimal_tour(tmp_path_factory):
    """With k = n − 1 every tour edge is present: the labels must form one Hamiltonian cycle of optimal length."""
    params = {"num_train": 12, "num_val": 4, "num_test": 4, "num_nodes": [10, 10], "k": 9}
    _, _, cols = _generate(tmp_path_factory, params, 11)
    for i in range(cols.num_graphs):
        x, src, dst, _, y = _points_and_edges(cols, i)
        n = len(x)
        assert len(src) == n * (n - 1)
        assert np.array_equal(np.bincount(src[y == 1], minlength=n), np.full(n, 2))
        neighbours = {u: sorted(int(v) for v in dst[(src == u) & (y == 1)]) for u in range(n)}
        cycle, prev = [0], None  # walk the labelled edges from node 0
        while True:
            nxt = [v for v in neighbours[cycle[-1]] if v != prev]
            prev, node = cycle[-1], nxt[0]
            if node == 0:
                break
            cycle.append(node)
        assert sorted(cycle) == list(range(n)), "labelled edges do not form a single Hamiltonian cycle"
        dist = _ref_scaled(x)
        length = sum(int(dist[a, b]) for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True))
        assert length == tsp_solver.held_karp(dist)[0]
        euclidean = _ref_distances(x)
        expected = sum(euclidean[a, b] for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True))
        assert cols.graph["tour_length"][i] == pytest.approx(expected, rel=1e-12)


def test_same_seed_same_bytes_and_splits_are_independent(small, tmp_path_factory):
    out, _, cols = small
    again, _, _ = _generate(tmp_path_factory, SMALL, 3)
    digest = [hashlib.sha256((d / "graphs.parquet").read_bytes()).hexdigest() for d in (out, again)]
    assert digest[0] == digest[1]
    other = tsp_gen.sample_graphs(resolve_params(get_generator("tsp"), SMALL, "p"), 4)[0]
    assert not np.array_equal(other.node["x"][:10], cols.node["x"][:10])
    # Fewer training graphs leave the validation and test graphs unchanged.
    fewer = tsp_gen.build_tsp(resolve_params(get_generator("tsp"), {**SMALL, "num_train": 3}, "p"), 3)
    shift = SMALL["num_train"] - 3
    for j in range(3, fewer.num_graphs):
        a, b = fewer.graph_at(j), cols.graph_at(j + shift)
        for key in ("x", "src", "dst", "edge_attr", "y", "tour_length"):
            assert np.array_equal(a[key], b[key]), key


def test_default_size_statistics():
    """Unlabelled graphs of the default node range (k = 3 to keep it fast): node counts ~ U{50..500}."""
    params = resolve_params(get_generator("tsp"), {"num_train": 300, "num_val": 50, "num_test": 50, "k": 3}, "p")
    cols, point_sets = tsp_gen.sample_graphs(params, 7)
    n = cols.num_nodes
    assert len(n) == 400 and n.min() >= 50 and n.max() <= 500
    mean, sd = (50 + 500) / 2, math.sqrt((451**2 - 1) / 12)  # 275, 130.2
    assert abs(n.mean() - mean) < 5 * sd / math.sqrt(len(n))
    assert abs(n.std() - sd) < 0.15 * sd
    assert np.array_equal(cols.num_edges, 3 * n)
    x = cols.node["x"]
    assert np.abs(x.mean(0) - 0.5).max() < 5 * math.sqrt(1 / 12 / len(x))
    assert [len(p) for p in point_sets] == n.tolist()
    cols.validate()


def test_k_nearest_ties_go_to_the_smaller_index():
    """Exact ties (rare with random floats, so forced here) are broken by index, as a stable sort does."""
    rng = np.random.default_rng(8)
    for _ in range(50):
        m = int(rng.integers(2, 25))
        k = int(rng.integers(1, m))
        d = rng.integers(0, 4, (6, m)).astype(np.float64)
        d[rng.random(d.shape) < 0.1] = np.inf
        d[0] = rng.random(m)  # rows without ties too
        got = tsp_gen._k_smallest(d, k)
        for row, nearest in zip(d, got, strict=True):
            assert nearest.tolist() == sorted(range(m), key=lambda j, row=row: (row[j], j))[:k]
