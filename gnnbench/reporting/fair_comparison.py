"""Reporting of the ``fair-comparison`` protocol (Errica et al., Tables 3 and 4 and Figure 1; the tables are
described in docs/protocols/fair-comparison.md#the-workflow-three-rules-and-the-report-job-every-step-a-file).

Input: one record per (model, outer fold) — the configuration chosen by model selection, its validation accuracy
(VL: accuracy on the inner hold-out at the early-stopping epoch), and the mean test / train accuracy of the final
runs (each at its own early-stopping epoch) — made from the jobs' run records (:func:`folds_from_records`: the
chosen configuration of a fold is the one its final runs trained, its validation accuracy and the candidates come
from the fold's model-selection records). Per dataset:

- ``results/tables/{dataset}.*``: one row per model — test accuracy mean ± std over the outer folds (population
  std, ddof = 0, as the paper's ``numpy.std``), the mean validation accuracy of the selected configurations beside
  it (selection is optimistic: Figure 1 of the paper shows it above the test score), the mean training accuracy,
  the median number of layers selected (Table A.3; none for the structure-agnostic baselines), the grid size,
  final runs stopped by the per-run time limit, and the paper's number for the same dataset, feature variant and
  model family with the difference ours − paper, its z-score, a verdict and the setting (columns of
  :mod:`gnnbench.reporting.published`);
- ``results/tables/{dataset}_folds.*``: one row per model and fold — chosen configuration, its validation accuracy,
  the final runs' test accuracies and their mean.

Diverged runs (a NaN or infinite loss, :mod:`gnnbench.training.best_epoch`) have no score and are never averaged. A
fold's test (train) accuracy is the mean over its final runs that did not diverge — NaN if all did, and such a fold
is left out of the mean ± std over folds. Columns ``final_runs`` / ``diverged_runs`` count the final runs and the
diverged ones, ``diverged_grid_runs`` the model-selection runs that diverged (never selected); in Markdown the test
cell reads "mean ± std (k of n final runs diverged)" — "diverged (n of n final runs)" when none completed — and the
grid cell "size (k diverged)". In the per-fold table a diverged final run's accuracy reads "diverged".

The paper's numbers are data (``gnnbench/reporting/published/errica2020.yaml``), matched by the TU dataset
name and feature variant recorded in the dataset's ``meta.json`` and the model family (the config's ``model``;
MolecularFingerprint and DeepMultisets are the paper's "Baseline") — in :mod:`gnnbench.reporting.published`, with
the other two papers' numbers.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd

from gnnbench.errors import DataError
from gnnbench.records import extras
from gnnbench.reporting import published as pub
from gnnbench.reporting.formatting import P3_DECIMALS, bold_best, mean_std, number
from gnnbench.reporting.pitfalls import _markdown, write_table
from gnnbench.reporting.status import diverged_cell

# keys that are the same for every configuration of a grid (training plumbing): left out of the config summaries
PLUMBING = ("model", "epochs", "patience", "time_limit_hours", "optimizer", "scheduler", "scheduler_step_size",
            "scheduler_gamma", "gradient_clipping", "dense_dim", "dim_embedding_MLP", "dropout_layer0_at_eval",
            "dropout_final")


def folds_from_records(records: pd.DataFrame) -> list[dict]:
    """One entry per (model, outer fold) of fair-comparison run records (:mod:`gnnbench.records`), models and folds
    in order of their first final record: the configuration of the fold's final runs (the selected one), its
    validation accuracy in the fold's model-selection (``inner``) records, the number of candidates and of diverged
    ones there, the configuration's depth (the final record's ``extra`` ``layers``: none in records written before
    it was kept), and the final runs' scores (a diverged run has none; the fold's test and train accuracy are the mean
    over the others). A tuned model's fold (the final records' ``extra.tuning``) takes its candidates, failed ones
    and validation accuracy from its search. A fold whose final configuration is not among its model-selection
    records is a DataError."""
    finals = records[records["stage"] == "final"]
    inner = records[records["stage"] == "inner"]
    if finals.empty:
        raise DataError("no final runs among the run records to tabulate; check the benchmark's models")
    folds = []
    for (label, fold), runs in finals.groupby(["model", "split"], sort=False):
        runs = runs.sort_values("init", kind="stable")
        chosen_id = runs["config_id"].iloc[0]
        candidates = inner[(inner["model"] == label) & (inner["split"] == fold)]
        chosen = candidates[candidates["config_id"] == chosen_id]
        tuning = extras(runs.iloc[:1])[0].get("tuning")
        if tuning is not None:  # a tuned model: its fold's search chose on the inner hold-out (docs/tuning.md)
            counts = (tuning["trials"], tuning["failed"], tuning["val_score"])
        elif chosen.empty:
            raise DataError(f"the final runs of {label} on outer fold {fold} trained configuration {chosen_id}, which "
                            f"is not among the fold's {len(candidates)} model-selection records; rerun snakemake for "
                            "that fold's model selection and final runs")
        else:
            counts = (len(candidates), int(candidates["status"].eq("diverged").sum()),
                      float(chosen["val_score"].iloc[-1]))
        config = json.loads(runs["config"].iloc[0])
        scored = runs[runs["status"].ne("diverged")]  # a diverged final run has no score
        test = runs["test_score"].astype(float)
        folds.append({"model": label, "architecture": runs["architecture"].iloc[0], "fold": int(fold),
                      "config_id": chosen_id, "candidates": counts[0], "diverged_candidates": counts[1],
                      "layers": extras(runs.iloc[:1])[0].get("layers"), "val_accuracy": float(counts[2]),
                      "test_accuracy": float(np.mean(scored["test_score"].to_numpy(float))) if len(scored) else np.nan,
                      "train_accuracy": (float(np.mean(scored["train_score"].to_numpy(float))) if len(scored)
                                         else np.nan),
                      "test_runs": test.tolist(), "diverged_runs": len(runs) - len(scored),
                      "time_limited": int(runs["stop_reason"].eq("time_limit").sum()),
                      "config": config_summary(config), "chosen_config": config})
    return folds


def config_summary(config: dict) -> str:
    """``key=value`` pairs of a configuration, sorted, without the keys every grid point shares (:data:`PLUMBING`)."""
    return ", ".join(f"{k}={config[k]}" for k in sorted(config) if k not in PLUMBING)


def dataset_table(folds: pd.DataFrame, meta, presets: dict[str, str | None] | None = None) -> pd.DataFrame:
    """One row per model; ``presets`` (label → the suite's preset) lets the comparison with the paper check the
    training settings (:func:`gnnbench.reporting.published.fair_comparison_setting`)."""
    rows = []
    for label, group in folds.groupby("model", sort=False):
        architecture = group["architecture"].iloc[0]
        chosen = group["chosen_config"].iloc[0] if "chosen_config" in group else None
        paper = pub.fair_comparison_value(meta, architecture) if pub.same_network(chosen, "errica2020") else None
        layers = [v for v in group["layers"] if v is not None and not pd.isna(v)]
        test = group["test_accuracy"].to_numpy(float)
        test = test[~np.isnan(test)]  # a fold whose every final run diverged has no score
        row = {"model": label, "architecture": architecture, "folds": len(group),
               "test_mean": test.mean() if len(test) else np.nan, "test_std": test.std(ddof=0) if len(test) else np.nan,
               "val_mean": group["val_accuracy"].mean(), "val_std": group["val_accuracy"].std(ddof=0),
               "train_mean": group["train_accuracy"].mean(),
               "median_layers": float(np.median(layers)) if layers else np.nan,
               "grid_size": int(group["candidates"].max()), "time_limited_runs": int(group["time_limited"].sum()),
               "final_runs": int(sum(len(r) for r in group["test_runs"])) if "test_runs" in group else np.nan,
               "diverged_runs": int(group["diverged_runs"].sum()) if "diverged_runs" in group else 0,
               "diverged_grid_runs": (int(group["diverged_candidates"].sum()) if "diverged_candidates" in group
                                      else 0),
               "paper": "" if paper is None else str(paper)}
        if isinstance(paper, list):
            row["paper"] = mean_std(paper[0], paper[1], P3_DECIMALS)
        match = pub.match_fair_comparison(meta, architecture, chosen)
        setting = ""
        if match is not None:
            configs = list(group["chosen_config"]) if "chosen_config" in group else []
            final_runs = min(len(r) for r in group["test_runs"]) if "test_runs" in group else pub.P3_FINAL_RUNS
            setting = pub.fair_comparison_setting(configs, (presets or {}).get(label), len(group), final_runs)
        row.update(pub.compare(row["test_mean"], row["test_std"], len(test), match, True, setting))
        rows.append(row)
    return pd.DataFrame(rows)


def dataset_markdown(dataset: str, table: pd.DataFrame, meta) -> str:
    """The dataset table (:func:`dataset_table`) as Markdown, best test mean in bold, with a note on the paper
    column."""
    key = pub.fair_comparison_key(meta)
    test = [diverged_cell(mean_std(r["test_mean"], r["test_std"], P3_DECIMALS), r.get("diverged_runs", 0),
                          r.get("final_runs", 0), "final runs") for _, r in table.iterrows()]
    test = bold_best(test, table["test_mean"], P3_DECIMALS)
    rows = []
    for cell, (_, r) in zip(test, table.iterrows(), strict=True):
        layers = "–" if pd.isna(r["median_layers"]) else f"{r['median_layers']:g}"
        limited = f" ({r['time_limited_runs']} time-limited)" if r["time_limited_runs"] else ""
        grid = str(r["grid_size"]) + (f" ({r['diverged_grid_runs']} diverged)" if r.get("diverged_grid_runs") else "")
        paper, versus = pub.markdown_cells(r, P3_DECIMALS)
        rows.append([r["model"], cell, mean_std(r["val_mean"], r["val_std"], P3_DECIMALS),
                     number(r["train_mean"], P3_DECIMALS),
                     layers, f"{r['folds']}{limited}", grid, r["paper"] or paper, versus])
    title = f"## {dataset}: test accuracy (%) over outer folds, nested cross-validation (Errica et al.)\n\n"
    note = (f"Paper column: Errica et al. on {key}." if key else
            "Paper column: none (not a dataset of the paper, or not its feature variant).")
    return title + _markdown(
        ["model", "test (mean ± std over folds)", "validation of selected configs", "train", "median layers",
         "folds", "grid", "Paper", "vs paper"], rows) + "\n" + note + (
        " Std is the population std over folds (the paper's). Validation = accuracy on the inner hold-out at the "
        "early-stopping epoch of the selected configuration.\n") + ("\n" + pub.markdown_note(table) if key else "")


def folds_table(folds: pd.DataFrame) -> pd.DataFrame:
    """One row per model and outer fold: chosen configuration, layers, validation, test and train accuracy, the
    time-limit and divergence counts, and every final run's test accuracy as text."""
    out = folds[["model", "architecture", "fold", "config_id", "config", "layers", "val_accuracy", "test_accuracy",
                 "train_accuracy", "time_limited"]].copy()
    for column in ("diverged_runs", "diverged_candidates"):
        out[column] = folds[column] if column in folds else 0
    out["test_runs"] = [", ".join(number(v, P3_DECIMALS, missing="diverged") for v in runs)
                        for runs in folds["test_runs"]]
    return out


def folds_markdown(dataset: str, table: pd.DataFrame) -> str:
    """The per-fold table (:func:`folds_table`) as Markdown."""
    rows = [[r["model"], str(r["fold"]), number(r["val_accuracy"], P3_DECIMALS),
             number(r["test_accuracy"], P3_DECIMALS), r["test_runs"], r["config"]]
            for _, r in table.iterrows()]
    return (f"## {dataset}: per outer fold — selected configuration, its validation accuracy, final-run test "
            "accuracies\n\n" + _markdown(["model", "fold", "validation", "test (mean)", "test per final run",
                                          "selected configuration"], rows))


def write_reports(dataset: str, meta, folds: list[dict], outputs: dict[str, str | os.PathLike],
                  presets: dict[str, str | None] | None = None) -> pd.DataFrame:
    """Write both tables of a dataset (CSV, Markdown, Parquet) to the paths ``outputs`` names (keys ``table_csv``,
    ``table_md``, ``table_parquet``, ``folds_csv``, ``folds_md``, ``folds_parquet``), models in the order of
    ``folds``; returns the dataset table."""
    frame = pd.DataFrame(folds)
    frame["model"] = pd.Categorical(frame["model"], categories=list(dict.fromkeys(f["model"] for f in folds)))
    frame = frame.sort_values(["model", "fold"], kind="stable")
    frame["model"] = frame["model"].astype(str)
    table = dataset_table(frame, meta, presets)
    write_table(table, dataset_markdown(dataset, table, meta), outputs["table_csv"], outputs["table_md"],
                outputs["table_parquet"])
    per_fold = folds_table(frame)
    write_table(per_fold, folds_markdown(dataset, per_fold), outputs["folds_csv"], outputs["folds_md"],
                outputs["folds_parquet"])
    return table
