"""Snakemake adapter for rule suite_report: gnnbench.reporting.report.write_suite."""

from gnnbench.reporting.report import write_suite
from gnnbench.workflow import run_step

run_step(snakemake, lambda: write_suite(dict(snakemake.params.suite), snakemake.output.yaml, snakemake.output.html),
         torch_threads=False)
