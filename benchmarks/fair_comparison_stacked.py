"""Runs per hour of the fair-comparison protocol's final runs: the R (3) final runs of one selected GIN configuration
(fair_GIN grid points) on ENZYMES, outer fold 0 (its model-selection hold-out for every run, ``final_holdout:
selection``), trained one after another as ``run_final`` trains them without a stack (``train_holdout`` per run) and
as one stack (:class:`gnnbench.training.stacked_holdout.HoldoutStack`), for a fixed number of epochs (patience off).

    python benchmarks/fair_comparison_stacked.py --zip ../shared/data/real/tu/ENZYMES.zip --threads 1

The two modes alternate ``--repeats`` times and the fastest of each is kept (the machine may be shared). Stack
construction (building the members and the dry vmapped run) is timed apart from training and included in the runs per
hour, as are the separate runs' model builds. Runs per hour are for runs of 1000 epochs (fair_GIN's ``epochs``).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import torch

from gnnbench.config.keys import coerce_all, protocol_types
from gnnbench.config.suite import load_suite
from gnnbench.models.registry import ERRICA2020, ModelData, build_model
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.protocols import fair_comparison as fc
from gnnbench.training.holdout import train_holdout
from gnnbench.training.stacked_holdout import HoldoutStack

EPOCHS_PER_RUN = 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zip", required=True, help="ENZYMES.zip (the TU file)")
    parser.add_argument("--epochs", type=int, default=5, help="epochs every run trains")
    parser.add_argument("--runs", type=int, default=3, help="final runs (members of the stack)")
    parser.add_argument("--configs", default="0,1", help="positions in the fair_GIN grid (0: batch 32, 4 layers of "
                                                         "64; the grid's last key varies fastest)")
    parser.add_argument("--repeats", type=int, default=2)
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
                            "benchmarks": {"ENZYMES": {"protocol": "fair-comparison", "models": {"M": "fair_GIN"}}}})
        grid = suite.benchmarks["ENZYMES"].grids["M"]
        data = fc._load(work / "ds", work / "splits.json")
        parts = {p: torch.from_numpy(v) for p, v in data.splits.fold(0).items()}
        seeds = [fc.run_seed(0, 0, 2**31 + r) for r in range(args.runs)]
        device = torch.device("cpu")
        for position in (int(p) for p in args.configs.split(",")):
            config = {**grid[position], "epochs": args.epochs, "patience": 10**9}
            cfg = coerce_all(config, "config", protocol_types(fc.FairComparison, config))
            model_data = ModelData(data.meta, data.sizes, data.store, train_graphs=parts["train"])

            def build(cfg=cfg, model_data=model_data):
                return build_model(cfg, model_data, default_variant=ERRICA2020)

            separate, stacked, setup = [], [], []
            for _ in range(args.repeats):
                start = time.perf_counter()
                for s in seeds:
                    torch.manual_seed(s)
                    out = train_holdout(build(), data.store, parts, cfg, device=device)
                    assert out["epochs"] == args.epochs
                separate.append(time.perf_counter() - start)
                start = time.perf_counter()
                stack = HoldoutStack(build, seeds, data.store, parts, cfg, device=device)
                built = time.perf_counter()
                results = stack.fit()
                stacked.append(time.perf_counter() - start)
                setup.append(built - start)
                assert [r["epochs"] for r in results] == [args.epochs] * args.runs
            sep, stk, cons = min(separate), min(stacked), min(setup)
            per_epoch_sep, per_epoch_stk = sep / args.epochs, (stk - cons) / args.epochs
            rate_sep = 3600 * args.runs / (per_epoch_sep * EPOCHS_PER_RUN)
            rate_stk = 3600 * args.runs / (per_epoch_stk * EPOCHS_PER_RUN + cons)
            summary = {k: grid[position][k] for k in ("batch_size", "hidden_units", "aggregation", "dropout")}
            print(f"config {position} {summary}: {args.runs} runs x {args.epochs} epochs, {args.threads} thread(s)")
            print(f"  separate: {sep:.2f} s ({per_epoch_sep * 1000:.0f} ms per epoch of {args.runs} runs) "
                  f"-> {rate_sep:.1f} runs/hour of {EPOCHS_PER_RUN} epochs")
            print(f"  stacked:  {stk:.2f} s (setup {cons:.2f} s, {per_epoch_stk * 1000:.0f} ms per epoch of the "
                  f"stack) -> {rate_stk:.1f} runs/hour; ratio {rate_stk / rate_sep:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
