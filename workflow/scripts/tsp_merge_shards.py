"""Snakemake adapter for rule tsp_dataset: gnnbench.pipeline.merge_tsp_shards."""

from pathlib import Path

from gnnbench.pipeline import merge_tsp_shards
from gnnbench.workflow import run_step

run_step(snakemake, lambda: merge_tsp_shards(
    snakemake.wildcards.dataset, snakemake.params.params, snakemake.params.seed, list(snakemake.input.shards),
    Path(snakemake.output.meta).parent))
