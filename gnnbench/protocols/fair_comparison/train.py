"""The jobs of the fair-comparison protocol: the model-selection runs of a part of a grid on an outer fold, and the
final runs of the chosen configuration; every finished run is kept so that a rerun job trains only what is missing."""

from __future__ import annotations

import logging
import os
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
from gnnbench.io import atomic_path, read_json, sha256_json, write_json
from gnnbench.models.build import ModelData, build_model, count_parameters, num_parameters
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
    observer_settings,
    run_seed,
    seed_key,
    stack_groups,
    trajectories,
    trajectory_config,
)
from gnnbench.protocols.fair_comparison.plan import FairComparison
from gnnbench.protocols.fair_comparison.select import read_selection
from gnnbench.records import record, write_records
from gnnbench.splits import read_splits
from gnnbench.training.engine import Checkpoint, stoppable
from gnnbench.training.holdout import train_holdout
from gnnbench.training.run import _device_name, package_versions, resolve_device
from gnnbench.training.stacked_holdout import MemberStack
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


def _train_cached(data: _Data, config: dict, parts: dict[str, np.ndarray], seed: int, run_dir: Path, what: dict,
                  device, guard) -> dict:
    """One training run, or its stored result: ``run_dir/{id}.json`` (id from config, data, parts and seed).
    Interrupted runs resume from ``run_dir/{id}.checkpoint.pt``."""
    key = sha256_json({"config": config, "data": data.key, "seed": seed,
                       "parts": {p: sha256_json(v.tolist()) for p, v in parts.items()}})
    result_path, checkpoint_path = run_dir / f"{key[:24]}.json", run_dir / f"{key[:24]}.checkpoint.pt"
    cfg = coerce_all(config, "config", protocol_types(FairComparison, config))
    model_data = ModelData(data.meta, data.sizes, data.store, train_graphs=torch.from_numpy(parts["train"]))
    if result_path.is_file():
        try:
            stored = read_json(result_path, "run result")
            if stored.get("key") == key:
                if "num_params" not in stored:  # a result stored before runs counted their weights
                    stored["num_params"] = num_parameters(cfg, model_data, default_variant=ERRICA2020)
                return {"status": "completed", "diverged_epoch": None, **stored}  # (kept before runs had a status)
        except DataError:
            pass  # unreadable: train again
    torch.manual_seed(seed)
    model = build_model(cfg, model_data, default_variant=ERRICA2020).to(device)
    # a stop signal abandons the epoch in progress; the resumed run repeats it from the saved state (RNG included),
    # so its results equal an uninterrupted run's
    checkpoint = Checkpoint(checkpoint_path, key, guard, every_s=CHECKPOINT_SECONDS, label=str(what))
    tensors = {p: torch.from_numpy(v) for p, v in parts.items()}
    out = train_holdout(model, data.store, tensors, cfg, device=device, checkpoint=checkpoint)
    result = {"key": key, **what, "config": config, "seed": seed, "num_params": count_parameters(model),
              "best_epoch": out["best_epoch"],
              "epochs": out["epochs"], "stop_reason": out["stop_reason"], "status": out["status"],
              "diverged_epoch": out["diverged_epoch"], "seconds": out["seconds"],
              **{k: v for k, v in out["scores"].items() if k not in ("epoch", "seconds", "lr")},
              "history": out["history"]}
    write_json(result_path, result)
    checkpoint_path.unlink(missing_ok=True)
    return result


def _train_observed(data: _Data, configs: list[dict], parts: dict[str, np.ndarray], seed: int, run_dir: Path,
                    whats: list[dict], device, guard) -> list[dict]:
    """Configurations that differ only in :data:`OBSERVER_KEYS` trained as one trajectory (``seed``) observed by each
    one's stopping rules (:func:`gnnbench.training.holdout.train_holdout` with ``observers``), or their stored
    results: one per configuration, each what its run alone with ``seed`` gives. A result is stored as
    ``run_dir/{id}.json`` with an id from the trajectory's (the configuration without the observer keys, data, parts,
    seed) and the configuration's stopping settings; the trajectory resumes from ``run_dir/{id}.checkpoint.pt`` (id
    from the trajectory's and every observer's)."""
    trajectory = sha256_json({"trajectory": trajectory_config(configs[0]), "data": data.key, "seed": seed,
                              "parts": {p: sha256_json(v.tolist()) for p, v in parts.items()}})
    keys = [sha256_json({"trajectory": trajectory, "observer": observer_settings(c)}) for c in configs]
    result_paths = [run_dir / f"{key[:24]}.json" for key in keys]
    stored = _stored_results(keys, result_paths)
    if all(r is not None for r in stored):
        return stored
    cfgs = [coerce_all(c, "config", protocol_types(FairComparison, c)) for c in configs]
    model_data = ModelData(data.meta, data.sizes, data.store, train_graphs=torch.from_numpy(parts["train"]))
    torch.manual_seed(seed)
    model = build_model(cfgs[0], model_data, default_variant=ERRICA2020).to(device)
    run_key = sha256_json({"trajectory": trajectory, "observers": keys})
    checkpoint_path = run_dir / f"{run_key[:24]}.checkpoint.pt"
    checkpoint = Checkpoint(checkpoint_path, run_key, guard, every_s=CHECKPOINT_SECONDS,
                            label=f"{whats[0]} (one trajectory, {len(configs)} stopping rules)")
    tensors = {p: torch.from_numpy(v) for p, v in parts.items()}
    outs = train_holdout(model, data.store, tensors, cfgs[0], device=device, checkpoint=checkpoint,
                         observers=[observer_settings(c) for c in cfgs])
    results = []
    for key, path, what, config, out in zip(keys, result_paths, whats, configs, outs, strict=True):
        result = {"key": key, **what, "config": config, "seed": seed, "num_params": count_parameters(model),
                  "best_epoch": out["best_epoch"], "epochs": out["epochs"], "stop_reason": out["stop_reason"],
                  "status": out["status"], "diverged_epoch": out["diverged_epoch"], "seconds": out["seconds"],
                  **{k: v for k, v in out["scores"].items() if k not in ("epoch", "seconds", "lr")},
                  "history": out["history"], "trajectory": trajectory}
        write_json(path, result)
        results.append(result)
    checkpoint_path.unlink(missing_ok=True)
    return results


def _stored_results(keys: list[str], paths: list[Path]) -> list[dict | None]:
    """The stored result of each run (``paths[i]`` holding key ``keys[i]``), None where missing, unreadable or
    another run's: those train again."""
    stored = []
    for key, path in zip(keys, paths, strict=True):
        try:
            result = read_json(path, "run result") if path.is_file() else None
        except DataError:
            result = None
        stored.append(result if result is not None and result.get("key") == key else None)
    return stored


def _setup(device: str, threads: int | None):
    if threads:
        torch.set_num_threads(threads)
    return resolve_device(device)


def _stoppable(job, out: Path):
    """Run ``job(guard)`` under the SIGTERM guard; a stop names what a rerun resumes from."""
    return stoppable(job, lambda: f"finished runs are kept under {out.parent / 'runs'} and the current one in its "
                                  "checkpoint; run the same job again to resume")


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
        fold_parts = data.splits.fold(fold)
        parts = {"train": fold_parts["train"], "val": fold_parts["val"]}
        rows, weights = [], []
        whats = [{"fold": fold, "config_id": config_id(c), "stage": "selection"} for c in configs]
        # with stacks a seed does not depend on the stopping settings: one trajectory serves them all
        seeds = [run_seed(seed, fold, seed_key(trajectory_config(c) if stack else c)) for c in configs]
        stacked: dict[int, dict] = {}
        shared = trajectories(configs) if stack else []
        for group in stack_groups([configs[t[0]] for t in shared]) if stack else []:
            if len(group) > 1:
                members = [shared[g] for g in group]
                flat = [i for t in members for i in t]
                results = _train_stack(data, [configs[t[0]] for t in members], [parts] * len(group),
                                       [seeds[t[0]] for t in members], out.parent / "runs", [whats[i] for i in flat],
                                       dev, guard, "grid points", observers=[[configs[i] for i in t] for t in members])
                stacked.update(zip(flat, results or [], strict=False))
        for t in shared:
            if len(t) > 1 and t[0] not in stacked:
                stacked.update(zip(t, _train_observed(data, [configs[i] for i in t], parts, seeds[t[0]],
                                                      out.parent / "runs", [whats[i] for i in t], dev, guard),
                                   strict=True))
        for i, (position, config) in enumerate(zip(positions, configs, strict=True)):
            cid, s = whats[i]["config_id"], seeds[i]
            r = stacked[i] if i in stacked else _train_cached(data, config, parts, s, out.parent / "runs", whats[i],
                                                              dev, guard)
            log.info("fold %d config %s: val acc %.2f (epoch %d of %d, %s)", fold, cid, r["val_accuracy"],
                     r["best_epoch"], r["epochs"], r["stop_reason"])
            rows.append({"position": position, "config_id": cid, "config": config_json(config), "seed": s,
                         **{k: r[k] for k in INNER_COLUMNS[4:]}})
            weights.append(r["num_params"])
        with guard.deferred(raise_after=False), atomic_path(out) as tmp:
            pq.write_table(pa.Table.from_pylist(rows), tmp)
            if records_out is not None:
                _write_records(records_out, "inner", data, fold, label, configs, rows, weights, dev)

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
              records_out: str | os.PathLike | None = None, stack: bool = False) -> None:
    """The final trainings of the configuration chosen for ``fold`` (read from its selection file); with
    ``records_out`` also their run records (:mod:`gnnbench.records`; ``label``: the suite's model label).

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
        rows, history, weights = [], [], []
        seeds = [run_seed(seed, fold, 2**31 + r) for r in range(runs)]
        parts = [final_parts(data, fold, r, holdout, s) for r, s in enumerate(seeds)]
        whats = [{"fold": fold, "config_id": chosen["config_id"], "stage": "final", "run": r} for r in range(runs)]
        results = None
        if stack and runs > 1 and _same_parts(parts):
            results = _train_stack(data, [chosen["config"]] * runs, parts, seeds, out.parent / "runs", whats, dev,
                                   guard, "final runs")
        elif stack and runs > 1:
            _explain(chosen["config"].get("model", "model"),
                     "they hold out different graphs (final_holdout: fresh); a stack trains on one training set")
        for r, s in enumerate(seeds):
            result = results[r] if results is not None else _train_cached(
                data, chosen["config"], parts[r], s, out.parent / "runs", whats[r], dev, guard)
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
                               [chosen["config"]] * len(rows), rows, weights, dev)

    _stoppable(job, out)


def _same_parts(parts: list[dict[str, np.ndarray]]) -> bool:
    return all(p.keys() == parts[0].keys() and all(np.array_equal(p[k], parts[0][k]) for k in p) for p in parts)


def _train_stack(data: _Data, configs: list[dict], parts: list[dict[str, np.ndarray]], seeds: list[int],
                 run_dir: Path, whats: list[dict], device, guard, kind: str,
                 observers: list[list[dict]] | None = None) -> list[dict] | None:
    """Runs of one shape (configuration r with ``seeds[r]``, all on the same ``parts``) trained as one wide stack
    (:class:`gnnbench.training.stacked_holdout.MemberStack`), or their stored results; None where the model does not
    widen (one log line per model and reason says why) and the caller trains them one by one.

    A member's result is stored as ``run_dir/{id}.json`` with an id from its own run's id and the stack's (its
    members' ids in order: the batch order and dropout stream are the stack's), so results of runs trained alone and
    of stack members are never mixed, and a grid point added to a shape retrains its stack; the stack resumes from
    ``run_dir/{id}.checkpoint.pt`` (the stack's id).

    ``observers[r]``: the configurations that member r's trajectory serves (they differ from ``configs[r]`` only in
    :data:`OBSERVER_KEYS`; :func:`_train_observed`); then ``whats`` and the results are one per observing
    configuration, members in order, and a result's id is also from the trajectory's id (the member's configuration
    without the observer keys) and its stopping settings."""
    name = configs[0].get("model", "model")
    part_keys = {p: sha256_json(v.tolist()) for p, v in parts[0].items()}
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
    paths = [run_dir / f"{key[:24]}.json" for key in keys]
    stored = _stored_results(keys, paths)
    if all(r is not None for r in stored):
        return stored
    cfgs = [coerce_all(c, "config", protocol_types(FairComparison, c)) for c in configs]
    built = [member_build(c) for c in cfgs]
    tensors = {p: torch.from_numpy(v) for p, v in parts[0].items()}
    model_data = ModelData(data.meta, data.sizes, data.store, train_graphs=tensors["train"])
    builds = [lambda cfg=cfg: build_model(cfg, model_data, default_variant=ERRICA2020) for cfg, _ in built]
    checkpoint_path = run_dir / f"{stack_key[:24]}.checkpoint.pt"
    checkpoint = Checkpoint(checkpoint_path, stack_key, guard, every_s=CHECKPOINT_SECONDS,
                            label=f"{kind} of fold {whats[0]['fold']} (stack of {len(seeds)})")

    observed = None if observers is None else [
        [observer_settings(coerce_all(c, "config", protocol_types(FairComparison, c))) for c in obs]
        for obs in observers]

    def make():
        return MemberStack(builds, seeds, cfgs, data.store, tensors, device=device, checkpoint=checkpoint,
                           frozen=[set(f) for _, f in built], observers=observed)


    try:
        trainer = make()
    except NotWidenable as exc:
        _explain(name, str(exc), kind, "not trained as one wide stack")
        return None
    try:
        resumed = trainer.resume()
    except (KeyError, TypeError, RuntimeError, ValueError, IndexError) as exc:  # another layout: start afresh
        log.warning("checkpoint %s does not fit this stack (%s); training from scratch", checkpoint_path, exc)
        trainer, resumed = make(), False
    if resumed:
        log.info("resuming %s from %s at epoch %d", checkpoint.label, checkpoint_path, trainer.epoch)
    results = []
    for key, path, what, (config, s), out in zip(keys, paths, whats, runs, trainer.fit(), strict=True):
        result = {"key": key, **what, "config": config, "seed": s, "num_params": out["num_params"],
                  "best_epoch": out["best_epoch"], "epochs": out["epochs"], "stop_reason": out["stop_reason"],
                  "status": out["status"], "diverged_epoch": out["diverged_epoch"], "seconds": out["seconds"],
                  **{k: v for k, v in out["scores"].items() if k not in ("epoch", "seconds", "lr")},
                  "history": out["history"], "stack": stack_key}
        write_json(path, result)
        results.append(result)
    checkpoint_path.unlink(missing_ok=True)
    return results


_explained: set[tuple[str, str, str]] = set()  # (model, reason, kind) already logged by this process


def _explain(name: str, reason: str, kind: str = "final runs",
             what: str = "trained one after another, not stacked") -> None:
    """One log line per model, reason, kind of runs and process: why runs do not train as a stack."""
    if (name, reason, kind) not in _explained:
        _explained.add((name, reason, kind))
        log.info("%s: %s %s (%s)", name, kind, what, reason)


def _write_records(path, stage: str, data: _Data, fold: int, label: str | None, configs: list[dict], rows: list[dict],
                   weights: list[int], dev) -> None:
    """The run records (:mod:`gnnbench.records`) of a job's inner (model-selection) or final runs: the early-stopping
    epoch is the scored one; inner runs have no test part; a final run's ``init`` is its index; ``weights``: each
    run's trainable parameters."""
    device, versions = _device_name(dev), package_versions()
    parts = ("train", "val") if stage == "inner" else ("train", "val", "test")
    records = []
    for config, r, num_params in zip(configs, rows, weights, strict=True):
        diverged = r.get("status") == "diverged"
        records.append(record(
            protocol=NAME, default_variant=FairComparison.default_variant, dataset=data.meta.name,
            model=label or config["model"], config=config, stage=stage,
            split=fold, split_scheme=data.splits.scheme, seed=r["seed"], init=r.get("run", 0),
            config_id=r["config_id"], metric="accuracy", higher_is_better=True,
            **{f"{part}_{what}": r[f"{part}_{key}"] for part in parts
               for what, key in (("score", "accuracy"), ("loss", "loss"))},
            epochs=r["epochs"], scored_epoch=None if diverged else r["best_epoch"], stop_reason=r["stop_reason"],
            status=r.get("status", "completed"), diverged_epoch=r.get("diverged_epoch"), seconds=r["seconds"],
            num_params=num_params, device=device, versions=versions))
    write_records(path, records)
