"""Graphs per second of one shuffled epoch of mini-batches: gnnbench's GraphLoader vs PyG's DataLoader.

    python benchmarks/batching_speed.py [--repeats 5] [--batch-size 128] [--threads 1] [--datasets AQSOL PATTERN]

Both loaders see the same tensors (model dtypes: integer features int64, floats float32). gnnbench gathers each
batch from one contiguous store (loaded from a Parquet graph store); PyG collates a Python list of
``torch_geometric.data.Data`` objects with ``torch_geometric.loader.DataLoader`` (single process, as gnnbench).
One-time costs (writing and loading the store, building the Data list) are reported separately; the epoch
time is the median over ``--repeats`` epochs after one warm-up epoch. Graph sets: ``AQSOL`` is
``synthetic.molecule_like()`` (7,831 AQSOL-sized molecules), ``PATTERN`` is 1,000 graphs of the SBM PATTERN
generator (about 115 nodes and 5,600 directed edges each; node-level labels, no edge features).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # synthetic.py
sys.path.insert(1, str(HERE.parent))  # gnnbench from the repository root, even when not installed

import torch  # noqa: E402
from synthetic import molecule_like  # noqa: E402
from torch_geometric.data import Data  # noqa: E402
from torch_geometric.loader import DataLoader  # noqa: E402

from gnnbench.data.batching import GraphLoader, model_dtypes  # noqa: E402
from gnnbench.data.generators import generate  # noqa: E402
from gnnbench.data.store import GraphColumns, GraphStore, load_graph_store, write_graph_store  # noqa: E402
from gnnbench.errors import ConfigError  # noqa: E402

ATTRIBUTES = ("x", "edge_index", "edge_attr", "y", "batch", "ptr")


def graph_set(name: str) -> GraphColumns:
    """The graph columns of a named set: ``AQSOL`` (``molecule_like()``) or ``PATTERN`` (1,000 generated SBM PATTERN
    graphs)."""
    if name == "AQSOL":
        return molecule_like()[0]
    if name == "PATTERN":
        try:
            return generate("sbm_pattern", "PATTERN", {"num_train": 1000, "num_val": 0, "num_test": 0}, 0)[0]
        except ConfigError:  # empty splits rejected: generate the smallest valid ones and keep 1,000 graphs
            params = {"num_train": 1000, "num_val": 100, "num_test": 100}
            return first_graphs(generate("sbm_pattern", "PATTERN", params, 0)[0], 1000)
    raise SystemExit(f"unknown graph set {name!r}; choose AQSOL or PATTERN")


def first_graphs(columns: GraphColumns, count: int) -> GraphColumns:
    """The first ``count`` graphs of ``columns`` (nodes, edges and features sliced by the offsets)."""
    n, e = columns.node_ptr[count], columns.edge_ptr[count]
    return GraphColumns(
        num_nodes=columns.num_nodes[:count], num_edges=columns.num_edges[:count],
        src=columns.src[:e], dst=columns.dst[:e],
        node={k: v[:n] for k, v in columns.node.items()},
        edge={k: v[:e] for k, v in columns.edge.items()},
        graph={k: v[:count] for k, v in columns.graph.items()},
    )


def pyg_data_list(store: GraphStore) -> list[Data]:
    """One Data per graph holding (copies of) the store's rows, as a list-of-Data PyG pipeline would."""
    node_ptr, edge_ptr = store.node_ptr.tolist(), store.edge_ptr.tolist()
    edge_index = store.edge_index.to(torch.int64)
    node_y, graph_y = store.node.get("y"), store.graph.get("y")
    edge_attr = store.edge.get("edge_attr")
    out = []
    for i in range(store.num_graphs):
        n0, n1, e0, e1 = node_ptr[i], node_ptr[i + 1], edge_ptr[i], edge_ptr[i + 1]
        data = Data(x=store.node["x"][n0:n1].clone(), edge_index=edge_index[:, e0:e1].clone())
        if edge_attr is not None:
            data.edge_attr = edge_attr[e0:e1].clone()
        if node_y is not None:
            data.y = node_y[n0:n1].clone()
        elif graph_y is not None:
            data.y = graph_y[i : i + 1].clone()
        out.append(data)
    return out


def timed(fn: Callable):
    """``(fn(), seconds it took)``."""
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def run_epoch(loader: Iterable) -> int:
    """Iterate once over ``loader``; the number of graphs its batches held."""
    graphs = 0
    for batch in loader:
        graphs += batch.num_graphs
    return graphs


def check_same_batches(store: GraphStore, data: list[Data], batch_size: int) -> None:
    """Unshuffled, the first batch of both loaders must hold the same tensors (same graph set, same order)."""
    ours = next(iter(GraphLoader(store, torch.arange(store.num_graphs), batch_size)))
    theirs = next(iter(DataLoader(data, batch_size=batch_size)))
    for name in ATTRIBUTES:
        a, b = getattr(ours, name), getattr(theirs, name, None)
        if (a is None) != (b is None) or (a is not None and not torch.equal(a, b)):
            raise SystemExit(f"batches differ in {name!r}; the comparison would not be fair")


def measure(name: str, batch_size: int, repeats: int, seed: int) -> dict:
    """Time one graph set: building, writing and loading its store, building PyG's ``Data`` list, and the median
    shuffled epoch of each loader (after one warm-up epoch); returns the figures as a dict."""
    columns, build_s = timed(lambda: graph_set(name))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.parquet"
        _, write_s = timed(lambda: write_graph_store(path, columns))
        store, load_s = timed(lambda: model_dtypes(load_graph_store(path)))
    data, data_list_s = timed(lambda: pyg_data_list(store))
    check_same_batches(store, data, batch_size)

    ours = GraphLoader(store, torch.arange(store.num_graphs), batch_size, shuffle=True,
                       generator=torch.Generator().manual_seed(seed))
    theirs = DataLoader(data, batch_size=batch_size, shuffle=True, generator=torch.Generator().manual_seed(seed))
    times = {"gnnbench": [], "pyg": []}
    for _ in range(repeats + 1):  # the first round is warm-up
        for key, loader in (("gnnbench", ours), ("pyg", theirs)):
            graphs, seconds = timed(lambda loader=loader: run_epoch(loader))
            assert graphs == store.num_graphs
            times[key].append(seconds)
    epoch = {key: statistics.median(values[1:]) for key, values in times.items()}
    return {
        "name": name, "graphs": store.num_graphs,
        "nodes": float(store.num_nodes.float().mean()), "edges": float(store.num_edges.float().mean()),
        "generate_s": build_s, "write_s": write_s, "load_s": load_s, "data_list_s": data_list_s,
        "epoch_s": epoch, "graphs_per_s": {key: store.num_graphs / s for key, s in epoch.items()},
    }


def main() -> None:
    """Parse the command line and print each graph set's timings and graphs per second for both loaders."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["AQSOL", "PATTERN"], choices=["AQSOL", "PATTERN"])
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"batch size {args.batch_size}, shuffled, median of {args.repeats} epochs after 1 warm-up, "
          f"{args.threads} torch thread(s), torch {torch.__version__}")
    for name in args.datasets:
        r = measure(name, args.batch_size, args.repeats, args.seed)
        ours, theirs = r["graphs_per_s"]["gnnbench"], r["graphs_per_s"]["pyg"]
        print(f"\n{r['name']}-like: {r['graphs']} graphs, {r['nodes']:.1f} nodes and {r['edges']:.1f} directed "
              f"edges per graph (generated in {r['generate_s']:.2f} s)")
        print(f"  one-time   gnnbench: write store {r['write_s']:.3f} s, load store + model_dtypes "
              f"{r['load_s']:.3f} s | PyG: build Data list {r['data_list_s']:.3f} s")
        print(f"  per epoch  gnnbench GraphLoader {r['epoch_s']['gnnbench'] * 1e3:8.1f} ms "
              f"{ours:10.0f} graphs/s")
        print(f"             PyG DataLoader       {r['epoch_s']['pyg'] * 1e3:8.1f} ms {theirs:10.0f} graphs/s")
        print(f"  ratio (gnnbench / PyG graphs per second): {ours / theirs:.1f}x")


if __name__ == "__main__":
    main()
