"""Snakemake adapter for rule pe_bars: gnnbench.reporting.plots.pe_bars."""

from gnnbench.reporting.plots import pe_bars
from gnnbench.workflow import run_step

out = snakemake.output
run_step(snakemake, lambda: pe_bars(snakemake.input[0], [tuple(p) for p in snakemake.params.pairs],
                                    snakemake.wildcards.dataset, out.png, out.svg), torch_threads=False)
