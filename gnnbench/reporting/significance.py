"""Is model A better than model B on this dataset? Paired tests over the units both were evaluated on.

A *unit* is what two models of a benchmark share, so their scores on it are paired. Every protocol's scores come
from the one run record (:mod:`gnnbench.records`, :func:`unit_scores`); each protocol declares only its unit
columns and the stage of the runs scored (:attr:`gnnbench.protocols.base.Protocol.significance_unit_columns`,
``significance_stage``), and a unit's score is the mean test score of its completed runs:

* benchmarking-gnns: a (seed, fold) run — its test score (columns ``seed``, ``split``);
* pitfalls: a random split — the paper's per-split score s(m, d, k), the mean test accuracy over the inits
  (column ``split``);
* fair-comparison: an outer fold — the mean test accuracy of the fold's final runs (column ``split``, stage
  ``final``).

For every pair of models (A before B in the benchmark's order) on the units both have (a unit one of them lacks —
a missing seed or fold — is dropped from that pair and counted in ``dropped_units``; a unit both have where either
model's score is missing because its runs diverged is dropped too and counted in ``diverged_units``), with
d = score_A − score_B:

* ``mean_difference`` = mean(d), ``pairs`` = n;
* ``wilcoxon_p``: two-sided Wilcoxon signed-rank test (``scipy.stats.wilcoxon``; zero differences dropped, its
  default; exact distribution for small n without ties); all differences zero: p = 1;
* ``ttest_p``: two-sided paired t-test (``scipy.stats.ttest_rel``); differences all equal (zero variance): p = 1
  when they are 0, p = 0 otherwise (t = ±∞) — the t-test's assumptions fail there, the verdict does not use it;
  fewer than 2 pairs: no test (NaN);
* ``wilcoxon_p_holm`` / ``ttest_p_holm``: Holm–Bonferroni adjustment over all pairs of the dataset (:func:`holm`);
* ``mde``: the minimum detectable effect of the paired t-test at these n pairs (two-sided α, power 0.8), ``margin``
  the equivalence margin δ and ``tost_p`` the p-value of the two one-sided tests of equivalence within ±δ
  (:mod:`gnnbench.reporting.equivalence`: the formulas, the default δ — 1 point of accuracy, else 1 % of the
  pair's mean score — and the references); not Holm-adjusted;
* ``verdict``: "<A> better" / "<B> better" (the models differ) when the Holm-adjusted p of the verdict's test
  (``verdict_test``) is below α (0.05), oriented by the metric's ``higher_is_better`` (a lower MAE is better). The
  test is the Wilcoxon signed-rank test whenever it can reach α at all, i.e. with n pairs such that its smallest
  exact p, 2 / 2^n, is below α (n ≥ 6 at 0.05). With fewer pairs (P1's four seeds, five folds) the rank test can
  never reject, whatever the scores, so the verdict falls back on the paired t-test (which assumes normally
  distributed differences — say so when quoting it; the verdict names the test) — unless the differences are all
  equal and not zero, where the t statistic is infinite and meaningless (and with fewer than 2 pairs): "too few
  units to tell (n = …)". Not different, the verdict says what the absence of a difference is worth:
  "equivalent within δ = …" when the TOST p is below α; else "too few units to tell (MDE … > δ …)" when the test
  could not have detected a difference of δ (MDE > δ); else "not different, not shown equivalent".

Diverged runs (record ``status`` "diverged": a NaN or infinite loss, no score) are never a score: a unit scores the
mean over its completed runs (a benchmarking-gnns run that diverged, a pitfalls split whose every init diverged, a
fair-comparison fold whose every final run diverged: no score, NaN). A NaN in ``scores`` means exactly this: the
unit is dropped from every pair of that model and counted in ``diverged_units``.

Small samples: with n pairs the exact two-sided Wilcoxon p-value is at least 2 / 2^n (every difference with the
same sign), so with n ≤ 5 pairs (2/32 = 0.0625) no pair can be significant at 0.05 by the rank test — four seeds
(P1's protocol) or five folds never can, whatever the scores; Holm's adjustment raises the bar further with more
pairs (45 pairs of ten models need 11 or more units for the rank test to reject once: 45 · 2 / 2^11 < 0.05).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from gnnbench.errors import DataError
from gnnbench.io import atomic_path
from gnnbench.reporting import equivalence

ALPHA = 0.05
COLUMNS = ("model_a", "model_b", "pairs", "dropped_units", "diverged_units", "mean_a", "mean_b", "mean_difference",
           "wilcoxon_p", "wilcoxon_p_holm", "ttest_p", "ttest_p_holm", "mde", "margin", "tost_p", "verdict_test",
           "verdict")


def holm(p_values) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values, in the input order: sort ascending, p_(i) × (m − i + 1) for i = 1..m,
    running maximum, capped at 1. NaN entries are left out (m counts the others) and stay NaN."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = len(valid)
    order = valid[np.argsort(p[valid], kind="stable")]
    running = 0.0
    for i, index in enumerate(order):  # i = 0 .. m-1 ↔ rank i + 1
        running = max(running, min(1.0, p[index] * (m - i)))
        out[index] = running
    return out


def wilcoxon_p(differences: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired differences (``scipy.stats.wilcoxon``'s); 1 when all are
    zero, NaN without pairs."""
    from scipy.stats import wilcoxon

    d = np.asarray(differences, dtype=float)
    if len(d) == 0:
        return math.nan
    if np.all(d == 0):
        return 1.0
    magnitudes = np.abs(d[d != 0])
    if len(d) <= SIGN_FLIPS_UP_TO and (len(magnitudes) < len(d) or len(np.unique(magnitudes)) < len(magnitudes)):
        return sign_flip_p(d)
    return float(wilcoxon(d, alternative="two-sided").pvalue)


# With ties or zeros among at most 13 differences scipy's wilcoxon runs an exact test over all 2^n sign flips
# (permutation_test), computing the statistic one flip at a time, which is slow; sign_flip_p is the same test with
# all 2^n patterns at once (one matrix product).
SIGN_FLIPS_UP_TO = 13


def sign_flip_p(differences: np.ndarray) -> float:
    """The exact two-sided sign-flip test of the signed-rank statistic R+ (average ranks of the non-zero |d|, zeros
    left out) over all 2^n sign patterns of ``differences``, with scipy's rule: 2 × the smaller of the fractions of
    patterns whose R+ is ≤ and ≥ the observed one (within a relative 100 ε), capped at 1."""
    from scipy.stats import rankdata

    d = np.asarray(differences, dtype=float)
    n = len(d)
    ranks = np.zeros(n)
    ranks[d != 0] = rankdata(np.abs(d[d != 0]))
    flips = (np.arange(2**n)[:, None] >> np.arange(n)) & 1  # (2^n, n): 1 where pattern k flips difference i
    positive = np.where(flips == 1, d < 0, d > 0)
    null = positive.astype(float) @ ranks  # sums of half-integers: exact in any order
    observed = float(ranks[d > 0].sum())
    gamma = abs(np.finfo(float).eps * 100 * observed)
    count = min(int(np.count_nonzero(null <= observed + gamma)), int(np.count_nonzero(null >= observed - gamma)))
    return min(1.0, count / 2**n * 2)


def ttest_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided paired t-test p-value; constant differences: 1 if zero, else 0; NaN with fewer than 2 pairs."""
    from scipy.stats import ttest_rel

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if len(d) < 2:
        return math.nan
    if np.all(d == d[0]):
        return 1.0 if d[0] == 0 else 0.0
    return float(ttest_rel(a, b).pvalue)


def paired_tests(scores: pd.DataFrame, higher_is_better: bool, alpha: float = ALPHA, *, metric: str = "",
                 margin: float | None = None, pairs: list[tuple[str, str]] | None = None) -> pd.DataFrame:
    """One row per pair of models (order of first appearance; A before B) with the :data:`COLUMNS`.

    ``scores``: one row per (model, unit) with columns ``model``, ``unit`` (any hashable) and ``score`` (NaN: the
    model's run(s) on that unit diverged, module docstring); ``metric`` and ``margin``: the equivalence margin δ
    (:func:`gnnbench.reporting.equivalence.margin`: ``margin`` when given, else the metric's default); ``pairs``:
    only these (A, B) pairs, in this order (Holm's adjustment is then over them), instead of every pair."""
    if scores.duplicated(["model", "unit"]).any():
        first = scores[scores.duplicated(["model", "unit"])].iloc[0]
        raise DataError(f"model {first['model']} has two scores for unit {first['unit']}; expected one per unit")
    by_model = {m: g.set_index("unit")["score"] for m, g in scores.groupby("model", sort=False)}
    models = list(by_model)
    if pairs is None:
        pairs = [(a, b) for i, a in enumerate(models) for b in models[i + 1:]]
    unknown = [m for pair in pairs for m in pair if m not in by_model]
    if unknown:
        raise DataError(f"no scores of model {unknown[0]} to compare; expected one of {', '.join(models)}")
    rows = []
    for a, b in pairs:
        both = [u for u in by_model[a].index if u in by_model[b].index]
        shared = [u for u in both if not (pd.isna(by_model[a][u]) or pd.isna(by_model[b][u]))]
        dropped = len(set(by_model[a].index) ^ set(by_model[b].index))
        x = by_model[a].loc[shared].to_numpy(float)
        y = by_model[b].loc[shared].to_numpy(float)
        mean_a, mean_b = (x.mean(), y.mean()) if len(x) else (math.nan, math.nan)
        delta = equivalence.margin(metric, mean_a, mean_b, margin)
        rows.append({"model_a": a, "model_b": b, "pairs": len(shared), "dropped_units": dropped,
                     "diverged_units": len(both) - len(shared), "mean_a": mean_a, "mean_b": mean_b,
                     "mean_difference": (x - y).mean() if len(x) else math.nan,
                     "wilcoxon_p": wilcoxon_p(x - y), "ttest_p": ttest_p(x, y),
                     "mde": equivalence.mde(x - y, alpha), "margin": delta,
                     "tost_p": equivalence.tost_p(x - y, delta), "verdict_test": verdict_test(x - y, alpha)})
    table = pd.DataFrame(rows, columns=[c for c in COLUMNS if c not in ("wilcoxon_p_holm", "ttest_p_holm",
                                                                          "verdict")])
    table["wilcoxon_p_holm"] = holm(table["wilcoxon_p"]) if len(table) else []
    table["ttest_p_holm"] = holm(table["ttest_p"]) if len(table) else []
    table["verdict"] = [_verdict(r, higher_is_better, alpha) for _, r in table.iterrows()]
    table["verdict_test"] = table["verdict_test"].fillna("")
    return table[list(COLUMNS)]


def verdict_test(differences: np.ndarray, alpha: float = ALPHA) -> str | None:
    """The test the verdict uses for these paired differences: "wilcoxon" when it can reach ``alpha`` (2 / 2^n <
    alpha), else "t-test" when the differences vary; None: too few pairs to tell (fewer than 2, or all equal)."""
    n = len(differences)
    if n and 2.0 / 2.0 ** n < alpha:
        return "wilcoxon"
    return "t-test" if n >= 2 and np.ptp(differences) > 0 else None


def _verdict(row, higher_is_better: bool, alpha: float) -> str:
    test = row["verdict_test"]
    if not isinstance(test, str):
        if row["pairs"] < 2 or row["mean_difference"] != 0:  # no test at all, or an infinite t on constant d
            return f"too few units to tell (n = {row['pairs']})"
    else:
        p = row["wilcoxon_p_holm" if test == "wilcoxon" else "ttest_p_holm"]
        if not (pd.isna(p) or p >= alpha or row["mean_difference"] == 0):
            a_better = (row["mean_difference"] > 0) == higher_is_better
            how = "Wilcoxon" if test == "wilcoxon" else f"paired t-test; {row['pairs']} pairs are too few for Wilcoxon"
            return f"{row['model_a'] if a_better else row['model_b']} better ({how})"
    if row["tost_p"] < alpha:
        return f"equivalent within δ = {row['margin']:.3g}"
    if not row["mde"] <= row["margin"]:
        return f"too few units to tell (MDE {row['mde']:.3g} > δ {row['margin']:.3g})"
    return "not different, not shown equivalent"


def markdown(dataset: str, table: pd.DataFrame, units: str, metric: str, higher_is_better: bool,
             alpha: float = ALPHA) -> str:
    """The table as Markdown; ``units``: what the scores are paired over (the protocol's words)."""
    lines = [f"## {dataset}: is A better than B? Paired tests over {units}\n",
             "| A | B | pairs | dropped | diverged | mean A | mean B | mean A − B | Wilcoxon p | Holm | t-test p | "
             "Holm (t) | MDE | δ | TOST p | verdict |", "|" + "---|" * 16]
    for _, r in table.iterrows():
        cells = [r["model_a"], r["model_b"], str(r["pairs"]), str(r["dropped_units"]), str(r["diverged_units"]),
                 *("–" if pd.isna(r[c]) else f"{r[c]:.3f}" for c in ("mean_a", "mean_b")),
                 "–" if pd.isna(r["mean_difference"]) else f"{r['mean_difference']:+.3f}",
                 *(_p(r[c]) for c in ("wilcoxon_p", "wilcoxon_p_holm", "ttest_p", "ttest_p_holm")),
                 *("–" if pd.isna(r[c]) else f"{r[c]:.3g}" for c in ("mde", "margin")), _p(r["tost_p"]),
                 r["verdict"]]
        lines.append("| " + " | ".join(cells) + " |")
    if table.empty:
        lines.append("| – | – | 0 | 0 | 0 | | | | | | | | | | | fewer than two models |")
    direction = "higher" if higher_is_better else "lower"
    note = (f"\nMetric: {metric} ({direction} is better). Units: {units}; a pair "
            "uses only the units both models have a score on (dropped = units only one of them has; diverged = "
            "units where a run of either diverged: no score). Verdict: Holm–Bonferroni "
            f"adjusted p (two-sided) over all {len(table)} pairs, α = {alpha:g}, of the Wilcoxon signed-rank test; "
            "with n pairs its exact p cannot go below 2/2^n, so n ≤ 5 pairs can never be significant by it at 0.05 and "
            "the verdict then uses the paired t-test (it assumes normal differences; constant differences: p = 0, "
            "or 1 when all are zero — \"too few units to tell\"). Not different: MDE = the smallest true mean "
            "difference the paired t-test detects with power 0.8 at these pairs, (t_{1−α/2,n−1} + t_{0.8,n−1})·s_d/√n; "
            "TOST p = the two one-sided paired t-tests of |mean A − B| < δ (Schuirmann 1987), not adjusted: "
            "\"equivalent within δ\" when below α, \"too few units to tell\" when MDE > δ, else \"not different, "
            "not shown equivalent\" (docs/results.md).\n")
    return "\n".join(lines) + "\n" + note


def _p(value: float) -> str:
    return "–" if pd.isna(value) else f"{value:.3g}"


# ---------------------------------------------------------------------------------------------- unit scores


def unit_scores(runs: pd.DataFrame, units: tuple[str, ...] = ("split",), stage: str = "run"
                ) -> tuple[pd.DataFrame, str, bool]:
    """(scores per (model, unit), metric, higher_is_better) of run records (:func:`gnnbench.records.read_runs`):
    a unit is a value of the record columns ``units`` (one column: its value; several: a tuple), its score the mean
    test score of the model's completed runs of ``stage`` on it (NaN where every one diverged); models and units in
    order of first appearance."""
    runs = runs[runs["stage"] == stage]
    if runs.empty:
        raise DataError(f"no {stage!r} runs among the run records to compare; check the benchmark's models")
    score = runs["test_score"].astype(float).where(runs["status"].ne("diverged"))  # a diverged run has no score
    means = score.groupby([runs["model"], *(runs[c] for c in units)], sort=False).mean()  # NaNs skipped
    keys = [tuple(v.item() if isinstance(v, np.generic) else v for v in key) for key in means.index]
    unit = [key[1] if len(units) == 1 else key[1:] for key in keys]
    scores = pd.DataFrame({"model": [key[0] for key in keys], "unit": unit, "score": means.to_numpy(float)})
    return scores, str(runs["metric"].iloc[0]), bool(runs["higher_is_better"].iloc[0])


def significance_report(*, dataset: str, scores: pd.DataFrame, metric: str, higher_is_better: bool, units: str,
                        csv, md, parquet, alpha: float = ALPHA, margin: float | None = None) -> None:
    """The pairwise tests of one benchmark, written as CSV, Parquet and Markdown (each atomically). ``scores``:
    one row per (model, unit) (:func:`paired_tests`), as the benchmark's protocol reads them
    (:func:`unit_scores`; the report job: :func:`gnnbench.report_jobs.dataset_job`); ``units``: what they pair over;
    ``margin``: the equivalence margin δ (None: the metric's default, :func:`gnnbench.reporting.equivalence.margin`)."""
    table = paired_tests(scores, higher_is_better, alpha, metric=metric, margin=margin)
    table.insert(0, "dataset", dataset)
    with atomic_path(csv) as tmp:
        table.to_csv(tmp, index=False)
    with atomic_path(parquet) as tmp:
        table.to_parquet(tmp, index=False)
    with atomic_path(md) as tmp:
        Path(tmp).write_text(markdown(dataset, table, units, metric, higher_is_better, alpha))
