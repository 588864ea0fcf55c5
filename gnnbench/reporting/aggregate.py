"""Aggregate runs of the benchmarking-gnns protocol into one table per dataset (Dwivedi et al., "Benchmarking GNNs").

The table is read from the runs' records (:mod:`gnnbench.records`, one file per run, written by every training
job: :func:`load_runs`), not from their ``metrics.json``. One row per model label: number of runs, parameter count,
mean ± std over seeds (and folds) of the test and train metric, epochs, seconds per epoch and total hours; with
``extrema`` (the protocol asks for them under cross-validation) also the minimum and maximum test score (CSL
reports mean ± std, max, min over 5 folds × seeds). Standard deviations are population deviations (ddof = 0,
NumPy's ``np.std``), as the original computes them. Seconds per epoch are the training epochs' seconds over their
count (the record's ``extra``), total hours the run's seconds (setup and final scoring included) over 3600.

Multitask runs (GraphTheoryProp) also report each task's test score (the record's ``extra`` ``per_task``, [task,
score] pairs in the metric's order): columns ``test_<task>_mean`` / ``_std`` and one Markdown column per task.
Baselines (e.g. TSP's k-NN heuristic) come as run records with 0 parameters and 0 epochs and appear as rows like
the models.

With the dataset's ``meta.json`` (and the suite's preset of every label) each row also gets the paper's number for
the same experiment and how ours compares (:mod:`gnnbench.reporting.published`: columns paper_mean, paper_std,
paper_n, paper_row, diff_vs_paper, z_vs_paper, verdict, setting; Markdown "Paper" and "vs paper").

Diverged runs (record ``status`` "diverged": a NaN or infinite loss stopped the run, and it has no scores,
:mod:`gnnbench.training.last_epoch`) are never averaged: every mean ± std (scores, epochs, times) is over the
label's completed runs, column ``diverged`` counts the others (``runs`` counts all), and the Markdown test cell reads
"mean ± std (k of n diverged)", or "diverged (n of n)" when no run completed (its other cells "–"). The comparison
with the paper uses the completed runs.

Written as CSV and Parquet (numbers) and Markdown (formatted "mean ± std").
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from gnnbench.errors import DataError
from gnnbench.io import atomic_path
from gnnbench.records import extras, read_runs
from gnnbench.reporting import published as pub
from gnnbench.reporting.formatting import P1_DECIMALS, mean_std, number
from gnnbench.reporting.published import markdown_cells, markdown_note
from gnnbench.reporting.status import diverged, diverged_cell

RUN_COLUMNS = ("dataset", "label", "model", "seed", "fold", "metric", "higher_is_better", "split_scheme",
               "test_metric", "val_metric", "train_metric", "test_loss", "num_params", "epochs",
               "seconds_per_epoch", "total_hours", "stop_reason", "status")


def load_runs(record_files: list[str | os.PathLike], configs: bool = False) -> pd.DataFrame:
    """:func:`runs_table` of the given run-record files (:func:`gnnbench.records.read_runs`), in their order."""
    return runs_table(read_runs(record_files), configs)


def runs_table(records: pd.DataFrame, configs: bool = False) -> pd.DataFrame:
    """One row per run of run records (:mod:`gnnbench.records`, stage ``run``), in their order, with the table's
    :data:`RUN_COLUMNS` (``label``: the suite's model label, ``model``: its architecture, ``fold``: the record's
    split) and a ``test_<task>`` column per task of multitask runs; ``configs`` adds the run config (column
    ``config``, a mapping)."""
    import json


    records = records[records["stage"] == "run"].reset_index(drop=True)
    extra = extras(records)
    if any("seconds_per_epoch" not in e for e in extra):
        bad = records.iloc[next(i for i, e in enumerate(extra) if "seconds_per_epoch" not in e)]
        raise DataError(f"run record of {bad['model']} (dataset {bad['dataset']}, protocol {bad['protocol']}, seed "
                        f"{bad['seed']}, split {bad['split']}) has no seconds_per_epoch in its extra column, which "
                        "this table needs: give it only the records of single training runs")
    runs = pd.DataFrame({
        "dataset": records["dataset"], "label": records["model"], "model": records["architecture"],
        "seed": records["seed"], "fold": records["split"], "metric": records["metric"],
        "higher_is_better": records["higher_is_better"], "split_scheme": records["split_scheme"],
        "test_metric": records["test_score"], "val_metric": records["val_score"],
        "train_metric": records["train_score"], "test_loss": records["test_loss"], "num_params": records["num_params"],
        "epochs": records["epochs"], "seconds_per_epoch": [e["seconds_per_epoch"] for e in extra],
        "total_hours": records["seconds"] / 3600, "stop_reason": records["stop_reason"],
        "status": records["status"].fillna("completed")}, columns=list(RUN_COLUMNS))
    per_task = [dict(e.get("per_task", {}).get("test") or []) for e in extra]
    tasks = list(dict.fromkeys(task for scores in per_task for task in scores))
    for task in tasks:
        runs[f"test_{task}"] = [scores.get(task, float("nan")) for scores in per_task]
    if configs:
        runs["config"] = [json.loads(config) for config in records["config"]]
    return runs


def _task_columns(frame: pd.DataFrame) -> list[str]:
    """Per-task test score columns (``test_<task>``) of multitask runs, in first-seen order."""
    return [c for c in frame.columns if c.startswith("test_") and c not in RUN_COLUMNS and c != "config"]


def aggregate(runs: pd.DataFrame, extrema: bool = False) -> pd.DataFrame:
    """Per-label summary table (labels in order of first appearance); ``extrema`` adds min and max test scores.
    Statistics are over the completed runs; ``diverged`` counts the diverged ones (module docstring)."""
    if runs.empty:
        raise DataError("no runs to aggregate; check the benchmark's models and seeds in the config")
    rows = []
    for label, every in runs.groupby("label", sort=False):
        failed = diverged(every)
        group = every[~failed]
        row = {"dataset": every["dataset"].iloc[0], "model": label, "architecture": every["model"].iloc[0],
               "metric": every["metric"].iloc[0], "runs": len(every), "diverged": int(failed.sum()),
               "seeds": every["seed"].nunique(), "folds": every["fold"].nunique(),
               "params": int(every["num_params"].iloc[0])}
        for column in ("test_metric", "train_metric", "epochs", "seconds_per_epoch", "total_hours",
                       *_task_columns(runs)):
            row[f"{column}_mean"] = group[column].mean()
            row[f"{column}_std"] = group[column].std(ddof=0)
        if extrema:
            row["test_metric_min"] = group["test_metric"].min()
            row["test_metric_max"] = group["test_metric"].max()
        rows.append(row)
    return pd.DataFrame(rows)


def with_paper(table: pd.DataFrame, runs: pd.DataFrame, meta, presets: dict[str, str | None] | None = None
               ) -> pd.DataFrame:
    """``table`` with the comparison columns of :mod:`gnnbench.reporting.published` (``runs`` from
    :func:`load_runs` with ``configs=True``; ``presets``: label → the suite's preset)."""
    out = []
    for _, row in table.iterrows():
        group = runs[runs["label"] == row["model"]]
        config, higher = group["config"].iloc[0], bool(group["higher_is_better"].iloc[0])
        preset = (presets or {}).get(row["model"])
        paper = pub.match_benchmarking_gnns(meta, row["architecture"], config, int(row["params"]), preset)
        setting = "" if paper is None else pub.benchmarking_gnns_setting(
            meta, config, preset, int(row["runs"]), paper, int(row["params"]))
        scored = int(row["runs"]) - int(row.get("diverged", 0))  # the mean is over the completed runs
        out.append(pub.compare(row["test_metric_mean"], row["test_metric_std"], scored, paper, higher, setting))
    return pd.concat([table.reset_index(drop=True), pd.DataFrame(out, columns=pub.COLUMNS)], axis=1)


def to_markdown(table: pd.DataFrame) -> str:
    """A Markdown table with "mean ± std" cells."""
    metric = table["metric"].iloc[0]
    headers = ["Model", "#Runs", "#Params", f"Test {metric}", f"Train {metric}", "Epochs", "s/epoch", "Total hrs"]
    extrema = "test_metric_min" in table
    if extrema:
        headers[4:4] = ["Test min", "Test max"]
    tasks = [c.removesuffix("_mean") for c in table.columns
             if c.startswith("test_") and c.endswith("_mean") and c != "test_metric_mean"]
    headers[4:4] = [f"Test {t[len('test_'):]}" for t in tasks]
    paper = "paper_mean" in table
    if paper:
        headers[4:4] = ["Paper", "vs paper"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for _, r in table.iterrows():
        failed = int(r.get("diverged", 0))
        scored = failed < r["runs"]

        def show(text: str, scored: bool = scored) -> str:
            return text if scored else "–"  # no completed run: no numbers

        test = diverged_cell(mean_std(r["test_metric_mean"], r["test_metric_std"], P1_DECIMALS), failed, r["runs"])
        cells = [str(r["model"]), str(r["runs"]), f"{r['params']:,}", test,
                 show(mean_std(r["train_metric_mean"], r["train_metric_std"], P1_DECIMALS)),
                 show(f"{r['epochs_mean']:.1f}"), show(f"{r['seconds_per_epoch_mean']:.2f}"),
                 show(f"{r['total_hours_mean']:.4f}")]
        if extrema:
            cells[4:4] = [show(number(r[f"test_metric_{m}"], P1_DECIMALS)) for m in ("min", "max")]
        cells[4:4] = [show(mean_std(r[f"{t}_mean"], r[f"{t}_std"], P1_DECIMALS)) for t in tasks]
        if paper:
            cells[4:4] = list(markdown_cells(r, P1_DECIMALS))
        lines.append("| " + " | ".join(cells) + " |")
    note = "\n" + markdown_note(table) if paper and table["paper_mean"].notna().any() else ""
    return "\n".join(lines) + "\n" + note


def write_tables(table: pd.DataFrame, csv: str | os.PathLike, markdown: str | os.PathLike,
                 parquet: str | os.PathLike) -> None:
    """Write the table as CSV and Parquet (numbers) and Markdown (:func:`to_markdown`, under a heading naming the
    dataset), each atomically."""
    dataset = table["dataset"].iloc[0]
    with atomic_path(csv) as tmp:
        table.to_csv(tmp, index=False)
    with atomic_path(parquet) as tmp:
        table.to_parquet(tmp, index=False)
    with atomic_path(markdown) as tmp:
        Path(tmp).write_text(f"## {dataset}\n\n" + to_markdown(table))
