"""Seconds per training epoch of the 100k presets on an AQSOL-sized graph set (and peak memory).

    python benchmarks/train_speed.py [--models GatedGCN GCN MLP] [--epochs 3] [--threads N]

Reference: the original DGL code's seconds per epoch on a 2-vCPU machine of the same kind (batch 128, 7,831
AQSOL training graphs): GatedGCN 3.6 s, GCN 1.9 s, MLP 1.2 s; the ``ratio`` column divides by them
(docs/performance.md lists the results).
Each model runs in its own process so that peak memory is per model; the median epoch is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REFERENCE = {"GatedGCN": 3.6, "GCN": 1.9, "MLP": 1.2}  # the original's seconds per epoch, where known


def measure(model: str, epochs: int, threads: int) -> dict:
    """Train one model's AQSOL 100k preset on the AQSOL-sized set in this process; returns the median seconds per epoch
    (after one warm-up epoch) and the peak memory."""
    import torch

    torch.set_num_threads(threads)
    sys.path.insert(0, str(Path(__file__).parent))
    from synthetic import molecule_like

    from gnnbench.config.presets import run_config
    from gnnbench.data.batching import GraphLoader, model_dtypes
    from gnnbench.data.store import GraphStore
    from gnnbench.models.build import build_model
    from gnnbench.training.last_epoch import make_optimizer
    from gnnbench.training.loop import train_epoch
    from gnnbench.training.losses import l1
    from gnnbench.training.metrics import MAE

    columns, meta = molecule_like()
    store = model_dtypes(GraphStore.from_columns(columns))
    config = run_config(f"molecules_graph_regression_{model}_AQSOL_100k")  # dense models: batch 4, padded
    torch.manual_seed(0)
    net = build_model(config, meta)
    optimizer = make_optimizer(net, config["init_lr"], config["weight_decay"])
    loader = GraphLoader(store, torch.arange(store.num_graphs), config["batch_size"], shuffle=True,
                         generator=torch.Generator().manual_seed(0))
    times = []
    for _ in range(epochs + 1):  # first epoch is warm-up
        start = time.perf_counter()
        train_epoch(net, loader, optimizer, l1, MAE(), torch.device("cpu"))
        times.append(time.perf_counter() - start)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"model": model, "seconds_per_epoch": statistics.median(times[1:]), "peak_memory_mb": peak_mb,
            "graphs": store.num_graphs, "mean_nodes": float(columns.num_nodes.mean()),
            "mean_edges": float(columns.num_edges.mean())}


def main() -> None:
    """Parse the command line and print one row per model (each in its own process): seconds per epoch, the original's,
    their ratio and peak memory."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["MLP", "GCN", "GraphSage", "GAT", "MoNet", "GIN", "GatedGCN",
                                                        "RingGNN", "3WLGNN"])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads (default: all cores)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.epochs, args.threads)))
        return
    print(f"{'model':10s} {'s/epoch':>8s} {'reference':>9s} {'ratio':>6s} {'peak MB':>8s}")
    for model in args.models:
        command = [sys.executable, __file__, "--one", model, "--epochs", str(args.epochs),
                   "--threads", str(args.threads)]
        r = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        reference = REFERENCE.get(model)
        ratio = f"{r['seconds_per_epoch'] / reference:6.2f}" if reference else f"{'-':>6s}"
        print(f"{model:10s} {r['seconds_per_epoch']:8.3f} {reference or '-':>9} {ratio} {r['peak_memory_mb']:8.0f}",
              flush=True)
    print(f"graph set: {r['graphs']} graphs, {r['mean_nodes']:.1f} nodes, {r['mean_edges']:.1f} directed edges each")


if __name__ == "__main__":
    main()
