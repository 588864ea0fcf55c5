"""Snakemake adapter for rule table_page: gnnbench.reporting.report.table_html."""

from gnnbench.workflow import job

with job(snakemake, torch_threads=False):
    from gnnbench.reporting.report import table_html

    table_html(snakemake.input[0], snakemake.output[0])
