"""The tables of the pitfalls protocol, from the runs' records (:mod:`gnnbench.records`): per dataset (with its box
plot), the suite summary (Shchur et al., Tables 1 and 2a) and the fixed- versus random-split ranking (Table 2b).
Imports no torch."""

from __future__ import annotations

import json
import os

from gnnbench.data.meta import read_meta
from gnnbench.errors import DataError
from gnnbench.protocols.pitfalls import RANKING_TABLE_NAME, SUITE_TABLE_NAME, TRAINING_DEFAULTS
from gnnbench.records import read_runs
from gnnbench.reporting import pitfalls as report


def dataset_tables(dataset: str, records, outputs: dict[str, str], *, histories=None, meta=None,
                   presets: dict[str, str | None] | None = None, split: dict | None = None, pairs=()) -> None:
    """Write one benchmark's table (mean ± std over all runs per model; keys ``table_csv``, ``table_md``,
    ``table_parquet`` of ``outputs``) and box plot (``box_png``, ``box_svg``) from its run records (a DataFrame,
    :func:`gnnbench.records.read_runs`). With the dataset's ``meta`` and split config also the paper's numbers beside
    ours (the run configs are the records'; ``presets``: label → the suite's preset). ``histories`` and ``pairs``
    are not used (the keywords are every protocol's, :mod:`gnnbench.report_jobs`)."""
    runs = report.runs_from_records(records)
    table = report.dataset_table(runs)
    if meta is not None:
        records = records[records["stage"] == "run"]
        configs = {label: json.loads(config) for label, config in
                   records.drop_duplicates("model")[["model", "config"]].itertuples(index=False)}
        table = report.with_paper(table, meta, split or {}, configs, presets, TRAINING_DEFAULTS)
    report.write_table(table, f"## {dataset}\n\n" + report.dataset_markdown(table), outputs["table_csv"],
                       outputs["table_md"], outputs["table_parquet"])
    report.box_plot(runs, f"{dataset}: test accuracy of every run", outputs["box_png"], outputs["box_svg"])


def suite_tables(records, outputs: dict[str, str], *, summary: list[str], pairs: list[list[str]]) -> None:
    """Write the suite-wide tables from the run records (a DataFrame) of the benchmarks they span: the Table 1
    matrix with relative accuracy and average rank (Table 2a) over the random-split benchmarks ``summary`` (dataset
    names; keys ``pitfalls_csv``, ``_md``, ``_parquet`` of ``outputs``), and for every (fixed-split, random-splits)
    benchmark pair of ``pairs`` the two rankings side by side (Table 2b; ``pitfalls_split_ranking_*``)."""
    runs = report.runs_from_records(records)

    def write(name: str, table, markdown: str) -> None:
        report.write_table(table, markdown, outputs[f"{name}_csv"], outputs[f"{name}_md"], outputs[f"{name}_parquet"])

    if summary:
        table = report.summary_table(runs[runs["dataset"].isin(summary)].reset_index(drop=True))
        write(SUITE_TABLE_NAME, table, report.summary_markdown(table))
    if pairs:
        table = report.split_ranking_table([(fixed, _of(runs, fixed), rand, _of(runs, rand)) for fixed, rand in pairs])
        write(RANKING_TABLE_NAME, table, report.split_ranking_markdown(table))


def _of(runs, dataset: str):
    """The runs of one dataset, in their order."""
    return runs[runs["dataset"] == dataset].reset_index(drop=True)


def dataset_report(record_files: list[str | os.PathLike], csv, markdown, parquet, png, svg, dataset_dir=None,
                   split: dict | None = None, presets: dict[str, str | None] | None = None) -> None:
    """:func:`dataset_tables` of the given run-record files (``gnnbench aggregate``'s table and box plot); with the
    dataset's folder (its meta.json) and split config also the paper's numbers."""
    if not record_files:
        raise DataError("no runs to aggregate; check the benchmark's models in the config")
    meta = None
    if dataset_dir is not None:
        meta = read_meta(dataset_dir)
    records = read_runs(record_files)
    dataset = str(records["dataset"].iloc[0]) if len(records) else ""
    dataset_tables(dataset, records, {"table_csv": csv, "table_md": markdown, "table_parquet": parquet,
                                      "box_png": png, "box_svg": svg}, meta=meta, split=split, presets=presets)
