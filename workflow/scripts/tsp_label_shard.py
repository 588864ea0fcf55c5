"""Snakemake adapter for rule tsp_label_shard: gnnbench.pipeline.label_tsp_shard."""

from gnnbench.pipeline import label_tsp_shard
from gnnbench.workflow import run_step

run_step(snakemake, lambda: label_tsp_shard(
    snakemake.params.params, snakemake.params.seed, int(snakemake.wildcards.shard), snakemake.output[0],
    snakemake.threads))
