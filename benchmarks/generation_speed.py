"""Seconds to generate and write the synthetic datasets (SBM PATTERN, SBM CLUSTER, CSL), and peak memory.

    python benchmarks/generation_speed.py [--full] [--datasets PATTERN CLUSTER CSL] [--seed 0]

Without ``--full`` the SBM sets are made at a tenth of their size (a quick check); with ``--full`` at the
benchmark's sizes: PATTERN 10,000 / 2,000 / 2,000 = 14,000 graphs (issue target: under a minute on 2 cores),
CLUSTER 10,000 / 1,000 / 1,000 = 12,000 graphs, CSL 150 graphs. Each dataset goes through
``gnnbench.pipeline.generate_dataset`` into a temporary folder, in its own process so that peak memory
(``resource.getrusage`` max RSS) is per dataset. Mean nodes / directed edges per graph are compared with
the published statistics of the released data (spec benchmarking-gnns.md §3.1, §3.2; paper Table 2).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# generator, full-size parameters (None = defaults), published mean nodes / directed edges per graph
DATASETS = {
    "PATTERN": ("sbm_pattern", {"num_train": 10000, "num_val": 2000, "num_test": 2000}, 118.9, 6098.9),
    "CLUSTER": ("sbm_cluster", {"num_train": 10000, "num_val": 1000, "num_test": 1000}, 117.2, 4303.9),
    "CSL": ("csl", None, 41.0, 164.0),
}
TARGET_SECONDS = {"PATTERN": 60.0}


def measure(name: str, full: bool, seed: int) -> dict:
    from gnnbench.pipeline import generate_dataset

    generator, params, _, _ = DATASETS[name]
    if params is not None and not full:
        params = {key: value // 10 for key, value in params.items()}
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        meta = generate_dataset(generator, name, params, seed, tmp)
        seconds = time.perf_counter() - start
        file_mb = (Path(tmp) / "graphs.parquet").stat().st_size / 2**20
    stats = meta.statistics["all"]
    return {"dataset": name, "graphs": meta.num_graphs, "seconds": seconds, "file_mb": file_mb,
            "mean_nodes": stats["nodes_per_graph"]["mean"], "mean_edges": stats["edges_per_graph"]["mean"],
            "peak_memory_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="benchmark sizes (default: a tenth of the SBM sets)")
    parser.add_argument("--datasets", nargs="+", choices=list(DATASETS), default=list(DATASETS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.full, args.seed)))
        return
    print(f"sizes: {'full' if args.full else 'a tenth (use --full for the benchmark sizes)'}, seed {args.seed}")
    print(f"{'dataset':8s} {'graphs':>7s} {'seconds':>8s} {'graphs/s':>9s} {'file MB':>8s} {'nodes':>7s} "
          f"{'(paper)':>7s} {'edges':>8s} {'(paper)':>8s} {'peak MB':>8s}")
    for name in args.datasets:
        command = [sys.executable, __file__, "--one", name, "--seed", str(args.seed)] + (["--full"] * args.full)
        r = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        _, _, paper_nodes, paper_edges = DATASETS[name]
        line = (f"{name:8s} {r['graphs']:7d} {r['seconds']:8.2f} {r['graphs'] / r['seconds']:9.0f} "
                f"{r['file_mb']:8.1f} {r['mean_nodes']:7.1f} {paper_nodes:7.1f} {r['mean_edges']:8.1f} "
                f"{paper_edges:8.1f} {r['peak_memory_mb']:8.0f}")
        if args.full and name in TARGET_SECONDS:
            verdict = "within" if r["seconds"] <= TARGET_SECONDS[name] else "OVER"
            line += f"   {verdict} the {TARGET_SECONDS[name]:.0f} s target"
        print(line, flush=True)


if __name__ == "__main__":
    main()
