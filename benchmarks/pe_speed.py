"""Speed of gnnbench's batched Laplacian PE against the original per-graph NumPy/SciPy code.

    python benchmarks/pe_speed.py [--repeat 3] [--baseline-repeat 1] [--threads N] [--cases pattern,csl,aqsol]

Graph sets (all generated here, nothing downloaded):
    PATTERN-like  generator ``sbm_pattern`` with 1,000/100/100 graphs (~115 nodes), k = 2 and k = 20
    CSL           generator ``csl``: 150 circulant graphs of 41 nodes, k = 20
    AQSOL-like    ``benchmarks/synthetic.py`` ``molecule_like()``: 7,831 graphs of ~17.6 nodes, k = 4

Baselines, each one graph at a time in a Python loop as the benchmark's loaders do it (L built with
scipy.sparse from the edge list, in-degrees clipped at 1, as the released code's loaders do; see
docs/protocols/benchmarking-gnns.md#laplacian-positional-encodings):
    np.linalg.eig    the original dense variant: eig of the dense L, argsort, real parts, columns 1..k
                     (zero-padded when n ≤ k, as the molecule loader does)
    sparse eigs      the original SBM variant: scipy.sparse.linalg.eigs(L, k=k+1, which='SR', tol=1e-2);
                     PATTERN only; graphs with k + 1 ≥ n − 1 (where ARPACK refuses) are skipped and counted
    scipy eigh       scipy.linalg.eigh of the dense L (exact, symmetric solver, still per graph)

gnnbench's ``laplacian_pe`` is timed after one warm-up call; every timing is the best of its repeats.

On a shared or small machine, multithreaded BLAS/OpenMP on these small matrices can be many times slower
than one thread (threads spin-wait for a busy core); for stable numbers run everything single-threaded:
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 python benchmarks/pe_speed.py --threads 1
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import scipy.sparse.linalg  # noqa: E402
import torch  # noqa: E402
from synthetic import molecule_like  # noqa: E402

from gnnbench.data.generators import generate  # noqa: E402
from gnnbench.data.store import GraphColumns  # noqa: E402
from gnnbench.features.laplacian_pe import laplacian_pe  # noqa: E402


def graphs_of(columns: GraphColumns) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(n, src, dst) per graph: the per-graph objects the original loaders iterate over (not timed)."""
    edge_ptr = columns.edge_ptr
    return [(int(n), columns.src[edge_ptr[i] : edge_ptr[i + 1]], columns.dst[edge_ptr[i] : edge_ptr[i + 1]])
            for i, n in enumerate(columns.num_nodes)]


def sparse_laplacian(n: int, src: np.ndarray, dst: np.ndarray) -> sp.csr_matrix:
    """L = I − N A N with A = adjacency_matrix_scipy (A[src, dst]) and N = diag(in-degree.clip(1) ** −0.5)."""
    adj = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    norm = sp.diags(np.bincount(dst, minlength=n).clip(1) ** -0.5, dtype=float)
    return sp.eye(n) - norm @ adj @ norm


def _columns(vectors: np.ndarray, n: int, k: int) -> np.ndarray:
    pe = vectors[:, 1 : k + 1]
    if n <= k:  # molecule loader: pad with zero columns to width k
        pe = np.concatenate([pe, np.zeros((n, k - n + 1))], axis=1)
    return pe.astype(np.float32)


def dense_eig(n: int, src: np.ndarray, dst: np.ndarray, k: int) -> np.ndarray | None:
    lap = sparse_laplacian(n, src, dst)
    values, vectors = np.linalg.eig(lap.toarray())
    idx = values.argsort()
    return _columns(np.real(vectors[:, idx]), n, k)


def sparse_eigs(n: int, src: np.ndarray, dst: np.ndarray, k: int) -> np.ndarray | None:
    if k + 1 >= n - 1:
        return None  # ARPACK's eigs needs k < n − 1
    lap = sparse_laplacian(n, src, dst)
    values, vectors = scipy.sparse.linalg.eigs(lap, k=k + 1, which="SR", tol=1e-2)
    vectors = vectors[:, values.argsort()]
    return np.real(vectors[:, 1 : k + 1]).astype(np.float32)


def dense_eigh(n: int, src: np.ndarray, dst: np.ndarray, k: int) -> np.ndarray | None:
    lap = sparse_laplacian(n, src, dst)
    _, vectors = scipy.linalg.eigh(lap.toarray())
    return _columns(vectors, n, k)


def time_loop(fn: Callable, graphs: list, k: int, repeat: int) -> tuple[float, int]:
    """Best wall time of running ``fn`` over every graph and concatenating the results; graphs skipped."""
    best, skipped = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        outs = [fn(n, src, dst, k) for n, src, dst in graphs]
        kept = [o for o in outs if o is not None]
        if kept:
            np.concatenate(kept)
        best = min(best, time.perf_counter() - start)
        skipped = len(outs) - len(kept)
    return best, skipped


def time_batched(columns: GraphColumns, k: int, repeat: int) -> float:
    laplacian_pe(GraphColumns(columns.num_nodes[:8], columns.num_edges[:8], columns.src, columns.dst), k)  # warm-up
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        laplacian_pe(columns, k)
        best = min(best, time.perf_counter() - start)
    return best


def run_case(name: str, columns: GraphColumns, k: int, baselines: list[tuple[str, Callable]], repeat: int,
             baseline_repeat: int) -> None:
    graphs = graphs_of(columns)
    count = len(graphs)
    sizes = columns.num_nodes
    print(f"\n{name}: {count} graphs, {sizes.min()}–{sizes.max()} nodes (mean {sizes.mean():.1f}), "
          f"{len(np.unique(sizes))} distinct sizes, k = {k}")
    ours = time_batched(columns, k, repeat)
    print(f"  {'method':<34}{'seconds':>10}{'graphs/s':>12}{'gnnbench speed-up':>20}")
    print(f"  {'gnnbench laplacian_pe (batched)':<34}{ours:>10.3f}{count / ours:>12.0f}{'':>20}")
    for label, fn in baselines:
        seconds, skipped = time_loop(fn, graphs, k, baseline_repeat)
        done = count - skipped
        note = f"  ({skipped} graphs skipped: k+1 ≥ n−1)" if skipped else ""
        print(f"  {label:<34}{seconds:>10.3f}{done / seconds:>12.0f}{seconds / ours * count / done:>19.1f}×{note}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="repeats of gnnbench's batched call (best is shown)")
    parser.add_argument("--baseline-repeat", type=int, default=1, help="repeats of each per-graph baseline loop")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--cases", default="pattern,csl,aqsol", help="comma-separated subset of pattern,csl,aqsol")
    args = parser.parse_args(argv)
    cases = set(args.cases.split(","))
    if not cases <= {"pattern", "csl", "aqsol"}:
        parser.error(f"--cases: unknown case(s) {sorted(cases - {'pattern', 'csl', 'aqsol'})}")
    if args.threads:
        torch.set_num_threads(args.threads)
    env = " ".join(f"{v}={os.environ[v]}" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
                   if v in os.environ)
    print(f"torch {torch.__version__} ({torch.get_num_threads()} threads), numpy {np.__version__}, "
          f"scipy {scipy.__version__}, {os.cpu_count()} CPUs; {env or 'BLAS/OpenMP thread counts: defaults'}")

    eig = ("per-graph np.linalg.eig (dense)", dense_eig)
    eigs = ("per-graph sparse eigs tol=1e-2", sparse_eigs)
    eigh = ("per-graph scipy.linalg.eigh", dense_eigh)

    if "pattern" in cases:
        pattern, _ = generate("sbm_pattern", "PATTERN", {"num_train": 1000, "num_val": 100, "num_test": 100}, 0)
        for k in (2, 20):
            run_case("PATTERN-like (sbm_pattern)", pattern, k, [eig, eigs, eigh], args.repeat, args.baseline_repeat)
    if "csl" in cases:
        csl, _ = generate("csl", "CSL", {}, 0)
        run_case("CSL", csl, 20, [eig, eigh], args.repeat, args.baseline_repeat)
    if "aqsol" in cases:
        molecules, _ = molecule_like()
        run_case("AQSOL-like (molecule_like)", molecules, 4, [eig, eigh], args.repeat, args.baseline_repeat)


if __name__ == "__main__":
    main()
