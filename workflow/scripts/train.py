"""Snakemake adapter for rule train: gnnbench.protocols.benchmarking_gnns.train."""

from pathlib import Path

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.protocols.benchmarking_gnns.train import train
    from gnnbench.protocols.tuning import tuned_run

    # a tuned model's runs: the selection's values over the config (docs/tuning.md)
    config, extra = tuned_run(dict(snakemake.params.config), snakemake.input.get("tuning"))
    train(
        dataset_dir=Path(snakemake.input.meta).parent, splits_path=snakemake.input.splits,
        fold=int(snakemake.wildcards.fold), config=config,
        out_dir=Path(snakemake.output.metrics).parent, pe_path=snakemake.input.get("pe"),
        device=snakemake.params.device, threads=snakemake.threads, label=snakemake.wildcards.model,
        records_out=snakemake.output.records, record_extra=extra)
