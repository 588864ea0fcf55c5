"""Snakemake adapter for rule tsp_label_shard: gnnbench.pipeline.label_tsp_shard."""

from gnnbench.workflow import job

with job(snakemake):
    from gnnbench.pipeline import label_tsp_shard

    label_tsp_shard(
        snakemake.params.params, snakemake.params.seed, int(snakemake.wildcards.shard), snakemake.output[0],
        snakemake.threads)
