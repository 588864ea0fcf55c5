"""How close one training step of every P1 model on a PATTERN-sized batch comes to this machine's floor for the ops
it executes.

    python benchmarks/dense_floor.py [--models GCN GAT ...] [--steps 7] [--threads 2]

What is measured, in this order:

* **Rates** (in each model's process, just before its timed steps, so that both see the same machine load; with
  ``--threads`` torch threads): the sgemm rate, GFLOP/s of a 2048 × 2048 ×
  2048 float32 ``mm`` into a reused output; the streaming rate, GB/s of a float32 ``add`` of two 64 MiB buffers
  into a third (12 bytes moved per element: two reads, one write). Both are the best of several repeats (the
  rate the machine reaches; other load only slows a repeat down).
* **The batch**: the first 128 training graphs of ``sbm_pattern`` as ``benchmarks/peer_shapes.py`` generates them
  (its parameters and seed: ~118 nodes per graph, dense SBM edges), one mini-batch of 128 graphs (the presets'
  batch size); the ``SBMs_node_clustering_<model>_PATTERN_100k`` presets (4 layers, ~100k parameters).
* **The executed ops of one training step** (zero_grad, forward, loss, backward, Adam step), recorded once under
  ``torch.utils.flop_counter.FlopCounterMode`` and a ``TorchDispatchMode`` of this script: FLOPs of the dense
  matrix products (mm, addmm, bmm, baddbmm with strided operands, counted by the flop counter's registry; the flop
  counter itself would count a sparse CSR operand as a dense matrix), the bytes of their operands and results
  (shown apart, not in the floor), and for every other op that computes something the bytes of its tensor inputs
  plus its outputs (views, ``empty`` and metadata ops move nothing and count nothing; a tensor with zero strides
  counts its distinct elements; an op writing into ``out=`` counts that tensor once as written; an in-place op
  counts its operand as read and written; an indexed read (``index_select``, ``embedding``, ``embedding_bag``,
  ``gather``) counts its index, its output and the rows it reads, at most its table once; an indexed accumulation
  (``index_add_``, ``scatter_add_``, ``index_put_``) its index and source and the rows it touches, read and
  written, not the whole accumulator: chunked code that gathers from or adds into a large tensor chunk by chunk
  counts what it touches).
* **floor** = FLOPs / sgemm rate + bytes / streaming rate: a roofline of the executed op sequence at the measured
  rates, each op at the speed of the best large kernel of its kind, nothing overlapped.
* **measured**: median seconds of ``--steps`` training steps on that batch after two warm-up steps, in one process
  per model that keeps freed memory (``gnnbench.allocator``, as a workflow job does), ``--threads`` threads (2 as
  in ``peer_shapes.py``); **ratio** = measured / floor.

Limits of the floor. It is a floor of *this op sequence*, not of the model: an implementation that runs fewer or
smaller ops lowers the floor too (compare floors and times between versions, not ratios alone). Indexed ops count
at most their table once, not every row they gather: a sparse product (``embedding_bag``) that reads each source
row once per edge counts the table once; the ``gath MB`` column shows the rows the sparse products read through
their indices, which a cache-resident table serves faster than streaming memory but not for free. Conversely, code
that walks edge tensors in cache-sized chunks (GatedGCN's edge function) moves most of its counted bytes between
cache and core, faster than the streaming rate: its ratio can fall below 1. Small ops are
counted at the rate of a large stream and matrix products at the rate of a large square sgemm: thin products
(N × 146 × 146) and short ops (per-layer launch, autograd and Python overhead; a PATTERN step runs thousands of
ops) cannot reach them, so a ratio near 1 is not expected for a step of ~10 ms. Sparse products' multiply-adds
count as bytes, not FLOPs. One step's ops are recorded; dropout is 0 in these presets, so every step runs the same
ops.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

MODELS = ["MLP", "GCN", "GraphSage", "GAT", "MoNet", "GIN", "GatedGCN"]
PRESET = "SBMs_node_clustering_{}_PATTERN_100k"
GRAPHS = 128  # one mini-batch: the presets' batch size
THREADS = 2
STEPS = 7


def seconds(fn, repeats: int) -> list[float]:
    """Wall seconds of each of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def machine_rates(threads: int) -> dict:
    """sgemm GFLOP/s and streaming GB/s of this machine (module docstring)."""
    import torch

    torch.set_num_threads(threads)
    n = 2048
    a, b, c = torch.randn(n, n), torch.randn(n, n), torch.empty(n, n)
    torch.mm(a, b, out=c)
    sgemm = 2 * n ** 3 / min(seconds(lambda: torch.mm(a, b, out=c), 9)) / 1e9
    m = 16 * 2 ** 20  # 64 MiB of float32 per buffer
    x, y, z = torch.ones(m), torch.ones(m), torch.empty(m)
    torch.add(x, y, out=z)
    stream = 12 * m / min(seconds(lambda: torch.add(x, y, out=z), 25)) / 1e9
    return {"sgemm_gflops": sgemm, "stream_gbs": stream, "threads": threads}


def _tensor_bytes(t) -> int:
    """Bytes of the distinct elements ``t`` addresses (zero strides count once); a sparse tensor's stored parts."""
    import torch

    if not isinstance(t, torch.Tensor):
        return 0
    if t.layout == torch.sparse_csr:
        return sum(_tensor_bytes(p) for p in (t.crow_indices(), t.col_indices(), t.values()))
    if t.layout != torch.strided:
        return 0
    if t.numel() == 0:
        return 0
    elements = 1
    for size, stride in zip(t.shape, t.stride(), strict=True):
        if stride != 0:
            elements *= size
    return elements * t.element_size()


def _flat_tensors(value) -> list:
    import torch
    from torch.utils._pytree import tree_leaves

    return [v for v in tree_leaves(value) if isinstance(v, torch.Tensor)]


class OpBytes:
    """A ``TorchDispatchMode`` (built lazily: torch is imported in the worker only) that sums, per op, the bytes of
    tensor inputs and outputs; matrix products apart (module docstring)."""

    def __new__(cls):
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils.flop_counter import flop_registry

        no_traffic = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "detach", "lift_fresh",
                      "_to_copy_meta", "set_", "resize_", "_local_scalar_dense", "sym_size", "sym_stride",
                      "sym_numel", "sym_storage_offset", "is_same_size", "_has_compatible_shallow_copy_type"}
        # (table, ..., index, ...): the rows read through the index, at most the table once; the rest as usual
        gathers = {"_embedding_bag", "_embedding_bag_forward_only", "embedding", "index_select", "gather"}
        # (self, ..., index, source): only the rows the source touches are read and written, not all of self
        accumulates = {"index_add", "index_add_", "index_copy", "index_copy_", "scatter_add", "scatter_add_",
                       "index_put", "index_put_", "_index_put_impl_", "scatter_reduce", "scatter_reduce_"}

        class Mode(TorchDispatchMode):
            def __init__(self) -> None:
                super().__init__()
                self.other = Counter()  # op name → bytes
                self.matmul_bytes = 0
                self.flops = 0
                self.gathered = 0

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                packet = func.overloadpacket
                name = packet.__name__
                if func.is_view or name in no_traffic:
                    return out
                inputs = _flat_tensors((args, {k: v for k, v in kwargs.items() if k != "out"}))
                outputs = _flat_tensors(out)
                rest = sum(_tensor_bytes(t) for t in inputs[1:])
                if name in accumulates:
                    count = rest + 2 * _tensor_bytes(inputs[-1])
                elif name in gathers:
                    table, index = inputs[0], inputs[1]
                    rows = index.numel() * (table[0].numel() if table.dim() > 1 else 1) * table.element_size()
                    if name.startswith("_embedding_bag"):
                        self.gathered += rows
                    else:
                        rows = _tensor_bytes(outputs[0])
                    count = rest + min(_tensor_bytes(table), rows) + sum(_tensor_bytes(t) for t in outputs)
                else:
                    count = sum(_tensor_bytes(t) for t in inputs) + sum(_tensor_bytes(t) for t in outputs)
                if packet in flop_registry and all(t.layout == torch.strided for t in inputs):
                    self.flops += flop_registry[packet](*args, **kwargs, out_val=out)
                    self.matmul_bytes += count
                    return out
                self.other[name] += count
                return out

        return Mode()


def pattern_batch():
    """One batch of the first 128 PATTERN training graphs (``peer_shapes.py``'s parameters and seed) and its meta."""
    sys.path.insert(0, str(Path(__file__).parent))
    import torch
    from peer_shapes import PATTERN_PARAMS, PATTERN_SEED

    from gnnbench.data.batching import GraphLoader, model_dtypes
    from gnnbench.data.generators import generate
    from gnnbench.data.store import GraphStore

    columns, meta = generate("sbm_pattern", "PATTERN", PATTERN_PARAMS, PATTERN_SEED)
    store = model_dtypes(GraphStore.from_columns(columns))
    batch = next(iter(GraphLoader(store, torch.arange(GRAPHS), GRAPHS)))
    return batch, meta


def measure(model: str, steps: int, threads: int) -> dict:
    """In this process: record one training step's ops of ``model`` on the PATTERN batch (FLOPs, bytes), measure the
    machine's rates, and time ``steps`` steps; returns the counts, rates and median step seconds."""
    from gnnbench.allocator import keep_freed_memory

    keep_freed_memory()
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    torch.set_num_threads(threads)
    from gnnbench.config.presets import run_config
    from gnnbench.models.build import build_model
    from gnnbench.models.net import count_parameters
    from gnnbench.training.last_epoch import make_optimizer
    from gnnbench.training.loop import _scored
    from gnnbench.training.losses import get_loss

    batch, meta = pattern_batch()
    config = run_config(PRESET.format(model))
    torch.manual_seed(0)
    net = build_model(config, meta)
    net.train()
    optimizer = make_optimizer(net, config["init_lr"], config["weight_decay"])
    loss_fn = get_loss(meta.loss, config)

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(_scored(net(batch), batch), batch)
        loss.backward()
        optimizer.step()
        return float(loss)

    step()
    step()
    counter, traffic = FlopCounterMode(display=False), OpBytes()
    with counter, traffic:
        step()
    if counter.get_total_flops() != traffic.flops:  # a product with a sparse operand (counted as bytes here)
        print(f"{model}: {counter.get_total_flops() - traffic.flops} FLOPs of products with sparse operands are "
              f"counted as bytes", file=sys.stderr)
    rates = machine_rates(threads)  # in this process, just before the timed steps: the same load as they see
    step_seconds = statistics.median(seconds(step, steps))
    top = traffic.other.most_common(6)
    return {"model": model, "params": count_parameters(net), "flops": traffic.flops,
            "matmul_bytes": traffic.matmul_bytes, "bytes": sum(traffic.other.values()), "gathered": traffic.gathered,
            "seconds": step_seconds, **rates, "top": top, "nodes": batch.num_nodes, "edges": batch.edge_index.shape[1]}


def main() -> None:
    """Parse the command line and print one row per model (each measured in its own process): FLOPs, bytes, rates,
    floor, measured time and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    parser.add_argument("--steps", type=int, default=STEPS, help="timed steps per model (median)")
    parser.add_argument("--threads", type=int, default=THREADS)
    parser.add_argument("--top", action="store_true", help="also print each model's six ops moving the most bytes")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.steps, args.threads)))
        return
    print(f"{args.threads} threads; sgemm GFLOP/s and stream GB/s measured in each model's process before its steps")
    print(f"{'model':10s} {'params':>7s} {'GFLOP':>7s} {'mm MB':>7s} {'MB':>7s} {'gath MB':>8s} {'sgemm':>6s} "
          f"{'stream':>6s} {'floor ms':>9s} {'meas ms':>8s} {'ratio':>6s}")
    for model in args.models:
        command = [sys.executable, __file__, "--one", model, "--steps", str(args.steps), "--threads", str(args.threads)]
        r = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        floor = r["flops"] / (r["sgemm_gflops"] * 1e9) + r["bytes"] / (r["stream_gbs"] * 1e9)
        print(f"{model:10s} {r['params']:7d} {r['flops'] / 1e9:7.2f} {r['matmul_bytes'] / 1e6:7.0f} "
              f"{r['bytes'] / 1e6:7.0f} {r['gathered'] / 1e6:8.0f} {r['sgemm_gflops']:6.1f} {r['stream_gbs']:6.1f} "
              f"{floor * 1e3:9.2f} {r['seconds'] * 1e3:8.1f} {r['seconds'] / floor:6.2f}", flush=True)
        if args.top:
            print("    " + ", ".join(f"{name} {b / 1e6:.0f} MB" for name, b in r["top"]))
    print(f"batch: {GRAPHS} graphs, {r['nodes']} nodes, {r['edges']} directed edges")


if __name__ == "__main__":
    main()
