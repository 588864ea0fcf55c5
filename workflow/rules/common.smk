# Target lists, wildcard constraints and input functions shared by the rules.
import re

from gnnbench.config.suite import DATASET_DIR, PE_FILE, SPLITS_FILE
from gnnbench.reporting.report import suite_description


def _alternatives(names):
    return "|".join(re.escape(n) for n in sorted(names)) or "(?!)"


P1_DATASETS = SUITE.protocol_datasets("benchmarking-gnns")
PITFALLS_DATASETS = SUITE.protocol_datasets("pitfalls")
FAIR_DATASETS = SUITE.protocol_datasets("fair-comparison")


wildcard_constraints:
    dataset=_alternatives(SUITE.datasets),
    model=_alternatives({m for b in SUITE.benchmarks.values() for m in b.models}),
    seed=r"\d+",
    fold=r"\d+",
    chunk=r"\d+",
    part=r"\d+",
    k=r"\d+",


def dataset_files(dataset):
    folder = DATASET_DIR.format(dataset=dataset)
    return {"graphs": f"{folder}/graphs.parquet", "meta": f"{folder}/meta.json"}


def benchmark_of(wildcards):
    benchmark = SUITE.benchmarks.get(wildcards.dataset)
    if benchmark is None or wildcards.model not in benchmark.models:
        raise ValueError(f"no model {wildcards.model!r} in benchmarks.{wildcards.dataset} of the config")
    return benchmark


def run_inputs(wildcards):
    """Dataset, split file and — when the model uses positional encodings — the PE file of one run."""
    benchmark = benchmark_of(wildcards)
    files = dataset_files(wildcards.dataset)
    files["splits"] = SPLITS_FILE.format(dataset=wildcards.dataset)
    k = benchmark.pe_dim(wildcards.model) if hasattr(benchmark, "pe_dim") else None
    if k:
        files["pe"] = PE_FILE.format(dataset=wildcards.dataset, k=k)
    return files


def model_presets(dataset):
    """Label -> the preset the suite builds it from (None: none): the tables check the paper's settings against it."""
    return {label: spec.preset for label, spec in SUITE.benchmarks[dataset].models.items()}


def significance_finals(dataset):
    """fair-comparison: label -> [(outer fold, final.parquet), ...]; other protocols read the run files."""
    benchmark = SUITE.benchmarks[dataset]
    if benchmark.protocol != "fair-comparison":
        return None
    return {label: list(zip(benchmark.folds, files["finals"]))
            for label, files in benchmark.report_inputs().items()}
# report (workflow/rules/report.smk): which datasets get which figure, where each table goes in the report
PLOT_DATASETS = {kind: [d for d in SUITE.benchmarks if kind in SUITE.plot_kinds(d)] for kind in ("curves", "bars", "pe")}
TABLE_NAMES = SUITE.table_names()


def table_category(name):
    """Report category of a table: its dataset (also for {dataset}_folds, {dataset}_significance), else the
    suite-wide summaries."""
    if name in SUITE.benchmarks:
        return name
    for suffix in ("_folds", "_significance"):
        base = name.removesuffix(suffix)
        if base != name and base in SUITE.benchmarks:
            return base
    return "Suite"


def table_protocol(name):
    benchmark = SUITE.benchmarks.get(table_category(name))
    return benchmark.protocol if benchmark is not None else name.split("_", 1)[0]
