"""The heterophily protocol object: a suite's benchmark block resolved into its jobs (per model one job per candidate
layer count, each the ten splits as one stack, then one selection job), with the configs checked to build on the
dataset."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from gnnbench import paths
from gnnbench.config.keys import protocol_types
from gnnbench.config.presets import run_config
from gnnbench.data.meta import read_meta
from gnnbench.errors import ConfigError
from gnnbench.papers import FOREIGN_TRAINING_DEFAULTS, TRAINING_KEYS
from gnnbench.protocols.base import (
    Benchmark,
    ModelSpec,
    Protocol,
    check_buildable,
    check_one_graph_node_task,
    model_entries,
)
from gnnbench.protocols.heterophily import (
    CANDIDATE_JOB,
    DEFAULT_LAYERS,
    NAME,
    PAPER,
    RUN_DIR,
    SELECTED_JOB,
    SELECTION_FILE,
    SUITE_TABLE,
    SUITE_TABLE_NAME,
    TABLE_FILE,
    TABLE_FORMATS,
    TRAINING_DEFAULTS,
)
from gnnbench.protocols.heterophily.tables import dataset_tables
from gnnbench.records import read_runs

SETTINGS = ("models", "set", "protocol", "seed", "num_layers", "folds", "splits_per_stack")


@dataclass
class HeterophilyBenchmark(Benchmark):
    """A heterophily benchmark: per model its candidate layer counts (``candidates``: label → counts; 0 = the
    model's own config, for a model that takes no key ``num_layers`` or whose ``set`` fixes it), every split of the
    dataset's given split (or the ``folds`` named) in each candidate's one job, seeded from ``seed``."""

    seed: int = 0
    candidates: dict[str, list[int]] = field(default_factory=dict)
    folds: list[int] | None = None  # None: every split of the dataset's split file
    splits_per_stack: int | None = None  # None: every split in one stack

    def candidate_config(self, model: str, layers: int) -> dict:
        """The run config of candidate ``layers`` of ``model``."""
        config = dict(self.models[model].config)
        if layers:
            config["num_layers"] = layers
        return config

    def candidate_dirs(self, model: str | None = None) -> list[str]:
        """The output folder of every candidate job, of one model or (None) of all."""
        return [RUN_DIR.format(dataset=self.dataset, model=label, layers=layers)
                for label in self.models if model in (None, label) for layers in self.candidates[label]]

    def candidate_records(self, model: str) -> list[str]:
        """The run-record files of ``model``'s candidate jobs (stage ``inner``)."""
        return [paths.RECORD_FILE.format(protocol=NAME, dataset=self.dataset, model=model,
                                         job=CANDIDATE_JOB.format(layers=layers))
                for layers in self.candidates[model]]

    def selected_record(self, model: str) -> str:
        """The run-record file of ``model``'s selected candidate (stage ``run``)."""
        return paths.RECORD_FILE.format(protocol=NAME, dataset=self.dataset, model=model, job=SELECTED_JOB)

    def run_files(self) -> list[str]:
        """The ``metrics.json`` of every candidate job and every model's ``selection.json``."""
        return ([f"{d}/metrics.json" for d in self.candidate_dirs()]
                + [SELECTION_FILE.format(dataset=self.dataset, model=m) for m in self.models])

    def table_files(self) -> list[str]:
        """The dataset's table (CSV, Markdown, Parquet)."""
        return [TABLE_FILE.format(dataset=self.dataset, ext=ext) for ext in TABLE_FORMATS]

    def record_files(self) -> list[str]:
        """Every candidate job's run records and every model's selected runs."""
        return [f for m in self.models for f in [*self.candidate_records(m), self.selected_record(m)]]


class Heterophily(Protocol):
    """The heterophily protocol (module docstring of :mod:`gnnbench.protocols.heterophily`;
    ``docs/protocols/heterophily.md``)."""

    name = NAME
    title = "A critical look at the evaluation of GNNs under heterophily (Platonov et al.)"
    split_schemes = ("given", "file")
    default_variant = PAPER
    training_keys = TRAINING_KEYS[PAPER]
    training_defaults = FOREIGN_TRAINING_DEFAULTS[PAPER]
    significance_units = "the given splits"
    significance_unit_columns = ("split",)

    def add_train_arguments(self, parser) -> None:
        """``--fold`` (the splits to train, default all of the split file)."""
        parser.add_argument("--fold", type=int, nargs="+", help="the splits to train (default: every split)")

    def train_command(self, args, overrides: dict) -> str:
        """One candidate job (:func:`~gnnbench.protocols.heterophily.train.run_candidate`): the splits of the config
        as one stack; returns the mean validation and test scores."""
        config = run_config(args.preset, overrides, where="--set", preset_where="--preset", protocol=self.name)
        check_model(config, read_meta(args.dataset), self.model_option(args))
        from gnnbench.protocols.heterophily.train import run_candidate  # the job's module: torch, the models

        metrics = run_candidate(dataset_dir=args.dataset, splits_path=args.splits, config=config,
                                seed=args.seed or 0, out_dir=args.out, device=args.device, threads=args.threads,
                                label=args.label, layers=int(config.get("num_layers", 0)), split_ids=args.fold,
                                records_out=os.path.join(args.records, "candidate.parquet"))

        def pct(value):
            return "none (every split diverged)" if value is None else f"{value:.2f}"

        return (f"{len(metrics['results'])} splits, mean validation {metrics['metric']}: {pct(metrics['val_mean'])}, "
                f"mean test: {pct(metrics['test_mean'])}")

    def table_caption(self, table: str, dataset: str | None) -> str:
        """Captions of the suite table and the per-dataset tables."""
        if table == SUITE_TABLE_NAME:
            return ("Heterophily summary: test accuracy or ROC AUC (%) of every model at its selected layer count, "
                    "mean ± std over the splits trained (the paper: all ten), per dataset.")
        return (f"Table of **{table}** (protocol {self.name}): one row per model at the layer count of its highest "
                "mean validation score — test and validation score mean ± sample std over the splits trained, every "
                "candidate's mean validation score, and the paper's number.")

    def default_split(self, dataset) -> dict:
        """``given``: the splits that come with the data (ten for Platonov et al.'s datasets)."""
        return {"scheme": "given"}

    def check_dataset(self, dataset, where: str) -> None:
        """Refuse anything but node classification on one graph."""
        check_one_graph_node_task(self.name, dataset, where)

    def benchmark(self, dataset, entry: dict, where: str) -> HeterophilyBenchmark:
        """``seed``, ``num_layers`` (the candidate layer counts, default 1..5), ``folds`` (the splits to train,
        default all ten: fewer make a reduced run, which the tables' split counts show) and ``splits_per_stack``
        (default: all) of the block; per model the config (preset with ``set`` overrides) over the protocol's
        training defaults, each candidate checked to build on the dataset. A model that takes the key
        ``num_layers`` is trained at every count unless its ``set`` (or the block's) fixes it. Other settings are
        refused."""
        for key in entry:
            if key not in SETTINGS:
                raise ConfigError(f"{where}.{key}: not a setting of protocol {self.name}; its settings: "
                                  f"{', '.join(SETTINGS)} (docs/protocols/heterophily.md)")
        layers = entry.get("num_layers", list(DEFAULT_LAYERS))
        if (not isinstance(layers, list) or not layers
                or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in layers)):
            raise ConfigError(f"{where}.num_layers: expected a list of layer counts ≥ 1 (e.g. [1, 2, 3, 4, 5]), got "
                              f"{layers!r}")
        per_stack = entry.get("splits_per_stack")
        if per_stack is not None and (not isinstance(per_stack, int) or isinstance(per_stack, bool) or per_stack < 1):
            raise ConfigError(f"{where}.splits_per_stack: expected a positive number of splits, got {per_stack!r}")
        folds = entry.get("folds")
        if folds is not None and (not isinstance(folds, list) or not folds or len(set(folds)) != len(folds)
                                  or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                             for v in folds)):
            raise ConfigError(f"{where}.folds: expected a list of distinct split indices ≥ 0 (e.g. [0, 1, 2]), "
                              f"got {folds!r}")
        bad = [f for f in folds or [] if f >= dataset.num_folds]
        if bad:
            raise ConfigError(f"{where}.folds: split(s) {bad} do not exist; {dataset.name} has {dataset.num_folds} "
                              f"split(s), numbered from 0")
        benchmark = HeterophilyBenchmark(dataset.name, self.name, seed=entry.get("seed", 0),
                                         folds=sorted(folds) if folds else None, splits_per_stack=per_stack)
        for label, model, own, model_where in model_entries(entry, where, self.name,
                                                            "chooses the layer count among num_layers"):
            config = {**TRAINING_DEFAULTS, **run_config(model.get("preset"), own, where=model_where,
                                                        protocol=self.name)}
            searched = "num_layers" in protocol_types(self, config) and "num_layers" not in own
            benchmark.models[label] = ModelSpec(label, model.get("preset"), config)
            benchmark.candidates[label] = sorted(set(layers)) if searched else [0]
            for count in benchmark.candidates[label]:
                check_model(benchmark.candidate_config(label, count), dataset.meta, model_where)
        return benchmark

    def aggregate_command(self, files: list[str], out: str) -> None:
        """The dataset table of the given run-record files (candidates and selected runs), without the paper's
        numbers."""
        records = read_runs(files)
        dataset = str(records["dataset"].iloc[0]) if len(records) else ""
        dataset_tables(dataset, records, {"table_csv": f"{out}.csv", "table_md": f"{out}.md",
                                          "table_parquet": f"{out}.parquet"})

    def suite_files(self, benchmarks: list[Benchmark]) -> list[str]:
        """The suite table (model × dataset)."""
        return [SUITE_TABLE.format(ext=ext) for ext in TABLE_FORMATS] if benchmarks else []

    def suite_table_inputs(self, benchmarks: list[Benchmark]) -> dict:
        """Every benchmark's run records and the datasets, in suite order."""
        if not benchmarks:
            return {}
        return {"records": [f for b in benchmarks for f in b.record_files()],
                "datasets": [b.dataset for b in benchmarks]}


def check_model(config: dict, meta, where: str) -> None:
    """Refuse a model that cannot run on the dataset in one line, then build it once on a stand-in of the dataset's
    sizes: unknown models and keys fail here."""
    check_buildable(config, meta, where, PAPER, positional_encodings=False)
