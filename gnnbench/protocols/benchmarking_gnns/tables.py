"""The dataset table of the benchmarking-gnns protocol, from the runs' records."""

from __future__ import annotations

import os

from gnnbench.data.meta import read_meta
from gnnbench.reporting.aggregate import aggregate, load_runs, with_paper, write_tables


def aggregate_tables(record_files: list[str | os.PathLike], csv: str | os.PathLike, markdown: str | os.PathLike,
                     parquet: str | os.PathLike, dataset_dir: str | os.PathLike | None = None,
                     presets: dict[str, str | None] | None = None) -> None:
    """One table per dataset from the runs' record files (:mod:`gnnbench.records`; baselines' records included);
    with cross-validation splits also the min and max test score; with the dataset's folder (its meta.json) also
    the paper's numbers beside ours (``presets``: label → the suite's preset)."""
    runs = load_runs(record_files, configs=dataset_dir is not None)
    extrema = bool(runs["split_scheme"].isin(["stratified_kfold", "published"]).any())
    table = aggregate(runs, extrema=extrema)
    if dataset_dir is not None:
        table = with_paper(table, runs, read_meta(dataset_dir), presets)
    write_tables(table, csv, markdown, parquet)
