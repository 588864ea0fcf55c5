"""Tuning under the fair-comparison protocol (``docs/tuning.md``): Errica et al.'s model selection inside each outer
fold, by a search instead of the grid.

A round's trials of outer fold f train as model-selection runs do (:mod:`.train`): on the fold's inner-training
graphs, early-stopping on its inner hold-out, each seeded as a grid point of its configuration
(:func:`~gnnbench.protocols.fair_comparison.grid.run_seed`); the test fold is not loaded into any part. A trial's score
is its validation accuracy at its early-stopping epoch. Trials of one shape (:func:`gnnbench.tuning.space.shape_key`:
they differ only in learning rate, ``l2`` and dropout) train as one wide stack
(:class:`~gnnbench.training.best_epoch_stack.HoldoutStack`, sharing the first member's batch order and dropout
stream) where the model widens, else one after another; the round's pruner stops members as ``pruned``.
"""

from __future__ import annotations

import math
from pathlib import Path

from gnnbench.papers import ERRICA2020
from gnnbench.protocols.fair_comparison.grid import config_id, run_seed, seed_key
from gnnbench.protocols.fair_comparison.train import CHECKPOINT_SECONDS, _load, _setup, _train_alone, _train_stack
from gnnbench.training.engine import Checkpoint, Job, stoppable
from gnnbench.training.environment import device_name, package_versions
from gnnbench.tuning.space import stacks

MONITOR = "val_accuracy"  # the fit's row key of the validation score (the pruner's)


def direction(meta) -> str:
    """Validation accuracy: higher is better."""
    return "maximize"


def train_trials(*, job: dict, configs: list[dict], space: dict, dataset_dir, splits_path, checkpoint: Path,
                 checkpoint_key: str, pruner, device: str = "auto", threads: int | None = None,
                 **_) -> list[dict]:
    """Train a round's trial ``configs`` on outer fold ``job["scope"]["fold"]`` (module docstring); one result per
    trial (:func:`gnnbench.protocols.tuning_jobs.run_round`). ``pruner(monitor, earlier)``: a fresh pruning rule per
    fit, given the round's trials trained before it (None: no pruning)."""
    fold, seed = job["scope"]["fold"], job["scope"]["seed"]

    def body(guard) -> list[dict]:
        dev = _setup(device, threads)
        data = _load(dataset_dir, splits_path)
        units = Job(Checkpoint(checkpoint, checkpoint_key, guard, every_s=CHECKPOINT_SECONDS))
        fold_parts = data.splits.fold(fold)
        parts = {"train": fold_parts["train"], "val": fold_parts["val"]}  # no test part: trials never see it
        seeds = [run_seed(seed, fold, seed_key(c)) for c in configs]
        whats = [{"fold": fold, "config_id": config_id(c), "stage": "trial", "trial": job["first"] + i}
                 for i, c in enumerate(configs)]

        results: dict[int, dict] = {}  # trial -> its result, in the order they trained

        def rules():  # the round's trials trained before this fit compete too
            rule = pruner(MONITOR, list(results.values()))
            return [] if rule is None else [rule]

        def keep(members: list[int], runs: list[dict]) -> None:
            results.update((i, _result(r, seeds[i], fold, data, dev)) for i, r in zip(members, runs, strict=True))

        for members in stacks(configs, space):
            stacked = None
            if len(members) > 1:
                stacked = _train_stack(units, data, [configs[i] for i in members], [parts] * len(members),
                                       [seeds[i] for i in members], [whats[i] for i in members], dev, "trials",
                                       more_rules=rules)
            if stacked is not None:
                keep(members, stacked)
                continue
            for i in members:  # one after another: a single trial, or a shape that does not widen
                keep([i], [_train_alone(units, data, configs[i], parts, seeds[i], whats[i], dev, more_rules=rules)])
        units.save(finished=True)
        return [results[i] for i in range(len(configs))]

    return stoppable(body, lambda: f"the round's finished trials are kept in {checkpoint}; run the same job again "
                                   "to resume")


def _result(r: dict, seed: int, fold: int, data, dev) -> dict:
    """A trial's result for its record: the early-stopping epoch's scores, the stop, the seed and the fold."""
    diverged = r["status"] == "diverged"
    pruned = r["epochs"] - 1 if r["stop_reason"] == "pruned" else None
    fields = {"split": fold, "split_scheme": data.splits.scheme, "seed": seed, "metric": "accuracy",
              "higher_is_better": True, "default_variant": ERRICA2020,
              "train_score": r["train_accuracy"], "train_loss": r["train_loss"], "val_loss": r["val_loss"],
              "epochs": r["epochs"], "scored_epoch": None if diverged or pruned is not None else r["best_epoch"],
              "stop_reason": r["stop_reason"], "status": r["status"], "diverged_epoch": r["diverged_epoch"],
              "num_params": r["num_params"], "seconds": r["seconds"], "device": device_name(dev),
              "versions": package_versions()}
    score = r["val_accuracy"]
    return {"fields": fields, "score": None if diverged or score is None or math.isnan(score) else score,
            "score_name": "accuracy", "history": r["history"], "pruned_epoch": pruned}
