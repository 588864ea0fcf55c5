"""Snakemake adapter for rule suite_report: gnnbench.reporting.jobs.suite_job."""

from gnnbench.reporting.jobs import suite_job
from gnnbench.workflow import run_step

run_step(snakemake, lambda: suite_job(suite=dict(snakemake.params.suite), tables=dict(snakemake.params.tables),
                                      outputs=dict(snakemake.output.items())), torch_threads=False)
