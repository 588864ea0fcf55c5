"""Snakemake adapter for rule score_bars: gnnbench.reporting.plots.score_bars."""

from gnnbench.workflow import job

with job(snakemake, torch_threads=False):
    from gnnbench.reporting.plots import score_bars

    out = snakemake.output
    score_bars(snakemake.input[0], snakemake.wildcards.dataset, out.png, out.svg)
