"""Trials in the run record: the record, not a sampler database, is a search's source of truth.

Each trial is one row of the run record (:mod:`gnnbench.records`, stage ``trial``): ``model`` the suite's model
label, ``split`` the split the search runs on (fair-comparison: the outer fold), ``init`` the trial's number (so
that two trials of one config stay two runs), ``val_score`` its selection score (null when it was pruned before its
end or diverged), ``test_score`` and ``test_loss`` always null (a trial is never scored on test), ``seconds`` its
training seconds, and ``extra``:

    {"search": <search key>, "round": r, "trial": t, "params": {...sampled values...}, "pruned_epoch": e | null}

Its per-epoch validation scores are the job's history record (:func:`gnnbench.records.history_path`), written beside
it by :func:`gnnbench.records.write_records` as for every run. :func:`read_trials` reads both back as the search's
:class:`~gnnbench.tuning.sampler.Trial` list: state ``pruned`` where ``pruned_epoch`` is set (or the stop reason is
``pruned``), ``failed`` where there is no finite ``val_score`` (diverged), else ``complete``; ``intermediate`` the
history's ``val_score`` per epoch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from gnnbench.errors import DataError
from gnnbench.records import extras, history_path, read_histories, read_runs, record, record_files
from gnnbench.tuning.sampler import Trial

STAGE = "trial"


def trial_extra(trial: Trial, search: str, round: int) -> dict:
    """The ``extra`` of a trial's row (module docstring)."""
    return {"search": search, "round": int(round), "trial": int(trial.number), "params": dict(trial.params),
            "pruned_epoch": None if trial.pruned_epoch is None else int(trial.pruned_epoch)}


def trial_rows(trials: Sequence[Trial], configs: Sequence[dict], *, protocol: str, dataset: str, model: str,
               search: str, round: int, split: int = 0, seed: int | None = None,
               fields: Sequence[Mapping] | None = None, default_variant: str | None = None, **common) -> list[dict]:
    """The run-record rows (:func:`gnnbench.records.record`, stage ``trial``) of a round's ``trials``, trained with
    ``configs`` (``configs[i]``: trial i's full config) on ``split`` with ``seed`` (default: each config's): extra as
    the module docstring says, ``val_score`` the trial's value, no test score; ``fields[i]``: trial i's own columns
    (epochs, scored_epoch, stop_reason, status, train_score, val_loss, seconds, num_params, ...), ``common``: columns
    every row shares (metric, higher_is_better, device, versions, ...)."""
    if len(configs) != len(trials) or (fields is not None and len(fields) != len(trials)):
        raise ValueError("trial_rows: one config (and one fields mapping) per trial")
    rows = []
    for i, trial in enumerate(trials):
        own = {**common, **(fields[i] if fields is not None else {})}
        own.update(val_score=trial.value, test_score=None, test_loss=None)
        if trial.pruned_epoch is not None and own.get("stop_reason") is None:
            own["stop_reason"] = "pruned"
        rows.append(record(protocol=protocol, dataset=dataset, model=model, config=configs[i], stage=STAGE,
                           split=split, seed=seed, init=trial.number, extra=trial_extra(trial, search, round),
                           default_variant=default_variant, **own))
    return rows


def read_trials(records, search: str, *, histories=None) -> list[Trial]:
    """The trials of search ``search`` in trial-number order, from run records (a DataFrame of
    :func:`gnnbench.records.read_runs`, or record files / a folder) and their history records (``histories``: a
    DataFrame; default: read beside the given files, none for a DataFrame). A trial number recorded twice is a
    one-line DataError naming the search."""
    import pandas as pd

    if isinstance(records, pd.DataFrame):
        runs = records
    else:
        runs = read_runs(records)
        if histories is None:
            files = [history_path(p) for p in record_files(records)]
            histories = read_histories([p for p in files if p.is_file()])
    runs = runs[runs["stage"] == STAGE]
    chosen = [(row, extra) for row, extra in zip(runs.to_dict("records"), extras(runs), strict=True)
              if extra.get("search") == search]
    curves: dict[str, dict[int, float]] = {}
    if histories is not None and len(histories):
        ids = {row["run_id"] for row, _ in chosen}
        part = histories[histories["run_id"].isin(ids)]
        for run_id, epoch, score in zip(part["run_id"], part["epoch"], part["val_score"], strict=True):
            if score is not None and math.isfinite(score):
                curves.setdefault(run_id, {})[int(epoch)] = float(score)
    trials: dict[int, Trial] = {}
    for row, extra in chosen:
        number = int(extra["trial"])
        if number in trials:
            raise DataError(f"search {search}: trial {number} is recorded twice in the run records; delete the "
                            "records of the rounds that wrote it and rerun them")
        value = row["val_score"]
        value = None if value is None or not math.isfinite(value) else float(value)
        pruned = extra.get("pruned_epoch")
        if pruned is not None or row.get("stop_reason") == "pruned":
            state = "pruned"
        else:
            state = "failed" if value is None or row.get("status") == "diverged" else "complete"
        trials[number] = Trial(number, dict(extra["params"]), value, state, curves.get(row["run_id"], {}),
                               None if pruned is None else int(pruned), extra.get("round"))
    return [trials[n] for n in sorted(trials)]

