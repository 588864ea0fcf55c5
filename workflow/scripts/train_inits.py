"""Snakemake adapter for rule train_inits: gnnbench.protocols.pitfalls.run_chunk."""

from pathlib import Path

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.protocols.pitfalls.train import run_chunk
    from gnnbench.protocols.tuning import tuned_run

    # a tuned model's runs: the selection's values over the config (docs/tuning.md)
    config, extra = tuned_run(dict(snakemake.params.config), snakemake.input.get("tuning"))
    run_chunk(
        dataset_dir=Path(snakemake.input.meta).parent, splits_path=snakemake.input.splits,
        splits=list(snakemake.params.splits), config=config, inits=snakemake.params.inits,
        seed=snakemake.params.seed, out_dir=Path(snakemake.output.runs).parent, device=snakemake.params.device,
        threads=snakemake.threads, label=snakemake.wildcards.model, records_out=snakemake.output.records,
        record_extra=extra)
