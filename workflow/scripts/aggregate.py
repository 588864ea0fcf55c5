"""Snakemake adapter for rule aggregate: gnnbench.protocols.benchmarking_gnns.aggregate_tables."""

from gnnbench.protocols.benchmarking_gnns import aggregate_tables
from gnnbench.workflow import run_step

run_step(snakemake, lambda: aggregate_tables(list(snakemake.input), snakemake.output.csv, snakemake.output.md,
                                             snakemake.output.parquet))
