"""Snakemake adapter for the rules tables_<dataset>: gnnbench.reporting.jobs.dataset_job (the benchmark's protocol's
tables module, its paired tests, the tables' HTML pages)."""

from pathlib import Path

from gnnbench.reporting.jobs import dataset_job
from gnnbench.workflow import run_step

params = snakemake.params
run_step(snakemake, lambda: dataset_job(
    protocol=params.protocol, dataset=params.dataset, records=list(snakemake.input.records),
    histories=list(snakemake.input.histories), dataset_dir=Path(snakemake.input.meta).parent,
    outputs=dict(snakemake.output.items()), models=list(params.models), significance=dict(params.significance),
    options=dict(params.options)), torch_threads=False)
