"""The benchmarking-gnns protocol object: a suite's benchmark block resolved into its runs (seeds × folds per model,
published or budget-fitted configs, checked to build on the dataset)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from gnnbench import paths
from gnnbench.config.presets import run_config
from gnnbench.data.catalog import published_name
from gnnbench.data.meta import read_meta
from gnnbench.errors import ConfigError, GnnbenchError
from gnnbench.models.plugins import located
from gnnbench.models.registry import is_plugin
from gnnbench.papers import DWIVEDI2020, FOREIGN_TRAINING_DEFAULTS, PLUGIN, TRAINING_KEYS
from gnnbench.protocols.base import Benchmark, ModelSpec, Protocol, check_buildable
from gnnbench.protocols.benchmarking_gnns import (
    NAME,
    RECORD_JOB,
    RUN_DIR,
    TABLE_FILE,
    TABLE_FORMATS,
)
from gnnbench.protocols.benchmarking_gnns.tables import aggregate_tables
from gnnbench.protocols.tuning import plan_tuning
from gnnbench.reporting.plots import pe_pairs
from gnnbench.splits import GRAPH_SCHEMES


@dataclass
class BenchmarkingGNNsBenchmark(Benchmark):
    """A benchmarking-gnns benchmark: one run per model × seed × fold (``seeds``, or a model's own
    ``model_seeds``), optionally several seeds of a model and fold per job (``seeds_per_job``, ``stack``)."""

    seeds: list[int] = field(default_factory=list)
    folds: list[int] = field(default_factory=list)
    model_seeds: dict[str, list[int]] = field(default_factory=dict)  # a model's own seeds (else ``seeds``)
    # seeds of a model × fold trained by one job (gnnbench.training.last_epoch_stack; workflow/rules/training.smk) and
    # whether such a job trains them as one wide stack where the device and model allow (CUDA)
    seeds_per_job: int | None = 1  # None: all of a model's seeds
    stack: bool = False

    def runs(self) -> list[dict]:
        """Every run as ``{dataset, model, seed, fold}``: models in suite order, then seeds, then folds."""
        return [{"dataset": self.dataset, "model": label, "seed": seed, "fold": fold}
                for label in self.models for seed in self.model_seeds.get(label, self.seeds) for fold in self.folds]

    def run_files(self) -> list[str]:
        """The ``metrics.json`` of every run (``results/runs/...``, one folder per model, seed and fold)."""
        return [RUN_DIR.format(**run) + "/metrics.json" for run in self.runs()]

    def seed_stacks(self) -> list[tuple[str, list[int]]]:
        """(model, seeds) of every job that trains several seeds of a model (one such job per fold): the model's
        seeds in consecutive groups of ``seeds_per_job``; none with one seed per job."""
        if self.seeds_per_job == 1:
            return []
        jobs = []
        for label in self.models:
            seeds = list(self.model_seeds.get(label, self.seeds))
            k = self.seeds_per_job or len(seeds)
            jobs += [(label, seeds[i:i + k]) for i in range(0, len(seeds), k)]
        return jobs

    def table_files(self) -> list[str]:
        """The dataset's table in CSV, Markdown and Parquet."""
        return [TABLE_FILE.format(dataset=self.dataset, ext=ext) for ext in TABLE_FORMATS]

    def record_files(self) -> list[str]:
        """One run-record file per run (job name ``seed{seed}_fold{fold}``), also where seeds share a job."""
        return [paths.RECORD_FILE.format(protocol=NAME, dataset=self.dataset, model=run["model"],
                                         job=RECORD_JOB.format(**run)) for run in self.runs()]

    def job_inputs(self, model: str) -> dict[str, str]:
        """The Laplacian positional-encoding file (``pe``) when the model's config asks for one, and a tuned
        model's selection (``tuning``), else nothing."""
        k = self.pe_dim(model)
        files = {"pe": paths.PE_FILE.format(dataset=self.dataset, k=k)} if k else {}
        selection = self.tuned_selection(model)
        return {**files, "tuning": selection} if selection else files

    def add_tuned(self, label: str, tuned: str) -> None:
        """The tuned model's runs: the seeds and folds of ``label``'s."""
        super().add_tuned(label, tuned)
        if label in self.model_seeds:
            self.model_seeds[tuned] = list(self.model_seeds[label])

    def tuning_scope(self, model: str, search: str) -> dict:
        """The trials train on the benchmark's first fold with the model's first seed and are scored on its
        validation part at the last epoch; ``pe``: the positional-encoding file where the config uses one; ``stack``:
        trials of one shape as one wide stack where the benchmark stacks its seeds (None: on CUDA), else False."""
        return {"fold": self.folds[0], "seed": int(self.model_seeds.get(model, self.seeds)[0]),
                "pe": self.job_inputs(model).get("pe"), "stack": None if self.stack else False}

    def pe_pairs(self) -> list[tuple[str, str, str]]:
        """(architecture, label without PE, label with PE) of the models whose configs differ by Laplacian
        positional encodings (:func:`gnnbench.reporting.plots.pe_pairs`)."""
        return pe_pairs({label: model.config for label, model in self.models.items()})

    def plot_kinds(self) -> list[str]:
        """Learning curves, score bars and, where models pair without / with PE, the PE comparison."""
        return ["curves", "bars"] + (["pe"] if self.pe_pairs() else [])

    def run_config(self, model: str, seed: int) -> dict:
        """The resolved config of ``model`` with ``seed`` filled in: what one training job receives."""
        return {**self.models[model].config, "seed": int(seed)}

    def pe_dim(self, model: str) -> int | None:
        """The number of Laplacian eigenvectors the model's config uses (``pos_enc_dim``), None without ``pos_enc``."""
        config = self.models[model].config
        return config["pos_enc_dim"] if config.get("pos_enc") else None


class BenchmarkingGNNs(Protocol):
    """The benchmarking-gnns protocol (module docstring; ``docs/protocols/benchmarking-gnns.md``)."""

    name = NAME
    title = "Benchmarking Graph Neural Networks (Dwivedi et al.)"
    split_schemes = GRAPH_SCHEMES
    default_variant = DWIVEDI2020  # the benchmark's zoo: encoders → L layers → task head
    training_keys = TRAINING_KEYS[DWIVEDI2020]  # the original JSON's ``params`` (+ dense_schedule, loss)
    training_defaults = FOREIGN_TRAINING_DEFAULTS[DWIVEDI2020]
    significance_units = "(seed, fold) runs"
    significance_unit_columns = ("seed", "split")  # a run: one seed on one fold

    def add_train_arguments(self, parser) -> None:
        """``--fold`` (the fold of the split file) and ``--pe`` (the positional-encoding file)."""
        parser.add_argument("--fold", type=int, default=0, help="fold of the split file (default 0)")
        parser.add_argument("--pe", help="positional-encoding file (needed when pos_enc is true)")

    def train_command(self, args, overrides: dict) -> str:
        """One run (:func:`train`) of the preset with the ``--set`` overrides (``--seed`` over the config's seed) on
        one fold; returns its test score, or the epoch at which it diverged."""
        if args.seed is not None:
            overrides["seed"] = args.seed
        config = run_config(args.preset, overrides, where="--set", preset_where="--preset", protocol=self.name)
        # a model that cannot run here
        check_buildable(config, read_meta(args.dataset), self.model_option(args), DWIVEDI2020)
        from gnnbench.protocols.benchmarking_gnns.train import train  # the job's module: torch, the models

        results = train(dataset_dir=args.dataset, splits_path=args.splits, fold=args.fold, config=config,
                        out_dir=args.out, pe_path=args.pe, device=args.device, threads=args.threads,
                        label=args.label, records_out=os.path.join(args.records, "run.parquet"))
        if results.get("status") == "diverged":
            return f"diverged at epoch {results['diverged_epoch']} (NaN or infinite loss): no test {results['metric']}"
        return f"test {results['metric']}: {results['test']['metric']:.4f}"

    def aggregate_command(self, files: list[str], out: str) -> None:
        """The dataset table of the given run-record files (:func:`aggregate_tables`), without the paper's
        numbers."""
        aggregate_tables(files, f"{out}.csv", f"{out}.md", f"{out}.parquet")

    def table_caption(self, table: str, dataset: str | None) -> str:
        """What the columns of a dataset table are, including the comparison with the paper."""
        return (f"Table of **{table}** (protocol {self.name}): one row per model — runs, parameters, test and train "
                "score as mean ± std (population std) over seeds (and folds) of the last epoch, epochs, seconds per "
                "epoch and total hours; under cross-validation also the minimum and maximum test score. Where a row "
                "matches a configuration of the paper, \"Paper\" is the published mean ± std and \"vs paper\" the "
                "verdict (z = difference over the combined standard error; † marks a reduced setting — smaller data "
                "or fewer epochs — not a like-for-like comparison).")

    def figure_caption(self, kind: str, dataset: str) -> str:
        """The caption of the score bars (mean ± population std of the last epoch's test score); other figures get
        the generic caption."""
        if kind != "bars":
            return super().figure_caption(kind, dataset)
        return (f"Test score of every model on **{dataset}** (protocol {self.name}): bar = mean over the model's "
                "runs (seeds × folds) of the last epoch's test score, error bar = ± one standard deviation "
                f"(population std). The numbers are in the dataset's table (category **{dataset}**, *Tables*). "
                "Check the axis label for the metric and its direction (accuracy and F1: higher is better; MAE and "
                "MSE: lower is better).")

    def default_split(self, dataset) -> dict:
        """The split the dataset's generator defines (the split that comes with the data, or its folds)."""
        return dict(dataset.generator_split)

    def check_dataset(self, dataset, where: str) -> None:
        """Refuse a single-graph dataset split other than by its own splits (random node splits are the pitfalls
        protocol's) and stratified k-fold on a dataset without graph labels."""
        if dataset.meta.transductive and dataset.split["scheme"] != "given":
            raise ConfigError(f"{where}.protocol: {self.name} trains on one graph only with the splits that come "
                              f"with it (WikiCS), but dataset {dataset.name} is split by {dataset.split['scheme']}; "
                              "use protocol pitfalls for random node splits")
        if dataset.split["scheme"] == "stratified_kfold" and dataset.meta.task != "graph_classification":
            raise ConfigError(f"datasets.{dataset.name}.split.scheme: stratified_kfold needs graph labels but "
                              f"{dataset.name} is a {dataset.meta.task} dataset; use given")

    def benchmark(self, dataset, entry: dict, where: str) -> BenchmarkingGNNsBenchmark:
        """Seeds (for the benchmark or per model), folds (default: all of the split), ``seeds_per_job`` and
        ``stack``; per model a published config (preset with ``set`` overrides) or one fitted to a parameter
        ``budget``, checked to build on the dataset. Grids and the other protocols' keys are refused."""
        for key in ("inits", "seed", "splits_per_job", "compare_with"):
            if key in entry:
                raise ConfigError(f"{where}.{key}: not a setting of protocol {self.name} (it trains one run per "
                                  f"seed and fold: use seeds and folds)")
        models = {label: {"preset": m} if isinstance(m, str) else m for label, m in entry["models"].items()}
        if "seeds" not in entry and not all("seeds" in m for m in models.values()):
            raise ConfigError(f"{where}: protocol {self.name} needs seeds (e.g. seeds: [41, 95, 12, 35]), for the "
                              "benchmark or for every model")
        folds = entry.get("folds", list(range(dataset.num_folds)))
        bad = [f for f in folds if f >= dataset.num_folds]
        if bad:
            raise ConfigError(f"{where}.folds: fold(s) {bad} do not exist; {dataset.name} has {dataset.num_folds} "
                              f"fold(s), numbered from 0")
        stack = bool(entry.get("stack", False))
        benchmark = BenchmarkingGNNsBenchmark(dataset.name, self.name, seeds=list(entry.get("seeds", [])),
                                              folds=list(folds), stack=stack,
                                              seeds_per_job=entry.get("seeds_per_job", None if stack else 1))
        shared = entry.get("set") or {}
        for label, model in models.items():
            model_where = f"{where}.models.{label}"
            if "grid" in model:
                raise ConfigError(f"{model_where}.grid: protocol {self.name} trains published configs, not grids; "
                                  "use set")
            if "seeds" in model:
                benchmark.model_seeds[label] = list(model["seeds"])
            preset, own = model.get("preset"), {**shared, **(model.get("set") or {})}
            if "model" in model:
                own["model"] = model["model"]
            if "width" in model and "budget" not in model:
                raise ConfigError(f"{model_where}.width: width names the constructor argument a budget fits; add "
                                  "budget (e.g. 100000) or drop width")
            if "budget" in model:
                config = _fit(dataset, preset, own, model, model_where)
            else:
                config = run_config(preset, own, where=model_where, protocol=self.name)
            check_buildable(config, dataset.meta, model_where, DWIVEDI2020)
            benchmark.models[label] = ModelSpec(label, preset, config)
        if dataset.meta.task == "link_prediction" and "tuning" in entry:
            raise ConfigError(f"{where}.tuning: tuning does not train link-prediction runs ({dataset.name}); drop it")
        plan_tuning(benchmark, entry, where)
        return benchmark


def _fit(dataset, preset: str | None, overrides: dict, entry: dict, where: str) -> dict:
    """Run config of a model entry that names a parameter budget: the fitted hidden width (and out_dim); for a model
    from outside the package the constructor argument ``width`` names (default ``hidden_channels``)."""
    from gnnbench.config.budget import base_preset, fit_budget, fit_width

    protocol = BenchmarkingGNNs.name
    model = overrides.get("model") or (run_config(preset, where=where, protocol=protocol)["model"] if preset else None)
    if model is None:
        raise ConfigError(f"{where}: a budget needs the model (e.g. model: GCN) or a preset to start from")
    if is_plugin({"model": model}) or "width" in entry:
        config = run_config(preset, overrides, where=where, protocol=protocol)
        if config.get("variant") != PLUGIN:
            raise ConfigError(f"{where}.width: width names the constructor argument a budget fits for a model of "
                              f"your own; model {config['model']} is sized by hidden_dim: drop width")
        if "layers" in entry:
            raise ConfigError(f"{where}.layers: layers sets L of the benchmark's models; set the depth of model "
                              f"{config['model']} by its constructor argument (e.g. num_layers) in set")
        try:
            return fit_width(config, dataset.meta, entry["budget"], entry.get("width"), DWIVEDI2020).config
        except GnnbenchError as exc:
            raise located(where, exc) from None
    base = preset or base_preset(published_name(dataset.generator, dataset.name, dataset.params), model)
    config = run_config(base, overrides, where=where, protocol=protocol)
    if config.get("variant", DWIVEDI2020) != DWIVEDI2020:
        raise ConfigError(f"{where}.budget: parameter budgets size the benchmark's own models ({DWIVEDI2020}); "
                          f"model {config['model']} is of variant {config['variant']}: drop budget")
    try:
        return fit_budget(config, dataset.meta, entry["budget"], entry.get("layers")).config
    except GnnbenchError as exc:
        raise ConfigError(f"{where}: {exc}") from None
