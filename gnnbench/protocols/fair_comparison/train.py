"""The jobs of the fair-comparison protocol: the model-selection runs of a part of a grid on an outer fold, and the
final runs of the chosen configuration; every finished run is kept so that a rerun job trains only what is missing."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from gnnbench.config.keys import coerce_all, protocol_types
from gnnbench.data.batching import model_dtypes
from gnnbench.data.meta import read_dataset
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError, DataError
from gnnbench.io import atomic_path, sha256_json
from gnnbench.models.build import ModelData, build_model, count_parameters
from gnnbench.papers import ERRICA2020
from gnnbench.protocols.fair_comparison import (
    FINAL_VAL_FRACTION,
    HOLDOUTS,
    NAME,
)
from gnnbench.protocols.fair_comparison.grid import (
    config_id,
    config_json,
    member_build,
    num_layers,
    observer_settings,
    run_seed,
    seed_key,
    stack_groups,
    trajectories,
    trajectory_config,
)
from gnnbench.protocols.fair_comparison.select import read_selection
from gnnbench.records import history_frame, record, write_records
from gnnbench.splits import read_splits
from gnnbench.training.best_epoch import holdout_fit, holdout_results
from gnnbench.training.best_epoch_stack import HoldoutStack
from gnnbench.training.checkpoint import read_checkpoint
from gnnbench.training.engine import Checkpoint, Job, Rule, stoppable
from gnnbench.training.environment import device_name, package_versions, resolve_device
from gnnbench.training.wide import NotWidenable

log = logging.getLogger(__name__)
CHECKPOINT_SECONDS = 30.0


@dataclass
class _Data:
    meta: object
    store: object
    sizes: np.ndarray
    labels: np.ndarray
    splits: object
    key: str


def _load(dataset_dir, splits_path) -> _Data:
    meta, columns = read_dataset(dataset_dir)
    splits = read_splits(splits_path, meta)
    if splits.level != "graph":
        raise DataError(f"split file {splits_path} holds node splits; protocol {NAME} needs graph folds")
    store = model_dtypes(GraphStore.from_columns(columns))
    key = sha256_json({"dataset": meta.checksum, "splits": sha256_json(splits.folds)})
    return _Data(meta, store, np.asarray(columns.num_nodes, dtype=np.int64),
                 np.asarray(columns.graph["y"], dtype=np.int64), splits, key)


def _job(out: Path, guard) -> Job:
    """The job's one checkpoint, beside its output (``part0.checkpoint.pt``, ``final.checkpoint.pt``): the results of
    its finished runs and the state of the one in training (:class:`~gnnbench.training.engine.Job`)."""
    return Job(Checkpoint(out.with_name(f"{out.stem}.checkpoint.pt"), NAME, guard, every_s=CHECKPOINT_SECONDS))


def kept_runs(out: str | os.PathLike) -> list[dict]:
    """The results of the trainings a job (its output ``out``: ``part0.parquet``, ``final.parquet``) keeps in its
    checkpoint — every run's config, seed, stop, scores and history — in the order they finished."""
    out = Path(out)
    units = read_checkpoint(out.with_name(f"{out.stem}.checkpoint.pt"))["units"].values()
    return [r for unit in units for r in (unit if isinstance(unit, list) else [unit])]


def _outcome(key: str, what: dict, config: dict, seed: int, out: dict, num_params: int, **extra) -> dict:
    """A run's result as the job keeps it: its id and position, config, seed, parameter count, stop, status, the
    best epoch's scores and its history."""
    return {"key": key, **what, "config": config, "seed": seed, "num_params": num_params,
            "best_epoch": out["best_epoch"], "epochs": out["epochs"], "stop_reason": out["stop_reason"],
            "status": out["status"], "diverged_epoch": out["diverged_epoch"], "seconds": out["seconds"],
            **{k: v for k, v in out["scores"].items() if k not in ("epoch", "seconds", "lr")},
            "history": out["history"], **extra}


def _parts_key(parts: dict[str, np.ndarray]) -> dict[str, str]:
    return {p: sha256_json(v.tolist()) for p, v in parts.items()}


def _train_alone(job: Job, data: _Data, config: dict, parts: dict[str, np.ndarray], seed: int, what: dict,
                 device, more_rules: Callable[[], list[Rule]] = list) -> dict:
    """One training run (module docstring), a unit of ``job`` whose key is the run's (config, data, parts, seed);
    ``more_rules()``: rules added to the fit's own (a tuning round's pruner)."""
    key = sha256_json({"config": config, "data": data.key, "seed": seed, "parts": _parts_key(parts)})
    cfg = coerce_all(config, "config", protocol_types(ERRICA2020, config))
    tensors = {p: torch.from_numpy(v) for p, v in parts.items()}
    model_data = ModelData(data.meta, data.sizes, data.store, train_graphs=tensors["train"])
    built = []

    def make():
        torch.manual_seed(seed)
        built[:] = [build_model(cfg, model_data, default_variant=ERRICA2020).to(device)]
        run, step, rules = holdout_fit(built[0], data.store, tensors, cfg, device=device)
        return run, step, [*rules, *more_rules()]

    def finish(run, step):
        out = holdout_results(run)[0]
        return _outcome(key, what, config, seed, out, count_parameters(step.model))

    return job.fit(key, make, finish, label=str(what))


def _train_observed(job: Job, data: _Data, configs: list[dict], parts: dict[str, np.ndarray], seed: int,
                    whats: list[dict], device) -> list[dict]:
    """Configurations that differ only in :data:`OBSERVER_KEYS` trained as one trajectory (``seed``) observed by each
    one's stopping rules (:func:`gnnbench.training.best_epoch.holdout_fit` with ``observers``), a unit of ``job``: one
    result per configuration, each what its run alone with ``seed`` gives (its id from the trajectory's — the
    configuration without the observer keys, data, parts, seed — and its stopping settings)."""
    trajectory = sha256_json({"trajectory": trajectory_config(configs[0]), "data": data.key, "seed": seed,
                              "parts": _parts_key(parts)})
    keys = [sha256_json({"trajectory": trajectory, "observer": observer_settings(c)}) for c in configs]
    cfgs = [coerce_all(c, "config", protocol_types(ERRICA2020, c)) for c in configs]
    tensors = {p: torch.from_numpy(v) for p, v in parts.items()}
    model_data = ModelData(data.meta, data.sizes, data.store, train_graphs=tensors["train"])

    def make():
        torch.manual_seed(seed)
        model = build_model(cfgs[0], model_data, default_variant=ERRICA2020).to(device)
        return holdout_fit(model, data.store, tensors, cfgs[0], device=device,
                           observers=[observer_settings(c) for c in cfgs])

    def finish(run, step):
        weights = count_parameters(step.model)
        return [_outcome(key, what, config, seed, out, weights, trajectory=trajectory)
                for key, what, config, out in zip(keys, whats, configs, holdout_results(run), strict=True)]

    return job.fit(sha256_json({"trajectory": trajectory, "observers": keys}), make, finish,
                   label=f"{whats[0]} (one trajectory, {len(configs)} stopping rules)")


def _setup(device: str, threads: int | None):
    if threads:
        torch.set_num_threads(threads)
    return resolve_device(device)


def _stoppable(job, out: Path):
    """Run ``job(guard)`` under the SIGTERM guard; a stop names what a rerun resumes from."""
    return stoppable(job, lambda: f"finished runs and the current one's epochs are kept in "
                                  f"{out.with_name(out.stem + '.checkpoint.pt')}; run the same job again to resume")


INNER_COLUMNS = ("position", "config_id", "config", "seed", "val_accuracy", "val_loss", "train_accuracy",
                 "train_loss", "best_epoch", "epochs", "stop_reason", "status", "diverged_epoch", "seconds")


def run_inner(*, dataset_dir, splits_path, fold: int, configs: list[dict], positions: list[int], seed: int,
              out: str | os.PathLike, device: str = "auto", threads: int | None = None, label: str | None = None,
              records_out: str | os.PathLike | None = None, stack: bool = False) -> None:
    """Model selection runs of ``configs`` on outer fold ``fold``: train on the fold's inner-train graphs, early
    stopping on its hold-out; the test fold is not touched. Writes one row per configuration to ``out`` and, with
    ``records_out``, their run records (:mod:`gnnbench.records`; ``label``: the suite's model label).

    ``stack``: configurations that differ only in :data:`OBSERVER_KEYS` share one trajectory (:func:`trajectories`),
    seeded from the configuration without them; the trajectories of one shape (:func:`stack_groups`) train as one
    wide stack where the model widens (:func:`_train_stack`; each with its own seed, initialisation, settings and
    stopping, sharing the first member's batch order), else one after another (:func:`_train_observed`), each
    observed by its configurations' stopping rules (module docstring, "Stacks")."""
    out = Path(out)

    def job(guard):
        dev = _setup(device, threads)
        data = _load(dataset_dir, splits_path)
        units = _job(out, guard)
        fold_parts = data.splits.fold(fold)
        parts = {"train": fold_parts["train"], "val": fold_parts["val"]}
        rows, weights, histories = [], [], []
        whats = [{"fold": fold, "config_id": config_id(c), "stage": "selection"} for c in configs]
        # with stacks a seed does not depend on the stopping settings: one trajectory serves them all
        seeds = [run_seed(seed, fold, seed_key(trajectory_config(c) if stack else c)) for c in configs]
        stacked: dict[int, dict] = {}
        shared = trajectories(configs) if stack else []
        for group in stack_groups([configs[t[0]] for t in shared]) if stack else []:
            if len(group) > 1:
                members = [shared[g] for g in group]
                flat = [i for t in members for i in t]
                results = _train_stack(units, data, [configs[t[0]] for t in members], [parts] * len(group),
                                       [seeds[t[0]] for t in members], [whats[i] for i in flat], dev, "grid points",
                                       observers=[[configs[i] for i in t] for t in members])
                stacked.update(zip(flat, results or [], strict=False))
        for t in shared:
            if len(t) > 1 and t[0] not in stacked:
                stacked.update(zip(t, _train_observed(units, data, [configs[i] for i in t], parts, seeds[t[0]],
                                                      [whats[i] for i in t], dev), strict=True))
        for i, (position, config) in enumerate(zip(positions, configs, strict=True)):
            cid, s = whats[i]["config_id"], seeds[i]
            r = stacked[i] if i in stacked else _train_alone(units, data, config, parts, s, whats[i], dev)
            log.info("fold %d config %s: val acc %.2f (epoch %d of %d, %s)", fold, cid, r["val_accuracy"],
                     r["best_epoch"], r["epochs"], r["stop_reason"])
            rows.append({"position": position, "config_id": cid, "config": config_json(config), "seed": s,
                         **{k: r[k] for k in INNER_COLUMNS[4:]}})
            weights.append(r["num_params"])
            histories.append(r["history"])
        with guard.deferred(raise_after=False):
            with atomic_path(out) as tmp:
                pq.write_table(pa.Table.from_pylist(rows), tmp)
            if records_out is not None:
                _write_records(records_out, "inner", data, fold, label, configs, rows, weights, dev, histories)
            units.save(finished=True)

    _stoppable(job, out)


FINAL_COLUMNS = ("run", "config_id", "seed", "holdout", "test_accuracy", "test_loss", "val_accuracy", "val_loss",
                 "train_accuracy", "train_loss", "best_epoch", "epochs", "stop_reason", "status", "diverged_epoch",
                 "seconds")


def final_parts(data: _Data, fold: int, run: int, holdout: str, seed: int) -> dict[str, np.ndarray]:
    """Train / early-stopping / test graphs of final run ``run`` (module docstring: ``final_holdout``)."""
    parts = data.splits.fold(fold)
    if holdout == "selection":
        return parts
    from sklearn.model_selection import train_test_split

    outer = np.concatenate([parts["train"], parts["val"]])
    train, val = train_test_split(outer, test_size=FINAL_VAL_FRACTION, stratify=data.labels[outer],
                                  random_state=seed % 2**32)
    return {"train": np.sort(train), "val": np.sort(val), "test": parts["test"]}


def run_final(*, dataset_dir, splits_path, fold: int, selection_path, runs: int, holdout: str, seed: int,
              out: str | os.PathLike, history_out: str | os.PathLike, device: str = "auto",
              threads: int | None = None, label: str | None = None,
              records_out: str | os.PathLike | None = None, stack: bool = False,
              record_extra: dict | None = None) -> None:
    """The final trainings of the configuration chosen for ``fold`` (read from its selection file: the grid
    search's or a tuned model's, ``docs/tuning.md``); with ``records_out`` also their run records
    (:mod:`gnnbench.records`; ``label``: the suite's model label; ``record_extra``: added to their ``extra``).

    ``stack``: where the runs hold out the same graphs (``final_holdout: selection``) they train as one wide stack
    (:func:`_train_stack`) where the model widens, else one after another (exactly as without ``stack``; one log
    line says why). Off by default (the suite's ``stack``)."""
    out = Path(out)
    if holdout not in HOLDOUTS:
        raise ConfigError(f"final_holdout: {holdout!r} is not one of {', '.join(HOLDOUTS)}")

    def job(guard):
        selection = read_selection(selection_path)
        if selection["fold"] != fold:
            raise DataError(f"selection file {selection_path} is for fold {selection['fold']}, not {fold}; delete "
                            "it and rerun snakemake")
        chosen = selection["chosen"]
        dev = _setup(device, threads)
        data = _load(dataset_dir, splits_path)
        units = _job(out, guard)
        rows, history, weights = [], [], []
        seeds = [run_seed(seed, fold, 2**31 + r) for r in range(runs)]
        parts = [final_parts(data, fold, r, holdout, s) for r, s in enumerate(seeds)]
        whats = [{"fold": fold, "config_id": chosen["config_id"], "stage": "final", "run": r} for r in range(runs)]
        results = None
        if stack and runs > 1 and _same_parts(parts):
            results = _train_stack(units, data, [chosen["config"]] * runs, parts, seeds, whats, dev, "final runs")
        elif stack and runs > 1:
            _explain(chosen["config"].get("model", "model"),
                     "they hold out different graphs (final_holdout: fresh); a stack trains on one training set")
        for r, s in enumerate(seeds):
            result = results[r] if results is not None else _train_alone(
                units, data, chosen["config"], parts[r], s, whats[r], dev)
            log.info("fold %d final run %d: test acc %.2f (val %.2f, epoch %d of %d)", fold, r,
                     result["test_accuracy"], result["val_accuracy"], result["best_epoch"], result["epochs"])
            rows.append({"run": r, "config_id": chosen["config_id"], "seed": s, "holdout": holdout,
                         **{k: result[k] for k in FINAL_COLUMNS[4:]}})
            history += [{"run": r, **h} for h in result["history"]]
            weights.append(result["num_params"])
        with guard.deferred(raise_after=False):
            with atomic_path(history_out) as tmp:
                pq.write_table(pa.Table.from_pylist(history), tmp)
            with atomic_path(out) as tmp:
                pq.write_table(pa.Table.from_pylist(rows), tmp)
            if records_out is not None:
                _write_records(records_out, "final", data, fold, label or selection["model"],
                               [chosen["config"]] * len(rows), rows, weights, dev,
                               [[h for h in history if h["run"] == r] for r in range(len(rows))], record_extra)
            units.save(finished=True)

    _stoppable(job, out)


def _same_parts(parts: list[dict[str, np.ndarray]]) -> bool:
    return all(p.keys() == parts[0].keys() and all(np.array_equal(p[k], parts[0][k]) for k in p) for p in parts)


def _train_stack(job: Job, data: _Data, configs: list[dict], parts: list[dict[str, np.ndarray]], seeds: list[int],
                 whats: list[dict], device, kind: str, observers: list[list[dict]] | None = None,
                 more_rules: Callable[[], list[Rule]] = list) -> list[dict] | None:
    """Runs of one shape (configuration r with ``seeds[r]``, all on the same ``parts``) trained as one wide stack
    (:class:`gnnbench.training.best_epoch_stack.HoldoutStack`), a unit of ``job``; None where the model does not
    widen (one log line per model and reason says why) and the caller trains them one by one.

    The unit's key is the stack's (its members' run ids in order: the batch order and dropout stream are the
    stack's), so results of runs trained alone and of stack members are never mixed, and a grid point added to a
    shape retrains its stack. A result's id is its own run's id with the stack's.

    ``observers[r]``: the configurations that member r's trajectory serves (they differ from ``configs[r]`` only in
    :data:`OBSERVER_KEYS`; :func:`_train_observed`); then ``whats`` and the results are one per observing
    configuration, members in order, and a result's id is also from the trajectory's id (the member's configuration
    without the observer keys) and its stopping settings. ``more_rules()``: rules added to the stack's own (a tuning
    round's pruner)."""
    name = configs[0].get("model", "model")
    part_keys = _parts_key(parts[0])
    if observers is None:
        alone = [sha256_json({"config": c, "data": data.key, "seed": s, "parts": part_keys})
                 for c, s in zip(configs, seeds, strict=True)]
        stack_key = sha256_json({"wide_stack": alone})
        keys = [sha256_json({"run": k, "stack": stack_key}) for k in alone]
        runs = [(c, s) for c, s in zip(configs, seeds, strict=True)]
    else:
        alone = [sha256_json({"trajectory": trajectory_config(c), "data": data.key, "seed": s, "parts": part_keys})
                 for c, s in zip(configs, seeds, strict=True)]
        settings = [[observer_settings(c) for c in obs] for obs in observers]
        stack_key = sha256_json({"wide_stack": alone, "observers": settings})
        keys = [sha256_json({"trajectory": k, "stack": stack_key, "observer": o})
                for k, obs in zip(alone, settings, strict=True) for o in obs]
        runs = [(c, s) for obs, s in zip(observers, seeds, strict=True) for c in obs]
    cfgs = [coerce_all(c, "config", protocol_types(ERRICA2020, c)) for c in configs]
    built = [member_build(c) for c in cfgs]
    tensors = {p: torch.from_numpy(v) for p, v in parts[0].items()}
    model_data = ModelData(data.meta, data.sizes, data.store, train_graphs=tensors["train"])
    builds = [lambda cfg=cfg: build_model(cfg, model_data, default_variant=ERRICA2020) for cfg, _ in built]
    observed = None if observers is None else [
        [observer_settings(coerce_all(c, "config", protocol_types(ERRICA2020, c))) for c in obs]
        for obs in observers]

    prebuilt = []  # the stack built (and checked) before anything trains, for the first make()

    def make():
        if prebuilt:
            return prebuilt.pop()
        step = HoldoutStack(builds, seeds, cfgs, data.store, tensors, device=device, frozen=[set(f) for _, f in built],
                            observers=observed)
        run, rules = step.fit_parts()
        return run, step, [*rules, *more_rules()]

    def finish(run, step):
        return [_outcome(key, what, config, s, out, out["num_params"], stack=stack_key)
                for key, what, (config, s), out in zip(keys, whats, runs, step.results(run), strict=True)]

    if not job.done(stack_key):
        try:
            prebuilt.append(make())
        except NotWidenable as exc:
            _explain(name, str(exc), kind, "not trained as one wide stack")
            return None
    return job.fit(stack_key, make, finish, label=f"{kind} of fold {whats[0]['fold']} (stack of {len(seeds)})")


_explained: set[tuple[str, str, str]] = set()  # (model, reason, kind) already logged by this process


def _explain(name: str, reason: str, kind: str = "final runs",
             what: str = "trained one after another, not stacked") -> None:
    """One log line per model, reason, kind of runs and process: why runs do not train as a stack."""
    if (name, reason, kind) not in _explained:
        _explained.add((name, reason, kind))
        log.info("%s: %s %s (%s)", name, kind, what, reason)


def _write_records(path, stage: str, data: _Data, fold: int, label: str | None, configs: list[dict], rows: list[dict],
                   weights: list[int], dev, histories: list[list[dict]], extra: dict | None = None) -> None:
    """The run records (:mod:`gnnbench.records`) of a job's inner (model-selection) or final runs and their history
    record (``histories``: each run's epochs): the early-stopping epoch is the scored one; inner runs have no test
    part; a final run's ``init`` is its index; ``weights``: each run's trainable parameters; ``extra`` holds the
    configuration's depth (``layers``: :func:`~gnnbench.protocols.fair_comparison.grid.num_layers`, which the tables
    read without the model registry)."""
    device, versions = device_name(dev), package_versions()
    parts = ("train", "val") if stage == "inner" else ("train", "val", "test")
    records = []
    for config, r, num_params in zip(configs, rows, weights, strict=True):
        diverged = r.get("status") == "diverged"
        records.append(record(
            protocol=NAME, default_variant=ERRICA2020, dataset=data.meta.name,
            model=label or config["model"], config=config, stage=stage,
            split=fold, split_scheme=data.splits.scheme, seed=r["seed"], init=r.get("run", 0),
            config_id=r["config_id"], metric="accuracy", higher_is_better=True,
            **{f"{part}_{what}": r[f"{part}_{key}"] for part in parts
               for what, key in (("score", "accuracy"), ("loss", "loss"))},
            epochs=r["epochs"], scored_epoch=None if diverged else r["best_epoch"], stop_reason=r["stop_reason"],
            status=r["status"], diverged_epoch=r.get("diverged_epoch"), seconds=r["seconds"],
            num_params=num_params, device=device, versions=versions,
            extra={"layers": num_layers(config), **(extra or {})}))
    write_records(path, records, history=[history_frame(h, rec["run_id"], score="accuracy")
                                          for h, rec in zip(histories, records, strict=True)])
