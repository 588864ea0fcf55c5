"""Throughput of the benchmarking-gnns protocol's seeds of one config: one run per process, one at a time in one
process, and the seeds trained as one wide stack (gnnbench.training.last_epoch_stack).

    python benchmarks/p1_seed_stack_speed.py [--preset molecules_graph_regression_GatedGCN_ZINC_100k] [--seeds 4]
        [--epochs 2] [--train-graphs 2000] [--eval-graphs 250] [--cores 2]

The data are synthetic ZINC-sized molecules (the real ZINC molecules are not distributed with the index files):
``--train-graphs`` training graphs and ``--eval-graphs`` each for validation and test (ZINC: 10,000 / 1,000 /
1,000; the defaults are a fifth and a quarter of that, to keep a call to minutes: per-graph costs are what is
compared), 9–38 atoms (mean ≈ 23), a random tree plus ring bonds (≈ 50 directed edges), 28 atom and 4 bond types, a
float target. The config is the preset's (a 100k-parameter ZINC model) for ``--epochs`` epochs (no lr stop).

Three ways to train the ``--seeds`` seeds, each a fresh process (``gnnbench`` imported, data read, every epoch
trained and evaluated on val and test as a real run, outputs written):

* **(a) one run per process**: one process per seed, one thread each, ``--cores`` of them at a time (the workflow's
  one job per seed under ``snakemake --cores 2`` with ``threads_per_run: 1``);
* **(b) one at a time in one process**: :func:`~gnnbench.training.last_epoch_stack.train_seeds` with ``stack=False``
  (the fallback), one thread;
* **(c) the stack**: ``train_seeds`` with the seeds as one wide stack, one thread (with ``--threaded`` also with
  ``--cores`` threads: one job using every core).

Reported: wall seconds (processes started to last exit) and CPU seconds (user + system of every process of the
way, interpreter start and imports included: the operating system's accounting, which a shared, loaded machine
moves much less than wall time), run-epochs per CPU-hour (= per core-hour: the throughput of a suite of many configs,
whose jobs fill the cores, stacks or single runs alike), and the same from the training calls alone (data loading,
every epoch, final evaluation and outputs; imports excluded), each with its ratio to (a).
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # gnnbench from the repository root, even when not installed

import numpy as np  # noqa: E402

PRESET = "molecules_graph_regression_GatedGCN_ZINC_100k"


def zinc_sized(train: int, evaluation: int, seed: int = 0):
    """Columns and meta of ``train`` + 2·``evaluation`` ZINC-sized molecules, stored train, val, test."""
    from gnnbench.data.meta import DatasetMeta, FeatureSpec
    from gnnbench.data.store import GraphColumns

    rng = np.random.default_rng(seed)
    count = train + 2 * evaluation
    sizes = np.clip(np.rint(rng.normal(23.2, 4.5, count)), 9, 38).astype(np.int64)
    srcs, dsts, num_edges = [], [], np.empty(count, dtype=np.int64)
    for g, n in enumerate(sizes):  # fixture construction, not the measured path
        parent = (rng.random(n - 1) * np.arange(1, n)).astype(np.int64)
        rings = rng.integers(0, n, (int(rng.poisson(1.5)), 2))
        rings = rings[rings[:, 0] != rings[:, 1]]
        u = np.concatenate([np.arange(1, n), rings[:, 0]])
        v = np.concatenate([parent, rings[:, 1]])
        srcs.append(np.concatenate([u, v]))
        dsts.append(np.concatenate([v, u]))
        num_edges[g] = 2 * len(u)
    columns = GraphColumns(
        num_nodes=sizes, num_edges=num_edges, src=np.concatenate(srcs).astype(np.int32),
        dst=np.concatenate(dsts).astype(np.int32),
        node={"x": rng.integers(0, 28, int(sizes.sum())).astype(np.int16)},
        edge={"edge_attr": rng.integers(1, 4, int(num_edges.sum())).astype(np.int16)},
        graph={"y": rng.normal(0.0, 2.0, count).astype(np.float32)})
    meta = DatasetMeta(name="ZINC-sized", task="graph_regression", loss="l1", metric="mae", num_outputs=1,
                       num_graphs=count, node_features=FeatureSpec("categorical", 28),
                       edge_features=FeatureSpec("categorical", 4), pe_usage="add",
                       split_sizes={"train": train, "val": evaluation, "test": evaluation})
    return columns, meta


def prepare(root: Path, args) -> None:
    from gnnbench.data.meta import write_dataset
    from gnnbench.pipeline import make_split_file

    columns, meta = zinc_sized(args.train_graphs, args.eval_graphs)
    write_dataset(root / "data", columns, meta)
    make_split_file(root / "data", "given", {}, root / "splits.json")


def config(args) -> dict:
    from gnnbench.config.presets import run_config

    return run_config(args.preset, {"epochs": args.epochs, "min_lr": 1e-12})


def child(args) -> None:
    """One measured process: ``--mode one`` (one seed's run), ``sequential`` or ``stack`` (all seeds)."""
    from gnnbench.protocols.benchmarking_gnns.train import train, train_seeds

    root, seeds = Path(args.root), [int(s) for s in args.seed_list.split(",")]
    common = {"dataset_dir": root / "data", "splits_path": root / "splits.json", "fold": 0, "threads": args.threads,
              "device": "cpu"}
    cpu = time.process_time()
    if args.mode == "one":
        results = [train(config={**config(args), "seed": seeds[0]}, out_dir=root / args.mode / f"seed{seeds[0]}",
                         **common)]
    else:
        results = train_seeds(config=config(args), seeds=seeds, out_dirs=[root / args.mode / f"seed{s}" for s in seeds],
                              stack=args.mode == "stack", **common)
    cpu = time.process_time() - cpu
    epoch_seconds = [r["seconds_per_epoch"] * r["epochs"] for r in results]
    print(json.dumps({"epochs": [r["epochs"] for r in results], "epoch_seconds": epoch_seconds, "cpu": cpu,
                      "wide": [bool(r.get("stack", {}).get("wide")) for r in results],
                      "threads": results[0]["threads"], "num_params": results[0]["num_params"]}))


def launch(args, mode: str, seeds: list[int], threads: int) -> subprocess.Popen:
    command = [sys.executable, __file__, "--child", "--mode", mode, "--root", args.root, "--threads", str(threads),
               "--seed-list", ",".join(map(str, seeds)), "--preset", args.preset, "--epochs", str(args.epochs)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"a measured process failed:\n{err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1])


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(args, seeds: list[int]) -> dict[str, dict]:
    out = {}
    # (a) one process per seed, --cores at a time, one thread each (the workflow's jobs)
    start, cpu, running, done = time.perf_counter(), children_cpu(), [], []
    pending = list(seeds)
    while pending or running:
        while pending and len(running) < args.cores:
            running.append(launch(args, "one", [pending.pop(0)], 1))
        running[0].wait()
        done.append(finish(running.pop(0)))
    out["(a) one run per process"] = {"wall": time.perf_counter() - start, "cpu": children_cpu() - cpu,
                                      "train_cpu": sum(d["cpu"] for d in done), "threads": 1, "wide": False}
    ways = [("sequential", 1, "(b) one at a time, one process"), ("stack", 1, "(c) wide stack, one process")]
    if args.threaded and args.cores > 1:
        ways.append(("stack", args.cores, f"(c) wide stack, {args.cores} threads"))
    for mode, threads, name in ways:
        start, cpu = time.perf_counter(), children_cpu()
        result = finish(launch(args, mode, seeds, threads))
        out[name] = {"wall": time.perf_counter() - start, "cpu": children_cpu() - cpu, "train_cpu": result["cpu"],
                     "threads": result["threads"], "wide": all(result["wide"])}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default=PRESET)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--train-graphs", type=int, default=2000)
    parser.add_argument("--eval-graphs", type=int, default=250)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--threaded", action="store_true", help="also the stack with --cores threads")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="all", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--seed-list", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    seeds = [41, 95, 12, 35, 7, 8, 9, 10][: args.seeds]
    with tempfile.TemporaryDirectory() as tmp:
        args.root = tmp
        prepare(Path(tmp), args)
        results = measure(args, seeds)
    run_epochs = len(seeds) * args.epochs
    print(f"{args.preset}: {len(seeds)} seeds × {args.epochs} epochs on {args.train_graphs:,} synthetic ZINC-sized "
          f"training graphs (+ {args.eval_graphs:,} val, {args.eval_graphs:,} test evaluated every epoch); "
          f"(a) runs {args.cores} processes at a time")
    base = results["(a) one run per process"]
    print(f"{'way':30} {'threads':>7} {'wide':>5} {'wall s':>7} {'CPU s':>7} {'run-epochs/CPU-h':>17} {'vs (a)':>7} "
          f"{'training CPU s':>15} {'run-epochs/CPU-h':>17} {'vs (a)':>7}")
    for name, r in results.items():
        per_cpu, per_train_cpu = run_epochs * 3600 / r["cpu"], run_epochs * 3600 / r["train_cpu"]
        print(f"{name:30} {r['threads']:>7} {str(r['wide']):>5} {r['wall']:>7.1f} {r['cpu']:>7.1f} {per_cpu:>17.0f} "
              f"{base['cpu'] / r['cpu']:>6.2f}x {r['train_cpu']:>15.1f} {per_train_cpu:>17.0f} "
              f"{base['train_cpu'] / r['train_cpu']:>6.2f}x")

if __name__ == "__main__":
    main()
