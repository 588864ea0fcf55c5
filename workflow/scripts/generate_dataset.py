"""Snakemake adapter for rule dataset: gnnbench.pipeline.generate_dataset."""

from pathlib import Path

from gnnbench.paths import RAW_DIR
from gnnbench.pipeline import generate_dataset
from gnnbench.workflow import run_step

run_step(snakemake, lambda: generate_dataset(
    snakemake.params.generator, snakemake.wildcards.dataset, snakemake.params.params, snakemake.params.seed,
    Path(snakemake.output.meta).parent, raw_dir=RAW_DIR))
