"""Snakemake adapter for rule fc_final: gnnbench.protocols.fair_comparison.run_final."""

from pathlib import Path

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.protocols.fair_comparison.train import run_final
    from gnnbench.protocols.tuning import selection_extra

    run_final(
        dataset_dir=Path(snakemake.input.meta).parent, splits_path=snakemake.input.splits,
        fold=int(snakemake.wildcards.fold), selection_path=snakemake.input.selection, runs=snakemake.params.runs,
        holdout=snakemake.params.holdout, seed=snakemake.params.seed, out=snakemake.output.runs,
        history_out=snakemake.output.history, device=snakemake.params.device, threads=snakemake.threads,
        label=snakemake.wildcards.model, records_out=snakemake.output.records,
        stack=bool(snakemake.params.get("stack", False)), record_extra=selection_extra(snakemake.input.selection))
