"""Snakemake adapter for rule suite_report: gnnbench.report_jobs.suite_job."""

from gnnbench.script_job import job

with job(snakemake, torch_threads=False):
    from gnnbench.report_jobs import suite_job

    suite_job(suite=dict(snakemake.params.suite), tables=dict(snakemake.params.tables),
              outputs=dict(snakemake.output.items()), critical_difference=dict(snakemake.params.critical_difference))
