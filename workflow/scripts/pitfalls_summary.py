"""Snakemake adapter for rule pitfalls_summary: gnnbench.protocols.pitfalls.suite_report."""

from gnnbench.workflow import job

with job(snakemake):
    from gnnbench.protocols.pitfalls.tables import suite_report

    out = snakemake.output
    suite_report(list(snakemake.input), out.csv, out.md, out.parquet)
