"""Sparse primitives shared by the models, on plain torch ops (the training hot path does not import PyG, whose
import alone costs ~5 s and ~170 MB per process). One module per concern; every public name is re-exported here.

* :mod:`~gnnbench.models.sparse.scatter`: segment reductions over an index vector (sum, mean, max, softmax), degrees
  and self loops — what PyG's ``torch_geometric.utils`` provides; empty segments give 0, like PyG and DGL's builtin
  reducers.
* :mod:`~gnnbench.models.sparse.adjacency`: :class:`SparseAdjacency`, a weighted adjacency as CSR with its
  transpose kept for the backward pass (:func:`unit_adjacency`: edge counts).
* :mod:`~gnnbench.models.sparse.maxima`: :class:`InEdges` / :class:`MaxPlan`: edges sorted by destination and
  per-node maxima over padded in-degree blocks (or, on CPU, a max-reducing CSR product) with an (N, d) backward
  (GraphSAGE's max-pool aggregator), also over B stacked message sets at once.
* :mod:`~gnnbench.models.sparse.attention`: :class:`AttentionGraph` / :func:`attention` / :func:`attention_heads`:
  softmax attention over in-edges for many heads at once on block-diagonal sparse products (``embedding_bag`` on
  CPU), with a hand-written backward (GAT); sources and destinations may be different node sets; dropout on the
  coefficients and on the aggregated features.
* :mod:`~gnnbench.models.sparse.bags`: :class:`BagPlan` / :func:`bag_mm`: sums of weighted table rows
  (``embedding_bag``) with the transposed grouping prebuilt for the backward pass; :class:`MaskedPlan` with dropout
  on the entries.
* :mod:`~gnnbench.models.sparse.pattern`: :class:`CSRPattern` builds bag plans for a fixed sparse matrix replicated
  over B blocks (one block per initialisation of a stacked model) and, with dropout, from a fresh Bernoulli draw
  over the stored entries of every block (:meth:`CSRPattern.dropout_plan`).
* :mod:`~gnnbench.models.sparse.dropout`: dropout draws from the global torch RNG: :func:`bernoulli_mask`,
  :func:`dropout_mask`, :func:`bernoulli_positions`.
* :mod:`~gnnbench.models.sparse.dense`: padded dense batches: :func:`to_dense_batch` (node rows → (B, n_max, F)
  and a mask) and :func:`to_dense_adjacency` ((B, n_max, n_max)), PyG's ``to_dense_batch`` / ``to_dense_adj`` as
  one scatter each (the dense-pooling models).
"""

from gnnbench.models.sparse.adjacency import SparseAdjacency, unit_adjacency
from gnnbench.models.sparse.attention import AttentionGraph, attention, attention_heads
from gnnbench.models.sparse.bags import BagPlan, MaskedPlan, bag_mm
from gnnbench.models.sparse.dense import local_node_index, to_dense_adjacency, to_dense_batch
from gnnbench.models.sparse.dropout import (
    POSITIONS_BELOW,
    bernoulli_mask,
    bernoulli_positions,
    dropout_mask,
    random_words,
)
from gnnbench.models.sparse.maxima import InEdges, MaxPlan, lexsort_pairs
from gnnbench.models.sparse.pattern import CSRPattern
from gnnbench.models.sparse.scatter import (
    add_self_loops,
    degree,
    scatter_max,
    scatter_mean,
    scatter_sum,
    segment_softmax,
)

__all__ = [
    "POSITIONS_BELOW",
    "AttentionGraph",
    "BagPlan",
    "CSRPattern",
    "InEdges",
    "MaskedPlan",
    "MaxPlan",
    "SparseAdjacency",
    "add_self_loops",
    "attention",
    "attention_heads",
    "bag_mm",
    "bernoulli_mask",
    "bernoulli_positions",
    "degree",
    "dropout_mask",
    "lexsort_pairs",
    "local_node_index",
    "random_words",
    "scatter_max",
    "scatter_mean",
    "scatter_sum",
    "segment_softmax",
    "to_dense_adjacency",
    "to_dense_batch",
    "unit_adjacency",
]
