"""Protocol "pitfalls" — Shchur et al., "Pitfalls of Graph Neural Network Evaluation" (arXiv:1811.05868).

Transductive node classification on one graph. Splits: ``random_per_class`` — 100 random splits of 20 training
and 30 validation nodes per class, the rest test (the same splits for every model); ``random_sizes`` and
``given`` (the Planetoid public split) for the paper's single-split comparison. Every model trains 20 random
initialisations per split, full batch, with the same procedure for every model (Shchur et al.; the released
code, shchur/gnn-benchmark ``gnnbench/train.py`` and ``config/train.conf.yaml``): Adam (TF1's update), the model's
L2 terms in the loss, at most ``num_epochs`` (100,000) epochs, early stopping when the total validation loss
(data + L2) has not improved for ``early_stopping_tolerance`` (50) epochs, then the weights of the best
validation-loss epoch are restored and scored. Label propagation runs its propagation steps under its own rule
(``gat_tol``) with one run per split (it has no weights). Models: the paper's two-layer networks
(:func:`gnnbench.models.stacked.build_stacked_model`) with the published configs
(``gnnbench/config/presets/pitfalls.yaml``).

What one job is. The protocol is 2,000 runs per model and dataset; one process per run would spend most of its
time starting Python and importing torch. A job (``results/runs/{dataset}/{model}/chunk{c}/``) trains
``splits_per_job`` consecutive splits of one model, and within a split all initialisations **at once** as one
stacked model (:mod:`gnnbench.training.initialisations`): one forward/backward pass per epoch for the whole stack,
each initialisation with its own early stopping, finished ones dropped from the stack. A stack holds the
initialisations of one split only: several splits in one stack would share the dropout stream (a split's results
would then depend on its stack mates, not only on its seed) and need the union of their receptive fields; and on a
CPU a member's cost per epoch does not fall with larger stacks (``docs/performance.md``), so the only saving would
be the per-epoch fixed cost. A model without a hand-written stacked form (another zoo's, a user's) is stacked by
torch.func (:mod:`gnnbench.training.functional_stack`), or, where it cannot be vmapped, its initialisations train
one after another in the same process. Seeds: initialisation i of split k draws its weights from
``SeedSequence(seed, spawn_key=(k, i))`` and the split's dropout masks from ``SeedSequence(seed, spawn_key=(k,))``,
so results do not depend on how splits are grouped into jobs.
A job writes ``runs.parquet`` (one row per split × initialisation), ``history.parquet`` (per epoch and run: train
and validation loss, validation accuracy) and ``metrics.json`` (config, timing, versions; ``test_accuracy_mean`` over
the runs that did not diverge — null if none — and ``diverged`` their count), and checkpoints between
epochs (at most every ``CHECKPOINT_SECONDS``) and after every split; a killed job resumes to the same results.
An initialisation whose training or validation loss becomes NaN or infinite stops at that epoch and its row says
so: ``status`` "diverged" (else "completed"), ``diverged_epoch``, ``stop_reason`` "diverged" and NaN scores
(:mod:`gnnbench.training.initialisations`); the other initialisations of its stack train on unaffected, and the
tables count diverged runs instead of averaging them (:mod:`gnnbench.reporting.pitfalls`).

Reports: per dataset a table (mean ± std of test accuracy over all completed runs, sample std as the paper's
script) and a box plot; per suite the Table-1 matrix with relative accuracy and average rank (Table 2a) over the
random-split benchmarks, and, for benchmarks that name ``compare_with``, the fixed-split versus random-splits ranking
(Table 2b).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from gnnbench import paths
from gnnbench.config.presets import run_config
from gnnbench.data.meta import read_meta
from gnnbench.errors import ConfigError, DataError, GnnbenchError
from gnnbench.io import atomic_path, sha256_json, write_json
from gnnbench.models.registry import SHCHUR2018
from gnnbench.protocols.base import Benchmark, ModelSpec, Protocol, model_entries
from gnnbench.splits import NODE_SCHEMES

log = logging.getLogger(__name__)

NAME = "pitfalls"
RUN_DIR = paths.CHUNK_DIR
RUN_OUTPUTS = ("runs.parquet", "history.parquet", "metrics.json")
RECORD_JOB = "chunk{chunk}"  # a job's run-record file: paths.RECORD_FILE with this job name
TABLE_FILE = paths.DATASET_TABLE
PLOT_FILE = paths.BOX_PLOT
SUITE_TABLE_NAME, RANKING_TABLE_NAME = NAME, f"{NAME}_split_ranking"  # the suite-wide tables
SUITE_TABLE = paths.TABLE_FILE.replace("{table}", SUITE_TABLE_NAME)
RANKING_TABLE = paths.TABLE_FILE.replace("{table}", RANKING_TABLE_NAME)
TABLE_FORMATS = paths.TABLE_FORMATS
PLOT_FORMATS = paths.PLOT_FORMATS
CHECKPOINT_FILE = "checkpoint.pt"
CHECKPOINT_SECONDS = 30.0
# config/train.conf.yaml of gnn-benchmark: the training procedure shared by every model
TRAINING_DEFAULTS = {"num_epochs": 100_000, "early_stopping_criterion": "gnnbench", "early_stopping_tolerance": 50,
                     "improvement_tolerance": 0.0}
# the training keys of a pitfalls run config (train.conf.yaml's, and the per-model learning rate and L2 strength)
TRAINING_KEYS: dict[str, type] = {
    "learning_rate": float, "weight_decay": float, "num_epochs": int, "early_stopping_criterion": str,
    "early_stopping_tolerance": int, "improvement_tolerance": float, "num_training_runs": int}
# a model of another paper's zoo: train.conf.yaml's procedure with the learning rate and L2 strength of the paper's
# GCN (Table 4: lr 0.01, λ 0.001), the protocol's reference model
FOREIGN_TRAINING_DEFAULTS = {**TRAINING_DEFAULTS, "learning_rate": 0.01, "weight_decay": 0.001}
DEFAULT_INITS, DEFAULT_SPLITS_PER_JOB = 20, 10
PROPAGATION_MODELS = ("LabelProp",)


@dataclass
class PitfallsBenchmark(Benchmark):
    """A pitfalls benchmark: ``inits`` initialisations on each of ``num_splits`` node splits, seeded from ``seed``,
    trained in jobs (chunks) of ``splits_per_job`` consecutive splits per model; ``compare_with`` names the
    random-splits benchmark a fixed-split benchmark is ranked against (Shchur et al., Table 2b)."""

    inits: int = DEFAULT_INITS
    seed: int = 0
    splits_per_job: int = DEFAULT_SPLITS_PER_JOB
    num_splits: int = 1
    scheme: str = "random_per_class"
    compare_with: str | None = None

    @property
    def num_chunks(self) -> int:
        """Jobs per model: ``num_splits`` in groups of ``splits_per_job`` (the last one may be smaller)."""
        return -(-self.num_splits // self.splits_per_job)

    def chunk_splits(self, chunk: int) -> list[int]:
        """The split indices job ``chunk`` trains."""
        return list(range(chunk * self.splits_per_job, min((chunk + 1) * self.splits_per_job, self.num_splits)))

    def model_inits(self, model: str) -> int:
        """Initialisations per split: the benchmark's, unless the model config fixes them (label propagation: 1)."""
        return self.models[model].config.get("num_training_runs", self.inits)

    def run_dirs(self, model: str | None = None) -> list[str]:
        """The output folder of every job (``.../chunk{c}``), of one model or (None) of all."""
        return [RUN_DIR.format(dataset=self.dataset, model=label, chunk=c)
                for label in self.models if model in (None, label) for c in range(self.num_chunks)]

    def run_files(self) -> list[str]:
        """The ``runs.parquet`` of every job (one row per split × initialisation)."""
        return [f"{d}/runs.parquet" for d in self.run_dirs()]

    def table_files(self) -> list[str]:
        """The dataset's table (CSV, Markdown, Parquet) and its box plot (PNG, SVG)."""
        return ([TABLE_FILE.format(dataset=self.dataset, ext=ext) for ext in TABLE_FORMATS]
                + [PLOT_FILE.format(dataset=self.dataset, ext=ext) for ext in PLOT_FORMATS])

    def record_files(self) -> list[str]:
        """One run-record file per job (job name ``chunk{c}``), holding a record per split × initialisation."""
        return [paths.RECORD_FILE.format(protocol=NAME, dataset=self.dataset, model=label,
                                         job=RECORD_JOB.format(chunk=c))
                for label in self.models for c in range(self.num_chunks)]


class Pitfalls(Protocol):
    """The pitfalls protocol (module docstring; ``docs/protocols/pitfalls.md``)."""

    name = NAME
    title = "Pitfalls of Graph Neural Network Evaluation (Shchur et al.)"
    split_schemes = NODE_SCHEMES
    default_variant = SHCHUR2018  # the paper's two-layer networks (stacked: R initialisations at once)
    training_keys = TRAINING_KEYS
    training_defaults = FOREIGN_TRAINING_DEFAULTS
    significance_units = "random splits (mean over inits)"
    significance_unit_columns = ("split",)  # the paper's per-split score s(m, d, k): the mean over the inits

    def add_train_arguments(self, parser) -> None:
        """``--fold`` (the splits to train, several allowed), ``--inits`` (initialisations per split) and
        ``--init-ids`` (train only these initialisations)."""
        parser.add_argument("--fold", type=int, nargs="+", default=[0], help="the splits to train (default 0)")
        parser.add_argument("--inits", type=int, default=DEFAULT_INITS, help="initialisations per split")
        parser.add_argument("--init-ids", type=int, nargs="+", help="train only these initialisations")

    def train_command(self, args, overrides: dict) -> str:
        """One job (:func:`run_chunk`): every initialisation of the preset on the given splits; returns the number
        of runs, how many diverged and their mean test accuracy."""
        config = run_config(args.preset, overrides, where="--set", preset_where="--preset", protocol=self.name)
        check_model(config, read_meta(args.dataset), "--preset")  # one line for a model that cannot run here
        metrics = run_chunk(dataset_dir=args.dataset, splits_path=args.splits, splits=args.fold, config=config,
                            inits=args.inits, seed=args.seed or 0, out_dir=args.out, device=args.device,
                            threads=args.threads, label=args.label, init_ids=args.init_ids,
                            records_out=os.path.join(args.records, "chunk.parquet"))
        mean, diverged = metrics["test_accuracy_mean"], metrics.get("diverged", 0)
        return (f"{metrics['runs']} runs" + (f" ({diverged} diverged: NaN or infinite loss)" if diverged else "")
                + ", mean test accuracy: " + ("none (every run diverged)" if mean is None else f"{mean:.2f}"))

    def aggregate_command(self, files: list[str], out: str) -> None:
        """The dataset table and box plot of the given ``runs.parquet`` files (:func:`dataset_report`), without the
        paper's numbers."""
        dataset_report(files, f"{out}.csv", f"{out}.md", f"{out}.parquet", f"{out}.png", f"{out}.svg")

    def table_caption(self, table: str, dataset: str | None) -> str:
        """Captions of the suite summary (Shchur et al., Tables 1 and 2a), the split ranking (Table 2b) and the
        per-dataset tables."""
        if table == SUITE_TABLE_NAME:
            return ("Pitfalls summary over all random-split benchmarks: test accuracy per model and dataset (mean ± "
                    "std over all runs), relative accuracy (score over the best model's on each split, averaged) "
                    "and average rank (1 = best).")
        if table == RANKING_TABLE_NAME:
            return ("Pitfalls: the ranking of the models on one fixed split against their ranking on random splits, "
                    "with Kendall's tau between the two rankings.")
        return (f"Table of **{table}** (protocol {self.name}): one row per model — test accuracy mean ± std (sample "
                "std) over all runs (splits × initialisations), median and quartiles, minimum and maximum, "
                "validation and train accuracy, epochs.")

    def default_split(self, dataset) -> dict:
        """``random_per_class``: the paper's random splits (20 training and 30 validation nodes per class)."""
        return {"scheme": "random_per_class"}

    def check_dataset(self, dataset, where: str) -> None:
        """Refuse anything but node classification on one graph."""
        meta = dataset.meta
        if not (meta.task == "node_classification" and meta.num_graphs == 1):
            raise ConfigError(f"{where}.protocol: protocol {self.name} needs one graph with node labels "
                              f"(transductive node classification), but dataset {dataset.name} is a {meta.task} "
                              f"dataset of {meta.num_graphs} graphs; use protocol benchmarking-gnns")

    def benchmark(self, dataset, entry: dict, where: str) -> PitfallsBenchmark:
        """``inits``, ``seed``, ``splits_per_job`` and ``compare_with`` of the block; every split of the dataset's
        split; per model the published config (preset with ``set`` overrides) over the protocol's training defaults,
        checked to build on the dataset. Seeds, folds and parameter budgets are refused."""
        for key in ("seeds", "folds", "seeds_per_job"):
            if key in entry:
                raise ConfigError(f"{where}.{key}: not a setting of protocol {self.name}; it trains `inits` "
                                  f"initialisations (seeded from `seed`) on every split of the dataset's split")
        benchmark = PitfallsBenchmark(
            dataset.name, self.name, inits=entry.get("inits", DEFAULT_INITS), seed=entry.get("seed", 0),
            splits_per_job=entry.get("splits_per_job", DEFAULT_SPLITS_PER_JOB), num_splits=dataset.num_folds,
            scheme=dataset.split["scheme"], compare_with=entry.get("compare_with"))
        for label, model, own, model_where in model_entries(entry, where, self.name,
                                                            "uses the published two-layer configs"):
            config = {**TRAINING_DEFAULTS, **run_config(model.get("preset"), own, where=model_where,
                                                        protocol=self.name)}
            check_model(config, dataset.meta, model_where)
            benchmark.models[label] = ModelSpec(label, model.get("preset"), config)
        return benchmark

    def check_suite(self, benchmarks: list[Benchmark], all_benchmarks: dict[str, Benchmark]) -> None:
        """A ``compare_with`` must name a random-splits (``random_per_class``) pitfalls benchmark of the suite, and
        the comparing benchmark must be a single fixed split."""
        for b in benchmarks:
            if b.compare_with is None:
                continue
            other = all_benchmarks.get(b.compare_with)
            where = f"benchmarks.{b.dataset}.compare_with"
            if other is None or other.protocol != self.name:
                raise ConfigError(f"{where}: {b.compare_with!r} is not a {self.name} benchmark of this suite; name "
                                  "the random-splits benchmark this split is ranked against")
            if other.scheme != "random_per_class" or b.scheme == "random_per_class":
                raise ConfigError(f"{where}: compare a single fixed split (given or random_sizes) with a "
                                  f"random_per_class benchmark; {b.dataset} is split by {b.scheme} and "
                                  f"{other.dataset} by {other.scheme}")

    def suite_files(self, benchmarks: list[Benchmark]) -> list[str]:
        """The suite summary table when a benchmark uses random splits; the split-ranking table when one names
        ``compare_with``."""
        files = []
        if any(b.scheme == "random_per_class" for b in benchmarks):
            files += [SUITE_TABLE.format(ext=ext) for ext in TABLE_FORMATS]
        if any(b.compare_with for b in benchmarks):
            files += [RANKING_TABLE.format(ext=ext) for ext in TABLE_FORMATS]
        return files


def summary_inputs(benchmarks: list[PitfallsBenchmark]) -> list[str]:
    """Runs behind the suite table: every random-splits benchmark."""
    return [f for b in benchmarks if b.scheme == "random_per_class" for f in b.run_files()]


def ranking_pairs(benchmarks: dict[str, Benchmark]) -> list[tuple[str, str]]:
    """(fixed-split benchmark, random-splits benchmark) pairs of a suite, in suite order."""
    return [(b.dataset, b.compare_with) for b in benchmarks.values()
            if isinstance(b, PitfallsBenchmark) and b.compare_with]


# ---------------------------------------------------------------------------------------------- models and data


def stand_in_graph(meta):
    """A two-node graph with the dataset's feature width and classes: enough to build (and count) a model."""
    from gnnbench.models.stacked import NodeGraph

    width = meta.node_features.size if meta.node_features is not None else 1
    return NodeGraph(2, torch.tensor([[0, 1], [1, 0]]), torch.zeros(2, width), max(meta.num_outputs, 1))


def check_model(config: dict, meta, where: str) -> None:
    """Refuse a model that cannot run on the dataset in one line (the registry's rules: another zoo's model must do
    node classification on one graph; no positional encodings here), then build it once on a two-node stand-in of
    the dataset's sizes: unknown models and keys fail here."""
    from gnnbench.models.plugins import located
    from gnnbench.models.registry import check_buildable

    try:
        check_buildable(config, meta, default_variant=SHCHUR2018, positional_encodings=False)
    except GnnbenchError as exc:
        raise located(where, exc) from None


def load_node_graph(dataset_dir: str | os.PathLike, device: torch.device | str = "cpu"):
    """(meta, NodeGraph, node labels (-1 = unlabelled)) of a transductive dataset folder."""
    from gnnbench.data.meta import read_dataset
    from gnnbench.models.stacked import NodeGraph

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
    from gnnbench.models.registry import ModelData, model_info
    from gnnbench.models.registry import num_parameters as count

    info = model_info(config, SHCHUR2018)
    if info.kind == "propagation":
        return 0
    if not info.has_stacked:
        if meta is None:
            raise ConfigError(f"model {info.family} ({info.variant}): counting its parameters needs the dataset's meta")
        return count(config, ModelData(meta, graph=graph), default_variant=SHCHUR2018)
    from gnnbench.models.stacked import build_stacked_model, count_stacked_parameters

    return count_stacked_parameters(build_stacked_model(config, graph, [0]))


def init_seed(seed: int, split: int, init: int) -> int:
    """Seed of initialisation ``init`` on split ``split`` (independent of how splits are grouped into jobs)."""
    return int(np.random.SeedSequence(seed, spawn_key=(split, init)).generate_state(1)[0])


def dropout_seed(seed: int, split: int) -> int:
    """Seed of the dropout masks on split ``split``, shared by its initialisations (independent of how splits are
    grouped into jobs)."""
    return int(np.random.SeedSequence(seed, spawn_key=(split,)).generate_state(1)[0])


def has_stacked_form(config: dict) -> bool:
    """Whether the config's model has a stacked form (R initialisations as one model; the registry's answer)."""
    try:
        from gnnbench.models.registry import model_info
    except ImportError:  # every model of this protocol's own zoo has one
        return True
    return model_info(config, "shchur2018").has_stacked


def whole_graph(dataset_dir: str | os.PathLike, device: torch.device | str = "cpu"):
    """(build, batch) for a model without a stacked form: ``build()`` builds it for the dataset (weights from torch's
    global generator) and ``batch`` is the one graph as a batch on ``device`` (what its forward pass sees)."""
    from gnnbench.data.batching import GraphLoader, model_dtypes
    from gnnbench.data.meta import read_dataset
    from gnnbench.data.store import GraphStore
    from gnnbench.models.registry import ModelData, build_model

    meta, columns = read_dataset(dataset_dir)
    store = model_dtypes(GraphStore.from_columns(columns))
    first = torch.zeros(1, dtype=torch.int64)
    batch = GraphLoader(store, first, 1).collate(first).to(device)

    def build(config: dict) -> torch.nn.Module:
        return build_model(config, ModelData(meta, store=store), default_variant="shchur2018").to(device)

    return build, batch


def make_trainer(config: dict, graph, labels: torch.Tensor, parts: dict[str, torch.Tensor], seed: int, split: int,
                 init_ids: list[int], whole=None):
    """The trainer of one split, seeded for ``split``: label propagation; for a model with a hand-written stacked form
    (Shchur's zoo) that stacked model of ``init_ids``; for any other model (another zoo's, a user's) its
    initialisations stacked by torch.func on ``whole`` (:func:`whole_graph`), or, where the model cannot be
    vmapped, trained one after another in this process
    (:func:`~gnnbench.training.functional_stack.stacked_or_sequential`)."""
    from gnnbench.training.initialisations import PropagationTrainer, StackedTrainer

    rule = {"criterion": config["early_stopping_criterion"], "patience": config["early_stopping_tolerance"],
            "max_epochs": config["num_epochs"], "tolerance": config["improvement_tolerance"]}
    torch.manual_seed(dropout_seed(seed, split))
    if config["model"] in PROPAGATION_MODELS:
        from gnnbench.models.labelprop import LabelPropagation

        propagation = LabelPropagation(graph, labels, parts["train"], config.get("prop_type", "vanilla"),
                                       config.get("return_prob", 0.0))
        return PropagationTrainer(propagation, labels, parts, **rule)
    if not has_stacked_form(config):
        from gnnbench.training.functional_stack import stacked_or_sequential

        build, batch = whole
        name = f"model {config['model']}" + (f" ({config['variant']})" if config.get("variant") else "")
        return stacked_or_sequential(lambda: build(config), batch, labels, parts, name=name,
                                     learning_rate=config["learning_rate"],
                                     weight_decay=config.get("weight_decay", 0.0), init_ids=init_ids,
                                     seeds=[init_seed(seed, split, i) for i in init_ids],
                                     dropout_seed=dropout_seed(seed, split), **rule)
    from gnnbench.models.stacked import build_stacked_model

    model = build_stacked_model(config, graph, [init_seed(seed, split, i) for i in init_ids])
    return StackedTrainer(model, labels, parts, learning_rate=config["learning_rate"], init_ids=init_ids, **rule)


# ---------------------------------------------------------------------------------------------- one job


def run_chunk(*, dataset_dir: str | os.PathLike, splits_path: str | os.PathLike, splits: list[int], config: dict,
              inits: int, seed: int, out_dir: str | os.PathLike, device: str = "auto", threads: int | None = None,
              label: str | None = None, init_ids: list[int] | None = None,
              records_out: str | os.PathLike | None = None) -> dict:
    """Train every initialisation of ``config`` on the given splits and write the job's outputs (module docstring);
    with ``records_out`` also the job's run records (:mod:`gnnbench.records`).

    ``init_ids`` selects initialisations (default ``range(inits)``; one-run-per-process comparisons run one).
    Raises :class:`~gnnbench.training.preemption.Preempted` on SIGTERM, naming the checkpoint a rerun resumes from.
    """
    from gnnbench.training.engine import stoppable

    def job(guard) -> dict:
        metrics = _run_chunk(guard, dataset_dir, splits_path, splits, config, inits, seed, Path(out_dir), device,
                             threads, label, init_ids)
        if records_out is not None:
            from gnnbench.records import write_records

            with guard.deferred(raise_after=False):
                write_records(records_out, chunk_records(read_runs([Path(out_dir) / "runs.parquet"]), metrics))
        return metrics

    path = Path(out_dir) / CHECKPOINT_FILE
    return stoppable(job, lambda: f"checkpoint {path} holds the finished splits and epochs; run the same command "
                                  "again (Snakemake: rerun the job) to resume from it")


def _run_chunk(guard, dataset_dir, splits_path, split_ids, config, inits, seed, out_dir, device, threads, label,
               init_ids) -> dict:
    from gnnbench.allocator import keep_freed_memory
    from gnnbench.config.keys import coerce_all, protocol_types
    from gnnbench.splits import read_splits
    from gnnbench.training.engine import Checkpoint
    from gnnbench.training.initialisations import train_split
    from gnnbench.training.run import _device_name, package_versions, resolve_device

    keep_freed_memory()  # a step's temporaries reuse the pages of the step before (no result changes)
    start = time.perf_counter()
    cfg = {**TRAINING_DEFAULTS, **coerce_all(config, "config", protocol_types(Pitfalls, config))}
    if threads:
        torch.set_num_threads(threads)
    dev = resolve_device(device)
    meta, graph, labels = load_node_graph(dataset_dir, dev)
    splits = read_splits(splits_path, meta)
    if splits.level != "node":
        raise DataError(f"split file {splits_path} holds graph splits; protocol pitfalls needs node splits "
                        "(schemes random_per_class, random_sizes, given)")
    inits = cfg.get("num_training_runs", inits)
    init_ids = list(range(inits)) if init_ids is None else list(init_ids)
    if cfg["model"] in PROPAGATION_MODELS:
        init_ids = [0]  # deterministic: one run per split (the original's num_training_runs: 1)
    key = sha256_json({"config": cfg, "dataset": meta.checksum, "splits": sha256_json(splits.folds),
                       "split_ids": list(split_ids), "init_ids": init_ids, "seed": seed})
    checkpoint = Checkpoint(out_dir / CHECKPOINT_FILE, key, guard, every_s=CHECKPOINT_SECONDS)
    state = checkpoint.load() or {"done": [], "current": None}
    done: list[dict] = state["done"]  # per finished split: records, history, seconds
    whole = None if cfg["model"] in PROPAGATION_MODELS or has_stacked_form(cfg) else whole_graph(dataset_dir, dev)

    def save(current: dict | None, finished: bool = False) -> None:
        checkpoint.save({"done": done, "current": current}, finished)

    for split in split_ids:
        if any(d["split"] == split for d in done):
            continue
        parts = {p: torch.from_numpy(idx).to(dev) for p, idx in splits.fold(split).items()}
        trainer = make_trainer(cfg, graph, labels, parts, seed, split, init_ids, whole)
        current = state["current"]
        seconds = 0.0
        if current is not None and current["split"] == split:
            trainer.load_state_dict(current["trainer"])
            seconds = current["seconds"]
            log.info("resuming split %d from %s at epoch %d", split, checkpoint.path, trainer.epoch)
        elif not done:
            save(None)  # a stop before the first checkpoint leaves a resumable (empty) state
        split_start = time.perf_counter()

        def after_epoch(_state, split=split, trainer=trainer, seconds=seconds, split_start=split_start) -> None:
            if checkpoint.due():
                save({"split": split, "trainer": trainer.state_dict(),
                      "seconds": seconds + time.perf_counter() - split_start})

        result = train_split(trainer, after_epoch)
        seconds += time.perf_counter() - split_start
        done.append({"split": split, "records": result.records, "history": result.history, "seconds": seconds})
        state["current"] = None
        save(None)
        log.info("split %d: %d run(s)%s, mean test accuracy %s%%, %d epochs at most, %.1fs", split,
                 len(result.records), _diverged_note(result.records), _percent(_completed_mean(result.records)),
                 max(r["epochs"] for r in result.records), seconds)

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
        "device": _device_name(dev), "threads": torch.get_num_threads(), "versions": package_versions(),
        "data": {"dataset_checksum": meta.checksum, "split_scheme": splits.scheme,
                 "split_checksum": sha256_json(splits.folds)},
    }
    with guard.deferred(raise_after=False):  # the job is complete: a stop signal now lets the outputs finish
        save(None, finished=True)
        with atomic_path(out_dir / "history.parquet") as tmp:
            pq.write_table(pa.table(history), tmp)
        with atomic_path(out_dir / "runs.parquet") as tmp:
            pq.write_table(pa.Table.from_pylist(rows), tmp)
        write_json(out_dir / "metrics.json", metrics)
    return metrics


def chunk_records(runs, metrics: dict) -> list[dict]:
    """The run records (:mod:`gnnbench.records`) of one job: its ``runs.parquet`` rows (a DataFrame) with the
    job's config, parameter count, device and versions from its ``metrics.json`` content; the best validation
    epoch is the scored one."""
    from gnnbench.records import record

    out = []
    for r in runs.to_dict("records"):
        diverged = r.get("status") == "diverged"
        out.append(record(
            protocol=NAME, default_variant=Pitfalls.default_variant, dataset=r["dataset"], model=r["model"],
            architecture=r["architecture"],
            config=metrics["config"], split=r["split"], split_scheme=metrics["data"]["split_scheme"], seed=r["seed"],
            init=r["init"], metric="accuracy",
            higher_is_better=True, **{f"{part}_{what}": r.get(f"{part}_{key}") for part in ("train", "val", "test")
                                      for what, key in (("score", "accuracy"), ("loss", "loss"))},
            epochs=r["epochs"], scored_epoch=None if diverged else r.get("best_epoch"), stop_reason=r["stop_reason"],
            status=r.get("status", "completed"), diverged_epoch=_or_none(r.get("diverged_epoch")),
            num_params=metrics["num_params"], seconds=r["seconds"], device=metrics["device"],
            versions=metrics["versions"]))
    return out


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


# ---------------------------------------------------------------------------------------------- reports


def read_runs(files: list[str | os.PathLike]):
    """One DataFrame of the runs in ``files`` (``runs.parquet`` of jobs), in the given order."""
    from gnnbench.records import read_tables

    if not files:
        raise DataError("no runs to aggregate; check the benchmark's models in the config")
    return read_tables(files, "runs")


def dataset_report(runs_files: list[str | os.PathLike], csv, markdown, parquet, png, svg, dataset_dir=None,
                   split: dict | None = None, presets: dict[str, str | None] | None = None) -> None:
    """Per-dataset table (mean ± std over all runs per model) and box plot. With the dataset's folder (its
    meta.json) and split config also the paper's numbers beside ours (the run configs are read from the jobs'
    ``metrics.json`` beside their ``runs.parquet``; ``presets``: label → the suite's preset)."""
    from gnnbench.reporting import pitfalls as report

    runs = read_runs(runs_files)
    dataset = runs["dataset"].iloc[0]
    table = report.dataset_table(runs)
    if dataset_dir is not None:
        from gnnbench.data.meta import read_meta
        from gnnbench.io import read_json

        configs = {}
        for path in runs_files:
            metrics = read_json(Path(path).parent / "metrics.json", "job metrics file")
            configs.setdefault(metrics["label"], metrics["config"])
        table = report.with_paper(table, read_meta(dataset_dir), split or {}, configs, presets, TRAINING_DEFAULTS)
    report.write_table(table, f"## {dataset}\n\n" + report.dataset_markdown(table), csv, markdown, parquet)
    report.box_plot(runs, f"{dataset}: test accuracy of every run", png, svg)


def suite_report(runs_files: list[str | os.PathLike], csv, markdown, parquet) -> None:
    """Table 1 matrix with relative accuracy and average rank (Table 2a) over the random-split benchmarks."""
    from gnnbench.reporting import pitfalls as report

    table = report.summary_table(read_runs(runs_files))
    report.write_table(table, report.summary_markdown(table), csv, markdown, parquet)


def ranking_report(pairs: list[tuple[str, list, str, list]], csv, markdown, parquet) -> None:
    """Fixed split versus random splits: the two rankings of the models side by side (Table 2b)."""
    from gnnbench.reporting import pitfalls as report

    table = report.split_ranking_table([(fixed, read_runs(ff), rand, read_runs(rf)) for fixed, ff, rand, rf in pairs])
    report.write_table(table, report.split_ranking_markdown(table), csv, markdown, parquet)
