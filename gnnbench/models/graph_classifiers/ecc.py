"""ECC (edge-conditioned convolutions with a precomputed Kron-reduction hierarchy; Simonovsky and Komodakis, CVPR
2017) as run by Errica et al. (released code: ``models/graph_classifiers/ECC.py`` and
``datasets/manager.py`` ``_precompute_kron_indices`` / ``_vertex_decimation`` / ``_power_iteration`` of
diningphil/gnn-comparison, on PyTorch Geometric 1.4's ``ECConv`` = ``NNConv``).

Coarsening hierarchy (:func:`kron_hierarchy`, computed once per dataset in :meth:`ECC.prepare`):

* L₀ = I − D^{-1/2} A D^{-1/2} of the undirected graph (networkx ``normalized_laplacian_matrix``: an isolated node
  has a 0 diagonal entry).
* Each reduction, on the current level's L (n nodes): if n = 1 the next level is the single node with L = [[1]]
  (the original's ``torch.eye(1)``); otherwise the sign of the dominant eigenvector of L by 30 power iterations
  (b ← Lb / ‖Lb‖) from a start drawn uniformly from [−1, −0.5) (the original's ``rand * 0.5 − 1``), V⁺ = the
  nodes with component ≥ 0, and the Kron reduction L' = L₊₊ − L₊₋ L₋₋⁻¹ L₋₊ on V⁺ (node order kept).
  Degenerate cases keep the whole graph and L unchanged: V⁺ empty (e.g. L = c·I, where b keeps the sign of its
  all-negative start), V⁻ empty, or ‖Lb‖ = 0 (the original then gets NaN, which puts no node in V⁺ nor V⁻ and
  also keeps everything).
* Level l + 1's graph: the nonzero entries of the float32 reduced Laplacian, diagonal included, as edges i→j
  with scalar value L[i, j] (the original's ``dense_to_sparse``, row-major). Level 0's graph is the input graph
  with every edge valued 1.
* ``laplacian_threshold`` t (config key, default 0.0 = off): when t > 0 every entry < t is zeroed before the
  conversion, negative off-diagonal entries included — the original does this with t = 1e-4 on DD (``if
  dataset.name == 'DD'``), which leaves only (positive) diagonal entries there. Levels ≥ 1 only; V⁺ is unaffected.
* Only the levels the model uses are computed: ``num_layers`` reductions (keep sets of levels 0..num_layers−1,
  graphs of levels 1..num_layers); the original precomputes 10, of which the model reads the same first ones.

Model (:class:`ECC`): for level l = 0..num_layers−1 an ECC layer = 3 × [ECConv → ReLU → BatchNorm → Dropout(p)]
(widths in→d, d→d, d→d) on the level-l graph, then pooling = keep only the rows of V⁺(l) (node order kept);
then ECConv(d→d) → ReLU → BN → Dropout(p) on level ``num_layers``; global mean pool; Linear(d→d) → ReLU →
Dropout(``dropout_final``) → Linear(d→#classes). ECConv (:class:`ECConv`) = PyG ``NNConv(aggr='add')`` with
root weight and bias: x'_i = Θx_i + Σ_{j→i} x_j·h(e_ji) + b, h = Linear(1,16) → ReLU → Linear(16, F·F') viewed
as (F, F') (PyG's row-major view). Batches name their graphs by ``graph_ids``; every level's edges and keep
masks are gathered for the batch with a few vectorised index operations (no per-graph loop in forward).

Decisions (docs/protocols/fair-comparison.md#networks):

* Random start of the power iteration: the original draws from the unseeded global torch RNG while preparing the
  dataset once (the hierarchy is then fixed for every run). Here the start of graph g at level l is drawn from
  ``numpy.random.default_rng([kron_seed, g, l])`` (``kron_seed`` = 0 unless given to the constructor): the
  hierarchy is a deterministic function of the dataset, shared by all runs and folds as in the original, and
  independent of the number of levels computed. As in the original, the start decides the overall sign of the
  eigenvector estimate (the sign of its projection on the dominant eigenvector), hence which of the two sign
  classes becomes V⁺; a draw-for-draw reproduction of the original's hierarchy is impossible (unseeded).
* Batching: the power iterations of all graphs of equal size at a level run as one stacked product (the same
  code path for every stack size, so a graph's result does not depend on the other graphs); the Kron reductions
  run graph by graph. BLAS is limited to one thread meanwhile (when ``threadpoolctl`` is installed — it comes
  with scikit-learn): faster for these small matrices, and the rounding, hence every sign decision, does not
  depend on the machine's core count.
* Precision: the Laplacians and reductions are computed in float64 (the original: float32) and stored as float32;
  an entry that is zero in exact arithmetic but cancels to a tiny nonzero (e.g. the reduced Laplacian of a
  connected graph reduced to one node, whose exact value is 0) is kept as an edge, as the original keeps its
  float32 remainder.
* A singular L₋₋ (possible only when V⁻ contains a whole connected component) makes ``torch.inverse`` fail in the
  original; here the Moore–Penrose pseudo-inverse is used instead.
* Self loops of the stored graph (none in the TU data) would enter A as in networkx (A_ii = 1).
* ECConv is computed in factorised form: with z_e = ReLU(W₁e + b₁) (16 values per edge), Σ_j x_j·h(e_j) =
  (Σ_j x_j ⊗ z_j)·W₂ + (Σ_j x_j)·B₂, so the (E, F, F') per-edge weight tensor of ``NNConv`` is never built
  (E·F·16 values instead); on level 0, where every edge value is 1, h is one matrix and the aggregation is a plain
  neighbour sum. Equal to ``NNConv`` up to rounding (tested with copied weights).
* Initialisation: PyG 1.4 draws the root weight Θ and the bias from U(±1/√F); here they are one ``nn.Linear(F,
  F')`` whose PyTorch default is the same distribution; the edge network and BN layers are PyTorch defaults.
* :meth:`ECC.prepare` reuses the last hierarchy computed in the process for the same graphs, threshold and seed
  (:func:`cached_kron_hierarchy`; a deeper one serves shallower models by its prefix): every training run builds a
  new model and calls ``prepare``.
* The optimiser (SGD) and the ECC learning-rate schedule (the released ``models/schedulers/ECCScheduler.py``) are
  the trainer's concern: :mod:`gnnbench.training.best_epoch`, docs/protocols/fair-comparison.md#protocol-and-training.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import gather_ranges
from gnnbench.data.meta import DatasetMeta
from gnnbench.models.blocks import reset_children
from gnnbench.models.graph_classifiers.base import GraphClassifier
from gnnbench.models.sparse import scatter_mean, scatter_sum

POWER_ITERATIONS = 30
EDGE_HIDDEN = 16


# ---------------------------------------------------------------------------------------------------------
# Coarsening hierarchy


def normalized_laplacian(num_nodes: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """I − D^{-1/2} A D^{-1/2} (float64) of the undirected graph with edges src–dst (networkx's
    ``normalized_laplacian_matrix``: D^{-1/2}(D − A)D^{-1/2}, 1/√0 → 0)."""
    adj = np.zeros((num_nodes, num_nodes))
    adj[src, dst] = 1.0
    adj[dst, src] = 1.0
    deg = adj.sum(axis=1)
    inv_sqrt = np.zeros_like(deg)
    np.divide(1.0, np.sqrt(deg), out=inv_sqrt, where=deg > 0)
    return np.diag((deg > 0).astype(np.float64)) - inv_sqrt[:, None] * adj * inv_sqrt[None, :]


def power_start(seed: int, graph: int, level: int, num_nodes: int) -> np.ndarray:
    """The power iteration's start for graph ``graph`` at level ``level``: uniform in [−1, −0.5)."""
    return np.random.default_rng([seed, graph, level]).random(num_nodes) * 0.5 - 1.0


def dominant_signs(laps: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """30 power iterations b ← Lb / ‖Lb‖ for a stack of equal-size Laplacians (k, n, n) from ``starts`` (k, n).

    Returns (b ≥ 0 (k, n) bool, valid (k,) bool); valid is False where an iterate vanished (Lb = 0), the
    original's NaN case. One code path for every stack size, so a graph's result does not depend on the others.
    """
    b = starts.copy()
    valid = np.ones(laps.shape[0], dtype=bool)
    for _ in range(POWER_ITERATIONS):
        b = np.matmul(laps, b[:, :, None])[:, :, 0]
        norm = np.linalg.norm(b, axis=1)
        vanished = ~(norm > 0)
        valid &= ~vanished
        norm[vanished] = 1.0
        b /= norm[:, None]
    return b >= 0, valid


def kron_reduce(lap: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """L₊₊ − L₊₋ L₋₋⁻¹ L₋₊ over the kept nodes (order kept); pseudo-inverse if L₋₋ is singular."""
    drop = ~keep
    l_pp, l_pm = lap[np.ix_(keep, keep)], lap[np.ix_(keep, drop)]
    l_mm, l_mp = lap[np.ix_(drop, drop)], lap[np.ix_(drop, keep)]
    try:
        solved = np.linalg.solve(l_mm, l_mp)
    except np.linalg.LinAlgError:
        solved = np.linalg.pinv(l_mm) @ l_mp
    return l_pp - l_pm @ solved


def decimate(lap: np.ndarray, positive: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """One reduction of a level with n ≥ 2 nodes given the sign pattern of the dominant eigenvector estimate
    (None: the iteration vanished): (V⁺ as a bool mask over the current nodes, Laplacian of the next level).
    Degenerate cases (None, V⁺ empty, V⁻ empty) keep every node and L."""
    if positive is None or not positive.any() or positive.all():
        return np.ones(lap.shape[0], dtype=bool), lap
    return positive, kron_reduce(lap, positive)


@dataclass
class KronHierarchy:
    """The coarsened graphs of every graph of a store, level by level, in concatenated (store-like) form.

    ``num_nodes[l]`` (G,) int64 for levels 0..R; ``keep[l]`` (Σ num_nodes[l],) bool, V⁺ of level l for
    l < R; for levels l ≥ 1 ``num_edges[l]`` (G,), ``edge_index[l]`` (2, Σ num_edges[l]) int64 local indices
    (row-major per graph) and ``edge_value[l]`` float32 (index 0 of the edge lists is unused: level 0 is the
    input graph).
    """

    num_nodes: list[torch.Tensor]
    keep: list[torch.Tensor]
    num_edges: list[torch.Tensor | None]
    edge_index: list[torch.Tensor | None]
    edge_value: list[torch.Tensor | None]

    @property
    def num_reductions(self) -> int:
        """The number of coarsening steps (levels − 1)."""
        return len(self.keep)

    def prefix(self, num_reductions: int) -> KronHierarchy:
        """The first ``num_reductions`` reductions (the same levels: every start is seeded per graph and level)."""
        r = num_reductions
        return KronHierarchy(self.num_nodes[:r + 1], self.keep[:r], self.num_edges[:r + 1], self.edge_index[:r + 1],
                             self.edge_value[:r + 1])

    def to(self, device: torch.device | str) -> KronHierarchy:
        """A copy with every tensor on ``device``."""

        def move(items):
            return [None if t is None else t.to(device) for t in items]

        return KronHierarchy(move(self.num_nodes), move(self.keep), move(self.num_edges), move(self.edge_index),
                             move(self.edge_value))

    @staticmethod
    def _starts(counts: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(counts, 0) - counts

    def keep_mask(self, level: int, graph_ids: torch.Tensor) -> torch.Tensor:
        """V⁺ of level ``level`` for the batch's graphs, over the batch's level-``level`` nodes."""
        counts = self.num_nodes[level].index_select(0, graph_ids)
        starts = self._starts(self.num_nodes[level]).index_select(0, graph_ids)
        return self.keep[level].index_select(0, gather_ranges(starts, counts))

    def edges(self, level: int, graph_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(edge_index (2, E) with batch-level node indices, edge values (E,)) of level ``level`` ≥ 1."""
        counts = self.num_edges[level].index_select(0, graph_ids)
        starts = self._starts(self.num_edges[level]).index_select(0, graph_ids)
        idx = gather_ranges(starts, counts)
        node_counts = self.num_nodes[level].index_select(0, graph_ids)
        offsets = torch.repeat_interleave(self._starts(node_counts), counts, output_size=idx.numel())
        return self.edge_index[level].index_select(1, idx) + offsets, self.edge_value[level].index_select(0, idx)


def kron_hierarchy(num_nodes: np.ndarray, num_edges: np.ndarray, src: np.ndarray, dst: np.ndarray,
                   num_reductions: int, threshold: float = 0.0, seed: int = 0) -> KronHierarchy:
    """The hierarchy (module docstring) of every graph, given per-graph node/edge counts and concatenated local
    edge lists (both directions) as in a graph store.

    One-off precomputation in dense float64 NumPy: the power iterations run on stacks of equal-size Laplacians,
    the Kron reductions graph by graph, BLAS on one thread (module docstring).
    """
    try:
        from threadpoolctl import threadpool_limits
        single_thread = threadpool_limits(limits=1, user_api="blas")
    except ImportError:  # pragma: no cover - scikit-learn brings it
        single_thread = contextlib.nullcontext()
    num_nodes = np.asarray(num_nodes, dtype=np.int64)
    edge_ptr = np.concatenate([[0], np.cumsum(num_edges)]).astype(np.int64)
    num_graphs, levels = len(num_nodes), num_reductions + 1
    sizes = [np.zeros(num_graphs, dtype=np.int64) for _ in range(levels)]
    edge_counts = [np.zeros(num_graphs, dtype=np.int64) for _ in range(levels)]
    keeps: list[list[np.ndarray]] = [[] for _ in range(num_reductions)]
    rows, cols, vals = ([[] for _ in range(levels)] for _ in range(3))
    with single_thread:
        laps = [normalized_laplacian(int(n), src[edge_ptr[g]:edge_ptr[g + 1]], dst[edge_ptr[g]:edge_ptr[g + 1]])
                for g, n in enumerate(num_nodes)]  # one-off loop
        sizes[0][:] = num_nodes
        for level in range(num_reductions):
            positive: list[np.ndarray | None] = [None] * num_graphs
            by_size: dict[int, list[int]] = {}
            for g, lap in enumerate(laps):
                by_size.setdefault(lap.shape[0], []).append(g)
            for n, graphs in by_size.items():
                if n < 2:
                    continue
                signs, valid = dominant_signs(np.stack([laps[g] for g in graphs]),
                                              np.stack([power_start(seed, g, level, n) for g in graphs]))
                for i, g in enumerate(graphs):
                    positive[g] = signs[i] if valid[i] else None
            for g in range(num_graphs):
                if laps[g].shape[0] == 1:  # cannot reduce further: the original sets the next level to eye(1)
                    keep, laps[g] = np.ones(1, dtype=bool), np.eye(1)
                else:
                    keep, laps[g] = decimate(laps[g], positive[g])
                keeps[level].append(keep)
                entries = laps[g].astype(np.float32)
                if threshold > 0:
                    entries[entries < threshold] = 0.0
                r, c = np.nonzero(entries)
                sizes[level + 1][g], edge_counts[level + 1][g] = laps[g].shape[0], r.size
                rows[level + 1].append(r)
                cols[level + 1].append(c)
                vals[level + 1].append(entries[r, c])

    def cat(parts: list[np.ndarray], dtype) -> np.ndarray:
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

    edge_index: list[torch.Tensor | None] = [None]
    edge_value: list[torch.Tensor | None] = [None]
    for level in range(1, levels):
        edge_index.append(torch.from_numpy(np.stack([cat(rows[level], np.int64), cat(cols[level], np.int64)])))
        edge_value.append(torch.from_numpy(cat(vals[level], np.float32)))
    return KronHierarchy(
        num_nodes=[torch.from_numpy(s) for s in sizes],
        keep=[torch.from_numpy(cat(k, bool)) for k in keeps],
        num_edges=[None] + [torch.from_numpy(c) for c in edge_counts[1:]],
        edge_index=edge_index,
        edge_value=edge_value,
    )


_CACHE: dict[tuple, KronHierarchy] = {}  # the last dataset's deepest hierarchy (runs of one process share it)


def cached_kron_hierarchy(num_nodes: np.ndarray, num_edges: np.ndarray, src: np.ndarray, dst: np.ndarray,
                          num_reductions: int, threshold: float = 0.0, seed: int = 0) -> KronHierarchy:
    """:func:`kron_hierarchy`, reusing the last one computed in this process for the same graphs, threshold and
    seed (keyed by a SHA-1 of the counts and edge lists) when it has at least ``num_reductions`` reductions."""
    digest = hashlib.sha1()
    for array in (num_nodes, num_edges, src, dst):
        array = np.ascontiguousarray(array, dtype=np.int64)
        digest.update(str(array.shape).encode())
        digest.update(array.tobytes())
    key = (digest.hexdigest(), float(threshold), int(seed))
    cached = _CACHE.get(key)
    if cached is None or cached.num_reductions < num_reductions:
        _CACHE.clear()
        cached = _CACHE[key] = kron_hierarchy(num_nodes, num_edges, src, dst, num_reductions, threshold, seed)
    return cached.prefix(num_reductions)


# ---------------------------------------------------------------------------------------------------------
# Layers and model


class ECConv(nn.Module):
    r"""PyG ``NNConv(in, out, nn, aggr='add', root_weight=True, bias=True)`` with the edge network
    h = Linear(1, 16) → ReLU → Linear(16, F·F') viewed as (F, F') (row-major); messages flow
    edge_index[0] → edge_index[1]:

        x'_i = Θ x_i + Σ_{j→i} x_j · h(e_ji) + b

    Evaluated in factorised form (module docstring), never building the (E, F, F') per-edge weights. PyTorch's
    default initialisation (Θ and b are one ``nn.Linear``, PyG 1.4's U(±1/√F) law).

    Args:
        in_channels: input width F.
        out_channels: output width F'.

    Shapes:
        - input: node features (N, F), edge indices (2, E), edge values (E,) or None (every edge valued 1). The
          plain ``(x, edge_index)`` call is the batch path: nothing to build or cache.
        - output: node features (N, F').
    """

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.nn = nn.Sequential(nn.Linear(1, EDGE_HIDDEN), nn.ReLU(),
                                nn.Linear(EDGE_HIDDEN, in_channels * out_channels))
        self.root = nn.Linear(in_channels, out_channels)  # Θ and the bias b

    def reset_parameters(self) -> None:
        """Reset the edge network and the root Linear."""
        reset_children(self)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_value: torch.Tensor | None = None
                ) -> torch.Tensor:
        """x'_i = Θ x_i + Σ_{j→i} x_j · h(e_ji) + b (class docstring); ``edge_value`` None: every edge valued 1."""
        src, dst = edge_index
        num_nodes, f_in, f_out = x.shape[0], self.in_channels, self.out_channels
        x_src = x.index_select(0, src)
        if edge_value is None:
            weight = self.nn(x.new_ones(1, 1)).view(f_in, f_out)
            return scatter_sum(x_src, dst, num_nodes) @ weight + self.root(x)
        first, last = self.nn[0], self.nn[2]
        z = F.relu(first(edge_value.view(-1, 1).to(x.dtype)))  # (E, 16)
        outer = torch.bmm(x_src.unsqueeze(2), z.unsqueeze(1)).reshape(-1, f_in * EDGE_HIDDEN)  # x_j ⊗ z_j
        w2 = last.weight.view(f_in, f_out, EDGE_HIDDEN).permute(0, 2, 1).reshape(f_in * EDGE_HIDDEN, f_out)
        b2 = last.bias.view(f_in, f_out)
        messages = scatter_sum(outer, dst, num_nodes) @ w2 + scatter_sum(x_src, dst, num_nodes) @ b2
        return messages + self.root(x)


class ECCLayer(nn.Module):
    r"""One ECC level: 3 × [ECConv → ReLU → BatchNorm → Dropout(p)] (widths in→d, d→d, d→d) on one graph:

        x ← Dropout(BN(ReLU(ECConv_k(x, edge_index, edge_value))))      k = 1, 2, 3

    Args:
        dim_input: input width F.
        dim_embedding: width d of the three convolutions.
        dropout: dropout probability after each convolution.

    Shapes:
        - input: node features (N, F), edge indices (2, E), edge values (E,) or None (every edge valued 1).
        - output: node features (N, d).
    """

    def __init__(self, dim_input: int, dim_embedding: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.conv1 = ECConv(dim_input, dim_embedding)
        self.conv2 = ECConv(dim_embedding, dim_embedding)
        self.conv3 = ECConv(dim_embedding, dim_embedding)
        self.bn1 = nn.BatchNorm1d(dim_embedding)
        self.bn2 = nn.BatchNorm1d(dim_embedding)
        self.bn3 = nn.BatchNorm1d(dim_embedding)
        self.dropout = dropout

    def reset_parameters(self) -> None:
        """Reset the three convolutions and batch norms."""
        reset_children(self)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_value: torch.Tensor | None = None
                ) -> torch.Tensor:
        """Node features (N, d) after the three ECConv → ReLU → BN → Dropout steps."""
        for conv, bn in ((self.conv1, self.bn1), (self.conv2, self.bn2), (self.conv3, self.bn3)):
            x = F.dropout(bn(F.relu(conv(x, edge_index, edge_value))), p=self.dropout, training=self.training)
        return x


class ECC(GraphClassifier):
    """ECC of the fair comparison (module docstring: computation, original files, decisions).

    Config: ``num_layers`` (ECC layers = pooling steps, ≥ 1), ``dim_embedding``, ``dropout``, ``dropout_final``;
    optional ``laplacian_threshold`` (default 0.0 = off; 1e-4 reproduces the original's DD setting).
    """

    required = ("num_layers", "dim_embedding", "dropout", "dropout_final")

    def __init__(self, dim_features: int, dim_target: int, num_layers: int, dim_embedding: int, dropout: float,
                 dropout_final: float, laplacian_threshold: float = 0.0, kron_seed: int = 0) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"num_layers must be at least 1 (ECC layers), got {num_layers}")
        if not laplacian_threshold >= 0:
            raise ValueError(f"laplacian_threshold must be >= 0 (0 = off), got {laplacian_threshold}")
        self.num_ecc_layers = num_layers
        self.dropout, self.dropout_final = dropout, dropout_final
        self.laplacian_threshold, self.kron_seed = float(laplacian_threshold), int(kron_seed)
        self.layers = nn.ModuleList(
            ECCLayer(dim_features if i == 0 else dim_embedding, dim_embedding, dropout) for i in range(num_layers))
        self.final_conv = ECConv(dim_embedding, dim_embedding)
        self.final_conv_bn = nn.BatchNorm1d(dim_embedding)
        self.fc1 = nn.Linear(dim_embedding, dim_embedding)
        self.fc2 = nn.Linear(dim_embedding, dim_target)
        self.hierarchy: KronHierarchy | None = None
        self._device_hierarchy: tuple[torch.device, KronHierarchy] | None = None

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta, sizes: np.ndarray) -> ECC:
        """ECC with the config's keys (class docstring); ``sizes`` is not used (the hierarchy comes from
        :meth:`prepare`)."""
        if meta.node_features is None:
            raise ValueError("ECC needs node features")
        return cls(meta.node_features.size, meta.num_outputs, int(cfg["num_layers"]), int(cfg["dim_embedding"]),
                   float(cfg["dropout"]), float(cfg["dropout_final"]),
                   float(cfg.get("laplacian_threshold", 0.0)))

    def prepare(self, store) -> None:
        """Precompute the coarsening hierarchy (``num_layers`` reductions) of every graph of ``store``."""
        edge_index = store.edge_index.numpy()
        self.hierarchy = cached_kron_hierarchy(store.num_nodes.numpy(), store.num_edges.numpy(), edge_index[0],
                                               edge_index[1], self.num_ecc_layers, self.laplacian_threshold,
                                               self.kron_seed)
        self._device_hierarchy = None

    def _hierarchy_on(self, device: torch.device) -> KronHierarchy:
        if self.hierarchy is None:
            raise RuntimeError("ECC.prepare(store) must be called before the forward pass (coarsening hierarchy)")
        if self._device_hierarchy is None or self._device_hierarchy[0] != device:
            self._device_hierarchy = (device, self.hierarchy.to(device))
        return self._device_hierarchy[1]

    def forward(self, batch) -> torch.Tensor:
        """Logits (B, C) of the batch's graphs, which it finds in the prepared hierarchy by ``graph_ids``."""
        if batch.graph_ids is None:
            raise ValueError("ECC needs batches that carry graph_ids (the store ids of their graphs)")
        x, node_graph = batch.x, batch.batch
        hierarchy = self._hierarchy_on(x.device)
        graph_ids = batch.graph_ids.to(x.device)
        edge_index, edge_value = batch.edge_index, None  # level 0: the input graph, every edge valued 1
        for level, layer in enumerate(self.layers):
            if level > 0:
                edge_index, edge_value = hierarchy.edges(level, graph_ids)
            x = layer(x, edge_index, edge_value)
            keep = hierarchy.keep_mask(level, graph_ids)
            if keep.numel() != x.shape[0]:
                raise ValueError("the batch's graphs do not match the store given to ECC.prepare")
            x, node_graph = x[keep], node_graph[keep]
        edge_index, edge_value = hierarchy.edges(self.num_ecc_layers, graph_ids)
        x = F.dropout(self.final_conv_bn(F.relu(self.final_conv(x, edge_index, edge_value))), p=self.dropout,
                      training=self.training)
        x = scatter_mean(x, node_graph, batch.num_graphs)
        x = F.dropout(F.relu(self.fc1(x)), p=self.dropout_final, training=self.training)
        return self.fc2(x)
