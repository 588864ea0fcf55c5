"""The jobs of the heterophily protocol: the ten splits of one candidate configuration (a model with one layer count)
trained as one stack (:mod:`gnnbench.training.split_stack`); each job writes its metrics and run records."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import numpy as np
import torch

from gnnbench.allocator import keep_freed_memory
from gnnbench.config.keys import coerce_all, protocol_types
from gnnbench.data.batching import GraphLoader, model_dtypes
from gnnbench.data.meta import read_dataset
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError, DataError
from gnnbench.io import sha256_json, write_json
from gnnbench.models.build import ModelData, build_model
from gnnbench.protocols.heterophily import NAME, PAPER, TRAINING_DEFAULTS
from gnnbench.records import history_frame, record, write_records
from gnnbench.splits import read_splits
from gnnbench.training.engine import Checkpoint, Job, Run, stoppable
from gnnbench.training.environment import device_name, package_versions, resolve_device
from gnnbench.training.split_stack import SplitStackStep, member_results, split_rules, warmup_steps

log = logging.getLogger(__name__)
CHECKPOINT_FILE = "checkpoint.pt"
CHECKPOINT_SECONDS = 30.0
METRICS = ("accuracy", "roc_auc")


def split_seed(seed: int, split: int) -> int:
    """The initialisation seed of split ``split`` (independent of which splits share the stack)."""
    return int(np.random.SeedSequence(seed, spawn_key=(split,)).generate_state(1)[0])


def dropout_seed(seed: int, first_split: int = 0) -> int:
    """The seed of a stack's dropout draws (one stream, named by the stack's first split; every member draws its
    own masks from it)."""
    return int(np.random.SeedSequence(seed, spawn_key=(2**31, first_split)).generate_state(1)[0])


def stack_inputs(dataset_dir: str | os.PathLike, splits_path: str | os.PathLike, split_ids: list[int] | None,
                 device: torch.device):
    """(meta, build, batch, labels, masks, split ids) of a candidate job: ``build(config)`` makes the model for the
    dataset, ``batch`` is the one graph, ``masks`` the (R, N) train / val / test masks of the splits."""
    meta, columns = read_dataset(dataset_dir)
    if not meta.transductive:
        raise ConfigError(f"dataset {meta.name} is not one graph with node labels ({meta.task}, {meta.num_graphs} "
                          f"graphs); protocol {NAME} needs a transductive node-classification dataset")
    if meta.metric not in METRICS:
        raise ConfigError(f"dataset {meta.name}: protocol {NAME} scores accuracy or ROC AUC, not {meta.metric!r}")
    splits = read_splits(splits_path, meta)
    if splits.level != "node":
        raise DataError(f"split file {splits_path} holds graph splits; protocol {NAME} needs node splits")
    split_ids = list(range(splits.num_folds)) if split_ids is None else list(split_ids)
    missing = [k for k in split_ids if not 0 <= k < splits.num_folds]
    if missing:
        raise ConfigError(f"splits {missing}: the split file {splits_path} has splits 0..{splits.num_folds - 1}; "
                          "name those in the benchmark's `folds`")
    n = int(columns.num_nodes[0])
    masks = {part: torch.zeros(len(split_ids), n, dtype=torch.bool) for part in ("train", "val", "test")}
    for row, k in enumerate(split_ids):
        for part, nodes in splits.fold(k).items():
            masks[part][row, torch.from_numpy(nodes)] = True
    store = model_dtypes(GraphStore.from_columns(columns))
    first = torch.zeros(1, dtype=torch.int64)
    batch = GraphLoader(store, first, 1).collate(first).to(device)
    labels = torch.from_numpy(columns.node["y"].astype(np.int64)).to(device)

    def build(config: dict) -> torch.nn.Module:
        return build_model(config, ModelData(meta, store=store), default_variant=PAPER).to(device)

    return meta, splits, build, batch, labels, {p: m.to(device) for p, m in masks.items()}, split_ids


def run_candidate(*, dataset_dir: str | os.PathLike, splits_path: str | os.PathLike, config: dict, seed: int,
                  out_dir: str | os.PathLike, device: str = "auto", threads: int | None = None,
                  label: str | None = None, layers: int = 0, split_ids: list[int] | None = None,
                  splits_per_stack: int | None = None, records_out: str | os.PathLike | None = None) -> dict:
    """Train the splits (default: every split of the split file) of one candidate configuration as one stack — or,
    with ``splits_per_stack``, as consecutive stacks of that many splits (a graph whose stack of ten does not fit in
    memory), each a unit of the job's one checkpoint — and write ``metrics.json`` (and, with ``records_out``, its
    run records of stage ``inner`` and their history); ``layers`` names the candidate in the records (0: the model's
    own config). Returns the metrics. Resumes from ``out_dir/checkpoint.pt`` after a stop; a split's result does not
    depend on the stack it trains in."""
    def job(guard) -> dict:
        return _run(guard, dataset_dir, splits_path, config, seed, Path(out_dir), device, threads, label, layers,
                    split_ids, splits_per_stack, records_out)

    path = Path(out_dir) / CHECKPOINT_FILE
    return stoppable(job, lambda: f"checkpoint {path} holds the steps done; run the same command again (Snakemake: "
                                  "rerun the job) to resume from it")


def _run(guard, dataset_dir, splits_path, config, seed, out_dir, device, threads, label, layers, split_ids,
         splits_per_stack, records_out) -> dict:
    keep_freed_memory()
    start = time.perf_counter()
    cfg = {**TRAINING_DEFAULTS, **coerce_all(config, "config", protocol_types(PAPER, config))}
    if threads:
        torch.set_num_threads(threads)
    dev = resolve_device(device)
    meta, splits, build, batch, labels, masks, split_ids = stack_inputs(dataset_dir, splits_path, split_ids, dev)
    label = label or cfg["model"]
    size = splits_per_stack or len(split_ids)
    job = Job(Checkpoint(out_dir / CHECKPOINT_FILE, NAME, guard, every_s=CHECKPOINT_SECONDS))
    done = {"results": [], "history": []}
    for first in range(0, len(split_ids), size):
        rows = list(range(first, min(first + size, len(split_ids))))
        ids = [split_ids[r] for r in rows]
        key = sha256_json({"config": cfg, "dataset": meta.checksum, "splits": sha256_json(splits.folds),
                           "split_ids": ids, "seed": seed})

        def make(rows=rows, ids=ids):
            step = SplitStackStep(lambda: build(cfg), batch, labels, {p: m[rows] for p, m in masks.items()},
                                  metric=meta.metric, lr=cfg["lr"], weight_decay=cfg["weight_decay"],
                                  warmup=warmup_steps(cfg), seeds=[split_seed(seed, k) for k in ids],
                                  dropout_seed=dropout_seed(seed, ids[0]), name=label)
            return Run(len(ids)), step, split_rules(len(ids), cfg["num_steps"])

        def finish(run, step) -> dict:
            return {"results": member_results(run), "history": [list(s.history) for s in run.states]}

        unit = job.fit(key, make, finish, label=f"{label} layers {layers} splits {ids[0]}..{ids[-1]}")
        done["results"] += unit["results"]
        done["history"] += unit["history"]
    results = done["results"]
    completed = [r for r in results if r["status"] != "diverged"]
    metrics = {
        "dataset": meta.name, "label": label, "model": cfg["model"], "protocol": NAME, "layers": layers,
        "splits": split_ids, "seed": seed, "metric": meta.metric, "results": results,
        "val_mean": float(np.mean([r["val_score"] for r in completed])) if completed else None,
        "test_mean": float(np.mean([r["test_score"] for r in completed])) if completed else None,
        "diverged": len(results) - len(completed),
        "num_params": _count(build, cfg),
        "seconds_per_step": sum(r["seconds"] for r in results) / max(sum(r["steps"] for r in results), 1),
        "total_seconds": time.perf_counter() - start, "config": cfg, "device": device_name(dev),
        "threads": torch.get_num_threads(), "versions": package_versions(),
        "data": {"dataset_checksum": meta.checksum, "split_scheme": splits.scheme,
                 "split_checksum": sha256_json(splits.folds)},
    }
    with guard.deferred(raise_after=False):  # the job is complete: a stop signal now lets the outputs finish
        job.save(finished=True)
        write_json(out_dir / "metrics.json", metrics)
        if records_out is not None:
            records = candidate_records(metrics, seeds=[split_seed(seed, k) for k in split_ids])
            write_records(records_out, records, history=candidate_history(records, done["history"]))
    log.info("%s layers %d: mean validation %s, mean test %s over %d splits, %.3fs per step", label, layers,
             _percent(metrics["val_mean"]), _percent(metrics["test_mean"]), len(results), metrics["seconds_per_step"])
    return metrics


def _count(build, cfg: dict) -> int:
    """Trainable weights of one member."""
    model = build(cfg)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def candidate_records(metrics: dict, seeds: list[int], stage: str = "inner") -> list[dict]:
    """The run records (:mod:`gnnbench.records`) of one candidate job: one per split, scored at its best validation
    step; ``extra`` holds the candidate's layer count."""
    out = []
    for k, seed, r in zip(metrics["splits"], seeds, metrics["results"], strict=True):
        out.append(record(
            protocol=NAME, default_variant=PAPER, dataset=metrics["dataset"], model=metrics["label"],
            architecture=metrics["model"], config=metrics["config"], stage=stage, split=k,
            split_scheme=metrics["data"]["split_scheme"], seed=seed, metric=metrics["metric"], higher_is_better=True,
            **{f"{part}_{what}": r.get(f"{part}_{what}") for part in ("train", "val", "test")
               for what in ("score", "loss")},
            epochs=r["steps"], scored_epoch=r["best_step"], stop_reason=r["stop_reason"], status=r["status"],
            diverged_epoch=r["diverged_epoch"], num_params=metrics["num_params"], seconds=r["seconds"],
            device=metrics["device"], versions=metrics["versions"], extra={"layers": metrics["layers"]}))
    return out


def candidate_history(records: list[dict], histories: list[list[dict]]):
    """The history record of one candidate job: every step of every split (its learning rate, losses and scores)."""
    columns: dict[str, list] = {"epoch": [], "lr": [], "seconds": []}
    for part in ("train", "val", "test"):
        columns[f"{part}_loss"], columns[f"{part}_score"] = [], []
    run_ids = []
    for rec, rows in zip(records, histories, strict=True):
        for epoch, row in enumerate(rows):
            run_ids.append(rec["run_id"])
            columns["epoch"].append(epoch)
            columns["lr"].append(row["lr"])
            columns["seconds"].append(row.get("seconds"))
            columns["train_loss"].append(row["train_loss"])
            for part in ("train", "val", "test"):
                columns[f"{part}_score"].append(row[f"{part}_score"])
            columns["val_loss"].append(row["val_loss"])
            columns["test_loss"].append(row["test_loss"])
    return history_frame(columns, run_ids, score="score")


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"
