"""The pitfalls protocol object: a suite's benchmark block resolved into its jobs (splits × initialisations per
model, chunks of splits per job), with the published configs checked to build on the dataset."""

from __future__ import annotations

import os
from dataclasses import dataclass

from gnnbench import paths
from gnnbench.config.presets import run_config
from gnnbench.data.meta import read_meta
from gnnbench.errors import ConfigError
from gnnbench.papers import FOREIGN_TRAINING_DEFAULTS, SHCHUR2018, TRAINING_KEYS
from gnnbench.protocols.base import (
    Benchmark,
    ModelSpec,
    Protocol,
    check_buildable,
    check_one_graph_node_task,
    model_entries,
)
from gnnbench.protocols.pitfalls import (
    DEFAULT_INITS,
    DEFAULT_SPLITS_PER_JOB,
    NAME,
    PLOT_FILE,
    PLOT_FORMATS,
    RANKING_TABLE,
    RANKING_TABLE_NAME,
    RECORD_JOB,
    RUN_DIR,
    SUITE_TABLE,
    SUITE_TABLE_NAME,
    TABLE_FILE,
    TABLE_FORMATS,
    TRAINING_DEFAULTS,
)
from gnnbench.protocols.pitfalls.tables import dataset_report
from gnnbench.protocols.tuning import plan_tuning
from gnnbench.splits import NODE_SCHEMES


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

    def job_inputs(self, model: str) -> dict[str, str]:
        """A tuned model's selection (``tuning``), else nothing."""
        selection = self.tuned_selection(model)
        return {"tuning": selection} if selection else {}

    def tuning_scope(self, model: str, search: str) -> dict:
        """The trials train one initialisation each on the first ``tuning.splits`` random splits (seeded as the
        benchmark's runs) and are scored by their mean validation accuracy at the early-stopping epoch."""
        return {"splits": list(range(self.tuning[model].splits)), "seed": self.seed}

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
    training_keys = TRAINING_KEYS[SHCHUR2018]
    training_defaults = FOREIGN_TRAINING_DEFAULTS[SHCHUR2018]
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
        # one line for a model that cannot run here
        check_model(config, read_meta(args.dataset), self.model_option(args))
        from gnnbench.protocols.pitfalls.train import run_chunk  # the job's module: torch, the models

        metrics = run_chunk(dataset_dir=args.dataset, splits_path=args.splits, splits=args.fold, config=config,
                            inits=args.inits, seed=args.seed or 0, out_dir=args.out, device=args.device,
                            threads=args.threads, label=args.label, init_ids=args.init_ids,
                            records_out=os.path.join(args.records, "chunk.parquet"))
        mean, diverged = metrics["test_accuracy_mean"], metrics.get("diverged", 0)
        return (f"{metrics['runs']} runs" + (f" ({diverged} diverged: NaN or infinite loss)" if diverged else "")
                + ", mean test accuracy: " + ("none (every run diverged)" if mean is None else f"{mean:.2f}"))

    def aggregate_command(self, files: list[str], out: str) -> None:
        """The dataset table and box plot of the given run-record files (the jobs' ``--records`` output,
        :func:`dataset_report`), without the paper's numbers."""
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
        check_one_graph_node_task(self.name, dataset, where)

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
        plan_tuning(benchmark, entry, where, num_splits=benchmark.num_splits)
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

    def suite_table_inputs(self, benchmarks: list[Benchmark]) -> dict:
        """The run records of the random-split benchmarks (``summary``: their names) and of every (fixed split,
        random splits) pair (``pairs``) — the inputs of :func:`gnnbench.protocols.pitfalls.tables.suite_tables`."""
        if not self.suite_files(benchmarks):
            return {}
        pairs = ranking_pairs({b.dataset: b for b in benchmarks})
        by_name = {b.dataset: b for b in benchmarks}
        records = summary_inputs(benchmarks) + [f for pair in pairs for d in pair for f in by_name[d].record_files()]
        return {"records": list(dict.fromkeys(records)), "pairs": [list(pair) for pair in pairs],
                "summary": [b.dataset for b in benchmarks if b.scheme == "random_per_class"]}


def summary_inputs(benchmarks: list[PitfallsBenchmark]) -> list[str]:
    """The run records behind the suite table: every random-splits benchmark's."""
    return [f for b in benchmarks if b.scheme == "random_per_class" for f in b.record_files()]


def ranking_pairs(benchmarks: dict[str, Benchmark]) -> list[tuple[str, str]]:
    """(fixed-split benchmark, random-splits benchmark) pairs of a suite, in suite order."""
    return [(b.dataset, b.compare_with) for b in benchmarks.values()
            if isinstance(b, PitfallsBenchmark) and b.compare_with]


def check_model(config: dict, meta, where: str) -> None:
    """Refuse a model that cannot run on the dataset in one line (the registry's rules: another zoo's model must do
    node classification on one graph; no positional encodings here), then build it once on a two-node stand-in of
    the dataset's sizes: unknown models and keys fail here."""
    check_buildable(config, meta, where, SHCHUR2018, positional_encodings=False)
