"""Snakemake adapter for rule raw_download: gnnbench.data.download.fetch."""

from gnnbench.script_job import job

with job(snakemake):
    from gnnbench.data.download import fetch
    from gnnbench.paths import RAW_DIR

    fetch(snakemake.params.raw, RAW_DIR, mirror=snakemake.params.mirror)
