"""Snakemake adapter for rule tune_round: gnnbench.protocols.tuning_jobs.run_round."""

from pathlib import Path

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.protocols.tuning_jobs import run_round

    run_round(
        job=dict(snakemake.params.job), dataset_dir=Path(snakemake.input.meta).parent,
        splits_path=snakemake.input.splits, pe_path=snakemake.input.get("pe"),
        previous=list(snakemake.input.previous), out=snakemake.output.round, records_out=snakemake.output.records,
        device=snakemake.params.device, threads=snakemake.threads)
