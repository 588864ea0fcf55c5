"""Protocol "benchmarking-gnns" — Dwivedi et al., "Benchmarking Graph Neural Networks" (spec benchmarking-gnns.md).

Splits: the split that comes with the data (``given``: SBM, TSP, ..., OGBL-COLLAB's evaluation pairs) or
stratified k-fold cross-validation of graphs (CSL: 5 folds). A run is one model config × one seed × one fold
(:func:`gnnbench.training.run.train_run`; link prediction: :mod:`gnnbench.training.link_prediction`, whose scheduler
is stepped on the validation Hits@50 with mode max):
Adam with L2 weight decay, ReduceLROnPlateau on the validation loss, stop when the learning rate falls below
``min_lr``, at ``epochs`` or when the wall-clock budget is spent; the **last** epoch's scores are reported. The
budget is ``max_time`` hours per run, divided by 10 per fold under cross-validation (the original does this for
CSL and TU). Models are the benchmark's: input encoders → L layers → task head (:func:`gnnbench.models.build_model`),
sized by the published configs or fitted to a parameter budget. Tables: mean ± std over seeds (and folds) of the
test and train scores, #params, epochs, s/epoch, total hours; with cross-validation also the min and max test
score (CSL is reported as mean ± std, max, min over 5 folds × seeds). Standard deviations are population
deviations (``np.std``), as the original computes them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from gnnbench.config.presets import run_config
from gnnbench.errors import ConfigError, GnnbenchError
from gnnbench.protocols.base import Benchmark, ModelSpec, Protocol
from gnnbench.splits import GRAPH_SCHEMES

RUN_DIR = "results/runs/{dataset}/{model}/seed{seed}/fold{fold}"
TABLE_FILE = "results/tables/{dataset}.{ext}"
TABLE_FORMATS = ("csv", "md", "parquet")
FOLD_TIME_DIVISOR = 10  # the original's per-fold time budget under cross-validation: max_time / 10


@dataclass
class BenchmarkingGNNsBenchmark(Benchmark):
    seeds: list[int] = field(default_factory=list)
    folds: list[int] = field(default_factory=list)

    def runs(self) -> list[dict]:
        return [{"dataset": self.dataset, "model": label, "seed": seed, "fold": fold}
                for label in self.models for seed in self.seeds for fold in self.folds]

    def run_files(self) -> list[str]:
        return [RUN_DIR.format(**run) + "/metrics.json" for run in self.runs()]

    def table_files(self) -> list[str]:
        return [TABLE_FILE.format(dataset=self.dataset, ext=ext) for ext in TABLE_FORMATS]

    def run_config(self, model: str, seed: int) -> dict:
        return {**self.models[model].config, "seed": int(seed)}

    def pe_dim(self, model: str) -> int | None:
        config = self.models[model].config
        return config["pos_enc_dim"] if config.get("pos_enc") else None


class BenchmarkingGNNs(Protocol):
    name = "benchmarking-gnns"
    title = "Benchmarking Graph Neural Networks (Dwivedi et al.)"
    split_schemes = GRAPH_SCHEMES

    def default_split(self, dataset) -> dict:
        return dict(dataset.generator_split)

    def check_dataset(self, dataset, where: str) -> None:
        if dataset.meta.task == "node_classification" and dataset.meta.num_graphs == 1:
            raise ConfigError(f"{where}.protocol: {self.name} trains on mini-batches of graphs, but dataset "
                              f"{dataset.name} is one graph with node splits; use protocol pitfalls")
        if dataset.split["scheme"] == "stratified_kfold" and dataset.meta.task != "graph_classification":
            raise ConfigError(f"datasets.{dataset.name}.split.scheme: stratified_kfold needs graph labels but "
                              f"{dataset.name} is a {dataset.meta.task} dataset; use given")

    def benchmark(self, dataset, entry: dict, where: str) -> BenchmarkingGNNsBenchmark:
        for key in ("inits", "seed", "splits_per_job", "compare_with"):
            if key in entry:
                raise ConfigError(f"{where}.{key}: not a setting of protocol {self.name} (it trains one run per "
                                  f"seed and fold: use seeds and folds)")
        if "seeds" not in entry:
            raise ConfigError(f"{where}: protocol {self.name} needs seeds (e.g. seeds: [41, 95, 12, 35])")
        folds = entry.get("folds", list(range(dataset.num_folds)))
        bad = [f for f in folds if f >= dataset.num_folds]
        if bad:
            raise ConfigError(f"{where}.folds: fold(s) {bad} do not exist; {dataset.name} has {dataset.num_folds} "
                              f"fold(s), numbered from 0")
        benchmark = BenchmarkingGNNsBenchmark(dataset.name, self.name, seeds=list(entry["seeds"]), folds=list(folds))
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
                config = run_config(preset, own, where=model_where, protocol=self.name)
            _check_buildable(config, dataset.meta, model_where)
            benchmark.models[label] = ModelSpec(label, preset, config)
        return benchmark


def time_limit_hours(max_time: float, scheme: str) -> float:
    """The wall-clock budget of one run: ``max_time``, divided by 10 per fold under cross-validation."""
    return max_time / (FOLD_TIME_DIVISOR if scheme == "stratified_kfold" else 1)


def train(*, dataset_dir: str | os.PathLike, splits_path: str | os.PathLike, fold: int, config: dict,
          out_dir: str | os.PathLike, pe_path: str | os.PathLike | None = None, device: str = "auto",
          threads: int | None = None, label: str | None = None) -> dict:
    """One run of this protocol: :func:`gnnbench.training.run.train_run` with the protocol's time budget, or for a
    link-prediction dataset (OGBL-COLLAB) :func:`gnnbench.training.link_prediction.train_link_run`."""
    from gnnbench.data.meta import read_meta
    from gnnbench.splits import read_splits
    from gnnbench.training.run import train_run

    scheme = read_splits(splits_path).scheme
    hours = time_limit_hours(float(config.get("max_time", 0.0)), scheme) if "max_time" in config else None
    run = train_run
    if read_meta(dataset_dir).task == "link_prediction":
        from gnnbench.training.link_prediction import train_link_run

        run = train_link_run
    return run(dataset_dir=dataset_dir, splits_path=splits_path, fold=fold, config=config, out_dir=out_dir,
               pe_path=pe_path, device=device, threads=threads, label=label, time_limit_hours=hours)


def aggregate_tables(metrics_files: list[str | os.PathLike], csv: str | os.PathLike, markdown: str | os.PathLike,
                     parquet: str | os.PathLike) -> None:
    """One table per dataset; with cross-validation splits also the min and max test score."""
    from gnnbench.reporting.aggregate import aggregate, load_runs, write_tables

    runs = load_runs(metrics_files)
    extrema = bool((runs["split_scheme"] == "stratified_kfold").any())
    write_tables(aggregate(runs, extrema=extrema), csv, markdown, parquet)


def _fit(dataset, preset: str | None, overrides: dict, entry: dict, where: str) -> dict:
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


def _check_buildable(config: dict, meta, where: str) -> None:
    from gnnbench.models import build_model

    try:
        build_model(config, meta)
    except GnnbenchError as exc:
        raise ConfigError(f"{where}: {exc}") from None
