"""Snakemake adapter for rule tsp_knn_baseline: gnnbench.pipeline.knn_baseline."""

from gnnbench.pipeline import knn_baseline
from gnnbench.workflow import run_step

run_step(snakemake, lambda: knn_baseline(
    snakemake.input.meta.rsplit("/", 1)[0], snakemake.input.splits, snakemake.params.batch_size,
    snakemake.output[0], snakemake.params.k))
