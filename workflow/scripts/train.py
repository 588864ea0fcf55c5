"""Snakemake adapter for rule train: gnnbench.training.run.train_run."""

from pathlib import Path

from gnnbench.training.run import train_run
from gnnbench.workflow import run_step

run_step(snakemake, lambda: train_run(
    dataset_dir=Path(snakemake.input.meta).parent, splits_path=snakemake.input.splits,
    fold=int(snakemake.wildcards.fold), config=dict(snakemake.params.config),
    out_dir=Path(snakemake.output.metrics).parent, pe_path=snakemake.input.get("pe"),
    device=snakemake.params.device, threads=snakemake.threads, label=snakemake.wildcards.model))
