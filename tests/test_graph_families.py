"""graph_families generator: node and edge counts carry no class information, the families differ in structure as
described (hubs, communities), degree features are degrees, seeding and prefixes, bad parameters."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from gnnbench.data.generators import get_generator, resolve_params
from gnnbench.data.generators.graph_families import FAMILIES
from gnnbench.errors import ConfigError


def build(**params):
    generator = get_generator("graph_families")
    return generator.build(resolve_params(generator, params, "params"), 3)


def graphs(columns):
    """networkx graphs of the columns (independent of the generator's own bookkeeping)."""
    out, start = [], 0
    for n, e in zip(columns.num_nodes, columns.num_edges, strict=True):
        g = nx.Graph()
        g.add_nodes_from(range(n))
        g.add_edges_from(zip(columns.src[start:start + e].tolist(), columns.dst[start:start + e].tolist(), strict=True))
        out.append(g)
        start += e
    return out


def test_equal_sizes_across_families_and_their_structure():
    columns = build(num_graphs=240, num_nodes=[20, 40], attach=2)
    labels = columns.graph["y"].astype(int)
    assert sorted(set(labels)) == [0, 1, 2] and np.bincount(labels).min() > 60  # classes drawn uniformly
    nets = graphs(columns)
    for g, n in zip(nets, columns.num_nodes, strict=True):
        assert g.number_of_edges() == 2 * (n - 2)  # m = k (n - k) for every family: counts say nothing of the class
    assert (columns.num_edges == 2 * 2 * (columns.num_nodes - 2)).all()  # both directions stored
    for fam in range(3):  # node-count distributions alike across classes
        assert 27 <= columns.num_nodes[labels == fam].mean() <= 33
    max_degree = np.array([max(dict(g.degree()).values()) for g in nets])
    # preferential attachment makes hubs: its largest degree is far above G(n, m)'s
    assert max_degree[labels == 1].mean() > 1.5 * max_degree[labels == 0].mean()
    inside = []
    for g, n, c in zip(nets, columns.num_nodes, labels, strict=True):
        if c == 2:
            half = n // 2
            inside.append(np.mean([(u < half) == (v < half) for u, v in g.edges()]))
    assert 0.85 <= np.mean(inside) <= 0.95  # communities: ~90 % of the edges inside the two halves


def test_degree_features_and_seeding():
    columns = build(num_graphs=30, features="degree")
    nets = graphs(columns)
    expected = np.concatenate([[d for _, d in sorted(g.degree())] for g in nets])
    assert np.array_equal(columns.node["x"][:, 0], expected.astype(np.float32))
    constant = build(num_graphs=30)
    assert (constant.node["x"] == 1).all() and np.array_equal(constant.src, columns.src)
    more = build(num_graphs=40, features="degree")
    assert np.array_equal(more.num_nodes[:30], columns.num_nodes)  # a larger dataset starts with the same graphs
    assert np.array_equal(more.src[:columns.src.size], columns.src)
    again = build(num_graphs=30, features="degree")
    assert np.array_equal(again.dst, columns.dst) and np.array_equal(again.graph["y"], columns.graph["y"])


def test_a_subset_of_families_in_class_order():
    columns = build(num_graphs=60, families="communities,random")
    labels = columns.graph["y"].astype(int)
    assert sorted(set(labels)) == [0, 1] and set(FAMILIES) >= {"communities", "random"}


@pytest.mark.parametrize(("params", "message"), [
    ({"families": "random"}, "two or more distinct families"),
    ({"families": "random,trees"}, "two or more distinct families"),
    ({"features": "labels"}, "choose constant or degree"),
    ({"num_nodes": [4, 10], "attach": 2}, r"need 2·attach \+ 2 ≤ lo ≤ hi"),
])
def test_bad_parameters(params, message):
    with pytest.raises(ConfigError, match=message):
        resolve_params(get_generator("graph_families"), params, "datasets.G.params")
