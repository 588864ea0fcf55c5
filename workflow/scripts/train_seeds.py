"""Snakemake adapter for the rules train_seeds_*: gnnbench.protocols.benchmarking_gnns.train_seeds."""

from pathlib import Path

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.protocols.benchmarking_gnns.train import train_seeds

    train_seeds(
        dataset_dir=Path(snakemake.input.meta).parent, splits_path=snakemake.input.splits,
        fold=int(snakemake.wildcards.fold), config=dict(snakemake.params.config), seeds=list(snakemake.params.seeds),
        out_dirs=[Path(m).parent for m in snakemake.output.metrics], pe_path=snakemake.input.get("pe"),
        device=snakemake.params.device, threads=snakemake.threads, label=snakemake.params.model,
        records_out=list(snakemake.output.records), stack=snakemake.params.stack)
