"""Snakemake adapter for rule dataset_from_shards: gnnbench.pipeline.merge_shards."""

from pathlib import Path

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.pipeline import merge_shards

    merge_shards(
        snakemake.params.generator, snakemake.wildcards.dataset, snakemake.params.params, snakemake.params.seed,
        list(snakemake.input.shards), Path(snakemake.output.meta).parent)
