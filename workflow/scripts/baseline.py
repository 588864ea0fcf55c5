"""Snakemake adapter for rule baseline: gnnbench.pipeline.score_baseline."""

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.pipeline import score_baseline

    out = snakemake.output
    score_baseline(
        snakemake.input.meta.rsplit("/", 1)[0], snakemake.input.splits, snakemake.params.batch_size,
        snakemake.params.method, dict(snakemake.params.params), out.json, record_out=out.record)
