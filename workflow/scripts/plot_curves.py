"""Snakemake adapter for rule learning_curves: gnnbench.reporting.plots.learning_curves."""

from gnnbench.workflow import job

with job(snakemake, torch_threads=False):
    from gnnbench.reporting.plots import learning_curves

    out = snakemake.output
    learning_curves(list(snakemake.input.metrics), snakemake.wildcards.dataset, out.png, out.svg)
