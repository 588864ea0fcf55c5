"""The tables of the pitfalls protocol: per dataset (with its box plot), the suite summary (Shchur et al., Tables 1
and 2a) and the fixed- versus random-split ranking (Table 2b)."""

from __future__ import annotations

import os
from pathlib import Path

from gnnbench.data.meta import read_meta
from gnnbench.errors import DataError
from gnnbench.io import read_json
from gnnbench.protocols.pitfalls import TRAINING_DEFAULTS
from gnnbench.records import read_tables
from gnnbench.reporting import pitfalls as report


def read_runs(files: list[str | os.PathLike]):
    """One DataFrame of the runs in ``files`` (``runs.parquet`` of jobs), in the given order."""
    if not files:
        raise DataError("no runs to aggregate; check the benchmark's models in the config")
    return read_tables(files, "runs")


def dataset_report(runs_files: list[str | os.PathLike], csv, markdown, parquet, png, svg, dataset_dir=None,
                   split: dict | None = None, presets: dict[str, str | None] | None = None) -> None:
    """Per-dataset table (mean ± std over all runs per model) and box plot. With the dataset's folder (its
    meta.json) and split config also the paper's numbers beside ours (the run configs are read from the jobs'
    ``metrics.json`` beside their ``runs.parquet``; ``presets``: label → the suite's preset)."""
    runs = read_runs(runs_files)
    dataset = runs["dataset"].iloc[0]
    table = report.dataset_table(runs)
    if dataset_dir is not None:
        configs = {}
        for path in runs_files:
            metrics = read_json(Path(path).parent / "metrics.json", "job metrics file")
            configs.setdefault(metrics["label"], metrics["config"])
        table = report.with_paper(table, read_meta(dataset_dir), split or {}, configs, presets, TRAINING_DEFAULTS)
    report.write_table(table, f"## {dataset}\n\n" + report.dataset_markdown(table), csv, markdown, parquet)
    report.box_plot(runs, f"{dataset}: test accuracy of every run", png, svg)


def suite_report(runs_files: list[str | os.PathLike], csv, markdown, parquet) -> None:
    """Table 1 matrix with relative accuracy and average rank (Table 2a) over the random-split benchmarks."""
    table = report.summary_table(read_runs(runs_files))
    report.write_table(table, report.summary_markdown(table), csv, markdown, parquet)


def ranking_report(pairs: list[tuple[str, list, str, list]], csv, markdown, parquet) -> None:
    """Fixed split versus random splits: the two rankings of the models side by side (Table 2b)."""
    table = report.split_ranking_table([(fixed, read_runs(ff), rand, read_runs(rf)) for fixed, ff, rand, rf in pairs])
    report.write_table(table, report.split_ranking_markdown(table), csv, markdown, parquet)
