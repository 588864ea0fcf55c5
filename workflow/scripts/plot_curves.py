"""Snakemake adapter for rule learning_curves: gnnbench.reporting.plots.learning_curves."""

from gnnbench.reporting.plots import learning_curves
from gnnbench.workflow import run_step

out = snakemake.output
run_step(snakemake, lambda: learning_curves(list(snakemake.input.metrics), snakemake.wildcards.dataset, out.png,
                                            out.svg), torch_threads=False)
