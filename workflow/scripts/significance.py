"""Snakemake adapter for rule significance: the benchmark's protocol's significance_report
(gnnbench.protocols.base.Protocol.significance_report, tests in gnnbench.reporting.significance)."""

from gnnbench.protocols import get_protocol
from gnnbench.workflow import run_step

out, params = snakemake.output, snakemake.params
inputs = params.inputs if isinstance(params.inputs, (list, tuple)) else {
    label: [tuple(unit) for unit in units] for label, units in dict(params.inputs).items()}
run_step(snakemake, lambda: get_protocol(params.protocol).significance_report(
    dataset=snakemake.wildcards.dataset, inputs=list(inputs) if isinstance(inputs, (list, tuple)) else inputs,
    csv=out.csv, md=out.md, parquet=out.parquet))
