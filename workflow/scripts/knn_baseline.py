"""Snakemake adapter for rule tsp_knn_baseline: gnnbench.pipeline.knn_baseline."""

from gnnbench.workflow import job

with job(snakemake):
    from gnnbench.pipeline import knn_baseline

    out = snakemake.output
    knn_baseline(
        snakemake.input.meta.rsplit("/", 1)[0], snakemake.input.splits, snakemake.params.batch_size,
        out.json, snakemake.params.k, record_out=out.record)
