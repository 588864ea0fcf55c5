"""Tuning under the pitfalls protocol (``docs/tuning.md``).

A trial trains one initialisation (initialisation 0, seeded as the benchmark's runs: :func:`.train.init_seed`) on each
of the first ``tuning.splits`` random splits, with the protocol's training (Adam, early stopping on the validation
loss, best-weights restore: :func:`.train.make_trainer`), and is scored by its mean validation accuracy at the
restored epochs. Every trial meets the same splits and initialisation seeds, so trials differ by their configuration
only. The trainer's test part is the split's validation nodes: a trial never reads a test node or label.

The round's trials train one after another in one process (the stacked model of this protocol holds the
initialisations of one configuration, all with one learning rate); the round's pruner watches a trial's first split
and stops it there as ``pruned`` (the trial then skips its other splits). The history record holds the first split's
epochs: what the pruner compares with the earlier trials'.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch

from gnnbench.config.keys import coerce_all, protocol_types
from gnnbench.errors import DataError
from gnnbench.io import sha256_json
from gnnbench.papers import SHCHUR2018
from gnnbench.protocols.pitfalls import PROPAGATION_MODELS, TRAINING_DEFAULTS
from gnnbench.protocols.pitfalls.train import (
    CHECKPOINT_SECONDS,
    has_stacked_form,
    init_seed,
    load_node_graph,
    make_trainer,
    num_parameters,
    whole_graph,
)
from gnnbench.splits import read_splits
from gnnbench.training.engine import Checkpoint, Job, Rule, Run, stoppable
from gnnbench.training.environment import device_name, package_versions, resolve_device

MONITOR = "val_accuracy"


def direction(meta) -> str:
    """Validation accuracy: higher is better."""
    return "maximize"


class EpochRows(Rule):
    """A rule that reads rows (the pruner) in a fit of this protocol, whose steps hand the rules one epoch's losses
    as tensors (:class:`~gnnbench.training.init_stack.EpochLosses`): each member's row is built from them."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule

    def end(self, run: Run, members: list[int], rows) -> dict[int, str]:
        """The wrapped rule's decision on rows ``{val_accuracy, val_loss, train_loss}`` per member."""
        return self.rule.end(run, members, [{"val_accuracy": float(rows.val_accuracy[i]),
                                             "val_loss": float(rows.val_loss[i]),
                                             "train_loss": float(rows.train_loss[i])} for i in range(len(members))])

    def state_dict(self) -> dict:
        """The wrapped rule's state."""
        return self.rule.state_dict()

    def load_state_dict(self, state: dict) -> None:
        """Restore the wrapped rule's state."""
        self.rule.load_state_dict(state)


def train_trials(*, job: dict, configs: list[dict], dataset_dir, splits_path, checkpoint: Path, checkpoint_key: str,
                 pruner, device: str = "auto", threads: int | None = None, **_) -> list[dict]:
    """Train a round's trial ``configs`` on the splits ``job["scope"]["splits"]`` (module docstring); one result per
    trial (:func:`gnnbench.protocols.tuning_jobs.run_round`). ``pruner(monitor, earlier)``: a fresh pruning rule per
    fit, given the round's trials trained before it (None: no pruning)."""
    split_ids, seed = job["scope"]["splits"], job["scope"]["seed"]

    def body(guard) -> list[dict]:
        if threads:
            torch.set_num_threads(threads)
        dev = resolve_device(device)
        meta, graph, labels = load_node_graph(dataset_dir, dev)
        splits = read_splits(splits_path, meta)
        if splits.level != "node":
            raise DataError(f"split file {splits_path} holds graph splits; protocol pitfalls needs node splits")
        units = Job(Checkpoint(checkpoint, checkpoint_key, guard, every_s=CHECKPOINT_SECONDS))
        whole = None
        out = []
        for config in configs:
            cfg = {**TRAINING_DEFAULTS, **coerce_all(config, "config", protocol_types(SHCHUR2018, config))}
            if whole is None and cfg["model"] not in PROPAGATION_MODELS and not has_stacked_form(cfg):
                whole = whole_graph(dataset_dir, dev)
            done = []
            for n, split in enumerate(split_ids):
                fold = splits.fold(split)
                # the trainer scores a test part: a trial's is the validation nodes (the test nodes are never read)
                parts = {"train": torch.from_numpy(fold["train"]).to(dev), "val": torch.from_numpy(fold["val"]).to(dev)}
                parts["test"] = parts["val"]
                watch = n == 0

                def make(cfg=cfg, split=split, parts=parts, watch=watch, whole=whole):
                    step = make_trainer(cfg, graph, labels, parts, seed, split, [0], whole)
                    run, rules = step.fit_parts()
                    # the round's trials trained before this one compete too
                    rule = pruner(MONITOR, list(out)) if watch else None
                    return run, step, [*rules, *([] if rule is None else [EpochRows(rule)])]

                start = time.perf_counter()

                def finish(run, step, split=split, start=start):
                    result = step.results(run)
                    return {"split": split, "record": result.records[0], "history": result.history,
                            "seconds": time.perf_counter() - start}

                key = sha256_json({"config": cfg, "dataset": meta.checksum, "split": sha256_json(
                    {p: fold[p].tolist() for p in ("train", "val")}), "seed": seed, "pruned": watch})
                done.append(units.fit(key, make, finish, label=f"trial on split {split}"))
                if done[-1]["record"]["stop_reason"] == "pruned":
                    break
            out.append(_result(done, cfg, graph, meta, splits, seed, dev))
        units.save(finished=True)
        return out

    return stoppable(body, lambda: f"the round's finished trials are kept in {checkpoint}; run the same job again "
                                   "to resume")


def _result(done: list[dict], cfg: dict, graph, meta, splits, seed: int, dev) -> dict:
    """A trial's result for its record from its splits (``done``): the mean validation accuracy (None where a split
    diverged), the first split's stop and history."""
    records = [d["record"] for d in done]
    first = records[0]
    pruned = first["epochs"] - 1 if first["stop_reason"] == "pruned" else None
    diverged = any(r["status"] == "diverged" for r in records)

    def mean(key: str) -> float:
        return float(np.mean([r[key] for r in records]))

    fields = {"split": done[0]["split"], "split_scheme": splits.scheme, "seed": init_seed(seed, done[0]["split"], 0),
              "metric": "accuracy", "higher_is_better": True, "default_variant": SHCHUR2018,
              "train_score": None if diverged else mean("train_accuracy"),
              "train_loss": None if diverged else mean("train_loss"),
              "val_loss": None if diverged else mean("val_loss"), "epochs": max(r["epochs"] for r in records),
              "scored_epoch": None if diverged or pruned is not None or len(records) > 1 else first["best_epoch"],
              "stop_reason": "diverged" if diverged else first["stop_reason"],
              "status": "diverged" if diverged else "completed",
              "diverged_epoch": next((r["diverged_epoch"] for r in records if r["status"] == "diverged"), None),
              "num_params": num_parameters(cfg, graph, meta), "seconds": sum(d["seconds"] for d in done),
              "device": device_name(dev), "versions": package_versions()}
    score = None if diverged or pruned is not None else mean("val_accuracy")
    history = done[0]["history"]
    return {"fields": fields, "score": None if score is None or math.isnan(score) else score,
            "score_name": "accuracy", "pruned_epoch": pruned,
            "history": {k: v for k, v in history.items() if k != "init"}}
