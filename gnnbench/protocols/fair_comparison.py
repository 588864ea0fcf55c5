"""Protocol "fair-comparison" — Errica et al., "A Fair Comparison of Graph Neural Networks for Graph
Classification" (ICLR 2020, arXiv:1912.09893; §3 and §5).

Risk assessment by an outer stratified k-fold cross-validation (10 folds); inside outer fold i, model selection
on its training part only: every configuration of the model's grid trains once on the inner-training graphs with
early stopping on the inner hold-out (≈10 %), and the configuration with the highest validation accuracy at its
early-stopping epoch wins (ties: the later configuration in grid order, the original's ``≤``); a configuration
whose run diverged (NaN or infinite loss: ``status`` "diverged", :mod:`gnnbench.training.holdout`) is never
chosen. A final run that diverges has no score: it is recorded (``status``, ``diverged_epoch``) and shown in the
tables, and the fold's score is the mean of its other final runs. The winner then
trains ``final_runs`` (3) times from scratch; each final run's score is the test accuracy at its early-stopping
epoch, the fold's score is their mean, and the reported value is mean ± population std over the folds. The test
fold is never seen by selection. Training procedure: :mod:`gnnbench.training.holdout`.

Splits are data: a split file whose fold i is ``{train: inner-train, val: inner hold-out, test: outer fold i}``
— the paper's released files (scheme ``published``) or gnnbench's own seeded ones in the same structure
(``stratified_kfold`` with 10 folds and ``val_fraction`` 0.1).

Decision (final runs' hold-out, ``final_holdout``; ``docs/protocols/fair-comparison.md``): the paper says each
final run holds out "a random fraction (10%)" of the outer training fold (Errica et al. §5); the released code
reuses the model-selection hold-out for all three (diningphil/gnn-comparison
``evaluation/risk_assessment/K_Fold_Assessment.py``, ``_risk_assessment_helper``). Default ``fresh``: final run r
of fold i draws its own stratified 10 % hold-out from the outer training fold (scikit-learn ``train_test_split``,
seeded per fold and run), as the paper describes; ``selection`` reproduces the released code path.

Grids are data: a preset's ``grid`` (key → values, Cartesian product in the written order, last key fastest) —
a model entry's ``grid`` replaces or adds dimensions, ``set`` fixes a value (and removes that dimension). Every
value is checked against the protocol's keys before anything runs.

The DAG (every step a cached file):

    inner/part{p}.parquet  (grid_per_job configurations of one outer fold, one process)
        → selection.json   (per outer fold: the chosen configuration and every candidate's validation scores)
        → final.parquet    (final_runs trainings of the chosen configuration)
        → tables           (per dataset: results/tables/{dataset}.*, per fold: results/tables/{dataset}_folds.*)

Every finished training is also kept as ``runs/{id}.json`` beside its job's output (id = hash of the config,
fold, seeds and data): a job rerun — after a grid point was added, or after it was killed — reuses them and
trains only what is missing, and a run interrupted mid-training resumes from its checkpoint (written at most
every ``CHECKPOINT_SECONDS``). ``selection.json`` carries a checksum of its content: a hand-edited file is refused.
Stacks (the benchmark's ``stack``, off by default): the grid points of a job that differ only in
:data:`MEMBER_KEYS` (learning rate and schedule, ``l2``, dropout, stopping rule, patience, epochs, time limit) — and
in the model's keys a stack can mix (GIN's ``train_eps``: ε frozen at 0 in members that do not learn it) — have one
*shape* and train as one wide stack (:class:`~gnnbench.training.stacked_holdout.MemberStack`): each member with its
own seed and initialisation (exactly its run alone's), its own settings, early stopping and scored epoch; the members
share the mini-batch order (the first member's stream) and the dropout stream, so with dropout a member's results are
those of its configuration on another batch order and other masks than its run alone (without dropout, the first
member's are its run alone's). Jobs are then made of whole shape groups (:meth:`FairComparisonBenchmark.parts`) and
the final runs of a fold (with ``final_holdout: selection``) train as one stack too. Where the model does not widen
the runs train one after another.

Shared trajectories (with ``stack``): configurations that differ only in :data:`OBSERVER_KEYS` (``early_stopping``,
``patience``, ``epochs``, ``time_limit_hours``: only the stopping rules read them; every grid of the paper has
``early_stopping: [accuracy, loss]``) take the same training steps, so they train as ONE trajectory
(:func:`trajectories`) observed by each configuration's own rules (:class:`~gnnbench.training.holdout.Observers`:
``Diverged``, ``Patience`` on its criterion, ``MaxEpochs``, ``TimeLimit``, in the order of a run alone); each is scored
at its own last improving epoch and stopped at its own epoch (its history ends there), and the trajectory trains
until all its observers have stopped — as a member of a wide stack, or as one ``train_holdout`` run where the model
does not widen (:func:`_train_observed`; DiffPool, ECC). To make each configuration's result exactly its run alone,
the seed of a configuration is then computed from the configuration without the observer keys: with ``stack`` the
seeds differ from those without it (the results differ by seed, as they already do by the stack's shared batch
order), and configurations that differ only in the stopping rule are the same training observed twice — exactly
what running them separately with those seeds gives. Each configuration still has its own row, record and result
file (id from the trajectory's id and its stopping settings); the selection and the tables are unchanged. The final
runs (one configuration) are not affected.

Seeds: configuration c of fold i trains with a seed from ``SeedSequence(seed, spawn_key=(i, c))`` (c from the
config's hash — with ``stack``, of the config without :data:`OBSERVER_KEYS` — so adding grid points changes no other
run; a model file counts by its name, not its folder: :func:`seed_key`); final run r from spawn key
``(i, 2**31 + r)``.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from gnnbench import paths
from gnnbench.config.keys import coerce, coerce_all, protocol_types
from gnnbench.config.presets import get_preset, preset_protocol, run_config
from gnnbench.data.meta import read_meta
from gnnbench.errors import ConfigError, DataError
from gnnbench.io import atomic_path, read_json, sha256_json, write_json
from gnnbench.models.registry import ERRICA2020
from gnnbench.protocols.base import Benchmark, ModelSpec, Protocol, model_entries

log = logging.getLogger(__name__)

NAME = "fair-comparison"
FOLD_DIR = paths.FOLD_DIR
INNER_FILE = paths.INNER_FILE
SELECTION_FILE = paths.SELECTION_FILE
FINAL_FILE = paths.FINAL_FILE
FINAL_HISTORY_FILE = paths.FINAL_HISTORY_FILE
INNER_RECORD_JOB, FINAL_RECORD_JOB = "fold{fold}_inner{part}", "fold{fold}_final"  # run-record files' job names
TABLE_FILE = paths.DATASET_TABLE
FOLDS_TABLE_FILE = paths.FOLDS_TABLE
TABLE_FORMATS = paths.TABLE_FORMATS
CHECKPOINT_SECONDS = 30.0
# training keys every run needs (the rest are the model's own, checked when it is built)
TRAINING_DEFAULTS = {"optimizer": "Adam", "scheduler": "none", "l2": 0.0, "gradient_clipping": 0.0,
                     "patience": 500, "early_stopping": "accuracy", "time_limit_hours": 72.0}
# the training keys of a fair-comparison run config (Errica's, renamed as the module docstring says)
TRAINING_KEY_TYPES: dict[str, type] = {
    "batch_size": int, "learning_rate": float, "l2": float, "optimizer": str, "scheduler": str,
    "scheduler_step_size": int, "scheduler_gamma": float, "gradient_clipping": float, "epochs": int,
    "early_stopping": str, "patience": int, "time_limit_hours": float}
# a model of another paper's zoo: the protocol's defaults with the values most of Errica's configs share (batch size
# 32, 1000 epochs) and learning rate 1e-3 (in the GraphSAGE and DiffPool grids); a suite's `grid` searches more
FOREIGN_TRAINING_DEFAULTS = {**TRAINING_DEFAULTS, "batch_size": 32, "learning_rate": 0.001, "epochs": 1000}
TRAINING_REQUIRED = ("batch_size", "learning_rate", "epochs")
# keys only the trainer reads: configurations differing in these alone build the same network
TRAINING_KEYS = (*TRAINING_DEFAULTS, *TRAINING_REQUIRED, "scheduler_step_size", "scheduler_gamma")
DEFAULT_FINAL_RUNS, DEFAULT_GRID_PER_JOB = 3, 8
# keys the members of one wide stack may differ in (module docstring, "Stacks"): the rest of a configuration is its
# shape key; the batch size, optimiser and clipping threshold are shared by a stack's members
MEMBER_KEYS = ("learning_rate", "l2", "dropout", "early_stopping", "patience", "scheduler", "scheduler_step_size",
               "scheduler_gamma", "epochs", "time_limit_hours")
# keys only the stopping rules read (gnnbench.training.holdout.OBSERVER_KEYS): with stacks, configurations differing in
# these alone share one training trajectory (module docstring, "Stacks")
OBSERVER_KEYS = ("early_stopping", "patience", "epochs", "time_limit_hours")
HOLDOUTS = ("fresh", "selection")
FINAL_VAL_FRACTION = 0.1  # the paper's "random fraction (10%)"
SELECTION_FORMAT = 1


@dataclass
class FairComparisonBenchmark(Benchmark):
    """A fair-comparison benchmark: per model its expanded grid (``grids``), model selection on each outer fold in
    ``folds`` in jobs (parts) of up to ``grid_per_job`` configurations, then ``final_runs`` final runs per fold."""

    folds: list[int] = field(default_factory=list)
    seed: int = 0
    final_runs: int = DEFAULT_FINAL_RUNS
    grid_per_job: int = DEFAULT_GRID_PER_JOB
    final_holdout: str = "fresh"
    stack: bool = False  # train a job's grid points of one shape (and the final runs) as one wide stack
    grids: dict[str, list[dict]] = field(default_factory=dict)  # model label -> expanded configs, grid order

    def parts(self, model: str) -> list[list[int]]:
        """Grid positions of every job (part) of a model: ``grid_per_job`` consecutive grid points; with ``stack``
        whole shape groups (:func:`stack_groups`) packed in grid order of their first point, up to ``grid_per_job``
        points a job (a larger group is one job of its own), so that a stack's members are trained by one job."""
        size = len(self.grids[model])
        if not self.stack:
            return [list(range(p, min(p + self.grid_per_job, size))) for p in range(0, size, self.grid_per_job)]
        parts: list[list[int]] = []
        for group in stack_groups(self.grids[model]):
            if parts and len(parts[-1]) + len(group) <= self.grid_per_job:
                parts[-1] += group
            else:
                parts.append(list(group))
        return parts

    def num_parts(self, model: str) -> int:
        """Model-selection jobs per outer fold of ``model``."""
        return len(self.parts(model))

    def part_configs(self, model: str, part: int) -> list[dict]:
        """The configurations one model-selection job (``part``) of ``model`` trains, in grid order."""
        return [self.grids[model][p] for p in self.part_positions(model, part)]

    def part_positions(self, model: str, part: int) -> list[int]:
        """Grid positions of a part's configurations (the selection's tie-break order)."""
        return self.parts(model)[part]

    def report_inputs(self) -> dict[str, dict[str, list[str]]]:
        """Per model, its selection files and final-run files in fold order: the input of
        :func:`dataset_report`."""
        return {m: {"selections": [SELECTION_FILE.format(dataset=self.dataset, model=m, fold=f) for f in self.folds],
                    "finals": [FINAL_FILE.format(dataset=self.dataset, model=m, fold=f) for f in self.folds]}
                for m in self.models}

    def inner_files(self, model: str, fold: int) -> list[str]:
        """The model-selection outputs (``inner/part{p}.parquet``) of ``model`` on outer fold ``fold``: what its
        selection reads."""
        return [INNER_FILE.format(dataset=self.dataset, model=model, fold=fold, part=p)
                for p in range(self.num_parts(model))]

    def selection_files(self) -> list[str]:
        """The ``selection.json`` of every model and outer fold."""
        return [SELECTION_FILE.format(dataset=self.dataset, model=m, fold=f) for m in self.models for f in self.folds]

    def run_files(self) -> list[str]:
        """The final-run files (``final.parquet``) of every model and outer fold."""
        return [FINAL_FILE.format(dataset=self.dataset, model=m, fold=f) for m in self.models for f in self.folds]

    def table_files(self) -> list[str]:
        """The dataset table and the per-fold table, each in CSV, Markdown and Parquet."""
        return ([TABLE_FILE.format(dataset=self.dataset, ext=ext) for ext in TABLE_FORMATS]
                + [FOLDS_TABLE_FILE.format(dataset=self.dataset, ext=ext) for ext in TABLE_FORMATS])

    def record_files(self) -> list[str]:
        """Run-record files of every job: per model and outer fold one per model-selection part
        (``fold{f}_inner{p}``) and one of the final runs (``fold{f}_final``)."""
        return [paths.RECORD_FILE.format(protocol=NAME, dataset=self.dataset, model=m, job=job)
                for m in self.models for f in self.folds
                for job in [INNER_RECORD_JOB.format(fold=f, part=p) for p in range(self.num_parts(m))]
                + [FINAL_RECORD_JOB.format(fold=f)]]

    def plot_kinds(self) -> list[str]:
        """Score bars: outer-fold test accuracy beside the selected configurations' validation accuracy."""
        return ["bars"]

    def significance_inputs(self) -> list[str]:
        """The final runs' record files (a fold's score is the mean of its final runs)."""
        return [paths.RECORD_FILE.format(protocol=NAME, dataset=self.dataset, model=m,
                                         job=FINAL_RECORD_JOB.format(fold=f)) for m in self.models for f in self.folds]


class FairComparison(Protocol):
    """The fair-comparison protocol (module docstring; ``docs/protocols/fair-comparison.md``)."""

    name = NAME
    title = "A Fair Comparison of Graph Neural Networks for Graph Classification (Errica et al.)"
    split_schemes = ("stratified_kfold", "published", "file")  # file: the user's own outer folds
    default_variant = ERRICA2020  # Errica's complete graph classifiers
    training_keys = TRAINING_KEY_TYPES
    training_defaults = FOREIGN_TRAINING_DEFAULTS
    selects_models = True  # a preset's grid is searched (other protocols need its dimensions fixed)
    significance_units = "outer folds (mean of the final runs)"
    significance_unit_columns, significance_stage = ("split",), "final"  # an outer fold: the mean of its final runs

    def add_train_arguments(self, parser) -> None:
        """``--fold`` (the outer fold), ``--final-runs``, ``--final-holdout`` and ``--stack``."""
        parser.add_argument("--fold", type=int, default=0, help="the outer fold (default 0)")
        parser.add_argument("--final-runs", type=int, default=DEFAULT_FINAL_RUNS,
                            help="final runs of the chosen config")
        parser.add_argument("--final-holdout", default="fresh", choices=HOLDOUTS,
                            help="early-stopping hold-out of the final runs")
        parser.add_argument("--stack", action="store_true",
                            help="train the grid points of one shape (and the final runs) as one wide stack")

    def train_command(self, args, overrides: dict) -> str:
        """One outer fold of the nested cross-validation: every grid point of the preset (``--set`` fixes values
        and removes their dimensions), the selection, the final runs — the workflow's files, under ``--out``."""
        if not args.preset and "model" not in overrides:
            raise ConfigError(f"--preset: protocol {self.name} starts from a grid; name a fair_* preset "
                              "(`gnnbench presets`), or a model with --set model=... (one configuration)")
        base, grid = model_grid({"preset": args.preset} if args.preset else {}, overrides, "--preset")
        configs = expand_grid(base, grid)
        check_configs(configs, read_meta(args.dataset), "--preset")  # one line for a model that cannot run here
        out, fold, records = Path(args.out), args.fold, Path(args.records)
        label = args.label or base["model"]
        common = {"dataset_dir": args.dataset, "splits_path": args.splits, "fold": fold, "seed": args.seed or 0,
                  "device": args.device, "threads": args.threads, "label": label}
        stack = bool(getattr(args, "stack", False))
        run_inner(configs=configs, positions=list(range(len(configs))), out=out / "inner" / "part0.parquet",
                  records_out=records / "inner.parquet", stack=stack, **common)
        chosen = select([out / "inner" / "part0.parquet"], out / "selection.json",
                        dataset=Path(args.dataset).name, model=label, fold=fold)["chosen"]
        run_final(selection_path=out / "selection.json", runs=args.final_runs, holdout=args.final_holdout,
                  out=out / "final.parquet", history_out=out / "final_history.parquet",
                  records_out=records / "final.parquet", stack=stack, **common)
        test = pq.read_table(out / "final.parquet").column("test_accuracy").to_pylist()
        return (f"fold {fold}: {len(configs)} configurations, chosen validation accuracy "
                f"{chosen['val_accuracy']:.2f}, test accuracy {sum(test) / len(test):.2f} (mean of {len(test)} "
                "final runs)")

    def table_caption(self, table: str, dataset: str | None) -> str:
        """Captions of the per-fold table (``{dataset}_folds``) and of the dataset table."""
        if dataset is not None and table == f"{dataset}_folds":
            what = ("per model and outer fold, the configuration selected on the inner hold-out, its validation "
                    "accuracy, and the test accuracies of its final runs.")
        else:
            what = ("one row per model — test accuracy mean ± std over the outer folds, the validation accuracy of "
                    "the selected configurations, training accuracy, median number of layers selected, grid size, "
                    "and the paper's number with the difference ours − paper.")
        return f"Table of **{table}** (protocol {self.name}): {what}"

    def figure_caption(self, kind: str, dataset: str) -> str:
        """The caption of the score bars (outer-fold test accuracy beside the selected configurations' validation
        accuracy, and why the latter overestimates); other figures get the generic caption."""
        if kind != "bars":
            return super().figure_caption(kind, dataset)
        return (f"Test accuracy of every model on **{dataset}** (protocol {self.name}), mean ± std (population std) "
                "over the outer folds of the nested cross-validation (blue), beside the mean validation accuracy of "
                "the configurations that model selection chose on the inner hold-out (orange); black diamonds, "
                "where present, are the paper's test accuracy ± std for the same dataset and model family. The "
                "validation bar is usually the higher one: it is the best of the grid on the data it was selected "
                "on, so it overestimates the test score — the reason the protocol reports the outer-fold test "
                "accuracy only.")

    def default_split(self, dataset) -> dict:
        """Stratified 10-fold cross-validation with a 10 % inner hold-out (Errica et al. §3), seed 0."""
        return {"scheme": "stratified_kfold", "folds": 10, "val_fraction": 0.1, "seed": 0}

    def check_dataset(self, dataset, where: str) -> None:
        """Refuse anything but graph classification with continuous node features (one-hot labels, attributes,
        constant or degree, as the paper's datasets have them)."""
        meta = dataset.meta
        if meta.task != "graph_classification":
            raise ConfigError(f"{where}.protocol: protocol {self.name} compares graph classifiers, but dataset "
                              f"{dataset.name} is a {meta.task} dataset; use protocol benchmarking-gnns")
        if meta.node_features is None or meta.node_features.kind != "continuous":
            raise ConfigError(f"{where}.protocol: protocol {self.name} needs continuous node features (one-hot "
                              f"labels, attributes, constant or degree); dataset {dataset.name} has "
                              f"{meta.node_features.kind if meta.node_features else 'none'}")

    def benchmark(self, dataset, entry: dict, where: str) -> FairComparisonBenchmark:
        """``folds`` (default: all outer folds), ``seed``, ``final_runs``, ``grid_per_job``, ``final_holdout`` and
        ``stack`` of the block; per model its grid (:func:`model_grid`, :func:`expand_grid`), every configuration
        checked before anything runs. Seeds, initialisations and parameter budgets are refused."""
        for key in ("seeds", "inits", "splits_per_job", "seeds_per_job", "compare_with"):
            if key in entry:
                raise ConfigError(f"{where}.{key}: not a setting of protocol {self.name}; it has folds, seed, "
                                  "final_runs, grid_per_job and final_holdout")
        num_folds = dataset.num_folds
        folds = entry.get("folds", list(range(num_folds)))
        bad = [f for f in folds if f >= num_folds]
        if bad:
            raise ConfigError(f"{where}.folds: fold {bad[0]} does not exist; the split of {dataset.name} has "
                              f"{num_folds} folds (0 .. {num_folds - 1})")
        benchmark = FairComparisonBenchmark(
            dataset.name, self.name, folds=list(folds), seed=entry.get("seed", 0),
            final_runs=entry.get("final_runs", DEFAULT_FINAL_RUNS),
            grid_per_job=entry.get("grid_per_job", DEFAULT_GRID_PER_JOB),
            final_holdout=entry.get("final_holdout", "fresh"), stack=bool(entry.get("stack", False)))
        for label, model, own, model_where in model_entries(entry, where, self.name,
                                                            "selects configurations by grid search"):
            base, grid = model_grid(model, own, model_where)
            configs = expand_grid(base, grid)
            check_configs(configs, dataset.meta, model_where)
            benchmark.models[label] = ModelSpec(label, model.get("preset"), base)
            benchmark.grids[label] = configs
        return benchmark


def model_grid(model: dict, own: dict, where: str) -> tuple[dict, dict[str, list]]:
    """(fixed config, grid) of a model entry: the preset's params and grid, the entry's ``grid`` replacing or adding
    dimensions, the overrides ``own`` (benchmark-wide ``set``, then the model's) fixing values and removing their
    dimensions."""
    preset = model.get("preset")
    base = {**TRAINING_DEFAULTS, **run_config(preset, own, where=where, protocol=NAME)}
    grid: dict[str, list] = {}
    if preset is not None:
        entry = get_preset(preset, where=f"{where}.preset")
        if preset_protocol(entry) == NAME:
            grid.update(entry.get("grid") or {})
    grid.update(model.get("grid") or {})
    types = protocol_types(FairComparison, base)  # training keys and the architecture keys of the model's variant
    checked = {}
    for key, values in grid.items():
        if key in own:
            continue
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{where}.grid.{key}: expected a non-empty list of values; fix it")
        checked[key] = [coerce(key, v, f"{where}.grid.{key}", types) for v in values]
    return base, checked


def expand_grid(base: dict, grid: dict[str, list]) -> list[dict]:
    """Every configuration of the grid, in order (Cartesian product, last dimension fastest)."""
    keys = list(grid)
    return [{**base, **dict(zip(keys, values, strict=True))} for values in itertools.product(*grid.values())]


def check_configs(configs: list[dict], meta, where: str) -> None:
    """Training keys present and every configuration buildable for the dataset's sizes (a stand-in graph); a model
    that cannot run on the dataset (another zoo's node-only model, positional encodings) is refused in one line."""
    from gnnbench.models.plugins import located
    from gnnbench.models.registry import check_buildable

    for config in configs:
        missing = [k for k in TRAINING_REQUIRED if k not in config]
        if missing:
            raise ConfigError(f"{where}: training needs {', '.join(missing)}; set them (or use a fair_* preset)")
    seen = set()
    for config in configs:
        shape = sha256_json({k: v for k, v in config.items() if k not in TRAINING_KEYS})
        if shape in seen:
            continue
        seen.add(shape)
        try:
            check_buildable(config, meta, default_variant=ERRICA2020, positional_encodings=False)
        except ConfigError as exc:
            raise located(where, exc) from None


def config_id(config: dict) -> str:
    """A configuration's short id: the first 16 hex digits of the SHA-256 of its canonical JSON."""
    return sha256_json(config)[:16]


def _stack_frozen(config: dict) -> dict:
    """The model's keys whose values one stack can mix (a classifier's ``stack_frozen``: key -> (the value members
    are built with, names of the parameters frozen in members with another value)); {} for other models."""
    from gnnbench.models.registry import resolve

    try:
        variant = resolve(config, ERRICA2020)
        return dict(getattr(variant.load(), "stack_frozen", {})) if variant.variant == ERRICA2020 else {}
    except Exception:  # an unknown model: its configurations are checked elsewhere
        return {}


def shape_key(config: dict) -> str:
    """What the members of one stack share: the configuration without :data:`MEMBER_KEYS` and the model's keys
    that a stack can mix (GIN's ``train_eps``)."""
    mixed = set(MEMBER_KEYS) | set(_stack_frozen(config))
    return sha256_json({k: v for k, v in config.items() if k not in mixed})


def stack_groups(configs: list[dict]) -> list[list[int]]:
    """Indices of ``configs`` grouped by :func:`shape_key`, groups in order of their first member, members in
    order."""
    groups: dict[str, list[int]] = {}
    for i, config in enumerate(configs):
        groups.setdefault(shape_key(config), []).append(i)
    return list(groups.values())


def member_build(cfg: dict) -> tuple[dict, tuple[str, ...]]:
    """(the coerced config a stack builds member ``cfg`` from, names of its parameters kept frozen): GIN with
    ``train_eps`` false is built with ε a parameter that never moves (:class:`~gnnbench.training.stacked_holdout.
    MemberStack`)."""
    build, frozen = dict(cfg), ()
    for key, (value, names) in _stack_frozen(cfg).items():
        if cfg.get(key) != value:
            build[key], frozen = value, frozen + tuple(names)
    return build, frozen


def trajectory_config(config: dict) -> dict:
    """A configuration without :data:`OBSERVER_KEYS`: what its training steps depend on (module docstring,
    "Stacks")."""
    return {k: v for k, v in config.items() if k not in OBSERVER_KEYS}


def observer_settings(config: dict) -> dict:
    """A configuration's :data:`OBSERVER_KEYS` (its stopping rules)."""
    return {k: config[k] for k in OBSERVER_KEYS if k in config}


def trajectories(configs: list[dict]) -> list[list[int]]:
    """Indices of ``configs`` grouped by :func:`trajectory_config` (configurations differing only in their stopping
    settings), groups in order of their first member, members in order."""
    groups: dict[str, list[int]] = {}
    for i, config in enumerate(configs):
        groups.setdefault(sha256_json(trajectory_config(config)), []).append(i)
    return list(groups.values())


def run_seed(seed: int, fold: int, key: int) -> int:
    """The seed of a run on outer fold ``fold``: ``SeedSequence(seed, spawn_key=(fold, key))``, with ``key`` a
    grid point's :func:`seed_key` or ``2**31 + r`` for final run r."""
    return int(np.random.SeedSequence(seed, spawn_key=(fold, key)).generate_state(1)[0])


def seed_key(config: dict) -> int:
    """The key of a grid point's seed (``run_seed(seed, fold, key)``): the first 8 hex digits of its config's hash,
    with a model file (``/abs/path/my_gnn.py:MyGNN``, as run configs hold it) named by its file name alone, so that a
    suite trains the same wherever its folder is."""
    from gnnbench.models.plugins import is_plugin_spec, parse_spec

    model = config.get("model")
    if is_plugin_spec(model) and parse_spec(model)[0] == "file":
        _, target, attribute = parse_spec(model)
        config = {**config, "model": f"{Path(target).name}:{attribute}"}
    return int(config_id(config)[:8], 16)


def num_layers(config: dict) -> int | None:
    """Depth of a configuration for the "median number of layers selected" column: the classifier's own rule
    (Errica's zoo), ``L`` for the benchmark's models, ``num_layers`` (PyTorch Geometric's name) for a model from
    outside the package, None for the others."""
    from gnnbench.models.registry import PLUGIN, resolve

    variant = resolve(config, ERRICA2020)
    if variant.variant == ERRICA2020:
        return variant.load().num_layers(config)
    if variant.variant == PLUGIN:
        layers = config.get("num_layers")
        return layers if isinstance(layers, int) and not isinstance(layers, bool) else None
    return config.get("L")


# ---------------------------------------------------------------------------------------------- running


@dataclass
class _Data:
    meta: object
    store: object
    sizes: np.ndarray
    labels: np.ndarray
    splits: object
    key: str


def _load(dataset_dir, splits_path) -> _Data:
    from gnnbench.data.batching import model_dtypes
    from gnnbench.data.meta import read_dataset
    from gnnbench.data.store import GraphStore
    from gnnbench.splits import read_splits

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
    from gnnbench.models.registry import ModelData, build_model, count_parameters, num_parameters
    from gnnbench.training.engine import Checkpoint
    from gnnbench.training.holdout import train_holdout

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
    from gnnbench.models.registry import ModelData, build_model, count_parameters
    from gnnbench.training.engine import Checkpoint
    from gnnbench.training.holdout import train_holdout

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
    from gnnbench.training.run import resolve_device

    if threads:
        torch.set_num_threads(threads)
    return resolve_device(device)


def _stoppable(job, out: Path):
    """Run ``job(guard)`` under the SIGTERM guard; a stop names what a rerun resumes from."""
    from gnnbench.training.engine import stoppable

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


def config_json(config: dict) -> str:
    """A configuration as JSON with sorted keys (how the model-selection files store it)."""
    return json.dumps(config, sort_keys=True)


def select(part_files: list[str | os.PathLike], out: str | os.PathLike, *, dataset: str, model: str,
           fold: int) -> dict:
    """The chosen configuration of one outer fold: the highest validation accuracy, ties to the later
    configuration in grid order; writes every candidate's scores beside it (``selection.json``). A configuration
    whose run diverged (``status``) has no validation score and is never chosen; if every one diverged there is
    nothing to choose and a DataError says so."""
    rows = []
    for path in part_files:
        try:
            rows += pq.read_table(path).to_pylist()
        except (pa.ArrowException, OSError) as exc:
            raise DataError(f"model-selection file {path} is corrupt ({str(exc).splitlines()[0]}); delete it and "
                            "rerun snakemake") from None
    if not rows:
        raise DataError(f"no model-selection runs for {dataset} / {model} fold {fold}")
    rows.sort(key=lambda r: r["position"])
    best = None
    for row in rows:
        if row.get("status") == "diverged":
            continue
        if best is None or best["val_accuracy"] <= row["val_accuracy"]:
            best = row
    if best is None:
        raise DataError(f"{dataset} / {model} fold {fold}: every one of the {len(rows)} configuration(s) of the "
                        "model-selection grid diverged (NaN or infinite training loss), so none can be selected; "
                        "lower the learning rates of the grid (or add gradient_clipping) and rerun snakemake")
    candidates = [{**{k: v for k, v in r.items() if k != "config"}, "config": json.loads(r["config"])} for r in rows]
    chosen = next(c for c in candidates if c["position"] == best["position"])
    body = {"format": SELECTION_FORMAT, "dataset": dataset, "model": model, "fold": fold, "chosen": chosen,
            "candidates": candidates}
    write_json(out, {**body, "checksum": sha256_json(body)})
    log.info("%s / %s fold %d: chose config %s (val acc %.2f) among %d", dataset, model, fold, chosen["config_id"],
             chosen["val_accuracy"], len(candidates))
    return body


def read_selection(path: str | os.PathLike) -> dict:
    """A selection file, verified: its checksum must match its content (no hand edits)."""
    data = read_json(path, "selection file")
    body = {k: v for k, v in data.items() if k != "checksum"} if isinstance(data, dict) else None
    if body is None or data.get("checksum") != sha256_json(body) or "chosen" not in body:
        raise DataError(f"selection file {path} was edited by hand or is corrupt (checksum mismatch); delete it and "
                        "rerun snakemake to redo the selection from the model-selection runs")
    return body


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
    from gnnbench.models.registry import ModelData, build_model
    from gnnbench.training.engine import Checkpoint
    from gnnbench.training.stacked_holdout import MemberStack

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

    from gnnbench.training.wide import NotWidenable

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
    from gnnbench.records import record, write_records
    from gnnbench.training.run import _device_name, package_versions

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


# ---------------------------------------------------------------------------------------------- reports


def dataset_report(*, dataset: str, dataset_dir, models: dict[str, dict], outputs: dict[str, str],
                   presets: dict[str, str | None] | None = None) -> None:
    """Per-dataset tables from the selection and final files of every model (``models``: label → {"selections":
    [...], "finals": [...]} in fold order; ``presets``: label → the suite's preset, for the comparison with the
    paper)."""
    from gnnbench.data.meta import read_meta
    from gnnbench.records import read_tables
    from gnnbench.reporting import fair_comparison as report

    meta = read_meta(dataset_dir)
    folds = []
    for label, files in models.items():
        for sel_path, final_path in zip(files["selections"], files["finals"], strict=True):
            selection = read_selection(sel_path)
            finals = read_tables([final_path], "final-runs").to_dict("records")
            chosen = selection["chosen"]
            scored = [f for f in finals if f.get("status") != "diverged"]  # a diverged final run has no score
            folds.append({"model": label, "architecture": chosen["config"]["model"], "fold": selection["fold"],
                          "config_id": chosen["config_id"], "candidates": len(selection["candidates"]),
                          "diverged_candidates": sum(c.get("status") == "diverged" for c in selection["candidates"]),
                          "layers": num_layers(chosen["config"]), "val_accuracy": chosen["val_accuracy"],
                          "test_accuracy": float(np.mean([f["test_accuracy"] for f in scored])) if scored else np.nan,
                          "train_accuracy": float(np.mean([f["train_accuracy"] for f in scored])) if scored else np.nan,
                          "test_runs": [f["test_accuracy"] for f in finals],
                          "diverged_runs": len(finals) - len(scored),
                          "time_limited": sum(f["stop_reason"] == "time_limit" for f in finals),
                          "config": report.config_summary(chosen["config"]), "chosen_config": chosen["config"]})
    report.write_reports(dataset, meta, folds, outputs, presets)

