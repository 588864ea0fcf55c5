"""Seconds per training epoch and peak memory on the two graph shapes of the side-by-side comparison with the
original benchmark code (torch 2.2.1 + DGL 2.1.0 on CPU, the same machine kind), and the ratio to its times.

    python benchmarks/peer_shapes.py [--shapes pattern molecules] [--models GCN GatedGCN ...] [--repeats 1]

Workloads, exactly those of the comparison:

* ``pattern``: the first 500 training graphs of ``sbm_pattern`` with its default parameters (100 pattern instances,
  100 / 100 validation and test graphs, which do not affect the training graphs) and seed 1: 57,477 nodes and
  2,816,952 directed edges; the ``SBMs_node_clustering_<model>_PATTERN_100k`` presets.
* ``molecules``: the 7,831 AQSOL-sized graphs of ``benchmarks/synthetic.py`` (seed 0): 137,557 nodes and 278,556
  directed edges; the ``molecules_graph_regression_<model>_AQSOL_100k`` presets.

Batch size 128 (the presets'), shuffled, 2 torch threads, one warm-up epoch, then the median of 3 epochs. Each
(shape, model) runs in its own process, so the peak RSS (``ru_maxrss``) is that model's. ``--repeats`` runs every
process again and reports the median of the repeats (the machine is noisy). The last column is the mean training
loss of the final epoch: for the same seed it must not change between two commits that claim identical results
(beyond float rounding where a commit says so). Like a workflow job, each process keeps freed memory for reuse
(``gnnbench.allocator``); ``GNNBENCH_MALLOC=system python benchmarks/peer_shapes.py`` measures with glibc's defaults.

The original's seconds per epoch (``ORIGINAL``): where the side-by-side comparison printed them (PATTERN GraphSage,
GIN, GCN, GatedGCN; AQSOL-sized MLP 1.2, GCN 1.9, GatedGCN 3.6 s) those; for the other models a time derived from
the ratio that comparison reported (docs/performance.md#against-the-original-code-on-the-two-graph-shapes says how).
Peak memory of the original: 4.7 GB for PATTERN GatedGCN; the others are not known.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

MODELS = ["MLP", "GCN", "GraphSage", "GAT", "MoNet", "GIN", "GatedGCN"]
SHAPES = ["pattern", "molecules"]
PATTERN_PARAMS = {"num_train": 500, "num_val": 100, "num_test": 100}  # sbm_pattern defaults otherwise
PATTERN_SEED = 1
BATCH_SIZE = 128
THREADS = 2
EPOCHS = 3

# The original code's seconds per epoch on this machine kind (module docstring for where each comes from).
ORIGINAL = {
    "pattern": {"MLP": 0.50, "GCN": 0.67, "GraphSage": 0.69, "GAT": 3.65, "MoNet": 6.58, "GIN": 0.745,
                "GatedGCN": 31.0},
    "molecules": {"MLP": 1.2, "GCN": 1.9, "GraphSage": 1.77, "GAT": 1.60, "MoNet": 2.57, "GIN": 1.75,
                  "GatedGCN": 3.6},
}
ORIGINAL_PEAK_MB = {("pattern", "GatedGCN"): 4700}


def workload(shape: str):
    """(graph store, dataset meta, preset name pattern, number of training graphs: the store's first ones)."""
    from gnnbench.data.batching import model_dtypes
    from gnnbench.data.store import GraphStore

    if shape == "pattern":
        from gnnbench.data.generators import generate

        columns, meta = generate("sbm_pattern", "PATTERN", PATTERN_PARAMS, PATTERN_SEED)
        store = model_dtypes(GraphStore.from_columns(columns))
        return store, meta, "SBMs_node_clustering_{}_PATTERN_100k", PATTERN_PARAMS["num_train"]
    sys.path.insert(0, str(Path(__file__).parent))
    from synthetic import molecule_like

    columns, meta = molecule_like()
    store = model_dtypes(GraphStore.from_columns(columns))
    return store, meta, "molecules_graph_regression_{}_AQSOL_100k", store.num_graphs


def measure(shape: str, model: str) -> dict:
    """Train one model on one shape in this process (one warm-up epoch, then ``EPOCHS``); returns the median seconds per
    epoch, the peak RSS, the last epoch's training loss and the workload's size."""
    try:  # as in a workflow job (gnnbench.allocator); GNNBENCH_MALLOC=system measures without
        from gnnbench.allocator import keep_freed_memory

        keep_freed_memory()
    except ImportError:  # a commit before gnnbench.allocator (A/B against older commits)
        pass
    import torch

    torch.set_num_threads(THREADS)
    from gnnbench.config.presets import run_config
    from gnnbench.data.batching import GraphLoader
    from gnnbench.models.build import build_model
    from gnnbench.training.last_epoch import make_optimizer
    from gnnbench.training.loop import train_epoch
    from gnnbench.training.losses import get_loss
    from gnnbench.training.metrics import get_metric

    store, meta, preset, graphs = workload(shape)
    config = run_config(preset.format(model))
    torch.manual_seed(0)
    net = build_model(config, meta)
    optimizer = make_optimizer(net, config["init_lr"], config["weight_decay"])
    loader = GraphLoader(store, torch.arange(graphs), BATCH_SIZE, shuffle=True,
                         generator=torch.Generator().manual_seed(0))
    loss_fn, metric = get_loss(meta.loss, config), get_metric(meta.metric, config)
    times, loss = [], None
    for _ in range(EPOCHS + 1):  # the first epoch is the warm-up
        start = time.perf_counter()
        loss, _ = train_epoch(net, loader, optimizer, loss_fn, metric, torch.device("cpu"))
        times.append(time.perf_counter() - start)
    nodes, edges = int(store.num_nodes[:graphs].sum()), int(store.num_edges[:graphs].sum())
    return {"seconds": statistics.median(times[1:]), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            / 1024, "loss": loss, "graphs": graphs, "nodes": nodes, "edges": edges}


def main() -> None:
    """Parse the command line and print one row per (shape, model), each run in ``--repeats`` fresh processes: seconds
    per epoch, the original's, their ratio, peak memory and final loss."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", nargs="+", default=SHAPES, choices=SHAPES)
    parser.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    parser.add_argument("--repeats", type=int, default=1, help="processes per (shape, model); the median is shown")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(*args.one)))
        return
    print(f"{'shape':10s} {'model':10s} {'s/epoch':>8s} {'original':>8s} {'ratio':>6s} {'peak MB':>8s} "
          f"{'final loss':>12s}")
    for shape in args.shapes:
        for model in args.models:
            runs = []
            for _ in range(args.repeats):
                command = [sys.executable, __file__, "--one", shape, model]
                out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
                runs.append(json.loads(out.splitlines()[-1]))
            seconds = statistics.median(r["seconds"] for r in runs)
            peak = statistics.median(r["peak_mb"] for r in runs)
            original = ORIGINAL[shape][model]
            ratio = f"{seconds / original:6.2f}" if original else f"{'-':>6s}"
            print(f"{shape:10s} {model:10s} {seconds:8.3f} {original or '-':>8} {ratio} {peak:8.0f} "
                  f"{runs[0]['loss']:12.6f}", flush=True)
        print(f"{shape}: {runs[0]['graphs']} graphs, {runs[0]['nodes']} nodes, {runs[0]['edges']} directed edges")


if __name__ == "__main__":
    main()
