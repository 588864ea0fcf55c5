"""Single-graph node-classification data: the "Pitfalls" standardisation and conversion to graph columns.

Shared by the Planetoid and the gnn-benchmark npz generators: Shchur et al.'s preprocessing
(docs/datasets.md#datasets-of-pitfalls-of-gnn-evaluation; the released code shchur/gnn-benchmark,
``gnnbench/data/make_dataset.py`` and ``gnnbench/data/io.py``). All steps are SciPy sparse operations on the whole
graph (no per-node Python loops).

:func:`standardize` applies, in this order:

1. unweighted — every stored adjacency entry becomes 1 (a stored explicit zero too, as the original's
   ``to_unweighted`` does);
2. undirected — A ← A + Aᵀ, every nonzero set to 1;
3. no self loops — the diagonal is removed;
4. largest connected component — kept nodes in ascending order of their original index. **Decision** (the
   original's ``argsort`` leaves ties to the sort): among components of equal largest size, the one containing the
   smallest node index is kept;
5. optional class filter (``drop_classes_up_to`` = m > 0): every node whose class has ≤ m nodes in the component is
   removed, then steps 1–4 run once more (the original does this for CORA-Full with m = 50, by dataset name; here it
   is a parameter). Unlabelled nodes (label −1) belong to no class and are never removed by this step;
6. labels re-indexed 0..K−1 over the sorted classes still present (−1 stays −1);
7. features binary: explicit zeros are dropped and every stored nonzero becomes 1 (TF-IDF → bag of words). No row
   normalisation.

:func:`symmetric_unweighted` alone (steps 1–2, self loops kept once) is the adjacency of the "Planetoid split"
experiment (Shchur et al., Table 2b), which applies none of the other steps.

:func:`to_graph_columns` stores one graph: ``src``/``dst`` = every nonzero (i, j) of the symmetric adjacency, i.e.
both directions of each undirected edge (a self loop once), sorted by (src, dst); node ``y`` int16 (−1 = no label);
features as the sparse node column ``x`` (float32 values); an optional node column ``split`` int8 (0 train, 1 val,
2 test, −1 none).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import SPLIT_CODES, GraphColumns, SparseRows


@dataclass
class RawGraph:
    """One graph with node features and labels; ``nodes`` = original index of each node, ``classes`` = original
    class id of each label value (after :func:`standardize`)."""

    adjacency: sp.csr_matrix  # (N, N)
    features: sp.csr_matrix  # (N, D) float32
    labels: np.ndarray  # (N,) int64, -1 = no label
    nodes: np.ndarray  # (N,) int64
    classes: np.ndarray  # (K,) int64

    @property
    def num_nodes(self) -> int:
        """Number of nodes N (rows of the adjacency)."""
        return int(self.adjacency.shape[0])


def csr_from_parts(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape, name: str) -> sp.csr_matrix:
    """A CSR matrix from its arrays, checked first (ValueError naming ``name`` when they are inconsistent)."""
    data, indices, indptr = np.asarray(data), np.asarray(indices), np.asarray(indptr)
    shape = tuple(int(v) for v in np.asarray(shape).reshape(-1))
    if len(shape) != 2 or min(shape) < 0:
        raise ValueError(f"{name}: shape {shape} is not a 2-d shape")
    rows, cols = shape
    if not (indptr.ndim == indices.ndim == data.ndim == 1 and indptr.shape == (rows + 1,)):
        raise ValueError(f"{name}: indptr must have {rows + 1} entries and data/indices be 1-d")
    if not (np.issubdtype(indptr.dtype, np.integer) and np.issubdtype(indices.dtype, np.integer)):
        raise ValueError(f"{name}: indptr/indices must be integers")
    if indptr[0] != 0 or (np.diff(indptr) < 0).any() or indptr[-1] != indices.size or data.size != indices.size:
        raise ValueError(f"{name}: indptr must start at 0, never decrease and end at the number of entries")
    if indices.size and (indices.min() < 0 or indices.max() >= cols):
        raise ValueError(f"{name}: a column index lies outside [0, {cols})")
    return sp.csr_matrix((data, indices, indptr), shape=shape)


def symmetric_unweighted(adjacency: sp.spmatrix) -> sp.csr_matrix:
    """Steps 1–2: stored entries → 1, A + Aᵀ, nonzeros → 1 (duplicates merged; a self loop is kept once)."""
    a = sp.csr_matrix(adjacency, dtype=np.float32, copy=True)
    a.sum_duplicates()
    a.data[:] = 1.0
    a = (a + a.T).tocsr()
    a.data[:] = 1.0
    a.sort_indices()
    return a


def remove_self_loops(adjacency: sp.csr_matrix) -> sp.csr_matrix:
    """Step 3: the matrix without its diagonal entries."""
    coo = adjacency.tocoo()
    off = coo.row != coo.col
    out = sp.csr_matrix((coo.data[off], (coo.row[off], coo.col[off])), shape=adjacency.shape)
    out.sort_indices()
    return out


def largest_component(adjacency: sp.csr_matrix) -> np.ndarray:
    """Step 4: nodes (ascending) of the largest connected component; ties → the one holding the smallest index."""
    n = adjacency.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    _, labels = connected_components(adjacency, directed=False)
    sizes = np.bincount(labels)
    first_node = np.full(sizes.size, n, dtype=np.int64)
    np.minimum.at(first_node, labels, np.arange(n))
    best = np.flatnonzero(sizes == sizes.max())
    keep = best[np.argmin(first_node[best])]
    return np.flatnonzero(labels == keep).astype(np.int64)


def binarize(features: sp.spmatrix) -> sp.csr_matrix:
    """Step 7: explicit zeros dropped, every stored nonzero set to 1 (float32)."""
    x = sp.csr_matrix(features, dtype=np.float32, copy=True)
    x.sum_duplicates()
    x.eliminate_zeros()
    x.data[:] = 1.0
    return x


def subgraph(graph: RawGraph, keep: np.ndarray) -> RawGraph:
    """Nodes ``keep`` (ascending indices) of ``graph`` with the edges among them."""
    keep = np.asarray(keep, dtype=np.int64)
    return RawGraph(graph.adjacency[keep][:, keep].tocsr(), graph.features[keep].tocsr(), graph.labels[keep],
                     graph.nodes[keep], graph.classes)


def _steps_1_to_4(graph: RawGraph) -> RawGraph:
    adjacency = remove_self_loops(symmetric_unweighted(graph.adjacency))
    graph = RawGraph(adjacency, graph.features, graph.labels, graph.nodes, graph.classes)
    return subgraph(graph, largest_component(adjacency))


def standardize(graph: RawGraph, drop_classes_up_to: int = 0) -> RawGraph:
    """Shchur et al.'s preprocessing, steps 1–7 of the module docstring. ``graph.labels`` use −1 for "no label"."""
    graph = _steps_1_to_4(graph)
    if drop_classes_up_to > 0:
        labelled = graph.labels >= 0
        sizes = np.bincount(graph.labels[labelled], minlength=int(graph.labels.max(initial=-1)) + 1)
        small = np.flatnonzero(sizes <= drop_classes_up_to)
        graph = subgraph(graph, np.flatnonzero(~np.isin(graph.labels, small) | ~labelled))
        graph = _steps_1_to_4(graph)
    labelled = graph.labels >= 0
    classes, inverse = np.unique(graph.labels[labelled], return_inverse=True)
    labels = np.full(graph.labels.shape, -1, dtype=np.int64)
    labels[labelled] = inverse
    original = graph.classes[classes] if graph.classes.size else classes
    return RawGraph(graph.adjacency, binarize(graph.features), labels, graph.nodes, original.astype(np.int64))


def to_graph_columns(adjacency: sp.csr_matrix, features: sp.spmatrix | np.ndarray, labels: np.ndarray,
                     split: np.ndarray | None = None) -> GraphColumns:
    """One-graph :class:`GraphColumns`: edges = the nonzeros of the (symmetric) ``adjacency`` sorted by (src, dst);
    sparse ``x`` (or dense float32 ``x`` when ``features`` is a NumPy array); ``y`` int16; optional ``split`` int8."""
    a = sp.csr_matrix(adjacency)
    a.sum_duplicates()  # canonical: sorted, unique columns per row ⇒ (src, dst) sorted
    n = a.shape[0]
    src = np.repeat(np.arange(n, dtype=np.int32), np.diff(a.indptr))
    node = {"y": np.asarray(labels).astype(np.int16)}
    if split is not None:
        node["split"] = np.asarray(split).astype(np.int8)
    sparse = {}
    if isinstance(features, np.ndarray):
        node["x"] = features.astype(np.float32)
    else:
        sparse["x"] = SparseRows.from_scipy(features)
    return GraphColumns(num_nodes=np.array([n], dtype=np.int64), num_edges=np.array([a.nnz], dtype=np.int64),
                        src=src, dst=a.indices.astype(np.int32), node=node, sparse=sparse)


def split_codes(num_nodes: int, parts: dict[str, np.ndarray]) -> np.ndarray:
    """The node column ``split`` (int8) for node index sets ``parts`` (train/val/test); −1 elsewhere."""
    codes = np.full(num_nodes, -1, dtype=np.int8)
    for part, nodes in parts.items():
        if (codes[nodes] != -1).any():
            raise ValueError(f"split part {part!r} overlaps another part")
        codes[nodes] = SPLIT_CODES[part]
    return codes


def node_classification_meta(name: str, classes: int, features: FeatureSpec, source: dict,
                             split_sizes: dict[str, int] | None = None) -> DatasetMeta:
    """The description every single-graph node-classification source shares (cross-entropy, accuracy, one graph,
    no edge features); ``split_sizes`` only where the data comes with its own split."""
    return DatasetMeta(name=name, task="node_classification", loss="cross_entropy", metric="accuracy",
                       num_outputs=classes, num_graphs=1, node_features=features, edge_features=None,
                       pe_usage="add", split_sizes=split_sizes, source=source)
