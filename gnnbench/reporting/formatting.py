"""How every protocol's tables write their numbers: one rule, one set of helpers.

A score is written at the precision of the paper whose protocol made the table, so that our number and the
paper's sit beside each other digit for digit: 3 decimals in the benchmarking-gnns tables (Dwivedi et al. report
accuracy in %, MAE and F1 with three), 1 decimal in the pitfalls and fair-comparison tables (Shchur et al. and
Errica et al. report accuracy in % with one). A model of another paper's zoo run under a protocol is written like
that protocol's own models (its rows come from the same run records). Mean and spread are "mean ± std"
(:func:`mean_std`); a single run has no spread (the mean alone); no score at all is written as ``missing`` ("–";
the pitfalls matrix writes the paper's "N/A" for a model not run on a dataset). The best cell of a column is bold
when its mean equals the best at the printed precision (:func:`bold_best`). Diverged runs:
:func:`gnnbench.reporting.status.diverged_cell`.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

# score decimals of each protocol's tables (reporting.aggregate, reporting.pitfalls, reporting.fair_comparison):
# its paper's precision
P1_DECIMALS, P2_DECIMALS, P3_DECIMALS = 3, 1, 1


def number(value: float, decimals: int, missing: str = "–") -> str:
    """``value`` with ``decimals`` decimals; ``missing`` for NaN (no score)."""
    return missing if pd.isna(value) else f"{value:.{decimals}f}"


def mean_std(mean: float, std: float, decimals: int, missing: str = "–") -> str:
    """"mean ± std"; the mean alone where the std is NaN (a single run has no sample std); ``missing`` without a
    mean."""
    if pd.isna(mean):
        return missing
    if pd.isna(std):
        return f"{mean:.{decimals}f}"
    return f"{mean:.{decimals}f} ± {std:.{decimals}f}"


def bold_best(cells: Iterable[str], means: Iterable[float], decimals: int, higher_is_better: bool = True) -> list[str]:
    """Bold every cell whose mean equals the best mean at the printed precision."""
    means = np.round(np.asarray(list(means), dtype=float), decimals)
    cells = list(cells)
    if np.isnan(means).all():
        return cells
    best = np.nanmax(means) if higher_is_better else np.nanmin(means)
    return [f"**{c}**" if m == best else c for c, m in zip(cells, means, strict=True)]
