"""Where the workflow's files live: every path template of a results folder, in one place.

The templates use ``{name}`` placeholders that are both :meth:`str.format` fields (the suite and the protocols
fill them to list the files a benchmark needs) and Snakemake wildcards (the rules in ``workflow/rules/*.smk`` use
the same strings as their outputs), so a path is spelled once. Paths are relative to the working directory.

One run record per job (:mod:`gnnbench.records`) lies under :data:`RECORDS_DIR`: every run of every protocol in a
results folder is ``pandas.read_parquet("results/records")``; the per-epoch history of those runs lies at the same
path under :data:`HISTORIES_DIR` (``pandas.read_parquet("results/histories")``, joined on ``run_id``).
"""

from __future__ import annotations

RAW_DIR = "resources/raw"  # downloads (raw files), shared by all suites run in this directory
RAW_FILE = RAW_DIR + "/{path}"

# datasets and what is derived from them
DATASET_DIR = "results/datasets/{dataset}"
DATASET_GRAPHS = DATASET_DIR + "/graphs.parquet"
DATASET_META = DATASET_DIR + "/meta.json"
LABEL_SHARD_FILE = DATASET_DIR + "/label_shards/{shard}.parquet"  # a sharded generator's shard (TSP: tours)
PE_FILE = "results/features/{dataset}/laplacian_pe_k{k}.parquet"
SPLITS_FILE = "results/splits/{dataset}/splits.json"
LEAKAGE_FILE = "results/splits/{dataset}/leakage.json"  # duplicates across the split (gnnbench.data.leakage)
BASELINE_FILE = "results/baselines/{dataset}/{baseline}.json"  # a generator's baseline, scored like a run

# training outputs, per protocol (each protocol's module says what a job writes)
RUNS_DIR = "results/runs/{dataset}/{model}"
P1_RUN_DIR = RUNS_DIR + "/seed{seed}/fold{fold}"  # benchmarking-gnns: one run
P1_METRICS = P1_RUN_DIR + "/metrics.json"
P1_HISTORY = P1_RUN_DIR + "/history.parquet"
CHUNK_DIR = RUNS_DIR + "/chunk{chunk}"  # pitfalls: one job of splits × initialisations
CHUNK_RUNS = CHUNK_DIR + "/runs.parquet"
CHUNK_HISTORY = CHUNK_DIR + "/history.parquet"
CHUNK_METRICS = CHUNK_DIR + "/metrics.json"
LAYERS_DIR = RUNS_DIR + "/layers{layers}"  # heterophily: the splits of one layer count (0: the model's own config)
LAYERS_METRICS = LAYERS_DIR + "/metrics.json"
LAYERS_SELECTION = RUNS_DIR + "/selection.json"  # heterophily: the layer count chosen on validation
FOLD_DIR = RUNS_DIR + "/fold{fold}"  # fair-comparison: one outer fold
INNER_FILE = FOLD_DIR + "/inner/part{part}.parquet"
SELECTION_FILE = FOLD_DIR + "/selection.json"
FINAL_FILE = FOLD_DIR + "/final.parquet"
FINAL_HISTORY_FILE = FOLD_DIR + "/final_history.parquet"

# tuning (gnnbench.protocols.tuning; docs/tuning.md): per model and search (benchmarking-gnns and pitfalls: one,
# "main"; fair-comparison: one per outer fold, "fold{f}") a chain of rounds, then the selection the tuned runs read
TUNING_DIR = "results/tuning/{protocol}/{dataset}/{model}/{search}"
TUNING_ROUND = TUNING_DIR + "/round_{round}.json"  # a round's trials (params, validation scores); the records rule
TUNING_SELECTION = TUNING_DIR + "/selection.json"
TRIAL_RECORD_JOB = "tune_{search}_round{round}"  # a round's run-record file: RECORD_FILE with this job name

# the one run record (gnnbench.records): one Parquet file per job, every protocol in one schema
RECORDS_DIR = "results/records"
RECORD_FILE = RECORDS_DIR + "/{protocol}/{dataset}/{model}/{job}.parquet"
# ... and the per-epoch history of the job's runs (gnnbench.records.HISTORY_SCHEMA), at the same path in a tree of its
# own: the records tree holds one schema only
HISTORIES_DIR = "results/histories"
HISTORY_RECORD_FILE = HISTORIES_DIR + "/{protocol}/{dataset}/{model}/{job}.parquet"

# tables, figures, report
TABLE_FILE = "results/tables/{table}.{ext}"  # {table}: a dataset, {dataset}_folds, {dataset}_significance, suite
TABLE_FORMATS = ("csv", "md", "parquet")
DATASET_TABLE = "results/tables/{dataset}.{ext}"
FOLDS_TABLE = "results/tables/{dataset}_folds.{ext}"
SIGNIFICANCE_FILE = "results/tables/{dataset}_significance.{ext}"
# a benchmark that tunes models (docs/tuning.md): published versus tuned with each model's budget, and every trial;
# its tuning curves are the PLOT_FILE of kind TUNING_CURVES
TUNING_TABLE = "results/tables/{dataset}_tuning.{ext}"
TRIALS_TABLE = "results/tables/{dataset}_trials.{ext}"
TUNING_CURVES = "tuning"
# the comparison of a protocol's models over its benchmarks (average ranks, Friedman, CD diagram): a suite table
CRITICAL_DIFFERENCE = "critical_difference_{protocol}"  # the table's name, and its figure's
SUITE_PLOT = "results/plots/{name}.{ext}"  # a figure of the suite's report job
PLOT_FILE = "results/plots/{dataset}_{kind}.{ext}"  # kind: curves, bars, pe, tuning
BOX_PLOT = "results/plots/{dataset}.{ext}"  # pitfalls: test accuracy of every run
PLOT_FORMATS = ("png", "svg")
TABLE_PAGE = "results/report/tables/{table}.html"  # a Markdown table as an HTML page of the report
SUITE_REPORT = "results/report/suite.{ext}"  # the suite's parameters (yaml, html)
LOG_DIR = "results/logs"


def table_files(table: str, formats: tuple[str, ...] = TABLE_FORMATS) -> list[str]:
    """The files of one table (``results/tables/{table}.csv``, ``.md``, ``.parquet``)."""
    return [TABLE_FILE.format(table=table, ext=ext) for ext in formats]


def log_file(stage: str, name: str) -> str:
    """A rule's log (``results/logs/{stage}/{name}.log``); ``name`` may hold Snakemake wildcards."""
    return f"{LOG_DIR}/{stage}/{name}.log"


def output_folders() -> list[str]:
    """The folders the workflow writes into, two levels deep, parents first: ``resources``, ``resources/raw``,
    ``results``, ``results/baselines``, ... — every template of this module up to its first ``{placeholder}``
    (a ``*_DIR`` template is a folder; any other names a file)."""
    folders = set()
    for name, template in globals().items():
        if not (name.isupper() and isinstance(template, str) and "/" in template):
            continue
        parts = template.split("/") if name.endswith("_DIR") else template.split("/")[:-1]
        for depth in (1, 2):
            if len(parts) >= depth and "{" not in "/".join(parts[:depth]):
                folders.add("/".join(parts[:depth]))
    return sorted(folders)
