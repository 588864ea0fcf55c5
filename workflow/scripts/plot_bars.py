"""Snakemake adapter for rule score_bars: gnnbench.reporting.plots.score_bars."""

from gnnbench.reporting.plots import score_bars
from gnnbench.workflow import run_step

out = snakemake.output
run_step(snakemake, lambda: score_bars(snakemake.input[0], snakemake.wildcards.dataset, out.png, out.svg),
         torch_threads=False)
