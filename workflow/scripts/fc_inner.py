"""Snakemake adapter for rule fc_inner: gnnbench.protocols.fair_comparison.run_inner."""

from pathlib import Path

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.protocols.fair_comparison.train import run_inner

    run_inner(
        dataset_dir=Path(snakemake.input.meta).parent, splits_path=snakemake.input.splits,
        fold=int(snakemake.wildcards.fold), configs=[dict(c) for c in snakemake.params.configs],
        positions=list(snakemake.params.positions), seed=snakemake.params.seed, out=snakemake.output.runs,
        device=snakemake.params.device, threads=snakemake.threads, label=snakemake.wildcards.model,
        records_out=snakemake.output.records,
        stack=bool(snakemake.params.get("stack", False)))
