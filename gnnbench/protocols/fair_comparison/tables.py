"""The tables of the fair-comparison protocol: per dataset and per outer fold."""

from __future__ import annotations

import numpy as np

from gnnbench.data.meta import read_meta
from gnnbench.protocols.fair_comparison.grid import num_layers
from gnnbench.protocols.fair_comparison.select import read_selection
from gnnbench.records import read_tables
from gnnbench.reporting import fair_comparison as report


def dataset_report(*, dataset: str, dataset_dir, models: dict[str, dict], outputs: dict[str, str],
                   presets: dict[str, str | None] | None = None) -> None:
    """Per-dataset tables from the selection and final files of every model (``models``: label → {"selections":
    [...], "finals": [...]} in fold order; ``presets``: label → the suite's preset, for the comparison with the
    paper)."""
    meta = read_meta(dataset_dir)
    folds = []
    for label, files in models.items():
        for sel_path, final_path in zip(files["selections"], files["finals"], strict=True):
            selection = read_selection(sel_path)
            finals = read_tables([final_path], "final-runs").to_dict("records")
            chosen = selection["chosen"]
            scored = [f for f in finals if f.get("status") != "diverged"]  # a diverged final run has no score
            folds.append({"model": label, "architecture": chosen["config"]["model"], "fold": selection["fold"],
                          "config_id": chosen["config_id"], "candidates": len(selection["candidates"]),
                          "diverged_candidates": sum(c.get("status") == "diverged" for c in selection["candidates"]),
                          "layers": num_layers(chosen["config"]), "val_accuracy": chosen["val_accuracy"],
                          "test_accuracy": float(np.mean([f["test_accuracy"] for f in scored])) if scored else np.nan,
                          "train_accuracy": float(np.mean([f["train_accuracy"] for f in scored])) if scored else np.nan,
                          "test_runs": [f["test_accuracy"] for f in finals],
                          "diverged_runs": len(finals) - len(scored),
                          "time_limited": sum(f["stop_reason"] == "time_limit" for f in finals),
                          "config": report.config_summary(chosen["config"]), "chosen_config": chosen["config"]})
    report.write_reports(dataset, meta, folds, outputs, presets)
