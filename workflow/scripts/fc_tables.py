"""Snakemake adapter for rule fc_tables: gnnbench.protocols.fair_comparison.dataset_report."""

from pathlib import Path

from gnnbench.workflow import job

with job(snakemake):
    from gnnbench.protocols.fair_comparison.tables import dataset_report

    dataset_report(
        dataset=snakemake.wildcards.dataset, dataset_dir=Path(snakemake.input.meta).parent,
        models={label: dict(files) for label, files in snakemake.params.models.items()},
        outputs={k: snakemake.output[k] for k in ("csv", "md", "parquet", "folds_csv", "folds_md", "folds_parquet")},
        presets=dict(snakemake.params.presets))
