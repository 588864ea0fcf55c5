"""CYCLES: does a graph contain a simple cycle of length 6? (Loukas, ICLR 2020; docs/datasets.md#cycles).

The original generator (Loukas / Vignac, the ``datasets_kcycle_k=6_nsamples=10000.pickle`` used through cvignac/SMP)
is not public (cvignac/SMP only splits the downloaded pickle), nor is its generative model or seed. This is **our
own generator**, built to match what is known of the released k = 6, n = 56 set: 37–65 nodes, 48.96 nodes and
87.84 directed edges per graph on average (Dwivedi et al., Table 2), maximum degree 7, sparse and mostly
disconnected graphs, exactly balanced classes, splits 9,000 / 1,000 / 10,000 (train / val / test, stored in that
order, ``default_split`` "given").

Generative model, per graph:

* nodes n ∈ {lo..hi} = ``num_nodes`` (37..65) with linearly decreasing weights w(n) = 1 − t·(n − lo)/(hi − lo),
  t = ``size_tilt`` = 0.58, so E[n] = Σ n·w(n) / Σ w(n) = 48.958 (the paper's 48.96) while the whole range occurs;
* edges m ~ Binomial(2n, r/2), r = ``edge_ratio`` = 0.897, so E[m | n] = r·n and E[m] = r·E[n] = 43.916 undirected,
  87.83 directed edges (paper: 87.84); Var[m] = E[n]·r·(1 − r/2) + r²·Var[n];
* negative (label 0): a random 6-cycle-free graph with m edges — node pairs are proposed uniformly at random and
  an edge {u, v} is accepted unless it exists, would give a node more than ``max_degree`` (7) neighbours, or
  closes a 6-cycle (a simple path of exactly 5 edges joins u and v; exact depth-bounded DFS,
  :func:`closes_six_cycle`). Every 6-cycle of the final graph would contain a last-added edge whose addition was
  refused, so the graph has none;
* positive (label 1): the same process with m − 6 edges, then a 6-cycle planted on 6 distinct random nodes of
  degree ≤ max_degree − 2 (cycle edges already present are kept), then random edges under the degree cap only
  until the graph has m edges (max(m, 6): with the defaults m < 6 has probability < 1e-20). Both classes thus share
  the node- and edge-count distribution and differ only by the planted cycle (and the 6-cycles it closes).

After generation every graph is re-checked with an independent exact counter of simple 6-cycles
(:func:`count_six_cycles`, closed-form matrix expressions, batched): negatives must count 0, positives ≥ 1, else an
error is raised (a bug, never a resampling). If fewer than m edges can be placed (never seen with the defaults),
the graph keeps the edges placed.

Labels and seeding. Graphs come in pairs: pair j of split s (s = 1, 2, 3 for train, val, test) draws from
``SeedSequence(seed, spawn_key=(s, j))`` — first a coin for which of its two graphs is the positive, then the first
graph, then the second. So every split holds exactly half positives (one more of either class when its size is
odd), a split's graphs do not depend on the other splits' sizes, and a smaller ``num_train`` gives exactly the first
``num_train`` graphs of a larger one: the benchmark's ``num_train_data`` sweep {200, 500, 1000, 5000} (first graphs
of the 9,000 train graphs) is ``num_train`` = 200, ... with the same seed; val and test stay identical.

Columns: both directions of every undirected edge, row-major per graph; node ``x`` = 1.0 float32 (n, 1), edge
``edge_attr`` = 1.0 float32 (E, 1), graph ``y`` int16 (1 = contains a simple 6-cycle). Positional encodings replace
the node input (``pe_usage`` "replace").
"""

from __future__ import annotations

import numpy as np

from gnnbench.data.generators.base import Generator
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns
from gnnbench.errors import ConfigError

SPLITS = ("train", "val", "test")
CYCLE = 6
VERIFY_BATCH = 256  # graphs per batched exact re-check (memory only; does not change the data)


def _split_sizes(params: dict) -> dict[str, int]:
    return {s: params[f"num_{s}"] for s in SPLITS}


# ------------------------------------------------------------------------------------------ size distribution


def node_count_pmf(params: dict) -> tuple[np.ndarray, np.ndarray]:
    """Support (node counts) and probabilities of n: weights 1 − t·(n − lo)/(hi − lo), normalised."""
    lo, hi = params["num_nodes"]
    support = np.arange(lo, hi + 1)
    weights = 1.0 - params["size_tilt"] * (support - lo) / max(hi - lo, 1)
    return support, weights / weights.sum()


def expected_counts(params: dict) -> dict[str, float]:
    """Analytic mean and variance of the node count and of the (undirected) edge count per graph."""
    support, prob = node_count_pmf(params)
    r = params["edge_ratio"]
    mean_n = float((support * prob).sum())
    var_n = float((support**2 * prob).sum()) - mean_n**2
    # m | n ~ Binomial(2n, r/2): E[m] = r·E[n]; law of total variance.
    var_m = mean_n * r * (1 - r / 2) + r * r * var_n
    return {"mean_nodes": mean_n, "var_nodes": var_n, "mean_edges": r * mean_n, "var_edges": var_m}


# -------------------------------------------------------------------------------------------- exact checks


def closes_six_cycle(adj: list[set], u: int, v: int) -> bool:
    """True iff a simple path of exactly 5 edges joins u and v (so adding edge u–v would close a simple 6-cycle).

    Depth-bounded DFS u–a–b–c–d–v with u, a, b, c, d, v pairwise distinct.
    """
    nv = adj[v]
    if not nv or not adj[u]:
        return False
    for a in adj[u]:
        if a == v:
            continue
        for b in adj[a]:
            if b == u or b == v:
                continue
            for c in adj[b]:
                if c == u or c == v or c == a:
                    continue
                for d in adj[c]:
                    if d != u and d != a and d != b and d in nv:  # d == v is excluded: v ∉ adj[v]
                        return True
    return False


def count_six_cycles(adj: np.ndarray) -> np.ndarray:
    """Number of simple 6-cycles of each graph of a batch of 0/1 symmetric adjacency matrices (B, n, n), no loops.

    A simple 6-cycle is a pair of internally disjoint simple 3-paths u–a–b–w, u–c–d–w between opposite nodes;
    every cycle gives 12 ordered (u, w, path, path) choices. With S = A², d the degrees, the number of 3-paths is
    P_uw = (A³)_uw − A_uw(d_u + d_w − 1) (u ≠ w), and by inclusion–exclusion over shared inner nodes
    (a = c, b = d, a = d, b = c; only {a=c, b=d} and {a=d, b=c} can hold together):
    12·C6 = Σ_{u≠w} (P² + P) − 2·X1 − 2·X3 + X34 with, sums over a ≠ w where marked,
    X1 = Σ_{a≠w} S_aw²(d_a − A_aw) − 2 Σ_{a≠w} S_aw² + Σ_{a≠w} S_aw            (paths sharing their first inner node)
    X3 = Σ_a (Σ_u A_ua S_ua)² − Σ A∘S² − 2 Σ A∘S² + Σ A∘S                     (first inner node of one = last of other)
    X34 = Σ_ab A_ab (S_ab² − S_ab)                                            (the second path reverses the middle).
    Exact in float64 for these sizes.
    """
    a = np.asarray(adj, dtype=np.float64)
    n = a.shape[-1]
    eye = np.eye(n, dtype=bool)
    s = a @ a
    deg = a.sum(-1)
    p = s @ a - a * (deg[:, :, None] + deg[:, None, :] - 1)
    p[:, eye] = 0.0
    term_p = (p * p + p).sum((1, 2))
    s_off = np.where(eye, 0.0, s)
    s2 = s_off * s_off
    x1 = (s2 * (deg[:, :, None] - a)).sum((1, 2)) - 2 * s2.sum((1, 2)) + s_off.sum((1, 2))
    as_ = a * s
    x3 = (as_.sum(1) ** 2).sum(1) - 3 * (as_ * s).sum((1, 2)) + as_.sum((1, 2))
    x34 = (a * (s * s - s)).sum((1, 2))
    total = term_p - 2 * x1 - 2 * x3 + x34
    counts = np.rint(total / 12).astype(np.int64)
    if not np.allclose(counts * 12, total):
        raise AssertionError("6-cycle count is not an integer: the counter is wrong")
    return counts


# --------------------------------------------------------------------------------------------- generation


def _add_random_edges(rng: np.random.Generator, adj: list[set], target: int, max_degree: int, forbid_c6: bool,
                      edges: int) -> int:
    """Add uniformly proposed edges until ``target`` edges; returns the edge count reached.

    Proposals come in blocks of random pairs; after 64·n consecutive refusals every remaining pair is tried once
    in random order (so the loop ends even when no edge can be added).
    """
    n = len(adj)
    refused = 0

    def acceptable(u: int, v: int) -> bool:
        return not (u == v or v in adj[u] or len(adj[u]) >= max_degree or len(adj[v]) >= max_degree
                    or (forbid_c6 and closes_six_cycle(adj, u, v)))

    while edges < target:
        if refused <= 64 * n:
            for u, v in rng.integers(0, n, size=(4 * (target - edges) + 8, 2)).tolist():
                if acceptable(u, v):
                    adj[u].add(v)
                    adj[v].add(u)
                    edges, refused = edges + 1, 0
                    if edges == target:
                        break
                else:
                    refused += 1
                    if refused > 64 * n:
                        break
        else:  # exhaustive pass over all pairs in random order
            i, j = np.triu_indices(n, 1)
            order = rng.permutation(i.size)
            placed = False
            for u, v in zip(i[order].tolist(), j[order].tolist(), strict=True):
                if acceptable(u, v):
                    adj[u].add(v)
                    adj[v].add(u)
                    edges, placed = edges + 1, True
                    if edges == target:
                        break
            if not placed:
                break  # no edge can be added
    return edges


def _one_graph(rng: np.random.Generator, positive: bool, params: dict, support: np.ndarray,
               prob: np.ndarray) -> list[set]:
    max_degree = params["max_degree"]
    n = int(rng.choice(support, p=prob))
    m = int(rng.binomial(2 * n, params["edge_ratio"] / 2))
    adj: list[set] = [set() for _ in range(n)]
    if not positive:
        _add_random_edges(rng, adj, m, max_degree, True, 0)
        return adj
    edges = _add_random_edges(rng, adj, max(m - CYCLE, 0), max_degree, True, 0)
    eligible = np.flatnonzero(np.array([len(x) for x in adj]) <= max_degree - 2)
    ring = rng.permutation(eligible)[:CYCLE].tolist()
    if len(ring) < CYCLE:
        raise AssertionError("no 6 nodes of low degree to plant a cycle on")
    for k in range(CYCLE):
        u, v = ring[k], ring[(k + 1) % CYCLE]
        if v not in adj[u]:
            adj[u].add(v)
            adj[v].add(u)
            edges += 1
    _add_random_edges(rng, adj, max(m, CYCLE), max_degree, False, edges)
    return adj


def _split_graphs(params: dict, seed: int, split_code: int, count: int) -> tuple[list[list[set]], np.ndarray]:
    support, prob = node_count_pmf(params)
    graphs, labels = [], np.empty(count, dtype=np.int16)
    for pair in range((count + 1) // 2):
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(split_code, pair)))
        first_positive = bool(rng.integers(0, 2))
        for k in range(min(2, count - 2 * pair)):
            positive = first_positive if k == 0 else not first_positive
            graphs.append(_one_graph(rng, positive, params, support, prob))
            labels[2 * pair + k] = positive
    return graphs, labels


def _to_columns(graphs: list[list[set]], labels: np.ndarray) -> GraphColumns:
    num_nodes = np.array([len(g) for g in graphs], dtype=np.int64)
    src_parts, dst_parts = [], []
    for g in graphs:
        pairs = sorted((u, v) for u, nbrs in enumerate(g) for v in nbrs)  # row-major, both directions
        arr = np.array(pairs, dtype=np.int32).reshape(-1, 2)
        src_parts.append(arr[:, 0])
        dst_parts.append(arr[:, 1])
    num_edges = np.array([len(s) for s in src_parts], dtype=np.int64)
    total = int(num_edges.sum())
    return GraphColumns(
        num_nodes=num_nodes, num_edges=num_edges,
        src=np.concatenate(src_parts) if graphs else np.zeros(0, np.int32),
        dst=np.concatenate(dst_parts) if graphs else np.zeros(0, np.int32),
        node={"x": np.ones((int(num_nodes.sum()), 1), dtype=np.float32)},
        edge={"edge_attr": np.ones((total, 1), dtype=np.float32)},
        graph={"y": labels},
    )


def dense_adjacency(columns: GraphColumns, graph_ids: np.ndarray) -> np.ndarray:
    """Padded 0/1 adjacency (B, n_max, n_max) float64 of the given graphs."""
    n_max = int(columns.num_nodes[graph_ids].max())
    adj = np.zeros((len(graph_ids), n_max, n_max))
    eptr = columns.edge_ptr
    for row, g in enumerate(graph_ids):  # per-graph slicing only; the counting itself is batched
        adj[row, columns.src[eptr[g]:eptr[g + 1]], columns.dst[eptr[g]:eptr[g + 1]]] = 1.0
    return adj


def verify_labels(columns: GraphColumns) -> None:
    """Raise AssertionError unless every label agrees with the exact matrix 6-cycle count."""
    y = columns.graph["y"]
    for start in range(0, columns.num_graphs, VERIFY_BATCH):
        ids = np.arange(start, min(start + VERIFY_BATCH, columns.num_graphs))
        has = count_six_cycles(dense_adjacency(columns, ids)) > 0
        bad = ids[has != (y[ids] == 1)]
        if bad.size:
            raise AssertionError(f"CYCLES graphs {bad[:10].tolist()} have labels that disagree with their 6-cycles")


def _build(params: dict, seed: int) -> GraphColumns:
    parts = []
    for split_code, split in enumerate(SPLITS, start=1):
        graphs, labels = _split_graphs(params, seed, split_code, params[f"num_{split}"])
        part = _to_columns(graphs, labels)
        verify_labels(part)
        parts.append(part)
    return GraphColumns.concat(parts)


def _describe(name: str, params: dict, seed: int) -> DatasetMeta:
    sizes = _split_sizes(params)
    return DatasetMeta(
        name=name, task="graph_classification", loss="cross_entropy", metric="accuracy", num_outputs=2,
        num_graphs=sum(sizes.values()), node_features=FeatureSpec("continuous", 1),
        edge_features=FeatureSpec("continuous", 1), pe_usage="replace", split_sizes=sizes,
        source={"generator": "cycles", "params": params, "seed": seed, "cycle_length": CYCLE,
                "expected": expected_counts(params)},
    )


def _check(params: dict, where: str) -> None:
    if params["num_nodes"][0] < CYCLE:
        raise ConfigError(f"{where}.num_nodes: graphs need at least {CYCLE} nodes to hold a 6-cycle, got "
                          f"{params['num_nodes']}; raise the lower bound")
    if params["max_degree"] < 2:
        raise ConfigError(f"{where}.max_degree: a cycle needs degree 2, got {params['max_degree']}; raise it")


CYCLES = Generator(
    name="cycles",
    description="CYCLES: does a sparse random graph contain a simple 6-cycle? (graph classification)",
    defaults={"num_train": 9000, "num_val": 1000, "num_test": 10000, "num_nodes": [37, 65], "size_tilt": 0.58,
              "edge_ratio": 0.897, "max_degree": 7},
    default_split={"scheme": "given"},
    describe=_describe,
    build=_build,
    check=_check,
)
