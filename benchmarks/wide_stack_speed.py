"""Training-step time of R models as one wide stack (:mod:`gnnbench.training.wide`) against the same R models
trained one after another in one process, on synthetic mini-batches of the real workloads' sizes:

* ``gin``: Errica et al.'s GIN (``graph_classifiers/gin.py``), 4 conv layers of 64, ENZYMES-sized batches: 32 graphs
  of ~33 nodes (~124 directed edges), 3 node features, 6 classes; cross entropy;
* ``gatedgcn``: the benchmark's GatedGCN at its ZINC 100k config (4 layers of 70, batch norm, residual, constant edge
  input), ZINC-sized batches: 128 molecules of ~23 atoms (~50 directed edges), 28 atom types; L1 loss.

    python benchmarks/wide_stack_speed.py [--models gin,gatedgcn] [--members 4,8] [--steps 20] [--threads 1]
        [--edge-feat]

A step = forward, backward and Adam step (per-member learning rates in the stack; ``torch.optim.Adam`` per model one
after another), on the same batch cycle. Both modes alternate ``--repeats`` times and the fastest of each is kept (the
machine may be shared). Reported: ms per step for all R models, and the speed-up of the stack.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F

from gnnbench.config.presets import run_config
from gnnbench.data.batching import GraphBatch
from gnnbench.data.catalog import describe_dataset
from gnnbench.models.build import build_model
from gnnbench.models.graph_classifiers.gin import GIN
from gnnbench.training.wide import WideOptimizer, WideStack, check_widened


def random_batch(num_graphs: int, mean_nodes: float, directed_edges_per_node: float, seed: int, *,
                 node_types: int | None, node_features: int | None, edge_types: int | None) -> GraphBatch:
    """Trees plus extra edges, both directions, (about) the given sizes."""
    rng = np.random.default_rng(seed)
    sizes = np.maximum(rng.poisson(mean_nodes, num_graphs), 3)
    src, dst, offset = [], [], 0
    for n in sizes:  # batch construction, outside the timed loop
        parent = (rng.random(n - 1) * np.arange(1, n)).astype(np.int64)
        extra = rng.integers(0, n, (max(int(n * directed_edges_per_node / 2) - (n - 1), 0), 2))
        extra = extra[extra[:, 0] != extra[:, 1]]
        u = np.concatenate([np.arange(1, n), extra[:, 0]]) + offset
        v = np.concatenate([parent, extra[:, 1]]) + offset
        src += [u, v]
        dst += [v, u]
        offset += n
    edge_index = torch.from_numpy(np.stack([np.concatenate(src), np.concatenate(dst)]))
    batch = torch.repeat_interleave(torch.arange(num_graphs), torch.from_numpy(sizes))
    ptr = torch.from_numpy(np.concatenate([[0], np.cumsum(sizes)]))
    generator = torch.Generator().manual_seed(seed)
    x = (torch.randint(0, node_types, (offset,), generator=generator) if node_types
         else torch.randn(offset, node_features, generator=generator))
    edge_attr = torch.randint(0, edge_types, (edge_index.shape[1],), generator=generator) if edge_types else None
    y = torch.randint(0, 6, (num_graphs,), generator=generator) if node_features else torch.randn(num_graphs,
                                                                                                   generator=generator)
    return GraphBatch(edge_index=edge_index, batch=batch, ptr=ptr, num_graphs=num_graphs, x=x, edge_attr=edge_attr,
                      y=y)


def workload(name: str, edge_feat: bool):
    """(build, batches, loss of one model's output)."""
    if name == "gin":
        batches = [random_batch(32, 33, 3.8, seed, node_types=None, node_features=3, edge_types=None)
                   for seed in range(8)]
        return (lambda: GIN(3, 6, 64, 4, True, "sum", 0.0)), batches, (lambda out, b: F.cross_entropy(out, b.y))
    cfg = run_config("molecules_graph_regression_GatedGCN_ZINC_100k", {"edge_feat": edge_feat})
    meta = describe_dataset("ZINC")
    batches = [random_batch(128, 23, 2.15, seed, node_types=28, node_features=None, edge_types=4)
               for seed in range(8)]
    return (lambda: build_model(cfg, meta)), batches, (lambda out, b: (out.reshape(-1) - b.y).abs().mean())


def time_separate(models, batches, loss_fn, steps: int) -> float:
    """Seconds per step of the R models trained one after another, each with its own ``torch.optim.Adam``."""
    optimizers = [torch.optim.Adam(m.parameters(), lr=1e-3 * (r + 1)) for r, m in enumerate(models)]
    start = time.perf_counter()
    for step in range(steps):
        batch = batches[step % len(batches)]
        for model, optimizer in zip(models, optimizers, strict=True):
            optimizer.zero_grad()
            loss_fn(model(batch), batch).backward()
            optimizer.step()
    return (time.perf_counter() - start) / steps


def time_wide(stack, batches, loss_fn, steps: int) -> float:
    """Seconds per step of the wide stack with one :class:`~gnnbench.training.wide.WideOptimizer` (per-member learning
    rates)."""
    optimizer = WideOptimizer(stack, "adam", torch.arange(1, stack.members + 1) * 1e-3)
    start = time.perf_counter()
    for step in range(steps):
        batch = batches[step % len(batches)]
        optimizer.zero_grad()
        out = stack.split(stack(batch))
        sum(loss_fn(block, batch) for block in out).backward()
        optimizer.step()
    return (time.perf_counter() - start) / steps


def main() -> None:
    """Parse the command line and print, for each workload and stack size, ms per step both ways and the stack's
    speed-up."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="gin,gatedgcn")
    parser.add_argument("--members", default="4,8")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--edge-feat", action="store_true", help="GatedGCN with bond types (edge_feat: true)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"threads {args.threads}, {args.steps} steps, best of {args.repeats}")
    for name in args.models.split(","):
        build, batches, loss_fn = workload(name, args.edge_feat)
        for members in (int(r) for r in args.members.split(",")):
            models = []
            for seed in range(members):
                torch.manual_seed(seed)
                models.append(build().train())
            stack = WideStack(models).train()
            check_widened(stack, models, (batches[0],))
            time_wide(stack, batches, loss_fn, 2)  # warm-up
            time_separate(models, batches, loss_fn, 2)
            separate, wide = [], []
            for _ in range(args.repeats):
                separate.append(time_separate(models, batches, loss_fn, args.steps))
                wide.append(time_wide(stack, batches, loss_fn, args.steps))
            s, w = min(separate), min(wide)
            print(f"{name:9s} R={members}: one after another {s * 1e3:7.1f} ms/step, wide stack {w * 1e3:7.1f} "
                  f"ms/step, speed-up {s / w:4.2f}x")


if __name__ == "__main__":
    main()
