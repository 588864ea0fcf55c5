"""GraphSAGE's max aggregation, four ways, on one batch of 128 graphs of each peer shape (forward + backward).

    python benchmarks/max_aggregation.py [--width 89] [--repeats 20]

* ``csr amax`` — what :meth:`MaxPlan.max` runs on CPU for float32: one max-reducing CSR product over float64 keys
  that carry the arg-max row (:class:`gnnbench.models.sparse.maxima._ReducedMax`), an (N, d) backward.
* ``padded blocks`` — :class:`_PaddedMax`, in-neighbour rows gathered into per-degree-class dense blocks (the GPU
  and stacked-initialisation path).
* ``segmented max`` — gather x[src] in destination order, ``torch.segment_reduce(…, "max")``, autograd's backward.
* ``scatter amax`` — ``scatter_reduce(…, "amax")`` over the edges, autograd's backward.

Prints milliseconds per forward + backward (median over ``--repeats``) and the time to sort a batch's edges into
the plan (once per batch; the padded blocks are built on their first use, included in ``padded blocks``' warm-up).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))


def first_batch(shape: str):
    """The first 128 training graphs of a peer shape (``pattern`` or ``molecules``) as one mini-batch."""
    from peer_shapes import workload

    from gnnbench.data.batching import GraphLoader

    store, _, _, _ = workload(shape)
    return next(iter(GraphLoader(store, torch.arange(128), 128, shuffle=False)))


def timed(fn, repeats: int) -> float:
    """Median milliseconds of ``repeats`` calls of ``fn``, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    """Print, for both peer shapes, the plan's build time and the forward + backward milliseconds of the four max
    aggregations."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, default=89, help="message width (GraphSage 100k PATTERN: 89)")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(2)
    from gnnbench.models.sparse.maxima import InEdges, _PaddedMax

    for shape in ("pattern", "molecules"):
        batch = first_batch(shape)
        n = batch.num_nodes
        edges = InEdges.of(batch.edge_index, n)
        build = timed(lambda b=batch, n=n: InEdges.of(b.edge_index, n).max_plan(), args.repeats)  # sort + CSR
        plan = edges.max_plan()
        x = torch.rand(n, args.width, requires_grad=True)  # ReLU outputs: ≥ 0
        grad = torch.randn(n, args.width)
        lengths = edges.in_degree

        def csr(plan=plan, x=x, grad=grad):
            plan.max(x).backward(grad)

        def padded(plan=plan, x=x, grad=grad):
            _PaddedMax.apply(x, plan).backward(grad)

        def segmented(edges=edges, x=x, grad=grad, lengths=lengths):
            torch.segment_reduce(x.index_select(0, edges.src), "max", lengths=lengths, unsafe=True,
                                 initial=0.0).backward(grad)

        def scatter(edges=edges, x=x, grad=grad, n=n):
            index = edges.dst.view(-1, 1).expand(-1, x.shape[1])
            x.new_zeros(n, x.shape[1]).scatter_reduce(0, index, x.index_select(0, edges.src), "amax",
                                                      include_self=True).backward(grad)

        print(f"{shape}: {n} nodes, {edges.src.numel()} edges, width {args.width}; plan built in {build:.1f} ms")
        for name, fn in (("csr amax", csr), ("padded blocks", padded), ("segmented max", segmented),
                         ("scatter amax", scatter)):
            print(f"  {name:14s} {timed(fn, args.repeats):8.2f} ms forward + backward", flush=True)


if __name__ == "__main__":
    main()
