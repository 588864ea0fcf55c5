"""Snakemake adapter for rule select_layers: gnnbench.protocols.heterophily.select.select."""

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.protocols.heterophily.select import select

    select(list(snakemake.input.records), snakemake.output.records, snakemake.output.selection)
