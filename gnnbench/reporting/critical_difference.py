"""Which models are better over several datasets? Average ranks, the Friedman test and critical-difference diagrams.

The comparison of k models over N datasets of Demšar (2006), "Statistical comparisons of classifiers over multiple
data sets", JMLR 7:1–30, §3.2.2, with the pairwise tests Benavoli, Corani & Mangili (2016), "Should we really use
post-hoc tests based on mean-ranks?", JMLR 17(5):1–10, recommend in place of the mean-ranks post-hoc test:

* one score per model and dataset (:func:`dataset_scores`): the mean test score of the model's completed runs of
  the protocol's scored stage on that dataset; a dataset where a model has no score (not run, or every run
  diverged) is left out of the comparison, since the Friedman test needs every model on every dataset;
* ranks per dataset (1 = best, by the dataset's metric direction ``higher_is_better``; ties share the average
  rank) and the average rank R_j of each model over the N datasets;
* the Friedman statistic χ²_F = 12N / (k(k+1)) · (Σ_j R_j² − k(k+1)²/4) (Demšar's Eq. (1), without a correction
  for ties) with k − 1 degrees of freedom, and Iman & Davenport's F_F = (N − 1) χ²_F / (N(k − 1) − χ²_F), F
  distributed with k − 1 and (k − 1)(N − 1) degrees of freedom (Demšar's Eq. (2));
* the Nemenyi critical difference CD = q_α √(k(k+1) / (6N)) (q_α: Demšar's Table 5(a), the studentized range
  statistic over √2; :func:`nemenyi_q`): two models whose average ranks differ by at least CD differ significantly;
* pairwise two-sided Wilcoxon signed-rank tests over the datasets (the score differences, each oriented so that
  positive is better), Holm-adjusted over all k(k − 1)/2 pairs (:func:`gnnbench.reporting.significance.holm`):
  Benavoli et al. show that the mean-ranks test's outcome for two models depends on the other models compared,
  which a paired test does not. The signed-rank test ranks the differences of all datasets together, so it
  assumes they are commensurable (Demšar, §3.1.3) — differences of an accuracy in percent and of an MAE are not:
  over datasets of different metrics read the average ranks and the Friedman test first;
* cliques: the maximal runs of models, in average-rank order, no two of which differ significantly (by the
  Wilcoxon–Holm tests; :func:`cliques`), drawn as bars in the diagram (:func:`cd_figure`), after Demšar's Figure 1.

With N datasets the two-sided exact Wilcoxon p-value is at least 2 / 2^N, so with five datasets or fewer no pair
can differ significantly at 0.05 by it: every model then sits in one clique.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd

from gnnbench.errors import DataError
from gnnbench.reporting.pitfalls import write_table
from gnnbench.reporting.plots import _figure, save_figure
from gnnbench.reporting.significance import ALPHA, holm, wilcoxon_p

# Demšar (2006), Table 5(a): critical values of the two-tailed Nemenyi test, k = 2 .. 10 models
NEMENYI_Q = {0.05: (1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164),
             0.10: (1.645, 2.052, 2.291, 2.459, 2.589, 2.693, 2.780, 2.855, 2.920)}
COLUMNS = ("model", "average_rank", "datasets")
PAIR_COLUMNS = ("model_a", "model_b", "rank_difference", "nemenyi_different", "wilcoxon_p", "wilcoxon_p_holm",
                "wilcoxon_different")


def nemenyi_q(k: int, alpha: float = ALPHA) -> float:
    """q_α of the Nemenyi test for ``k`` models: Demšar's Table 5(a) for k ≤ 10 at α = 0.05 or 0.10, else the
    studentized range quantile over √2 (``scipy.stats.studentized_range``, infinite degrees of freedom)."""
    if k < 2:
        raise ValueError(f"the Nemenyi test compares at least 2 models, not {k}")
    if alpha in NEMENYI_Q and k <= 10:
        return NEMENYI_Q[alpha][k - 2]
    from scipy.stats import studentized_range

    return float(studentized_range.ppf(1 - alpha, k, np.inf) / math.sqrt(2))


def average_ranks(scores: pd.DataFrame, higher_is_better: pd.Series | bool = True) -> pd.Series:
    """The average rank of every model (column) over the datasets (rows) of ``scores``: rank 1 the best of a row by
    its direction (``higher_is_better``: one per row, or one for all), ties sharing their average rank."""
    return _oriented(scores, higher_is_better).rank(axis=1, ascending=False, method="average").mean(axis=0)


def _oriented(scores: pd.DataFrame, higher_is_better: pd.Series | bool) -> pd.DataFrame:
    """``scores`` with the rows of lower-is-better datasets negated: larger is better on every row."""
    higher = pd.Series(higher_is_better, index=scores.index) if isinstance(higher_is_better, bool) \
        else higher_is_better.reindex(scores.index)
    return scores.mul(np.where(higher.to_numpy(bool), 1.0, -1.0), axis=0)


def friedman(ranks: pd.Series, datasets: int) -> dict:
    """Friedman's χ²_F and Iman–Davenport's F_F of average ranks ``ranks`` (k models) over ``datasets`` (N), with
    their p-values (module docstring)."""
    from scipy.stats import chi2, f

    k, n = len(ranks), datasets
    r = ranks.to_numpy(float)
    chi2_f = 12 * n / (k * (k + 1)) * (np.sum(r**2) - k * (k + 1) ** 2 / 4)
    denominator = n * (k - 1) - chi2_f
    f_f = (n - 1) * chi2_f / denominator if denominator > 0 else math.inf
    return {"k": k, "datasets": n, "chi2": chi2_f, "chi2_p": float(chi2.sf(chi2_f, k - 1)),
            "f_f": f_f, "f_f_p": float(f.sf(f_f, k - 1, (k - 1) * (n - 1))) if n > 1 else math.nan}


def critical_difference(k: int, datasets: int, alpha: float = ALPHA) -> float:
    """The Nemenyi critical difference q_α √(k(k+1) / (6N)) for ``k`` models over ``datasets`` (N)."""
    return nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6 * datasets))


def pairwise(scores: pd.DataFrame, higher_is_better: pd.Series | bool = True, alpha: float = ALPHA) -> pd.DataFrame:
    """One row per pair of models (columns of ``scores``, in average-rank order, A the better ranked) with
    :data:`PAIR_COLUMNS`: the average-rank difference and whether it reaches the Nemenyi CD, and the Wilcoxon
    signed-rank p-value over the datasets (differences oriented so that positive favours A), raw and Holm-adjusted."""
    ranks = average_ranks(scores, higher_is_better).sort_values(kind="stable")
    oriented = _oriented(scores, higher_is_better)
    cd = critical_difference(len(ranks), len(scores), alpha) if len(ranks) >= 2 else math.nan
    rows = []
    models = list(ranks.index)
    for i, a in enumerate(models):
        for b in models[i + 1:]:
            rows.append({"model_a": a, "model_b": b, "rank_difference": ranks[b] - ranks[a],
                         "nemenyi_different": bool(ranks[b] - ranks[a] >= cd),
                         "wilcoxon_p": wilcoxon_p((oriented[a] - oriented[b]).to_numpy(float))})
    table = pd.DataFrame(rows, columns=[c for c in PAIR_COLUMNS if c not in ("wilcoxon_p_holm", "wilcoxon_different")])
    table["wilcoxon_p_holm"] = holm(table["wilcoxon_p"]) if len(table) else []
    table["wilcoxon_different"] = table["wilcoxon_p_holm"] < alpha
    return table[list(PAIR_COLUMNS)]


def cliques(order: list[str], different: dict[frozenset, bool]) -> list[list[str]]:
    """The maximal runs of consecutive models of ``order`` (best first) no two of which differ (``different``:
    pair → whether it differs significantly), of two models or more, in order: the bars of a CD diagram."""
    runs = []
    for i in range(len(order)):
        j = i
        while j + 1 < len(order) and not any(different[frozenset((m, order[j + 1]))] for m in order[i:j + 1]):
            j += 1
        if j > i and not (runs and runs[-1][1] >= j):  # not inside the previous run
            runs.append((i, j))
    return [order[i:j + 1] for i, j in runs]


# ----------------------------------------------------------------------------------------------- from the records


def dataset_scores(runs: pd.DataFrame, stage: str = "run", models: list[str] | None = None
                   ) -> tuple[pd.DataFrame, pd.Series, pd.Series]:
    """(scores, higher_is_better, metric) of run records (:func:`gnnbench.records.read_runs`) for the comparison
    over datasets: ``scores`` one row per dataset and one column per model (``models``, default every model of the
    ``stage`` runs, in order of first appearance), each the mean test score of its completed ``stage`` runs on the
    dataset (NaN: none); the other two per dataset."""
    runs = runs[runs["stage"] == stage]
    if models is not None:
        runs = runs[runs["model"].isin(models)]
    score = runs["test_score"].astype(float).where(runs["status"].ne("diverged"))
    table = score.groupby([runs["dataset"], runs["model"]], sort=False).mean().unstack("model")
    order = list(dict.fromkeys(runs["model"])) if models is None else [m for m in models if m in table.columns]
    datasets = list(dict.fromkeys(runs["dataset"]))
    first = runs.drop_duplicates("dataset").set_index("dataset")
    return (table.reindex(index=datasets, columns=order), first["higher_is_better"].reindex(datasets).astype(bool),
            first["metric"].reindex(datasets))


def comparison(runs: pd.DataFrame, stage: str = "run", models: list[str] | None = None,
               alpha: float = ALPHA) -> dict:
    """The comparison of the models over the datasets of ``runs`` (module docstring): ``ranks`` (a DataFrame of
    :data:`COLUMNS`, best first), ``pairs`` (:func:`pairwise`), ``friedman`` (:func:`friedman`), ``cd``,
    ``cliques``, the ``datasets`` compared and those ``left_out`` (a model without a score there), ``alpha``."""
    scores, higher, _ = dataset_scores(runs, stage, models)
    complete = scores.notna().all(axis=1)
    left_out = list(scores.index[~complete])
    scores, higher = scores[complete], higher[complete]
    k, n = scores.shape[1], scores.shape[0]
    if k < 2 or n < 2:
        raise DataError(f"a critical-difference comparison needs 2 or more models scored on 2 or more datasets; "
                        f"the records have {k} model(s) scored on all of {n} dataset(s)"
                        + (f" ({', '.join(left_out)} left out: a model has no score there)" if left_out else ""))
    ranks = average_ranks(scores, higher).sort_values(kind="stable")
    table = pd.DataFrame({"model": ranks.index, "average_rank": ranks.to_numpy(), "datasets": n})
    pairs = pairwise(scores, higher, alpha)
    different = {frozenset((a, b)): bool(d) for a, b, d in pairs[["model_a", "model_b", "wilcoxon_different"]]
                 .itertuples(index=False)}
    return {"ranks": table, "pairs": pairs, "friedman": friedman(ranks, n), "cd": critical_difference(k, n, alpha),
            "cliques": cliques(list(ranks.index), different), "datasets": list(scores.index), "left_out": left_out,
            "alpha": alpha}


def markdown(title: str, result: dict) -> str:
    """The comparison (:func:`comparison`) as Markdown: average ranks, the Friedman test, the CD and the pairs."""
    f, alpha = result["friedman"], result["alpha"]
    lines = [f"## {title}: average ranks over {f['datasets']} datasets\n",
             "| model | average rank | clique(s) |", "|---|---|---|"]
    names = {m: ", ".join(chr(ord("A") + i) for i, c in enumerate(result["cliques"]) if m in c)
             for m in result["ranks"]["model"]}
    for _, r in result["ranks"].iterrows():
        lines.append(f"| {r['model']} | {r['average_rank']:.3f} | {names[r['model']] or '–'} |")
    lines += ["", f"Friedman χ²_F = {f['chi2']:.3f} (k − 1 = {f['k'] - 1} degrees of freedom, p = {f['chi2_p']:.3g});"
              f" Iman–Davenport F_F = {f['f_f']:.3f} (F({f['k'] - 1}, {(f['k'] - 1) * (f['datasets'] - 1)}), "
              f"p = {f['f_f_p']:.3g}). Nemenyi critical difference at α = {alpha:g}: CD = {result['cd']:.3f}.", "",
              "| A | B | rank difference | ≥ CD | Wilcoxon p | Holm | different |", "|---|---|---|---|---|---|---|"]
    for _, r in result["pairs"].iterrows():
        lines.append(f"| {r['model_a']} | {r['model_b']} | {r['rank_difference']:.3f} | "
                     f"{'yes' if r['nemenyi_different'] else 'no'} | {r['wilcoxon_p']:.3g} | "
                     f"{r['wilcoxon_p_holm']:.3g} | {'yes' if r['wilcoxon_different'] else 'no'} |")
    lines += ["", f"Datasets: {', '.join(map(str, result['datasets']))}"
              + (f"; left out (a model has no score there): {', '.join(map(str, result['left_out']))}"
                 if result["left_out"] else "") + ". Rank 1 is the best on a dataset (by its metric's direction); "
              "a model's score on a dataset is the mean test score of its completed runs. Cliques (letters; the "
              "diagram's bars): models no two of which differ by the two-sided Wilcoxon signed-rank test over the "
              f"datasets, Holm-adjusted over all pairs, at α = {alpha:g} (Benavoli, Corani & Mangili 2016); with N "
              "datasets its p cannot go below 2/2^N, so five datasets or fewer never separate two models. The "
              "Nemenyi CD (Demšar 2006) is given for comparison.", ""]
    return "\n".join(lines)


def cd_figure(result: dict, title: str):
    """The critical-difference diagram of a comparison (:func:`comparison`), after Demšar (2006), Figure 1: the
    rank axis (1, the best, on the left), every model at its average rank, a bar under each clique (models not
    significantly different by the Wilcoxon–Holm tests) and a segment of the Nemenyi CD's length."""
    ranks = result["ranks"]
    k = len(ranks)
    half = (k + 1) // 2
    height = 1.2 + 0.3 * half + 0.15 * len(result["cliques"])
    figure = _figure(7.0, height)
    axes = figure.add_subplot()
    axes.set_xlim(0.5, k + 0.5)
    axes.set_ylim(-0.45 - 0.2 * len(result["cliques"]) - 0.35 * half, 1.6)  # down to the lowest label
    axes.axis("off")
    axes.hlines(0, 1, k, color="black", linewidth=1)
    for r in range(1, k + 1):
        axes.vlines(r, 0, 0.15, color="black", linewidth=1)
        axes.text(r, 0.25, str(r), ha="center", va="bottom", fontsize=9)
    cd = result["cd"]
    axes.hlines(1.1, 1, 1 + cd, color="black", linewidth=1.5)
    axes.text(1 + cd / 2, 1.2, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=8)
    bar_y = {}
    for i, clique in enumerate(result["cliques"]):
        rank_of = dict(zip(ranks["model"], ranks["average_rank"], strict=True))
        y = -0.25 - 0.2 * i
        axes.hlines(y, rank_of[clique[0]] - 0.03, rank_of[clique[-1]] + 0.03, color="black", linewidth=3)
        bar_y[i] = y
    below = -0.45 - 0.2 * len(result["cliques"])
    for i, (model, rank) in enumerate(zip(ranks["model"], ranks["average_rank"], strict=True)):
        left = i < half
        y = below - 0.35 * (i if left else k - 1 - i)
        x_text = 0.6 if left else k + 0.4
        axes.plot([rank, rank, x_text], [0, y, y], color="black", linewidth=0.8)
        axes.text(x_text, y, f"{model} ({rank:.2f})", ha="left" if left else "right", va="bottom", fontsize=9)
    axes.set_title(title, fontsize=10)
    return figure


def cd_report(runs: pd.DataFrame, title: str, csv: str | os.PathLike, md: str | os.PathLike,
              parquet: str | os.PathLike, png: str | os.PathLike, svg: str | os.PathLike, *, stage: str = "run",
              models: list[str] | None = None, alpha: float = ALPHA) -> None:
    """Write the comparison over the datasets of ``runs`` (:func:`comparison`): the ranks and pairs as one table
    (CSV, Parquet: one row per model with its average rank, then one per pair; Markdown: :func:`markdown`) and the
    CD diagram (PNG, SVG), each atomically. Fewer than 2 models scored on 2 datasets: the table says so and the
    figure is empty but for that line."""
    try:
        result = comparison(runs, stage, models, alpha)
    except DataError as exc:
        table = pd.DataFrame(columns=["kind", *COLUMNS, *PAIR_COLUMNS])
        text = f"## {title}\n\nNo comparison: {exc}.\n"
        figure = _figure(7.0, 1.5)
        figure.text(0.5, 0.5, f"No comparison: {exc}", ha="center", va="center", fontsize=8, wrap=True)
    else:
        f = result["friedman"]
        ranks = result["ranks"].assign(kind="rank", chi2=f["chi2"], chi2_p=f["chi2_p"], f_f=f["f_f"],
                                       f_f_p=f["f_f_p"], cd=result["cd"], alpha=alpha)
        table = pd.concat([ranks, result["pairs"].assign(kind="pair")], ignore_index=True)
        table = table[["kind", *[c for c in table.columns if c != "kind"]]]
        text = markdown(title, result)
        figure = cd_figure(result, title)
    write_table(table, text, csv, md, parquet)
    save_figure(figure, png, svg)
