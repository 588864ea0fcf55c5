"""Snakemake adapter for rule suite_report: gnnbench.reporting.report.write_suite."""

from gnnbench.workflow import job

with job(snakemake, torch_threads=False):
    from gnnbench.reporting.report import write_suite

    write_suite(dict(snakemake.params.suite), snakemake.output.yaml, snakemake.output.html)
