"""Tuning under the pitfalls protocol (``docs/tuning.md``).

A trial trains one initialisation (initialisation 0, seeded as the benchmark's runs: :func:`.train.init_seed`) on each
of the first ``tuning.splits`` random splits, with the protocol's training (Adam, early stopping on the validation
loss, best-weights restore: :func:`.train.make_trainer`), and is scored by its mean validation accuracy at the
restored epochs. Every trial meets the same splits and initialisation seeds, so trials differ by their configuration
only. The trainer's test part is the split's validation nodes: a trial never reads a test node or label.

The round's trials of one shape (:func:`gnnbench.tuning.space.stacks`: they differ only in learning rate, weight
decay and dropout rates, and the model can hold those per member: ``member_keys`` of
:class:`~gnnbench.models.stacked.StackedModel`) train as one stacked model of trials × splits members
(:class:`~gnnbench.training.init_stack.MemberStack`: every member with its trial's learning rate, weight decay and
dropout rates, its split's nodes, its split's initialisation seed and its own early stopping), where the splits'
parts have equal sizes (``random_per_class`` splits do); ``scope["stack"]`` false trains them one after another as
before. The other models (label propagation, models without a stacked form) and trials of other shapes train one
after another in one process.

The round's pruner watches a trial's first split and stops it there as ``pruned``: alone the trial then skips its
other splits; in a stack all its members leave at once (:class:`TrialPruning`). The history record holds the first
split's epochs: what the pruner compares with the earlier trials'.

What a stack changes, and what it does not. A member has its trial's weights, optimiser and stopping alone and the
same logits up to the rounding of products over another number of rows (``tests/test_pitfalls_tune_stack.py``:
without dropout a trial's record is its record alone to 1e-6). Two things differ: dropout, one draw of the global RNG
for the whole stack, seeded with the first split's dropout seed (as the initialisations of a split share one), so a
trial with dropout meets other masks than alone and its scores differ as another draw's would; and the pruner, whose
competitors at a rung are the trials that reached it before (earlier rounds, and the stacks trained before) and the
stack's trials reaching it in the same epoch, where one after another a trial met only the round's trials before it.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch

from gnnbench.config.keys import coerce_all, protocol_types
from gnnbench.io import sha256_json
from gnnbench.models.stacked import build_stacked_model, stacked_member_keys
from gnnbench.papers import SHCHUR2018
from gnnbench.protocols.pitfalls import PROPAGATION_MODELS, TRAINING_DEFAULTS
from gnnbench.protocols.pitfalls.train import (
    CHECKPOINT_SECONDS,
    dropout_seed,
    has_stacked_form,
    init_seed,
    job_data,
    make_trainer,
    num_parameters,
    whole_graph,
)
from gnnbench.training.engine import Checkpoint, Job, Rule, Run, stoppable
from gnnbench.training.environment import device_name, package_versions
from gnnbench.training.init_stack import MemberStack
from gnnbench.tuning.pruning import PRUNED
from gnnbench.tuning.space import stacks

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
        return self.rule.end(run, members, [_row(rows, i) for i in range(len(members))])

    def state_dict(self) -> dict:
        """The wrapped rule's state."""
        return self.rule.state_dict()

    def load_state_dict(self, state: dict) -> None:
        """Restore the wrapped rule's state."""
        self.rule.load_state_dict(state)


def _row(losses, i: int) -> dict[str, float]:
    """Member ``i``'s row of one epoch's :class:`~gnnbench.training.init_stack.EpochLosses`."""
    return {"val_accuracy": float(losses.val_accuracy[i]), "val_loss": float(losses.val_loss[i]),
            "train_loss": float(losses.train_loss[i])}


class TrialPruning(Rule):
    """The round's pruning rule in a stack of trials × splits (:class:`~gnnbench.training.init_stack.MemberStack`):
    it decides on the members of the trials' first split (``watched``), reading their losses from the step's
    ``last`` epoch (the rows handed on after the protocol's rule stopped members hold no values); a trial it prunes
    leaves the stack with all its members (``trial_of``: member → trial)."""

    def __init__(self, rule: Rule, step: MemberStack, trial_of: list[int], watched: set[int]) -> None:
        self.rule, self.step, self.trial_of, self.watched = rule, step, trial_of, watched

    def end(self, run: Run, members: list[int], rows) -> dict[int, str]:
        """``{member: "pruned"}`` for every member of the trials the wrapped rule prunes."""
        order, losses = self.step.last
        where = {m: i for i, m in enumerate(order)}
        watch = [m for m in members if m in self.watched]
        if not watch:
            return {}
        trials = {self.trial_of[m] for m in self.rule.end(run, watch, [_row(losses, where[m]) for m in watch])}
        return {m: PRUNED for m in members if self.trial_of[m] in trials}

    def state_dict(self) -> dict:
        """The wrapped rule's state."""
        return self.rule.state_dict()

    def load_state_dict(self, state: dict) -> None:
        """Restore the wrapped rule's state."""
        self.rule.load_state_dict(state)


def stack_groups(configs: list[dict], space: dict | None) -> list[list[int]]:
    """The trials (indices into ``configs``, full configs) that train as one stack: those of one shape
    (:func:`~gnnbench.tuning.space.stacks`) whose other differences the model holds per member; a model without a
    stacked form, or label propagation, trains alone."""
    out: list[list[int]] = []
    for group in stacks(configs, space or {}):
        cfg = configs[group[0]]
        if not _stackable(cfg):
            out.extend([i] for i in group)
            continue
        free = {"learning_rate", *stacked_member_keys(cfg)}
        sub: dict[str, list[int]] = {}
        for i in group:
            rest = {k: v for k, v in configs[i].items() if k not in free}
            sub.setdefault(sha256_json(rest), []).append(i)
        out.extend(sub.values())
    return sorted(out)


def _stackable(config: dict) -> bool:
    return config["model"] not in PROPAGATION_MODELS and has_stacked_form(config)


def _train_stack(units: Job, cfgs: list[dict], trials: list[int], graph, labels, meta, splits, split_ids: list[int],
                 folds: list[dict], seed: int, dev, pruner, earlier: list[dict]) -> dict[int, dict]:
    """Train the trials ``trials`` (their configs ``cfgs``, one shape) on every split of ``split_ids`` as one
    :class:`~gnnbench.training.init_stack.MemberStack` (members trial-major: trial t on split s is member
    t · len(split_ids) + s); their results by trial."""
    first = cfgs[0]
    members = [(t, n) for t in range(len(cfgs)) for n in range(len(split_ids))]
    trial_of = [t for t, _ in members]
    watched = {m for m, (_, n) in enumerate(members) if n == 0}
    rule = {"criterion": first["early_stopping_criterion"], "patience": first["early_stopping_tolerance"],
            "max_epochs": first["num_epochs"], "tolerance": first["improvement_tolerance"]}
    # the trainer scores a test part: a trial's is the validation nodes (the test nodes are never read)
    parts = {p: torch.stack([torch.from_numpy(folds[n]["train" if p == "train" else "val"]) for _, n in members])
             .to(dev) for p in ("train", "val")}
    parts["test"] = parts["val"]

    def make():
        torch.manual_seed(dropout_seed(seed, split_ids[0]))  # one dropout stream for the stack (module docstring)
        model = build_stacked_model(first, graph, [init_seed(seed, split_ids[n], 0) for _, n in members])
        values = {key: [cfgs[t][key] for t, _ in members] for key in model.member_keys}
        step = MemberStack(model, labels, parts, learning_rates=[cfgs[t]["learning_rate"] for t, _ in members],
                           values=values, **rule)
        run, rules = step.fit_parts()
        prune = pruner(MONITOR, earlier)  # the round's trials trained before this stack compete too
        return run, step, [*rules, *([] if prune is None else [TrialPruning(prune, step, trial_of, watched)])]

    start = time.perf_counter()

    def finish(run, step):
        result = step.results(run)
        seconds = time.perf_counter() - start
        history = result.history
        share = np.array([s.epoch for s in run.states], dtype=float)
        share = share / max(share.sum(), 1.0)  # a member's part of the stack's time: its part of the epochs trained
        return [{"split": split_ids[n], "record": result.records[m], "seconds": seconds * share[m],
                 "history": {k: v[history["init"] == m] for k, v in history.items()}}
                for m, (_, n) in enumerate(members)]

    key = sha256_json({"configs": cfgs, "dataset": meta.checksum, "splits": [sha256_json(
        {p: f[p].tolist() for p in ("train", "val")}) for f in folds], "seed": seed, "stack": True})
    done = units.fit(key, make, finish, label=f"trials {trials} stacked on splits {split_ids}")
    out = {}
    for t, trial in enumerate(trials):
        own = done[t * len(split_ids):(t + 1) * len(split_ids)]
        if own[0]["record"]["stop_reason"] == PRUNED:  # as alone: a pruned trial's other splits do not count
            own = own[:1]
        out[trial] = _result(own, cfgs[t], graph, meta, splits, seed, dev)
    return out


def train_trials(*, job: dict, configs: list[dict], dataset_dir, splits_path, checkpoint: Path, checkpoint_key: str,
                 pruner, space: dict | None = None, device: str = "auto", threads: int | None = None,
                 **_) -> list[dict]:
    """Train a round's trial ``configs`` on the splits ``job["scope"]["splits"]`` (module docstring); one result per
    trial (:func:`gnnbench.protocols.tuning_jobs.run_round`). ``pruner(monitor, earlier)``: a fresh pruning rule per
    fit, given the round's trials trained before it (None: no pruning); ``space``: the search space (what decides
    the trials of one shape); ``job["scope"]["stack"]`` false: every trial alone."""
    split_ids, seed = job["scope"]["splits"], job["scope"]["seed"]
    stack = job["scope"].get("stack", True)

    def body(guard) -> list[dict]:
        dev, meta, graph, labels, splits = job_data(dataset_dir, splits_path, device, threads)
        units = Job(Checkpoint(checkpoint, checkpoint_key, guard, every_s=CHECKPOINT_SECONDS))
        whole = None
        cfgs = [{**TRAINING_DEFAULTS, **coerce_all(c, "config", protocol_types(SHCHUR2018, c))} for c in configs]
        folds = [splits.fold(split) for split in split_ids]
        equal = all(len(f[p]) == len(folds[0][p]) for f in folds for p in ("train", "val"))
        results: dict[int, dict] = {}
        for group in stack_groups(cfgs, space) if stack and equal else [[i] for i in range(len(cfgs))]:
            if stack and equal and _stackable(cfgs[group[0]]) and len(group) * len(split_ids) > 1:
                results.update(_train_stack(units, [cfgs[i] for i in group], group, graph, labels, meta, splits,
                                            split_ids, folds, seed, dev, pruner, list(results.values())))
                continue
            i = group[0]
            cfg = cfgs[i]
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
                    rule = pruner(MONITOR, list(results.values())) if watch else None
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
            results[i] = _result(done, cfg, graph, meta, splits, seed, dev)
        units.save(finished=True)
        return [results[i] for i in range(len(cfgs))]

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
