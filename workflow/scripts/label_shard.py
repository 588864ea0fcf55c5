"""Snakemake adapter for rule label_shard: gnnbench.pipeline.label_shard."""

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.pipeline import label_shard

    label_shard(
        snakemake.params.generator, snakemake.wildcards.dataset, snakemake.params.params, snakemake.params.seed,
        int(snakemake.wildcards.shard), snakemake.output[0], snakemake.threads)
