"""Could the paired test have seen a difference, and are two models equivalent? Minimum detectable effect and TOST.

A paired test that finds no significant difference says nothing by itself: with few units it could not have found
one. Two numbers per paired comparison (:func:`gnnbench.reporting.significance.paired_tests`) of n units with
differences d (mean d̄, sample standard deviation s_d):

* the minimum detectable effect of the two-sided paired t-test at level α with power 1 − β (:func:`mde`),
  MDE = (t_{1−α/2, n−1} + t_{1−β, n−1}) · s_d / √n — the true mean difference the test finds with probability about
  1 − β (0.8 here). It is the usual normal-theory approximation with t quantiles in place of z quantiles (Julious
  2004, "Sample sizes for clinical trials with normal data", Stat. Med. 23:1921–1986); the exact power at MDE, from
  the noncentral t distribution, is close to 1 − β (0.78 at 4 pairs, 0.80 from 10);
* TOST, the two one-sided tests of Schuirmann (1987), "A comparison of the two one-sided tests procedure and the
  power approach for assessing the equivalence of average bioavailability", J. Pharmacokin. Biopharm. 15:657–680
  (:func:`tost_p`): for a margin δ > 0, H₀: |true mean difference| ≥ δ against H₁: it lies within (−δ, δ), rejected
  at α when both one-sided paired t-tests reject, H₀₁: mean ≤ −δ (t₁ = (d̄ + δ)/(s_d/√n)) and H₀₂: mean ≥ δ
  (t₂ = (d̄ − δ)/(s_d/√n)); its p-value is the larger of the two one-sided p-values (Lakens 2017, "Equivalence
  tests", Soc. Psychol. Personal. Sci. 8:355–362).

Both are the paired t-test's and assume normally distributed differences, as its p-value does. Constant differences
(s_d = 0): MDE 0; TOST p 0 when |d̄| < δ, else 1 — the t statistics are infinite there; fewer than 2 units: NaN.

The margin δ is what the reader would call "the same": :func:`margin` — a benchmark's own setting where it has one
(:attr:`gnnbench.protocols.base.Protocol.equivalence_margin`), else 1 point for accuracies (the run records store them
in percent) and 1 % of the pair's mean score (in absolute value) for any other metric.
"""

from __future__ import annotations

import math

import numpy as np

POWER = 0.8
ACCURACY_MARGIN = 1.0  # points of accuracy (percent)
RELATIVE_MARGIN = 0.01  # of the pair's mean score, for other metrics
PERCENT_METRICS = ("accuracy", "weighted_accuracy")


def mde(differences, alpha: float = 0.05, power: float = POWER) -> float:
    """The minimum detectable effect of the two-sided paired t-test on ``differences`` (n of them) at level
    ``alpha`` with ``power``: (t_{1−α/2, n−1} + t_{power, n−1}) · s_d / √n; NaN with fewer than 2."""
    from scipy.stats import t

    d = np.asarray(differences, dtype=float)
    n = len(d)
    if n < 2:
        return math.nan
    return float((t.ppf(1 - alpha / 2, n - 1) + t.ppf(power, n - 1)) * d.std(ddof=1) / math.sqrt(n))


def tost_p(differences, delta: float) -> float:
    """The p-value of the two one-sided paired t-tests of equivalence within ``delta`` (module docstring): the
    larger of P(T ≥ t₁) and P(T ≤ t₂), T ~ t(n − 1); NaN with fewer than 2 differences or no margin."""
    from scipy.stats import t

    d = np.asarray(differences, dtype=float)
    n = len(d)
    if n < 2 or not delta > 0:
        return math.nan
    mean, sd = d.mean(), d.std(ddof=1)
    if sd == 0:
        return 0.0 if abs(mean) < delta else 1.0
    se = sd / math.sqrt(n)
    return float(max(t.sf((mean + delta) / se, n - 1), t.cdf((mean - delta) / se, n - 1)))


def margin(metric: str, mean_a: float, mean_b: float, setting: float | None = None) -> float:
    """The equivalence margin δ of a pair: ``setting`` when given, else 1 point for an accuracy in percent
    (:data:`PERCENT_METRICS`), else 1 % of the mean of the two models' mean scores in absolute value."""
    if setting is not None:
        return float(setting)
    if metric in PERCENT_METRICS:
        return ACCURACY_MARGIN
    return RELATIVE_MARGIN * abs((mean_a + mean_b) / 2)
