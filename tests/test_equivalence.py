"""Minimum detectable effect and TOST equivalence of paired comparisons (gnnbench.reporting.equivalence), against
independent computations: scipy's one-sample t-test on shifted differences, a hand MDE, the noncentral t power."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import nct, t, ttest_1samp

from gnnbench.reporting import equivalence as E
from gnnbench.reporting import significance as S


def scores(**models) -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "unit": u, "score": v} for m, values in models.items()
                         for u, v in values.items()])


def test_tost_p_is_the_larger_one_sided_p_of_scipys_t_tests_on_shifted_differences():
    rng = np.random.default_rng(1)
    for n, shift, delta in [(8, 0.1, 1.0), (12, 0.8, 1.0), (5, -0.3, 0.5), (30, 0.0, 0.2)]:
        d = rng.normal(shift, 0.6, n)
        lower = ttest_1samp(d + delta, 0, alternative="greater").pvalue  # H01: mean ≤ −δ
        upper = ttest_1samp(d - delta, 0, alternative="less").pvalue  # H02: mean ≥ δ
        assert E.tost_p(d, delta) == pytest.approx(max(lower, upper))
    d = np.array([0.1, -0.2, 0.05, 0.15, -0.1, 0.0, 0.2, -0.05])  # small differences, margin 1: equivalent
    assert E.tost_p(d, 1.0) < 1e-4 and E.tost_p(d, 0.05) > 0.05  # within a tight margin: not shown
    assert E.tost_p(np.full(4, 0.3), 1.0) == 0.0 and E.tost_p(np.full(4, 1.5), 1.0) == 1.0  # constant d
    assert math.isnan(E.tost_p([0.1], 1.0)) and math.isnan(E.tost_p(d, 0.0))


def test_mde_by_hand_and_its_power_is_about_point_eight():
    d = np.array([1.0, -1.0, 2.0, 0.0, 3.0])  # s_d = √2.5, n = 5
    # t_{0.975,4} = 2.776445, t_{0.8,4} = 0.940965 (tables): (2.776445 + 0.940965) · √2.5 / √5
    assert E.mde(d) == pytest.approx((2.776445 + 0.940965) * math.sqrt(2.5) / math.sqrt(5), rel=1e-6)
    assert E.mde(d, alpha=0.05, power=0.5) == pytest.approx(2.776445 * math.sqrt(0.5), rel=1e-6)  # t_0.5 = 0
    assert math.isnan(E.mde([1.0])) and E.mde([2.0, 2.0, 2.0]) == 0.0
    for n in (4, 6, 10, 30):  # the exact power of the two-sided paired t-test at a true effect of MDE
        d = np.random.default_rng(n).normal(0, 1.3, n)
        se = d.std(ddof=1) / math.sqrt(n)
        crit, noncentrality = t.ppf(0.975, n - 1), E.mde(d) / se
        power = nct.sf(crit, n - 1, noncentrality) + nct.cdf(-crit, n - 1, noncentrality)
        assert power == pytest.approx(0.8, abs=0.02 if n < 10 else 0.002)


def test_default_margin_is_one_point_of_accuracy_or_one_percent_of_the_pair_mean():
    assert E.margin("accuracy", 70.0, 80.0) == 1.0
    assert E.margin("MAE", 0.40, 0.44) == pytest.approx(0.0042)
    assert E.margin("MAE", -2.0, -4.0) == pytest.approx(0.03)  # in absolute value
    assert E.margin("accuracy", 70.0, 80.0, setting=0.5) == 0.5


def test_paired_table_verdicts_different_equivalent_too_few_and_not_shown():
    rng = np.random.default_rng(7)
    base = rng.uniform(70, 80, 10)
    a = dict(enumerate(base))
    equal = dict(enumerate(base + rng.normal(0, 0.2, 10)))  # within 1 point of A, tightly
    better = dict(enumerate(base + 3 + rng.normal(0, 0.3, 10)))
    loose = dict(enumerate(base + rng.normal(0, 4.0, 10)))  # same on average, far too noisy to tell
    table = S.paired_tests(scores(A=a, Equal=equal, Better=better, Loose=loose), True, metric="accuracy")
    rows = table.set_index(["model_a", "model_b"])
    assert rows.loc[("A", "Better"), "verdict"] == "Better better (Wilcoxon)"
    assert rows.loc[("A", "Equal"), "verdict"] == "equivalent within δ = 1"
    d = np.array([a[u] - equal[u] for u in range(10)])
    assert rows.loc[("A", "Equal"), "tost_p"] == pytest.approx(
        max(ttest_1samp(d + 1, 0, alternative="greater").pvalue, ttest_1samp(d - 1, 0, alternative="less").pvalue))
    loose_row = rows.loc[("A", "Loose")]
    assert loose_row["mde"] > 1 and loose_row["verdict"] == (
        f"too few units to tell (MDE {loose_row['mde']:.3g} > δ 1)")
    # a difference the test could have seen (MDE ≤ δ) yet neither significant nor inside the margin
    d = np.array([0.9, 1.0, 1.1, 0.95, 1.05, 0.9, 1.1, 1.0, 0.95, 1.05, 1.0, 0.9, 1.1, 1.0, 0.95, 1.05, -0.2, 0.0])
    shifted = S.paired_tests(scores(A=dict(enumerate(70 + d)), B=dict(enumerate(np.full(18, 70.0)))), True,
                             metric="accuracy", margin=1.2).iloc[0]
    assert shifted["wilcoxon_p_holm"] < 0.05 and shifted["verdict"] == "A better (Wilcoxon)"
    # five units (the paired t-test decides): with s_d/√n = se, MDE = 3.72 se; a mean difference of 2.2 se is not
    # significant (t < 2.776), and within δ = 3.8 se it is not shown equivalent (3.8 − 2.2 < t_{0.95,4} = 2.132)
    unit = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    se = unit.std(ddof=1) / math.sqrt(5)
    near = unit + 2.2 * se
    row = S.paired_tests(scores(A=dict(enumerate(70 + near)), B=dict(enumerate(np.full(5, 70.0)))), True,
                         metric="accuracy", margin=3.8 * se).iloc[0]
    assert row["verdict_test"] == "t-test" and row["ttest_p"] > 0.05 and row["tost_p"] > 0.05
    assert row["mde"] == pytest.approx((2.776445 + 0.940965) * se, rel=1e-6) and row["mde"] <= row["margin"]
    assert row["verdict"] == "not different, not shown equivalent"
