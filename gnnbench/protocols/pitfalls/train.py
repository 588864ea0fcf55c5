"""The jobs of the pitfalls protocol: every initialisation of a model on a chunk of random splits, the
initialisations of a split trained at once; each job writes its runs, history, metrics and run records."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from gnnbench.allocator import keep_freed_memory
from gnnbench.config.keys import coerce_all, protocol_types
from gnnbench.data.batching import GraphLoader, model_dtypes
from gnnbench.data.meta import read_dataset
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError, DataError
from gnnbench.io import atomic_path, sha256_json, write_json
from gnnbench.models.build import ModelData, build_model
from gnnbench.models.build import num_parameters as count
from gnnbench.models.labelprop import LabelPropagation
from gnnbench.models.registry import model_info
from gnnbench.models.stacked import NodeGraph, build_stacked_model, count_stacked_parameters
from gnnbench.papers import SHCHUR2018
from gnnbench.protocols.pitfalls import (
    NAME,
    PROPAGATION_MODELS,
    TRAINING_DEFAULTS,
)
from gnnbench.records import history_frame, read_tables, record, write_records
from gnnbench.splits import read_splits
from gnnbench.training.engine import Checkpoint, Job, stoppable
from gnnbench.training.environment import device_name, package_versions, resolve_device
from gnnbench.training.functional_stack import stacked_or_sequential
from gnnbench.training.init_stack import PropagationStep, StackedStep

log = logging.getLogger(__name__)
CHECKPOINT_FILE = "checkpoint.pt"
CHECKPOINT_SECONDS = 30.0


def load_node_graph(dataset_dir: str | os.PathLike, device: torch.device | str = "cpu"):
    """(meta, NodeGraph, node labels (-1 = unlabelled)) of a transductive dataset folder."""
    meta, columns = read_dataset(dataset_dir)
    if not meta.transductive:
        raise ConfigError(f"dataset {meta.name} is not one graph with node labels ({meta.task}, {meta.num_graphs} "
                          "graphs); protocol pitfalls needs a transductive node-classification dataset")
    if "x" in getattr(columns, "sparse", {}):
        features = columns.sparse["x"].to_torch()
    else:
        features = torch.from_numpy(np.ascontiguousarray(columns.node["x"], dtype=np.float32))
    edge_index = torch.from_numpy(np.stack([columns.src, columns.dst]).astype(np.int64))
    labels = torch.from_numpy(columns.node["y"].astype(np.int64))
    graph = NodeGraph(int(columns.num_nodes[0]), edge_index.to(device), features.to(device), meta.num_outputs)
    return meta, graph, labels.to(device)


def num_parameters(config: dict, graph, meta=None) -> int:
    """Trainable weights of one initialisation (0 for label propagation); a model without a stacked form (another
    zoo's) is counted as built for ``meta``, the dataset's description."""
    info = model_info(config, SHCHUR2018)
    if info.kind == "propagation":
        return 0
    if not info.has_stacked:
        if meta is None:
            raise ConfigError(f"model {info.family} ({info.variant}): counting its parameters needs the dataset's meta")
        return count(config, ModelData(meta, graph=graph), default_variant=SHCHUR2018)

    return count_stacked_parameters(build_stacked_model(config, graph, [0]))


def job_data(dataset_dir: str | os.PathLike, splits_path: str | os.PathLike, device: str | None, threads: int | None):
    """What a pitfalls job (a chunk of splits, a tuning round) trains on: its device (``threads`` CPU threads set),
    the dataset's meta, graph and labels on it, and the node splits; graph splits are a one-line DataError."""
    if threads:
        torch.set_num_threads(threads)
    dev = resolve_device(device)
    meta, graph, labels = load_node_graph(dataset_dir, dev)
    splits = read_splits(splits_path, meta)
    if splits.level != "node":
        raise DataError(f"split file {splits_path} holds graph splits; protocol pitfalls needs node splits "
                        "(schemes random_per_class, random_sizes, given)")
    return dev, meta, graph, labels, splits


def init_seed(seed: int, split: int, init: int) -> int:
    """Seed of initialisation ``init`` on split ``split`` (independent of how splits are grouped into jobs)."""
    return int(np.random.SeedSequence(seed, spawn_key=(split, init)).generate_state(1)[0])


def dropout_seed(seed: int, split: int) -> int:
    """Seed of the dropout masks on split ``split``, shared by its initialisations (independent of how splits are
    grouped into jobs)."""
    return int(np.random.SeedSequence(seed, spawn_key=(split,)).generate_state(1)[0])


def has_stacked_form(config: dict) -> bool:
    """Whether the config's model has a stacked form (R initialisations as one model; the registry's answer)."""
    return model_info(config, "shchur2018").has_stacked


def whole_graph(dataset_dir: str | os.PathLike, device: torch.device | str = "cpu"):
    """(build, batch) for a model without a stacked form: ``build()`` builds it for the dataset (weights from torch's
    global generator) and ``batch`` is the one graph as a batch on ``device`` (what its forward pass sees)."""
    meta, columns = read_dataset(dataset_dir)
    store = model_dtypes(GraphStore.from_columns(columns))
    first = torch.zeros(1, dtype=torch.int64)
    batch = GraphLoader(store, first, 1).collate(first).to(device)

    def build(config: dict) -> torch.nn.Module:
        return build_model(config, ModelData(meta, store=store), default_variant="shchur2018").to(device)

    return build, batch


def make_trainer(config: dict, graph, labels: torch.Tensor, parts: dict[str, torch.Tensor], seed: int, split: int,
                 init_ids: list[int], whole=None):
    """The training step of one split (:mod:`gnnbench.training.init_stack`), seeded for ``split``: label
    propagation; for a model with a hand-written stacked form (Shchur's zoo) that stacked model of ``init_ids``; for
    any other model (another zoo's, a user's) its initialisations stacked by torch.func on ``whole``
    (:func:`whole_graph`), or, where the model cannot be vmapped, trained one after another in this process
    (:func:`~gnnbench.training.functional_stack.stacked_or_sequential`)."""
    rule = {"criterion": config["early_stopping_criterion"], "patience": config["early_stopping_tolerance"],
            "max_epochs": config["num_epochs"], "tolerance": config["improvement_tolerance"]}
    torch.manual_seed(dropout_seed(seed, split))
    if config["model"] in PROPAGATION_MODELS:
        propagation = LabelPropagation(graph, labels, parts["train"], config.get("prop_type", "vanilla"),
                                       config.get("return_prob", 0.0))
        return PropagationStep(propagation, labels, parts, **rule)
    if not has_stacked_form(config):
        build, batch = whole
        name = f"model {config['model']}" + (f" ({config['variant']})" if config.get("variant") else "")
        return stacked_or_sequential(lambda: build(config), batch, labels, parts, name=name,
                                     learning_rate=config["learning_rate"],
                                     weight_decay=config.get("weight_decay", 0.0), init_ids=init_ids,
                                     seeds=[init_seed(seed, split, i) for i in init_ids],
                                     dropout_seed=dropout_seed(seed, split), **rule)

    model = build_stacked_model(config, graph, [init_seed(seed, split, i) for i in init_ids])
    return StackedStep(model, labels, parts, learning_rate=config["learning_rate"], init_ids=init_ids, **rule)


def run_chunk(*, dataset_dir: str | os.PathLike, splits_path: str | os.PathLike, splits: list[int], config: dict,
              inits: int, seed: int, out_dir: str | os.PathLike, device: str = "auto", threads: int | None = None,
              label: str | None = None, init_ids: list[int] | None = None,
              records_out: str | os.PathLike | None = None, record_extra: dict | None = None) -> dict:
    """Train every initialisation of ``config`` on the given splits and write the job's outputs (module docstring);
    with ``records_out`` also the job's run records (:mod:`gnnbench.records`; ``record_extra``: their ``extra``, a
    tuned model's ``tuning``).

    ``init_ids`` selects initialisations (default ``range(inits)``; one-run-per-process comparisons run one).
    Raises :class:`~gnnbench.training.preemption.Preempted` on SIGTERM, naming the checkpoint a rerun resumes from.
    """
    def job(guard) -> dict:
        metrics = _run_chunk(guard, dataset_dir, splits_path, splits, config, inits, seed, Path(out_dir), device,
                             threads, label, init_ids)
        if records_out is not None:
            with guard.deferred(raise_after=False):
                records = chunk_records(read_tables([Path(out_dir) / "runs.parquet"], "runs"), metrics, record_extra)
                history = chunk_history(records, pd.read_parquet(Path(out_dir) / "history.parquet"), metrics["config"])
                write_records(records_out, records, history=history)
        return metrics

    path = Path(out_dir) / CHECKPOINT_FILE
    return stoppable(job, lambda: f"checkpoint {path} holds the finished splits and epochs; run the same command "
                                  "again (Snakemake: rerun the job) to resume from it")


def _run_chunk(guard, dataset_dir, splits_path, split_ids, config, inits, seed, out_dir, device, threads, label,
               init_ids) -> dict:
    keep_freed_memory()  # a step's temporaries reuse the pages of the step before (no result changes)
    start = time.perf_counter()
    cfg = {**TRAINING_DEFAULTS, **coerce_all(config, "config", protocol_types(SHCHUR2018, config))}
    dev, meta, graph, labels, splits = job_data(dataset_dir, splits_path, device, threads)
    inits = cfg.get("num_training_runs", inits)
    init_ids = list(range(inits)) if init_ids is None else list(init_ids)
    if cfg["model"] in PROPAGATION_MODELS:
        init_ids = [0]  # deterministic: one run per split (the original's num_training_runs: 1)
    job_key = {"config": cfg, "dataset": meta.checksum, "splits": sha256_json(splits.folds),
               "init_ids": init_ids, "seed": seed}
    job = Job(Checkpoint(out_dir / CHECKPOINT_FILE, NAME, guard, every_s=CHECKPOINT_SECONDS))
    whole = None if cfg["model"] in PROPAGATION_MODELS or has_stacked_form(cfg) else whole_graph(dataset_dir, dev)
    done: list[dict] = []  # per split: records, history, seconds
    for split in split_ids:
        parts = {p: torch.from_numpy(idx).to(dev) for p, idx in splits.fold(split).items()}
        split_start = time.perf_counter()

        def make(split=split, parts=parts):
            step = make_trainer(cfg, graph, labels, parts, seed, split, init_ids, whole)
            run, rules = step.fit_parts()
            return run, step, rules

        def finish(run, step, split=split, split_start=split_start) -> dict:
            result = step.results(run)
            return {"split": split, "records": result.records, "history": result.history,
                    "seconds": time.perf_counter() - split_start}

        key = sha256_json({**job_key, "split": split})
        resumed = job.done(key)
        d = job.fit(key, make, finish, label=f"split {split}")
        done.append(d)
        if not resumed:
            log.info("split %d: %d run(s)%s, mean test accuracy %s%%, %d epochs at most, %.1fs", split,
                     len(d["records"]), _diverged_note(d["records"]), _percent(_completed_mean(d["records"])),
                     max(r["epochs"] for r in d["records"]), d["seconds"])

    done.sort(key=lambda d: d["split"])
    label = label or cfg["model"]
    rows = [{"dataset": meta.name, "model": label, "architecture": cfg["model"], "split": d["split"], **r,
             "seed": init_seed(seed, d["split"], r["init"]), "seconds": d["seconds"] / len(d["records"])}
            for d in done for r in d["records"]]
    history = {name: np.concatenate([d["history"][name] for d in done]) for name in done[0]["history"]}
    history["split"] = np.concatenate([np.full(len(d["history"]["epoch"]), d["split"]) for d in done])
    train_seconds = sum(d["seconds"] for d in done)
    total = time.perf_counter() - start
    metrics = {
        "dataset": meta.name, "label": label, "model": cfg["model"], "protocol": NAME, "splits": list(split_ids),
        "inits": len(init_ids), "runs": len(rows), "seed": seed,
        "test_accuracy_mean": _completed_mean(rows),
        "diverged": sum(r.get("status") == "diverged" for r in rows),
        "num_params": num_parameters(cfg, graph, meta),
        "epochs_mean": float(np.mean([r["epochs"] for r in rows])), "train_seconds": train_seconds,
        "total_seconds": total, "runs_per_minute": 60 * len(rows) / max(total, 1e-9), "config": cfg,
        "device": device_name(dev), "threads": torch.get_num_threads(), "versions": package_versions(),
        "data": {"dataset_checksum": meta.checksum, "split_scheme": splits.scheme,
                 "split_checksum": sha256_json(splits.folds)},
    }
    with guard.deferred(raise_after=False):  # the job is complete: a stop signal now lets the outputs finish
        job.save(finished=True)
        with atomic_path(out_dir / "history.parquet") as tmp:
            pq.write_table(pa.table(history), tmp)
        with atomic_path(out_dir / "runs.parquet") as tmp:
            pq.write_table(pa.Table.from_pylist(rows), tmp)
        write_json(out_dir / "metrics.json", metrics)
    return metrics


def chunk_records(runs, metrics: dict, extra: dict | None = None) -> list[dict]:
    """The run records (:mod:`gnnbench.records`) of one job: its ``runs.parquet`` rows (a DataFrame) with the
    job's config, parameter count, device and versions from its ``metrics.json`` content (and ``extra``); the best
    validation epoch is the scored one."""
    out = []
    for r in runs.to_dict("records"):
        diverged = r.get("status") == "diverged"
        out.append(record(
            protocol=NAME, default_variant=SHCHUR2018, dataset=r["dataset"], model=r["model"],
            architecture=r["architecture"],
            config=metrics["config"], split=r["split"], split_scheme=metrics["data"]["split_scheme"], seed=r["seed"],
            init=r["init"], metric="accuracy",
            higher_is_better=True, **{f"{part}_{what}": r.get(f"{part}_{key}") for part in ("train", "val", "test")
                                      for what, key in (("score", "accuracy"), ("loss", "loss"))},
            epochs=r["epochs"], scored_epoch=None if diverged else r.get("best_epoch"), stop_reason=r["stop_reason"],
            status=r["status"], diverged_epoch=_or_none(r.get("diverged_epoch")),
            num_params=metrics["num_params"], seconds=r["seconds"], device=metrics["device"],
            versions=metrics["versions"], extra=extra))
    return out


def chunk_history(records: list[dict], history, config: dict):
    """The history record (:mod:`gnnbench.records`) of one job: its ``history.parquet`` rows (a DataFrame: split,
    init, epoch, training and validation loss, validation accuracy) with the run id of their record (by split and
    init); the learning rate is the config's, which the protocol never changes (label propagation has none)."""
    ids = {(r["split"], r["init"]): r["run_id"] for r in records}
    run_ids = [ids[key] for key in zip(history["split"].tolist(), history["init"].tolist(), strict=True)]
    return history_frame(history, run_ids, score="accuracy", lr=config.get("learning_rate"))


def _or_none(value):
    """A nullable integer read back from Parquet through pandas (NaN or None: null)."""
    return None if value is None or value != value else int(value)


def _completed_mean(records: list[dict]) -> float | None:
    """Mean test accuracy of the runs that did not diverge (None if every run diverged)."""
    scores = [r["test_accuracy"] for r in records if r.get("status") != "diverged"]
    return float(np.mean(scores)) if scores else None


def _diverged_note(records: list[dict]) -> str:
    diverged = sum(r.get("status") == "diverged" for r in records)
    return f" ({diverged} diverged: NaN or infinite loss)" if diverged else ""


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"
