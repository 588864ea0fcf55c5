"""What a protocol is, for the suite and the workflow.

A protocol answers "how are models compared fairly": which split schemes it evaluates on, what one run (one
training job) is, when training stops and which weights are scored, and how runs aggregate into tables. A suite's
benchmark block names its protocol (``protocol: pitfalls``; default ``benchmarking-gnns``); the protocol turns the
block into a :class:`Benchmark` — the models with resolved configs and the run grid — which lists the files the
workflow must produce. Shared code (store, batching, models, training loops, checkpoints) knows no protocol; each
protocol composes them in its own module.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from gnnbench import paths
from gnnbench.errors import ConfigError, GnnbenchError
from gnnbench.models.plugins import located
from gnnbench.protocols import tune_module
from gnnbench.protocols.tuning import MAIN_SEARCH, Search
from gnnbench.records import read_runs
from gnnbench.reporting.significance import unit_scores


@dataclass
class ModelSpec:
    """One model of a benchmark: its label in the suite, the preset it starts from (None: none) and its resolved
    run config."""

    label: str
    preset: str | None
    config: dict  # resolved run config (the run's seed is filled in per run where the protocol has seeds)


@dataclass
class Benchmark(ABC):
    """The runs a benchmark block of a suite asks for: one dataset, its models, the protocol's run grid."""

    dataset: str
    protocol: str
    models: dict[str, ModelSpec] = field(default_factory=dict)
    # tuned models (gnnbench.protocols.tuning; docs/tuning.md): label -> its search; each also has its scored runs
    # in ``models`` under ``<label>-tuned``
    tuning: dict[str, Search] = field(default_factory=dict)

    @abstractmethod
    def run_files(self) -> list[str]:
        """The protocol's own training outputs of every model (``metrics.json``, ``runs.parquet``, ``final.parquet``):
        caches of the jobs; no table reads them (the tables read :meth:`record_files`)."""

    @abstractmethod
    def table_files(self) -> list[str]:
        """The per-dataset reports, tables (and plots): targets of the workflow's ``all`` rule."""

    @abstractmethod
    def record_files(self) -> list[str]:
        """The run-record files of every job (:mod:`gnnbench.records`, one per job): targets of the workflow's
        ``all`` rule, so that every job runs."""

    def runs(self) -> list[dict]:
        """Single runs planned one per job (benchmarking-gnns: model × seed × fold); none for protocols whose jobs
        group runs (splits × initialisations, grid parts)."""
        return []

    def job_inputs(self, model: str) -> dict[str, str]:
        """Files a training job of ``model`` needs beyond the dataset and its split file (none by default)."""
        return {}

    def plot_kinds(self) -> list[str]:
        """Figures of the report beside the tables (kinds of :data:`gnnbench.paths.PLOT_FILE`; none by default)."""
        return []

    # ------------------------------------------------------------------------------------ tuning (docs/tuning.md)

    def add_tuned(self, label: str, tuned: str) -> None:
        """Plan the scored runs of model ``label``'s selected configuration under the label ``tuned``: by default
        those of a model with ``label``'s config (the selection's values replace the tuned ones when its jobs run),
        and no preset (a tuned row is not the paper's configuration)."""
        self.models[tuned] = ModelSpec(tuned, None, dict(self.models[label].config))

    def searches(self, model: str) -> list[str]:
        """The searches of a tuned model (the ``{search}`` of :data:`gnnbench.paths.TUNING_DIR`): one, ``main``, by
        default; fair-comparison searches once per outer fold."""
        return [MAIN_SEARCH]

    def tuning_scope(self, model: str, search: str) -> dict:
        """What the trials of a search train on besides their configs (the protocol's ``tune`` module reads it):
        the fold, the splits, the seed. A ConfigError by default: the protocol does not tune."""
        raise ConfigError(f"benchmarks.{self.dataset}.tuning: protocol {self.protocol} does not tune models")

    def tuning_config(self, model: str) -> dict:
        """The config a search of ``model`` puts its sampled values in: the model's resolved config by default."""
        return self.models[model].config

    def tuning_job(self, model: str, search: str, round_: int) -> dict:
        """Everything a round job of a search is told (JSON): the protocol, dataset, model label, search and round,
        the first trial's number and how many it asks, the search's settings, the config the trials start from
        (:meth:`tuning_config`) and the protocol's scope (:meth:`tuning_scope`). Not the budget: a larger one adds
        rounds and leaves the earlier rounds' jobs as they are."""
        s = self.tuning[model]
        return {"protocol": self.protocol, "dataset": self.dataset, "model": model, "search": search,
                "round": round_, "first": round_ * s.per_round, "size": s.round_size(round_), "sampler": s.sampler,
                "seed": s.seed, "pruner": s.pruner, "min_epochs": s.min_epochs, "space": s.space,
                "config": self.tuning_config(model), "scope": self.tuning_scope(model, search)}

    def trial_record_file(self, model: str, search: str, round_: int) -> str:
        """The run-record file of one round of a search (its trials, stage ``trial``)."""
        return paths.RECORD_FILE.format(protocol=self.protocol, dataset=self.dataset, model=model,
                                        job=paths.TRIAL_RECORD_JOB.format(search=search, round=round_))

    def trial_record_files(self, model: str, search: str, rounds: int | None = None) -> list[str]:
        """The run-record files of the first ``rounds`` rounds of a search (None: all): what the next round and
        the selection read."""
        rounds = self.tuning[model].rounds if rounds is None else rounds
        return [self.trial_record_file(model, search, r) for r in range(rounds)]

    def tuning_selection(self, model: str, search: str) -> str:
        """The selection file of a search (:data:`gnnbench.paths.TUNING_SELECTION`)."""
        return paths.TUNING_SELECTION.format(protocol=self.protocol, dataset=self.dataset, model=model,
                                             search=search)

    def tuned_selection(self, tuned: str) -> str | None:
        """The selection a scored run of model label ``tuned`` reads (None: a published configuration); the
        protocols that search once per model read the one search's."""
        for label, search in self.tuning.items():
            if search.tuned_label == tuned:
                return self.tuning_selection(label, MAIN_SEARCH)
        return None

    def tuning_files(self) -> list[str]:
        """Every round's trial records and every search's selection: targets of the workflow's ``all`` rule (the
        tuned runs read the selections; the report's tuning tables read the records)."""
        return [f for label in self.tuning for search in self.searches(label)
                for f in [*self.trial_record_files(label, search), self.tuning_selection(label, search)]]

    def tuning_record_files(self) -> list[str]:
        """The trial records of every search of every tuned model: what the report's tuning tables and curves read,
        apart from the records of :meth:`record_files`."""
        return [f for label in self.tuning for search in self.searches(label)
                for f in self.trial_record_files(label, search)]

    def tuning_report_files(self) -> list[str]:
        """Where the benchmark tunes a model, its tuning report (``docs/tuning.md``): the published-versus-tuned
        table and the trial table (CSV, Markdown, Parquet) and the tuning curves (PNG, SVG); else none. Targets of
        the workflow's ``all`` rule beside :meth:`table_files`, made by the same report job."""
        if not self.tuning:
            return []
        return ([template.format(dataset=self.dataset, ext=ext) for template in (paths.TUNING_TABLE,
                                                                                 paths.TRIALS_TABLE)
                 for ext in paths.TABLE_FORMATS]
                + [paths.PLOT_FILE.format(dataset=self.dataset, kind=paths.TUNING_CURVES, ext=ext)
                   for ext in paths.PLOT_FORMATS])


def model_entries(entry: dict, where: str, protocol: str, why_no_budget: str):
    """For every model of a benchmark block: (label, its entry as a mapping, its config overrides — the block's
    ``set``, then the model's own ``set`` and ``model`` — and where it sits in the suite). Protocols that take
    published configs refuse a parameter budget (``why_no_budget`` says why)."""
    shared = entry.get("set") or {}
    for label, model in entry["models"].items():
        model_where = f"{where}.models.{label}"
        model = {"preset": model} if isinstance(model, str) else model
        if "seeds" in model:
            raise ConfigError(f"{model_where}.seeds: per-model seeds belong to protocol benchmarking-gnns; protocol "
                              f"{protocol} seeds its runs itself")
        for key in ("budget", "layers", "width"):
            if key in model:
                raise ConfigError(f"{model_where}.{key}: protocol {protocol} {why_no_budget}; parameter budgets "
                                  "belong to protocol benchmarking-gnns")
        own = {**shared, **(model.get("set") or {})}
        if "model" in model:
            own["model"] = model["model"]
        yield label, model, own, model_where


def check_buildable(config: dict, meta, where: str, default_variant: str, positional_encodings: bool = True) -> None:
    """Refuse, in one line located at ``where`` (a suite position, or ``--preset`` on the command line), a model that
    cannot run on the dataset (``meta``), then build it once on stand-in data of the dataset's sizes
    (:func:`gnnbench.models.build.check_buildable`): unknown models and keys fail while the suite loads, before any
    job runs. ``default_variant``: the protocol's own zoo; ``positional_encodings``: whether it computes them."""
    from gnnbench.models import build  # building needs torch: the one step of planning that loads it

    try:
        build.check_buildable(config, meta, default_variant=default_variant, positional_encodings=positional_encodings)
    except GnnbenchError as exc:
        raise located(where, exc) from None


def check_one_graph_node_task(protocol: str, dataset, where: str) -> None:
    """Refuse, in one line naming ``where``, a dataset that is not node classification on one graph (the transductive
    protocols: pitfalls, heterophily)."""
    meta = dataset.meta
    if not (meta.task == "node_classification" and meta.num_graphs == 1):
        raise ConfigError(f"{where}.protocol: protocol {protocol} needs one graph with node labels "
                          f"(transductive node classification), but dataset {dataset.name} is a {meta.task} "
                          f"dataset of {meta.num_graphs} graphs; use protocol benchmarking-gnns")


class Protocol(ABC):
    """An evaluation protocol: the one place that knows its name. The suite asks it to resolve a benchmark block
    (:meth:`benchmark`: the jobs to plan, their files); the command line asks it for the options of ``gnnbench train
    <name>`` and to run one job (:meth:`add_train_arguments`, :meth:`train_command`) or to make a table
    (:meth:`aggregate_command`); the workflow and the report ask it for the paired-test scores
    (:meth:`significance_scores`), the units they pair over (:attr:`significance_units`) and the captions of its
    tables and figures (:meth:`table_caption`, :meth:`figure_caption`)."""

    name: str
    title: str
    split_schemes: tuple[str, ...]  # split schemes this protocol evaluates on
    significance_units: str = "shared units"  # what two models' scores are paired over, in words
    # ... as run-record columns, and the stage of the runs scored: a unit's score is the mean test score of its
    # completed runs of that stage (gnnbench.reporting.significance.unit_scores)
    significance_unit_columns: tuple[str, ...] = ("split",)
    significance_stage: str = "run"
    # the margin δ within which two models' scores count as the same (TOST, gnnbench.reporting.equivalence); None:
    # the metric's default, 1 point of accuracy or 1 % of the pair's mean score
    equivalence_margin: float | None = None

    @abstractmethod
    def default_split(self, dataset) -> dict:
        """The split config of ``dataset`` (a DatasetSpec) when its entry in the suite names none: what this
        protocol evaluates on. Called while the suite loads, before the dataset's split is resolved."""

    @abstractmethod
    def check_dataset(self, dataset, where: str) -> None:
        """Raise a ConfigError (naming ``where``, the benchmark's key) when the protocol cannot evaluate on
        ``dataset`` (its task, its graphs, its split). Called while the suite loads, before :meth:`benchmark`, so
        that a wrong pairing fails before any job runs."""

    @abstractmethod
    def benchmark(self, dataset, entry: dict, where: str) -> Benchmark:
        """Resolve the suite's benchmark block ``entry`` for ``dataset`` (a DatasetSpec) into this protocol's
        :class:`Benchmark`: every model's resolved config (checked to build on the dataset) and the run grid. Keys
        the protocol does not have raise a ConfigError naming ``where``. Called once per benchmark while the suite
        loads; the workflow's target and input lists come from the result."""

    def check_suite(self, benchmarks: list[Benchmark], all_benchmarks: dict[str, Benchmark]) -> None:  # noqa: B027
        """Checks across this protocol's benchmarks of a suite (``all_benchmarks``: every benchmark by name),
        called once after all are resolved; none by default."""

    def suite_files(self, benchmarks: list[Benchmark]) -> list[str]:
        """Reports spanning every benchmark of this protocol in a suite (none by default): targets of the
        workflow beside the per-dataset tables."""
        return []

    def suite_table_inputs(self, benchmarks: list[Benchmark]) -> dict:
        """What the suite's report job passes to this protocol's ``tables.suite_tables`` to write
        :meth:`suite_files`: ``records`` (the run-record files read) and the protocol's own settings; empty where it
        has no suite-wide tables (the default)."""
        return {}

    def check_split(self, dataset, where: str) -> None:
        """Raise a ConfigError (naming ``where``, the dataset's split key) when the dataset's split scheme is not
        one of :attr:`split_schemes`. Called while the suite loads, after :meth:`check_dataset`."""
        scheme = dataset.split["scheme"]
        if scheme not in self.split_schemes:
            raise ConfigError(f"{where}: protocol {self.name} evaluates on split schemes "
                              f"{', '.join(self.split_schemes)}, but dataset {dataset.name} is split by {scheme}; "
                              f"change datasets.{dataset.name}.split.scheme or the protocol")

    # ------------------------------------------------------------------------------------ command line

    def add_train_arguments(self, parser) -> None:  # noqa: B027
        """Add the options of ``gnnbench train <name>`` beyond the common ones (dataset, splits, preset, set, seed,
        device, threads, label, out, records) to ``parser`` (an ``argparse`` subparser); none by default. Called when
        the command line is built."""

    @staticmethod
    def model_option(args) -> str:
        """The option of ``gnnbench train`` that named the model, for errors about the model: ``--preset`` when one
        was given, else ``--set`` (``--set model=...``)."""
        return "--preset" if args.preset else "--set"

    @abstractmethod
    def train_command(self, args, overrides: dict) -> str:
        """Run one job from the parsed ``gnnbench train <name>`` arguments (``overrides``: the ``--set`` values)
        and write its outputs and run records; returns the line to print. The command-line twin of the workflow's
        training jobs, which call the protocol module's functions directly."""

    def aggregate_command(self, files: list[str], out: str) -> None:
        """``gnnbench aggregate <name> FILES --out PREFIX``: write the dataset table of the given job outputs to
        ``PREFIX.csv``, ``.md`` and ``.parquet``. By default a ConfigError: the protocol makes its tables only in the
        workflow."""
        raise ConfigError(f"aggregate: protocol {self.name} makes its tables in the workflow (snakemake); "
                          "`gnnbench aggregate` has none for it")

    # ------------------------------------------------------------------------------------ tuning

    def tuning_direction(self, meta) -> str:
        """``maximize`` or ``minimize``: the direction of the validation score a search optimises on a dataset
        (``meta``), as the ``direction`` of the protocol's ``tune`` module says (imported when a round job runs)."""
        return tune_module(self.name).direction(meta)

    def train_trials(self, **job) -> list[dict]:
        """Train one round's trials (the ``train_trials`` of the protocol's package's ``tune`` module, imported
        only when a round runs: it loads torch): one result per trial (:mod:`gnnbench.protocols.tuning_jobs`)."""
        return tune_module(self.name).train_trials(**job)

    # ------------------------------------------------------------------------------------ reports

    def significance_scores(self, inputs: list) -> tuple:
        """(scores per (model, unit), metric, higher_is_better) for the paired tests
        (:func:`gnnbench.reporting.significance.paired_tests`), from a benchmark's run-record files: the protocol's
        units and stage (:attr:`significance_unit_columns`, :attr:`significance_stage`) over
        :func:`gnnbench.records.read_runs`. The workflow's report job does the same on the records it has read
        (:func:`gnnbench.report_jobs.dataset_job`)."""
        return unit_scores(read_runs(inputs), self.significance_unit_columns, self.significance_stage)
    def table_caption(self, table: str, dataset: str | None) -> str:
        """The report's caption of a table of this protocol (``dataset``: the benchmark it belongs to; None for a
        suite-wide table)."""
        return f"Table of **{table}** (protocol {self.name})."

    def figure_caption(self, kind: str, dataset: str) -> str:
        """The report's caption of a figure (:meth:`Benchmark.plot_kinds`) of this protocol."""
        return f"Figure {kind} of **{dataset}** (protocol {self.name})."
