"""Tuning under the benchmarking-gnns protocol (``docs/tuning.md``).

A trial is one run of its configuration (:func:`gnnbench.training.last_epoch.train_one`: Adam, ReduceLROnPlateau on
the validation loss, stop below ``min_lr``, at ``epochs`` or at the time budget) on the benchmark's first fold with
the model's first seed, scored by the protocol's validation score of its last epoch (the dataset's metric). Its data
has no test loader: a trial never reads the test part. Each trial writes its run's outputs and checkpoint in
``round_{r}/trial{t}/`` beside the round's file and resumes from them.

Where the benchmark trains its seeds as one wide stack (``stack: true``: on CUDA by default), the round's trials of
one shape (:func:`gnnbench.tuning.space.stacks`: they differ only in learning rate, weight decay and dropout) train
as one wide stack too (:func:`gnnbench.training.last_epoch_stack.train_stack`: each with its own schedule and stop,
sharing the first trial's batch order) where the model widens; otherwise, and on CPU by default, one after another in
one process. The round's pruner stops a trial (a member, which leaves the stack) as ``pruned``.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path

import pandas as pd

from gnnbench.config.keys import coerce_all
from gnnbench.papers import DWIVEDI2020
from gnnbench.protocols.benchmarking_gnns.train import time_limit_hours
from gnnbench.splits import read_splits
from gnnbench.training.engine import stoppable
from gnnbench.training.last_epoch import HISTORY_FILE, load_run_data, resume_note, train_one
from gnnbench.training.last_epoch_stack import stackable, train_stack
from gnnbench.training.metrics import get_metric
from gnnbench.training.wide import NotWidenable
from gnnbench.tuning.space import stacks

log = logging.getLogger(__name__)
MONITOR = "val_metric"  # the run's row key of the validation score (the pruner's)


def direction(meta) -> str:
    """The direction of the dataset's metric (accuracy, F1: maximize; MAE: minimize)."""
    return "maximize" if get_metric(meta.metric).higher_is_better else "minimize"


def train_trials(*, job: dict, configs: list[dict], space: dict, dataset_dir, splits_path, pe_path,
                 checkpoint: Path, checkpoint_key: str, pruner, device: str = "auto", threads: int | None = None,
                 **_) -> list[dict]:
    """Train a round's trial ``configs`` on fold ``job["scope"]["fold"]`` with seed ``job["scope"]["seed"]`` (module
    docstring; ``job["scope"]["stack"]``: the benchmark's stacking, None the device's default); one result per trial
    (:func:`gnnbench.protocols.tuning_jobs.run_round`). ``pruner(monitor, earlier)``: a fresh pruning rule per fit,
    given the round's trials trained before it (None: no pruning)."""
    fold, seed, stack = job["scope"]["fold"], job["scope"]["seed"], job["scope"].get("stack", False)
    splits = read_splits(splits_path)
    folder = Path(checkpoint).parent / Path(checkpoint).name.split(".")[0]
    cfgs = [{**config, "seed": seed} for config in configs]
    out_dirs = [folder / f"trial{job['first'] + i}" for i in range(len(cfgs))]
    results: dict[int, dict] = {}  # trial -> its result, in the order they trained

    def rules():  # the round's trials trained before this fit compete too
        rule = pruner(MONITOR, list(results.values()))
        return [] if rule is None else [rule]

    def body(guard, members: list[int]) -> list[dict]:
        start = time.perf_counter()
        first = cfgs[members[0]]
        hours = time_limit_hours(float(first["max_time"]), splits) if "max_time" in first else None
        data = load_run_data(dataset_dir=dataset_dir, splits_path=splits_path, fold=fold, config=first,
                             pe_path=pe_path, device=device, threads=threads, time_limit_hours=hours)
        data.loaders.pop("test")  # a trial is scored on validation only: the test part is never read
        wide = stack if stack is not None else data.dev.type == "cuda"
        if len(members) > 1 and wide and stackable(data) is None:
            try:
                return train_stack(guard, data, [coerce_all(cfgs[i], "config") for i in members],
                                   [out_dirs[i] for i in members], job["model"], start, more_rules=rules)
            except NotWidenable as exc:
                log.info("trials %s one after another: the model does not widen (%s)", members, exc)
        out = []
        for i in members:
            out.append(train_one(guard, data, coerce_all(cfgs[i], "config"), out_dirs[i], job["model"], start,
                                 extra={"tuning": checkpoint_key}, more_rules=rules))
            results[i] = _result(out[-1], pd.read_parquet(out_dirs[i] / HISTORY_FILE))
            start = time.perf_counter()
        return out

    for members in stacks(configs, space):
        runs = stoppable(lambda guard, members=members: body(guard, members),
                         lambda members=members: "; ".join(resume_note(out_dirs[i] / "checkpoint.pt")
                                                           for i in members))
        results.update((i, _result(r, pd.read_parquet(out_dirs[i] / HISTORY_FILE)))
                       for i, r in zip(members, runs, strict=True))
    return [results[i] for i in range(len(configs))]


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
