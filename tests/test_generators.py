"""Dataset generators (SBM PATTERN / CLUSTER, CSL; docs/datasets.md#sbm-pattern-and-cluster, #csl).

Every dataset is made through ``gnnbench.pipeline.generate_dataset`` and read back from its files, so the
tests cover generator, store and metadata together. Sizes are reduced through the parameters; statistical
checks compare with analytic expectations within 5 standard errors (seeds are fixed, so the tests are
deterministic; the tolerances say how far an unbiased generator could plausibly land).
"""

from __future__ import annotations

import hashlib
import json
from math import comb

import networkx as nx
import numpy as np
import pytest
from scipy import stats

from gnnbench.data.meta import dataset_statistics, read_meta
from gnnbench.data.store import GraphColumns, read_graph_columns
from gnnbench.errors import ConfigError
from gnnbench.pipeline import generate_dataset

Z = 5.0  # tolerance in standard errors for statistical checks

# Community sizes ~ U{5..34}: mean, variance, E[C(c, 2)].
C_LOW, C_HIGH = 5, 34
C_MEAN = (C_LOW + C_HIGH) / 2  # 19.5
C_VAR = ((C_HIGH - C_LOW + 1) ** 2 - 1) / 12  # 74.9167
C_PAIRS = (C_VAR + C_MEAN**2 - C_MEAN) / 2  # E[c (c - 1) / 2] = 217.83

PATTERN_PARAMS = {"num_train": 200, "num_val": 100, "num_test": 100, "num_patterns": 20}
CLUSTER_PARAMS = {"num_train": 400, "num_val": 100, "num_test": 100}
SKIPS = (2, 3, 4, 5, 6, 9, 11, 12, 13, 16)
SPLITS = ("train", "val", "test")  # storage order of the splits (meta.json stores split_sizes key-sorted)


# --------------------------------------------------------------------------------------------- helpers


def _make(tmp_path_factory, generator: str, params: dict | None, seed: int, name: str = "ds"):
    out = tmp_path_factory.mktemp(f"{generator}_{seed}")
    returned = generate_dataset(generator, name, params, seed, out)
    meta = read_meta(out)
    assert meta == returned  # what was written is what was returned
    return out, meta, read_graph_columns(out / "graphs.parquet")


def _edge_graph(cols: GraphColumns) -> np.ndarray:
    return np.repeat(np.arange(cols.num_graphs), cols.num_edges)


def _global_edges(cols: GraphColumns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Graph id of every edge and its endpoints as global node ids (local index + node offset)."""
    g = _edge_graph(cols)
    offset = cols.node_ptr[:-1][g]
    return g, cols.src.astype(np.int64) + offset, cols.dst.astype(np.int64) + offset


def _node_graph(cols: GraphColumns) -> np.ndarray:
    return np.repeat(np.arange(cols.num_graphs), cols.num_nodes)


def assert_simple_undirected_row_major(cols: GraphColumns) -> None:
    """Inside graph bounds, no self loops, no duplicates, every u→v has v→u, sorted by (src, dst) per graph."""
    g, u, v = _global_edges(cols)
    n = cols.num_nodes[g]
    assert (cols.src >= 0).all() and (cols.dst >= 0).all() and (cols.src < n).all() and (cols.dst < n).all()
    assert not (u == v).any(), "self loop"
    total = int(cols.num_nodes.sum())
    key = u * total + v  # increasing in (graph, src, dst) because global ids increase with the graph
    assert (np.diff(key) > 0).all(), "edges not strictly row-major within a graph (unsorted or duplicate)"
    assert np.array_equal(np.sort(v * total + u), key), "an edge u→v lacks its reverse v→u"


def _dense(cols: GraphColumns, i: int) -> np.ndarray:
    graph = cols.graph_at(i)
    adj = np.zeros((graph["num_nodes"],) * 2, dtype=np.int64)
    np.add.at(adj, (graph["src"], graph["dst"]), 1)
    return adj


def _nx_graph(cols: GraphColumns, i: int, nodes: np.ndarray | None = None) -> nx.Graph:
    """Graph ``i`` (or its subgraph induced by local ``nodes``, relabelled 0..k-1) with feature ``x``."""
    graph = cols.graph_at(i)
    keep = np.arange(graph["num_nodes"]) if nodes is None else nodes
    index = {int(a): k for k, a in enumerate(keep)}
    out = nx.Graph()
    for a, k in index.items():
        out.add_node(k, x=int(graph["x"][a]))
    out.add_edges_from((index[a], index[b]) for a, b in zip(graph["src"].tolist(), graph["dst"].tolist(), strict=True)
                       if a in index and b in index)
    return out


def _split_ranges(meta) -> dict[str, np.ndarray]:
    out, start = {"all": np.arange(meta.num_graphs)}, 0
    for name in SPLITS:
        out[name] = np.arange(start, start + meta.split_sizes[name])
        start += meta.split_sizes[name]
    return out


def _within_z(observed: float, expected: float, se: float) -> bool:
    return abs(observed - expected) <= Z * se


def _subset(cols: GraphColumns, graph_ids: np.ndarray) -> dict[str, np.ndarray]:
    """The arrays of a contiguous range of graphs (for exact comparisons between datasets)."""
    n0, n1 = cols.node_ptr[graph_ids[0]], cols.node_ptr[graph_ids[-1] + 1]
    e0, e1 = cols.edge_ptr[graph_ids[0]], cols.edge_ptr[graph_ids[-1] + 1]
    return {"num_nodes": cols.num_nodes[graph_ids], "num_edges": cols.num_edges[graph_ids],
            "src": cols.src[e0:e1], "dst": cols.dst[e0:e1], **{k: v[n0:n1] for k, v in cols.node.items()}}


def _assert_same_graphs(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].dtype == b[key].dtype and np.array_equal(a[key], b[key]), key


# --------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def pattern(tmp_path_factory):
    return _make(tmp_path_factory, "sbm_pattern", PATTERN_PARAMS, 11, "PATTERN")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    return _make(tmp_path_factory, "sbm_cluster", CLUSTER_PARAMS, 12, "CLUSTER")


@pytest.fixture(scope="module")
def csl(tmp_path_factory):
    return _make(tmp_path_factory, "csl", None, 13, "CSL")


@pytest.fixture(scope="module")
def pattern_info(pattern):
    """Per graph: instance, pattern size, pattern-internal undirected edges, pattern signature."""
    _, meta, cols = pattern
    num_patterns = meta.source["params"]["num_patterns"]
    instance = np.concatenate([np.arange(n) * num_patterns // n for n in map(meta.split_sizes.get, SPLITS)])
    y = cols.node["y"].astype(np.int64)
    size = np.bincount(_node_graph(cols), weights=y, minlength=cols.num_graphs).astype(np.int64)
    g, u, v = _global_edges(cols)
    inside = (y[u] == 1) & (y[v] == 1)
    internal = np.bincount(g[inside], minlength=cols.num_graphs) // 2
    degree = np.bincount(u[inside], minlength=y.size)
    signature = []
    for i in range(cols.num_graphs):
        n0, n1 = cols.node_ptr[i], cols.node_ptr[i + 1]
        mask = y[n0:n1] == 1
        signature.append((tuple(np.sort(degree[n0:n1][mask])), tuple(np.sort(cols.node["x"][n0:n1][mask]))))
    return {"instance": instance, "size": size, "internal": internal, "signature": signature}


# ----------------------------------------------------------------------------------- determinism / seeding


DETERMINISM_CASES = [
    ("sbm_pattern", {"num_train": 40, "num_val": 20, "num_test": 20, "num_patterns": 4}),
    ("sbm_cluster", {"num_train": 40, "num_val": 20, "num_test": 20}),
    ("csl", None),
]


@pytest.mark.parametrize(("generator", "params"), DETERMINISM_CASES, ids=[c[0] for c in DETERMINISM_CASES])
def test_same_seed_gives_byte_identical_files_and_other_seed_other_graphs(tmp_path, generator, params):
    for folder, seed in (("a", 5), ("b", 5), ("c", 6)):
        generate_dataset(generator, "ds", params, seed, tmp_path / folder)
    for file in ("graphs.parquet", "meta.json"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes(), file
    assert (tmp_path / "a" / "graphs.parquet").read_bytes() != (tmp_path / "c" / "graphs.parquet").read_bytes()
    # The other seed changes the graphs themselves, not just the file's bytes.
    a, c = (read_graph_columns(tmp_path / f / "graphs.parquet") for f in ("a", "c"))
    assert not (np.array_equal(a.num_edges, c.num_edges) and np.array_equal(a.src, c.src)
                and np.array_equal(a.dst, c.dst))
    meta = json.loads((tmp_path / "c" / "meta.json").read_text())
    assert meta["source"]["seed"] == 6 and meta["source"]["generator"] == generator
    assert meta["checksum"] == hashlib.sha256((tmp_path / "c" / "graphs.parquet").read_bytes()).hexdigest()


@pytest.mark.parametrize("generator", ["sbm_pattern", "sbm_cluster"])
def test_val_and_test_graphs_do_not_depend_on_num_train(tmp_path, generator):
    extra = {"num_patterns": 5} if generator == "sbm_pattern" else {}
    sizes = {"num_val": 150, "num_test": 30}  # val spans two chunks of 128 graphs
    datasets = []
    for num_train in (100, 300):
        out = tmp_path / str(num_train)
        generate_dataset(generator, "ds", {"num_train": num_train, **sizes, **extra}, 3, out)
        datasets.append((num_train, read_graph_columns(out / "graphs.parquet")))
    (t0, a), (t1, b) = datasets
    for offset, size in ((0, sizes["num_val"]), (sizes["num_val"], sizes["num_test"])):
        _assert_same_graphs(_subset(a, t0 + offset + np.arange(size)), _subset(b, t1 + offset + np.arange(size)))
    assert a.num_graphs == 280 and b.num_graphs == 480


# --------------------------------------------------------------------------------------------- errors


CONFIG_ERRORS = [
    ("sbm_pattern", {"num_trian": 10}, "num_trian"),
    ("sbm_cluster", {"p": 1.5}, "p"),
    ("sbm_cluster", {"q": -0.1}, "q"),
    ("sbm_cluster", {"community_size": [5]}, "community_size"),
    ("sbm_pattern", {"community_size": [10, 5]}, "community_size"),
    ("sbm_pattern", {"pattern_size": [0, 5]}, "pattern_size"),
    ("sbm_pattern", {"community_size": [5.0, 10]}, "community_size"),
    ("sbm_cluster", {"num_train": -1}, "num_train"),
    ("sbm_cluster", {"num_train": 10.0}, "num_train"),
    ("sbm_cluster", {"num_val": True}, "num_val"),
    ("sbm_pattern", {"q_pattern": "0.5"}, "q_pattern"),
    ("csl", {"copies": 3}, "copies"),
    ("csl", {"copies_per_class": "15"}, "copies_per_class"),
]


@pytest.mark.parametrize(("generator", "params", "key"), CONFIG_ERRORS,
                         ids=[f"{g}-{k}-{i}" for i, (g, _, k) in enumerate(CONFIG_ERRORS)])
def test_bad_params_raise_config_error_naming_the_key(tmp_path, generator, params, key):
    with pytest.raises(ConfigError) as info:
        generate_dataset(generator, "mydata", params, 0, tmp_path / "out")
    assert f"datasets.mydata.params.{key}:" in str(info.value)
    assert not (tmp_path / "out" / "graphs.parquet").exists()
    assert not (tmp_path / "out" / "meta.json").exists()


ZERO_VALUED = [
    ("sbm_pattern", {"num_patterns": 0}, "num_patterns"),
    ("sbm_pattern", {"vocab_size": 0}, "vocab_size"),
    ("sbm_cluster", {"num_communities": 0}, "num_communities"),
    ("csl", {"copies_per_class": 0}, "copies_per_class"),
]


@pytest.mark.parametrize(("generator", "params", "key"), ZERO_VALUED, ids=[k for _, _, k in ZERO_VALUED])
def test_zero_counts_raise_config_error_naming_the_key(tmp_path, generator, params, key):
    small = {"num_train": 10, "num_val": 5, "num_test": 5} if generator != "csl" else {}
    with pytest.raises(ConfigError, match=f"params.{key}:"):
        generate_dataset(generator, "mydata", {**small, **params}, 0, tmp_path)


def test_unknown_generator_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="sbm_patern"):
        generate_dataset("sbm_patern", "mydata", None, 0, tmp_path)


# -------------------------------------------------------------------------------------- SBM structure


def test_structure_checker_catches_defects():
    """Negative control for :func:`assert_simple_undirected_row_major` (it must not pass everything)."""
    def cols(src, dst, n=3):
        return GraphColumns(np.array([n]), np.array([len(src)]), np.array(src, np.int32), np.array(dst, np.int32))

    assert_simple_undirected_row_major(cols([0, 1, 1, 2], [1, 0, 2, 1]))
    for src, dst in (([0, 1, 1], [1, 0, 2]),  # missing reverse
                     ([1, 0, 1, 2], [0, 1, 2, 1]),  # not row-major
                     ([0, 0, 1, 1], [1, 1, 0, 0]),  # duplicates
                     ([0, 0, 1], [0, 1, 0])):  # self loop
        with pytest.raises(AssertionError):
            assert_simple_undirected_row_major(cols(src, dst))


@pytest.mark.parametrize("dataset", ["pattern", "cluster"])
def test_sbm_graphs_are_simple_undirected_and_row_major(request, dataset):
    _, _, cols = request.getfixturevalue(dataset)
    assert_simple_undirected_row_major(cols)
    # Independent rebuild of a handful of graphs: symmetric 0/1 matrix, empty diagonal, and the edge list is
    # exactly np.nonzero of it (row-major order).
    for i in (0, 1, cols.num_graphs // 2, cols.num_graphs - 1):
        adj = _dense(cols, i)
        assert adj.max() == 1 and np.array_equal(adj, adj.T) and not adj.diagonal().any()
        src, dst = np.nonzero(adj)
        graph = cols.graph_at(i)
        assert np.array_equal(src, graph["src"]) and np.array_equal(dst, graph["dst"])


@pytest.mark.parametrize("dataset", ["pattern", "cluster"])
def test_sbm_node_order_is_a_uniform_permutation(request, dataset):
    """Labels are shuffled: adjacent nodes share a label as often as under a uniformly random order."""
    _, _, cols = request.getfixturevalue(dataset)
    y = cols.node["y"].astype(np.int64)
    g = _node_graph(cols)
    same_next = (y[1:] == y[:-1]) & (g[1:] == g[:-1])
    observed = np.bincount(g[1:][same_next], minlength=cols.num_graphs)
    counts = np.bincount(g * (y.max() + 1) + y, minlength=cols.num_graphs * (y.max() + 1)).reshape(cols.num_graphs, -1)
    n = cols.num_nodes
    expected = (counts * (counts - 1)).sum(1) / n  # (n - 1) adjacent pairs × P(same label) = Σ c(c-1) / (n(n-1))
    residual = observed - expected
    assert _within_z(residual.mean(), 0.0, residual.std(ddof=1) / np.sqrt(residual.size))


@pytest.mark.parametrize("dataset", ["pattern", "cluster"])
def test_sbm_meta_and_statistics(request, dataset):
    out, meta, cols = request.getfixturevalue(dataset)
    params = PATTERN_PARAMS if dataset == "pattern" else CLUSTER_PARAMS
    sizes = {s: params[f"num_{s}"] for s in ("train", "val", "test")}
    assert meta.split_sizes == sizes
    assert meta.num_graphs == cols.num_graphs == sum(sizes.values())
    assert meta.task == "node_classification" and meta.pe_usage == "add" and meta.edge_features is None
    assert meta.loss == "weighted_cross_entropy" and meta.metric == "weighted_accuracy"
    assert meta.checksum == hashlib.sha256((out / "graphs.parquet").read_bytes()).hexdigest()
    assert meta.source["generator"] == ("sbm_pattern" if dataset == "pattern" else "sbm_cluster")
    assert meta.source["seed"] == (11 if dataset == "pattern" else 12)
    assert {k: meta.source["params"][k] for k in params} == params
    if dataset == "pattern":
        assert meta.num_outputs == 2 and (meta.node_features.kind, meta.node_features.size) == ("categorical", 3)
    else:
        assert meta.num_outputs == 6 and (meta.node_features.kind, meta.node_features.size) == ("categorical", 7)

    assert set(meta.statistics) == {"all", "train", "val", "test"}
    y, g = cols.node["y"].astype(np.int64), _node_graph(cols)
    for part, ids in _split_ranges(meta).items():
        got = meta.statistics[part]
        assert got["graphs"] == ids.size
        for key, values in (("nodes_per_graph", cols.num_nodes[ids]), ("edges_per_graph", cols.num_edges[ids])):
            values = values.astype(np.float64)
            want = {"mean": values.mean(), "std": values.std(), "min": values.min(), "max": values.max()}
            assert got[key] == pytest.approx(want, rel=1e-12), (part, key)
        labels = y[(g >= ids[0]) & (g <= ids[-1])]
        fraction = np.bincount(labels, minlength=meta.num_outputs) / labels.size
        assert len(got["label_fraction"]) == meta.num_outputs
        assert got["label_fraction"] == pytest.approx(fraction, abs=5e-7), part
    # The node-level label fraction of 'all' is the node-weighted average of the splits'.
    weights = [cols.num_nodes[ids].sum() for part, ids in _split_ranges(meta).items() if part != "all"]
    mixed = np.average([meta.statistics[s]["label_fraction"] for s in sizes], axis=0, weights=weights)
    assert meta.statistics["all"]["label_fraction"] == pytest.approx(mixed, abs=2e-6)


def test_statistics_recomputed_from_the_written_meta_agree(cluster):
    _, meta, cols = cluster
    assert dataset_statistics(cols, meta) == meta.statistics


# ------------------------------------------------------------------------------------------------ PATTERN


def test_pattern_nodes_labels_and_features(pattern, pattern_info):
    _, _, cols = pattern
    size = pattern_info["size"]
    assert ((size >= 5) & (size <= 34)).all()
    assert ((cols.num_nodes >= 5 * 5 + size) & (cols.num_nodes <= 5 * 34 + size)).all()
    assert set(np.unique(cols.node["y"]).tolist()) == {0, 1}
    assert set(np.unique(cols.node["x"]).tolist()) == {0, 1, 2}
    assert cols.node["x"].dtype == np.int16 and cols.node["y"].dtype == np.int16
    # SBM (label 0) features are i.i.d. uniform on {0, 1, 2}.
    sbm_x = cols.node["x"][cols.node["y"] == 0]
    assert stats.chisquare(np.bincount(sbm_x, minlength=3)).pvalue > 1e-6


def test_pattern_graphs_of_one_instance_share_the_pattern(pattern, pattern_info):
    _, meta, cols = pattern
    instance, signature = pattern_info["instance"], pattern_info["signature"]
    num_patterns = meta.source["params"]["num_patterns"]
    # Each instance gets the same share of each split: 10 train, 5 val, 5 test graphs.
    for part, ids in _split_ranges(meta).items():
        if part != "all":
            share = meta.split_sizes[part] // num_patterns
            assert np.array_equal(np.bincount(instance[ids], minlength=num_patterns), np.full(num_patterns, share))
    firsts = {}
    for i in range(cols.num_graphs):
        first = firsts.setdefault(int(instance[i]), i)
        assert signature[i] == signature[first], f"graph {i} differs from graph {first} of its instance"
        assert pattern_info["size"][i] == pattern_info["size"][first]
        assert pattern_info["internal"][i] == pattern_info["internal"][first]
    # Different instances have different patterns (sizes / degree sequences / features).
    assert len({signature[i] for i in firsts.values()}) == num_patterns
    # Stronger: pattern subgraphs are isomorphic with matching features — across graphs and across splits.
    y = cols.node["y"]
    same_x = nx.algorithms.isomorphism.categorical_node_match("x", -1)
    for k in (0, 7, num_patterns - 1):
        members = np.flatnonzero(instance == k)
        chosen = [members[0], members[-1], members[len(members) // 2]]  # train, test, val
        subgraphs = []
        for i in chosen:
            n0, n1 = cols.node_ptr[i], cols.node_ptr[i + 1]
            subgraphs.append(_nx_graph(cols, i, np.flatnonzero(y[n0:n1] == 1)))
        for other in subgraphs[1:]:
            assert nx.is_isomorphic(subgraphs[0], other, node_match=same_x)
    # Negative control: changing one node's feature breaks the match (the check does compare features).
    changed = subgraphs[0].copy()
    changed.nodes[0]["x"] = (changed.nodes[0]["x"] + 1) % 3
    assert not nx.is_isomorphic(subgraphs[0], changed, node_match=same_x)


def test_pattern_edge_densities(pattern, pattern_info):
    _, meta, cols = pattern
    params = meta.source["params"]
    p, q, q_pattern, p_pattern = params["p"], params["q"], params["q_pattern"], params["p_pattern"]
    y = cols.node["y"].astype(np.int64)
    g, u, v = _global_edges(cols)
    s, n = pattern_info["size"], cols.num_nodes
    m = n - s  # SBM nodes

    # Pattern–SBM pairs: each joined with probability q_pattern (binomial over all such pairs).
    cross_edges = np.count_nonzero(y[u] != y[v]) / 2
    cross_pairs = float((s * m).sum())
    se = np.sqrt(q_pattern * (1 - q_pattern) / cross_pairs)
    assert _within_z(cross_edges / cross_pairs, q_pattern, se)

    # SBM–SBM pairs: a mixture of p (same community) and q pairs, so the density lies strictly between.
    sbm_edges_per_graph = np.bincount(g[(y[u] == 0) & (y[v] == 0)], minlength=cols.num_graphs) / 2
    sbm_pairs = float((m * (m - 1) / 2).sum())
    density = sbm_edges_per_graph.sum() / sbm_pairs
    se = np.sqrt(0.25 / sbm_pairs)
    assert q + Z * se < density < p - Z * se
    # Unconditionally E[SBM edges] = p·5·E[C(c,2)] + q·C(5,2)·E[c]² (communities are unobservable).
    expected = p * 5 * C_PAIRS + q * comb(5, 2) * C_MEAN**2
    assert _within_z(sbm_edges_per_graph.mean(), expected, sbm_edges_per_graph.std(ddof=1) / np.sqrt(cols.num_graphs))

    # Pattern instances are Erdős–Rényi(p_pattern): density over the distinct instances.
    first = np.unique(pattern_info["instance"], return_index=True)[1]
    pairs = float((s[first] * (s[first] - 1) / 2).sum())
    se = np.sqrt(p_pattern * (1 - p_pattern) / pairs)
    assert _within_z(pattern_info["internal"][first].sum() / pairs, p_pattern, se)


def test_pattern_expected_nodes_and_edges(pattern, pattern_info):
    _, meta, cols = pattern
    params = meta.source["params"]
    s, internal, n = pattern_info["size"], pattern_info["internal"], cols.num_nodes
    num_graphs = cols.num_graphs
    # Nodes: 5 communities U{5..34} plus the instance's pattern size; analytic standard error.
    expected_nodes = 5 * C_MEAN + s.mean()
    assert _within_z(n.mean(), expected_nodes, np.sqrt(5 * C_VAR / num_graphs))
    assert meta.statistics["all"]["nodes_per_graph"]["mean"] == pytest.approx(n.mean())
    # Directed edges given the pattern instance: 2·(p·5·E[C(c,2)] + q·10·E[c]² + q_pattern·s·5·E[c] + pattern edges).
    expected = 2 * (params["p"] * 5 * C_PAIRS + params["q"] * comb(5, 2) * C_MEAN**2
                    + params["q_pattern"] * s * 5 * C_MEAN + internal)
    residual = cols.num_edges - expected
    assert _within_z(residual.mean(), 0.0, residual.std(ddof=1) / np.sqrt(num_graphs))


def test_pattern_custom_parameters(tmp_path_factory):
    params = {"num_train": 30, "num_val": 10, "num_test": 10, "num_patterns": 5, "num_communities": 2,
              "community_size": [5, 6], "pattern_size": [3, 4], "vocab_size": 5,
              "p": 1.0, "q": 0.0, "q_pattern": 1.0}
    _, meta, cols = _make(tmp_path_factory, "sbm_pattern", params, 4)
    assert meta.node_features.size == 5 and meta.num_graphs == 50
    y = cols.node["y"].astype(np.int64)
    s = np.bincount(_node_graph(cols), weights=y, minlength=cols.num_graphs).astype(np.int64)
    m = cols.num_nodes - s
    assert ((s >= 3) & (s <= 4)).all() and ((m >= 10) & (m <= 12)).all()
    assert cols.node["x"].min() >= 0 and cols.node["x"].max() <= 4 and np.unique(cols.node["x"]).size == 5
    assert_simple_undirected_row_major(cols)
    g, u, v = _global_edges(cols)
    # q_pattern = 1: every pattern–SBM pair is an edge, exactly.
    cross = np.bincount(g[y[u] != y[v]], minlength=cols.num_graphs)
    assert np.array_equal(cross, 2 * s * m)
    # p = 1, q = 0: the SBM part is a disjoint union of 2 cliques (the communities) of 5..6 nodes.
    sbm = np.bincount(g[(y[u] == 0) & (y[v] == 0)], minlength=cols.num_graphs)
    for i in range(cols.num_graphs):
        cliques = _cliques(cols, i, y)
        assert len(cliques) == 2 and all(5 <= k <= 6 for k in cliques)
        assert sbm[i] == 2 * sum(comb(k, 2) for k in cliques)


def _cliques(cols: GraphColumns, i: int, y: np.ndarray) -> list[int]:
    """Sizes of the connected components of the label-0 part of graph ``i``; each must be a clique."""
    n0, n1 = cols.node_ptr[i], cols.node_ptr[i + 1]
    sub = _nx_graph(cols, i, np.flatnonzero(y[n0:n1] == 0))
    sizes = []
    for component in nx.connected_components(sub):
        k = len(component)
        assert sub.subgraph(component).number_of_edges() == comb(k, 2)
        sizes.append(k)
    return sizes


# ------------------------------------------------------------------------------------------------ CLUSTER


def _community_sizes(cols: GraphColumns, num_comm: int) -> np.ndarray:
    y = cols.node["y"].astype(np.int64)
    return np.bincount(_node_graph(cols) * num_comm + y, minlength=cols.num_graphs * num_comm).reshape(-1, num_comm)


def test_cluster_labels_features_and_community_sizes(cluster):
    _, _, cols = cluster
    x, y = cols.node["x"].astype(np.int64), cols.node["y"].astype(np.int64)
    assert set(np.unique(y).tolist()) == set(range(6)) and set(np.unique(x).tolist()) == set(range(7))
    g = _node_graph(cols)
    seeded = x > 0
    assert np.array_equal(x[seeded], y[seeded] + 1), "a seed node's feature must be its community + 1"
    per_community = np.bincount(g[seeded] * 6 + y[seeded], minlength=cols.num_graphs * 6)
    assert (per_community == 1).all(), "exactly one seed node per community"
    assert np.array_equal(np.bincount(g[seeded], minlength=cols.num_graphs), np.full(cols.num_graphs, 6))

    sizes = _community_sizes(cols, 6)
    assert ((sizes >= C_LOW) & (sizes <= C_HIGH)).all()
    assert np.array_equal(sizes.sum(1), cols.num_nodes)
    # Sizes are i.i.d. uniform on 5..34 (chi-square goodness of fit).
    assert stats.chisquare(np.bincount(sizes.ravel() - C_LOW, minlength=C_HIGH - C_LOW + 1)).pvalue > 1e-6

    # The seed node is uniform among its community: its rank in node order, scaled to (0, 1), has mean 1/2.
    rank = np.empty(x.size, dtype=np.int64)
    order = np.lexsort((np.arange(x.size), y, g))  # nodes grouped by (graph, community), in node order
    group = (g * 6 + y)[order]
    starts = np.r_[0, np.flatnonzero(np.diff(group)) + 1]
    rank[order] = np.arange(x.size) - np.repeat(starts, np.diff(np.r_[starts, x.size]))
    size_of = sizes.ravel()[g * 6 + y]
    u = (rank[seeded] + 0.5) / size_of[seeded]
    assert _within_z(u.mean(), 0.5, u.std(ddof=1) / np.sqrt(u.size))


def test_cluster_edge_densities(cluster):
    _, meta, cols = cluster
    p, q = meta.source["params"]["p"], meta.source["params"]["q"]
    y = cols.node["y"].astype(np.int64)
    _, u, v = _global_edges(cols)
    sizes = _community_sizes(cols, 6)
    intra_pairs = float((sizes * (sizes - 1) / 2).sum())
    inter_pairs = float((cols.num_nodes * (cols.num_nodes - 1) / 2).sum()) - intra_pairs
    intra = np.count_nonzero(y[u] == y[v]) / 2 / intra_pairs
    inter = np.count_nonzero(y[u] != y[v]) / 2 / inter_pairs
    assert _within_z(intra, p, np.sqrt(p * (1 - p) / intra_pairs)), intra
    assert _within_z(inter, q, np.sqrt(q * (1 - q) / inter_pairs)), inter


def test_cluster_expected_nodes_and_edges(cluster):
    _, meta, cols = cluster
    p, q = meta.source["params"]["p"], meta.source["params"]["q"]
    num_graphs = cols.num_graphs
    assert _within_z(cols.num_nodes.mean(), 6 * C_MEAN, np.sqrt(6 * C_VAR / num_graphs))  # 117
    # E[directed edges] = 2·(p·Σ_i E[C(c_i,2)] + q·Σ_{i<j} E[c_i c_j]) = 4289.6 (paper: 4,303.9).
    expected = 2 * (p * 6 * C_PAIRS + q * comb(6, 2) * C_MEAN**2)
    assert expected == pytest.approx(4289.58, abs=0.01)
    edges = cols.num_edges
    assert _within_z(edges.mean(), expected, edges.std(ddof=1) / np.sqrt(num_graphs))
    # Given the observed community sizes the only noise is binomial: a much tighter check.
    sizes = _community_sizes(cols, 6)
    intra_pairs = (sizes * (sizes - 1) / 2).sum(1)
    inter_pairs = cols.num_nodes * (cols.num_nodes - 1) / 2 - intra_pairs
    conditional = 2 * (p * intra_pairs + q * inter_pairs)
    variance = 4 * (p * (1 - p) * intra_pairs + q * (1 - q) * inter_pairs)
    assert _within_z((edges - conditional).sum(), 0.0, np.sqrt(variance.sum()))


def test_cluster_custom_parameters(tmp_path_factory):
    params = {"num_train": 60, "num_val": 20, "num_test": 20, "num_communities": 3, "community_size": [10, 12]}
    _, meta, cols = _make(tmp_path_factory, "sbm_cluster", params, 8)
    assert meta.num_outputs == 3 and meta.node_features.size == 4 and meta.num_graphs == 100
    assert ((cols.num_nodes >= 30) & (cols.num_nodes <= 36)).all()
    assert set(np.unique(cols.node["y"]).tolist()) == {0, 1, 2}
    sizes = _community_sizes(cols, 3)
    assert ((sizes >= 10) & (sizes <= 12)).all() and np.unique(sizes).size == 3
    assert (np.bincount(_node_graph(cols), weights=cols.node["x"] > 0) == 3).all()
    assert len(meta.statistics["all"]["label_fraction"]) == 3
    assert_simple_undirected_row_major(cols)


@pytest.mark.parametrize(("p", "q"), [(1.0, 0.0), (0.0, 1.0)])
def test_cluster_extreme_probabilities_give_exact_graphs(tmp_path_factory, p, q):
    """p = 1, q = 0: disjoint cliques; p = 0, q = 1: complete multipartite — edges follow the labels exactly."""
    params = {"num_train": 20, "num_val": 5, "num_test": 5, "num_communities": 4, "community_size": [3, 9],
              "p": p, "q": q}
    _, _, cols = _make(tmp_path_factory, "sbm_cluster", params, 9)
    assert_simple_undirected_row_major(cols)
    y = cols.node["y"]
    for i in range(cols.num_graphs):
        labels = y[cols.node_ptr[i]:cols.node_ptr[i + 1]]
        same = labels[:, None] == labels[None, :]
        want = (same if p == 1.0 else ~same) & ~np.eye(labels.size, dtype=bool)
        assert np.array_equal(_dense(cols, i).astype(bool), want)


# ---------------------------------------------------------------------------------------------------- CSL


def _circulant(n: int, s: int) -> np.ndarray:
    adj = np.zeros((n, n), dtype=np.int64)
    for i in range(n):
        for step in (1, s):
            adj[i, (i + step) % n] = adj[(i + step) % n, i] = 1
    return adj


def test_csl_sizes_labels_and_meta(csl):
    out, meta, cols = csl
    assert cols.num_graphs == meta.num_graphs == 150
    assert (cols.num_nodes == 41).all() and (cols.num_edges == 164).all()
    assert np.array_equal(cols.graph["y"], np.repeat(np.arange(10), 15))
    assert (cols.node["x"] == 0).all() and cols.node["x"].size == 150 * 41
    assert_simple_undirected_row_major(cols)
    g, u, _ = _global_edges(cols)
    assert (np.bincount(u, minlength=150 * 41) == 4).all(), "4-regular"

    assert meta.task == "graph_classification" and meta.pe_usage == "replace" and meta.num_outputs == 10
    assert (meta.node_features.kind, meta.node_features.size) == ("categorical", 1) and meta.edge_features is None
    assert meta.loss == "cross_entropy" and meta.metric == "accuracy" and meta.split_sizes is None
    assert meta.source["skip_lengths"] == list(SKIPS) and meta.source["seed"] == 13
    assert meta.checksum == hashlib.sha256((out / "graphs.parquet").read_bytes()).hexdigest()
    assert set(meta.statistics) == {"all"}
    stats_all = meta.statistics["all"]
    assert stats_all["graphs"] == 150
    assert stats_all["nodes_per_graph"] == {"mean": 41.0, "std": 0.0, "min": 41.0, "max": 41.0}  # paper: 41
    assert stats_all["edges_per_graph"] == {"mean": 164.0, "std": 0.0, "min": 164.0, "max": 164.0}  # paper: 164
    assert stats_all["label_fraction"] == [0.1] * 10


def test_csl_classes_are_the_circulant_skip_link_graphs(csl):
    _, _, cols = csl
    n = 41
    spectra = []
    for c, s in enumerate(SKIPS):
        canonical = _circulant(n, s)
        first = _dense(cols, 15 * c)
        assert np.array_equal(first, canonical), f"class {c}: first graph is not C41(1, {s}) in canonical order"
        # Analytic spectrum of the circulant: 2cos(2πk/n) + 2cos(2πsk/n).
        k = np.arange(n)
        analytic = np.sort(2 * np.cos(2 * np.pi * k / n) + 2 * np.cos(2 * np.pi * s * k / n))
        target = nx.from_numpy_array(canonical)
        copies = set()
        for j in range(1, 15):
            adj = _dense(cols, 15 * c + j)
            assert not np.array_equal(adj, canonical), f"class {c} copy {j} is not relabelled"
            copies.add(adj.tobytes())
            assert np.allclose(np.linalg.eigvalsh(adj), analytic, atol=1e-8)
            assert nx.vf2pp_is_isomorphic(nx.from_numpy_array(adj), target)
        assert len(copies) == 14, f"class {c}: relabelled copies are not distinct"
        spectra.append(analytic)
        assert np.allclose(np.linalg.eigvalsh(first.astype(float)), analytic, atol=1e-8)
    # Different spectra ⇒ pairwise non-isomorphic classes (for the 10 canonical graphs).
    for a in range(10):
        for b in range(a + 1, 10):
            assert np.abs(spectra[a] - spectra[b]).max() > 1e-3, (SKIPS[a], SKIPS[b])


def test_csl_non_isomorphic_classes_by_networkx(csl):
    """Independent of the spectral argument: a few class pairs checked by an exact isomorphism test."""
    _, _, cols = csl
    for a, b in ((0, 1), (3, 4), (8, 9)):
        assert not nx.vf2pp_is_isomorphic(_nx_graph(cols, 15 * a), _nx_graph(cols, 15 * b))


def test_csl_custom_copies(tmp_path_factory):
    _, meta, cols = _make(tmp_path_factory, "csl", {"copies_per_class": 3}, 2)
    assert meta.num_graphs == cols.num_graphs == 30
    assert np.array_equal(cols.graph["y"], np.repeat(np.arange(10), 3))
    assert meta.statistics["all"]["label_fraction"] == [0.1] * 10
    for c, s in enumerate(SKIPS):
        assert np.array_equal(_dense(cols, 3 * c), _circulant(41, s))


def test_generate_help_lists_every_registered_generator_with_its_description(capsys):
    from gnnbench.cli import main
    from gnnbench.data.generators import generator_names, get_generator

    with pytest.raises(SystemExit) as exit_info:
        main(["generate", "--help"])
    assert exit_info.value.code == 0
    listed = capsys.readouterr().out.split("generators (", 1)[1].splitlines()[1:]
    names = generator_names()
    assert [line.split()[0] for line in listed] == names  # one line each, every generator of the registry
    for line, name in zip(listed, names, strict=True):
        assert line.split(None, 1)[1] == " ".join(get_generator(name).description.split())
