"""Laplacian eigenvector positional encodings (Dwivedi et al., Appendix E.1, Eq. 48), as the released code computes
them (graphdeeplearning/benchmarking-gnns, ``positional_encoding`` in ``data/molecules.py``, ``data/SBMs.py``, ...).

For a graph with adjacency A (A[u, v] = 1 for an edge u→v) and in-degrees d clipped at 1:
    L = I − D^{-1/2} A D^{-1/2}
Eigenvalues are sorted ascending, the first (trivial) eigenvector is dropped and the next k are kept, as
raw columns (no normalisation beyond unit norm, no sign convention). Graphs with n ≤ k nodes get zero
columns after their n − 1 non-trivial eigenvectors, so every node has exactly k values.

Computation is batched: graphs are grouped by node count, each group's Laplacians are stacked into a
(B, n, n) tensor and decomposed by one ``torch.linalg.eigh`` call (float64) — symmetric for the
undirected graphs of every dataset that uses PE; a directed group falls back to the general ``eig`` and
sorts by real part like the original's ``numpy.linalg.eig``.

Solvers (``solver``, from the dataset's ``meta.pe_solver``):

``dense``   the exact decomposition above — the default, used for every dataset of many small graphs.
``sparse``  the original's COLLAB variant (``data/COLLAB.py``): the Laplacian as a SciPy sparse matrix (duplicate edges
            summed, as the dense path counts them), ``scipy.sparse.linalg.eigs(L, k=k+1, which='SR', tol=1e-2)``,
            eigenpairs sorted by eigenvalue (NumPy's complex order: real part, then imaginary), columns 1..k, real
            part. Approximate by design (tol 1e-2). One graph of OGBL-COLLAB's size (235,868 nodes) has no dense
            decomposition in memory. ARPACK's random start vector is replaced by a fixed one (``ones`` plus a seeded
            uniform perturbation, seed 0), so the same graph gives the same file. A dataset with a graph too
            small for ARPACK (n ≤ k + 2) is decomposed by the dense path.

Decisions (docs/protocols/benchmarking-gnns.md#exact-positional-encodings): the original uses the approximate
ARPACK solver (``eigs``, tol 1e-2) for SBM and COLLAB; gnnbench computes exact eigenvectors for SBM (small graphs) and
keeps ARPACK for COLLAB (``pe_solver: sparse`` in its metadata). Where eigenvalues are degenerate (e.g. CSL's
circulant graphs, or the zero eigenvalue of every connected component of COLLAB) the basis inside an eigenspace is
arbitrary, as in the original; the random sign flip applied during training (:func:`random_sign_flip`) treats signs
as arbitrary, never at evaluation.
"""

from __future__ import annotations

import numpy as np
import torch

from gnnbench.data.store import GraphColumns

MAX_BATCH_ENTRIES = 1 << 24  # float64 entries per stacked group (~128 MB)


def laplacian_pe(columns: GraphColumns, k: int, solver: str = "dense") -> np.ndarray:
    """(total nodes, k) float32 positional encodings for every graph of ``columns``, in node order."""
    if k < 1:
        raise ValueError("k must be positive")
    if solver not in ("dense", "sparse"):
        raise ValueError(f"unknown PE solver {solver!r}")
    if solver == "sparse" and (columns.num_nodes > k + 2).all():
        return _sparse_pe(columns, k)
    num_nodes, num_edges = columns.num_nodes, columns.num_edges
    node_ptr, edge_ptr = columns.node_ptr, columns.edge_ptr
    out = np.zeros((int(num_nodes.sum()), k), dtype=np.float32)
    src_all = torch.from_numpy(columns.src.astype(np.int64))
    dst_all = torch.from_numpy(columns.dst.astype(np.int64))
    for n in np.unique(num_nodes):
        n = int(n)
        if n < 2:
            continue  # a single node has no non-trivial eigenvector: zeros
        same_size = np.flatnonzero(num_nodes == n)
        per_call = max(1, MAX_BATCH_ENTRIES // (n * n))
        for start in range(0, len(same_size), per_call):
            graphs = same_size[start : start + per_call]
            edge_ids = _ranges(edge_ptr[graphs], num_edges[graphs])
            graph_of_edge = torch.from_numpy(np.repeat(np.arange(len(graphs)), num_edges[graphs]))
            vectors = _eigenvectors(n, len(graphs), graph_of_edge, src_all[edge_ids], dst_all[edge_ids], k)
            rows = _ranges(node_ptr[graphs], num_nodes[graphs])
            out[rows, : vectors.shape[-1]] = vectors.reshape(-1, vectors.shape[-1])
    return out


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    first_out = np.cumsum(counts) - counts
    return np.arange(int(counts.sum())) + np.repeat(starts - first_out, counts)


def _eigenvectors(n: int, batch: int, graph: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                  k: int) -> np.ndarray:
    """Columns 1..k (at most n − 1 of them) of the sorted eigenvectors of each stacked Laplacian."""
    adj = torch.zeros(batch, n, n, dtype=torch.float64)
    adj.index_put_((graph, src, dst), torch.ones(src.numel(), dtype=torch.float64), accumulate=True)
    d_inv_sqrt = adj.sum(dim=1).clamp(min=1.0).pow(-0.5)  # in-degree = column sum of A[src, dst]
    lap = torch.eye(n, dtype=torch.float64) - d_inv_sqrt[:, :, None] * adj * d_inv_sqrt[:, None, :]
    keep = min(k, n - 1)
    symmetric = (adj == adj.transpose(1, 2)).flatten(1).all(dim=1)  # decided per graph, not per group
    vectors = torch.empty(batch, n, n, dtype=torch.float64)
    if symmetric.any():
        vectors[symmetric] = torch.linalg.eigh(lap[symmetric]).eigenvectors  # ascending eigenvalues
    if not symmetric.all():
        values, general = torch.linalg.eig(lap[~symmetric])
        order = values.real.argsort(dim=-1, stable=True)
        vectors[~symmetric] = torch.take_along_dim(general.real, order[:, None, :], dim=-1)
    return vectors[:, :, 1 : keep + 1].to(torch.float32).numpy()


def _sparse_pe(columns: GraphColumns, k: int) -> np.ndarray:
    """The ``sparse`` solver (module doc), graph by graph (one graph for COLLAB)."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import eigs

    out = np.zeros((int(columns.num_nodes.sum()), k), dtype=np.float32)
    node_ptr, edge_ptr = columns.node_ptr, columns.edge_ptr
    for g, n in enumerate(columns.num_nodes.tolist()):
        src = columns.src[edge_ptr[g]:edge_ptr[g + 1]]
        dst = columns.dst[edge_ptr[g]:edge_ptr[g + 1]]
        adj = sp.csr_matrix((np.ones(src.size), (src, dst)), shape=(n, n))  # duplicates summed
        d_inv_sqrt = sp.diags(np.asarray(adj.sum(axis=0)).ravel().clip(1) ** -0.5)  # in-degree = column sum
        lap = sp.eye(n, format="csr") - d_inv_sqrt @ adj @ d_inv_sqrt
        start = 1.0 + np.random.default_rng(0).uniform(-0.5, 0.5, n)  # fixed, not ARPACK's random start
        values, vectors = eigs(lap, k=k + 1, which="SR", tol=1e-2, v0=start)
        vectors = vectors[:, np.argsort(values)]
        out[node_ptr[g]:node_ptr[g + 1]] = np.real(vectors[:, 1:k + 1])
    return out


def random_sign_flip(pe: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Multiply each PE dimension by a random ±1 shared by all nodes of the batch (training only).

    Draws ``torch.rand(k)`` and flips where the draw is < 0.5, as the benchmark's training loops do.
    """
    # Without a generator the draw comes from the global CPU RNG (as the original's torch.rand(k)), whose state
    # the training checkpoint saves, so resumed runs draw the same signs on any device.
    signs = torch.rand(pe.shape[1], generator=generator, device=generator.device if generator is not None else "cpu")
    signs = torch.where(signs >= 0.5, 1.0, -1.0).to(device=pe.device, dtype=pe.dtype)
    return pe * signs
