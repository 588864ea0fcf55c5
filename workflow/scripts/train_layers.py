"""Snakemake adapter for rule train_layers: gnnbench.protocols.heterophily.train.run_candidate."""

from pathlib import Path

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.protocols.heterophily.train import run_candidate

    run_candidate(
        dataset_dir=Path(snakemake.input.meta).parent, splits_path=snakemake.input.splits,
        config=dict(snakemake.params.config), seed=snakemake.params.seed,
        split_ids=snakemake.params.folds, splits_per_stack=snakemake.params.splits_per_stack,
        out_dir=Path(snakemake.output.metrics).parent, device=snakemake.params.device, threads=snakemake.threads,
        label=snakemake.wildcards.model, layers=int(snakemake.wildcards.layers), records_out=snakemake.output.records)
