# Target lists, wildcard constraints and input functions shared by the rules. Every path comes from gnnbench.paths;
# what differs between protocols comes from the protocol objects (gnnbench.protocols), never from their names here.
import re
from types import SimpleNamespace

from gnnbench import paths
from gnnbench.protocols import benchmarking_gnns, fair_comparison, pitfalls
from gnnbench.protocols.pitfalls import plan as pitfalls_plan
from gnnbench.records import history_path
from gnnbench.reporting.report import suite_description


def _alternatives(names):
    return "|".join(re.escape(n) for n in sorted(names)) or "(?!)"


# each protocol's rules (training.smk, fair_comparison.smk, aggregate.smk) take the datasets of its benchmarks
P1_DATASETS = SUITE.protocol_datasets(benchmarking_gnns.NAME)
PITFALLS_DATASETS = SUITE.protocol_datasets(pitfalls.NAME)
FAIR_DATASETS = SUITE.protocol_datasets(fair_comparison.NAME)
# benchmarking-gnns benchmarks whose jobs train several seeds of a model × fold (seeds_per_job, stack)
P1_STACKED = [d for d in P1_DATASETS if SUITE.benchmarks[d].seed_stacks()]


wildcard_constraints:
    dataset=_alternatives(SUITE.datasets),
    model=_alternatives({m for b in SUITE.benchmarks.values() for m in b.models}),
    seed=r"\d+",
    fold=r"\d+",
    chunk=r"\d+",
    part=r"\d+",
    k=r"\d+",


def record_file(protocol, job):
    """The run-record output of a job of ``protocol`` (``job``: the protocol's job name, with wildcards)."""
    return paths.RECORD_FILE.format(protocol=protocol, dataset="{dataset}", model="{model}", job=job)


def history_file(protocol, job):
    """The history-record output of a job of ``protocol`` (the per-epoch history of its runs, beside its record)."""
    return paths.HISTORY_RECORD_FILE.format(protocol=protocol, dataset="{dataset}", model="{model}", job=job)


def dataset_files(dataset):
    return {"graphs": paths.DATASET_GRAPHS.format(dataset=dataset), "meta": paths.DATASET_META.format(dataset=dataset)}


def benchmark_of(wildcards):
    benchmark = SUITE.benchmarks.get(wildcards.dataset)
    if benchmark is None or wildcards.model not in benchmark.models:
        raise ValueError(f"no model {wildcards.model!r} in benchmarks.{wildcards.dataset} of the config")
    return benchmark


def run_inputs(wildcards):
    """Dataset, split file and what else the protocol's job needs (a positional-encoding file, ...)."""
    files = dataset_files(wildcards.dataset)
    files["splits"] = paths.SPLITS_FILE.format(dataset=wildcards.dataset)
    files.update(benchmark_of(wildcards).job_inputs(wildcards.model))
    return files


def table_outputs(table, category, **extra):
    """The csv (in the report, as a download), md and parquet outputs of a table (``table``: its name, with
    wildcards), plus ``extra`` outputs."""
    return dict(
        csv=report(
            paths.TABLE_FILE.format(table=table, ext="csv"),
            caption="../report/table_csv.rst",
            category=category,
            subcategory="Tables",
            labels={"table": table, "format": "Raw CSV (download)"},
        ),
        md=paths.TABLE_FILE.format(table=table, ext="md"),
        parquet=paths.TABLE_FILE.format(table=table, ext="parquet"),
        **extra,
    )


def model_presets(dataset):
    """Label -> the preset the suite builds it from (None: none): the tables check the paper's settings against it."""
    return {label: spec.preset for label, spec in SUITE.benchmarks[dataset].models.items()}


# report (workflow/rules/report.smk): which datasets get which figure, where each table goes in the report
PLOT_DATASETS = {kind: [d for d in SUITE.benchmarks if kind in SUITE.plot_kinds(d)] for kind in ("curves", "bars", "pe")}
TABLE_NAMES = SUITE.table_names()


def table_category(name):
    """Report category of a table: its dataset (also for {dataset}_folds, {dataset}_significance), else the
    suite-wide summaries."""
    return SUITE.table_protocol(name)[1] or "Suite"


# benchmarking-gnns jobs of several seeds (training.smk): one rule per (dataset, model, group of seeds), named and
# sized here; `stack` is passed on (None: the device's default, wide on CUDA; False: one after another)
def _seed_stack_rules():
    names = set()
    for dataset in P1_STACKED:
        benchmark = SUITE.benchmarks[dataset]
        for model, seeds in benchmark.seed_stacks():
            slug = re.sub(r"\W", "_", f"{dataset}_{model}")
            whole = len(seeds) == len(benchmark.model_seeds.get(model, benchmark.seeds))
            name = f"train_seeds_{slug}" + ("" if whole else f"_seed{seeds[0]}")  # a group: named by its first seed
            name = name if name not in names else f"{name}_{len(names)}"
            names.add(name)
            yield name, dataset, model, seeds, None if benchmark.stack else False


def _stack_resources(seeds):
    res = SUITE.rule_resources("train")
    return {**res, "mem_mb": res["mem_mb"] * len(seeds), "runtime": res["runtime"] * len(seeds)}


def stack_run_inputs(dataset, model):
    return run_inputs(SimpleNamespace(dataset=dataset, model=model))
