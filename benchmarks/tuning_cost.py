"""Tuning trials per hour: one round of k trials trained as one stack, one after another in one process, and one
trial per process (docs/tuning.md#cost, docs/performance.md#tuning-trials).

    python benchmarks/tuning_cost.py [--trials 4] [--repeats 3] [--splits 2] [--epochs 30] [--threads 1] \\
        [--planetoid ../shared/data/real/planetoid] [--tu ../shared/data/real/tu]

Two cases, each a round of ``--trials`` trials asked by the seeded random sampler from a space of learning rate, weight
decay (and dropout where the model holds it per member), so that the round's trials have one shape:

(a) pitfalls, Shchur et al.'s GCN on the real CORA (the Planetoid files under ``--planetoid``, standardised as the
    protocol does; else the default suite's CSBM), each trial on the first ``--splits`` random splits, the protocol's
    full training (early stopping with patience 50);
(b) fair-comparison, Errica et al.'s GIN on the real ENZYMES (``--tu``/ENZYMES.zip), trials in outer fold 0 on its
    inner-training graphs, capped at ``--epochs`` epochs (patience as many: a full trial of up to 1,000 epochs
    would not fit a few minutes; the seconds per epoch scale).

Modes: **stacked** — the round job as the workflow runs it (:func:`gnnbench.protocols.tuning_jobs.run_round`;
pitfalls: trials × splits as one stacked model, fair-comparison: one wide stack); **one process** — the same trials one
after another in one process (pitfalls: ``scope["stack"]`` false; fair-comparison: one ``train_trials`` call per
trial, so each reloads the small dataset); **per process** — a fresh ``python -c`` per trial, as a naive tuner would
run it: start-up, imports, data loading and the trial. Each mode runs ``--repeats`` times; the table shows the median
seconds and trials per hour. The machine is shared: timings vary from run to run.
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data" / "real"
CHILD = """
import json, sys
from pathlib import Path
from gnnbench.protocols.registry import get_protocol
from gnnbench.protocols.tuning_jobs import search_space
a = json.loads(Path(sys.argv[1]).read_text())
get_protocol(a["job"]["protocol"]).train_trials(job=a["job"], configs=[a["config"]], space=search_space(a["job"]),
    dataset_dir=a["dataset"], splits_path=a["splits"], pe_path=None, checkpoint=Path(a["checkpoint"]),
    checkpoint_key="alone", pruner=lambda *_: None, threads=a["threads"])
"""


def pitfalls_case(work: Path, args) -> tuple[dict, str, str]:
    """(suite, dataset, model) of case (a), its dataset built under ``work``."""
    from gnnbench.pipeline import generate_dataset

    space = {"learning_rate": {"log_uniform": [1e-3, 1e-1]}, "weight_decay": {"log_uniform": [1e-5, 1e-2]},
             "dropout_prob": {"uniform": [0.0, 0.8]}}
    tuning = {"trials": args.trials, "per_round": args.trials, "splits": args.splits, "sampler": "random",
              "space": space}
    split = {"scheme": "random_per_class", "splits": 100, "train_per_class": 20, "val_per_class": 30, "seed": 2018}
    if (args.planetoid / "cora" / "raw").is_dir():
        raw = work / "raw" / "planetoid" / "cora"
        shutil.copytree(args.planetoid / "cora" / "raw", raw)
        generate_dataset("planetoid", "CORA", {"name": "cora"}, 0, work / "CORA", raw_dir=work / "raw")
        dataset = {"generator": "planetoid", "params": {"name": "cora"}, "split": split}
        name = "CORA"
    else:
        dataset = {"generator": "csbm", "seed": 1, "params": {}, "split": split}
        generate_dataset("csbm", "CSBM", {}, 1, work / "CSBM")
        name = "CSBM"
    suite = {"datasets": {name: dataset}, "benchmarks": {name: {"protocol": "pitfalls", "tuning": tuning,
                                                                "models": {"GCN": "pitfalls_GCN"}}}}
    return suite, name, "GCN"


def fair_case(work: Path, args) -> tuple[dict, str, str]:
    """(suite, dataset, model) of case (b), its dataset built under ``work``."""
    from gnnbench.pipeline import generate_dataset

    (work / "raw" / "tu").mkdir(parents=True, exist_ok=True)
    shutil.copy(args.tu / "ENZYMES.zip", work / "raw" / "tu" / "ENZYMES.zip")
    generate_dataset("tu", "ENZYMES", {"name": "ENZYMES"}, 0, work / "ENZYMES", raw_dir=work / "raw")
    split = {"scheme": "stratified_kfold", "folds": 10, "val_fraction": 0.1, "seed": 0}
    tuning = {"trials": args.trials, "per_round": args.trials, "sampler": "random",
              "space": {"learning_rate": {"log_uniform": [1e-4, 1e-2]}, "l2": {"log_uniform": [1e-6, 1e-3]}}}
    gin = {"preset": "fair_GIN", "set": {"aggregation": "sum", "epochs": args.epochs, "patience": args.epochs},
           "grid": {"hidden_units": [[32, 32, 32]]}}
    suite = {"datasets": {"ENZYMES": {"generator": "tu", "params": {"name": "ENZYMES"}, "split": split}},
             "benchmarks": {"ENZYMES": {"protocol": "fair-comparison", "final_runs": 1, "tuning": tuning,
                                        "models": {"GIN": gin}}}}
    return suite, "ENZYMES", "GIN"


def measure(case, work: Path, args) -> dict[str, float]:
    """Median seconds of the round in each mode."""
    from gnnbench.pipeline import make_split_file
    from gnnbench.protocols.registry import get_protocol
    from gnnbench.protocols.tuning_jobs import run_round, search_space
    from gnnbench.records import read_runs
    from gnnbench.suite import load_suite

    raw, name, model = case(work, args)
    suite = load_suite(raw)
    benchmark = suite.benchmarks[name]
    split = suite.datasets[name].split
    splits = work / "splits.json"
    make_split_file(work / name, split["scheme"], {k: v for k, v in split.items() if k != "scheme"}, splits)
    search = benchmark.searches(model)[0]
    job = benchmark.tuning_job(model, search, 0)
    protocol = get_protocol(job["protocol"])
    seconds: dict[str, list[float]] = {"stacked": [], "one process": [], "per process": []}
    configs = None
    for repeat in range(args.repeats):
        out = work / f"r{repeat}"
        start = time.perf_counter()
        run_round(job=job, dataset_dir=work / name, splits_path=splits, pe_path=None, previous=[],
                  out=out / "stacked" / "round_0.json", records_out=out / "stacked.parquet", threads=args.threads)
        seconds["stacked"].append(time.perf_counter() - start)
        configs = configs or [json.loads(c) for c in read_runs([out / "stacked.parquet"]).sort_values("init")["config"]]
        start = time.perf_counter()
        if job["protocol"] == "pitfalls":
            alone = copy.deepcopy(job)
            alone["scope"]["stack"] = False
            run_round(job=alone, dataset_dir=work / name, splits_path=splits, pe_path=None, previous=[],
                      out=out / "alone" / "round_0.json", records_out=out / "alone.parquet", threads=args.threads)
        else:
            for i, config in enumerate(configs):
                protocol.train_trials(job=job, configs=[config], space=search_space(job), dataset_dir=work / name,
                                      splits_path=splits, pe_path=None, checkpoint=out / f"alone{i}.pt",
                                      checkpoint_key="alone", pruner=lambda *_: None, threads=args.threads)
        seconds["one process"].append(time.perf_counter() - start)
        start = time.perf_counter()
        for i, config in enumerate(configs):
            spec = out / f"child{i}.json"
            spec.write_text(json.dumps({"job": job, "config": config, "dataset": str(work / name),
                                        "splits": str(splits), "checkpoint": str(out / f"child{i}.pt"),
                                        "threads": args.threads}))
            subprocess.run([sys.executable, "-c", CHILD, str(spec)], check=True)
        seconds["per process"].append(time.perf_counter() - start)
    return {mode: statistics.median(values) for mode, values in seconds.items()} | {"case": f"{job['protocol']} "
                                                                                            f"{name} {model}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--splits", type=int, default=2, help="pitfalls: random splits per trial")
    parser.add_argument("--epochs", type=int, default=30, help="fair-comparison: epoch cap (and patience)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--planetoid", type=Path, default=SHARED / "planetoid")
    parser.add_argument("--tu", type=Path, default=SHARED / "tu")
    parser.add_argument("--only", choices=["pitfalls", "fair-comparison"])
    args = parser.parse_args()
    cases = {"pitfalls": pitfalls_case, "fair-comparison": fair_case}
    rows = []
    for key, case in cases.items():
        if args.only not in (None, key):
            continue
        if key == "fair-comparison" and not (args.tu / "ENZYMES.zip").is_file():
            print(f"skipping {key}: no {args.tu / 'ENZYMES.zip'}")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(measure(case, Path(tmp), args))
    print(f"\n{args.trials} trials per round, median of {args.repeats}, {args.threads} thread(s)\n")
    print("| case | mode | seconds per round | seconds per trial | trials per hour |")
    print("|---|---|---|---|---|")
    for row in rows:
        for mode in ("stacked", "one process", "per process"):
            s = row[mode]
            print(f"| {row['case']} | {mode} | {s:.1f} | {s / args.trials:.2f} | {3600 * args.trials / s:,.0f} |")


if __name__ == "__main__":
    main()
