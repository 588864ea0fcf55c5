"""Runs per minute of a user's model under the pitfalls protocol: its initialisations stacked by torch.func, trained
one after another, and the zoo's hand-written stacked GCN.

    python benchmarks/plugin_stack_speed.py [--planetoid ../shared/data/real/planetoid] [--splits 2] [--inits 20] \\
        [--epochs 100] [--threads 1] [--scaling] [--benchmark-gcn]

Data: CORA standardised as the protocol uses it (largest connected component, 2,485 nodes, 1,433 binary features,
7 classes) built from the original Planetoid files in ``--planetoid`` (``cora/raw/ind.cora.*``) with the protocol's
random splits (20 training and 30 validation nodes per class); without those files a CSBM graph of CORA's size
(offline generator; say which in a report). Every initialisation trains exactly ``--epochs`` epochs (patience above
the epoch count), so the three modes do the same number of epochs:

(a) **functional stack**: a PyG GCN (``torch_geometric.nn.models.GCN``: two ``GCNConv`` layers, 64 hidden, dropout
    0.5, behind ``forward(batch)`` → (N, C) logits) — ``--inits`` initialisations of a split as one vmapped model
    (:class:`~gnnbench.training.functional_stack.FunctionalStackStep`);
(b) **one after another**: the same model and initialisations in the same process
    (:class:`~gnnbench.training.init_stack.SequentialStep`);
(c) **hand-written stack**: the zoo's GCN of the pitfalls paper (``pitfalls_GCN``: 64 hidden, sparse input
    features) as the protocol trains it (:class:`~gnnbench.training.init_stack.StackedStep`);

and with ``--benchmark-gcn`` the benchmark's GCN (dwivedi2020, 64 wide, batch norm) in modes (a) and (b): a model whose
sparse products have vmap rules (members folded into the columns of one product).

Times cover building the models, training and scoring the split, not loading the data nor the one-time costs of a
process (imports and first calls, about 2 s for torch.func and PyG, paid once per job: a warm-up run before the
clock starts). ``--scaling`` also prints the
functional stack's time per epoch against the number of members still training and the time to drop members from it
(why stopped members leave the stack instead of being masked). Wall-clock rates on a shared machine follow its
load; the CPU time of the process (``time.process_time``, one thread) is the steadier measure of cost.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PLANETOID = REPO.parent / "shared" / "data" / "real" / "planetoid"
SPLIT = {"splits": 100, "train_per_class": 20, "val_per_class": 30, "seed": 2018}


class PyGGCN(nn.Module):
    """PyG's GCN model behind the model contract (``forward(batch)`` → (N, C) logits of the one graph)."""

    def __init__(self, in_channels: int, classes: int, hidden: int = 64, dropout: float = 0.5) -> None:
        super().__init__()
        from torch_geometric.nn.models import GCN

        self.gcn = GCN(in_channels, hidden, num_layers=2, out_channels=classes, dropout=dropout)

    def forward(self, batch) -> torch.Tensor:
        """Logits (N, C) of the batch's one graph."""
        return self.gcn(batch.x, batch.edge_index)


def prepare(planetoid: Path, work: Path) -> tuple[Path, Path, str]:
    """(dataset folder, split file, what the data is)."""
    from gnnbench.pipeline import generate_dataset, make_split_file

    dataset, splits = work / "dataset", work / "splits.json"
    if (planetoid / "cora" / "raw").is_dir():
        sys.path.insert(0, str(Path(__file__).parent))
        from pitfalls_speed import prepare as prepare_planetoid

        dataset, splits = prepare_planetoid(planetoid, "cora", work)
        return dataset, splits, f"real CORA ({planetoid / 'cora' / 'raw'})"
    generate_dataset("csbm", "CSBM", {"num_nodes": 2485, "num_classes": 7, "num_features": 1433}, 0, dataset)
    make_split_file(dataset, "random_per_class", SPLIT, splits)
    return dataset, splits, "CSBM of CORA's size (2,485 nodes, 7 classes, 1,433 features; real files not found)"


def trainers(dataset: Path, splits_path: Path, split: int, inits: int, epochs: int, benchmark_gcn: bool = False):
    """The three trainers of one split (module docstring), as factories; with ``benchmark_gcn`` also the benchmark's
    GCN (dwivedi2020, 64 wide) stacked and one after another."""
    from gnnbench.config.presets import run_config
    from gnnbench.protocols import pitfalls
    from gnnbench.protocols.pitfalls import train as pitfalls_train
    from gnnbench.splits import read_splits
    from gnnbench.training.functional_stack import FunctionalStackStep
    from gnnbench.training.init_stack import SequentialStep

    meta, graph, labels = pitfalls_train.load_node_graph(dataset)
    parts = {p: torch.from_numpy(idx) for p, idx in read_splits(splits_path, meta).fold(split).items()}
    build, batch = pitfalls_train.whole_graph(dataset)
    zoo = run_config("pitfalls_GCN", {"num_epochs": epochs, "early_stopping_tolerance": epochs + 1},
                     protocol="pitfalls")
    rule = {"criterion": "gnnbench", "patience": epochs + 1, "max_epochs": epochs, "tolerance": 0.0}
    settings = {"learning_rate": zoo["learning_rate"], "weight_decay": zoo["weight_decay"],
                "init_ids": list(range(inits)), "seeds": [pitfalls_train.init_seed(0, split, i) for i in range(inits)],
                "dropout_seed": pitfalls_train.dropout_seed(0, split), **rule}

    def make() -> nn.Module:
        return PyGGCN(batch.x.shape[1], meta.num_outputs)

    gcn = run_config("WikiCS_node_classification_GCN_100k", {"L": 2, "hidden_dim": 64, "out_dim": 64},
                     protocol="pitfalls")
    extra = {"benchmark GCN (dwivedi2020), functional stack": lambda: FunctionalStackStep(
                 lambda: build(gcn), batch, labels, parts, **settings),
             "benchmark GCN (dwivedi2020), one after another": lambda: SequentialStep(
                 lambda: build(gcn), batch, labels, parts, **settings)} if benchmark_gcn else {}
    return {
        "PyG GCN, functional stack": lambda: FunctionalStackStep(make, batch, labels, parts, **settings),
        "PyG GCN, one after another": lambda: SequentialStep(make, batch, labels, parts, **settings),
        "zoo GCN (shchur2018), hand-written stack": lambda: pitfalls_train.make_trainer(
            {**pitfalls.TRAINING_DEFAULTS, **zoo}, graph, labels, parts, 0, split, list(range(inits))),
        **extra,
    }


def scaling(dataset: Path, splits_path: Path, inits: int) -> None:
    """ms per epoch of the functional stack against its number of members, and the cost of dropping members."""
    from gnnbench.training.functional_stack import FunctionalStackStep

    print(f"\nfunctional stack, PyG GCN: time per epoch by members in the stack (R = {inits} built)")
    print(f"{'members':>8s} {'CPU ms/epoch':>13s} {'CPU ms/epoch/member':>20s}")
    for members in sorted({inits, max(inits // 2, 1), max(inits // 4, 1), 1}, reverse=True):
        trainer = trainers(dataset, splits_path, 0, inits, 10_000)["PyG GCN, functional stack"]()
        assert isinstance(trainer, FunctionalStackStep)
        run, _ = trainer.fit_parts()
        if members < inits:
            start = time.process_time()
            trainer.leave(list(range(inits - members)))  # as members that stopped leave the stack
            dropped = time.process_time() - start
            run.active = run.active[inits - members:]
        trainer.epoch(run, run.active)  # warm-up
        start, n = time.process_time(), 5
        for _ in range(n):
            trainer.epoch(run, run.active)
        ms = 1000 * (time.process_time() - start) / n
        note = f"  (dropping {inits - members} members: {1000 * dropped:.1f} ms)" if members < inits else ""
        print(f"{members:8d} {ms:13.1f} {ms / members:20.1f}{note}", flush=True)


def main() -> None:
    """Parse the command line, load CORA (or a CSBM stand-in) and print the runs per minute of each mode (and, with
    ``--scaling``, the time per epoch against the members still training)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--planetoid", type=Path, default=DEFAULT_PLANETOID,
                        help="folder with cora/raw/ind.cora.* (default: the shared real-data folder)")
    parser.add_argument("--splits", type=int, default=2)
    parser.add_argument("--inits", type=int, default=20)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--scaling", action="store_true", help="also time epochs by members in the stack")
    parser.add_argument("--benchmark-gcn", action="store_true",
                        help="also the benchmark's GCN (dwivedi2020: its sparse products have vmap rules)")
    args = parser.parse_args()

    from gnnbench.allocator import keep_freed_memory
    from gnnbench.training.init_stack import train_split

    keep_freed_memory()  # as a pitfalls job does
    torch.set_num_threads(args.threads)
    work = Path(tempfile.mkdtemp(prefix="plugin_stack_speed_"))
    try:
        dataset, splits_path, what = prepare(args.planetoid, work)
        print(f"data: {what}; {args.splits} split(s) x {args.inits} initialisations x {args.epochs} epochs; "
              f"{args.threads} thread(s); load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
        print(f"{'mode':48s} {'runs':>5s} {'wall s':>7s} {'runs/min':>9s} {'CPU s':>7s} {'runs/CPU-min':>13s} "
              f"{'test acc':>9s}")
        rates = {}
        for factory in trainers(dataset, splits_path, 0, 2, 1, args.benchmark_gcn).values():  # one-time costs
            train_split(factory())
        for mode in trainers(dataset, splits_path, 0, args.inits, args.epochs, args.benchmark_gcn):
            runs, seconds, cpu, accuracies = 0, 0.0, 0.0, []
            for split in range(args.splits):
                factory = trainers(dataset, splits_path, split, args.inits, args.epochs, args.benchmark_gcn)[mode]
                start, start_cpu = time.perf_counter(), time.process_time()
                result = train_split(factory())
                seconds += time.perf_counter() - start
                cpu += time.process_time() - start_cpu
                runs += len(result.records)
                accuracies += [r["test_accuracy"] for r in result.records]
                assert all(r["epochs"] == args.epochs for r in result.records)
            rates[mode] = 60 * runs / cpu
            print(f"{mode:48s} {runs:5d} {seconds:7.1f} {60 * runs / seconds:9.1f} {cpu:7.1f} {rates[mode]:13.1f} "
                  f"{sum(accuracies) / len(accuracies):9.2f}", flush=True)
        stacked, alone = rates["PyG GCN, functional stack"], rates["PyG GCN, one after another"]
        print(f"runs per CPU minute, functional stack / one after another: {stacked / alone:.2f}x; hand-written "
              f"stack / functional stack: {rates['zoo GCN (shchur2018), hand-written stack'] / stacked:.2f}x")
        if args.scaling:
            scaling(dataset, splits_path, args.inits)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
