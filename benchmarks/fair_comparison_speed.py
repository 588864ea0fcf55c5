"""Runs per hour of the fair-comparison protocol: the GIN grid (fair_GIN, 128 configurations) on ENZYMES, outer fold 0,
model-selection runs as ``gnnbench.protocols.fair_comparison.train.run_inner`` trains them (one process, one after
another).

A complete run trains between ``patience`` (500) and ``epochs`` (1000) epochs, so timing every configuration to the
end takes hours; this script times ``--epochs`` epochs of every ``--stride``-th configuration of the grid (after one
warm-up epoch), and reports seconds per epoch and the implied runs per hour for runs of 500 and 1000 epochs. Each
configuration trains in a fresh model with the protocol's own training procedure (:mod:`gnnbench.training.best_epoch`).

    python benchmarks/fair_comparison_speed.py --zip ../shared/data/real/tu/ENZYMES.zip --threads 1
    python benchmarks/fair_comparison_speed.py --zip ... --model fair_Baseline_ENZYMES   # another grid

Prints one line per configuration and a summary.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import torch

from gnnbench.models.graph_classifiers import build_classifier
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.protocols.fair_comparison import train as fc_train
from gnnbench.reporting.fair_comparison import config_summary
from gnnbench.suite import load_suite
from gnnbench.training.best_epoch import train_holdout


def main() -> None:
    """Parse the command line, build ENZYMES and its splits from the zip, time the grid's configurations and print the
    per-configuration and mean seconds per epoch with the implied runs per hour."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zip", required=True, help="ENZYMES.zip (the TU file)")
    parser.add_argument("--model", default="fair_GIN", help="fair-comparison preset whose grid is timed")
    parser.add_argument("--epochs", type=int, default=6, help="epochs timed per configuration (after 1 warm-up)")
    parser.add_argument("--stride", type=int, default=1, help="time every stride-th configuration")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    work = Path(tempfile.mkdtemp())
    try:
        raw = work / "raw" / "tu"
        raw.mkdir(parents=True)
        shutil.copy(args.zip, raw / "ENZYMES.zip")
        generate_dataset("tu", "ENZYMES", {"name": "ENZYMES"}, 0, work / "ds", raw_dir=work / "raw")
        make_split_file(work / "ds", "stratified_kfold", {"folds": 10, "val_fraction": 0.1, "seed": 0},
                        work / "splits.json")
        suite = load_suite({"datasets": {"ENZYMES": {"generator": "tu", "params": {"name": "ENZYMES"}}},
                            "benchmarks": {"ENZYMES": {"protocol": "fair-comparison", "models": {"M": args.model}}}})
        configs = suite.benchmarks["ENZYMES"].grids["M"][::args.stride]
        data = fc_train._load(work / "ds", work / "splits.json")
        fold = data.splits.fold(0)
        parts = {"train": torch.from_numpy(fold["train"]), "val": torch.from_numpy(fold["val"])}
        per_epoch = []
        for config in configs:
            torch.manual_seed(0)
            model = build_classifier(config, data.meta, data.sizes)
            model.prepare(data.store)
            cfg = {**config, "epochs": 1 + args.epochs, "patience": 10**6}
            ends: list[float] = []  # end of every epoch
            train_holdout(model, data.store, parts, cfg, device=torch.device("cpu"),
                          on_epoch=lambda _state, ends=ends: ends.append(time.perf_counter()))
            seconds = (ends[-1] - ends[0]) / args.epochs
            per_epoch.append(seconds)
            print(f"{config_summary(config)}: {seconds * 1000:.0f} ms/epoch", flush=True)
        mean = statistics.fmean(per_epoch)
        print(f"\n{args.model} on ENZYMES fold 0 ({len(fold['train'])} train / {len(fold['val'])} val graphs), "
              f"{len(configs)} configurations, {args.threads} thread(s): mean {mean * 1000:.0f} ms/epoch "
              f"(min {min(per_epoch) * 1000:.0f}, max {max(per_epoch) * 1000:.0f})")
        for epochs in (500, 1000):
            print(f"  runs of {epochs} epochs: {3600 / (mean * epochs):.1f} runs/hour per process")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
