"""The jobs of the benchmarking-gnns protocol: one run (a config × seed × fold), or several seeds of a config on a
fold in one process; each writes its outputs and run records."""

from __future__ import annotations

import os

import pandas as pd

from gnnbench.data.meta import read_meta
from gnnbench.papers import DWIVEDI2020
from gnnbench.protocols.benchmarking_gnns import FOLD_TIME_DIVISOR, NAME, SPLIT_TIME_DIVISOR
from gnnbench.records import history_frame, record, write_records
from gnnbench.splits import read_splits
from gnnbench.training.last_epoch import train_run
from gnnbench.training.last_epoch_stack import train_seeds as stacked
from gnnbench.training.link_prediction import train_link_run


def time_limit_hours(max_time: float, splits) -> float:
    """The wall-clock budget of one run: ``max_time``, divided by 10 per fold under cross-validation (TU, CSL)
    and by 20 per split of one graph (WikiCS), as the original."""
    if splits.num_folds == 1:
        return max_time
    return max_time / (SPLIT_TIME_DIVISOR if splits.level == "node" else FOLD_TIME_DIVISOR)


def train(*, dataset_dir: str | os.PathLike, splits_path: str | os.PathLike, fold: int, config: dict,
          out_dir: str | os.PathLike, pe_path: str | os.PathLike | None = None, device: str = "auto",
          threads: int | None = None, label: str | None = None,
          records_out: str | os.PathLike | None = None, record_extra: dict | None = None) -> dict:
    """One run of this protocol: :func:`gnnbench.training.last_epoch.train_run` with the protocol's time budget, or for
    a link-prediction dataset (OGBL-COLLAB) :func:`gnnbench.training.link_prediction.train_link_run`; with
    ``records_out`` also its run record (:mod:`gnnbench.records`; ``record_extra``: added to its ``extra``, a tuned
    run's ``tuning``)."""
    splits = read_splits(splits_path)
    hours = time_limit_hours(float(config["max_time"]), splits) if "max_time" in config else None
    run = train_run
    if read_meta(dataset_dir).task == "link_prediction":
        run = train_link_run
    results = run(dataset_dir=dataset_dir, splits_path=splits_path, fold=fold, config=config, out_dir=out_dir,
                  pe_path=pe_path, device=device, threads=threads, label=label, time_limit_hours=hours)
    if records_out is not None:
        write_run_records(records_out, results, out_dir, record_extra)
    return results


def train_seeds(*, dataset_dir: str | os.PathLike, splits_path: str | os.PathLike, fold: int, config: dict,
                seeds: list[int], out_dirs: list[str | os.PathLike], pe_path: str | os.PathLike | None = None,
                device: str = "auto", threads: int | None = None, label: str | None = None,
                records_out: list[str | os.PathLike] | None = None, stack: bool | None = None,
                record_extra: dict | None = None) -> list[dict]:
    """The runs of ``config`` with each of ``seeds`` on ``fold`` in one job (:mod:`gnnbench.training.last_epoch_stack`:
    one wide stack sharing the first seed's mini-batch order where the model widens, else one after another, each
    as its separate run; ``stack`` None: wide on CUDA, one after another on CPU, where a stack is no faster), each
    written to its ``out_dirs`` entry and, with ``records_out``, its own run record;
    link prediction (OGBL-COLLAB) trains its seeds one after another with :func:`train`."""
    records_out = records_out or [None] * len(seeds)
    if read_meta(dataset_dir).task == "link_prediction":
        return [train(dataset_dir=dataset_dir, splits_path=splits_path, fold=fold, config={**config, "seed": seed},
                      out_dir=out, pe_path=pe_path, device=device, threads=threads, label=label, records_out=rec,
                      record_extra=record_extra)
                for seed, out, rec in zip(seeds, out_dirs, records_out, strict=True)]
    hours = time_limit_hours(float(config["max_time"]), read_splits(splits_path)) if "max_time" in config else None
    results = stacked(dataset_dir=dataset_dir, splits_path=splits_path, fold=fold, config=config, seeds=seeds,
                      out_dirs=out_dirs, pe_path=pe_path, device=device, threads=threads, label=label,
                      time_limit_hours=hours, stack=stack)
    for result, rec, out in zip(results, records_out, out_dirs, strict=True):
        if rec is not None:
            write_run_records(rec, result, out, record_extra)
    return results


def write_run_records(path: str | os.PathLike, results: dict, out_dir: str | os.PathLike,
                      extra: dict | None = None) -> None:
    """The run record of one run (:func:`run_records`; ``extra`` added to its ``extra``) and its history record,
    from the ``history.parquet`` the run wrote in ``out_dir`` (:mod:`gnnbench.records`)."""
    rows = run_records(results, extra)
    write_records(path, rows, history=history_frame(pd.read_parquet(os.path.join(out_dir, "history.parquet")),
                                                     rows[0]["run_id"]))


def run_records(results: dict, more: dict | None = None) -> list[dict]:
    """The run record (:mod:`gnnbench.records`) of one run, from its ``metrics.json`` content: the last epoch is
    the scored one (none for a diverged run or a baseline that trains no epoch); ``extra`` holds the table's
    seconds per training epoch and a multitask run's per-task scores (``per_task``: part -> [[task, score], ...]),
    and ``more`` (a tuned run's ``tuning``)."""
    parts = ("train", "val", "test")
    scores = {f"{part}_{what}": results[part][key] for part in parts
              for what, key in (("score", "metric"), ("loss", "loss"))}
    diverged = results.get("status") == "diverged"
    per_task = {part: results[part]["per_task"] for part in parts if results[part].get("per_task")}
    extra = {"seconds_per_epoch": results["seconds_per_epoch"], **({"per_task": per_task} if per_task else {}),
             **(more or {})}
    return [record(protocol=NAME, default_variant=DWIVEDI2020, dataset=results["dataset"],
                   model=results["label"], architecture=results["model"], config=results["config"],
                   split=results["fold"], split_scheme=results["data"]["split_scheme"], seed=results["seed"],
                   metric=results["metric"], higher_is_better=results["higher_is_better"], **scores,
                   epochs=results["epochs"], scored_epoch=None if diverged or not results["epochs"] else
                   results["epochs"] - 1, stop_reason=results["stop_reason"],
                   status=results["status"], diverged_epoch=results.get("diverged_epoch"),
                   num_params=results["num_params"], seconds=results["total_seconds"], device=results.get("device"),
                   versions=results.get("versions"), extra=extra)]
