"""CSL: circular skip-link graphs (spec benchmarking-gnns.md §3.4).

Class c is the 4-regular circulant graph on 41 nodes with cycle edges i–(i+1) and skip links i–(i+s),
s = (2, 3, 4, 5, 6, 9, 11, 12, 13, 16)[c]. Each class has 15 copies: the first in canonical node order,
the other 14 randomly relabelled (all isomorphic), stored class-sorted as in the released data.
Every graph has 41 nodes and 164 directed edges (each undirected edge in both directions, no self
loops — the raw files' self loops are removed by the benchmark's loader). Node feature: the constant 0
(vocabulary 1); no edge features. Message-passing networks cannot tell the classes apart without
positional encodings, which on CSL *replace* the node input (``pe_usage = "replace"``).

Decision: the released CSL.zip fixes its relabellings without a seed; gnnbench draws them from ``seed``.
Isomorphism classes, sizes and labels are identical to the released set.
"""

from __future__ import annotations

import numpy as np

from gnnbench.data.generators import Generator
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns

NUM_NODES = 41
SKIP_LENGTHS = (2, 3, 4, 5, 6, 9, 11, 12, 13, 16)


def circulant_adjacency(num_nodes: int, skip: int) -> np.ndarray:
    """Dense 0/1 adjacency of the cycle on ``num_nodes`` nodes plus skip links of length ``skip``."""
    adj = np.zeros((num_nodes, num_nodes), dtype=bool)
    i = np.arange(num_nodes)
    for step in (1, skip):
        adj[i, (i + step) % num_nodes] = True
        adj[(i + step) % num_nodes, i] = True
    return adj


def _describe_csl(name: str, params: dict, seed: int) -> DatasetMeta:
    return DatasetMeta(
        name=name, task="graph_classification", loss="cross_entropy", metric="accuracy",
        num_outputs=len(SKIP_LENGTHS), num_graphs=len(SKIP_LENGTHS) * params["copies_per_class"],
        node_features=FeatureSpec("categorical", 1), edge_features=None, pe_usage="replace", split_sizes=None,
        source={"generator": "csl", "params": params, "seed": seed, "skip_lengths": list(SKIP_LENGTHS)},
    )


def _build_csl(params: dict, seed: int) -> GraphColumns:
    copies, n, num_classes = params["copies_per_class"], NUM_NODES, len(SKIP_LENGTHS)
    base = np.stack([circulant_adjacency(n, s) for s in SKIP_LENGTHS])  # (C, n, n)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))
    perm = np.argsort(rng.random((num_classes, copies, n)), axis=2)
    perm[:, 0] = np.arange(n)  # first copy of each class keeps the canonical order
    cls = np.arange(num_classes)[:, None, None, None]
    adj = base[cls, perm[:, :, :, None], perm[:, :, None, :]].reshape(-1, n, n)  # relabelled copies
    g, src, dst = np.nonzero(adj)
    num_graphs = num_classes * copies
    return GraphColumns(
        num_nodes=np.full(num_graphs, n, dtype=np.int64),
        num_edges=np.bincount(g, minlength=num_graphs).astype(np.int64),
        src=src.astype(np.int32),
        dst=dst.astype(np.int32),
        node={"x": np.zeros(num_graphs * n, dtype=np.int16)},
        graph={"y": np.repeat(np.arange(num_classes, dtype=np.int16), copies)},
    )


CSL = Generator(
    name="csl",
    description="CSL: classify 10 isomorphism classes of 41-node circulant skip-link graphs",
    defaults={"copies_per_class": 15},
    default_split={"scheme": "stratified_kfold", "folds": 5, "val_fraction": 0.25, "seed": 0},
    describe=_describe_csl,
    build=_build_csl,
)
