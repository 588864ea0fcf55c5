"""The workflow's suite configuration (``config/config.yaml``): datasets, benchmarks, and the runs they imply.

A suite has datasets (how to make each, and how to split it) and benchmarks (per dataset: the protocol, the models
and the run grid). Each benchmark block names its evaluation protocol (``protocol:``, default
``benchmarking-gnns``; :mod:`gnnbench.protocols`), which resolves the block and says which files the workflow
must produce. Loading checks the config against the schema (``gnnbench/suite.schema.yaml``, also at
``workflow/schemas/config.schema.yaml``) and then semantically: known generators and parameters, split schemes the
protocol evaluates on, benchmarks that name defined datasets, presets that exist, override keys and types, folds
that exist, seeds in [0, 2**32 − 1], training hyper-parameters in their ranges (:mod:`gnnbench.config.keys`), model
labels and dataset names usable as folder names (at most 100 characters), and that every model can be built for its
dataset; :func:`load_suite_file` also refuses a key given twice in one mapping (:mod:`gnnbench.config.yamlfile`).
Each problem is reported as one line naming the key and the fix, before anything is generated or trained.

Output layout (paths relative to the working directory):

    resources/raw/{source}/{file}                               (downloads: MNIST IDX files, Planetoid, npz, ...)
    results/datasets/{dataset}/graphs.parquet, meta.json
    results/datasets/{dataset}/label_shards/{shard}.parquet   (a sharded generator's shards: TSP's tours)
    results/features/{dataset}/laplacian_pe_k{k}.parquet
    results/splits/{dataset}/splits.json
    results/runs/...                                            (per protocol, see gnnbench/protocols/)
    results/records/{protocol}/{dataset}/{model}/{job}.parquet  (every run, one schema: gnnbench.records)
    results/baselines/{dataset}/{baseline}.json                (a generator's baselines, e.g. TSP's knn_k2)
    results/tables/{dataset}.csv, .md, .parquet                 (+ results/plots/, suite-wide tables per protocol)
    results/tables/{dataset}_significance.csv, .md, .parquet    (paired tests between the models)
    results/plots/{dataset}_{curves,bars,pe}.{png,svg}           figures of the report (plot_files)
    results/report/suite.{yaml,html}, results/report/tables/{table}.html   report pages (report_files)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from gnnbench import paths
from gnnbench.config.keys import SEED_MAX
from gnnbench.config.yamlfile import load_yaml
from gnnbench.data.generators import get_generator, resolve_params
from gnnbench.data.leakage import DEFAULT_THRESHOLD
from gnnbench.data.meta import DatasetMeta
from gnnbench.errors import ConfigError
from gnnbench.models.plugins import with_absolute_files
from gnnbench.packaged import SUITE_SUFFIXES, paper_suite, paper_suites
from gnnbench.papers import DEFAULT_PROTOCOL
from gnnbench.protocols.base import Benchmark
from gnnbench.protocols.benchmarking_gnns import BASELINE_RECORD_FILE
from gnnbench.protocols.registry import get_protocol
from gnnbench.splits import check_class_sizes, check_source, resolve_split
from gnnbench.user_split import count_folds

SCHEMA_PATH = Path(__file__).resolve().parent / "suite.schema.yaml"
# the workflow's paths: gnnbench.paths (names kept here for callers of this module)
DATASET_DIR, PE_FILE, SPLITS_FILE, RAW_DIR = paths.DATASET_DIR, paths.PE_FILE, paths.SPLITS_FILE, paths.RAW_DIR
LABEL_SHARD_FILE, BASELINE_FILE = paths.LABEL_SHARD_FILE, paths.BASELINE_FILE
SIGNIFICANCE_FILE, PLOT_FILE, PLOT_FORMATS = paths.SIGNIFICANCE_FILE, paths.PLOT_FILE, paths.PLOT_FORMATS
TABLE_PAGE, SUITE_REPORT = paths.TABLE_PAGE, paths.SUITE_REPORT
DEFAULTS = {"device": "auto", "threads_per_run": 1, "mem_mb_per_run": 2000, "runtime_per_run": 720}
# What each stage's jobs ask a scheduler for (config key `resources`; runtime in minutes). The `train` defaults
# come from the older top-level keys (threads_per_run, ...), which stay accepted as shorthands.
RESOURCE_DEFAULTS = {
    "train": {"cpus": 1, "mem_mb": 2000, "runtime": 720, "gpus": 0},
    "dataset": {"cpus": 1, "mem_mb": 8000, "runtime": 240},
    "label_shard": {"cpus": 1, "mem_mb": 2000, "runtime": 240},
    "features": {"cpus": 1, "mem_mb": 4000, "runtime": 120},
}
TRAIN_SHORTHANDS = {"threads_per_run": "cpus", "mem_mb_per_run": "mem_mb", "runtime_per_run": "runtime"}


@dataclass
class DatasetSpec:
    """One dataset of a suite, resolved: its generator, seed and parameters (defaults filled in), its split and its
    description (:class:`~gnnbench.data.meta.DatasetMeta`, made from the parameters without generating anything)."""

    name: str
    generator: str
    seed: int
    params: dict
    split: dict  # resolved: {"scheme": ..., parameters}
    meta: DatasetMeta  # described from the generator: no data needed
    generator_split: dict = field(default_factory=dict)  # the generator's own default split
    # share of a test part with a duplicate in training above which the report warns (docs/leakage.md)
    leakage_threshold: float = DEFAULT_THRESHOLD

    @property
    def num_folds(self) -> int:
        """Partitions in the split file: cross-validation folds, random splits, or 1."""
        if self.split["scheme"] == "published":
            release = published_split(self)
            return release.folds if release else 0
        if self.split["scheme"] == "given":
            return self.meta.given_splits
        if self.split["scheme"] == "file":
            return count_folds(self.split["path"], *self.index_range)
        return self.split.get("folds", self.split.get("splits", 1))

    @property
    def index_range(self) -> tuple[int | None, str | None]:
        """(count, level) of what a split's indices name, as far as the description tells before the dataset is
        made: the graphs of a multi-graph dataset, the nodes of a single-graph one (their count where the generator
        states it); (None, None) for link prediction, whose pairs come with their split."""
        if self.meta.task == "link_prediction":
            return None, None
        if self.meta.transductive:
            return self.meta.statistics.get("all", {}).get("nodes"), "node"
        return self.meta.num_graphs, "graph"


@dataclass
class Suite:
    """A loaded suite (:func:`load_suite`): its settings, datasets and benchmarks, and the lists of files the
    workflow's rules produce from them."""

    device: str
    threads_per_run: int
    mem_mb_per_run: int
    runtime_per_run: int
    datasets: dict[str, DatasetSpec]
    benchmarks: dict[str, Benchmark]
    resources: dict[str, dict] = field(default_factory=lambda: {k: dict(v) for k, v in RESOURCE_DEFAULTS.items()})

    def rule_resources(self, stage: str) -> dict:
        """Snakemake ``resources`` of a stage's rule: mem_mb, runtime and, for a GPU request, gpu (+ gpu_model),
        the keys snakemake-executor-plugin-slurm turns into ``--mem``, ``-t`` and ``--gpus=[model:]N``."""
        spec = self.resources[stage]
        out = {"mem_mb": spec["mem_mb"], "runtime": spec["runtime"]}
        if spec.get("gpus"):
            out["gpu"] = spec["gpus"]
            if spec.get("gpu_model"):
                out["gpu_model"] = spec["gpu_model"]
        return out

    def protocol_datasets(self, protocol: str) -> list[str]:
        """The datasets whose benchmark runs under ``protocol`` (a protocol's name: the workflow's rules of that
        protocol take these)."""
        return [name for name, b in self.benchmarks.items() if b.protocol == protocol]

    # single runs (benchmarking-gnns: model × seed × fold; the benchmark's own methods)
    def run_config(self, dataset: str, model: str, seed: int) -> dict:
        """The resolved config of the model labelled ``model`` on ``dataset`` with ``seed``: what one training job
        receives."""
        return self.benchmarks[dataset].run_config(model, seed)

    def pe_dim(self, dataset: str, model: str) -> int | None:
        """The number of Laplacian eigenvectors the model uses on ``dataset`` (``pos_enc_dim``); None without
        positional encodings."""
        return self.benchmarks[dataset].pe_dim(model)

    def runs(self, dataset: str | None = None) -> list[dict]:
        """The single runs (dataset, model, seed, fold) planned one per job, of one benchmark or of all; protocols
        whose jobs group runs plan none here."""
        return [run for name, b in self.benchmarks.items() if dataset in (None, name) for run in b.runs()]

    def record_files(self) -> list[str]:
        """The run records every job writes (``results/records/...``, :mod:`gnnbench.records`)."""
        return [f for b in self.benchmarks.values() for f in b.record_files()]

    def tuning_files(self) -> list[str]:
        """Every search's round records and selection (``docs/tuning.md``; none without ``tuning``)."""
        return [f for b in self.benchmarks.values() for f in b.tuning_files()]

    def tuned_benchmarks(self) -> list[str]:
        """The benchmarks that tune some model."""
        return [name for name, b in self.benchmarks.items() if b.tuning]

    def metrics_files(self, dataset: str) -> list[str]:
        """A benchmark's own training outputs (benchmarking-gnns: every run's ``metrics.json``): caches of its jobs;
        the tables read the run records (:meth:`record_files`)."""
        return self.benchmarks[dataset].run_files()

    @property
    def sharded_datasets(self) -> list[str]:
        """Datasets whose generator makes them in shards, one job each (TSP), merged by a job of their own."""
        return [name for name, d in self.datasets.items() if get_generator(d.generator).sharding is not None]

    def label_shard_files(self, dataset: str) -> list[str]:
        """The shard files a sharded dataset is merged from (none for other datasets)."""
        spec = self.datasets[dataset]
        sharding = get_generator(spec.generator).sharding
        if sharding is None:
            return []
        return [LABEL_SHARD_FILE.format(dataset=dataset, shard=i) for i in range(sharding.count(spec.params))]

    def raw_files(self, dataset: str) -> list[str]:
        """Raw files (paths under ``resources/raw``) a dataset is made from: downloads, one job each."""
        spec = self.datasets[dataset]
        generator = get_generator(spec.generator)
        own = generator.input_files(spec.params) if generator.input_files else []  # a user's file (graph_file)
        if generator.raw_files is None:
            return own
        return [f"{RAW_DIR}/{raw.relative_path}" for raw in generator.raw_files(spec.params)] + own

    def split_raw_files(self, dataset: str) -> list[str]:
        """The released split files a dataset's split imports (scheme ``published``), downloads; else none."""
        spec = self.datasets[dataset]
        if spec.split["scheme"] == "file":  # the user's split file: an input, so that a changed file splits again
            return [spec.split["path"]]
        release = published_split(spec)
        return [] if release is None else [f"{RAW_DIR}/{raw.relative_path}" for raw in release.files]

    def _downloads(self, spec: DatasetSpec) -> list[tuple[object, str | None]]:
        generator = get_generator(spec.generator)
        out = [(raw, spec.params.get("mirror") or None)
               for raw in (generator.raw_files(spec.params) if generator.raw_files else [])]
        release = published_split(spec)
        if release is not None:
            out.extend((raw, spec.split.get("mirror") or None) for raw in release.files)
        return out

    def raw_download(self, path: str) -> tuple[object, str | None]:
        """(RawFile, mirror) of a raw file some dataset needs; the mirror of the first dataset naming it."""
        for spec in self.datasets.values():
            for raw, mirror in self._downloads(spec):
                if f"{RAW_DIR}/{raw.relative_path}" == path:
                    return raw, mirror
        raise ValueError(f"no dataset of the config needs the raw file {path}")

    @property
    def all_raw_files(self) -> list[str]:
        """Every download of the suite (datasets' raw files and released split files), under ``resources/raw``."""
        return sorted({f"{RAW_DIR}/{raw.relative_path}" for spec in self.datasets.values()
                       for raw, _ in self._downloads(spec)})

    def baselines(self, dataset: str) -> dict:
        """The non-learnt baselines a dataset's generator reports it with, by name
        (:class:`~gnnbench.data.generators.base.Baseline`; TSP: the k-NN heuristic)."""
        return {b.name: b for b in get_generator(self.datasets[dataset].generator).baselines}

    @property
    def baseline_names(self) -> list[str]:
        """Every baseline name of the suite's datasets (the workflow's wildcard values)."""
        return sorted({name for dataset in self.datasets for name in self.baselines(dataset)})

    def baseline_files(self, dataset: str) -> list[str]:
        """The run records of the baselines reported in a dataset's table."""
        return [BASELINE_RECORD_FILE.format(dataset=dataset, baseline=name) for name in self.baselines(dataset)]

    def baseline_batch_size(self, dataset: str) -> int:
        """Evaluation batch size of the baselines (batch-averaged metrics depend on it): the models' most common
        batch size (ties: the larger), 64 — the TSP configs' — without models."""
        sizes = [int(m.config["batch_size"]) for m in self.benchmarks[dataset].models.values()]
        return max(sizes, key=lambda b: (sizes.count(b), b)) if sizes else 64

    def suite_files(self, protocol: str) -> list[str]:
        """Reports of one protocol spanning its benchmarks (e.g. the pitfalls ranking tables)."""
        benchmarks = [b for b in self.benchmarks.values() if b.protocol == protocol]
        return get_protocol(protocol).suite_files(benchmarks) if benchmarks else []

    def table_files(self) -> list[str]:
        """Everything a full run of the suite produces at the end: per-dataset tables (and plots) with the tuning
        reports of the benchmarks that tune models, suite tables (the protocols' and the critical-difference
        comparisons')."""
        files = [f for b in self.benchmarks.values() for f in b.table_files() + b.tuning_report_files()]
        for protocol in dict.fromkeys(b.protocol for b in self.benchmarks.values()):
            files += self.suite_files(protocol)
        return files + [f for c in self.critical_difference().values() for f in paths.table_files(c["table"])]

    def critical_difference(self) -> dict[str, dict]:
        """The comparisons of models over datasets (:mod:`gnnbench.reporting.critical_difference`) of the suite's
        report job, one per protocol: its ``models`` are the labels two or more of its benchmarks have (in order of
        first appearance), its ``datasets`` the benchmarks that have every one of them; where both are 2 or more,
        ``table`` (the name of its table and figure), ``title``, ``models``, ``datasets``, their run-record files
        (``records``) and the protocol's scored ``stage``."""
        out = {}
        for protocol in dict.fromkeys(b.protocol for b in self.benchmarks.values()):
            of_protocol = [b for b in self.benchmarks.values() if b.protocol == protocol]
            labels = [m for b in of_protocol for m in b.models]
            models = [m for m in dict.fromkeys(labels) if labels.count(m) >= 2]
            benchmarks = [b for b in of_protocol if all(m in b.models for m in models)]
            if len(benchmarks) >= 2 and len(models) >= 2:
                out[protocol] = {"table": paths.CRITICAL_DIFFERENCE.format(protocol=protocol),
                                 "title": f"{protocol}: {len(models)} models over {len(benchmarks)} datasets",
                                 "models": models, "datasets": [b.dataset for b in benchmarks],
                                 "records": [f for b in benchmarks for f in b.record_files()],
                                 "stage": get_protocol(protocol).significance_stage}
        return out

    def significance_files(self) -> list[str]:
        """The paired-test tables (:mod:`gnnbench.reporting.significance`) of every benchmark with two or more
        models: ``results/tables/{dataset}_significance.{csv,md,parquet}``."""
        return [SIGNIFICANCE_FILE.format(dataset=name, ext=ext) for name, b in self.benchmarks.items()
                if len(b.models) >= 2 for ext in paths.TABLE_FORMATS]

    # ------------------------------------------------------------------------------------------ report

    def pe_pairs(self, dataset: str) -> list[tuple[str, str, str]]:
        """(architecture, label without PE, label with PE) of a benchmark's models whose configs differ by Laplacian
        positional encodings (:func:`gnnbench.reporting.plots.pe_pairs`), where its protocol draws that figure."""
        return self.benchmarks[dataset].pe_pairs() if "pe" in self.plot_kinds(dataset) else []

    def plot_kinds(self, dataset: str) -> list[str]:
        """Figures of a benchmark beside its tables, as its protocol draws them (:meth:`Benchmark.plot_kinds`)."""
        return self.benchmarks[dataset].plot_kinds()

    def table_protocol(self, table: str) -> tuple[str | None, str | None]:
        """(protocol, dataset) of a table of :meth:`table_names`: a dataset's tables (``{dataset}``,
        ``{dataset}_folds``, ``{dataset}_significance``) belong to its benchmark; a suite-wide table to the
        protocol whose :meth:`~gnnbench.protocols.base.Protocol.suite_files` make it."""
        for protocol, comparison in self.critical_difference().items():
            if table == comparison["table"]:
                return protocol, None
        for suffix in ("", "_folds", "_significance"):
            base = table.removesuffix(suffix) if suffix else table
            if (base != table or not suffix) and base in self.benchmarks:
                return self.benchmarks[base].protocol, base
        for protocol in dict.fromkeys(b.protocol for b in self.benchmarks.values()):
            if any(Path(f).stem == table for f in self.suite_files(protocol)):
                return protocol, None
        return None, None

    def table_caption(self, table: str) -> str:
        """The report's caption of a table, from its protocol (:meth:`~gnnbench.protocols.base.Protocol.table_caption`);
        the paired-test tables' caption is the report template's, the critical-difference tables' too."""
        if any(table == c["table"] for c in self.critical_difference().values()):
            return ""
        protocol, dataset = self.table_protocol(table)
        return "" if protocol is None else get_protocol(protocol).table_caption(table, dataset)

    def figure_caption(self, kind: str, dataset: str) -> str:
        """The report's caption of a figure of a benchmark, from its protocol."""
        return get_protocol(self.benchmarks[dataset].protocol).figure_caption(kind, dataset)

    def plot_files(self) -> list[str]:
        """The figure files of every benchmark (``results/plots/{dataset}_{kind}.{png,svg}``) and the suite's
        critical-difference diagrams (``results/plots/critical_difference_{protocol}.{png,svg}``)."""
        return [PLOT_FILE.format(dataset=dataset, kind=kind, ext=ext) for dataset in self.benchmarks
                for kind in self.plot_kinds(dataset) for ext in PLOT_FORMATS] + [
                paths.SUITE_PLOT.format(name=c["table"], ext=ext) for c in self.critical_difference().values()
                for ext in PLOT_FORMATS]

    def table_names(self) -> list[str]:
        """Names of the Markdown tables a full run writes (``results/tables/{name}.md``)."""
        return [Path(f).stem for f in self.table_files() + self.significance_files() if f.endswith(".md")]

    def report_files(self) -> list[str]:
        """What the HTML report shows beyond the tables: figures, the tables as HTML pages, the suite."""
        return (self.plot_files() + [TABLE_PAGE.format(table=name) for name in self.table_names()]
                + [SUITE_REPORT.format(ext=ext) for ext in ("yaml", "html")])


# what a suite that extends another may say besides its settings (device, resources, ...: the schema's other keys)
EXTENDS_KEYS = ("extends", "datasets", "models", "benchmarks")


def expand_extends(config: dict, base_dir: str | os.PathLike | None = None) -> dict:
    """The full suite an extending suite stands for; a suite without ``extends`` is returned as it is.

    ``extends:`` names a paper suite that ships with gnnbench (``benchmarking-gnns``, ``benchmarking-gnns-500k``,
    ``benchmarking-gnns-pe``, ``pitfalls``, ``fair-comparison``: :func:`gnnbench.packaged.paper_suites`) or a suite
    file (a path ending in .yaml, relative to ``base_dir``, the extending suite's folder; it may extend another in
    turn). The result holds the parent's datasets and benchmarks, restricted to ``datasets: [ZINC, ...]`` when that
    list is given, with every entry of ``models:`` added to each of them (a model entry's own ``datasets: [...]``
    restricts it to those), ``benchmarks: {NAME: {...}}`` merged into the parent's benchmark of that name (its
    ``models`` added, its other keys replacing the parent's) and the extending suite's settings (``device``,
    ``resources`` per stage, ...) over the parent's. An added model without ``seeds`` in a benchmark whose baselines
    each carry their own (benchmarking-gnns) runs on the seeds most of them use, so that its runs pair with theirs in
    the significance tests. Paths in a parent suite file (model, graph and split files) stay relative to its folder.
    """
    return _expand(config, base_dir)[0]


def _expand(config: object, base_dir: str | os.PathLike | None,
            seen: tuple[Path, ...] = ()) -> tuple[object, dict[str, list[str]], str]:
    """:func:`expand_extends`, also returning label -> benchmarks of each model the suite added (for the hints of
    :func:`load_suite`) and the parent's name."""
    if not isinstance(config, dict) or "extends" not in config:
        return config, {}, ""

    base = Path.cwd() if base_dir is None else Path(base_dir)
    name = config["extends"]
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"extends: expected a paper suite's name ({', '.join(paper_suites())}) or the path of a "
                          f"suite file, got {name!r}")
    if name.endswith(SUITE_SUFFIXES):
        parent_file = (base / name).absolute()
        if not parent_file.is_file():
            raise ConfigError(f"extends: suite file {parent_file} does not exist (a relative path is read from the "
                              "extending suite's folder); give an existing file or a paper suite's name "
                              f"({', '.join(paper_suites())})")
    else:
        parent_file = paper_suite(name, "extends")
    if parent_file.resolve() in seen:
        raise ConfigError(f"extends: {name} extends itself (through {' -> '.join(p.name for p in seen)}); remove the "
                          "loop")
    allowed = set(EXTENDS_KEYS) | {k for k in _schema_properties() if k not in ("datasets", "benchmarks")}
    for key in config:
        if key not in allowed and not str(key).startswith("_"):
            raise ConfigError(f"{key}: not a key of a suite that extends another; it takes {', '.join(EXTENDS_KEYS)} "
                              f"and the settings {', '.join(sorted(allowed - set(EXTENDS_KEYS)))}")
    parent, _, _ = _expand(load_yaml(parent_file, "config file"), parent_file.parent, (*seen, parent_file.resolve()))
    if not isinstance(parent, dict) or not isinstance(parent.get("benchmarks"), dict) \
            or not isinstance(parent.get("datasets"), dict):
        raise ConfigError(f"extends: {parent_file} is not a suite (a mapping with datasets and benchmarks)")
    parent = _absolute_paths(with_absolute_files(parent, parent_file.parent), parent_file.parent)
    known = list(parent["benchmarks"])
    selected = _name_list(config.get("datasets"), "datasets", known, name) if "datasets" in config else known
    for dataset in selected:
        other = (parent["benchmarks"][dataset] or {}).get("compare_with")
        if other is not None and other not in selected:
            raise ConfigError(f"datasets: {dataset} is compared with {other} in {name} (its compare_with); add {other} "
                              "to datasets")
    # the parent's settings; its "_" keys held YAML anchors, already resolved where they were used
    out = {key: value for key, value in parent.items()
           if key not in ("datasets", "benchmarks") and not str(key).startswith("_")}
    for key, value in config.items():
        if key not in EXTENDS_KEYS and not str(key).startswith("_"):
            out[key] = ({**out[key], **value} if key == "resources" and isinstance(out.get(key), dict)
                        and isinstance(value, dict) else value)
    out["datasets"] = {d: parent["datasets"][d] for d in selected if d in parent["datasets"]}
    benchmarks = {d: _copy_entry(parent["benchmarks"][d]) for d in selected}
    added = _add_models(config.get("models"), benchmarks, selected, name, known)
    overrides = config.get("benchmarks") or {}
    if not isinstance(overrides, dict):
        raise ConfigError("benchmarks: expected a mapping of benchmark name -> keys to add or replace, e.g. "
                          "{ZINC: {models: {Mine: ...}}}")
    for dataset, entry in overrides.items():
        _name_list([dataset], "benchmarks", selected, name, known)
        if not isinstance(entry, dict):
            raise ConfigError(f"benchmarks.{dataset}: expected a mapping of keys to add or replace")
        benchmarks[dataset].update({k: v for k, v in entry.items() if k != "models"})
        models = {}
        for label, model in (entry.get("models") or {}).items():  # a new label: the baselines' seeds as for models
            models[label] = model if label in benchmarks[dataset]["models"] else \
                _with_baseline_seeds(model, benchmarks[dataset])
        benchmarks[dataset]["models"] = {**benchmarks[dataset]["models"], **models}
    out["benchmarks"] = benchmarks
    return out, added, name


def _schema_properties() -> dict:
    return yaml.safe_load(SCHEMA_PATH.read_text())["properties"]


def _name_list(value: object, where: str, known: list[str], parent: str,
               everything: list[str] | None = None) -> list[str]:
    """``value``, a list of some of ``known`` (the parent suite's benchmarks, or those the extending suite selects
    from ``everything``, all of the parent's), in the given order."""
    everything = known if everything is None else everything
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of datasets of {parent} (e.g. [{', '.join(known[:2])}]), got "
                          f"{value!r}")
    for item in value:
        if item in everything and item not in known:
            raise ConfigError(f"{where}: dataset {item!r} is in {parent} but not among the datasets this suite "
                              f"selects (datasets: {', '.join(known)}); add {item} to datasets, or drop it here")
        if item not in known:
            raise ConfigError(f"{where}: unknown dataset {item!r} of {parent}; its datasets: {', '.join(everything)}")
    return list(dict.fromkeys(value))


def _copy_entry(entry: object) -> dict:
    """A parent's benchmark entry, with its own models mapping (the parent's YAML anchors share one among several)."""
    entry = dict(entry or {})
    entry["models"] = dict(entry.get("models") or {})
    return entry


def _add_models(models: object, benchmarks: dict[str, dict], selected: list[str], parent: str,
                everything: list[str]) -> dict[str, list[str]]:
    """Add the extending suite's ``models`` to ``benchmarks`` (the ``selected`` ones of ``everything``, the parent's);
    label -> the benchmarks each went to."""
    if models is None:
        return {}
    if not isinstance(models, dict) or not models:
        raise ConfigError("models: expected a mapping of label -> model entry, e.g. {MyGNN: {model: my_gnn.py:MyGNN, "
                          "set: {hidden_channels: 64}}}")
    added = {}
    for label, entry in models.items():
        where = f"models.{label}"
        targets = selected
        if isinstance(entry, dict) and "datasets" in entry:
            entry = dict(entry)
            targets = _name_list(entry.pop("datasets"), f"{where}.datasets", selected, parent, everything)
        for dataset in targets:
            benchmark = benchmarks[dataset]
            if label in benchmark["models"]:
                raise ConfigError(f"{where}: benchmark {dataset} of {parent} already has a model {label}; choose "
                                  "another label")
            benchmark["models"][label] = _with_baseline_seeds(entry, benchmark)
        added[label] = targets
    return added


def _with_baseline_seeds(entry: object, benchmark: dict) -> object:
    """A model entry added to a parent's ``benchmark``, given the seeds most of its baselines use where the benchmark
    has none of its own and each baseline carries its own (benchmarking-gnns), so that its runs pair with theirs."""
    given = dict(entry) if isinstance(entry, dict) else entry
    if "seeds" not in benchmark and not (isinstance(given, dict) and "seeds" in given):
        seeds = [m["seeds"] for m in benchmark["models"].values() if isinstance(m, dict) and "seeds" in m]
        if seeds:
            given = {**(given if isinstance(given, dict) else {"preset": given}), "seeds": max(seeds, key=seeds.count)}
    return given


def _absolute_paths(config: dict, base_dir: Path) -> dict:
    """``config`` (a parent suite) with its datasets' graph files and split files absolute against ``base_dir``."""
    datasets = {}
    for name, entry in (config.get("datasets") or {}).items():
        if isinstance(entry, dict):
            entry = dict(entry)
            try:
                path_params = get_generator(entry.get("generator")).path_params
            except (ConfigError, TypeError):
                path_params = ()  # an unknown generator is reported when the suite loads
            if isinstance(entry.get("params"), dict):
                entry["params"] = {k: str(Path(base_dir, v).absolute()) if k in path_params and isinstance(v, str)
                                   else v for k, v in entry["params"].items()}
            if isinstance(entry.get("split"), dict) and isinstance(entry["split"].get("path"), str):
                entry["split"] = {**entry["split"], "path": str(Path(base_dir, entry["split"]["path"]).absolute())}
        datasets[name] = entry
    return {**config, "datasets": datasets}


def load_suite_file(path: str | os.PathLike) -> Suite:
    """Read a suite file (a key given twice is refused) and load it (:func:`load_suite`); relative paths in it are
    read from the file's folder."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist; pass an existing --configfile")
    return load_suite(load_yaml(path, "config file"), base_dir=path.parent)


def load_suite(config: dict, schema_path: str | os.PathLike = SCHEMA_PATH,
               base_dir: str | os.PathLike | None = None) -> Suite:
    """Validate a workflow config (already parsed) and resolve it into a :class:`Suite`. ``base_dir``: the suite
    file's folder, against which a model given as a file (``model: my_gnn.py:MyGNN``) is found (default: the
    working folder); run configs name such a file by its absolute path. A suite that ``extends:`` another is
    expanded first (:func:`expand_extends`)."""
    config, added, parent = _expand(config, base_dir)
    try:
        return _load(config, Path(schema_path), base_dir)
    except ConfigError as exc:
        # an added model's problem in one of the parent's benchmarks: say where the user wrote it
        for label, datasets in added.items():
            if any(str(exc).startswith(f"benchmarks.{d}.models.{label}") for d in datasets):
                raise ConfigError(f"{exc} (models.{label} of this suite, added to {len(datasets)} benchmarks of "
                                  f"{parent}: list the ones it can do in models.{label}.datasets)") from None
        raise


def _load(config: dict, schema_path: Path, base_dir: str | os.PathLike | None) -> Suite:
    _check_schema(config, Path(schema_path))

    config = with_absolute_files(config, Path.cwd() if base_dir is None else base_dir)
    settings = {k: config.get(k, v) for k, v in DEFAULTS.items()}
    for name in config["benchmarks"]:
        if name not in config["datasets"]:
            raise ConfigError(f"benchmarks.{name}: unknown dataset {name!r}; define it under datasets "
                              f"(defined: {', '.join(config['datasets'])})")
    protocols = {name: get_protocol(entry.get("protocol", DEFAULT_PROTOCOL), f"benchmarks.{name}.protocol")
                 for name, entry in config["benchmarks"].items()}
    datasets = {name: _dataset(name, entry, protocols.get(name), Path.cwd() if base_dir is None else base_dir)
                for name, entry in config["datasets"].items()}
    benchmarks = {}
    for name, entry in config["benchmarks"].items():
        where, protocol = f"benchmarks.{name}", protocols[name]
        protocol.check_dataset(datasets[name], where)
        protocol.check_split(datasets[name], f"datasets.{name}.split")
        benchmarks[name] = protocol.benchmark(datasets[name], entry, where)
    for protocol in dict.fromkeys(protocols.values()):
        protocol.check_suite([b for b in benchmarks.values() if b.protocol == protocol.name], benchmarks)
    resources = _resources(config, settings)
    settings.update({key: resources["train"][name] for key, name in TRAIN_SHORTHANDS.items()})
    return Suite(datasets=datasets, benchmarks=benchmarks, resources=resources, **settings)


def _resources(config: dict, settings: dict) -> dict[str, dict]:
    """Per-stage scheduler resources: defaults, then the train shorthands, then `resources` from the config."""
    given = config.get("resources") or {}
    out = {stage: {**defaults, **(given.get(stage) or {})} for stage, defaults in RESOURCE_DEFAULTS.items()}
    train = given.get("train") or {}
    for key, name in TRAIN_SHORTHANDS.items():
        if key in config:
            if name in train and train[name] != config[key]:
                raise ConfigError(f"resources.train.{name} ({train[name]}) and {key} ({config[key]}) disagree; "
                                  f"drop {key}")
            out["train"][name] = config[key]
    if "gpus" not in train and settings["device"] == "cuda":
        out["train"]["gpus"] = 1
    if settings["device"] == "cuda" and not out["train"]["gpus"]:
        raise ConfigError("resources.train.gpus: device is cuda but no GPU is requested; set gpus to 1 or more")
    return out


def _check_schema(config: object, schema_path: Path) -> None:
    import jsonschema

    schema = yaml.safe_load(schema_path.read_text())
    if not isinstance(config, dict):
        raise ConfigError("config: expected a mapping with keys datasets and benchmarks; see config/config.yaml")
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(config))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "config"
        message = error.message.splitlines()[0]
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            import re

            schema_here = error.schema
            extras = [k for k in error.instance if k not in schema_here.get("properties", {})
                      and not any(re.search(p, k) for p in schema_here.get("patternProperties", {}))]
            message = f"Additional properties are not allowed ({', '.join(map(repr, extras))} was unexpected)"
            if where == "resources" and "tsp_label" in extras:  # the stage's name before any generator could shard
                message = "'tsp_label' is now called label_shard (the stage of every sharded dataset's shard jobs)"
        if error.validator == "oneOf":
            message = f"{error.instance!r} must be a preset name or a mapping with keys preset and set"
        keys = [part for part in error.absolute_path if isinstance(part, str)]
        if error.validator in ("minimum", "maximum") and keys and keys[-1] in ("seed", "seeds"):
            message = f"a seed must be an integer from 0 to {SEED_MAX} (2**32 - 1), got {error.instance!r}"
        if error.validator == "maxLength" and isinstance(error.instance, str):  # a dataset name or model label
            message = (f"name {error.instance[:20]!r}... is {len(error.instance)} characters long; it becomes a "
                       f"folder or file name: use at most {error.validator_value} characters")
        if error.validator == "enum" and keys and keys[-1] == "source":
            check_source(error.instance, where)  # a source spelled by its protocol's name: "renamed: use ..."
        if error.validator == "not" and isinstance(error.instance, str):  # see the schema: a periodic ending
            shown = repr(error.instance) if len(error.instance) <= 40 else f"{error.instance[:40]!r}..."
            message = (f"name {shown} ends in one piece repeated 20 times or more, which Snakemake "
                       "refuses in a wildcard (PeriodicWildcardError); shorten the repetition")
        raise ConfigError(f"{where}: {message}; fix it (schema: workflow/schemas/config.schema.yaml)")


def published_split(dataset: DatasetSpec):
    """The released split (:class:`~gnnbench.data.generators.base.PublishedSplit`) a dataset imports (split scheme
    ``published``), or None."""
    if dataset.split["scheme"] != "published":
        return None
    generator = get_generator(dataset.generator)
    if generator.published_splits is None:
        return None
    return generator.published_splits(dataset.params, dataset.split["source"])


def _dataset(name: str, entry: dict, protocol, base_dir: str | os.PathLike | None = None) -> DatasetSpec:
    """A dataset entry resolved; its split defaults to what the protocol of its benchmark (if any) evaluates on. A
    user's file (a graph file, a split file) given by a relative path is found relative to ``base_dir``."""
    where = f"datasets.{name}"
    generator = get_generator(entry["generator"], f"{where}.generator")
    params = resolve_params(generator, entry.get("params"), f"{where}.params", base_dir)
    seed = entry.get("seed", 0)
    meta = generator.describe(name, params, seed)
    default = generator.default_split(params) if callable(generator.default_split) else generator.default_split
    generator_split = resolve_split(default, f"generator {generator.name} default split")
    spec = DatasetSpec(name, generator.name, seed, params, generator_split, meta, generator_split,
                       entry.get("leakage_threshold", DEFAULT_THRESHOLD))
    given = entry.get("split")
    if given is None and protocol is not None:
        given = protocol.default_split(spec)
    if given is not None:
        spec.split = resolve_split(given, f"{where}.split")
    if spec.split["scheme"] == "file":
        spec.split["path"] = str(Path(base_dir or ".", spec.split["path"]).absolute())
        spec.num_folds  # noqa: B018 — reads the file: a missing, malformed or out-of-range split fails the suite now
    class_sizes = meta.statistics.get("all", {}).get("class_sizes")
    if spec.split["scheme"] in ("random_per_class", "random_sizes") and class_sizes is not None:
        check_class_sizes(f"{where}.split", class_sizes, spec.split["scheme"], spec.split)
    if spec.split["scheme"] == "published" and published_split(spec) is None:
        raise ConfigError(f"{where}.split.scheme: no {spec.split['source']} split was published for dataset {name} "
                          f"(generator {generator.name}); use stratified_kfold")
    # a dataset comes with a split when its description gives the sizes, or several splits (their sizes vary)
    if spec.split["scheme"] == "given" and not meta.split_sizes and meta.given_splits < 2:
        raise ConfigError(f"{where}.split.scheme: dataset {name} comes without a split; use "
                          f"{'random_per_class' if meta.transductive else 'stratified_kfold'}")
    return spec
