"""Snakemake adapter for the rules train_seeds_*: gnnbench.protocols.benchmarking_gnns.train_seeds."""

from pathlib import Path

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.protocols.benchmarking_gnns.train import train_seeds
    from gnnbench.protocols.tuning import tuned_run

    # a tuned model's runs: the selection's values over the config (docs/tuning.md)
    config, extra = tuned_run(dict(snakemake.params.config), snakemake.input.get("tuning"))
    train_seeds(
        dataset_dir=Path(snakemake.input.meta).parent, splits_path=snakemake.input.splits,
        fold=int(snakemake.wildcards.fold), config=config, seeds=list(snakemake.params.seeds),
        out_dirs=[Path(m).parent for m in snakemake.output.metrics], pe_path=snakemake.input.get("pe"),
        device=snakemake.params.device, threads=snakemake.threads, label=snakemake.params.model,
        records_out=list(snakemake.output.records), stack=snakemake.params.stack, record_extra=extra)
