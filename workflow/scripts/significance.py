"""Snakemake adapter for rule significance: the benchmark's protocol's significance_report over the run records of
its jobs (gnnbench.protocols.base.Protocol.significance_report, tests in gnnbench.reporting.significance)."""

from gnnbench.protocols.registry import get_protocol
from gnnbench.workflow import run_step

out = snakemake.output
run_step(snakemake, lambda: get_protocol(snakemake.params.protocol).significance_report(
    dataset=snakemake.wildcards.dataset, inputs=list(snakemake.input), csv=out.csv, md=out.md, parquet=out.parquet))
