"""Seconds to generate and write the synthetic datasets, peak memory, and TSP labelling throughput.

    python benchmarks/generation_speed.py [--full] [--datasets PATTERN CLUSTER CSL CYCLES GraphTheoryProp TSP]
                                          [--seed 0] [--tsp-instances 16] [--workers 2]

Datasets (each through ``gnnbench.pipeline.generate_dataset`` into a temporary folder, in its own process so that
peak memory, ``resource.getrusage`` max RSS, is per dataset). Without ``--full`` at a tenth of their size (a quick
check); with ``--full`` at the benchmark's sizes: PATTERN 14,000 graphs (target: under a minute on 2 cores),
CLUSTER 12,000, CSL 150, CYCLES 20,000 (target ~14 s), GraphTheoryProp 7,040 at seed 1234 (target 3.5–4.3 s).
These generators are single-process (CYCLES and GraphTheoryProp are sequential by construction), so "on 2
cores" equals the single-core time. Mean nodes / directed edges per graph are compared with the published
statistics (docs/datasets.md#generated-datasets-of-benchmarking-gnns: PyG's statistics of the released PATTERN and
CLUSTER graphs, Dwivedi et al.'s Table 2, the edge totals of PNA's released GraphTheoryProp graphs).
Every time is given as wall clock and as CPU time (user + system, of the process and its solver children): on a
machine shared with other jobs the wall clock includes their contention, the CPU time hardly does; targets are
checked against both.

TSP (the full dataset, 12,000 graphs of 50–500 nodes, solved by LKH, is hours of CPU; it is not generated here):

* labelling throughput at n = 275 fixed (the paper's mean size): ``--tsp-instances`` uniform instances solved by
  ``gnnbench.data.tsp_solver.solve_tours`` (LKH, 1 run, as the generator's default) with 1 worker — instances per
  second per core — and with ``--workers`` worker processes;
* an extrapolated full-dataset time on ``--workers`` cores: the mean solve time of instances drawn from the
  generator's own size distribution (n ~ U{50..500}; ``--tsp-instances`` of them, solved with 1 worker so the
  per-instance CPU time is measured) × 12,000 / workers, plus building the unlabelled graphs (k-NN) for one
  chunk of 128 graphs × 12,000 / 128 (that part is single-process).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# generator, full-size parameters (None = defaults), a tenth of them, published mean nodes / directed edges, seed
# (None = --seed)
DATASETS = {
    "PATTERN": ("sbm_pattern", {"num_train": 10000, "num_val": 2000, "num_test": 2000},
                {"num_train": 1000, "num_val": 200, "num_test": 200}, 118.9, 6098.9, None),
    "CLUSTER": ("sbm_cluster", {"num_train": 10000, "num_val": 1000, "num_test": 1000},
                {"num_train": 1000, "num_val": 100, "num_test": 100}, 117.2, 4303.9, None),
    "CSL": ("csl", None, None, 41.0, 164.0, None),
    "CYCLES": ("cycles", None, {"num_train": 900, "num_val": 100, "num_test": 1000}, 48.96, 87.84, None),
    # PNA's seed; 2 × (259,048 + 24,742 + 51,218) / 7,040 directed edges per graph (the original's totals)
    "GraphTheoryProp": ("graph_theory_prop", None,
                        {"train_graphs_per_size": 51, "val_graphs_per_size": 13, "test_graphs_per_size": 26},
                        18.818, 2 * (259048 + 24742 + 51218) / 7040, 1234),
}
TARGET_SECONDS = {"PATTERN": 60.0, "CYCLES": 14.0, "GraphTheoryProp": 4.3}
TSP_N = 275  # paper mean nodes per TSP graph (275.76)
TSP_GRAPHS = 12000  # 10,000 / 1,000 / 1,000


def _cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children (the LKH worker processes)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class _Timer:
    """Wall-clock and CPU seconds of a block."""

    def __enter__(self) -> _Timer:
        self.wall, self.cpu = time.perf_counter(), _cpu_seconds()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, _cpu_seconds() - self.cpu


def measure(name: str, full: bool, seed: int) -> dict:
    from gnnbench.pipeline import generate_dataset

    generator, full_params, tenth, _, _, fixed_seed = DATASETS[name]
    params = full_params if full else tenth
    with tempfile.TemporaryDirectory() as tmp:
        with _Timer() as timer:
            meta = generate_dataset(generator, name, params, seed if fixed_seed is None else fixed_seed, tmp)
        file_mb = (Path(tmp) / "graphs.parquet").stat().st_size / 2**20
    stats = meta.statistics["all"]
    return {"dataset": name, "graphs": meta.num_graphs, "seconds": timer.wall, "cpu": timer.cpu, "file_mb": file_mb,
            "mean_nodes": stats["nodes_per_graph"]["mean"], "mean_edges": stats["edges_per_graph"]["mean"],
            "peak_memory_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def measure_tsp(instances: int, workers: int, seed: int) -> dict:
    """LKH throughput at n = 275 (1 and ``workers`` workers) and the extrapolated full-dataset time."""
    from gnnbench.data import tsp_solver
    from gnnbench.data.generators import tsp

    rng = np.random.default_rng(seed)
    fixed = [rng.random((TSP_N, 2), dtype=np.float32) for _ in range(instances)]
    tsp_solver.solve_tours(fixed[:1], 1, 1)  # warm-up: imports, first LKH call
    with _Timer() as one:
        tsp_solver.solve_tours(fixed, 1, 1)
    with _Timer() as parallel:
        tsp_solver.solve_tours(fixed, 1, workers)

    params = {**tsp.TSP.defaults, "num_train": tsp.CHUNK, "num_val": 0, "num_test": 0}
    with _Timer() as build:
        _, point_sets = tsp.sample_graphs(params, seed)  # one chunk of 128 unlabelled graphs (k-NN included)
    sample = point_sets[:instances]  # the generator's size distribution, n ~ U{50..500}
    with _Timer() as solve:
        tsp_solver.solve_tours(sample, 1, 1)
    per = {"solve_wall": solve.wall / len(sample), "solve_cpu": solve.cpu / len(sample),
           "build_wall": build.wall / tsp.CHUNK, "build_cpu": build.cpu / tsp.CHUNK}
    return {"instances": instances, "workers": workers, "per_core_wall": instances / one.wall,
            "per_core_cpu": instances / one.cpu, "parallel_wall": instances / parallel.wall,
            "sample_mean_nodes": float(np.mean([len(p) for p in sample])), **per,
            "full_wall": TSP_GRAPHS * (per["solve_wall"] / workers + per["build_wall"]),
            "full_cpu": TSP_GRAPHS * (per["solve_cpu"] / workers + per["build_cpu"]),
            "load": os.getloadavg()[0],
            "peak_memory_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _run_child(args: list[str]) -> dict:
    command = [sys.executable, __file__, *args]
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="benchmark sizes (default: a tenth)")
    parser.add_argument("--datasets", nargs="+", choices=[*DATASETS, "TSP"], default=[*DATASETS, "TSP"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tsp-instances", type=int, default=16, help="TSP instances per throughput measurement")
    parser.add_argument("--workers", type=int, default=2, help="TSP solver processes for the parallel figures")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one == "TSP":
        print(json.dumps(measure_tsp(args.tsp_instances, args.workers, args.seed)))
        return
    if args.one:
        print(json.dumps(measure(args.one, args.full, args.seed)))
        return
    print(f"sizes: {'full' if args.full else 'a tenth (use --full for the benchmark sizes)'}, seed {args.seed} "
          "(GraphTheoryProp: 1234)")
    print(f"{'dataset':15s} {'graphs':>7s} {'seconds':>8s} {'CPU s':>7s} {'graphs/s':>9s} {'file MB':>8s} "
          f"{'nodes':>7s} {'(paper)':>7s} {'edges':>8s} {'(paper)':>8s} {'peak MB':>8s}")
    for name in [d for d in args.datasets if d != "TSP"]:
        r = _run_child(["--one", name, "--seed", str(args.seed)] + ["--full"] * args.full)
        _, _, _, paper_nodes, paper_edges, _ = DATASETS[name]
        line = (f"{name:15s} {r['graphs']:7d} {r['seconds']:8.2f} {r['cpu']:7.2f} {r['graphs'] / r['seconds']:9.0f} "
                f"{r['file_mb']:8.1f} {r['mean_nodes']:7.2f} {paper_nodes:7.2f} {r['mean_edges']:8.2f} "
                f"{paper_edges:8.2f} {r['peak_memory_mb']:8.0f}")
        if args.full and name in TARGET_SECONDS:
            target = TARGET_SECONDS[name]
            wall, cpu = ("within" if v <= target else "OVER" for v in (r["seconds"], r["cpu"]))
            line += f"   target {target:.1f} s: {wall} by wall clock, {cpu} by CPU time"
        print(line, flush=True)
    if "TSP" in args.datasets:
        r = _run_child(["--one", "TSP", "--seed", str(args.seed), "--tsp-instances", str(args.tsp_instances),
                        "--workers", str(args.workers)])
        print(f"TSP labelling (LKH-3, 1 run) at n = {TSP_N}, {r['instances']} instances: "
              f"{r['per_core_cpu']:.2f} instances/s/core by CPU time ({r['per_core_wall']:.2f} by wall clock), "
              f"{r['parallel_wall']:.2f} instances/s with {r['workers']} workers (wall)")
        print(f"TSP full dataset ({TSP_GRAPHS} graphs, n ~ U{{50..500}}) on {r['workers']} cores, extrapolated: "
              f"{r['full_cpu'] / 3600:.2f} h by CPU time ({r['full_wall'] / 3600:.2f} h by wall clock) = "
              f"{TSP_GRAPHS} × {r['solve_cpu']:.3f} s solve (mean of {r['instances']} sampled instances, mean n "
              f"{r['sample_mean_nodes']:.0f}) / {r['workers']} + {TSP_GRAPHS} × {r['build_cpu'] * 1000:.1f} ms "
              f"k-NN graph building; load average {r['load']:.1f}, peak {r['peak_memory_mb']:.0f} MB", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall times above include "
          "contention from other processes; CPU times do not)")


if __name__ == "__main__":
    main()
