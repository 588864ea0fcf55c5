"""The tables of the fair-comparison protocol, from the runs' records (:mod:`gnnbench.records`): per dataset, per
outer fold, and the score bars. Imports no torch."""

from __future__ import annotations

from gnnbench.reporting import fair_comparison as report
from gnnbench.reporting.plots import score_bars


def dataset_tables(dataset: str, records, outputs: dict[str, str], *, histories=None, meta=None,
                   presets: dict[str, str | None] | None = None, split: dict | None = None, pairs=()) -> None:
    """Write one benchmark's tables — per model (keys ``table_csv``, ``table_md``, ``table_parquet`` of ``outputs``)
    and per model and outer fold (``folds_*``) — and, where asked (``bars_png``, ``bars_svg``), the score bars, from
    its run records (a DataFrame of its model-selection and final records,
    :func:`gnnbench.reporting.fair_comparison.folds_from_records`) and the dataset's ``meta`` (the paper's numbers;
    ``presets``: label → the suite's preset). ``histories``, ``split`` and ``pairs`` are not used
    (the keywords are every protocol's, :mod:`gnnbench.report_jobs`)."""
    table = report.write_reports(dataset, meta, report.folds_from_records(records), outputs, presets)
    if "bars_png" in outputs:
        score_bars(table, dataset, outputs["bars_png"], outputs["bars_svg"])
