"""Snakemake adapter for rule splits: gnnbench.pipeline.make_split_file."""

from pathlib import Path

from gnnbench.script_job import job

with job(snakemake, torch_threads=False):
    from gnnbench.pipeline import make_split_file

    split = dict(snakemake.params.split)
    published = list(snakemake.input.get("published", [])) or None
    make_split_file(Path(snakemake.input.meta).parent, split.pop("scheme"), split, snakemake.output.splits, published,
                    leakage=snakemake.output.leakage)
