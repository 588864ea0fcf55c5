"""Seconds per training epoch of every model's 100k PATTERN preset on a PATTERN-sized set (and peak memory).

    python benchmarks/model_speed.py [--models GCN GAT ...] [--graphs 384] [--threads N] [--device cpu|cuda]

A PATTERN epoch is 10,000 graphs of ~117 nodes and ~4,700 directed edges. Training through all of it on a
2-core CPU takes minutes per model, so the script trains on ``--graphs`` generated PATTERN graphs (same
generator, same size distribution), measures the median seconds per optimizer step after one warm-up pass,
and reports steps × median for the full 10,000-graph epoch (batch size from the preset: 128 for message
passing models, 4 for the dense WL-GNNs with gnnbench's padded mini-batches). Each model runs in its own
process so that the peak memory is per model.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

MODELS = ["MLP", "GCN", "GraphSage", "GAT", "MoNet", "GIN", "GatedGCN", "RingGNN", "3WLGNN"]
EPOCH_GRAPHS = 10_000


def measure(model: str, graphs: int, threads: int, device: str) -> dict:
    """Train one model's 100k PATTERN preset on ``graphs`` generated graphs and time its steps; returns the median step
    time, the extrapolated 10,000-graph epoch and the peak memory."""
    import torch

    torch.set_num_threads(threads)
    from gnnbench.config.presets import run_config
    from gnnbench.data.batching import GraphLoader, model_dtypes
    from gnnbench.data.generators import generate
    from gnnbench.data.store import GraphStore
    from gnnbench.models.build import build_model
    from gnnbench.training.last_epoch import make_optimizer
    from gnnbench.training.loop import train_epoch
    from gnnbench.training.losses import get_loss
    from gnnbench.training.metrics import get_metric

    columns, meta = generate("sbm_pattern", "PATTERN", {"num_train": graphs, "num_val": 1, "num_test": 1,
                                                        "num_patterns": 1}, 0)
    store = model_dtypes(GraphStore.from_columns(columns))
    config = run_config(f"SBMs_node_clustering_{model}_PATTERN_100k")
    dev = torch.device(device)
    torch.manual_seed(0)
    net = build_model(config, meta).to(dev)
    optimizer = make_optimizer(net, config["init_lr"], config["weight_decay"])
    batch_size = config["batch_size"]
    loader = GraphLoader(store, torch.arange(graphs), batch_size, shuffle=True,
                         generator=torch.Generator().manual_seed(0))
    loss_fn, metric = get_loss(meta.loss, config), get_metric(meta.metric, config)

    step_times: list[float] = []

    class Timed:  # times each optimizer step including collation, as the training loop sees it
        def __iter__(self):
            last = time.perf_counter()
            for batch in loader:
                yield batch
                now = time.perf_counter()
                step_times.append(now - last)
                last = now

    train_epoch(net, loader, optimizer, loss_fn, metric, dev)  # warm-up
    if dev.type == "cuda":
        torch.cuda.synchronize()
    train_epoch(net, Timed(), optimizer, loss_fn, metric, dev)
    per_step = statistics.median(step_times)
    steps = math.ceil(EPOCH_GRAPHS / batch_size)
    return {"model": model, "seconds_per_epoch": per_step * steps, "seconds_per_step": per_step,
            "batch_size": batch_size, "peak_memory_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "mean_nodes": float(columns.num_nodes.mean()), "mean_edges": float(columns.num_edges.mean())}


def main() -> None:
    """Parse the command line and print one row per model, each measured in its own process."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--graphs", type=int, default=384, help="PATTERN graphs to train on (default 384)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads (default: all cores)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.graphs, args.threads, args.device)))
        return
    print(f"{'model':10s} {'batch':>5s} {'s/step':>8s} {'s/epoch (10k graphs)':>21s} {'peak MB':>8s}")
    for model in args.models:
        command = [sys.executable, __file__, "--one", model, "--graphs", str(args.graphs), "--threads",
                   str(args.threads), "--device", args.device]
        r = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        print(f"{model:10s} {r['batch_size']:5d} {r['seconds_per_step']:8.3f} {r['seconds_per_epoch']:21.1f} "
              f"{r['peak_memory_mb']:8.0f}", flush=True)
    print(f"graph set: {r['mean_nodes']:.1f} nodes, {r['mean_edges']:.1f} directed edges per graph")


if __name__ == "__main__":
    main()
