"""Reporting of the "Pitfalls of GNN Evaluation" protocol (Shchur et al., Tables 1, 2a, 2b and Figure 1;
docs/protocols/pitfalls.md).

Input everywhere is a runs table: one row per run = (dataset, model, split, init) with the columns of
``RUN_COLUMNS``; accuracies are percentages (0-100), ``model`` is the label shown in tables. The workflow makes it
from the jobs' run records (``runs_from_records``). Built from it:

- ``dataset_table`` / ``dataset_markdown``: one dataset, one row per model — mean ± std over all runs (the
  Table 1 cell), median, quartiles, extrema, validation/train accuracy, epochs, seconds per run.
- ``summary_table`` / ``summary_markdown``: all datasets — the Table 1 matrix plus relative accuracy and average
  rank over all (dataset, split) pairs (Table 2a).
- ``split_ranking_table`` / ``split_ranking_markdown``: one fixed split against random splits (Table 2b), with
  the rank of every model in both and Kendall's tau between the two rankings.
- ``box_plot``: Figure 1 / Figure 2 style box plot of all runs per model, PNG and SVG.
- ``write_table``: CSV + Parquet (numbers) and Markdown, each written atomically.

Statistics (Shchur et al., Table 2a): s(m, d, k) = mean test accuracy of model m on split k of dataset d over its
inits; relative accuracy(m) = mean over (d, k) of 100 · s(m, d, k) / max_m' s(m', d, k); average rank(m) = mean
over (d, k) of the rank of s(m, d, k) among the models (1 = best). Standard deviations are sample deviations
(ddof = 1, pandas ``std``), as the released code's aggregation script (shchur/gnn-benchmark
``scripts/aggregate_results.py``) computes them.

Decisions (the paper leaves them open; recorded in docs/protocols/pitfalls.md#reporting-decisions):
- Ties get the average of the tied ranks (pandas ``rank(method="average")``; two models sharing the best score
  on a split both get rank 1.5). Scores are compared after rounding to ``TIE_DECIMALS`` decimals, so two means
  that differ only by floating-point summation noise are a tie.
- A missing cell (a model with no runs on a dataset, e.g. the paper's GS-maxpool on Amazon Computers, "N/A") is
  left out of both statistics of that model, and on each split the maximum and the ranks are taken over the
  models present on that split. Splits are matched by (dataset, split); only the splits a model has count for it.
- A split on which every present model scores 0% gives each of them 100% relative accuracy (all are best).
- Quartiles and medians use linear interpolation (NumPy / pandas default); box-plot whiskers reach the most
  extreme run within 1.5 IQR of the box (matplotlib's rule), outliers beyond them are hidden unless asked for.
- Markdown bolds, per column, every model whose mean equals the column maximum at the printed precision
  (1 decimal), as the paper bolds the best score per dataset. A cell with one run shows no "± std".
- Table rows keep the models' order of first appearance, except the summary, which is sorted by relative
  accuracy (descending; ties by average rank, then first appearance), the order of the paper's Table 2a.

Diverged runs. A runs table may have a ``status`` column (the run records' have; a table without it counts every run
as completed): a run with status ``"diverged"`` had a NaN or infinite loss and has no score (NaN
accuracies and losses, :mod:`gnnbench.training.init_stack`). It is never averaged: every statistic above is over
the completed runs, and the diverged ones are counted and shown — column ``diverged`` (the summary: ``diverged``,
over all datasets), and in Markdown the cell "mean ± std (k of n diverged)", or "diverged (n of n)" when no run of
the model completed. On a split where every initialisation of a model diverged the model has no score s(m, d, k):
like a missing cell, that split is left out of its relative accuracy and rank (its ``splits`` count shows how many
remained). The box plot draws the completed runs; a model with diverged runs is labelled "model (k diverged)", one
with no completed run "model (all k diverged)" and gets no box. These "diverged" runs are distinct from the paper's
"failed" initialisations (e.g. GAT on Amazon): those trained with finite losses to a poor accuracy, count as
completed and are averaged, as in the paper.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gnnbench.errors import DataError
from gnnbench.io import atomic_path
from gnnbench.reporting import published as pub
from gnnbench.reporting.formatting import P2_DECIMALS, bold_best, mean_std
from gnnbench.reporting.published import markdown_cells, markdown_note
from gnnbench.reporting.status import completed, diverged, diverged_cell

RUN_COLUMNS = ("dataset", "model", "split", "init", "test_accuracy", "val_accuracy", "train_accuracy",
               "test_loss", "val_loss", "epochs", "best_epoch", "seconds")
ACCURACY_COLUMNS = ("test_accuracy", "val_accuracy", "train_accuracy")
SCORE_COLUMNS = ("dataset", "model", "split", "init", "test_accuracy")
TIE_DECIMALS = 9
PLOT_DPI = 150


# ------------------------------------------------------------------------------------------------ input checks

def check_runs(runs: pd.DataFrame, columns: Sequence[str] = RUN_COLUMNS, what: str = "runs table") -> None:
    """Raise a one-line DataError if ``runs`` is empty, lacks one of ``columns``, has an accuracy column that is
    not numeric or outside [0, 100] (NaN included, except on a diverged run, which has no score), or holds the same
    (dataset, model, split, init) twice."""
    if not isinstance(runs, pd.DataFrame) or runs.empty:
        raise DataError(f"{what} is empty; expected one row per (dataset, model, split, init) run: check that the "
                        "runs finished and that their run records were collected")
    missing = [c for c in columns if c not in runs.columns]
    if missing:
        raise DataError(f"{what} lacks column(s) {', '.join(missing)}; expected columns {', '.join(columns)}: "
                        "add them when building the runs table")
    failed = diverged(runs)
    for column in ACCURACY_COLUMNS:
        if column not in columns:
            continue
        values = runs[column]
        if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            raise DataError(f"{what} column {column} has dtype {values.dtype}; expected accuracies in percent "
                            "(numbers 0-100): convert the column to float")
        bad = ~values.between(0, 100) & ~(failed & values.isna())  # NaN is outside too, but on a diverged run
        if bad.any():
            first = runs.loc[bad].iloc[0]
            raise DataError(f"{what} column {column} has {int(bad.sum())} value(s) outside [0, 100] (first: "
                            f"{first[column]!r} for model {first['model']}); expected percentages: multiply "
                            "fractions by 100, and give runs without a score (NaN) status 'diverged'")
    key = [c for c in ("dataset", "model", "split", "init") if c in columns]
    if len(key) == 4:
        duplicated = runs.duplicated(key)
        if duplicated.any():
            first = runs.loc[duplicated].iloc[0]
            run = ", ".join(f"{c}={first[c]}" for c in key)
            raise DataError(f"{what} has more than one row for run ({run}); each run must appear once: remove "
                            "the duplicate row or run-record file")


def runs_from_records(records: pd.DataFrame) -> pd.DataFrame:
    """The runs table of pitfalls run records (:mod:`gnnbench.records`, stage ``run``), in their order: the columns
    of :data:`RUN_COLUMNS` under this module's names (``test_accuracy`` = ``test_score``, ..., ``best_epoch`` =
    ``scored_epoch``, the early-stopping epoch), and ``architecture``, ``seed``, ``train_loss``, ``stop_reason``,
    ``status``."""
    records = records[records["stage"] == "run"].reset_index(drop=True)
    if records.empty:
        raise DataError("no runs to aggregate; check the benchmark's models in the config")
    return pd.DataFrame({
        **{c: records[c] for c in ("dataset", "model", "architecture", "split", "init", "seed")},
        **{f"{part}_accuracy": records[f"{part}_score"] for part in ("test", "val", "train")},
        **{f"{part}_loss": records[f"{part}_loss"] for part in ("test", "val", "train")},
        "epochs": records["epochs"], "best_epoch": records["scored_epoch"], "seconds": records["seconds"],
        "stop_reason": records["stop_reason"], "status": records["status"].fillna("completed")})


def _single_dataset(runs: pd.DataFrame, what: str) -> str:
    datasets = pd.unique(runs["dataset"])
    if len(datasets) != 1:
        raise DataError(f"{what} holds runs of {len(datasets)} datasets ({', '.join(map(str, datasets))}); "
                        "expected one: select one dataset's rows first (runs[runs.dataset == NAME])")
    return str(datasets[0])


# ------------------------------------------------------------------------------------------------ formatting

def _mean_std(mean: float, std: float, decimals: int = P2_DECIMALS) -> str:
    """The tables' rule (:mod:`gnnbench.reporting.formatting`); no mean: the paper's "N/A" (a model not run)."""
    return mean_std(mean, std, decimals, missing="N/A")


def _bold_best(cells: Iterable[str], means: Iterable[float], decimals: int = P2_DECIMALS) -> list[str]:
    return bold_best(cells, means, decimals)


def _markdown(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------ one dataset

def dataset_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One dataset's table: one row per model (order of first appearance).

    Columns: dataset, model, runs, splits, inits (distinct split / init ids), diverged (runs with status
    "diverged"), test_mean, test_std (sample std, ddof = 1), test_median, test_q1, test_q3 (linear interpolation),
    test_min, test_max, val_mean, val_std, train_mean, epochs_mean, best_epoch_mean, val_loss_mean, test_loss_mean,
    seconds_per_run (mean of ``seconds``). The statistics are over the completed runs of the model (splits ×
    inits), as Table 1; runs, splits, inits and diverged count every run (NaN statistics: every run diverged).
    """
    check_runs(runs)
    dataset = _single_dataset(runs, "runs table for dataset_table")
    models = pd.unique(runs["model"])
    every = runs.groupby("model", sort=False)
    groups = completed(runs).groupby("model", sort=False)
    test = groups["test_accuracy"]
    quartiles = test.quantile([0.25, 0.75]).unstack().reindex(columns=[0.25, 0.75])  # (no completed run: empty)
    table = pd.DataFrame({
        "runs": every.size(), "splits": every["split"].nunique(), "inits": every["init"].nunique(),
        "diverged": diverged(runs).groupby(runs["model"], sort=False).sum(),
        "test_mean": test.mean(), "test_std": test.std(ddof=1), "test_median": test.median(),
        "test_q1": quartiles[0.25], "test_q3": quartiles[0.75], "test_min": test.min(), "test_max": test.max(),
        "val_mean": groups["val_accuracy"].mean(), "val_std": groups["val_accuracy"].std(ddof=1),
        "train_mean": groups["train_accuracy"].mean(), "epochs_mean": groups["epochs"].mean(),
        "best_epoch_mean": groups["best_epoch"].mean(), "val_loss_mean": groups["val_loss"].mean(),
        "test_loss_mean": groups["test_loss"].mean(), "seconds_per_run": groups["seconds"].mean(),
    }).reindex(models)
    table["diverged"] = table["diverged"].astype(int)
    table.insert(0, "dataset", dataset)
    return table.rename_axis("model").reset_index()[["dataset", "model", *table.columns.drop("dataset")]]


def dataset_markdown(table: pd.DataFrame) -> str:
    """Markdown table for ``dataset_table`` with "mean ± std" cells (1 decimal); no heading (the caller adds one,
    as for ``aggregate.to_markdown``). A table with the paper's numbers (``with_paper``) gets "Paper" and
    "vs paper" columns and their note."""
    tests = _bold_best([diverged_cell(_mean_std(r.test_mean, r.test_std), r.get("diverged", 0), r.runs)
                        for _, r in table.iterrows()], table["test_mean"])
    paper = "paper_mean" in table
    rows = []
    for (_, r), test in zip(table.iterrows(), tests, strict=True):
        row = [str(r.model), str(r.runs), f"{r.splits} × {r.inits}", test]
        if paper:
            row += list(markdown_cells(r, 1))
        if pd.isna(r.test_mean):  # every run diverged: nothing to describe
            rows.append(row + ["–"] * 7)
            continue
        rows.append(row + [f"{r.test_median:.1f} [{r.test_q1:.1f}, {r.test_q3:.1f}]",
                           f"{r.test_min:.1f} / {r.test_max:.1f}", _mean_std(r.val_mean, r.val_std),
                           f"{r.train_mean:.1f}", f"{r.epochs_mean:.1f}", f"{r.best_epoch_mean:.1f}",
                           f"{r.seconds_per_run:.2f}"])
    headers = ["Model", "Runs", "Splits × inits", "Test accuracy (%)", *(["Paper", "vs paper"] if paper else []),
               "Median [Q1, Q3]", "Min / max", "Val accuracy (%)", "Train accuracy (%)", "Epochs", "Best epoch",
               "s / run"]
    text = _markdown(headers, rows)
    if paper and table["paper_mean"].notna().any():
        text += "\n" + markdown_note(table)
    return text


def with_paper(table: pd.DataFrame, meta, split: dict, configs: dict[str, dict],
               presets: dict[str, str | None] | None = None, training_defaults: dict | None = None) -> pd.DataFrame:
    """``dataset_table`` with the comparison columns of :mod:`gnnbench.reporting.published`: the paper's Table 1
    (or 2b) number of the model's family on this dataset. ``split``: the dataset's split config (the suite's);
    ``configs``: label → run config (the records'); ``presets``: label → the suite's preset;
    ``training_defaults``: the protocol's training procedure (:func:`gnnbench.reporting.published.pitfalls_setting`)."""
    out = []
    for _, row in table.iterrows():
        config = configs[row["model"]]
        paper = pub.match_pitfalls(meta, split.get("scheme", ""), config)
        preset = (presets or {}).get(row["model"])
        setting = "" if paper is None else pub.pitfalls_setting(meta, split, config, preset, int(row["runs"]), paper,
                                                                training_defaults)
        scored = int(row["runs"]) - int(row.get("diverged", 0))  # the mean is over the completed runs
        out.append(pub.compare(row["test_mean"], row["test_std"], scored, paper, True, setting))
    return pd.concat([table.reset_index(drop=True), pd.DataFrame(out, columns=pub.COLUMNS)], axis=1)


# ------------------------------------------------------------------------------------------------ all datasets

def split_scores(runs: pd.DataFrame) -> pd.DataFrame:
    """s(m, d, k): mean test accuracy over the completed inits; index (dataset, split), one column per model (order
    of first appearance), NaN where a model has no completed run on that split."""
    check_runs(runs, SCORE_COLUMNS)
    scores = (completed(runs).groupby(["dataset", "split", "model"], sort=False)["test_accuracy"].mean()
              .unstack("model"))
    return scores.reindex(columns=pd.unique(runs["model"]))


def summary_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Table 1 matrix and Table 2a over all datasets in ``runs``; one row per model.

    Columns: model, relative_accuracy (%), average_rank, splits (number of (dataset, split) pairs counted for the
    model), diverged (its diverged runs over all datasets), then per dataset D (order of first appearance) the cell
    ``D`` ("mean ± std" over the completed runs, 1 decimal, "N/A" without runs, with "(k of n diverged)" or
    "diverged (n of n)" as in the module docstring) and the numbers ``D_mean``, ``D_std`` (ddof = 1).

        relative_accuracy(m) = mean_{(d,k) ∈ S(m)} 100 · s(m,d,k) / max_{m' ∈ M(d,k)} s(m',d,k)
        average_rank(m)      = mean_{(d,k) ∈ S(m)} rank of s(m,d,k) among M(d,k), descending, 1 = best

    where S(m) = the (dataset, split) pairs on which m has completed runs and M(d,k) = the models with completed
    runs on (d, k).
    Ties share the average rank; see the module docstring for these decisions. Rows are sorted by relative
    accuracy, descending (ties: average rank ascending, then first appearance).
    """
    scores = split_scores(runs)
    values = scores.to_numpy(dtype=float)
    best = np.nanmax(values, axis=1, keepdims=True)  # every (d, k) row has at least one model
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(best > 0, values / best, 1.0) * 100.0  # all at 0%: all are best
    relative[np.isnan(values)] = np.nan
    ranks = scores.round(TIE_DECIMALS).rank(axis=1, ascending=False, method="average")
    with warnings.catch_warnings():  # a model whose every run diverged has no split: NaN, not a warning
        warnings.simplefilter("ignore", RuntimeWarning)
        relative_accuracy = np.nanmean(relative, axis=0)
    failed = diverged(runs)
    table = pd.DataFrame({"model": scores.columns, "relative_accuracy": relative_accuracy,
                          "average_rank": ranks.mean(axis=0).to_numpy(),
                          "splits": scores.notna().sum(axis=0).to_numpy(),
                          "diverged": failed.groupby(runs["model"]).sum().reindex(scores.columns).to_numpy()})
    cells = completed(runs).groupby(["model", "dataset"], sort=False)["test_accuracy"].agg(["mean", "std"])
    counts = pd.DataFrame({"runs": 1, "diverged": failed}).groupby([runs["model"], runs["dataset"]]).sum()
    datasets = pd.unique(runs["dataset"])
    means = cells["mean"].unstack("dataset").reindex(index=scores.columns, columns=datasets)
    stds = cells["std"].unstack("dataset").reindex(index=scores.columns, columns=datasets)
    for dataset in datasets:
        mean, std = means[dataset].to_numpy(), stds[dataset].to_numpy()
        count = [counts.loc[(m, dataset)] if (m, dataset) in counts.index else {"runs": 0, "diverged": 0}
                 for m in scores.columns]
        table[str(dataset)] = [diverged_cell(_mean_std(m, s), int(c["diverged"]), int(c["runs"]))
                               for m, s, c in zip(mean, std, count, strict=True)]
        table[f"{dataset}_mean"] = mean
        table[f"{dataset}_std"] = std
    order = np.lexsort((np.arange(len(table)), table["average_rank"], -table["relative_accuracy"]))
    return table.iloc[order].reset_index(drop=True)


def summary_markdown(table: pd.DataFrame, title: str = "Test accuracy (%) and average over all datasets and splits"
                     ) -> str:
    """Markdown for ``summary_table``: one column per dataset (best bold), relative accuracy, average rank."""
    datasets = [c for c in table.columns if f"{c}_mean" in table.columns and f"{c}_std" in table.columns]
    columns = [_bold_best(table[d], table[f"{d}_mean"]) for d in datasets]
    rows = [[str(r.model), *(column[i] for column in columns),  # "–": no completed run, nothing to rank
             *("–" if pd.isna(v) else f"{v:.1f}" for v in (r.relative_accuracy, r.average_rank))]
            for i, r in enumerate(table.itertuples())]
    headers = ["Model", *datasets, "Relative accuracy (%)", "Average rank"]
    return f"## {title}\n\n" + _markdown(headers, rows)


# ------------------------------------------------------------------------------------------------ fixed split

def split_ranking_table(pairs: Sequence[tuple[str, pd.DataFrame, str, pd.DataFrame]]) -> pd.DataFrame:
    """Rank models on one fixed split and on random splits (Shchur et al., Table 2b).

    ``pairs``: (fixed_label, fixed_runs, random_label, random_runs); ``fixed_runs`` must hold one split of one
    dataset (its inits), ``random_runs`` any number of splits of one dataset. Per pair and per model present in
    both (order of first appearance in ``fixed_runs``): fixed_runs, fixed_mean, fixed_std (over inits, ddof = 1),
    fixed_rank (by mean among the common models, 1 = best, ties averaged), random_runs, random_splits,
    random_mean, random_std (over all runs), random_rank, rank_difference = random_rank − fixed_rank (positive:
    the model ranks worse on random splits), and kendall_tau / kendall_p: Kendall's tau-b between the two
    rankings (scipy.stats.kendalltau; tau-b accounts for ties), the same on every row of the pair. Means, stds and
    ranks are over the completed runs; fixed_runs / random_runs count every run and fixed_diverged /
    random_diverged the diverged ones; a model without a completed run on either side is not ranked.
    """
    from scipy.stats import kendalltau

    parts = []
    for fixed_label, fixed, random_label, random in pairs:
        check_runs(fixed, SCORE_COLUMNS, f"fixed-split runs '{fixed_label}'")
        check_runs(random, SCORE_COLUMNS, f"random-split runs '{random_label}'")
        _single_dataset(fixed, f"fixed-split runs '{fixed_label}'")
        _single_dataset(random, f"random-split runs '{random_label}'")
        if fixed["split"].nunique() != 1:
            raise DataError(f"fixed-split runs '{fixed_label}' span {fixed['split'].nunique()} splits; expected the "
                            "inits of one fixed split: pass the random splits as the pair's random runs")
        f = completed(fixed).groupby("model", sort=False)["test_accuracy"].agg(["mean", "std"])
        r = completed(random).groupby("model", sort=False)["test_accuracy"].agg(["mean", "std"])
        for side, frame in ((f, fixed), (r, random)):
            side["size"] = frame.groupby("model", sort=False).size()
            side["diverged"] = diverged(frame).groupby(frame["model"], sort=False).sum()
        models = [m for m in f.index if m in r.index]
        if len(models) < 2:
            raise DataError(f"fixed-split runs '{fixed_label}' and random-split runs '{random_label}' have "
                            f"{len(models)} model(s) in common; expected at least 2 to rank: use the same model labels")
        f, r = f.loc[models], r.loc[models]
        f_scores, r_scores = f["mean"].round(TIE_DECIMALS), r["mean"].round(TIE_DECIMALS)
        f_rank = f_scores.rank(ascending=False, method="average")
        r_rank = r_scores.rank(ascending=False, method="average")
        tau = kendalltau(f_scores.to_numpy(), r_scores.to_numpy())
        splits = random.groupby("model", sort=False)["split"].nunique().loc[models]
        parts.append(pd.DataFrame({
            "fixed_label": fixed_label, "random_label": random_label, "model": models,
            "fixed_runs": f["size"].to_numpy(), "fixed_mean": f["mean"].to_numpy(), "fixed_std": f["std"].to_numpy(),
            "fixed_rank": f_rank.to_numpy(), "fixed_diverged": f["diverged"].to_numpy(),
            "random_runs": r["size"].to_numpy(), "random_splits": splits.to_numpy(),
            "random_diverged": r["diverged"].to_numpy(),
            "random_mean": r["mean"].to_numpy(), "random_std": r["std"].to_numpy(),
            "random_rank": r_rank.to_numpy(), "rank_difference": (r_rank - f_rank).to_numpy(),
            "kendall_tau": float(tau.statistic), "kendall_p": float(tau.pvalue)}))
    if not parts:
        raise DataError("split_ranking_table got no (fixed_label, fixed_runs, random_label, random_runs) pairs; "
                        "pass at least one")
    return pd.concat(parts, ignore_index=True)


def split_ranking_markdown(table: pd.DataFrame, title: str = "Single fixed split vs random splits") -> str:
    """Markdown for ``split_ranking_table``: one table per pair (best bold) and its Kendall's tau."""
    sections = [f"## {title}\n"]
    for (fixed_label, random_label), part in table.groupby(["fixed_label", "random_label"], sort=False):
        fixed, random = (
            _bold_best([diverged_cell(_mean_std(r[f"{side}_mean"], r[f"{side}_std"]), r.get(f"{side}_diverged", 0),
                                      r[f"{side}_runs"]) for _, r in part.iterrows()], part[f"{side}_mean"])
            for side in ("fixed", "random"))
        rows = [[str(r.model), fc, f"{r.fixed_rank:g}", rc, f"{r.random_rank:g}", f"{r.rank_difference:+g}"]
                for r, fc, rc in zip(part.itertuples(), fixed, random, strict=True)]
        tau, p = part["kendall_tau"].iloc[0], part["kendall_p"].iloc[0]
        tau_text = "n/a (a ranking is constant)" if np.isnan(tau) else f"{tau:.3f} (p = {p:.3g})"
        sections.append(f"### {fixed_label} vs {random_label}\n\n"
                        + _markdown(["Model", f"{fixed_label} (%)", "Rank", f"{random_label} (%)", "Rank",
                                     "Rank change"], rows)
                        + f"\nKendall's τ between the two rankings ({len(part)} models): {tau_text}\n")
    return "\n".join(sections)


# ------------------------------------------------------------------------------------------------ box plot

def box_statistics(runs: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per model with a completed run (order of first appearance): runs, median, q1, q3 (linear interpolation),
    whisker_low / whisker_high (the most extreme runs within [q1 − 1.5·IQR, q3 + 1.5·IQR]), outliers (runs beyond)
    and diverged (runs without a score, not drawn)."""
    check_runs(runs, ("model", "test_accuracy"), "box plot runs table")
    failed = diverged(runs).groupby(runs["model"], sort=False).sum()
    stats = {}
    for model, values in completed(runs).groupby("model", sort=False)["test_accuracy"]:  # one iteration per model
        x = values.to_numpy(dtype=float)
        q1, median, q3 = np.percentile(x, [25, 50, 75])
        low, high = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
        inside = x[(x >= low) & (x <= high)]
        stats[str(model)] = {"runs": len(x), "median": float(median), "q1": float(q1), "q3": float(q3),
                             "whisker_low": float(min(inside.min(), q1)), "whisker_high": float(max(inside.max(), q3)),
                             "outliers": int(len(x) - len(inside)), "diverged": int(failed[model])}
    return stats


def box_plot(runs: pd.DataFrame, title: str, png_path: str | os.PathLike, svg_path: str | os.PathLike,
             show_outliers: bool = False) -> dict[str, dict[str, float]]:
    """Figure 1 (``show_outliers=False``) / Figure 2 style box plot: one box per model of the test accuracy of all
    its runs (box = quartiles, line = median, whiskers at 1.5 IQR). Written as PNG and SVG, atomically, with the
    Agg canvas (pyplot is never imported). In the SVG, model i's box, median, whiskers and outliers are the groups
    with ids ``box_i``, ``median_i``, ``whisker_low_i``, ``whisker_high_i`` and ``outliers_i``. Returns the
    statistics drawn (``box_statistics``)."""
    stats = box_statistics(runs)
    if "dataset" in runs.columns:
        _single_dataset(runs, f"box plot '{title}' runs table")
    # Imported here: matplotlib is only needed for figures, never on the training path.
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    try:
        unresolved = matplotlib.get_backend(auto_select=False) is None
    except TypeError:  # matplotlib < 3.10 has no auto_select
        unresolved = "matplotlib.pyplot" not in sys.modules
    if unresolved:
        # Axes.bxp reads every rcParam; reading an unresolved "backend" imports pyplot to pick one. Naming Agg
        # first keeps pyplot out (a backend the user already chose is left alone; we draw on Agg regardless).
        matplotlib.use("agg")

    fliers = {}
    if show_outliers:
        for model, values in completed(runs).groupby("model", sort=False)["test_accuracy"]:
            s, x = stats[str(model)], values.to_numpy(dtype=float)
            fliers[str(model)] = x[(x < s["whisker_low"]) | (x > s["whisker_high"])]
    order = [str(m) for m in pd.unique(runs["model"])]  # every model gets a tick; one without a completed run no box
    failed = diverged(runs).groupby(runs["model"].astype(str), sort=False).sum()
    boxes = [{"label": model, "med": s["median"], "q1": s["q1"], "q3": s["q3"], "whislo": s["whisker_low"],
              "whishi": s["whisker_high"], "fliers": fliers.get(model, np.empty(0))} for model, s in stats.items()]
    figure = Figure(figsize=(max(4.0, 1.5 + 0.7 * len(order)), 4.0), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    drawn = {"boxes": [], "medians": []}
    if boxes:
        drawn = axes.bxp(boxes, positions=[order.index(m) + 1 for m in stats], showfliers=show_outliers,
                         patch_artist=True, boxprops={"facecolor": "#c6dbef", "edgecolor": "#08306b"},
                         medianprops={"color": "#cb181d", "linewidth": 1.5},
                         flierprops={"marker": ".", "markersize": 3, "alpha": 0.5})
    labels = [m if not failed[m] else f"{m} ({failed[m]} diverged)" if m in stats else f"{m} (all {failed[m]} diverged)"
              for m in order]
    axes.set_xticks(range(1, len(order) + 1), labels)
    axes.set_xlim(0.5, len(order) + 0.5)
    for i, (box, median) in enumerate(zip(drawn["boxes"], drawn["medians"], strict=True)):
        box.set_gid(f"box_{i}")
        median.set_gid(f"median_{i}")
        drawn["whiskers"][2 * i].set_gid(f"whisker_low_{i}")
        drawn["whiskers"][2 * i + 1].set_gid(f"whisker_high_{i}")
        if show_outliers:
            drawn["fliers"][i].set_gid(f"outliers_{i}")
    axes.set_title(title)
    axes.set_ylabel("Test accuracy (%)")
    axes.yaxis.grid(True, alpha=0.3)
    axes.tick_params(axis="x", labelrotation=30)
    for label in axes.get_xticklabels():
        label.set_horizontalalignment("right")
    # Fixed salt and no date: the same runs give byte-identical SVG files.
    with matplotlib.rc_context({"svg.hashsalt": "gnnbench"}):
        with atomic_path(png_path) as tmp:
            figure.savefig(tmp, format="png", dpi=PLOT_DPI)
        with atomic_path(svg_path) as tmp:
            figure.savefig(tmp, format="svg", metadata={"Date": None})
    return stats


# ------------------------------------------------------------------------------------------------ output

def write_table(table: pd.DataFrame, markdown_text: str, csv_path: str | os.PathLike, md_path: str | os.PathLike,
                parquet_path: str | os.PathLike) -> None:
    """Write ``table`` as CSV and Parquet and ``markdown_text`` as Markdown, each file atomically."""
    with atomic_path(csv_path) as tmp:
        table.to_csv(tmp, index=False)
    with atomic_path(parquet_path) as tmp:
        table.to_parquet(tmp, index=False)
    with atomic_path(md_path) as tmp:
        Path(tmp).write_text(markdown_text)
