"""Snakemake adapter for rule table_page: gnnbench.reporting.report.table_html."""

from gnnbench.reporting.report import table_html
from gnnbench.workflow import run_step

run_step(snakemake, lambda: table_html(snakemake.input[0], snakemake.output[0]), torch_threads=False)
