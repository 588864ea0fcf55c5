"""One link-prediction run (OGBL-COLLAB): one model config × one seed (Dwivedi et al., Appendix C.3; the released
code's ``main_COLLAB_edge_classification.py``, ``train/train_COLLAB_edge_classification.py`` and ``data/COLLAB.py``;
docs/protocols/benchmarking-gnns.md#data-and-splits).

The dataset is one graph — the training edges, both directions — and its evaluation pairs
(:mod:`gnnbench.data.link_pairs`); the split file (scheme ``given``, level ``pair``) says which pair rows are train,
val and test. :func:`gnnbench.protocols.benchmarking_gnns.train.train` sends runs of a ``link_prediction`` dataset here;
everything else is :func:`gnnbench.training.last_epoch.train_run`, whose outputs this module writes the same way.

Training, per epoch: the training positives are shuffled (``torch.randperm`` with the run's seeded generator) and cut
into mini-batches of ``batch_size`` (32,768) positives. For each mini-batch: one full-graph forward of the encoder (the
positional encodings, if any, get one random sign per dimension, as in every training loop of the benchmark), scores
of the positives and of as many uniformly random node pairs (``torch.randint(0, N, (2, P))`` on the global RNG — pairs
may be edges or self-pairs, as in the original), the loss ``link_bce`` (−mean log σ(pos) − mean log(1 − σ(neg)), each
with +1e-15) and one Adam step. The epoch's training loss is the mean over mini-batches weighted by their positives
(the original's ``total_loss / total_examples``). No gradient clipping.

Evaluation (after every epoch, and once more at the end): one full-graph forward in eval mode without gradients,
then the predictor on the pairs in chunks of ``batch_size``. Hits@K for K = 10, 50, 100 with the semantics of
``ogb.linkproppred.Evaluator('ogbl-collab')`` (the fraction of positives scored strictly above the K-th best
negative; 1.0 with fewer than K negatives), and two quirks of the original reproduced on purpose:

* **only the first |pos| negatives are scored**: the original's loop over the negatives runs over the range of the
  positive count, so validation uses the first |val pos| of OGB's 100,000 validation negatives and test the first
  |test pos| test negatives (OGB's reference example scores all of them); with fewer negatives than positives all
  are used (the original would fail);
* "train Hits" = the training positives ranked against those truncated **validation** negatives;
* scores are ranked as probabilities σ(logit) in float32, as the original's predictor returns them: saturated
  probabilities tie, and a tie with the K-th negative is not a hit (ranking logits would differ there).

The loss reported for each part (``history``: ``val_loss``, ``test_loss``; ``metrics.json``: ``loss``) is
``link_bce`` on exactly the pairs its Hits were computed from (the original reports none).

Schedule: Adam(init_lr, weight_decay) (:func:`~gnnbench.training.engine.make_optimizer`),
``ReduceLROnPlateau(mode='max', factor=lr_reduce_factor, patience=lr_schedule_patience)`` stepped once per epoch with
the validation Hits@50; the run stops when the learning rate falls below ``min_lr``, when the training time exceeds
its budget, or at ``epochs`` (500 in the configs) — the epoch loop, checkpoints and stop rules of
:func:`~gnnbench.training.last_epoch.train_run` (:mod:`gnnbench.training.engine`). Reported scores are those of the
model after the **last** epoch.
A NaN or infinite training or validation loss ends the run as ``diverged``, as in
:func:`~gnnbench.training.last_epoch.train_run` (``status``, ``diverged_epoch``; an epoch whose training loss is not
finite is not evaluated, and the scores of a diverged run — ``metric``, ``loss`` and the Hits of every part — are null).

Outputs (as :func:`~gnnbench.training.last_epoch.train_run`): ``metrics.json`` with the same keys — ``metric`` is
``hits@50`` and each part's ``metric`` its Hits@50 — plus ``hits@10``, ``hits@50``, ``hits@100`` in each part;
``history.parquet`` (the run module's columns, ``train_metric`` being the eval-mode train Hits@50, plus
``{part}_hits@10`` / ``{part}_hits@100``); ``checkpoint.pt`` after every epoch (and before the first), resumed after a
SIGTERM (:mod:`~gnnbench.training.preemption`) to the same metrics as an uninterrupted run (the checkpoint holds the
global RNG state, which draws the negatives and the PE signs, and the shuffling generator).
"""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa
import torch

from gnnbench.config.keys import TRAIN_KEYS, coerce_all
from gnnbench.data.batching import GraphBatch, GraphLoader, model_dtypes
from gnnbench.data.link_pairs import PAIRS_FILE, LinkPairs
from gnnbench.data.meta import read_dataset, read_pairs
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError, DataError
from gnnbench.features.laplacian_pe import random_sign_flip
from gnnbench.io import sha256_file, sha256_json
from gnnbench.models.build import count_parameters
from gnnbench.splits import read_splits
from gnnbench.training.checkpoint import CHECKPOINT_FILE
from gnnbench.training.engine import RunState, payload, stoppable
from gnnbench.training.environment import device_name, package_versions, resolve_device
from gnnbench.training.last_epoch import build_training, p1_fit, read_run_pe, resume_note, write_outputs
from gnnbench.training.losses import Loss, get_loss
from gnnbench.training.metrics import hits_at_k
from gnnbench.training.preemption import StopOnSignal

log = logging.getLogger(__name__)
HITS_K = (10, 50, 100)
HEADLINE_K = 50  # Hits@50: the reported metric and the scheduler's


@dataclass
class PartPairs:
    """The pairs one part is evaluated on: positives (2, P) and negatives (2, Q) (train: none)."""

    pos: torch.Tensor
    neg: torch.Tensor

    def to(self, device: torch.device) -> PartPairs:
        """The same pairs on ``device``."""
        return PartPairs(self.pos.to(device), self.neg.to(device))


def part_pairs(pairs: LinkPairs, rows: dict[str, torch.Tensor]) -> dict[str, PartPairs]:
    """Positives and the scored negatives of every part: the first |pos| negatives (module doc), none for train."""
    out = {}
    for part, idx in rows.items():
        idx = idx.numpy()
        label = pairs.label[idx]
        edges = torch.from_numpy(pairs.src[idx]), torch.from_numpy(pairs.dst[idx])
        both = torch.stack(edges)
        pos, neg = both[:, torch.from_numpy(label == 1)], both[:, torch.from_numpy(label == 0)]
        out[part] = PartPairs(pos, neg[:, :0] if part == "train" else neg[:, :pos.shape[1]])
    return out


def full_graph(store: GraphStore, pe: torch.Tensor | None) -> GraphBatch:
    """The dataset's one graph as a batch (what every forward pass of a link-prediction run sees)."""
    graph_ids = torch.zeros(1, dtype=torch.int64)
    return GraphLoader(store, graph_ids, 1, pe=pe).collate(graph_ids)


def train_link_epoch(model: torch.nn.Module, graph: GraphBatch, train_pos: torch.Tensor,
                     optimizer: torch.optim.Optimizer, loss_fn: Loss, batch_size: int, generator: torch.Generator,
                     flip_pe: bool = True) -> float:
    """One epoch (module doc); returns the loss averaged over the positives."""
    model.train()
    order = torch.randperm(train_pos.shape[1], generator=generator).to(train_pos.device)
    total, count = 0.0, 0
    for start in range(0, order.numel(), batch_size):
        pos = train_pos.index_select(1, order[start:start + batch_size])
        batch = graph
        if flip_pe and graph.pe is not None:
            batch = replace(batch, pe=random_sign_flip(graph.pe))
        neg = torch.randint(0, graph.num_nodes, pos.shape).to(pos.device)  # global CPU RNG: device-independent
        y = torch.cat([torch.ones(pos.shape[1], device=pos.device), torch.zeros(neg.shape[1], device=pos.device)])
        batch = replace(batch, pairs=torch.cat([pos, neg], dim=1), y=y)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(batch), batch)
        loss.backward()
        optimizer.step()
        total += float(loss.detach()) * pos.shape[1]
        count += pos.shape[1]
    return total / max(count, 1)


@torch.no_grad()
def evaluate_link(model: torch.nn.Module, graph: GraphBatch, parts: dict[str, PartPairs], batch_size: int,
                  loss_fn: Loss) -> dict[str, dict[str, float]]:
    """``{part: {"loss", "hits@10", "hits@50", "hits@100"}}`` after one full-graph forward in eval mode."""
    model.eval()
    rep = model.encode(graph)

    def scores(pairs: torch.Tensor) -> torch.Tensor:
        chunks = [model.head(rep, replace(graph, pairs=pairs[:, i:i + batch_size]))
                  for i in range(0, pairs.shape[1], batch_size)]
        return torch.cat(chunks) if chunks else torch.zeros(0, device=pairs.device)

    logits = {part: (scores(p.pos), scores(p.neg)) for part, p in parts.items()}
    logits["train"] = (logits["train"][0], logits["val"][1])  # train positives vs the scored val negatives
    out = {}
    for part, (pos, neg) in logits.items():
        y = torch.cat([torch.ones_like(pos), torch.zeros_like(neg)])
        loss = loss_fn(torch.cat([pos, neg]), replace(graph, y=y))
        prob_pos, prob_neg = torch.sigmoid(pos).cpu(), torch.sigmoid(neg).cpu()  # the original ranks σ(logit)
        out[part] = {"loss": float(loss), **{f"hits@{k}": hits_at_k(prob_pos, prob_neg, k) for k in HITS_K}}
    return out


def train_link_run(*, dataset_dir: str | os.PathLike, splits_path: str | os.PathLike, fold: int, config: dict,
                   out_dir: str | os.PathLike, pe_path: str | os.PathLike | None = None, device: str = "auto",
                   threads: int | None = None, label: str | None = None,
                   time_limit_hours: float | None = None) -> dict:
    """Train one link-prediction run and write its outputs; returns the contents of ``metrics.json``.

    Arguments as :func:`gnnbench.training.last_epoch.train_run`. Raises :class:`~gnnbench.training.preemption.Preempted`
    on SIGTERM, naming the checkpoint a rerun resumes from.
    """
    return stoppable(lambda guard: _train(
        guard, dataset_dir=dataset_dir, splits_path=splits_path, fold=fold, config=config, out_dir=out_dir,
        pe_path=pe_path, device=device, threads=threads, label=label, time_limit_hours=time_limit_hours),
        lambda: resume_note(Path(out_dir) / CHECKPOINT_FILE))


def _train(guard: StopOnSignal, *, dataset_dir, splits_path, fold, config, out_dir, pe_path, device, threads, label,
           time_limit_hours) -> dict:
    setup_start = time.perf_counter()
    cfg = coerce_all(config, "config")
    missing = [k for k in TRAIN_KEYS if k not in cfg]
    if missing:
        raise ConfigError(f"training needs config key(s) {', '.join(missing)}; add them (or use a preset)")
    dataset_dir, out_dir = Path(dataset_dir), Path(out_dir)

    meta, columns = read_dataset(dataset_dir)
    if meta.task != "link_prediction":
        raise ConfigError(f"dataset {meta.name} is a {meta.task} dataset, not link prediction; train it with "
                          "gnnbench.training.last_epoch.train_run")
    pairs = read_pairs(dataset_dir, meta)
    splits = read_splits(splits_path, meta)
    if splits.level != "pair":
        raise DataError(f"split file {splits_path} indexes {splits.level}s, but link-prediction dataset {meta.name} "
                        "is split by its evaluation pairs; delete it and rerun snakemake (scheme given)")
    split_checksum = sha256_json(splits.folds)
    parts = part_pairs(pairs, {k: torch.from_numpy(v) for k, v in splits.fold(fold).items()})
    store = model_dtypes(GraphStore.from_columns(columns))
    num_nodes = int(store.num_nodes.sum())
    if cfg.get("num_embs") is not None and cfg["num_embs"] < num_nodes:
        raise ConfigError(f"num_embs is {cfg['num_embs']} but dataset {meta.name} has {num_nodes} nodes, each of "
                          f"which needs an embedding; set num_embs to at least {num_nodes}")
    pe = read_run_pe(cfg, pe_path, store, meta)
    if threads:
        torch.set_num_threads(threads)
    dev = resolve_device(device)
    model, optimizer, scheduler, shuffle = build_training(cfg, meta, dev, scheduler_mode="max", store=store)
    num_params = count_parameters(model)
    graph = full_graph(store, pe).to(dev)
    parts = {part: p.to(dev) for part, p in parts.items()}
    loss_fn, batch_size = get_loss(meta.loss, cfg), cfg["batch_size"]
    key = sha256_json({"config": cfg, "dataset": meta.checksum, "pairs": meta.extra_files[PAIRS_FILE],
                       "splits": split_checksum, "fold": fold, "pe": None if pe_path is None else sha256_file(pe_path)})
    time_limit_s = (cfg["max_time"] if time_limit_hours is None else time_limit_hours) * 3600

    setup_s = time.perf_counter() - setup_start

    def step(state: RunState) -> dict:
        lr = optimizer.param_groups[0]["lr"]
        train_loss = train_link_epoch(model, graph, parts["train"].pos, optimizer, loss_fn, batch_size, shuffle)
        scores = _unscored(math.nan)  # diverged: not evaluated (the run stops)
        if math.isfinite(train_loss):
            scores = evaluate_link(model, graph, parts, batch_size, loss_fn)
        return _history_row(state.epoch, lr, train_loss, scores)

    def log_row(r: dict) -> None:
        log.info("epoch %d  lr %.2e  train loss %.4f  Hits@50 train %.4f  val %.4f  test %.4f  %.2fs", r["epoch"],
                 r["lr"], r["train_loss"], r["train_metric"], r["val_metric"], r["test_metric"], r["seconds"])

    run, fitted, rules, checkpoint = p1_fit(guard, out_dir, key, model, optimizer, scheduler, shuffle, "val_metric",
                                            cfg, time_limit_s, step, log_row)
    state = run.states[0]
    stop_reason = state.stop_reason

    final_start = time.perf_counter()
    final = _unscored(None) if state.diverged else evaluate_link(model, graph, parts, batch_size, loss_fn)
    final_s = time.perf_counter() - final_start
    total_s = setup_s + state.elapsed + final_s
    results = {
        "dataset": meta.name, "label": label or cfg["model"], "model": cfg["model"], "seed": cfg["seed"],
        "fold": fold, "task": meta.task, "metric": f"hits@{HEADLINE_K}", "higher_is_better": True,
        **{part: {"metric": scores[f"hits@{HEADLINE_K}"], **scores} for part, scores in final.items()},
        "num_params": num_params, "epochs": state.epoch, "stop_reason": stop_reason, **state.status(),
        "seconds_per_epoch": state.elapsed / max(state.epoch, 1), "total_seconds": total_s,
        "total_hours": total_s / 3600,
        "time_limit_hours": time_limit_s / 3600, "config": cfg, "device": device_name(dev),
        "threads": torch.get_num_threads(), "versions": package_versions(),
        "data": {"dataset_checksum": meta.checksum, "pairs_checksum": meta.extra_files[PAIRS_FILE],
                 "split_scheme": splits.scheme, "split_checksum": split_checksum,
                 "pe_file": None if pe_path is None else str(pe_path)},
    }
    write_outputs(guard, checkpoint, payload(run, fitted, rules, shuffle), out_dir, results, state.history,
                  HISTORY_SCHEMA)
    return results


def _unscored(value) -> dict[str, dict]:
    """Every part's loss and Hits set to ``value`` (NaN in a history row, None in the metrics of a diverged run)."""
    return {part: {"loss": value, **{f"hits@{k}": value for k in HITS_K}} for part in ("train", "val", "test")}


def _history_row(epoch: int, lr: float, train_loss: float, scores: dict) -> dict:
    row = {"epoch": epoch, "lr": lr, "train_loss": train_loss, "train_metric": scores["train"]["hits@50"],
           "val_loss": scores["val"]["loss"], "val_metric": scores["val"]["hits@50"],
           "test_loss": scores["test"]["loss"], "test_metric": scores["test"]["hits@50"]}
    row.update({f"{part}_hits@{k}": scores[part][f"hits@{k}"] for part in ("train", "val", "test") for k in (10, 100)})
    return row


HISTORY_SCHEMA = pa.schema([("epoch", pa.int64())] + [
    (name, pa.float64()) for name in ("lr", "train_loss", "train_metric", "val_loss", "val_metric", "test_loss",
                                      "test_metric", "seconds")] + [
    (f"{part}_hits@{k}", pa.float64()) for part in ("train", "val", "test") for k in (10, 100)])
