"""Seconds per epoch of link-prediction training on a synthetic graph of OGBL-COLLAB's size (and peak memory).

    python benchmarks/collab_speed.py [--models GCN GatedGCN] [--threads N] [--device cpu] [--pe]

The graph has COLLAB's counts — 235,868 nodes, 1,179,052 undirected training edges (2,358,104 directed), 128 node
floats, [weight, year] per edge; 60,084 / 46,329 validation / test positives and 100,000 negatives each — with a
heavy-tailed degree distribution (Chung–Lu: endpoints drawn proportionally to Pareto weights), not COLLAB's real
edges. One epoch = :func:`gnnbench.training.link_prediction.train_link_epoch` over all training positives (36
mini-batches of 32,768 positives and as many random pairs, a full-graph forward and backward each) plus one
:func:`~gnnbench.training.link_prediction.evaluate_link` (what the run does after every epoch). Models use their
``COLLAB_edge_classification_<model>_40k`` preset; each model runs in its own process (peak memory per model), after
one warm-up mini-batch. ``--pe`` also times the Laplacian PE (k = 20) of the graph by the sparse solver COLLAB uses.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

NODES, EDGES = 235_868, 1_179_052
VALID, TEST, NEGATIVES = 60_084, 46_329, 100_000


def collab_like(seed: int = 0):
    """(store, {part: PartPairs}, meta) of a synthetic graph with COLLAB's sizes."""
    import numpy as np
    import torch

    from gnnbench.data.batching import model_dtypes
    from gnnbench.data.catalog import describe_dataset
    from gnnbench.data.store import GraphColumns, GraphStore
    from gnnbench.training.link_prediction import PartPairs

    rng = np.random.default_rng(seed)
    weight = rng.pareto(2.0, NODES) + 1.0  # heavy-tailed expected degrees

    def endpoints(count: int) -> np.ndarray:
        return rng.choice(NODES, size=(count, 2), p=weight / weight.sum())

    edge = endpoints(EDGES)
    src = np.empty(2 * EDGES, dtype=np.int32)
    dst = np.empty(2 * EDGES, dtype=np.int32)
    src[0::2], dst[0::2], src[1::2], dst[1::2] = edge[:, 0], edge[:, 1], edge[:, 1], edge[:, 0]
    attr = np.stack([rng.integers(1, 5, EDGES), rng.integers(1963, 2018, EDGES)], axis=1).astype(np.float32)
    columns = GraphColumns(num_nodes=np.array([NODES]), num_edges=np.array([2 * EDGES]), src=src, dst=dst,
                           node={"x": rng.normal(size=(NODES, 128)).astype(np.float32)},
                           edge={"edge_attr": np.repeat(attr, 2, axis=0)})
    parts = {"train": PartPairs(torch.from_numpy(edge.T.copy()), torch.zeros(2, 0, dtype=torch.int64))}
    for part, count in (("val", VALID), ("test", TEST)):
        # the run scores only the first |pos| negatives (see link_prediction's docstring)
        parts[part] = PartPairs(torch.from_numpy(endpoints(count).T.copy()),
                                torch.from_numpy(rng.integers(0, NODES, (2, NEGATIVES))[:, :count].copy()))
    return model_dtypes(GraphStore.from_columns(columns)), parts, describe_dataset("OGBL-COLLAB")


def measure(model: str, threads: int, device: str) -> dict:
    """Build the COLLAB-sized graph and one model's 40k preset, then time one epoch of link-prediction training and its
    evaluation; returns seconds, peak memory and validation Hits@50."""
    import torch

    from gnnbench.config.presets import run_config
    from gnnbench.models.build import build_model, count_parameters
    from gnnbench.training.last_epoch import make_optimizer
    from gnnbench.training.link_prediction import evaluate_link, full_graph, train_link_epoch
    from gnnbench.training.losses import link_bce

    torch.set_num_threads(threads)
    dev = torch.device(device)
    start = time.perf_counter()
    store, parts, meta = collab_like()
    build_s = time.perf_counter() - start
    config = run_config(f"COLLAB_edge_classification_{model}_40k")
    torch.manual_seed(0)
    net = build_model(config, meta).to(dev)
    optimizer = make_optimizer(net, config["init_lr"], config["weight_decay"])
    graph = full_graph(store, None).to(dev)
    parts = {k: p.to(dev) for k, p in parts.items()}
    shuffle, batch = torch.Generator().manual_seed(0), config["batch_size"]
    train_link_epoch(net, graph, parts["train"].pos[:, :batch], optimizer, link_bce, batch, shuffle)  # warm-up
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    train_link_epoch(net, graph, parts["train"].pos, optimizer, link_bce, batch, shuffle)
    sync()
    train_s = time.perf_counter() - start
    start = time.perf_counter()
    scores = evaluate_link(net, graph, parts, batch, link_bce)
    sync()
    eval_s = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"model": model, "params": count_parameters(net), "device": device, "threads": threads,
            "train_seconds": round(train_s, 1), "eval_seconds": round(eval_s, 1),
            "seconds_per_epoch": round(train_s + eval_s, 1), "peak_memory_mb": round(peak_mb),
            "graph_build_seconds": round(build_s, 1), "val_hits@50": scores["val"]["hits@50"]}


def measure_pe(threads: int) -> dict:
    """Seconds of the Laplacian PE (k = 20, sparse solver) of the COLLAB-sized graph."""
    import numpy as np
    import torch

    from gnnbench.data.store import GraphColumns
    from gnnbench.features.laplacian_pe import laplacian_pe

    torch.set_num_threads(threads)
    store, _, _ = collab_like()
    edge_index = store.edge_index.numpy()
    columns = GraphColumns(num_nodes=np.array([NODES]), num_edges=np.array([edge_index.shape[1]]),
                           src=edge_index[0], dst=edge_index[1])
    start = time.perf_counter()
    laplacian_pe(columns, 20, solver="sparse")
    return {"laplacian_pe_k20_sparse_seconds": round(time.perf_counter() - start, 1), "threads": threads}


def main() -> None:
    """Parse the command line; time the PE if asked, then each model in its own process, one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["GCN"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--pe", action="store_true", help="also time the sparse Laplacian PE (k = 20)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one model in this process
    args = parser.parse_args()
    if args.pe:
        print(json.dumps(measure_pe(args.threads)))
    if args.one:
        print(json.dumps(measure(args.one, args.threads, args.device)))
        return
    for model in args.models:
        out = subprocess.run([sys.executable, __file__, "--one", model, "--threads", str(args.threads),
                              "--device", args.device], capture_output=True, text=True, check=True)
        print(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
