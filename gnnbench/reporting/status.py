"""A run's status in the tables: ``completed``, or ``diverged`` (a NaN or infinite loss stopped it; it has no score).

Every protocol's table reads the status the same way — a run record without a ``status`` (written before runs had
one) is completed — and shows diverged runs the same way: counted, never averaged, and named in the score cell.
"""

from __future__ import annotations

import pandas as pd


def diverged(runs: pd.DataFrame) -> pd.Series:
    """Boolean mask of the runs whose ``status`` is "diverged" (none without a ``status`` column)."""
    if "status" not in runs.columns:
        return pd.Series(False, index=runs.index)
    return runs["status"].eq("diverged")


def completed(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that did not diverge: the ones with a score."""
    return runs[~diverged(runs)]


def diverged_cell(cell: str, diverged_runs: int, runs: int, what: str = "") -> str:
    """A "mean ± std" cell with its diverged runs: "cell (k of n diverged)", or "diverged (n of n)" when every run
    diverged; ``cell`` unchanged without diverged runs. ``what`` names the runs (e.g. "final runs")."""
    of = f"{diverged_runs} of {runs}" + (f" {what}" if what else "")
    if not diverged_runs:
        return cell
    if diverged_runs >= runs:
        return f"diverged ({of})"
    return f"{cell} ({of} diverged)"
