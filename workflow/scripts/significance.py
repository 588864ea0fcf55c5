"""Snakemake adapter for rule significance: gnnbench.reporting.significance.significance_report."""

from gnnbench.reporting.significance import significance_report
from gnnbench.workflow import run_step

out, params = snakemake.output, snakemake.params
inputs = list(snakemake.input) if params.finals is None else {k: list(v) for k, v in dict(params.finals).items()}
run_step(snakemake, lambda: significance_report(dataset=snakemake.wildcards.dataset, protocol=params.protocol,
                                                inputs=inputs, csv=out.csv, md=out.md, parquet=out.parquet))
