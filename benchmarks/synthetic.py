"""Synthetic graph sets with a given size distribution, for speed measurements.

``molecule_like(num_graphs)`` mimics AQSOL's training set: 7,831 graphs with 17.6 nodes and 35.8
directed edges on average (a random spanning tree plus a few ring-closing edges, both directions),
categorical atoms (65 types) and bonds (5 types), a float regression target.
"""

from __future__ import annotations

import numpy as np

from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns

AQSOL_TRAIN_GRAPHS = 7831
AQSOL_MEAN_NODES = 17.6
AQSOL_MEAN_DIRECTED_EDGES = 35.8


def molecule_like(num_graphs: int = AQSOL_TRAIN_GRAPHS, seed: int = 0) -> tuple[GraphColumns, DatasetMeta]:
    """``num_graphs`` AQSOL-like molecules (module docstring) as graph columns and their dataset description."""
    rng = np.random.default_rng(seed)
    # Node counts: shifted negative binomial, mean 17.6, long right tail like small-molecule sets.
    num_nodes = 2 + rng.negative_binomial(4, 4 / (4 + AQSOL_MEAN_NODES - 2), num_graphs)
    extra_mean = AQSOL_MEAN_DIRECTED_EDGES / 2 - (num_nodes.mean() - 1)  # ring closures per graph
    srcs, dsts, num_edges = [], [], np.empty(num_graphs, dtype=np.int64)
    for g, n in enumerate(num_nodes):  # fixture construction, not a hot path
        parent = (rng.random(n - 1) * np.arange(1, n)).astype(np.int64)  # random recursive tree
        a, b = np.arange(1, n), parent
        k = min(rng.poisson(max(extra_mean, 0)), n * (n - 1) // 2 - (n - 1))
        extra = rng.integers(0, n, (k, 2))
        extra = extra[extra[:, 0] != extra[:, 1]]
        u, v = np.concatenate([a, extra[:, 0]]), np.concatenate([b, extra[:, 1]])
        srcs.append(np.concatenate([u, v]))
        dsts.append(np.concatenate([v, u]))
        num_edges[g] = 2 * len(u)
    total_nodes, total_edges = int(num_nodes.sum()), int(num_edges.sum())
    columns = GraphColumns(
        num_nodes=num_nodes.astype(np.int64), num_edges=num_edges,
        src=np.concatenate(srcs).astype(np.int32), dst=np.concatenate(dsts).astype(np.int32),
        node={"x": rng.integers(0, 65, total_nodes).astype(np.int16)},
        edge={"edge_attr": rng.integers(1, 5, total_edges).astype(np.int16)},
        graph={"y": rng.normal(-3.0, 2.0, num_graphs).astype(np.float32)},
    )
    meta = DatasetMeta(name="AQSOL-like", task="graph_regression", loss="l1", metric="mae", num_outputs=1,
                       num_graphs=num_graphs, node_features=FeatureSpec("categorical", 65),
                       edge_features=FeatureSpec("categorical", 5), pe_usage="add", split_sizes=None)
    return columns, meta
