"""Snakemake adapter for rule pitfalls_tables: gnnbench.protocols.pitfalls.dataset_report."""

from gnnbench.protocols.pitfalls import dataset_report
from gnnbench.workflow import run_step

out = snakemake.output
run_step(snakemake, lambda: dataset_report(list(snakemake.input), out.csv, out.md, out.parquet, out.png, out.svg))
