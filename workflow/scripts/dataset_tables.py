"""Snakemake adapter for the rules tables_<dataset>: gnnbench.report_jobs.dataset_job (the benchmark's protocol's
tables module, its paired tests, its tuning report, the tables' HTML pages)."""

from pathlib import Path

from gnnbench.script_job import job

with job(snakemake, torch_threads=False):
    from gnnbench.report_jobs import dataset_job

    params = snakemake.params
    dataset_job(
        protocol=params.protocol, dataset=params.dataset, records=list(snakemake.input.records),
        histories=list(snakemake.input.histories), dataset_dir=Path(snakemake.input.meta).parent,
        outputs=dict(snakemake.output.items()), models=list(params.models), significance=dict(params.significance),
        options=dict(params.options), leakage=snakemake.input.leakage, leakage_threshold=params.leakage_threshold,
        trials=list(snakemake.input.trials))
