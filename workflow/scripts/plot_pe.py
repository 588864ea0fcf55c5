"""Snakemake adapter for rule pe_bars: gnnbench.reporting.plots.pe_bars."""

from gnnbench.workflow import job

with job(snakemake, torch_threads=False):
    from gnnbench.reporting.plots import pe_bars

    out = snakemake.output
    pe_bars(snakemake.input[0], [tuple(p) for p in snakemake.params.pairs],
            snakemake.wildcards.dataset, out.png, out.svg)
