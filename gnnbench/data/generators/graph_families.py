"""GRAPH-FAMILIES: which random-graph model made this graph? A small offline graph-classification dataset whose
classes differ only in structure — gnnbench's own, for the fair-comparison protocol's offline block (the TU sets
need downloads).

Per graph: a class c uniform over ``families`` (seeded), a node count n uniform in ``num_nodes`` [lo, hi] and
the same number of undirected edges m = k·(n − k), k = ``attach`` (the Barabási–Albert count) for every class:

* ``random`` — G(n, m): m distinct node pairs uniformly at random (``networkx.gnm_random_graph``);
* ``preferential`` — Barabási–Albert with k edges per new node (``networkx.barabasi_albert_graph``: hubs);
* ``communities`` — two halves of the nodes, a fraction ``inside`` (0.9) of the m edges drawn uniformly inside
  the halves (split in proportion to their pair counts), the rest across.

(``families``: a comma-separated subset, in class order; default all three.)

So node and edge counts carry no information about the class: a structure-blind model on constant node features
(DeepSets, molecular fingerprint) sits at chance, while message passing sees degree and neighbourhood patterns.
With ``features: degree`` the node feature is the degree (the fair-comparison "SOCIAL_DEGREE" variant) and even
the structure-blind baselines see the degree distribution (the paper's finding that degrees help baselines).

Graph g draws from ``SeedSequence(seed, spawn_key=(g,))`` (class, size, then the family's own draws), so a
dataset with more graphs starts with the same graphs. Columns: both directions of every edge, row-major per graph
(local indices sorted), node ``x`` float32 (n, 1), graph ``y`` int16. Default split: 10-fold stratified
cross-validation with a 10 % hold-out (the fair-comparison structure).
"""

from __future__ import annotations

import numpy as np

from gnnbench.data.generators.base import Generator
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns
from gnnbench.errors import ConfigError

FAMILIES = ("random", "preferential", "communities")
FEATURES = ("constant", "degree")


def _communities(n: int, m: int, inside: float, rng: np.random.Generator) -> list[tuple[int, int]]:
    half = n // 2
    blocks = [np.arange(half), np.arange(half, n)]
    inner_pairs = [b.size * (b.size - 1) // 2 for b in blocks]
    cross_pairs = half * (n - half)
    m_in = min(int(round(inside * m)), sum(inner_pairs))
    m_cross = min(m - m_in, cross_pairs)
    edges: set[tuple[int, int]] = set()
    quota = [int(round(m_in * p / max(sum(inner_pairs), 1))) for p in inner_pairs]
    quota[1] = min(m_in - quota[0], inner_pairs[1])
    for block, want in zip(blocks, quota, strict=True):
        target = len(edges) + want
        while len(edges) < target:
            u, v = rng.choice(block, 2, replace=False)
            edges.add((int(min(u, v)), int(max(u, v))))
    target = len(edges) + m_cross
    while len(edges) < target:
        u, v = int(rng.integers(0, half)), int(rng.integers(half, n))
        edges.add((u, v))
    return sorted(edges)


def _graph(family: str, n: int, k: int, inside: float, rng: np.random.Generator) -> list[tuple[int, int]]:
    import networkx as nx  # generation only: reading datasets never imports networkx (gnnbench.data.safe_pickle)

    m = k * (n - k)
    nx_seed = int(rng.integers(0, 2**31 - 1))
    if family == "random":
        return list(nx.gnm_random_graph(n, m, seed=nx_seed).edges())
    if family == "preferential":
        return list(nx.barabasi_albert_graph(n, k, seed=nx_seed).edges())
    return _communities(n, m, inside, rng)


def _build(params: dict, seed: int) -> GraphColumns:
    families, (lo, hi), k = family_list(params), params["num_nodes"], params["attach"]
    num_nodes, num_edges, src, dst, labels = [], [], [], [], []
    for g in range(params["num_graphs"]):  # generation only: one networkx call per graph
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(g,)))
        c = int(rng.integers(0, len(families)))
        n = int(rng.integers(lo, hi + 1))
        edges = np.asarray(_graph(families[c], n, k, params["inside"], rng), dtype=np.int64).reshape(-1, 2)
        both = np.concatenate([edges, edges[:, ::-1]])
        both = both[np.lexsort((both[:, 1], both[:, 0]))]
        num_nodes.append(n)
        num_edges.append(both.shape[0])
        src.append(both[:, 0])
        dst.append(both[:, 1])
        labels.append(c)
    src_all, dst_all = np.concatenate(src), np.concatenate(dst)
    ptr = np.concatenate([[0], np.cumsum(num_nodes)])
    if params["features"] == "degree":
        offset = np.repeat(ptr[:-1], num_edges)
        x = np.bincount(src_all + offset, minlength=int(ptr[-1])).astype(np.float32)[:, None]
    else:
        x = np.ones((int(ptr[-1]), 1), dtype=np.float32)
    columns = GraphColumns(num_nodes=np.asarray(num_nodes, dtype=np.int64),
                           num_edges=np.asarray(num_edges, dtype=np.int64), src=src_all.astype(np.int32),
                           dst=dst_all.astype(np.int32), node={"x": x},
                           graph={"y": np.asarray(labels, dtype=np.int16)})
    columns.validate()
    return columns


def _describe(name: str, params: dict, seed: int) -> DatasetMeta:
    source = {"generator": "graph_families", "seed": seed, "params": params, "features": params["features"]}
    return DatasetMeta(name=name, task="graph_classification", loss="cross_entropy", metric="accuracy",
                       num_outputs=len(family_list(params)), num_graphs=params["num_graphs"],
                       node_features=FeatureSpec("continuous", 1), edge_features=None, pe_usage="add",
                       split_sizes=None, source=source)


def family_list(params: dict) -> list[str]:
    """The graph families of ``params["families"]`` (comma-separated), in class order."""
    return [f.strip() for f in params["families"].split(",")]


def _check(params: dict, where: str) -> None:
    families = family_list(params)
    if len(families) < 2 or any(f not in FAMILIES for f in families) or len(set(families)) != len(families):
        raise ConfigError(f"{where}.families: give two or more distinct families of {', '.join(FAMILIES)}; got "
                          f"{families!r}")
    if params["features"] not in FEATURES:
        raise ConfigError(f"{where}.features: {params['features']!r} is unknown; choose constant or degree")
    lo, hi = params["num_nodes"]
    if not 2 * params["attach"] + 2 <= lo <= hi:
        raise ConfigError(f"{where}.num_nodes: need 2·attach + 2 ≤ lo ≤ hi (a graph of n nodes gets attach·(n − "
                          f"attach) edges); got {params['num_nodes']} with attach {params['attach']}")
    if not 0 <= params["inside"] <= 1:
        raise ConfigError(f"{where}.inside: a fraction of the edges, in [0, 1]; got {params['inside']}")


GRAPH_FAMILIES = Generator(
    name="graph_families",
    description="graph classification by generative model (G(n, m), Barabási–Albert, two communities) at equal node "
                "and edge counts: offline data for the fair-comparison protocol",
    defaults={"num_graphs": 300, "num_nodes": [20, 40], "attach": 2, "inside": 0.9, "features": "constant",
              "families": ",".join(FAMILIES)},
    default_split={"scheme": "stratified_kfold", "folds": 10, "val_fraction": 0.1, "seed": 0},
    describe=_describe,
    build=_build,
    check=_check,
)
