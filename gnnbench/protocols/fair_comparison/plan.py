"""The fair-comparison protocol object: a suite's benchmark block resolved into every model's grid and the jobs of
the nested cross-validation, every configuration checked before anything runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from gnnbench import paths
from gnnbench.config.keys import coerce, protocol_types
from gnnbench.config.presets import get_preset, preset_protocol, run_config
from gnnbench.data.meta import read_meta
from gnnbench.errors import ConfigError
from gnnbench.io import sha256_json
from gnnbench.papers import ERRICA2020, FOREIGN_TRAINING_DEFAULTS
from gnnbench.papers import TRAINING_KEYS as TRAINING_KEY_TYPES
from gnnbench.protocols.base import Benchmark, ModelSpec, Protocol, check_buildable, model_entries
from gnnbench.protocols.fair_comparison import (
    DEFAULT_FINAL_RUNS,
    DEFAULT_GRID_PER_JOB,
    FINAL_FILE,
    FINAL_RECORD_JOB,
    FOLDS_TABLE_FILE,
    HOLDOUTS,
    INNER_FILE,
    INNER_RECORD_JOB,
    NAME,
    SELECTION_FILE,
    TABLE_FILE,
    TABLE_FORMATS,
    TRAINING_DEFAULTS,
    TRAINING_KEYS,
    TRAINING_REQUIRED,
)
from gnnbench.protocols.fair_comparison.grid import expand_grid, stack_groups
from gnnbench.protocols.fair_comparison.select import select
from gnnbench.protocols.tuning import plan_tuning


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

    def inner_files(self, model: str, fold: int) -> list[str]:
        """The model-selection outputs (``inner/part{p}.parquet``) of ``model`` on outer fold ``fold``: what its
        selection reads."""
        return [INNER_FILE.format(dataset=self.dataset, model=model, fold=fold, part=p)
                for p in range(self.num_parts(model))]

    def run_files(self) -> list[str]:
        """The final-run files (``final.parquet``) of every model and outer fold (caches; the tables read the
        records)."""
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

    # tuning (docs/tuning.md): Errica's model selection inside each outer fold, by a search instead of the grid

    def add_tuned(self, label: str, tuned: str) -> None:
        """The tuned model has no grid (no model-selection jobs): its final runs read its search's selection."""
        self.models[tuned] = ModelSpec(tuned, None, dict(self.models[label].config))
        self.grids[tuned] = []

    def tuning_config(self, model: str) -> dict:
        """The first configuration of the model's grid (grid order): a search puts its values in it, so that every
        key the grid sets has a value."""
        return self.grids[model][0]

    def searches(self, model: str) -> list[str]:
        """One search per outer fold (``fold{f}``)."""
        return [f"fold{f}" for f in self.folds]

    def tuning_scope(self, model: str, search: str) -> dict:
        """The trials of outer fold f train on its inner-training graphs, early-stopping on its inner hold-out
        (seeded as grid points), scored by the validation accuracy at the early-stopping epoch."""
        return {"fold": int(search.removeprefix("fold")), "seed": self.seed}

    def final_selection(self, model: str, fold: int) -> str:
        """The selection the final runs of ``model`` on outer fold ``fold`` read: the grid search's
        (:data:`SELECTION_FILE`), or a tuned model's search of that fold."""
        for label, search in self.tuning.items():
            if search.tuned_label == model:
                return self.tuning_selection(label, f"fold{fold}")
        return SELECTION_FILE.format(dataset=self.dataset, model=model, fold=fold)

    def tuned_selection(self, tuned: str) -> str | None:
        """None: the final runs of a fold read its own search's selection (:meth:`final_selection`)."""
        return None


class FairComparison(Protocol):
    """The fair-comparison protocol (module docstring; ``docs/protocols/fair-comparison.md``)."""

    name = NAME
    title = "A Fair Comparison of Graph Neural Networks for Graph Classification (Errica et al.)"
    split_schemes = ("stratified_kfold", "published", "file")  # file: the user's own outer folds
    default_variant = ERRICA2020  # Errica's complete graph classifiers
    training_keys = TRAINING_KEY_TYPES[ERRICA2020]
    training_defaults = FOREIGN_TRAINING_DEFAULTS[ERRICA2020]
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
        base, grid = model_grid({"preset": args.preset} if args.preset else {}, overrides, self.model_option(args))
        configs = expand_grid(base, grid)
        # one line for a model that cannot run here
        check_configs(configs, read_meta(args.dataset), self.model_option(args))
        out, fold, records = Path(args.out), args.fold, Path(args.records)
        label = args.label or base["model"]
        common = {"dataset_dir": args.dataset, "splits_path": args.splits, "fold": fold, "seed": args.seed or 0,
                  "device": args.device, "threads": args.threads, "label": label}
        stack = bool(getattr(args, "stack", False))
        from gnnbench.protocols.fair_comparison.train import run_final, run_inner  # the jobs' module: torch, models

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
        plan_tuning(benchmark, entry, where)
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


def check_configs(configs: list[dict], meta, where: str) -> None:
    """Training keys present and every configuration buildable for the dataset's sizes (a stand-in graph); a model
    that cannot run on the dataset (another zoo's node-only model, positional encodings) is refused in one line."""
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
        check_buildable(config, meta, where, ERRICA2020, positional_encodings=False)
