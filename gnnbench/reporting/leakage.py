"""The leakage note under a benchmark's table: the dataset's duplicates and, per fold, the validation and test items
with a duplicate in training (the split's ``leakage.json``, :func:`gnnbench.data.leakage.split_report`), with a
warning when a test part's share exceeds the dataset's threshold (docs/leakage.md)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from gnnbench.io import atomic_path, read_json

log = logging.getLogger(__name__)


def leakage_note(report: dict, threshold: float) -> tuple[str, str | None]:
    """The Markdown paragraph(s) describing ``report`` (a ``leakage.json``) and the one-line warning when some test
    part's share of items with a duplicate in training exceeds ``threshold`` (else None)."""
    dup = report.get("duplicates") or {}
    if not dup:
        return "Leakage check: not applicable (no duplicates are checked for this task).", None
    unit = "nodes" if dup["level"] == "node" else "graphs"
    if not dup["groups"]:
        return f"Leakage check: no duplicate {unit} ({dup['rule']}).", None
    conflicts = dup.get("label_conflicts")
    labels = "" if conflicts is None else f", {conflicts} of them with differing labels"
    text = (f"Leakage check: {dup['groups']} groups of duplicate {unit} ({dup['members']} {unit}, "
            f"{dup['removable']} removable copies{labels}; {dup['rule']}"
            f"{'' if dup.get('confirmed', True) else ', not all confirmed'}).")
    folds = report["folds"]
    parts = []
    for part, name in (("test", "test"), ("val", "validation")):
        leaked = [f[f"{part}_leaked"] for f in folds]
        same = [f[f"{part}_leaked_same_label"] for f in folds]
        sizes = [f[part] for f in folds]
        parts.append(f"{name} {unit} with a duplicate in training: {_span(leaked)} of {_span(sizes)} per fold "
                     f"({_span(same)} with its label)")
    joined = "; ".join(parts)
    text += f" {joined[0].upper()}{joined[1:]}."
    worst = report.get("worst_test_fraction", 0.0)
    warning = None
    if worst > threshold:
        warning = (f"up to {100 * worst:.1f}% of a test part of {report['dataset']} has a duplicate in training "
                   f"(threshold {100 * threshold:g}%): its test scores overstate generalisation (docs/leakage.md)")
        text = f"**Warning: {warning}.**\n\n{text}"
    return text, warning


def _span(values: list[int]) -> str:
    low, high = min(values, default=0), max(values, default=0)
    return f"{low:,}" if low == high else f"{low:,}–{high:,}"


def append_note(markdown: str | os.PathLike, leakage: str | os.PathLike, threshold: float) -> str | None:
    """Append the leakage note of the split's ``leakage`` file to the Markdown table ``markdown`` (atomically);
    log and return the warning, if any."""
    note, warning = leakage_note(read_json(leakage, "leakage file"), threshold)
    markdown = Path(markdown)
    text = markdown.read_text().rstrip("\n") + "\n\n" + note + "\n"
    with atomic_path(markdown) as tmp:
        Path(tmp).write_text(text)
    if warning:
        log.warning("leakage: %s", warning)
    return warning
