"""Tuning under the benchmarking-gnns protocol (``docs/tuning.md``).

A trial is one run of its configuration (:func:`gnnbench.training.last_epoch.train_one`: Adam, ReduceLROnPlateau on
the validation loss, stop below ``min_lr``, at ``epochs`` or at the time budget) on the benchmark's first fold with
the model's first seed, scored by the protocol's validation score of its last epoch (the dataset's metric). Its data
has no test loader: a trial never reads the test part. The round's trials train one after another in one process,
each resuming from its own checkpoint (``round_{r}/trial{t}/`` beside the round's file); the round's pruner stops a
trial as ``pruned``.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import pandas as pd

from gnnbench.papers import DWIVEDI2020
from gnnbench.protocols.benchmarking_gnns.train import time_limit_hours
from gnnbench.splits import read_splits
from gnnbench.training.engine import stoppable
from gnnbench.training.last_epoch import HISTORY_FILE, load_run_data, resume_note, train_one
from gnnbench.training.metrics import get_metric

MONITOR = "val_metric"  # the run's row key of the validation score (the pruner's)


def direction(meta) -> str:
    """The direction of the dataset's metric (accuracy, F1: maximize; MAE: minimize)."""
    return "maximize" if get_metric(meta.metric).higher_is_better else "minimize"


def train_trials(*, job: dict, configs: list[dict], dataset_dir, splits_path, pe_path, checkpoint: Path,
                 checkpoint_key: str, pruner, device: str = "auto", threads: int | None = None, **_) -> list[dict]:
    """Train a round's trial ``configs`` on fold ``job["scope"]["fold"]`` with seed ``job["scope"]["seed"]`` (module
    docstring); one result per trial (:func:`gnnbench.protocols.tuning_jobs.run_round`). ``pruner(monitor,
    earlier)``: a fresh pruning rule per trial, given the round's trials trained before it (None: no pruning)."""
    fold, seed = job["scope"]["fold"], job["scope"]["seed"]
    splits = read_splits(splits_path)
    folder = Path(checkpoint).parent / Path(checkpoint).name.split(".")[0]
    out = []
    for i, config in enumerate(configs):
        cfg = {**config, "seed": seed}
        out_dir = folder / f"trial{job['first'] + i}"
        hours = time_limit_hours(float(cfg["max_time"]), splits) if "max_time" in cfg else None

        def body(guard, cfg=cfg, out_dir=out_dir, hours=hours) -> dict:
            start = time.perf_counter()
            data = load_run_data(dataset_dir=dataset_dir, splits_path=splits_path, fold=fold, config=cfg,
                                 pe_path=pe_path, device=device, threads=threads, time_limit_hours=hours)
            data.loaders.pop("test")  # a trial is scored on validation only: the test part is never read
            rule = pruner(MONITOR, list(out))  # the round's trials trained before this one compete too
            return train_one(guard, data, data.cfg, out_dir, job["model"], start, extra={"tuning": checkpoint_key},
                             more_rules=lambda rule=rule: [] if rule is None else [rule])

        results = stoppable(body, lambda out_dir=out_dir: resume_note(out_dir / "checkpoint.pt"))
        out.append(_result(results, pd.read_parquet(out_dir / HISTORY_FILE)))
    return out


def _result(results: dict, history) -> dict:
    """A trial's result for its record: the last epoch's train and validation scores, the stop."""
    diverged = results["status"] == "diverged"
    pruned = results["epochs"] - 1 if results["stop_reason"] == "pruned" else None
    fields = {"split": results["fold"], "split_scheme": results["data"]["split_scheme"], "seed": results["seed"],
              "metric": results["metric"], "higher_is_better": results["higher_is_better"],
              "default_variant": DWIVEDI2020, "train_score": results["train"]["metric"],
              "train_loss": results["train"]["loss"], "val_loss": results["val"]["loss"],
              "epochs": results["epochs"],
              "scored_epoch": None if diverged or pruned is not None or not results["epochs"] else
              results["epochs"] - 1, "stop_reason": results["stop_reason"], "status": results["status"],
              "diverged_epoch": results.get("diverged_epoch"), "num_params": results["num_params"],
              "seconds": results["total_seconds"], "device": results.get("device"),
              "versions": results.get("versions")}
    score = results["val"]["metric"]
    return {"fields": fields, "score": None if diverged or score is None or math.isnan(score) else score,
            "score_name": "metric", "pruned_epoch": pruned, "history": history}
