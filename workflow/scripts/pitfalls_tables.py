"""Snakemake adapter for rule pitfalls_tables: gnnbench.protocols.pitfalls.dataset_report."""

from pathlib import Path

from gnnbench.protocols.pitfalls.tables import dataset_report
from gnnbench.workflow import run_step

out = snakemake.output
run_step(snakemake, lambda: dataset_report(list(snakemake.input.runs), out.csv, out.md, out.parquet, out.png, out.svg,
                                           dataset_dir=Path(snakemake.input.meta).parent,
                                           split=dict(snakemake.params.split), presets=dict(snakemake.params.presets)))
