"""Snakemake adapter for rule fc_select: gnnbench.protocols.fair_comparison.select."""

from gnnbench.protocols.fair_comparison.select import select
from gnnbench.workflow import run_step

run_step(snakemake, lambda: select(list(snakemake.input), snakemake.output[0], dataset=snakemake.wildcards.dataset,
                                   model=snakemake.wildcards.model, fold=int(snakemake.wildcards.fold)),
         torch_threads=False)
