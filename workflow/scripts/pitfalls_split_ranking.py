"""Snakemake adapter for rule pitfalls_split_ranking: gnnbench.protocols.pitfalls.ranking_report."""

from gnnbench.workflow import job

with job(snakemake):
    from gnnbench.protocols.pitfalls.tables import ranking_report

    out = snakemake.output
    ranking_report(list(snakemake.params.pairs), out.csv, out.md, out.parquet)
