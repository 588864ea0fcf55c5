"""One training run: one model config × one seed × one fold of a split (Dwivedi et al., Appendix C, "Training"; the
released code's ``main_*.py`` and ``train/train_*.py``; docs/protocols/benchmarking-gnns.md#training-and-stopping).

Protocol: Adam(init_lr, weight_decay); ReduceLROnPlateau(mode='min', factor=lr_reduce_factor,
patience=lr_schedule_patience) stepped once per epoch on the validation loss. Each epoch: train → evaluate
val → evaluate test → scheduler step → checkpoint (:func:`gnnbench.training.engine.fit` with the callbacks
``Diverged``, ``PlateauSchedule``, ``TimeLimit``, ``MaxEpochs``). The run stops when the learning rate falls below
``min_lr``, when the training time exceeds its budget (``time_limit_hours``, by default the config's ``max_time``;
the benchmarking-gnns protocol divides it by 10 per fold under cross-validation, see
:mod:`gnnbench.protocols.benchmarking_gnns`), or at ``epochs``. The reported scores are those of
the model after the **last** epoch — no best-validation selection — re-evaluated on train (eval mode),
val and test.

Dense WL-GNNs (RingGNN, 3WLGNN; docs/protocols/benchmarking-gnns.md#dense-wl-gnns-train-on-mini-batches): the
original trains them one graph per forward pass and emulates the batch size by a peculiar gradient-accumulation
schedule (:func:`~gnnbench.training.loop.train_epoch_accumulated`).
gnnbench's default is true mini-batching on padded dense batches (``dense_schedule: minibatch``: one optimizer
step per ``batch_size`` graphs, gradients averaged by the loss like every other model);
``dense_schedule: original`` reproduces the original schedule, evaluating one graph at a time as it does
(batch-averaged metrics then average over graphs). The option applies to any model.

One graph with node splits (WikiCS, 20 splits = 20 folds): every epoch is one full-graph step whose loss and
metric cover the fold's training nodes; validation and test score their nodes of the same full-graph forward
(eval mode). No ``batch_size``.

Decisions (docs/protocols/benchmarking-gnns.md#final-train-score-and-epoch-count): the final train score is computed
on the training set in stored order (the original uses its
shuffled loader, which moves batch-averaged metrics slightly); ``epochs`` in the results is the number of
epochs trained (the original prints the 0-based index of the last one). Same seed and thread count give
identical metrics on CPU; GPU runs are not bitwise reproducible (atomic scatter-adds).

Outputs in ``out_dir``: ``metrics.json``, ``history.parquet`` (one row per epoch) and ``checkpoint.pt``.

Divergence: an epoch whose training loss (the mean over its batches, already a Python float: no extra device
synchronisation) or validation loss is NaN or ±inf ends the run there, with ``stop_reason`` ``"diverged"``; after a
non-finite training loss the epoch is not evaluated (its history row has NaN validation and test columns). The
weights are then meaningless, so the final evaluation is skipped and ``metrics.json`` holds no scores: each part's
``metric`` and ``loss`` are null. Every ``metrics.json`` has ``status`` — ``"completed"`` or ``"diverged"`` — and
``diverged_epoch``, the 0-based epoch (row of ``history.parquet``) whose loss was not finite (null when completed);
:mod:`gnnbench.reporting.aggregate` counts diverged runs instead of averaging them. The stop reason is in the
checkpoint: a resumed diverged run stays diverged.

Pre-emption (:mod:`gnnbench.training.preemption`): SIGTERM abandons the epoch in progress and raises
:class:`~gnnbench.training.preemption.Preempted` (exit status 143 from the CLI and the Snakemake script); the
checkpoint on disk — written after every completed epoch and, for a fresh run, once before the first — is where
the rerun resumes. A SIGTERM that arrives while the final outputs are being written lets them finish and the run
succeeds (its outputs are complete).
"""

from __future__ import annotations

import logging
import math
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import torch

from gnnbench.config.keys import TRAIN_KEYS, coerce_all
from gnnbench.data.batching import GraphLoader, model_dtypes, node_set_batches
from gnnbench.data.meta import read_dataset
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError, DataError
from gnnbench.features.pe_file import read_pe
from gnnbench.io import atomic_path, sha256_file, sha256_json, write_json
from gnnbench.models.build import ModelData, build_model, count_parameters
from gnnbench.splits import read_splits
from gnnbench.training.checkpoint import CHECKPOINT_FILE
from gnnbench.training.engine import (
    Checkpoint,
    Diverged,
    MaxEpochs,
    PerMember,
    PlateauSchedule,
    Run,
    RunState,
    SingleStep,
    TimeLimit,
    checkpoint_epochs,
    fit_or_resume,
    make_optimizer,
    payload,
    stoppable,
)
from gnnbench.training.environment import device_name, package_versions, resolve_device, seed_everything
from gnnbench.training.loop import evaluate, train_epoch, train_epoch_accumulated
from gnnbench.training.losses import get_loss
from gnnbench.training.metrics import get_metric
from gnnbench.training.preemption import StopOnSignal

log = logging.getLogger(__name__)
METRICS_FILE, HISTORY_FILE = "metrics.json", "history.parquet"








def write_outputs(guard: StopOnSignal, checkpoint: Checkpoint, state: dict, out_dir: Path, results: dict,
                  history: list[dict], history_schema: pa.Schema) -> None:
    """Save the run's last checkpoint ``state`` marked finished (its final weights are kept there) and write
    ``history.parquet`` and ``metrics.json`` (a stop signal arriving meanwhile lets them finish: the run is complete).
    Shared by graph mini-batch and link-prediction runs and the members of a seed stack."""
    with guard.deferred(raise_after=False):
        checkpoint.save(state, finished=True)
        with atomic_path(out_dir / HISTORY_FILE) as tmp:
            pq.write_table(pa.Table.from_pylist(history, schema=history_schema), tmp)
        write_json(out_dir / METRICS_FILE, results)
    if guard.received is not None:
        log.warning("%s arrived while the outputs were written; the run is complete",
                    signal.Signals(guard.received).name)


def p1_rules(schedule: PlateauSchedule, cfg: dict, time_limit_s: float) -> list:
    """A benchmarking-gnns run's stop rules, in the original's order: divergence, lr below ``min_lr``
    (ReduceLROnPlateau: ``schedule``), time budget, epochs."""
    return [Diverged(), schedule, TimeLimit(time_limit_s, "max_time"), MaxEpochs(cfg["epochs"])]


def p1_fit(guard: StopOnSignal, out_dir: Path, key: str, model: torch.nn.Module, optimizer, scheduler,
           shuffle: torch.Generator, monitor: str, cfg: dict, time_limit_s: float, train_epoch,
           log_row, more_rules: Callable[[], list] = list) -> tuple[Run, SingleStep, list, Checkpoint]:
    """A benchmarking-gnns run trained to its end on the engine (:func:`~gnnbench.training.engine.fit_or_resume`):
    its checkpoint after every epoch (resumed when the key matches), the rules of :func:`p1_rules` with
    ReduceLROnPlateau on ``monitor`` and ``more_rules()`` (a tuning round's pruner); ``train_epoch(state)`` gives a
    row, ``log_row(row)`` logs it."""
    checkpoint = Checkpoint(out_dir / CHECKPOINT_FILE, key, guard)

    def make():
        schedule = PlateauSchedule(scheduler, monitor, cfg["min_lr"])
        return Run(1), SingleStep(train_epoch, {"model": model, "optimizer": optimizer}), [
            PerMember([p1_rules(schedule, cfg, time_limit_s)]), *more_rules()]

    run, step, rules = fit_or_resume(make, checkpoint, lambda step: shuffle,
                                     after_epoch=lambda run, members, rows: log_row(rows[0]))
    return run, step, rules, checkpoint


def read_run_pe(cfg: dict, pe_path, store: GraphStore, meta) -> torch.Tensor | None:
    """The run's positional encodings (None without ``pos_enc``), checked against the dataset and ``pos_enc_dim``."""
    if not cfg.get("pos_enc"):
        return None
    if pe_path is None:
        raise ConfigError("pos_enc is true but no positional-encoding file was given (--pe)")
    pe = read_pe(pe_path, store.num_nodes, meta.checksum)
    if pe.shape[1] != cfg.get("pos_enc_dim"):
        raise DataError(f"positional-encoding file {pe_path} has {pe.shape[1]} dimensions but pos_enc_dim is "
                        f"{cfg.get('pos_enc_dim')}; give the file for k={cfg.get('pos_enc_dim')}")
    return pe


def build_training(cfg: dict, meta, dev: torch.device, scheduler_mode: str, store=None,
                   train_graphs: torch.Tensor | None = None):
    """Seeded model, Adam, ReduceLROnPlateau (``scheduler_mode``: min on the validation loss, max on COLLAB's
    validation Hits@50) and the shuffle generator of one run. ``store``: the dataset, for models built from its
    graph sizes or preparing per-graph data (another paper's graph classifiers, :mod:`gnnbench.models.registry`);
    ``train_graphs``: its training graphs (a plugin PNA's degree histogram is theirs)."""
    seed_everything(cfg["seed"])
    data = meta if store is None else ModelData(meta, store=store, train_graphs=train_graphs)
    model = build_model(cfg, data).to(dev)
    optimizer = make_optimizer(model, cfg["init_lr"], cfg["weight_decay"])
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
        optimizer, mode=scheduler_mode, factor=cfg["lr_reduce_factor"], patience=cfg["lr_schedule_patience"])
    return model, optimizer, scheduler, torch.Generator().manual_seed(cfg["seed"])


def train_run(*, dataset_dir: str | os.PathLike, splits_path: str | os.PathLike, fold: int, config: dict,
              out_dir: str | os.PathLike, pe_path: str | os.PathLike | None = None, device: str = "auto",
              threads: int | None = None, label: str | None = None, time_limit_hours: float | None = None) -> dict:
    """Train one run and write its outputs; returns the contents of ``metrics.json``.

    ``time_limit_hours``: the run's wall-clock budget (default: the config's ``max_time``).

    Raises :class:`~gnnbench.training.preemption.Preempted` on SIGTERM, naming the checkpoint a rerun resumes from.
    """
    return stoppable(lambda guard: _train_run(
        guard, dataset_dir=dataset_dir, splits_path=splits_path, fold=fold, config=config, out_dir=out_dir,
        pe_path=pe_path, device=device, threads=threads, label=label, time_limit_hours=time_limit_hours),
        lambda: resume_note(Path(out_dir) / CHECKPOINT_FILE))


def resume_note(path: Path) -> str:
    """What a rerun of a stopped run resumes from (the end of its Preempted message)."""
    epochs = checkpoint_epochs(path)
    return (f"checkpoint {path} holds {epochs} completed epoch(s); run the same command again (Snakemake: rerun the "
            f"job) to resume from it" if epochs is not None else
            "no checkpoint was written yet; a rerun starts from the beginning")


class RunData:
    """What the runs of one config on one fold share: the dataset, its split part, positional encodings, the
    evaluation loaders, the loss, the time budget and the device (:func:`load_run_data`). The seeds of one config
    trained in one job (:mod:`gnnbench.training.last_epoch_stack`) load it once."""

    def __init__(self, *, cfg, meta, store, splits, parts, pe, pe_path, loaders, loss_fn, fold, dev, time_limit_s,
                 original_schedule) -> None:
        self.cfg, self.meta, self.store, self.splits, self.parts, self.pe, self.pe_path = (
            cfg, meta, store, splits, parts, pe, pe_path)
        self.loaders, self.loss_fn, self.fold, self.dev, self.time_limit_s = loaders, loss_fn, fold, dev, time_limit_s
        self.original_schedule = original_schedule

    def train_loader(self, shuffle: torch.Generator):
        """The training batches of one epoch, shuffled by ``shuffle`` (one graph per batch under the original dense
        schedule; the one full-graph batch of a node-split dataset)."""
        if self.meta.transductive:
            return self.loaders["train"]
        batch_size = 1 if self.original_schedule else self.cfg["batch_size"]
        return GraphLoader(self.store, self.parts["train"], batch_size, shuffle=True, generator=shuffle, pe=self.pe)

    def key(self, cfg: dict, **extra) -> str:
        """The checkpoint key of a run of ``cfg`` on this data (``extra``: what else makes it another run, e.g. the
        seeds of a stack it trains in)."""
        return sha256_json({"config": cfg, "dataset": self.meta.checksum, "splits": sha256_json(self.splits.folds),
                            "fold": self.fold, "pe": None if self.pe_path is None else sha256_file(self.pe_path),
                            **extra})

    def build(self, cfg: dict):
        """:func:`build_training` of the run of ``cfg`` (its seed) on this data."""
        return build_training(cfg, self.meta, self.dev, scheduler_mode="min", store=self.store,
                              train_graphs=None if self.meta.transductive else self.parts["train"])


def load_run_data(*, dataset_dir, splits_path, fold, config, pe_path, device, threads,
                  time_limit_hours) -> RunData:
    """Read and check what a run of ``config`` on ``fold`` needs (:class:`RunData`); sets the thread count."""
    cfg = coerce_all(config, "config")
    meta, columns = read_dataset(Path(dataset_dir))
    # one graph with node splits trains full-batch: no batch size
    missing = [k for k in TRAIN_KEYS if k not in cfg and not (k == "batch_size" and meta.transductive)]
    if missing:
        raise ConfigError(f"training needs config key(s) {', '.join(missing)}; add them (or use a preset)")

    store = model_dtypes(GraphStore.from_columns(columns))
    splits = read_splits(splits_path, meta)
    parts = {k: torch.from_numpy(v) for k, v in splits.fold(fold).items()}
    pe = read_run_pe(cfg, pe_path, store, meta)
    if threads:
        torch.set_num_threads(threads)
    dev = resolve_device(device)
    original_schedule = cfg.get("dense_schedule", "minibatch") == "original"
    if meta.transductive:  # WikiCS: every epoch one full-graph step; each part scores its own nodes
        loaders = node_set_batches(store, parts, pe)
        loaders["train_eval"] = loaders["train"]
    else:
        batch_size = 1 if original_schedule else cfg["batch_size"]
        loaders = {
            "train_eval": GraphLoader(store, parts["train"], batch_size, pe=pe),
            "val": GraphLoader(store, parts["val"], batch_size, pe=pe),
            "test": GraphLoader(store, parts["test"], batch_size, pe=pe),
        }
    # ``loss`` in the config overrides the dataset's (WikiCS GAT: the class-weighted CE, as the released
    # main_WikiCS_node_classification.py; docs/protocols/benchmarking-gnns.md#metrics-and-losses)
    loss_fn = get_loss(cfg.get("loss") or meta.loss, cfg)
    time_limit_s = (cfg["max_time"] if time_limit_hours is None else time_limit_hours) * 3600
    return RunData(cfg=cfg, meta=meta, store=store, splits=splits, parts=parts, pe=pe, pe_path=pe_path,
                   loaders=loaders, loss_fn=loss_fn, fold=fold, dev=dev, time_limit_s=time_limit_s,
                   original_schedule=original_schedule)


def _train_run(guard: StopOnSignal, *, dataset_dir, splits_path, fold, config, out_dir, pe_path, device, threads,
               label, time_limit_hours) -> dict:
    setup_start = time.perf_counter()
    data = load_run_data(dataset_dir=dataset_dir, splits_path=splits_path, fold=fold, config=config,
                         pe_path=pe_path, device=device, threads=threads, time_limit_hours=time_limit_hours)
    return train_one(guard, data, data.cfg, Path(out_dir), label, setup_start)


def train_one(guard: StopOnSignal, data: RunData, cfg: dict, out_dir: Path, label: str | None,
              setup_start: float, order_seed: int | None = None, extra: dict | None = None,
              more_rules: Callable[[], list] = list) -> dict:
    """Train the run of ``cfg`` (its seed) on ``data`` and write its outputs in ``out_dir``; returns its results.

    ``order_seed``: the seed of the mini-batch order (default: the run's own seed, as every separate run; another
    seed reproduces a member of a seed stack, :mod:`gnnbench.training.last_epoch_stack`). ``extra``: added to the
    checkpoint key and to ``metrics.json`` (what job the run was trained in). ``more_rules()``: rules beside the
    protocol's (a tuning trial's pruner). Data without a test loader (a tuning trial's) is scored on train and
    validation only."""
    meta, loaders, loss_fn, dev = data.meta, dict(data.loaders), data.loss_fn, data.dev
    model, optimizer, scheduler, shuffle = data.build(cfg)
    if order_seed is not None:
        shuffle = torch.Generator().manual_seed(order_seed)
    num_params = count_parameters(model)
    original_schedule = data.original_schedule
    loaders["train"] = data.train_loader(shuffle)
    metric = get_metric(meta.metric, cfg)
    key = data.key(cfg, **({} if order_seed is None else {"order_seed": order_seed}), **(extra or {}))
    time_limit_s = data.time_limit_s

    setup_s = time.perf_counter() - setup_start

    def step(state: RunState) -> dict:
        lr = optimizer.param_groups[0]["lr"]
        if original_schedule:
            train_loss, train_score = train_epoch_accumulated(model, loaders["train"], optimizer, loss_fn, metric, dev,
                                                              accumulate=cfg["batch_size"])
        else:
            train_loss, train_score = train_epoch(model, loaders["train"], optimizer, loss_fn, metric, dev)
        val_loss = val_score = test_loss = test_score = math.nan  # diverged: not evaluated (the run stops)
        if math.isfinite(train_loss):
            val_loss, val_score = evaluate(model, loaders["val"], loss_fn, metric, dev)
            if "test" in loaders:
                test_loss, test_score = evaluate(model, loaders["test"], loss_fn, metric, dev)
        return {"epoch": state.epoch, "lr": lr, "train_loss": train_loss, "train_metric": train_score,
                "val_loss": val_loss, "val_metric": val_score, "test_loss": test_loss, "test_metric": test_score}

    run, fitted, rules, checkpoint = p1_fit(guard, out_dir, key, model, optimizer, scheduler, shuffle, "val_loss",
                                            cfg, time_limit_s, step, log_epoch, more_rules)
    state = run.states[0]
    results = final_results(data, cfg, model, metric, state, label, num_params, setup_s, extra)
    write_outputs(guard, checkpoint, payload(run, fitted, rules, shuffle), out_dir, results, state.history,
                  _HISTORY_SCHEMA)
    return results


def log_epoch(r: dict, who: str = "") -> None:
    """Log one history row (``who``: a prefix naming the run, e.g. a stack member)."""
    log.info("%sepoch %d  lr %.2e  train %.4f/%.3f  val %.4f/%.3f  test %.4f/%.3f  %.2fs", who, r["epoch"], r["lr"],
             r["train_loss"], r["train_metric"], r["val_loss"], r["val_metric"], r["test_loss"], r["test_metric"],
             r["seconds"])


def final_results(data: RunData, cfg: dict, model: torch.nn.Module, metric, state: RunState, label: str | None,
                  num_params: int, setup_s: float, extra: dict | None = None) -> dict:
    """The contents of a finished run's ``metrics.json``: ``model`` after its last epoch re-evaluated on train
    (eval mode), val and test (no scores when it diverged), with the run's record of stop, time and provenance."""
    meta, splits, dev, pe_path = data.meta, data.splits, data.dev, data.pe_path
    final_start = time.perf_counter()
    final, per_task = {}, {}
    for part, loader in (("train", "train_eval"), ("val", "val"), ("test", "test")):
        if state.diverged or loader not in data.loaders:  # diverged: the weights are not finite (module docstring)
            final[part], per_task[part] = (None, None), {}
            continue
        final[part] = evaluate(model, data.loaders[loader], data.loss_fn, metric, dev)
        # multitask: each task's score too, as [task, score] pairs (JSON keys are sorted on writing; a list keeps
        # the tasks in the metric's order)
        scores = metric.per_task()
        per_task[part] = {"per_task": list(scores.items())} if scores else {}
    final_s = time.perf_counter() - final_start
    total_s = setup_s + state.elapsed + final_s
    time_limit_s = data.time_limit_s
    return {
        "dataset": meta.name, "label": label or cfg["model"], "model": cfg["model"], "seed": cfg["seed"],
        "fold": data.fold, "task": meta.task, "metric": metric.name, "higher_is_better": metric.higher_is_better,
        **{part: {"metric": score, "loss": loss, **per_task[part]}
           for part, (loss, score) in final.items()},
        "num_params": num_params, "epochs": state.epoch, "stop_reason": state.stop_reason, **state.status(),
        "seconds_per_epoch": state.elapsed / max(state.epoch, 1), "total_seconds": total_s,
        "total_hours": total_s / 3600, "time_limit_hours": time_limit_s / 3600, "config": cfg,
        "device": device_name(dev), "threads": torch.get_num_threads(), "versions": package_versions(),
        "data": {"dataset_checksum": meta.checksum, "split_scheme": splits.scheme,
                 "split_checksum": sha256_json(splits.folds), "pe_file": None if pe_path is None else str(pe_path)},
        **(extra or {}),
    }


_HISTORY_SCHEMA = pa.schema([("epoch", pa.int64())] + [
    (name, pa.float64()) for name in ("lr", "train_loss", "train_metric", "val_loss", "val_metric", "test_loss",
                                      "test_metric", "seconds")])

