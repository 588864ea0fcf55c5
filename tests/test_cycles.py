"""CYCLES generator: exact 6-cycle checks against networkx, labels, balance, sizes, determinism, prefix property."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from gnnbench.data.generators import cycles as C
from gnnbench.data.generators import get_generator, resolve_params
from gnnbench.errors import ConfigError


def nx_six_cycles(g: nx.Graph) -> int:
    return sum(1 for c in nx.simple_cycles(g, length_bound=6) if len(c) == 6)


def _dense(g: nx.Graph, n: int) -> np.ndarray:
    a = np.zeros((n, n))
    for u, v in g.edges:
        a[u, v] = a[v, u] = 1
    return a


def _reference_graphs() -> list[nx.Graph]:
    """Random graphs of varied density, plus graphs whose only cycles are 3-, 4- or 5-cycles, plus 6-cycle-rich ones."""
    rng = np.random.default_rng(7)
    graphs = []
    for _ in range(200):
        n = int(rng.integers(6, 13))
        graphs.append(nx.gnp_random_graph(n, float(rng.uniform(0.1, 0.6)), seed=int(rng.integers(1 << 30))))
    for _ in range(60):  # disjoint short cycles joined by tree edges: no 6-cycle, many 3/4/5-cycles
        g = nx.Graph()
        for k in rng.integers(3, 6, size=int(rng.integers(1, 4))):
            g = nx.disjoint_union(g, nx.cycle_graph(int(k)))
        comps = [min(c) for c in nx.connected_components(g)]
        for a, b in zip(comps, comps[1:], strict=False):
            g.add_edge(a, b)
        tree = nx.random_labeled_tree(int(rng.integers(2, 6)), seed=int(rng.integers(1 << 30)))
        graphs.append(nx.convert_node_labels_to_integers(nx.disjoint_union(g, tree)))
    graphs += [nx.complete_bipartite_graph(2, 5), nx.complete_graph(4), nx.cycle_graph(5), nx.cycle_graph(6),
               nx.cycle_graph(7), nx.complete_graph(6), nx.complete_graph(7), nx.petersen_graph(),
               nx.complete_bipartite_graph(3, 3), nx.hypercube_graph(3), nx.path_graph(8)]
    return [nx.convert_node_labels_to_integers(g) for g in graphs]


def test_six_cycle_counter_matches_networkx():
    graphs = _reference_graphs()
    counts = [nx_six_cycles(g) for g in graphs]
    assert sum(c == 0 for c in counts) > 60 and sum(c > 0 for c in counts) > 60  # both outcomes well covered
    for g, ref in zip(graphs, counts, strict=True):
        assert C.count_six_cycles(_dense(g, g.number_of_nodes())[None])[0] == ref
    # batched with padding (isolated padding nodes change nothing)
    n_max = max(g.number_of_nodes() for g in graphs)
    batch = np.stack([_dense(g, n_max) for g in graphs])
    assert C.count_six_cycles(batch).tolist() == counts
    assert C.count_six_cycles(_dense(nx.complete_graph(6), 6)[None])[0] == 60  # 6!/12
    assert C.count_six_cycles(_dense(nx.complete_bipartite_graph(3, 3), 6)[None])[0] == 6  # 3!·3!/(2·3)


def test_closes_six_cycle_matches_networkx():
    rng = np.random.default_rng(3)
    checked = {True: 0, False: 0}
    for g in _reference_graphs():
        adj = [set(g[v]) for v in range(g.number_of_nodes())]
        before = nx_six_cycles(g)
        non_edges = list(nx.non_edges(g))
        for idx in rng.permutation(len(non_edges))[:3]:
            u, v = non_edges[idx]
            h = g.copy()
            h.add_edge(u, v)
            expected = nx_six_cycles(h) > before  # some 6-cycle uses the new edge
            assert C.closes_six_cycle(adj, u, v) == expected
            assert C.closes_six_cycle(adj, v, u) == expected
            checked[expected] += 1
    assert checked[True] > 50 and checked[False] > 50


SMALL = {"num_train": 120, "num_val": 40, "num_test": 60}


@pytest.fixture(scope="module")
def small():
    params = resolve_params(C.CYCLES, SMALL, "t")
    return params, C.CYCLES.build(params, 11)


@pytest.fixture(scope="module")
def large():  # enough graphs for the size statistics
    params = resolve_params(C.CYCLES, {"num_train": 2000, "num_val": 2, "num_test": 2}, "t")
    return params, C.CYCLES.build(params, 5)


def _nx_graphs(col):
    eptr, out = col.edge_ptr, []
    for g in range(col.num_graphs):
        h = nx.Graph()
        h.add_nodes_from(range(int(col.num_nodes[g])))
        h.add_edges_from(zip(col.src[eptr[g]:eptr[g + 1]].tolist(), col.dst[eptr[g]:eptr[g + 1]].tolist(),
                             strict=True))
        out.append(h)
    return out


def test_labels_agree_with_networkx(small):
    _, col = small
    for h, y in zip(_nx_graphs(col), col.graph["y"].tolist(), strict=True):
        assert (nx_six_cycles(h) > 0) == (y == 1)


def test_balance_and_columns(small):
    params, col = small
    col.validate()
    y, start = col.graph["y"], 0
    assert y.dtype == np.int16
    for split in ("train", "val", "test"):
        size = params[f"num_{split}"]
        assert np.bincount(y[start:start + size], minlength=2).tolist() == [size // 2, size // 2]
        start += size
    assert col.num_graphs == start
    assert col.node["x"].dtype == np.float32 and col.node["x"].shape == (int(col.num_nodes.sum()), 1)
    assert (col.node["x"] == 1).all()
    assert col.edge["edge_attr"].dtype == np.float32 and col.edge["edge_attr"].shape == (col.src.size, 1)
    assert (col.edge["edge_attr"] == 1).all()
    eptr = col.edge_ptr
    for g in range(col.num_graphs):  # both directions, no loops, no duplicates, row-major order
        s, d = col.src[eptr[g]:eptr[g + 1]].astype(np.int64), col.dst[eptr[g]:eptr[g + 1]].astype(np.int64)
        key = s * 1000 + d
        assert (np.diff(key) > 0).all() and (s != d).all()
        assert np.array_equal(np.sort(d * 1000 + s), key)


def test_odd_split_size_is_balanced_up_to_one():
    params = resolve_params(C.CYCLES, {"num_train": 7, "num_val": 3, "num_test": 1}, "t")
    y = C.CYCLES.build(params, 0).graph["y"]
    assert abs(int(y[:7].sum()) * 2 - 7) == 1 and abs(int(y[7:10].sum()) * 2 - 3) == 1


def test_sizes_match_analytic_expectation(large):
    params, col = large
    exp = C.expected_counts(params)
    assert abs(exp["mean_nodes"] - 48.96) < 0.01 and abs(2 * exp["mean_edges"] - 87.84) < 0.02  # paper Table 2
    n, m, g = col.num_nodes, col.num_edges / 2, col.num_graphs
    assert n.min() >= 37 and n.max() <= 65
    assert n.min() <= 39 and n.max() >= 63  # the whole range occurs
    assert abs(n.mean() - exp["mean_nodes"]) < 5 * np.sqrt(exp["var_nodes"] / g)
    assert abs(n.var() - exp["var_nodes"]) < 0.15 * exp["var_nodes"]
    assert abs(m.mean() - exp["mean_edges"]) < 5 * np.sqrt(exp["var_edges"] / g)
    # the classes share the edge-count distribution: the count does not give the label away
    y = col.graph["y"] == 1
    se = np.sqrt(m[y].var() / y.sum() + m[~y].var() / (~y).sum())
    assert abs(m[y].mean() - m[~y].mean()) < 5 * se


def test_max_degree(large):
    params, col = large
    node = col.src.astype(np.int64) + np.repeat(col.node_ptr[:-1], col.num_edges)
    deg = np.bincount(node, minlength=int(col.num_nodes.sum()))
    assert deg.max() == params["max_degree"] == 7


def test_deterministic_and_seed_dependent(small):
    params, col = small
    again = C.CYCLES.build(params, 11)
    other = C.CYCLES.build(params, 12)
    for a, b in ((col.num_nodes, again.num_nodes), (col.src, again.src), (col.dst, again.dst),
                 (col.graph["y"], again.graph["y"])):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert col.src.tobytes() != other.src.tobytes()


def _split(col, start, stop):
    eptr = col.edge_ptr
    return (col.num_nodes[start:stop].tobytes(), col.src[eptr[start]:eptr[stop]].tobytes(),
            col.dst[eptr[start]:eptr[stop]].tobytes(), col.graph["y"][start:stop].tobytes())


def test_num_train_prefix_property():
    small = C.CYCLES.build(resolve_params(C.CYCLES, {"num_train": 25, "num_val": 6, "num_test": 4}, "t"), 9)
    big = C.CYCLES.build(resolve_params(C.CYCLES, {"num_train": 60, "num_val": 6, "num_test": 4}, "t"), 9)
    assert _split(small, 0, 25) == _split(big, 0, 25)  # smaller train set = prefix of the larger one
    assert _split(small, 25, 35) == _split(big, 60, 70)  # val and test do not depend on num_train


def test_registry_meta_and_checks():
    gen = get_generator("cycles")
    assert gen is C.CYCLES and gen.default_split == {"scheme": "given"}
    params = resolve_params(gen, None, "t")
    assert (params["num_train"], params["num_val"], params["num_test"]) == (9000, 1000, 10000)
    meta = gen.describe("CYCLES", params, 0)
    assert (meta.task, meta.loss, meta.metric, meta.num_outputs) == ("graph_classification", "cross_entropy",
                                                                     "accuracy", 2)
    assert (meta.node_features.kind, meta.node_features.size) == ("continuous", 1)
    assert (meta.edge_features.kind, meta.edge_features.size) == ("continuous", 1)
    assert meta.pe_usage == "replace" and meta.num_graphs == 20000
    assert meta.split_sizes == {"train": 9000, "val": 1000, "test": 10000}
    with pytest.raises(ConfigError):
        resolve_params(gen, {"num_nodes": [5, 10]}, "t")
    with pytest.raises(ConfigError):
        resolve_params(gen, {"max_degree": 1}, "t")
