"""Snakemake adapter for rule pitfalls_split_ranking: gnnbench.protocols.pitfalls.ranking_report."""

from gnnbench.protocols.pitfalls.tables import ranking_report
from gnnbench.workflow import run_step

out = snakemake.output
run_step(snakemake, lambda: ranking_report(list(snakemake.params.pairs), out.csv, out.md, out.parquet))
