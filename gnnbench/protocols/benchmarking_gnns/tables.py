"""The tables and figures of the benchmarking-gnns protocol, from the runs' records (:mod:`gnnbench.records`): the
dataset table (with the paper's numbers), the learning curves (from the history records), the score bars and the
comparison without / with positional encodings (from the table). Imports no torch."""

from __future__ import annotations

import os

from gnnbench.data.meta import read_meta
from gnnbench.records import read_runs
from gnnbench.reporting import plots
from gnnbench.reporting.aggregate import aggregate, runs_table, with_paper, write_tables


def dataset_tables(dataset: str, records, outputs: dict[str, str], *, histories=None, meta=None,
                   presets: dict[str, str | None] | None = None, split: dict | None = None, pairs=()) -> None:
    """Write one benchmark's table and figures to ``outputs`` (keys ``table_csv``, ``table_md``, ``table_parquet``;
    where present ``curves_png`` / ``_svg`` — which need ``histories`` —, ``bars_*`` and ``pe_*``) from its run
    records (a DataFrame, :func:`gnnbench.records.read_runs`; baselines' records included) and history records. With
    cross-validation splits the table has the min and max test score; with the dataset's ``meta`` the paper's numbers
    beside ours (``presets``: label → the suite's preset); ``pairs``: the PE figure's (architecture, label without
    PE, label with PE). ``split`` is not used (the keywords are every protocol's, :mod:`gnnbench.report_jobs`)."""
    runs = runs_table(records, configs=meta is not None)
    table = aggregate(runs, extrema=bool(runs["split_scheme"].isin(["stratified_kfold", "published"]).any()))
    if meta is not None:
        table = with_paper(table, runs, meta, presets)
    write_tables(table, outputs["table_csv"], outputs["table_md"], outputs["table_parquet"])
    if "curves_png" in outputs:
        plots.learning_curves(plots.curve_histories(records, histories), dataset, outputs["curves_png"],
                              outputs["curves_svg"])
    if "bars_png" in outputs:
        plots.score_bars(table, dataset, outputs["bars_png"], outputs["bars_svg"])
    if "pe_png" in outputs:
        plots.pe_bars(table, [tuple(pair) for pair in pairs], dataset, outputs["pe_png"], outputs["pe_svg"])


def aggregate_tables(record_files: list[str | os.PathLike], csv: str | os.PathLike, markdown: str | os.PathLike,
                     parquet: str | os.PathLike, dataset_dir: str | os.PathLike | None = None,
                     presets: dict[str, str | None] | None = None) -> None:
    """One table per dataset from the runs' record files (:mod:`gnnbench.records`; baselines' records included);
    with cross-validation splits also the min and max test score; with the dataset's folder (its meta.json) also
    the paper's numbers beside ours (``presets``: label → the suite's preset). ``gnnbench aggregate``'s table."""
    meta = None
    if dataset_dir is not None:
        meta = read_meta(dataset_dir)
    records = read_runs(record_files)
    dataset = str(records["dataset"].iloc[0]) if len(records) else ""
    dataset_tables(dataset, records, {"table_csv": csv, "table_md": markdown, "table_parquet": parquet}, meta=meta,
                   presets=presets)
