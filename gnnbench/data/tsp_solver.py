"""Travelling-salesman tours for the TSP dataset (docs/datasets.md#tsp): LKH-3, Concorde and Held–Karp.

Distances. A tour is computed on the integer matrix ``round(‖p_i − p_j‖₂ × 10⁶)`` (:data:`SCALE`; the norm in
float64 from the float32 coordinates, ``np.rint`` rounding). LKH stores costs as C ``int`` and multiplies them
by its ``PRECISION`` (100) during the ascent, so a cost must stay below INT_MAX / 100 ≈ 2.1·10⁷; the largest
distance in the unit square, √2·10⁶ ≈ 1.4·10⁶, does. Ties among tours whose Euclidean lengths differ by less
than the rounding (≤ n·0.5·10⁻⁶) are resolved arbitrarily; otherwise an optimum of the integer matrix is an
optimum of the Euclidean instance.

LKH-3 (:func:`lkh_tour`) is called through elkai's matrix API, ``elkai.DistanceMatrix(m).solve_tsp(runs)``.
LKH reads its parameters afresh on every call with ``SEED = 1`` (elkai does not expose the seed) and has no
time limit, so a tour depends only on the matrix and ``runs``: the same instance gives the same tour in any
process, in any order. LKH is a heuristic: it proves nothing, but with ``MAX_TRIALS = n`` per run it finds the
optimum of instances of this size almost always (every Held–Karp-checked instance in the tests).

Memory. elkai 2.0.1 leaks about the size of the matrix text (~8·n² bytes) per call, ~0.7 MB on average for
n ∈ [50, 500]: 12,000 instances would leak ~8 GB. :func:`solve_tours` therefore solves a large job in
short-lived worker processes (this file run as a script, reading point sets from stdin), each given at most
:data:`LEAK_BUDGET` bytes of matrix text; small jobs are solved in-process. Workers also give parallelism
(``workers``); tours do not depend on how the job was split.

Concorde (:func:`concorde_tour`, ``solver="concorde"``): the ``concorde`` executable, when on PATH, solves a
TSPLIB ``EUC_2D`` file of the coordinates × :data:`SCALE` (written with ``repr``, so exactly the float32 points
× 10⁶), whose distances are ``(int)(d × 10⁶ + 0.5)`` — the same integer matrix as above except that exact
halves round up rather than to even (a measure-zero difference). It runs with ``-s 1`` (fixed seed) in a
private temporary folder and its ``.sol`` file (n, then the tour as 0-based ids) is read back. Concorde proves
optimality; LKH does not but agreed with the exact optimum in every test.

Held–Karp (:func:`held_karp`): the exact O(2ⁿ·n²) dynamic programme, NumPy-vectorised per subset, used by the
tests to check LKH on small instances (n ≤ 12 or so).

This module imports NumPy, elkai when solving, and two light modules of gnnbench (its errors and the TSPLIB
format), so that it runs as a worker script.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from gnnbench.data.tsplib import MAX_DISTANCE, TsplibInstance, euc2d_distances, write_tsplib
from gnnbench.errors import ConfigError, DataError, GnnbenchError

SCALE = 10**6  # distances are round(distance × SCALE) for the solvers
LEAK_BUDGET = 256 * 2**20  # bytes of matrix text one process may leak (elkai leaks ~ its input per call)
IN_PROCESS_BUDGET = 16 * 2**20  # a job below this (and workers == 1) is solved in the calling process
WORKER_BATCH = 64  # instances per worker process at most: progress is reported batch by batch
SOLVERS = ("lkh", "concorde")


def scaled_distances(points: np.ndarray) -> np.ndarray:
    """(n, n) int64 matrix ``round(‖p_i − p_j‖₂ × SCALE)`` of points (n, 2), computed in float64."""
    p = np.asarray(points, dtype=np.float64)
    diff = p[:, None, :] - p[None, :, :]
    return np.rint(np.sqrt((diff * diff).sum(-1)) * SCALE).astype(np.int64)


def tour_length(dist: np.ndarray, tour: np.ndarray) -> int:
    """Length of the closed tour ``tour`` (a permutation) under the integer matrix ``dist``."""
    tour = np.asarray(tour)
    return int(dist[tour, np.roll(tour, -1)].sum())


def lkh_tour(dist: np.ndarray, runs: int = 1) -> np.ndarray:
    """An (almost always optimal) tour of the symmetric integer matrix ``dist`` by LKH-3 (elkai), as a permutation.

    Instances with n ≤ 3 have a single tour up to direction and are not sent to LKH (elkai needs n ≥ 3).
    """
    n = len(dist)
    if n <= 3:
        return np.arange(n, dtype=np.int64)
    import elkai  # imported here: only solving needs it

    tour = elkai.DistanceMatrix(np.asarray(dist, dtype=np.int64).tolist()).solve_tsp(runs=runs)
    tour = np.asarray(tour[:-1], dtype=np.int64)  # elkai repeats the start node at the end
    if tour.shape != (n,) or not np.array_equal(np.sort(tour), np.arange(n)):
        raise RuntimeError(f"LKH returned a tour that is not a permutation of 0..{n - 1}")
    return tour


def _matrix_text_bytes(n: int) -> int:
    return 8 * n * n  # elkai's FULL_MATRIX text: ~8 characters per entry at SCALE = 10^6


def solve_tours(point_sets: Sequence[np.ndarray], runs: int = 1, workers: int = 1, solver: str = "lkh",
                progress: Callable[[int], None] | None = None) -> list[np.ndarray]:
    """Tours of every point set (each (n, 2)) on :func:`scaled_distances`, in order.

    ``solver`` is ``"lkh"`` (``runs`` LKH runs per instance) or ``"concorde"``. ``workers`` solver processes run
    at once; the result does not depend on ``workers``. ``progress(count)`` is called as instances finish.
    """
    if solver not in SOLVERS:
        raise ValueError(f"unknown TSP solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    if solver == "concorde":
        executable = concorde_executable()
        with ThreadPoolExecutor(max(1, workers)) as pool:  # threads only wait for their concorde process
            def one(points: np.ndarray) -> np.ndarray:
                tour = concorde_tour(points, executable)
                if progress is not None:
                    progress(1)
                return tour

            return list(pool.map(one, point_sets))
    sizes = [_matrix_text_bytes(len(p)) for p in point_sets]
    if workers == 1 and sum(sizes) <= IN_PROCESS_BUDGET:
        tours = []
        for p in point_sets:
            tours.append(lkh_tour(scaled_distances(p), runs))
            if progress is not None:
                progress(1)
        return tours
    batches, start, used = [], 0, 0
    for i, size in enumerate(sizes):  # consecutive batches within the leak budget (at least one set each)
        if i > start and (used + size > LEAK_BUDGET or i - start >= WORKER_BATCH):
            batches.append(range(start, i))
            start, used = i, 0
        used += size
    batches.append(range(start, len(sizes)))

    def solve_batch(batch: range) -> list[np.ndarray]:
        tours = _solve_in_worker([point_sets[i] for i in batch], runs)
        if progress is not None:
            progress(len(batch))
        return tours

    with ThreadPoolExecutor(max(1, workers)) as pool:  # threads only wait for their worker process
        return [tour for batch in pool.map(solve_batch, batches) for tour in batch]


def concorde_executable() -> str:
    """Path of ``concorde`` on PATH, or a clear error."""
    path = shutil.which("concorde")
    if path is None:
        raise ConfigError("TSP solver 'concorde' is selected but no `concorde` executable is on PATH; install "
                          "Concorde (https://www.math.uwaterloo.ca/tsp/concorde.html) or set solver: lkh")
    return path


def concorde_tour(points: np.ndarray, executable: str = "concorde") -> np.ndarray:
    """Optimal tour of ``points`` (n, 2) by the Concorde executable on the ×:data:`SCALE` ``EUC_2D`` instance."""
    n = len(points)
    if n <= 3:
        return np.arange(n, dtype=np.int64)
    with tempfile.TemporaryDirectory(prefix="gnnbench-concorde-") as tmp:
        problem, solution = Path(tmp) / "instance.tsp", Path(tmp) / "instance.sol"
        write_tsplib(problem, np.asarray(points, dtype=np.float64) * SCALE, "instance")
        proc = subprocess.run([executable, "-s", "1", "-x", "-o", str(solution), str(problem)], cwd=tmp,
                              capture_output=True, text=True)
        if proc.returncode != 0 or not solution.is_file():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no message"]
            raise GnnbenchError(f"concorde failed on a {n}-node instance (exit {proc.returncode}): {tail[0]}")
        numbers = np.array(solution.read_text().split(), dtype=np.int64)
    tour = numbers[1:]
    if numbers.size == 0 or numbers[0] != n or not np.array_equal(np.sort(tour), np.arange(n)):
        raise GnnbenchError(f"concorde wrote a solution that is not a tour of 0..{n - 1}; check the executable")
    return tour


def solve_instance(instance: TsplibInstance, runs: int = 1) -> tuple[np.ndarray, int]:
    """LKH-3 tour (0-based permutation) and its length under TSPLIB ``EUC_2D`` distances
    (:mod:`gnnbench.data.tsplib`), in one call in this process (elkai's leak of about the matrix text per call does not
    matter for a single instance)."""
    if runs < 1:
        raise ConfigError(f"--runs {runs}: must be at least 1")
    dist = euc2d_distances(instance.coords)
    if dist.size and int(dist.max()) > MAX_DISTANCE:
        raise DataError(f"instance {instance.name!r}: largest distance {int(dist.max())} exceeds {MAX_DISTANCE}, "
                        "which LKH's integer costs cannot hold; rescale the coordinates")
    tour = lkh_tour(dist, runs)
    return tour, tour_length(dist, tour)


def _solve_in_worker(point_sets: list[np.ndarray], runs: int) -> list[np.ndarray]:
    """Solve ``point_sets`` in a fresh Python process running this file (its leaked memory dies with it)."""
    counts = np.array([len(p) for p in point_sets], dtype=np.int64)
    buf = io.BytesIO()
    np.savez(buf, counts=counts, points=np.concatenate(point_sets), runs=np.int64(runs))
    proc = subprocess.run([sys.executable, os.path.abspath(__file__)], input=buf.getvalue(), capture_output=True)
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise RuntimeError(f"TSP solver worker failed (exit {proc.returncode}): {tail[0]}")
    flat = np.load(io.BytesIO(proc.stdout))
    return np.split(flat, np.cumsum(counts)[:-1])


def _worker_main() -> None:
    data = np.load(io.BytesIO(sys.stdin.buffer.read()))
    counts, runs = data["counts"], int(data["runs"])
    point_sets = np.split(data["points"], np.cumsum(counts)[:-1])
    result = os.dup(1)
    os.dup2(2, 1)  # anything the C solver prints goes to stderr, not into the result stream
    tours = [lkh_tour(scaled_distances(p), runs) for p in point_sets]
    out = io.BytesIO()
    np.save(out, np.concatenate(tours) if tours else np.zeros(0, dtype=np.int64))
    with os.fdopen(result, "wb") as stream:
        stream.write(out.getvalue())


def held_karp(dist: np.ndarray) -> tuple[int, np.ndarray]:
    """Exact optimum (length, tour) of the symmetric integer matrix ``dist`` by the Held–Karp recursion.

    ``best[S, j]`` = shortest path from node 0 through the set S ⊆ {1..n−1} ending at j ∈ S;
    ``best[S, j] = min_{i ∈ S∖{j}} best[S∖{j}, i] + d(i, j)``. Subsets are bitmasks (bit b = node b + 1), so
    S∖{j} < S and increasing masks are a valid order. Memory and time O(2ⁿ⁻¹·n): keep n ≤ ~13.
    """
    dist = np.asarray(dist, dtype=np.int64)
    n = len(dist)
    if n <= 3:
        tour = np.arange(n, dtype=np.int64)
        return tour_length(dist, tour) if n else 0, tour
    m = n - 1
    inf = np.iinfo(np.int64).max // 4  # inf + a distance does not overflow
    best = np.full((1 << m, m), inf, dtype=np.int64)
    parent = np.full((1 << m, m), -1, dtype=np.int64)
    d = dist[1:, 1:]
    bits = np.arange(m)
    best[1 << bits, bits] = dist[0, 1:]
    for mask in range(3, 1 << m):
        members = bits[(mask >> bits) & 1 == 1]
        if members.size < 2:
            continue
        prev = mask ^ (1 << members)  # S∖{j} for every j ∈ S (row j)
        cand = best[prev[:, None], members[None, :]] + d[members[None, :], members[:, None]]  # [j, i]
        arg = cand.argmin(1)
        best[mask, members] = cand[np.arange(members.size), arg]
        parent[mask, members] = members[arg]
    full = (1 << m) - 1
    closing = best[full] + dist[1:, 0]
    j = int(closing.argmin())
    length = int(closing[j])
    path, mask = [], full
    while j >= 0:
        path.append(j + 1)
        j, mask = int(parent[mask, j]), mask ^ (1 << j)
    return length, np.array([0, *path[::-1]], dtype=np.int64)


if __name__ == "__main__":
    _worker_main()
