"""Milliseconds per training step of the "Pitfalls" models trained as R stacked initialisations on a CORA-sized graph.

    python benchmarks/stacked_models.py [--models GCN GAT ...] [--inits 20] [--threads 1] [--steps 30]
                                        [--synthetic] [--profile MODEL] [--default-malloc]

One step = forward with dropout at the training nodes (20 per class), mean cross-entropy per initialisation plus
its L2 term, summed over the initialisations, backward; then one evaluation forward (dropout off) at the
validation nodes (30 per class) under ``torch.no_grad`` with its loss — what one epoch of the protocol costs
besides the optimizer. The Adam update (``torch.optim.Adam``, foreach) is timed separately. Median over ``--steps``
steps after 5 warm-up steps; configs are the paper's Table 4 (Shchur et al.). The process keeps freed
memory (:func:`gnnbench.allocator.keep_freed_memory`, as a training job should) unless ``--default-malloc``.

Data: CORA's largest connected component (2,485 nodes, 10,138 directed edges, 45,487 binary feature entries, 7
classes) read with torch_geometric's Planetoid reader from a temporary copy of /work/shared/data/real/planetoid/cora
(or ``GNNBENCH_CORA_RAW``); ``--synthetic`` (or no such folder) uses a random graph of the same size instead.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F

CORA_RAW = Path(os.environ.get("GNNBENCH_CORA_RAW", "/work/shared/data/real/planetoid/cora/raw"))

CONFIGS = {  # paper Table 4 / config/optimized/*.conf.yaml of the original
    "GCN": {"model": "GCN", "hidden_size": 64, "dropout_prob": 0.8, "weight_decay": 1e-3, "lr": 0.01},
    "GAT": {"model": "GAT", "hidden_size": 8, "num_heads": [8, 1], "input_dropout_prob": 0.6,
            "coefficient_dropout_prob": 0.3, "weight_decay": 0.01, "lr": 0.01},
    "MoNet": {"model": "MoNet", "hidden_size": 32, "num_kernels": 2, "r": 2, "dropout_prob": 0.7,
              "weight_decay": 0.05, "lr": 0.003},
    "GS-mean": {"model": "GraphSage", "aggregator": "mean", "hidden_size": 32, "agg_transform_size": 32,
                "dropout_prob": 0.4, "weight_decay": 0.1, "lr": 0.001},
    "GS-maxpool": {"model": "GraphSage", "aggregator": "maxpool", "hidden_size": 32, "agg_transform_size": 32,
                   "dropout_prob": 0.3, "weight_decay": 0.005, "lr": 0.001},
    "GS-meanpool": {"model": "GraphSage", "aggregator": "meanpool", "hidden_size": 32, "agg_transform_size": 8,
                    "dropout_prob": 0.2, "weight_decay": 0.01, "lr": 0.001},
    "MLP": {"model": "MLP", "hidden_size": 64, "dropout_prob": 0.8, "weight_decay": 0.01, "lr": 0.005},
    "LogReg": {"model": "LogReg", "weight_decay": 5e-4, "lr": 0.1},
}


def cora_lcc() -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray]:
    """CORA standardised as the released code does: unweighted, symmetric, no self loops, largest component, binary
    features (docs/protocols/pitfalls.md#datasets-and-preprocessing)."""
    from torch_geometric.datasets import Planetoid

    with tempfile.TemporaryDirectory() as root:
        shutil.copytree(CORA_RAW, Path(root) / "Cora" / "raw")
        data = Planetoid(root, "Cora")[0]
    n = data.num_nodes
    src, dst = data.edge_index.numpy()
    adj = sp.csr_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    adj = ((adj + adj.T) > 0).astype(np.float32).tolil()
    adj.setdiag(0)
    adj = adj.tocsr()
    adj.eliminate_zeros()
    _, component = sp.csgraph.connected_components(adj)
    keep = np.flatnonzero(component == np.argmax(np.bincount(component)))
    features = sp.csr_matrix(data.x.numpy()[keep])
    features.data[:] = 1
    return adj[keep][:, keep].tocsr(), features, data.y.numpy()[keep]


def synthetic(seed: int = 0) -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray]:
    """A random graph of CORA's size: 2,485 nodes, 5,069 undirected edges, 1,433 binary features (~18 per node)."""
    rng = np.random.default_rng(seed)
    n, edges, features, classes = 2485, 5069, 1433, 7
    pairs = set()
    while len(pairs) < edges:
        a, b = rng.integers(0, n, 2)
        if a != b:
            pairs.add((min(a, b), max(a, b)))
    a, b = np.array(sorted(pairs)).T
    adj = sp.csr_matrix((np.ones(2 * edges, np.float32), (np.r_[a, b], np.r_[b, a])), shape=(n, n))
    x = sp.random(n, features, density=45487 / (n * features), format="csr", random_state=seed, dtype=np.float32)
    x.data[:] = 1
    return adj, x, rng.integers(0, classes, n)


def node_graph(adj: sp.csr_matrix, x: sp.csr_matrix, y: np.ndarray):
    """The stacked models' :class:`~gnnbench.models.stacked.NodeGraph` of an adjacency, CSR features and labels."""
    from gnnbench.models.stacked import NodeGraph

    coo = adj.tocoo()
    edge_index = torch.tensor(np.vstack([coo.row, coo.col]), dtype=torch.int64)
    with warnings.catch_warnings():  # "sparse CSR support is in beta"
        warnings.simplefilter("ignore", UserWarning)
        features = torch.sparse_csr_tensor(torch.tensor(x.indptr, dtype=torch.int64),
                                           torch.tensor(x.indices, dtype=torch.int64),
                                           torch.tensor(x.data, dtype=torch.float32), x.shape)
    return NodeGraph(adj.shape[0], edge_index, features, int(y.max()) + 1)


def split(y: np.ndarray, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """20 training and 30 validation nodes per class (Shchur et al.'s split sizes)."""
    rs = np.random.RandomState(seed)
    train, val = [], []
    for c in range(int(y.max()) + 1):
        nodes = rs.permutation(np.flatnonzero(y == c))
        train.append(nodes[:20])
        val.append(nodes[20:50])
    return torch.tensor(np.concatenate(train)), torch.tensor(np.concatenate(val))


def measure(name: str, graph, y: torch.Tensor, train: torch.Tensor, val: torch.Tensor, inits: int,
            steps: int) -> dict:
    """Median milliseconds of one training step, one evaluation pass and one Adam update of model ``name`` with
    ``inits`` stacked initialisations, over ``steps`` steps after 5 warm-up steps."""
    from gnnbench.models.stacked import build_stacked_model, count_stacked_parameters

    config = CONFIGS[name]
    model = build_stacked_model(config, graph, list(range(inits)))
    optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"])
    y_train = y[train].expand(inits, -1).reshape(-1)
    y_val = y[val].expand(inits, -1).reshape(-1)

    def loss_of(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        per_init = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target, reduction="none")
        return per_init.view(inits, -1).mean(1) + model.l2_penalty()

    def train_step() -> None:
        loss = loss_of(model(train, True), y_train).sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()

    def eval_step() -> None:
        with torch.no_grad():
            loss_of(model(val, False), y_val)

    times: dict[str, list[float]] = {"train": [], "eval": [], "adam": []}
    for i in range(steps + 5):
        start = time.perf_counter()
        train_step()
        middle = time.perf_counter()
        optimizer.step()
        after_adam = time.perf_counter()
        eval_step()
        end = time.perf_counter()
        if i >= 5:
            times["train"].append(middle - start)
            times["adam"].append(after_adam - middle)
            times["eval"].append(end - after_adam)
    ms = {key: 1e3 * statistics.median(value) for key, value in times.items()}
    return {"model": name, "params": count_stacked_parameters(model), **ms,
            "step_plus_eval": ms["train"] + ms["eval"], "per_run_epoch": (ms["train"] + ms["eval"]) / inits}


def main() -> None:
    """Parse the command line, build the graph and print one row per model (or a profile of one)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--inits", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--synthetic", action="store_true")
    parser.add_argument("--profile", choices=list(CONFIGS), help="print a torch.profiler table for this model")
    parser.add_argument("--default-malloc", action="store_true", help="leave glibc's allocator settings as they are")
    args = parser.parse_args()
    if not args.default_malloc:
        from gnnbench.allocator import keep_freed_memory

        keep_freed_memory()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    adj, x, labels = synthetic() if args.synthetic or not CORA_RAW.is_dir() else cora_lcc()
    graph = node_graph(adj, x, labels)
    y = torch.tensor(labels, dtype=torch.int64)
    train, val = split(labels)
    print(f"graph: {adj.shape[0]} nodes, {adj.nnz} directed edges, {x.shape[1]} features ({x.nnz} entries), "
          f"{graph.num_classes} classes; train {train.numel()}, val {val.numel()}; R = {args.inits}, "
          f"{args.threads} thread(s)")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        measure(args.profile, graph, y, train, val, args.inits, 3)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            measure(args.profile, graph, y, train, val, args.inits, 5)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))
        return
    print(f"{'model':<12} {'params':>8} {'train ms':>9} {'eval ms':>8} {'sum ms':>8} {'per run-epoch':>14} "
          f"{'Adam ms':>8}")
    for name in args.models:
        row = measure(name, graph, y, train, val, args.inits, args.steps)
        print(f"{row['model']:<12} {row['params']:>8} {row['train']:>9.2f} {row['eval']:>8.2f} "
              f"{row['step_plus_eval']:>8.2f} {row['per_run_epoch']:>14.3f} {row['adam']:>8.2f}")


if __name__ == "__main__":
    main()
