"""Snakemake adapter for rule pitfalls_tables: gnnbench.protocols.pitfalls.dataset_report."""

from pathlib import Path

from gnnbench.workflow import job

with job(snakemake):
    from gnnbench.protocols.pitfalls.tables import dataset_report

    out = snakemake.output
    dataset_report(list(snakemake.input.runs), out.csv, out.md, out.parquet, out.png, out.svg,
                   dataset_dir=Path(snakemake.input.meta).parent,
                   split=dict(snakemake.params.split), presets=dict(snakemake.params.presets))
