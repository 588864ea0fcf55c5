"""The round job of a search, under every protocol (``docs/tuning.md``; the selection job, which loads no torch, is
:func:`gnnbench.protocols.tuning.select_search`).

A round (:func:`run_round`) reads the trial records of every earlier round of its search
(:func:`gnnbench.tuning.record.read_trials`), asks the seeded sampler for its trials given them
(:func:`gnnbench.tuning.sampler.ask`), trains them where the protocol tunes (the protocol's
:meth:`~gnnbench.protocols.base.Protocol.train_trials`) and writes one run record per trial (stage ``trial``) with
its history, and a summary of the round (``round_{r}.json``). The records are the source of truth: the next round and
the selection read them, never the summary. A trial's record carries no test score; ``val_score`` is its selection
score (null when it was pruned or diverged); ``init`` is its number in the search (``extra.trial``).
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path

import pandas as pd

from gnnbench.data.meta import read_meta
from gnnbench.io import sha256_json, write_json
from gnnbench.protocols.registry import get_protocol
from gnnbench.records import history_frame, record, write_records
from gnnbench.tuning.pruning import Pruner
from gnnbench.tuning.record import read_trials, trial_extra
from gnnbench.tuning.sampler import Trial, ask
from gnnbench.tuning.space import apply, default_space, parse_space

log = logging.getLogger(__name__)
ROUND_FORMAT = 1


def search_space(job: dict) -> dict:
    """The search space of a job: the suite's (checked again, naming its key) or the default space of the model's
    config under the job's protocol."""
    if job["space"] is not None:
        return parse_space(job["space"], f"benchmarks.{job['dataset']}.tuning.space")
    return default_space(job["config"], job["protocol"])


def _curve(result: dict) -> dict[int, float]:
    """A trained trial's validation score per 0-based epoch, from its result's history."""
    frame = pd.DataFrame(result["history"])
    column = f"val_{result['score_name']}"
    if frame.empty or column not in frame:
        return {}
    return {int(e): float(v) for e, v in zip(frame["epoch"], frame[column], strict=True) if math.isfinite(v)}


def _state(result: dict) -> str:
    """A trained trial's state for the sampler and the pruner: pruned, failed (no score) or complete."""
    if result["pruned_epoch"] is not None:
        return "pruned"
    return "failed" if result["score"] is None or not math.isfinite(result["score"]) else "complete"


def run_round(*, job: dict, dataset_dir: str | os.PathLike, splits_path: str | os.PathLike,
              pe_path: str | os.PathLike | None, previous: list[str | os.PathLike], out: str | os.PathLike,
              records_out: str | os.PathLike, device: str = "auto", threads: int | None = None) -> list[dict]:
    """Round ``job["round"]`` of a search (:meth:`gnnbench.protocols.base.Benchmark.tuning_job` says what it is):
    ask the sampler for ``job["size"]`` trials given the records ``previous`` of the earlier rounds, train them,
    write their run records and history to ``records_out`` and the round's summary to ``out``; returns the records.
    A killed round keeps its finished trials in ``round_{r}.checkpoint.pt`` beside ``out`` and trains only the rest
    when it runs again."""
    protocol = get_protocol(job["protocol"])
    direction = protocol.tuning_direction(read_meta(dataset_dir))
    space = search_space(job)
    history = read_trials(list(previous), job["search"])
    asked = ask(space, history, job["size"], seed=job["seed"], sampler=job["sampler"], direction=direction)
    configs = [apply(job["config"], params) for params in asked]

    def pruner(monitor: str, earlier: list[dict] = ()) -> Pruner | None:
        """A fresh pruning rule for one fit of the round, reading the score ``monitor`` of the fit's rows; it compares
        with the earlier rounds' trials and ``earlier``, the results of this round's trials trained before the fit
        (trials one after another compete as in ASHA; a resumed round gives each fit the same ones)."""
        if job["pruner"] == "none":
            return None
        done = [Trial(-1, {}, r["score"], _state(r), _curve(r)) for r in earlier]
        return Pruner(job["pruner"], [*history, *done], monitor=monitor, direction=direction,
                      min_epochs=job["min_epochs"])

    out = Path(out)
    # the round's checkpoint holds its finished trials; it is this round's only when the job and the earlier
    # trials are the same (a rerun earlier round asks other trials)
    key = sha256_json({"job": job, "history": [[t.number, t.params, t.value, t.state, t.pruned_epoch]
                                               for t in history]})
    results = protocol.train_trials(job=job, configs=configs, space=space, dataset_dir=dataset_dir,
                                    splits_path=splits_path, pe_path=pe_path,
                                    checkpoint=out.with_name(f"{out.stem}.checkpoint.pt"), checkpoint_key=key,
                                    pruner=pruner, device=device, threads=threads)
    rows, histories, summary = [], [], []
    for i, (params, config, result) in enumerate(zip(asked, configs, results, strict=True)):
        pruned = result["pruned_epoch"]
        value = result["score"]
        value = None if pruned is not None or value is None or not math.isfinite(value) else float(value)
        trial = Trial(job["first"] + i, dict(params), value, "complete", pruned_epoch=pruned, round=job["round"])
        fields = {**result["fields"], "val_score": value, "test_score": None, "test_loss": None}
        row = record(protocol=job["protocol"], dataset=job["dataset"], model=job["model"], config=config,
                     stage="trial", init=trial.number, extra=trial_extra(trial, job["search"], job["round"]),
                     **fields)
        rows.append(row)
        # the history keeps no test part either: a trial is scored on validation only
        frame = history_frame(result["history"], row["run_id"], score=result["score_name"])
        frame["test_loss"], frame["test_score"] = math.nan, math.nan
        histories.append(frame)
        summary.append({"trial": trial.number, "params": trial.params, "val_score": value, "status": row["status"],
                        "pruned_epoch": pruned})
        log.info("%s / %s %s trial %d: %s -> validation %s%s", job["dataset"], job["model"], job["search"],
                 trial.number, trial.params, value, "" if pruned is None else f" (pruned after epoch {pruned})")
    write_records(records_out, rows, history=histories)
    write_json(out, {"format": ROUND_FORMAT, "protocol": job["protocol"], "dataset": job["dataset"],
                     "model": job["model"], "search": job["search"], "round": job["round"], "direction": direction,
                     "trials": summary})
    return rows
