"""Snakemake adapter for rule laplacian_pe: gnnbench.pipeline.compute_pe."""

from pathlib import Path

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.pipeline import compute_pe

    compute_pe(Path(snakemake.input.meta).parent, int(snakemake.wildcards.k), snakemake.output[0])
