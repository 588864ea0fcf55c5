"""Snakemake adapter for rule raw_download: gnnbench.data.download.fetch."""

from gnnbench.data.download import fetch
from gnnbench.paths import RAW_DIR
from gnnbench.workflow import run_step

run_step(snakemake, lambda: fetch(snakemake.params.raw, RAW_DIR, mirror=snakemake.params.mirror))
