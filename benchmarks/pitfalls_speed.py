"""Runs per minute of the pitfalls protocol: stacked initialisations in one job, against one run per process.

    python benchmarks/pitfalls_speed.py --planetoid ../shared/data/real/planetoid --name cora \\
        --split-ids 0 1 --inits 20 --single 3 [--models pitfalls_GCN pitfalls_GAT ...] [--threads 1] \\
        [--suite-runs 2000] [--cores 2]

Builds the standardised dataset (docs/protocols/pitfalls.md#datasets-and-preprocessing) from a folder holding the
original Planetoid files (``{name}/raw/ind.{name}.*``) and its 100 random splits, then for every model preset:

(a) **stacked**: one in-process job (:func:`gnnbench.protocols.pitfalls.train.run_chunk`, exactly what a workflow job
    runs) trains ``--inits`` initialisations of every split in ``--split-ids`` at once; its runs per minute include
    loading the data and writing the outputs, not the Python start-up (a job pays that once);
(b) **one run per process**: ``--single`` runs (split ``--split-ids[0]``, initialisations 0, 1, ...), each through
    ``gnnbench train pitfalls --init-ids i`` in a fresh Python process — start-up, imports, data loading
    and one run, as a naive job runner would do.

It prints runs per minute of both, their ratio, and the mean test accuracy of the same (split, initialisation) runs
in both modes, and the whole suite's estimate: every model's share of ``--suite-runs`` runs (the protocol's 100
splits × 20 initialisations; label propagation trains one run per split, so 100) at its stacked rate, in
core-minutes, and the wall time on ``--cores`` cores with one job per core (jobs are independent; the estimate
assumes the cores do not slow each other down).

The initial weights are identical; the dropout draws are not (the stack shares one random stream), so the
accuracies agree in distribution, not bit for bit (``tests/test_pitfalls.py`` checks bitwise equality without
dropout). Timings on a shared machine vary from run to run (docs/performance.md).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

ALL_MODELS = ["pitfalls_GCN", "pitfalls_GAT", "pitfalls_MoNet", "pitfalls_GS-mean", "pitfalls_GS-maxpool",
              "pitfalls_GS-meanpool", "pitfalls_MLP", "pitfalls_LogReg", "pitfalls_LabelProp", "pitfalls_LabelProp-NL"]


def prepare(planetoid: Path, name: str, work: Path) -> tuple[Path, Path]:
    """(dataset folder, split file) of the standardised Planetoid graph ``name`` and its 100 random splits, built in
    ``work`` from the raw files under ``planetoid``."""
    from gnnbench.pipeline import generate_dataset, make_split_file

    raw = work / "raw" / "planetoid" / name
    raw.mkdir(parents=True)
    for path in (planetoid / name / "raw").iterdir():
        shutil.copy(path, raw / path.name)
    dataset, splits = work / "dataset", work / "splits.json"
    generate_dataset("planetoid", name.upper(), {"name": name}, 0, dataset, raw_dir=work / "raw")
    make_split_file(dataset, "random_per_class", {"splits": 100, "train_per_class": 20, "val_per_class": 30,
                                                  "seed": 2018}, splits)
    return dataset, splits


def main() -> None:
    """Time every model both ways and print the table and the suite estimate (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--planetoid", type=Path, required=True, help="folder with {name}/raw/ind.{name}.* files")
    parser.add_argument("--name", default="cora")
    parser.add_argument("--split-ids", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--inits", type=int, default=20)
    parser.add_argument("--single", type=int, default=3, help="runs measured one per process (0: skip)")
    parser.add_argument("--models", nargs="+", default=ALL_MODELS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--suite-runs", type=int, default=2000,
                        help="runs per model in the suite estimate (splits x initialisations; label propagation: "
                             "one per split)")
    parser.add_argument("--cores", type=int, default=2, help="cores (one job each) in the suite estimate")
    args = parser.parse_args()

    import torch

    from gnnbench.config.presets import run_config
    from gnnbench.protocols.pitfalls.train import run_chunk

    torch.set_num_threads(args.threads)
    work = Path(tempfile.mkdtemp(prefix="pitfalls_speed_"))
    dataset, splits = prepare(args.planetoid, args.name, work)
    print(f"{'model':22s} {'runs':>5s} {'stacked runs/min':>17s} {'1/process runs/min':>19s} {'ratio':>6s} "
          f"{'test acc stacked':>17s} {'test acc 1/process':>19s} {'epochs':>7s} {'suite core-min':>15s}")
    totals = {"stacked_runs": 0, "stacked_s": 0.0, "suite_min": 0.0}
    for preset in args.models:
        out = work / "runs" / preset
        start = time.perf_counter()
        metrics = run_chunk(dataset_dir=dataset, splits_path=splits, splits=args.split_ids, config=run_config(preset),
                            inits=args.inits, seed=0, out_dir=out, threads=args.threads)
        stacked_s = time.perf_counter() - start
        totals["stacked_runs"] += metrics["runs"]
        totals["stacked_s"] += stacked_s
        runs = pq.read_table(out / "runs.parquet").to_pandas()
        # without one-per-process runs: the mean test accuracy of every stacked run (a check that a change kept them)
        single_rate, single_acc, compared = float("nan"), float("nan"), float(runs["test_accuracy"].mean())
        singles = min(args.single, metrics["inits"])
        if singles:
            accuracies, start = [], time.perf_counter()
            for init in range(singles):
                single_out = work / "single" / preset / str(init)
                subprocess.run([sys.executable, "-m", "gnnbench.cli", "train", "pitfalls", "--dataset",
                                str(dataset), "--splits", str(splits), "--fold", str(args.split_ids[0]), "--preset",
                                preset, "--inits", str(args.inits), "--init-ids", str(init), "--threads",
                                str(args.threads), "--out", str(single_out)], check=True, capture_output=True)
                accuracies.append(pq.read_table(single_out / "runs.parquet").to_pandas()["test_accuracy"].iloc[0])
            single_rate = 60 * singles / (time.perf_counter() - start)
            single_acc = float(np.mean(accuracies))
            same = runs[(runs["split"] == args.split_ids[0]) & (runs["init"] < singles)]
            compared = float(same["test_accuracy"].mean())
        rate = 60 * metrics["runs"] / stacked_s
        # the suite's splits (suite runs / inits), each with as many runs as this model trains per split
        suite_min = args.suite_runs / args.inits * metrics["runs"] / len(args.split_ids) / rate
        totals["suite_min"] += suite_min
        print(f"{preset:22s} {metrics['runs']:5d} {rate:17.1f} {single_rate:19.1f} {rate / single_rate:6.1f} "
              f"{compared:17.2f} {single_acc:19.2f} {metrics['epochs_mean']:7.1f} {suite_min:15.1f}", flush=True)
    print(f"all models: {totals['stacked_runs']} runs in {totals['stacked_s']:.0f} s stacked "
          f"({60 * totals['stacked_runs'] / totals['stacked_s']:.0f} runs/min on {args.threads} thread(s))")
    print(f"suite estimate: {len(args.models)} model(s) x {args.suite_runs // args.inits} splits = "
          f"{totals['suite_min']:.0f} "
          f"core-minutes at {args.threads} thread(s) per job, ~{totals['suite_min'] / args.cores:.0f} min on "
          f"{args.cores} core(s) (one job per core)")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
