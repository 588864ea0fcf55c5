"""Snakemake adapter for rule select_tuning: gnnbench.protocols.tuning.select_search."""

from gnnbench.script_job import job

with job(snakemake, torch_threads=False):
    from gnnbench.protocols.tuning import select_search

    select_search(list(snakemake.input), snakemake.output[0], job=dict(snakemake.params.job))
