"""Contextual stochastic block model (CSBM): an offline, seeded stand-in for a citation graph (node classification).

The model of Deshpande et al., *Contextual Stochastic Block Models* (NeurIPS 2018). One graph with N = ``num_nodes``
nodes in C = ``num_classes`` classes:

* **Classes.** Class c gets a share π_c ∝ ``class_balance`` ** (c / (C − 1)) of the nodes (``class_balance`` = 1:
  equal classes; b < 1: sizes fall geometrically from class 0 to class C − 1, the smallest/largest ratio being b).
  Sizes n_c are the shares rounded by largest remainders (exact, not random); which node gets which class is a
  uniform random permutation.
* **Features.** x_i = μ_{y_i} + ε_i, ε_i ~ N(0, I_d), d = ``num_features`` ≥ C, float32, dense. The class means are
  a regular simplex: μ_c = (s/√2)·q_c with q_1..q_C random orthonormal vectors (QR of a Gaussian matrix), so every
  two means are exactly s = ``feature_signal`` noise standard deviations apart.
* **Edges.** Undirected, simple, no self loops. A pair inside class c is joined with probability p_in, a pair across
  two classes with probability p_out, independently; p_in, p_out are set so that the expected number of edges is
  M = N·``avg_degree``/2 and the expected fraction of them inside a class is h = ``homophily``:
  p_in = h·M / Σ_c C(n_c, 2), p_out = (1 − h)·M / Σ_{c<c'} n_c·n_c' (a ConfigError when one exceeds 1).
  E[edges] = M exactly, Var = Σ_blocks P·p(1 − p) (P = pairs of the block).

Sampling is vectorised per block of classes (C(C+1)/2 blocks): the block's edge count is Binomial(P, p) and that
many distinct pair ids are drawn without replacement and decoded to node pairs — 100,000 nodes take well under a
second. All draws come from ``numpy.random.default_rng(seed)`` in a fixed order (labels, mean directions, noise,
blocks), so a seed gives byte-identical files. Stored like the other single-graph datasets: ``src``/``dst`` both
directions of every edge sorted by (src, dst), node ``y`` int16, dense node ``x`` float32 (``FeatureSpec``
continuous, width d).

**Why the defaults** (N 1,000, C 4, d 32, average degree 6, h 0.7, s 2.2): they make the "Pitfalls" comparison
meaningful on a 2-core machine — features alone are informative but weak, the graph adds a lot, and structure
alone sits in between (the order GCN > LabelProp > MLP of the paper's CORA row).

* Features alone: with equal classes the Bayes classifier picks argmax_c x·q_c, correct with probability
  ∫ φ(t) Φ(t + s/√2)^{C−1} dt = 0.72 for s = 2.2, C = 4 (chance 0.25). A model trained on 20 nodes per class
  estimates 4 means in 32 dimensions and lands well below that: logistic regression / a 64-unit MLP ≈ 0.56–0.58.
* Structure + features: one mean aggregation over {i} ∪ N(i) (degree k) averages k + 1 independent noises (std
  /√(k+1)) while the class-mean difference shrinks only to (1 + k·(h − (1 − h)/(C − 1)))/(k + 1) of itself: an
  effective separation s·(1 + k·(h − (1−h)/(C−1)))/√(k + 1) = 1.74·s at k = 6, Bayes accuracy 0.93 after one
  layer (Poisson degrees, cross-class neighbours and estimated weights lower it) — a 2-layer GCN ≈ 0.90.
* Structure alone: 70 % of the edges stay inside a class, so label propagation from 20 labels per class on a graph
  with mean degree 6 reaches ≈ 0.75 (chance 0.25).

(The ≈ accuracies: 5 seeds, 20 / 30 train / val nodes per class, validation-loss model selection;
docs/datasets.md#csbm.)
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gnnbench.data.generators.base import Generator, NonNegative
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns
from gnnbench.data.transductive import node_classification_meta, to_graph_columns
from gnnbench.errors import ConfigError


def class_sizes(num_nodes: int, num_classes: int, class_balance: float) -> np.ndarray:
    """n_c: shares ∝ class_balance ** (c / (C − 1)), rounded by largest remainders (sum = num_nodes)."""
    exponent = np.arange(num_classes) / max(num_classes - 1, 1)
    share = class_balance ** exponent
    share = share / share.sum() * num_nodes
    sizes = np.floor(share).astype(np.int64)
    rest = num_nodes - int(sizes.sum())
    sizes[np.argsort(-(share - sizes), kind="stable")[:rest]] += 1
    return sizes


def edge_probabilities(sizes: np.ndarray, avg_degree: float, homophily: float) -> tuple[float, float]:
    """(p_in, p_out) giving E[edges] = N·avg_degree/2 with a fraction ``homophily`` inside classes."""
    n = int(sizes.sum())
    expected = n * avg_degree / 2
    pairs_in = float((sizes * (sizes - 1) // 2).sum())
    pairs_out = float(n * (n - 1) // 2) - pairs_in
    p_in = homophily * expected / pairs_in if pairs_in else (0.0 if homophily == 0 else np.inf)
    p_out = (1 - homophily) * expected / pairs_out if pairs_out else (0.0 if homophily == 1 else np.inf)
    return p_in, p_out


def _triangle_pairs(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode pair ids k ∈ [0, n(n−1)/2) to (row, col) with col < row: k = row(row−1)/2 + col."""
    row = np.floor((1 + np.sqrt(1 + 8 * ids.astype(np.float64))) / 2).astype(np.int64)
    row -= row * (row - 1) // 2 > ids  # float rounding guards
    row += (row + 1) * row // 2 <= ids
    return row, ids - row * (row - 1) // 2


def sample_edges(rng: np.random.Generator, members: list[np.ndarray], p_in: float,
                 p_out: float) -> tuple[np.ndarray, np.ndarray]:
    """Undirected edges (u, v), u ≠ v, of the block model; each pair at most once."""
    us, vs = [], []
    for a, nodes_a in enumerate(members):
        for b in range(a, len(members)):
            nodes_b = members[b]
            pairs = nodes_a.size * (nodes_a.size - 1) // 2 if a == b else nodes_a.size * nodes_b.size
            p = p_in if a == b else p_out
            if pairs == 0 or p == 0:
                continue
            count = int(rng.binomial(pairs, p))
            ids = rng.choice(pairs, size=count, replace=False)
            if a == b:
                row, col = _triangle_pairs(ids)
                us.append(nodes_a[row])
                vs.append(nodes_a[col])
            else:
                us.append(nodes_a[ids // nodes_b.size])
                vs.append(nodes_b[ids % nodes_b.size])
    if not us:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(us), np.concatenate(vs)


def build_csbm(params: dict, seed: int) -> GraphColumns:
    """One CSBM graph (module docstring) drawn from ``default_rng(seed)``, as graph columns."""
    n, c, d = params["num_nodes"], params["num_classes"], params["num_features"]
    rng = np.random.default_rng(seed)
    sizes = class_sizes(n, c, params["class_balance"])
    labels = rng.permutation(np.repeat(np.arange(c), sizes))
    directions, _ = np.linalg.qr(rng.standard_normal((d, c)))  # (d, C) orthonormal columns
    means = params["feature_signal"] / np.sqrt(2) * directions.T  # (C, d): pairwise distance = feature_signal
    x = (means[labels] + rng.standard_normal((n, d))).astype(np.float32)
    p_in, p_out = edge_probabilities(sizes, params["avg_degree"], params["homophily"])
    members = [np.flatnonzero(labels == k) for k in range(c)]
    u, v = sample_edges(rng, members, p_in, p_out)
    adjacency = sp.csr_matrix((np.ones(2 * u.size, np.float32), (np.concatenate([u, v]), np.concatenate([v, u]))),
                              shape=(n, n))
    return to_graph_columns(adjacency, x, labels)


def describe(name: str, params: dict, seed: int) -> DatasetMeta:
    """The dataset's description, with the class sizes and edge probabilities the parameters imply."""
    sizes = class_sizes(params["num_nodes"], params["num_classes"], params["class_balance"])
    p_in, p_out = edge_probabilities(sizes, params["avg_degree"], params["homophily"])
    plain = {k: float(v) if isinstance(v, float) else v for k, v in params.items()}  # NonNegative → float
    source = {"generator": "csbm", "seed": seed, "params": plain, "p_in": p_in, "p_out": p_out,
              "class_sizes": sizes.tolist()}
    meta = node_classification_meta(name, params["num_classes"], FeatureSpec("continuous", params["num_features"]),
                                    source)
    # what a suite checks a split against before the graph is drawn (the keys of transductive_statistics' "all")
    meta.statistics = {"all": {"nodes": params["num_nodes"], "class_sizes": sizes.tolist(), "unlabelled_nodes": 0}}
    return meta


def _check(params: dict, where: str) -> None:
    if params["num_classes"] < 2:
        raise ConfigError(f"{where}.num_classes: need at least 2 classes, got {params['num_classes']}")
    if params["num_features"] < params["num_classes"]:
        raise ConfigError(f"{where}.num_features: {params['num_features']} is fewer than num_classes "
                          f"({params['num_classes']}); the class means need one direction each")
    if params["num_nodes"] < params["num_classes"]:
        raise ConfigError(f"{where}.num_nodes: fewer nodes than classes")
    if params["class_balance"] <= 0:
        raise ConfigError(f"{where}.class_balance: must be > 0 (1 = equal classes), got {params['class_balance']}")
    sizes = class_sizes(params["num_nodes"], params["num_classes"], params["class_balance"])
    p_in, p_out = edge_probabilities(sizes, params["avg_degree"], params["homophily"])
    if p_in > 1 or p_out > 1:
        raise ConfigError(f"{where}.avg_degree: {params['avg_degree']} with homophily {params['homophily']} needs "
                          f"edge probabilities {p_in:.3g} inside / {p_out:.3g} across classes, above 1; lower "
                          "avg_degree or move homophily away from 0 and 1")


CSBM = Generator(
    name="csbm",
    description="Contextual stochastic block model: one graph, Gaussian class-dependent features, homophilous edges "
                "(offline node classification)",
    defaults={"num_nodes": 1000, "num_classes": 4, "num_features": 32, "avg_degree": NonNegative(6.0),
              "homophily": 0.7, "feature_signal": NonNegative(2.2), "class_balance": 1.0},
    default_split={"scheme": "random_per_class", "train_per_class": 20, "val_per_class": 30},
    describe=describe,
    build=build_csbm,
    check=_check,
)
