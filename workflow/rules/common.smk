# Target lists, wildcard constraints and input functions shared by the rules. Every path comes from gnnbench.paths;
# what differs between protocols comes from the protocol objects (gnnbench.protocols), never from their names here.
import re
from pathlib import Path
from types import SimpleNamespace

from gnnbench import paths
from gnnbench.protocols import benchmarking_gnns, fair_comparison, heterophily, pitfalls
from gnnbench.protocols.registry import get_protocol
from gnnbench.records import history_path
from gnnbench.report_jobs import dataset_outputs, suite_outputs
from gnnbench.reporting.report import suite_description


def _alternatives(names):
    return "|".join(re.escape(n) for n in sorted(names)) or "(?!)"


# each protocol's rules (training.smk, fair_comparison.smk) take the datasets of its benchmarks
P1_DATASETS = SUITE.protocol_datasets(benchmarking_gnns.NAME)
PITFALLS_DATASETS = SUITE.protocol_datasets(pitfalls.NAME)
FAIR_DATASETS = SUITE.protocol_datasets(fair_comparison.NAME)
HETEROPHILY_DATASETS = SUITE.protocol_datasets(heterophily.NAME)
# benchmarking-gnns benchmarks whose jobs train several seeds of a model × fold (seeds_per_job, stack)
P1_STACKED = [d for d in P1_DATASETS if SUITE.benchmarks[d].seed_stacks()]


wildcard_constraints:
    dataset=_alternatives(SUITE.datasets),
    model=_alternatives({m for b in SUITE.benchmarks.values() for m in b.models}),
    seed=r"\d+",
    fold=r"\d+",
    chunk=r"\d+",
    part=r"\d+",
    layers=r"\d+",
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


def tuning_round_inputs(wildcards):
    """Dataset, split file, what the protocol's trials need (a positional-encoding file) and the records of every
    earlier round of the search."""
    benchmark = benchmark_of(wildcards)
    files = {**dataset_files(wildcards.dataset), "splits": paths.SPLITS_FILE.format(dataset=wildcards.dataset),
             "previous": benchmark.trial_record_files(wildcards.model, wildcards.search, int(wildcards["round"]))}
    pe = benchmark.tuning_scope(wildcards.model, wildcards.search).get("pe")
    return {**files, "pe": pe} if pe else files


def model_presets(dataset):
    """Label -> the preset the suite builds it from (None: none): the tables check the paper's settings against it."""
    return {label: spec.preset for label, spec in SUITE.benchmarks[dataset].models.items()}


# report jobs (aggregate.smk: one per benchmark; report.smk: the suite's): outputs by role (gnnbench.report_jobs),
# the report's files marked with their captions (workflow/report/*.rst): a table's HTML page and CSV (a download; not
# the paired tests' CSV), a figure's SVG
FIGURES = {"curves": ("curves.rst", "learning curves"), "bars": ("bars.rst", "test score per model"),
           "pe": ("pe.rst", "positional encodings"), "box": ("boxplot.rst", "test accuracy of every run (box plot)"),
           "critical_difference": ("critical_difference.rst", "critical-difference diagram"),
           "tuning": ("tuning_curves.rst", "tuning curves")}


def _caption_name(name):
    """The caption file's name of a report role's name: a protocol's critical-difference table and figure share
    ``critical_difference``."""
    return "critical_difference" if name.startswith("critical_difference_") else name


def reported(outputs, category):
    """A report job's outputs (role -> file) with the report's files marked, in the report's ``category``; a table's
    page has the caption ``workflow/report/{role}.rst``."""
    marked = {}
    for role, path in outputs.items():
        name, _, ext = role.rpartition("_")
        name = _caption_name(name)
        table = Path(path).stem
        if ext == "html" and name:
            marked[role] = report(path, caption=f"../report/{name}.rst", category=category, subcategory="Tables",
                                  labels={"table": table, "format": "HTML table"})
        elif ext == "csv" and name != "significance":
            marked[role] = report(path, caption="../report/table_csv.rst", category=category, subcategory="Tables",
                                  labels={"table": table, "format": "Raw CSV (download)"})
        elif ext == "svg":
            caption, figure = FIGURES[name]
            marked[role] = report(path, caption=f"../report/{caption}", category=category, subcategory="Figures",
                                  labels={"figure": figure})
        elif role in ("yaml", "html"):  # the suite's parameters
            marked[role] = report(path, caption="../report/suite.rst", category=category, subcategory="Parameters",
                                  labels={"file": "suite.yaml (download)" if role == "yaml" else "suite (shown here)"})
        else:
            marked[role] = path
    return marked


def _tables_rules():
    """(name, dataset) of every benchmark's report job: ``tables_<dataset>`` (non-word characters as ``_``)."""
    names = set()
    for dataset in SUITE.benchmarks:
        slug = re.sub(r"\W", "_", dataset)
        name = f"tables_{slug}"
        name = name if name not in names else f"{name}_{len(names)}"
        names.add(name)
        yield name, dataset


def table_inputs(dataset):
    """What a benchmark's report job reads: its jobs' run records (and its baselines'), apart from them the trial
    records of its tuned models (none without tuning), the history records where it draws learning curves, the
    dataset's meta.json and its split's leakage file."""
    benchmark = SUITE.benchmarks[dataset]
    curves = "curves" in benchmark.plot_kinds()
    return {"records": benchmark.record_files() + SUITE.baseline_files(dataset),
            "trials": benchmark.tuning_record_files(),
            "histories": [str(history_path(f)) for f in benchmark.record_files()] if curves else [],
            "meta": paths.DATASET_META.format(dataset=dataset),
            "leakage": paths.LEAKAGE_FILE.format(dataset=dataset)}


def table_outputs(dataset):
    """The files of a benchmark's report job by role (gnnbench.report_jobs.dataset_outputs)."""
    significance = paths.SIGNIFICANCE_FILE.format(dataset=dataset, ext="md") in SUITE.significance_files()
    return dataset_outputs(SUITE.benchmarks[dataset], significance)


def table_params(dataset):
    """What a benchmark's report job is told: its protocol and models, the protocol's paired-test units, the settings
    every protocol's tables take (the suite's presets, the dataset's split, the PE figure's
    pairs), the dataset's leakage threshold and the captions."""
    benchmark = SUITE.benchmarks[dataset]
    protocol = get_protocol(benchmark.protocol)
    captions = {"table": SUITE.table_caption(dataset), "bars": SUITE.figure_caption("bars", dataset)}
    if paths.FOLDS_TABLE.format(dataset=dataset, ext="md") in benchmark.table_files():
        captions["folds"] = SUITE.table_caption(f"{dataset}_folds")
    return {"protocol": benchmark.protocol, "dataset": dataset, "models": list(benchmark.models),
            "significance": {"units": protocol.significance_units,
                             "unit_columns": list(protocol.significance_unit_columns),
                             "stage": protocol.significance_stage, "margin": protocol.equivalence_margin},
            "options": {"presets": model_presets(dataset),
                        "split": SUITE.datasets[dataset].split,
                        "pairs": [list(pair) for pair in SUITE.pe_pairs(dataset)]},
            "leakage_threshold": SUITE.datasets[dataset].leakage_threshold,
            "captions": captions}


def suite_tables():
    """The suite-wide tables of the suite's report job: protocol -> what its tables module's ``suite_tables`` is
    given (Protocol.suite_table_inputs; ``records``: the run-record files it reads)."""
    tables = {}
    for name in dict.fromkeys(b.protocol for b in SUITE.benchmarks.values()):
        inputs = get_protocol(name).suite_table_inputs([b for b in SUITE.benchmarks.values() if b.protocol == name])
        if inputs:
            tables[name] = inputs
    return tables


# the suite's critical-difference comparisons (protocol -> table, models, records, ...): a table and a figure each
CRITICAL_DIFFERENCE = SUITE.critical_difference()
SUITE_FIGURES = [c["table"] for c in CRITICAL_DIFFERENCE.values()]
SUITE_TABLES = [Path(f).stem for protocol in dict.fromkeys(b.protocol for b in SUITE.benchmarks.values())
                for f in SUITE.suite_files(protocol) if f.endswith(".md")] + SUITE_FIGURES


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
