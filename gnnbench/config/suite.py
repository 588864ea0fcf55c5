"""The workflow's suite configuration (``config/config.yaml``): datasets, benchmarks, and the runs they imply.

Loading checks the config against ``workflow/schemas/config.schema.yaml`` and then semantically: known
generators and parameters, benchmarks that name defined datasets, presets that exist, override keys and
types, folds that exist, and that every model can be built for its dataset. Each problem is reported as one
line naming the key and the fix, before anything is generated or trained.

Output layout (paths relative to the working directory)::

    resources/raw/{source}/{file}                               (downloads: MNIST IDX files, CIFAR-10 tarball, ...)
    results/datasets/{dataset}/graphs.parquet, meta.json
    results/datasets/{dataset}/label_shards/{shard}.parquet   (TSP: tours of one labelling shard)
    results/features/{dataset}/laplacian_pe_k{k}.parquet
    results/splits/{dataset}/splits.json
    results/runs/{dataset}/{model}/seed{seed}/fold{fold}/metrics.json, history.parquet, checkpoint.pt
    results/baselines/{dataset}/knn_k2.json                    (TSP: the k-NN heuristic, scored like a run)
    results/tables/{dataset}.csv, .md, .parquet
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from gnnbench.config.presets import REPO_ROOT, run_config
from gnnbench.data.generators import get_generator, resolve_params
from gnnbench.data.meta import DatasetMeta
from gnnbench.errors import ConfigError, GnnbenchError

SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml"
DATASET_DIR = "results/datasets/{dataset}"
PE_FILE = "results/features/{dataset}/laplacian_pe_k{k}.parquet"
SPLITS_FILE = "results/splits/{dataset}/splits.json"
RUN_DIR = "results/runs/{dataset}/{model}/seed{seed}/fold{fold}"
RAW_DIR = "resources/raw"  # downloads (raw files), shared by all suites run in this directory
LABEL_SHARD_FILE = "results/datasets/{dataset}/label_shards/{shard}.parquet"
KNN_BASELINE_FILE = "results/baselines/{dataset}/knn_k{k}.json"
KNN_BASELINE_K = 2  # the paper's TSP k-NN heuristic (F1 0.693)
SHARDED_GENERATORS = ("tsp",)  # generators whose labelling runs as one job per shard
TABLE_FILE = "results/tables/{dataset}.{ext}"
TABLE_FORMATS = ("csv", "md", "parquet")
DEFAULTS = {"device": "auto", "threads_per_run": 1, "mem_mb_per_run": 2000, "runtime_per_run": 720}
# What each stage's jobs ask a scheduler for (config key `resources`; runtime in minutes). The `train` defaults
# come from the older top-level keys (threads_per_run, ...), which stay accepted as shorthands.
RESOURCE_DEFAULTS = {
    "train": {"cpus": 1, "mem_mb": 2000, "runtime": 720, "gpus": 0},
    "dataset": {"cpus": 1, "mem_mb": 8000, "runtime": 240},
    "tsp_label": {"cpus": 1, "mem_mb": 2000, "runtime": 240},
    "features": {"cpus": 1, "mem_mb": 4000, "runtime": 120},
}
TRAIN_SHORTHANDS = {"threads_per_run": "cpus", "mem_mb_per_run": "mem_mb", "runtime_per_run": "runtime"}


@dataclass
class DatasetSpec:
    name: str
    generator: str
    seed: int
    params: dict
    split: dict
    meta: DatasetMeta  # described from the generator: no data needed

    @property
    def num_folds(self) -> int:
        return self.split.get("folds", 1) if self.split["protocol"] == "stratified_kfold" else 1


@dataclass
class ModelSpec:
    label: str
    preset: str | None
    config: dict  # resolved run config; the run's seed is filled in per run


@dataclass
class Benchmark:
    dataset: str
    seeds: list[int]
    folds: list[int]
    models: dict[str, ModelSpec] = field(default_factory=dict)


@dataclass
class Suite:
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

    def run_config(self, dataset: str, model: str, seed: int) -> dict:
        return {**self.benchmarks[dataset].models[model].config, "seed": int(seed)}

    def pe_dim(self, dataset: str, model: str) -> int | None:
        config = self.benchmarks[dataset].models[model].config
        return config["pos_enc_dim"] if config.get("pos_enc") else None

    def runs(self, dataset: str | None = None) -> list[dict]:
        return [{"dataset": b.dataset, "model": label, "seed": seed, "fold": fold}
                for b in self.benchmarks.values() if dataset in (None, b.dataset)
                for label in b.models for seed in b.seeds for fold in b.folds]

    def metrics_files(self, dataset: str | None = None) -> list[str]:
        return [RUN_DIR.format(**run) + "/metrics.json" for run in self.runs(dataset)]

    @property
    def sharded_datasets(self) -> list[str]:
        return [name for name, d in self.datasets.items() if d.generator in SHARDED_GENERATORS]

    def label_shard_files(self, dataset: str) -> list[str]:
        """Label shards a sharded dataset is merged from (none for other datasets)."""
        spec = self.datasets[dataset]
        if spec.generator not in SHARDED_GENERATORS:
            return []
        from gnnbench.data.generators import tsp

        return [LABEL_SHARD_FILE.format(dataset=dataset, shard=i) for i in range(tsp.num_shards(spec.params))]

    def raw_files(self, dataset: str) -> list[str]:
        """Raw files (paths under ``resources/raw``) a dataset is made from: downloads, one job each."""
        spec = self.datasets[dataset]
        generator = get_generator(spec.generator)
        if generator.raw_files is None:
            return []
        return [f"{RAW_DIR}/{raw.relative_path}" for raw in generator.raw_files(spec.params)]

    def raw_download(self, path: str) -> tuple[object, str | None]:
        """(RawFile, mirror) of a raw file some dataset needs; the mirror of the first dataset naming it."""
        for spec in self.datasets.values():
            generator = get_generator(spec.generator)
            for raw in (generator.raw_files(spec.params) if generator.raw_files else []):
                if f"{RAW_DIR}/{raw.relative_path}" == path:
                    return raw, spec.params.get("mirror") or None
        raise ValueError(f"no dataset of the config needs the raw file {path}")

    @property
    def all_raw_files(self) -> list[str]:
        return sorted({f for d in self.datasets for f in self.raw_files(d)})

    def baseline_files(self, dataset: str) -> list[str]:
        """Non-learnt baselines reported in a dataset's table: the k-NN heuristic for TSP datasets."""
        if self.datasets[dataset].generator != "tsp":
            return []
        return [KNN_BASELINE_FILE.format(dataset=dataset, k=KNN_BASELINE_K)]

    def baseline_batch_size(self, dataset: str) -> int:
        """Evaluation batch size of the baselines (batch-averaged metrics depend on it): the models' most common
        batch size (ties: the larger), 64 — the TSP configs' — without models."""
        sizes = [int(m.config["batch_size"]) for m in self.benchmarks[dataset].models.values()]
        return max(sizes, key=lambda b: (sizes.count(b), b)) if sizes else 64

    def table_files(self) -> list[str]:
        return [TABLE_FILE.format(dataset=d, ext=ext) for d in self.benchmarks for ext in TABLE_FORMATS]


def load_suite_file(path: str | os.PathLike) -> Suite:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist; pass an existing --configfile")
    try:
        config = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML ({str(exc).splitlines()[0]}); fix it") from None
    return load_suite(config)


def load_suite(config: dict, schema_path: str | os.PathLike = SCHEMA_PATH) -> Suite:
    """Validate a workflow config (already parsed) and resolve it into a :class:`Suite`."""
    _check_schema(config, Path(schema_path))
    settings = {k: config.get(k, v) for k, v in DEFAULTS.items()}
    datasets = {name: _dataset(name, entry) for name, entry in config["datasets"].items()}
    benchmarks = {}
    for name, entry in config["benchmarks"].items():
        where = f"benchmarks.{name}"
        if name not in datasets:
            raise ConfigError(f"{where}: unknown dataset {name!r}; define it under datasets "
                              f"(defined: {', '.join(datasets)})")
        benchmarks[name] = _benchmark(datasets[name], entry, where)
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
        if error.validator == "oneOf":
            message = f"{error.instance!r} must be a preset name or a mapping with keys preset and set"
        raise ConfigError(f"{where}: {message}; fix it (schema: workflow/schemas/config.schema.yaml)")


def _dataset(name: str, entry: dict) -> DatasetSpec:
    where = f"datasets.{name}"
    generator = get_generator(entry["generator"], f"{where}.generator")
    params = resolve_params(generator, entry.get("params"), f"{where}.params")
    seed = entry.get("seed", 0)
    split = dict(entry.get("split") or generator.default_split)
    if split["protocol"] == "stratified_kfold":
        split = {"folds": 5, "val_fraction": 0.25, "seed": 0, **split}
    meta = generator.describe(name, params, seed)
    if split["protocol"] == "given" and not meta.split_sizes:
        raise ConfigError(f"{where}.split.protocol: dataset {name} comes without a split; use stratified_kfold")
    if split["protocol"] == "stratified_kfold" and meta.task != "graph_classification":
        raise ConfigError(f"{where}.split.protocol: stratified_kfold needs graph labels but {name} is a "
                          f"{meta.task} dataset; use given")
    return DatasetSpec(name, generator.name, seed, params, split, meta)


def _benchmark(dataset: DatasetSpec, entry: dict, where: str) -> Benchmark:
    folds = entry.get("folds", list(range(dataset.num_folds)))
    bad = [f for f in folds if f >= dataset.num_folds]
    if bad:
        raise ConfigError(f"{where}.folds: fold(s) {bad} do not exist; {dataset.name} has {dataset.num_folds} "
                          f"fold(s), numbered from 0")
    benchmark = Benchmark(dataset.name, list(entry["seeds"]), list(folds))
    shared = entry.get("set") or {}
    for label, model in entry["models"].items():
        model_where = f"{where}.models.{label}"
        model = {"preset": model} if isinstance(model, str) else model
        preset, own = model.get("preset"), {**shared, **(model.get("set") or {})}
        if "model" in model:
            own["model"] = model["model"]
        if "budget" in model:
            config = _fit(dataset, preset, own, model, model_where)
        else:
            config = run_config(preset, own, where=model_where)
        _check_buildable(config, dataset.meta, model_where)
        benchmark.models[label] = ModelSpec(label, preset, config)
    return benchmark


def _fit(dataset: DatasetSpec, preset: str | None, overrides: dict, entry: dict, where: str) -> dict:
    """Run config of a model entry that names a parameter budget: the fitted hidden width (and out_dim)."""
    from gnnbench.config.budget import base_preset, fit_budget
    from gnnbench.data.catalog import published_name

    model = overrides.get("model") or (run_config(preset, where=where)["model"] if preset else None)
    if model is None:
        raise ConfigError(f"{where}: a budget needs the model (e.g. model: GCN) or a preset to start from")
    base = preset or base_preset(published_name(dataset.generator, dataset.name), model)
    config = run_config(base, overrides, where=where)
    try:
        return fit_budget(config, dataset.meta, entry["budget"], entry.get("layers")).config
    except GnnbenchError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _check_buildable(config: dict, meta: DatasetMeta, where: str) -> None:
    from gnnbench.models import build_model

    try:
        build_model(config, meta)
    except GnnbenchError as exc:
        raise ConfigError(f"{where}: {exc}") from None
