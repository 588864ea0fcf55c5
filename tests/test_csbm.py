"""CSBM generator: statistics against the model's analytic expectations (edge counts, homophily, class sizes,
feature means and spread, the docstring's Bayes accuracy), storage layout, parameter checks and determinism.

Tolerances are Z = 4 standard deviations of the quantity under the model; the expectations are computed here from
the docstring's formulas, not by calling the generator's helpers.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import integrate, stats

from gnnbench.data.generators import get_generator, resolve_params
from gnnbench.data.generators.csbm import build_csbm
from gnnbench.data.meta import read_dataset
from gnnbench.errors import ConfigError
from gnnbench.pipeline import generate_dataset

Z = 4.0


def params(**over):
    return resolve_params(get_generator("csbm"), over, "p")


def intra_mask(cols) -> np.ndarray:
    y = cols.node["y"]
    return y[cols.src] == y[cols.dst]


def test_defaults_and_meta(tmp_path):
    gen = get_generator("csbm")
    assert gen.defaults == {"num_nodes": 1000, "num_classes": 4, "num_features": 32, "avg_degree": 6.0,
                            "homophily": 0.7, "feature_signal": 2.2, "class_balance": 1.0}
    meta = generate_dataset("csbm", "CSBM", None, 3, tmp_path / "ds")
    meta, cols = read_dataset(tmp_path / "ds")
    assert meta.transductive and meta.num_outputs == 4 and meta.split_sizes is None
    assert meta.node_features.kind == "continuous" and meta.node_features.size == 32 and not meta.node_features.sparse
    s = meta.statistics["all"]
    assert s["nodes"] == 1000 and s["class_sizes"] == [250] * 4 and s["unlabelled_nodes"] == 0
    assert s["features"] == 32 and s["feature_nonzeros"] == 32000 and s["self_loops"] == 0
    assert s["edges"] == cols.num_edges[0] // 2
    # E[edges] = N·d/2 = 3000; Var = Σ P p (1-p) over the blocks
    pairs_in, pairs_out = 4 * 250 * 249 / 2, 1000 * 999 / 2 - 4 * 250 * 249 / 2
    p_in, p_out = 0.7 * 3000 / pairs_in, 0.3 * 3000 / pairs_out
    var = pairs_in * p_in * (1 - p_in) + pairs_out * p_out * (1 - p_out)
    assert abs(s["edges"] - 3000) <= Z * math.sqrt(var)
    assert meta.source["p_in"] == pytest.approx(p_in) and meta.source["p_out"] == pytest.approx(p_out)
    assert cols.node["x"].dtype == np.float32 and cols.node["y"].dtype == np.int16 and cols.sparse == {}


@pytest.mark.parametrize("n, c, h, degree, balance", [(6000, 4, 0.7, 6.0, 1.0), (4000, 3, 0.2, 10.0, 0.5),
                                                      (3000, 5, 1.0, 4.0, 1.0), (3000, 2, 0.0, 3.0, 1.0)])
def test_edges_and_homophily_match_expectation(n, c, h, degree, balance):
    cols = build_csbm(params(num_nodes=n, num_classes=c, homophily=h, avg_degree=degree, class_balance=balance), 11)
    y = cols.node["y"].astype(np.int64)
    sizes = np.bincount(y, minlength=c)
    pairs_in = float((sizes * (sizes - 1) / 2).sum())
    pairs_out = n * (n - 1) / 2 - pairs_in
    expected = n * degree / 2
    p_in, p_out = h * expected / pairs_in, (1 - h) * expected / pairs_out
    intra = int(intra_mask(cols).sum()) // 2
    inter = int(cols.num_edges[0]) // 2 - intra
    assert abs(intra - h * expected) <= Z * math.sqrt(pairs_in * p_in * (1 - p_in)) + 1e-9
    assert abs(inter - (1 - h) * expected) <= Z * math.sqrt(pairs_out * p_out * (1 - p_out)) + 1e-9
    # stored as a simple undirected graph: both directions, sorted, no loops, no duplicates
    key = cols.src.astype(np.int64) * n + cols.dst
    assert (np.diff(key) > 0).all() and (cols.src != cols.dst).all()
    a = sp.csr_matrix((np.ones(key.size), (cols.src, cols.dst)), shape=(n, n))
    assert (a != a.T).nnz == 0
    # degrees: each node's expected degree is (n_c − 1)·p_in + (n − n_c)·p_out
    deg = np.asarray(a.sum(1)).ravel()
    for k in range(c):
        mean = (sizes[k] - 1) * p_in + (n - sizes[k]) * p_out
        got = deg[y == k].mean()
        assert abs(got - mean) <= Z * math.sqrt(mean / sizes[k]) + 1e-9


def test_class_sizes_are_exact():
    for n, c, balance, want in ((1000, 4, 1.0, [250] * 4), (1001, 4, 1.0, [251, 250, 250, 250]),
                                (1000, 3, 0.5, [453, 320, 227]), (10, 2, 0.25, [8, 2])):
        # shares ∝ balance^(k/(C−1)): e.g. 1 : 0.7071 : 0.5 → 453.08, 320.38, 226.54 → largest remainder
        cols = build_csbm(params(num_nodes=n, num_classes=c, class_balance=balance, avg_degree=1.0), 0)
        assert np.bincount(cols.node["y"], minlength=c).tolist() == want


def bayes_accuracy(separation: float, classes: int) -> float:
    """P(correct) of argmax_c x·q_c with means (s/√2)·q_c and unit noise: ∫ φ(t) Φ(t + s/√2)^(C−1) dt."""
    a = separation / math.sqrt(2)
    return integrate.quad(lambda t: stats.norm.pdf(t) * stats.norm.cdf(t + a) ** (classes - 1), -12, 12)[0]


def test_features_means_spread_and_bayes_accuracy():
    n, c, d, s = 20000, 4, 32, 2.2
    cols = build_csbm(params(num_nodes=n, num_classes=c, num_features=d, feature_signal=s), 5)
    x, y = cols.node["x"].astype(np.float64), cols.node["y"].astype(np.int64)
    means = np.stack([x[y == k].mean(0) for k in range(c)])
    counts = np.bincount(y)
    residual = x - means[y]
    assert abs(residual.std() - 1.0) <= Z * math.sqrt(1 / (2 * n * d)) + 1e-3  # unit noise
    assert np.abs(np.corrcoef(residual[:, :4].T) - np.eye(4)).max() < Z / math.sqrt(n)  # isotropic
    for i in range(c):
        for j in range(i + 1, c):  # E|m̂_i − m̂_j|² = s² + d(1/n_i + 1/n_j); sd ≈ 2s·sqrt(1/n_i + 1/n_j)
            noise = 1 / counts[i] + 1 / counts[j]
            got = np.sum((means[i] - means[j]) ** 2)
            assert abs(got - (s * s + d * noise)) <= Z * 2 * s * math.sqrt(noise)
    # the docstring's Bayes accuracy (0.72 at the defaults): nearest-mean with the (well estimated) means
    centred = means - means.mean(0)
    predicted = np.argmax(x @ centred.T, axis=1)  # equal norms: argmax x·μ_c
    acc = (predicted == y).mean()
    expected = bayes_accuracy(s, c)
    assert expected == pytest.approx(0.717, abs=1e-3)
    assert abs(acc - expected) <= Z * math.sqrt(expected * (1 - expected) / n) + 0.01  # + estimation error
    # one mean aggregation over {i} ∪ N(i) separates the classes much better (docstring: 0.93 at fixed degree)
    a = sp.csr_matrix((np.ones(cols.src.size), (cols.src, cols.dst)), shape=(n, n)) + sp.eye(n)
    agg = (a @ x) / np.asarray(a.sum(1))
    agg_means = np.stack([agg[y == k].mean(0) for k in range(c)])
    agg_acc = (np.argmin(((agg[:, None, :] - agg_means[None]) ** 2).sum(-1), axis=1) == y).mean()
    assert 0.8 < agg_acc < 0.95 and agg_acc > acc + 0.1  # Poisson degrees: below the fixed-degree 0.93


def test_determinism_and_seed_dependence(tmp_path):
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        generate_dataset("csbm", "CSBM", {"num_nodes": 500}, seed, tmp_path / name)
    read = {name: (tmp_path / name / "graphs.parquet").read_bytes() for name in "abc"}
    assert read["a"] == read["b"] and read["a"] != read["c"]
    assert (tmp_path / "a" / "meta.json").read_text() == (tmp_path / "b" / "meta.json").read_text()


def test_100k_nodes_in_seconds():
    start = time.perf_counter()
    cols = build_csbm(params(num_nodes=100000), 1)
    elapsed = time.perf_counter() - start
    assert cols.num_nodes[0] == 100000 and abs(cols.num_edges[0] / 2 - 300000) < Z * math.sqrt(300000)
    assert elapsed < 20, elapsed  # ~0.2 s on an idle core


def test_parameter_checks():
    assert params(avg_degree=3)["avg_degree"] == 3.0  # integers accepted for real parameters
    with pytest.raises(ConfigError, match="p.avg_degree: expected a non-negative number, got -1"):
        params(avg_degree=-1)
    with pytest.raises(ConfigError, match="p.feature_signal: expected a non-negative number"):
        params(feature_signal="strong")
    with pytest.raises(ConfigError, match="p.homophily: expected a probability in"):
        params(homophily=1.5)
    with pytest.raises(ConfigError, match="p.num_features: 3 is fewer than num_classes"):
        params(num_features=3)
    with pytest.raises(ConfigError, match="p.avg_degree: 200.0 with homophily 0.7 needs edge probabilities"):
        params(num_nodes=100, avg_degree=200.0)
    with pytest.raises(ConfigError, match="p.class_balance: must be > 0"):
        params(class_balance=0.0)
    with pytest.raises(ConfigError, match="p.num_classes: need at least 2"):
        params(num_classes=1)
