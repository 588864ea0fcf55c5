"""Snakemake adapter for rule dataset: gnnbench.pipeline.generate_dataset."""

from pathlib import Path

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.paths import RAW_DIR
    from gnnbench.pipeline import generate_dataset

    generate_dataset(
        snakemake.params.generator, snakemake.wildcards.dataset, snakemake.params.params, snakemake.params.seed,
        Path(snakemake.output.meta).parent, raw_dir=RAW_DIR)
