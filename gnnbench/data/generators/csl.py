"""CSL: circular skip-link graphs (Murphy et al., ICML 2019, as Dwivedi et al. use them; docs/datasets.md#csl).

Class c is the 4-regular circulant graph on 41 nodes with cycle edges i–(i+1) and skip links i–(i+s),
s = (2, 3, 4, 5, 6, 9, 11, 12, 13, 16)[c]. Each class has 15 copies: the first in canonical node order,
the other 14 randomly relabelled (all isomorphic), stored class-sorted as in the released data.
Every graph has 41 nodes and 164 directed edges (each undirected edge in both directions, no self
loops — the raw files' self loops are removed by the benchmark's loader). Node feature: the constant 0
(vocabulary 1); no edge features. Message-passing networks cannot tell the classes apart without
positional encodings, which on CSL *replace* the node input (``pe_usage = "replace"``).

Decision: the released CSL.zip fixes its relabellings without a seed; gnnbench draws them from ``seed``.
Isomorphism classes, sizes and labels are identical to the released set (generator ``released`` reads the
released graphs themselves).

Released splits (split scheme ``published``, ``source: dwivedi2020``): the released code's
``data/CSL/CSL_{train,val,test}.index`` — 5 folds of 90 / 30 / 30 graphs, indices into the class-sorted
order that both the released and the regenerated sets have.
"""

from __future__ import annotations

import numpy as np

from gnnbench.data.download import RawFile
from gnnbench.data.generators.base import Generator, PublishedSplit
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns
from gnnbench.papers import DWIVEDI2020

NUM_NODES = 41
SKIP_LENGTHS = (2, 3, 4, 5, 6, 9, 11, 12, 13, 16)
INDEX_URL = "https://raw.githubusercontent.com/graphdeeplearning/benchmarking-gnns/master/data/CSL/CSL_{part}.index"
INDEX_SHA256 = {"train": "c951d98c8fae5aed3b2faf0fbcb64adcc60dd754329b556f8886cb934e919edd",
                "val": "dbb5b5cd8a413a5c3268b36530301fc1620a873c6ba71d08e4fd51e93f010d83",
                "test": "e52e55cb8c57d2f4f140638ae127231d8f7c72e6bcbe62dd05682dc33f13235b"}


def published_splits(params: dict, source: str) -> PublishedSplit | None:
    """The benchmark's 5 CSL folds (``source`` dwivedi2020) for the 150-graph set; None otherwise."""
    if source != DWIVEDI2020 or params.get("copies_per_class", 15) != 15:
        return None
    return PublishedSplit(tuple(RawFile(f"csl/splits/CSL_{part}.index", None, (INDEX_URL.format(part=part),),
                                        INDEX_SHA256[part]) for part in ("train", "val", "test")), folds=5)


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
    published_splits=published_splits,
)
