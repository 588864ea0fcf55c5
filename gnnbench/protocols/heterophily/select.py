"""The selection job of the heterophily protocol: per model, the layer count of the highest mean validation score
over the splits (Platonov et al.'s ``notebooks/results.ipynb``), read from the candidates' run records only (no test
score takes part, no torch); the chosen candidate's runs become the model's scored runs (stage ``run``)."""

from __future__ import annotations

import json
import math
import os

from gnnbench.errors import DataError
from gnnbench.io import write_json
from gnnbench.protocols.heterophily import NAME, PAPER
from gnnbench.records import history_path, read_histories, read_runs, record, write_records
from gnnbench.reporting.heterophily import candidates, select_layers

PASSED = ("architecture", "variant", "split_scheme", "metric", "higher_is_better", "train_score", "val_score",
          "test_score", "train_loss", "val_loss", "test_loss", "epochs", "scored_epoch", "stop_reason", "status",
          "diverged_epoch", "num_params", "seconds", "device")


def _value(value):
    """A record value read back through pandas: NaN (a null) as None."""
    return None if isinstance(value, float) and math.isnan(value) else value


def select(record_files: list[str | os.PathLike], records_out: str | os.PathLike,
           selection_out: str | os.PathLike) -> dict:
    """Choose one model's layer count from its candidates' run records (``record_files``), write the chosen runs again
    as stage ``run`` (with their history) to ``records_out`` and the choice to ``selection_out``; returns it."""
    runs = read_runs(record_files)
    table = candidates(runs)
    if runs["model"].nunique() != 1 or table.empty:
        raise DataError(f"selection: the records {', '.join(map(str, record_files))} must hold the candidates of one "
                        "model; rerun their training jobs")
    model = str(runs["model"].iloc[0])
    chosen = select_layers(table).get(model)
    if chosen is None:
        raise DataError(f"selection: every split of every candidate of {model} diverged (NaN or infinite loss); "
                        "no layer count can be chosen — lower lr or check the model")
    inner = runs[runs["stage"] == "inner"]
    picked = inner[[json.loads(e or "{}").get("layers", 0) == chosen for e in inner["extra"]]]
    rows, ids = [], {}
    for r in picked.to_dict("records"):
        extra = {**json.loads(r["extra"] or "{}"), "selected_on": "mean validation score over the splits"}
        new = record(protocol=NAME, default_variant=PAPER, dataset=r["dataset"], model=r["model"],
                     config=json.loads(r["config"]), stage="run", split=r["split"], seed=r["seed"], init=r["init"],
                     versions=r["versions"], extra=extra, **{k: _value(r[k]) for k in PASSED})
        ids[r["run_id"]] = new["run_id"]
        rows.append(new)
    histories = read_histories([history_path(f) for f in record_files])
    history = histories[histories["run_id"].isin(ids)].copy()
    history["run_id"] = history["run_id"].map(ids)
    write_records(records_out, rows, history=history.reset_index(drop=True))
    selection = {"model": model, "layers": chosen, "selected_on": "val_mean",
                 "candidates": [{k: _value(v) for k, v in c.items()} for c in table.to_dict("records")]}
    write_json(selection_out, selection)
    return selection
