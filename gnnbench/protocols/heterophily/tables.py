"""The tables of the heterophily protocol, from the runs' records (:mod:`gnnbench.records`): per dataset the models
at their selected layer counts with every candidate's validation score and the paper's number, and the suite table
(dataset × model). Imports no torch."""

from __future__ import annotations

import json

from gnnbench.protocols.heterophily import SUITE_TABLE_NAME, TRAINING_DEFAULTS
from gnnbench.reporting import heterophily as report
from gnnbench.reporting.pitfalls import write_table


def dataset_tables(dataset: str, records, outputs: dict[str, str], *, histories=None, meta=None,
                   presets: dict[str, str | None] | None = None, split: dict | None = None, pairs=()) -> None:
    """Write one benchmark's table (keys ``table_csv``, ``table_md``, ``table_parquet`` of ``outputs``) from its run
    records (a DataFrame): :func:`gnnbench.reporting.heterophily.dataset_table`, with the dataset's ``meta`` also the
    paper's number beside ours. ``histories``, ``presets``, ``split`` and ``pairs`` are not used (the keywords are
    every protocol's, :mod:`gnnbench.report_jobs`)."""
    table = report.dataset_table(records)
    if meta is not None:
        scored = records[records["stage"] == "run"].drop_duplicates("model")
        configs = {m: json.loads(c) for m, c in scored[["model", "config"]].itertuples(index=False)}
        table = report.with_paper(table, meta, configs, TRAINING_DEFAULTS)
    write_table(table, report.dataset_markdown(dataset, table), outputs["table_csv"], outputs["table_md"],
                outputs["table_parquet"])


def suite_tables(records, outputs: dict[str, str], *, datasets: list[str]) -> None:
    """Write the suite table (model × dataset; keys ``heterophily_csv``, ``_md``, ``_parquet`` of ``outputs``) of
    the benchmarks ``datasets`` from their run records (a DataFrame)."""
    tables = {d: report.dataset_table(records[records["dataset"] == d]) for d in datasets}
    table = report.suite_table(tables)
    name = SUITE_TABLE_NAME
    write_table(table, report.suite_markdown(table, tables), outputs[f"{name}_csv"], outputs[f"{name}_md"],
                outputs[f"{name}_parquet"])
