"""Aggregate runs of the benchmarking-gnns protocol into one table per dataset (spec protocols.md P1).

One row per model label: number of runs, parameter count, mean ± std over seeds (and folds) of the
test and train metric, epochs, seconds per epoch and total hours; with ``extrema`` (the protocol asks for them
under cross-validation) also the minimum and maximum test score (CSL reports mean ± std, max, min over 5 folds ×
seeds). Standard deviations are population deviations (ddof = 0, NumPy's ``np.std``), as the original computes
them.

Multitask runs (GraphTheoryProp) also report each task's test score (``metrics.json`` ``test.per_task``, [task, score]
pairs in the metric's order):
columns ``test_<task>_mean`` / ``_std`` and one Markdown column per task. Baselines (e.g. TSP's k-NN
heuristic) come as metrics records with 0 parameters and 0 epochs and appear as rows like the models.

With the dataset's ``meta.json`` (and the suite's preset of every label) each row also gets the paper's number for
the same experiment and how ours compares (:mod:`gnnbench.reporting.published`: columns paper_mean, paper_std,
paper_n, paper_row, diff_vs_paper, z_vs_paper, verdict, setting; Markdown "Paper" and "vs paper").

Diverged runs (``metrics.json`` ``status: "diverged"``: a NaN or infinite loss stopped the run, and it has no
scores, :mod:`gnnbench.training.run`) are never averaged: every mean ± std (scores, epochs, times) is over the
label's completed runs, column ``diverged`` counts the others (``runs`` counts all), and the Markdown test cell reads
"mean ± std (k of n diverged)", or "diverged (n of n)" when no run completed (its other cells "–"). The comparison
with the paper uses the completed runs. Files written before runs had a ``status`` count as completed.

Written as CSV and Parquet (numbers) and Markdown (formatted "mean ± std").
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from gnnbench.errors import DataError
from gnnbench.io import atomic_path, read_json
from gnnbench.reporting.formatting import P1_DECIMALS, mean_std, number
from gnnbench.reporting.status import diverged, diverged_cell

RUN_COLUMNS = ("dataset", "label", "model", "seed", "fold", "metric", "higher_is_better", "split_scheme",
               "test_metric", "val_metric", "train_metric", "test_loss", "num_params", "epochs",
               "seconds_per_epoch", "total_hours", "stop_reason", "status")


def load_runs(metrics_files: list[str | os.PathLike], configs: bool = False) -> pd.DataFrame:
    """One row per run, in the given order; ``configs`` adds the run config (column ``config``)."""
    rows, tasks = [], {}
    for path in metrics_files:
        m = read_json(path, "run metrics file")
        try:
            rows.append({
                "dataset": m["dataset"], "label": m["label"], "model": m["model"], "seed": m["seed"],
                "fold": m["fold"], "metric": m["metric"], "higher_is_better": m["higher_is_better"],
                "split_scheme": _scheme(m["data"]), "test_metric": m["test"]["metric"],
                "val_metric": m["val"]["metric"], "train_metric": m["train"]["metric"],
                "test_loss": m["test"]["loss"], "num_params": m["num_params"], "epochs": m["epochs"],
                "seconds_per_epoch": m["seconds_per_epoch"], "total_hours": m["total_hours"],
                "stop_reason": m["stop_reason"], "status": m.get("status", "completed")})
            per_task = {f"test_{task}": value for task, value in m["test"].get("per_task") or []}
            rows[-1].update(per_task)
            tasks.update(dict.fromkeys(per_task))
            if configs:
                rows[-1]["config"] = m["config"]
        except (KeyError, TypeError, AttributeError) as exc:
            raise DataError(f"run metrics file {path} lacks {exc}; delete it and rerun snakemake for that run") \
                from None
    return pd.DataFrame(rows, columns=[*RUN_COLUMNS, *tasks, *(["config"] if configs else [])])


def _scheme(data: dict) -> str:
    """The split scheme a run was trained on (``split_protocol`` in files written before gnnbench 0.2)."""
    return data["split_scheme"] if "split_scheme" in data else data["split_protocol"]


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
    ``load_runs(..., configs=True)``; ``presets``: label → the suite's preset)."""
    from gnnbench.reporting import published as pub

    out = []
    for _, row in table.iterrows():
        group = runs[runs["label"] == row["model"]]
        config, higher = group["config"].iloc[0], bool(group["higher_is_better"].iloc[0])
        preset = (presets or {}).get(row["model"])
        paper = pub.match_benchmarking_gnns(meta, row["architecture"], config, int(row["params"]), preset)
        setting = "" if paper is None else pub.benchmarking_gnns_setting(meta, config, preset, int(row["runs"]), paper,
                                                                         int(row["params"]))
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
        from gnnbench.reporting.published import markdown_cells, markdown_note

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
    dataset = table["dataset"].iloc[0]
    with atomic_path(csv) as tmp:
        table.to_csv(tmp, index=False)
    with atomic_path(parquet) as tmp:
        table.to_parquet(tmp, index=False)
    with atomic_path(markdown) as tmp:
        Path(tmp).write_text(f"## {dataset}\n\n" + to_markdown(table))
