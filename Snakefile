"""gnnbench workflow: dataset → positional encodings → splits → training runs → tables, figures.

    snakemake --cores 2                                   # the suite in config/config.yaml
    python -c 'import pandas; print(pandas.read_parquet("results/records"))'   # every run, one table
    snakemake --cores 2 results/runs/CSL/GCN-PE/seed41/fold0/metrics.json   # one run and what it needs
    snakemake --cores 2 --configfile config/suites/pitfalls.yaml            # another suite (replaces the default)
    snakemake --report report.html                        # after a run: the HTML report of its results
"""

import os
import sys

from snakemake.utils import min_version

from gnnbench.config.suite import load_suite
from gnnbench.config.yamlfile import check_unique_keys
from gnnbench.errors import GnnbenchError
from gnnbench.slurm import fit_to_cluster

min_version("9.0")


# `snakemake --report report.html` after the run: this text, then the figures and tables marked with report()
report: "workflow/report/workflow.rst"


# A suite given with --configfile replaces the default suite: Snakemake would deep-merge it into the workflow's
# configfile (every default dataset and `set` override leaking into the user's suite), so the default is loaded
# only when no --configfile was given (from beside this Snakefile, whatever the working directory).
# --config KEY=VALUE still applies on top of either.
if not workflow.overwrite_configfiles:

    configfile: os.path.join(workflow.basedir, "config", "config.yaml")


# Snakemake read the suite already, keeping the last of two equal keys without a word: read it again to refuse that.
try:
    for suite_file in workflow.overwrite_configfiles or [os.path.join(workflow.basedir, "config", "config.yaml")]:
        check_unique_keys(suite_file)
    # a user's files named in the suite (a model file, a graph file, a split file) are relative to the suite file
    SUITE = load_suite(config, base_dir=os.path.dirname(os.path.abspath(suite_file)))
except GnnbenchError as exc:
    sys.exit(f"gnnbench: error: {exc}")
# the report (workflow/report/workflow.rst) names each benchmark's protocol as resolved, default included
for name, benchmark in SUITE.benchmarks.items():
    config["benchmarks"][name].setdefault("protocol", benchmark.protocol)


include: "workflow/rules/common.smk"
include: "workflow/rules/datasets.smk"
include: "workflow/rules/features.smk"
include: "workflow/rules/splits.smk"
include: "workflow/rules/training.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/significance.smk"
include: "workflow/rules/fair_comparison.smk"
include: "workflow/rules/report.smk"


# On SLURM (--profile workflow/profiles/slurm): refuse a rule that asks for more than any node has, size group
# jobs to fit the largest node, and cancel (with one line in the log) a job that can never start
# (gnnbench/slurm.py). Runs before the first job is submitted; nothing happens with other executors.
onstart:
    try:
        fit_to_cluster(workflow)
    except GnnbenchError as exc:
        sys.exit(f"gnnbench: error: {exc}")


rule all:
    default_target: True
    input:
        SUITE.table_files(),
        SUITE.significance_files(),
        SUITE.report_files(),
        SUITE.record_files(),
