"""Snakemake adapter for rule train: gnnbench.protocols.benchmarking_gnns.train."""

from pathlib import Path

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.protocols.benchmarking_gnns.train import train

    train(
        dataset_dir=Path(snakemake.input.meta).parent, splits_path=snakemake.input.splits,
        fold=int(snakemake.wildcards.fold), config=dict(snakemake.params.config),
        out_dir=Path(snakemake.output.metrics).parent, pe_path=snakemake.input.get("pe"),
        device=snakemake.params.device, threads=snakemake.threads, label=snakemake.wildcards.model,
        records_out=snakemake.output.records)
