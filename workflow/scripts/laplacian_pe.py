"""Snakemake adapter for rule laplacian_pe: gnnbench.pipeline.compute_pe."""

from pathlib import Path

from gnnbench.pipeline import compute_pe
from gnnbench.workflow import run_step

run_step(snakemake, lambda: compute_pe(Path(snakemake.input.meta).parent, int(snakemake.wildcards.k),
                                       snakemake.output[0]))
