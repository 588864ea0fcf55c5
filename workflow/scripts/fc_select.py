"""Snakemake adapter for rule fc_select: gnnbench.protocols.fair_comparison.select."""

from gnnbench.script_job import job

with job(snakemake, torch_threads=False):
    from gnnbench.protocols.fair_comparison.select import select

    select(list(snakemake.input), snakemake.output[0], dataset=snakemake.wildcards.dataset,
           model=snakemake.wildcards.model, fold=int(snakemake.wildcards.fold))
