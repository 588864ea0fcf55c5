"""What equal tuning gave each model: tuning curves, the trial table, and published versus tuned scores.

Reads the one run record (:mod:`gnnbench.records`): a tuning trial is a record of stage ``trial`` whose ``model`` is
the suite's label, ``val_score`` its selection score (null when pruned before its end or diverged), ``seconds`` its
training time, ``split`` the outer fold it tunes for (fair-comparison; else 0) and ``extra`` holds ``search`` (the
search's key), ``round``, ``trial`` (0-based order in the search), ``params`` (the sampled values) and
``pruned_epoch`` (null: not pruned). The tuned model's scored runs are the protocol's ordinary runs under the label
``<label>-tuned`` (:data:`TUNED_SUFFIX`), beside the published configuration's runs under ``<label>``.

A *search* is one (dataset, model, search key, split): its trials in ``trial`` order.

- :func:`curves`: the best validation score so far after each trial (the metric's direction; pruned and diverged
  trials leave it as it was);
- :func:`searches`: per search the trials, how many completed, were pruned or diverged, the seconds they took, the
  best trial and whether the search looks converged — a search whose best trial is in its last 20 % of trials
  (1-based position p > 0.8 T of T trials) is flagged "not converged": more trials might still have found better;
- :func:`tuning_curves` (figure), :func:`trial_report` (table): per benchmark;
- :func:`published_vs_tuned`, :func:`published_vs_tuned_report`: per model the published and the tuned row (mean ±
  std of the test scores over the protocol's paired units), Δ, the budget it received — trials completed and pruned,
  the seconds spent (the trials' plus the tuned runs'), split into those on CPU and on GPU by the records' ``device``
  — and the paired tests
  (:func:`gnnbench.reporting.significance.paired_tests`) of tuned versus published and among the tuned models.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pandas as pd

from gnnbench.errors import DataError
from gnnbench.records import extras
from gnnbench.reporting import significance
from gnnbench.reporting.pitfalls import write_table
from gnnbench.reporting.plots import _colours, _figure, metric_label, save_figure

TRIAL_STAGE = "trial"
TUNED_SUFFIX = "-tuned"
LATE_FRACTION = 0.2  # a best trial in this last fraction of a search: "not converged"
SEARCH_KEYS = ["dataset", "model", "search", "split"]
TRIAL_COLUMNS = ("dataset", "model", "search", "split", "trial", "round", "params", "val_score", "pruned_epoch",
                 "status", "seconds")


def trials(runs: pd.DataFrame) -> pd.DataFrame:
    """The trial records of ``runs`` with their ``extra`` unpacked, one row per trial (:data:`TRIAL_COLUMNS` and
    ``higher_is_better``), ordered by search and trial; ``params`` as JSON with sorted keys."""
    records = runs[runs["stage"] == TRIAL_STAGE].reset_index(drop=True)
    extra = extras(records)
    table = pd.DataFrame({
        "dataset": records["dataset"], "model": records["model"],
        "search": [str(e.get("search", "")) for e in extra], "split": records["split"].astype("Int64"),
        "trial": pd.array([e.get("trial") for e in extra], dtype="Int64"),
        "round": pd.array([e.get("round") for e in extra], dtype="Int64"),
        "params": [json.dumps(e.get("params", {}), sort_keys=True) for e in extra],
        "val_score": records["val_score"].astype(float),
        "pruned_epoch": pd.array([e.get("pruned_epoch") for e in extra], dtype="Int64"),
        "status": records["status"], "seconds": records["seconds"].astype(float),
        "higher_is_better": records["higher_is_better"].astype(bool)})
    return table.sort_values([*SEARCH_KEYS, "trial"], kind="stable").reset_index(drop=True)


def curves(runs: pd.DataFrame) -> pd.DataFrame:
    """:func:`trials` with ``best_so_far``: the best validation score of the search's trials up to this one (NaN
    until one has a score)."""
    table = trials(runs)
    oriented = table["val_score"].where(table["higher_is_better"], -table["val_score"])
    keys = [table[k] for k in SEARCH_KEYS]
    best = oriented.groupby(keys, sort=False).cummax().groupby(keys, sort=False).ffill()  # a NaN trial keeps it
    table["best_so_far"] = best.where(table["higher_is_better"], -best)
    return table


def searches(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per search: ``trials`` (T), ``completed``, ``pruned``, ``diverged``, ``seconds`` (sum), the
    ``best_trial`` (the first trial with the best validation score; NaN without any) and its ``best_val``, and
    ``converged``: False when the best trial's 1-based position exceeds 0.8 T (module docstring)."""
    rows = []
    for key, group in trials(runs).groupby(SEARCH_KEYS, sort=False):
        scored = group.dropna(subset=["val_score"])
        pruned = group["pruned_epoch"].notna()
        best = None
        if len(scored):
            best = scored.loc[scored["val_score"].idxmax() if group["higher_is_better"].iloc[0]
                              else scored["val_score"].idxmin()]
        position = None if best is None else int((group["trial"] <= best["trial"]).sum())  # 1-based
        rows.append({**dict(zip(SEARCH_KEYS, key, strict=True)), "trials": len(group),
                     "completed": int((~pruned & group["status"].ne("diverged")).sum()), "pruned": int(pruned.sum()),
                     "diverged": int((~pruned & group["status"].eq("diverged")).sum()),
                     "seconds": float(group["seconds"].sum()),
                     "best_trial": math.nan if best is None else int(best["trial"]),
                     "best_val": math.nan if best is None else float(best["val_score"]),
                     "converged": None if best is None else bool(position <= (1 - LATE_FRACTION) * len(group))})
    return pd.DataFrame(rows, columns=[*SEARCH_KEYS, "trials", "completed", "pruned", "diverged", "seconds",
                                       "best_trial", "best_val", "converged"])


def _search_label(row, several_splits: bool, several_searches: bool) -> str:
    label = row["model"]
    if several_searches:
        label += f" [{row['search']}]"
    if several_splits:
        label += f" (fold {row['split']})"
    if row["converged"] is False:
        label += " — not converged"
    return label


def tuning_curves_figure(runs: pd.DataFrame, title: str):
    """The tuning curves of ``runs``' trials (:func:`curves`): best validation score so far against the trial
    number (1-based), one line per search, labelled with its model (and its search key and fold where a model has
    several), " — not converged" where :func:`searches` says so."""
    table, summary = curves(runs), searches(runs)
    if table.empty:
        raise DataError("no tuning trials (stage 'trial') among the run records; check the benchmark's tuning")
    figure = _figure(6.5, 4.0)
    axes = figure.add_subplot()
    models = list(dict.fromkeys(summary["model"]))
    colours = dict(zip(models, _colours(len(models)), strict=True))
    styles = ("-", "--", ":", "-.")
    for model, of_model in summary.groupby("model", sort=False):
        several_splits, several_searches = of_model["split"].nunique() > 1, of_model["search"].nunique() > 1
        for i, (_, row) in enumerate(of_model.iterrows()):
            mask = np.logical_and.reduce([table[k] == row[k] for k in SEARCH_KEYS])
            line = table[mask]
            axes.plot(line["trial"].astype(int) + 1, line["best_so_far"], color=colours[model],
                      linestyle=styles[i % len(styles)], marker="o", markersize=2.5,
                      label=_search_label(row, several_splits, several_searches))
    axes.set_xlabel("trial")
    axes.xaxis.get_major_locator().set_params(integer=True)  # trials are counted, never halved
    metric = runs.loc[runs["stage"] == TRIAL_STAGE, "metric"].dropna()
    axes.set_ylabel(f"best validation {metric_label(metric.iloc[0]) if len(metric) else 'score'} so far")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=7)
    return figure


def tuning_curves(runs: pd.DataFrame, title: str, png: str | os.PathLike, svg: str | os.PathLike) -> None:
    """Write :func:`tuning_curves_figure` of the run records ``runs`` (one benchmark's) as PNG and SVG."""
    save_figure(tuning_curves_figure(runs, title), png, svg)


def trial_markdown(title: str, table: pd.DataFrame, summary: pd.DataFrame) -> str:
    """The trials (:func:`trials`) and their searches (:func:`searches`) as Markdown."""
    lines = [f"## {title}: tuning trials\n", "| model | search | fold | trials | completed | pruned | diverged | "
             "seconds | best trial | best val | converged |", "|" + "---|" * 11]
    for _, s in summary.iterrows():
        converged = {True: "yes", False: "**not converged**", None: "no completed trial"}[s["converged"]]
        best = "–" if pd.isna(s["best_trial"]) else str(int(s["best_trial"]))
        lines.append(f"| {s['model']} | {s['search']} | {s['split']} | {s['trials']} | {s['completed']} | "
                     f"{s['pruned']} | {s['diverged']} | {s['seconds']:.1f} | {best} | "
                     f"{'–' if pd.isna(s['best_val']) else format(s['best_val'], '.4g')} | {converged} |")
    lines += ["", "| model | search | fold | trial | round | params | val score | pruned at epoch | seconds |",
              "|" + "---|" * 9]
    for _, r in table.iterrows():
        lines.append(f"| {r['model']} | {r['search']} | {r['split']} | {r['trial']} | {r['round']} | "
                     f"`{r['params']}` | {'–' if pd.isna(r['val_score']) else format(r['val_score'], '.4g')} | "
                     f"{'–' if pd.isna(r['pruned_epoch']) else r['pruned_epoch']} | {r['seconds']:.1f} |")
    lines += ["", "A search is one model's trials on one fold (fold: the outer fold it tunes for; 0 where the "
              "protocol has one split). Val score: the trial's selection score on the validation set (– pruned or "
              "diverged); no trial is scored on the test set. Not converged: the best trial is in the last "
              f"{LATE_FRACTION:.0%} of the search's trials, so more trials might have found better.", ""]
    return "\n".join(lines)


def trial_report(runs: pd.DataFrame, title: str, csv: str | os.PathLike, md: str | os.PathLike,
                 parquet: str | os.PathLike) -> None:
    """Write the trial table of the run records ``runs`` (one benchmark's): CSV and Parquet one row per trial
    (:data:`TRIAL_COLUMNS` and ``converged``, its search's flag), Markdown with the searches above the trials."""
    table, summary = trials(runs), searches(runs)
    flags = summary.set_index(SEARCH_KEYS)["converged"]
    table["converged"] = [flags.get(tuple(r[k] for k in SEARCH_KEYS)) for _, r in table.iterrows()]
    write_table(table[[*TRIAL_COLUMNS, "converged"]], trial_markdown(title, table, summary), csv, md, parquet)


# ------------------------------------------------------------------------------------------- published vs tuned

VERSUS_COLUMNS = ("model", "published_mean", "published_std", "published_units", "tuned_mean", "tuned_std",
                  "tuned_units", "delta", "searches", "not_converged", "trials", "completed", "pruned",
                  "trial_seconds", "tuned_run_seconds", "cpu_seconds", "gpu_seconds", "pairs", "p_holm",
                  "verdict_test", "mde", "margin", "tost_p", "verdict")


def published_vs_tuned(runs: pd.DataFrame, unit_columns: tuple[str, ...] = ("split",), stage: str = "run", *,
                       margin: float | None = None, alpha: float = significance.ALPHA
                       ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(the table of :data:`VERSUS_COLUMNS`, the paired tests of each tuned model against its published
    configuration, the paired tests among the tuned models) of one benchmark's run records ``runs``.

    A model is a label ``<m>`` whose runs of ``stage`` have a twin ``<m>-tuned``. Scores are the paired units' (the
    protocol's ``unit_columns`` and ``stage``, :func:`gnnbench.reporting.significance.unit_scores`): mean and sample
    std over them; Δ = tuned − published mean (the metric's units; its sign by ``higher_is_better``). The budget: the
    trials of the model's searches (label ``<m>`` or ``<m>-tuned``), their seconds (``trial_seconds``), the seconds
    of every record of ``<m>-tuned`` that is no trial (``tuned_run_seconds``), and the same seconds split by where
    they ran: ``gpu_seconds`` those of records whose ``device`` is CUDA, ``cpu_seconds`` the rest. The
    tuned-vs-published tests are Holm-adjusted over the models, those among the tuned models over their pairs
    (``margin``: the equivalence margin, None the metric's default)."""
    scored = runs[runs["stage"] == stage]
    labels = list(dict.fromkeys(scored["model"]))
    tuned = [m for m in labels if m.endswith(TUNED_SUFFIX)]
    models = [m.removesuffix(TUNED_SUFFIX) for m in tuned]
    if not tuned:
        raise DataError(f"no tuned runs (model labels ending in {TUNED_SUFFIX!r}) among the {stage!r} run records "
                        "to compare with the published configurations; check the benchmark's tuning")
    scores, metric, higher = significance.unit_scores(scored[scored["model"].isin(tuned + models)]
                                                      .reset_index(drop=True), unit_columns, stage)
    present = set(scores["model"])
    versus = significance.paired_tests(scores, higher, alpha, metric=metric, margin=margin,
                                       pairs=[(f"{m}{TUNED_SUFFIX}", m) for m in models if m in present])
    among = significance.paired_tests(scores[scores["model"].isin(tuned)], higher, alpha, metric=metric,
                                      margin=margin)
    summary = searches(runs)
    summary["base"] = summary["model"].str.removesuffix(TUNED_SUFFIX)
    tests = versus.set_index("model_b")
    rows = []
    for model in models:
        own = summary[summary["base"] == model]
        published = scores.loc[scores["model"] == model, "score"].dropna()
        tuned_scores = scores.loc[scores["model"] == f"{model}{TUNED_SUFFIX}", "score"].dropna()
        trial_seconds = float(own["seconds"].sum())
        labels = runs["model"].isin([model, f"{model}{TUNED_SUFFIX}"])
        trial_records = runs[labels & (runs["stage"] == TRIAL_STAGE)]
        others = runs[(runs["model"] == f"{model}{TUNED_SUFFIX}") & (runs["stage"] != TRIAL_STAGE)]
        run_seconds = float(others["seconds"].astype(float).sum())
        spent = pd.concat([trial_records, others])
        on_gpu = spent["device"].fillna("").astype(str).str.startswith("cuda")
        gpu_seconds = float(spent.loc[on_gpu, "seconds"].astype(float).sum())
        row = {"model": model, **_mean_std("published", published), **_mean_std("tuned", tuned_scores),
               "searches": len(own), "not_converged": int((own["converged"] == False).sum()),  # noqa: E712
               "trials": int(own["trials"].sum()), "completed": int(own["completed"].sum()),
               "pruned": int(own["pruned"].sum()), "trial_seconds": trial_seconds,
               "tuned_run_seconds": run_seconds, "cpu_seconds": trial_seconds + run_seconds - gpu_seconds,
               "gpu_seconds": gpu_seconds}
        row["delta"] = row["tuned_mean"] - row["published_mean"]
        if model in tests.index:
            test = tests.loc[model]
            row.update({"pairs": int(test["pairs"]), "verdict_test": test["verdict_test"], "mde": test["mde"],
                        "margin": test["margin"], "tost_p": test["tost_p"], "verdict": test["verdict"],
                        "p_holm": test["wilcoxon_p_holm" if test["verdict_test"] == "wilcoxon" else "ttest_p_holm"]})
        rows.append(row)
    table = pd.DataFrame(rows, columns=list(VERSUS_COLUMNS))
    table.attrs.update(metric=metric, higher_is_better=higher)
    return table, versus, among


def _mean_std(prefix: str, values: pd.Series) -> dict:
    return {f"{prefix}_mean": float(values.mean()) if len(values) else math.nan,
            f"{prefix}_std": float(values.std(ddof=1)) if len(values) > 1 else math.nan,
            f"{prefix}_units": len(values)}


def published_vs_tuned_markdown(title: str, table: pd.DataFrame, among: pd.DataFrame, units: str,
                                alpha: float = significance.ALPHA) -> str:
    """The published-versus-tuned table (:func:`published_vs_tuned`) and the tests among the tuned models as
    Markdown; ``units``: what the scores are paired over (the protocol's words)."""
    metric, higher = table.attrs.get("metric", ""), table.attrs.get("higher_is_better", True)
    lines = [f"## {title}: published versus tuned configurations\n",
             "| model | published | tuned | Δ (tuned − published) | trials (completed / pruned) | seconds "
             "(trials + tuned runs) | CPU / GPU seconds | searches not converged | pairs | p (Holm) | MDE | δ | "
             "TOST p | verdict |",
             "|" + "---|" * 14]
    for _, r in table.iterrows():
        cells = [r["model"], _cell(r["published_mean"], r["published_std"]), _cell(r["tuned_mean"], r["tuned_std"]),
                 "–" if pd.isna(r["delta"]) else f"{r['delta']:+.3f}",
                 f"{r['trials']} ({r['completed']} / {r['pruned']})",
                 f"{r['trial_seconds'] + r['tuned_run_seconds']:.0f} ({r['trial_seconds']:.0f} + "
                 f"{r['tuned_run_seconds']:.0f})", f"{r['cpu_seconds']:.0f} / {r['gpu_seconds']:.0f}",
                 f"**{r['not_converged']} of {r['searches']}**" if r["not_converged"] else f"0 of {r['searches']}",
                 "–" if pd.isna(r["pairs"]) else str(int(r["pairs"])), significance._p(r["p_holm"]),
                 *("–" if pd.isna(r[c]) else f"{r[c]:.3g}" for c in ("mde", "margin")), significance._p(r["tost_p"]),
                 r["verdict"] if isinstance(r["verdict"], str) else "no tuned and published runs on shared units"]
        lines.append("| " + " | ".join(cells) + " |")
    direction = "higher" if higher else "lower"
    lines += ["", f"Test {metric} ({direction} is better): mean ± sample std over {units}. A row's test pairs the "
              f"tuned model (label `<model>{TUNED_SUFFIX}`) with its published configuration over those units; "
              "p: the verdict's test (Wilcoxon signed-rank, or the paired t-test with five units or fewer), "
              "Holm-adjusted over the models. Budget: the tuning trials the model received (pruned: stopped early "
              "on their intermediate validation scores) and the seconds spent, the trials' plus the tuned runs', of "
              "them on CPU and on GPU (CUDA), by the records' device. A search is not converged when its best trial "
              f"is in its last {LATE_FRACTION:.0%} of trials.", ""]
    text = "\n".join(lines)
    if len(among):
        text += "\n" + significance.markdown(f"{title}, tuned models", among, units, metric, higher, alpha)
    return text


def _cell(mean: float, std: float) -> str:
    if pd.isna(mean):
        return "–"
    return f"{mean:.3f}" if pd.isna(std) else f"{mean:.3f} ± {std:.3f}"


def published_vs_tuned_report(runs: pd.DataFrame, title: str, csv: str | os.PathLike, md: str | os.PathLike,
                              parquet: str | os.PathLike, *, units: str = "shared units",
                              unit_columns: tuple[str, ...] = ("split",), stage: str = "run",
                              margin: float | None = None, alpha: float = significance.ALPHA) -> None:
    """Write the published-versus-tuned table of one benchmark's run records ``runs`` (:func:`published_vs_tuned`):
    CSV and Parquet one row per model (:data:`VERSUS_COLUMNS`), Markdown with the tests among the tuned models
    below. ``units``, ``unit_columns``, ``stage``: the protocol's paired units
    (:attr:`gnnbench.protocols.base.Protocol.significance_units` and its siblings)."""
    table, _, among = published_vs_tuned(runs, unit_columns, stage, margin=margin, alpha=alpha)
    write_table(table, published_vs_tuned_markdown(title, table, among, units, alpha), csv, md, parquet)

