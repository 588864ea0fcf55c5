"""Snakemake adapter for rule splits: gnnbench.pipeline.make_split_file."""

from pathlib import Path

from gnnbench.pipeline import make_split_file
from gnnbench.workflow import run_step

split = dict(snakemake.params.split)
published = list(snakemake.input.get("published", [])) or None
run_step(snakemake, lambda: make_split_file(Path(snakemake.input.meta).parent, split.pop("scheme"), split,
                                            snakemake.output[0], published), torch_threads=False)
