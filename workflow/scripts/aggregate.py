"""Snakemake adapter for rule aggregate: gnnbench.protocols.benchmarking_gnns.aggregate_tables."""

from pathlib import Path

from gnnbench.workflow import job

with job(snakemake):
    from gnnbench.protocols.benchmarking_gnns.tables import aggregate_tables

    out = snakemake.output
    aggregate_tables(list(snakemake.input.runs), out.csv, out.md, out.parquet,
                     dataset_dir=Path(snakemake.input.meta).parent,
                     presets=dict(snakemake.params.presets))
