"""Model selection of the fair-comparison protocol: per outer fold, the configuration with the highest validation
accuracy on the inner hold-out, written with every candidate's scores and a checksum."""

from __future__ import annotations

import json
import logging
import os

import pyarrow as pa
import pyarrow.parquet as pq

from gnnbench.errors import DataError
from gnnbench.io import read_checked_json, sha256_json, write_json
from gnnbench.protocols.fair_comparison import SELECTION_FORMAT

log = logging.getLogger(__name__)

def select(part_files: list[str | os.PathLike], out: str | os.PathLike, *, dataset: str, model: str,
           fold: int) -> dict:
    """The chosen configuration of one outer fold: the highest validation accuracy, ties to the later
    configuration in grid order; writes every candidate's scores beside it (``selection.json``). A configuration
    whose run diverged (``status``) has no validation score and is never chosen; if every one diverged there is
    nothing to choose and a DataError says so."""
    rows = []
    for path in part_files:
        try:
            rows += pq.read_table(path).to_pylist()
        except (pa.ArrowException, OSError) as exc:
            raise DataError(f"model-selection file {path} is corrupt ({str(exc).splitlines()[0]}); delete it and "
                            "rerun snakemake") from None
    if not rows:
        raise DataError(f"no model-selection runs for {dataset} / {model} fold {fold}")
    rows.sort(key=lambda r: r["position"])
    best = None
    for row in rows:
        if row.get("status") == "diverged":
            continue
        if best is None or best["val_accuracy"] <= row["val_accuracy"]:
            best = row
    if best is None:
        raise DataError(f"{dataset} / {model} fold {fold}: every one of the {len(rows)} configuration(s) of the "
                        "model-selection grid diverged (NaN or infinite training loss), so none can be selected; "
                        "lower the learning rates of the grid (or add gradient_clipping) and rerun snakemake")
    candidates = [{**{k: v for k, v in r.items() if k != "config"}, "config": json.loads(r["config"])} for r in rows]
    chosen = next(c for c in candidates if c["position"] == best["position"])
    body = {"format": SELECTION_FORMAT, "dataset": dataset, "model": model, "fold": fold, "chosen": chosen,
            "candidates": candidates}
    write_json(out, {**body, "checksum": sha256_json(body)})
    log.info("%s / %s fold %d: chose config %s (val acc %.2f) among %d", dataset, model, fold, chosen["config_id"],
             chosen["val_accuracy"], len(candidates))
    return body


def read_selection(path: str | os.PathLike) -> dict:
    """A selection file, verified: its checksum must match its content (no hand edits)."""
    return read_checked_json(path, "selection file", "chosen", "redo the selection from the model-selection runs")
