"""Snakemake adapter for rule tsp_dataset: gnnbench.pipeline.merge_tsp_shards."""

from pathlib import Path

from gnnbench.workflow import job

with job(snakemake):
    from gnnbench.pipeline import merge_tsp_shards

    merge_tsp_shards(
        snakemake.wildcards.dataset, snakemake.params.params, snakemake.params.seed, list(snakemake.input.shards),
        Path(snakemake.output.meta).parent)
