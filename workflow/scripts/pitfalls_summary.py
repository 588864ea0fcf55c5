"""Snakemake adapter for rule pitfalls_summary: gnnbench.protocols.pitfalls.suite_report."""

from gnnbench.protocols.pitfalls.tables import suite_report
from gnnbench.workflow import run_step

out = snakemake.output
run_step(snakemake, lambda: suite_report(list(snakemake.input), out.csv, out.md, out.parquet))
