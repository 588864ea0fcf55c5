"""Tuning in a suite: a benchmark block's ``tuning:`` resolved into each model's search (``docs/tuning.md``).

A benchmark block may ask for an equal tuning budget for every model (Tönshoff et al. 2023; Luo et al. 2024)::

    tuning: {trials: 20, per_round: 5, sampler: tpe, seed: 0, pruner: none, space: {learning_rate: ...}}
    models:
      GCN: pitfalls_GCN                                # tuned in the default space of its config
      Mine: {model: my_gnn.py:MyGNN, tuning: {space: {hidden_channels: ...}}}   # a space of its own

Each tuned model gets a :class:`Search`: ``trials`` trials asked ``per_round`` at a time of a seeded sampler, in
rounds ``0 .. ceil(trials / per_round) - 1`` (one cached job each, reading the records of every earlier round), then a
selection on validation scores only. The selected configuration trains under the label ``<label>-tuned`` exactly as
the protocol trains a published one, beside the published (untuned) row. Where each protocol tunes (its validation
data, seeds and score) is the protocol's: :meth:`gnnbench.protocols.base.Benchmark.tuning_scope` and its package's
``tune`` module. This module plans and selects (:func:`select_search`: the best validation score, ties to the lower
trial number, written with every candidate's score and a checksum); the round job is
:mod:`gnnbench.protocols.tuning_jobs`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from gnnbench.errors import ConfigError, DataError
from gnnbench.io import read_checked_json, read_json, sha256_json, write_json
from gnnbench.records import config_id, read_runs
from gnnbench.tuning.record import read_trials
from gnnbench.tuning.select import select
from gnnbench.tuning.space import apply, check_space, default_space, parse_space

log = logging.getLogger(__name__)

TUNED_SUFFIX = "-tuned"  # the label of a tuned model's scored runs: <label>-tuned
SAMPLERS = ("tpe", "random")
PRUNERS = ("asha", "median", "none")
DEFAULTS = {"trials": 20, "per_round": 5, "sampler": "tpe", "seed": 0, "pruner": "none", "min_epochs": 5}
MAIN_SEARCH = "main"  # the search of a protocol that tunes once per model (benchmarking-gnns, pitfalls)
SELECTION_FORMAT = 1


@dataclass
class Search:
    """The tuning of one model of a benchmark: its budget (``trials``, asked ``per_round`` at a time), the sampler
    and its seed, the pruner (and the epochs before it may stop a trial: the first rung of ``asha``, the first epoch
    count ``median`` compares), the space (as the suite declares it; None: the default space of the model's config,
    :func:`gnnbench.tuning.space.default_space`) and, for pitfalls, how many random splits it tunes on."""

    label: str
    trials: int
    per_round: int
    sampler: str
    seed: int
    pruner: str
    space: dict | None
    splits: int | None = None
    min_epochs: int = DEFAULTS["min_epochs"]

    @property
    def tuned_label(self) -> str:
        """The label of the model's scored runs with the selected configuration."""
        return self.label + TUNED_SUFFIX

    @property
    def rounds(self) -> int:
        """Rounds of the search: ``ceil(trials / per_round)``."""
        return -(-self.trials // self.per_round)

    def round_size(self, round_: int) -> int:
        """Trials asked in round ``round_`` (the last round may ask fewer)."""
        return min(self.per_round, self.trials - round_ * self.per_round)


def plan_tuning(benchmark, entry: dict, where: str, *, num_splits: int | None = None) -> None:
    """Resolve the ``tuning`` of a benchmark block (``entry``) and of its model entries into ``benchmark.tuning``
    (label -> :class:`Search`) and add each tuned model's scored runs under ``<label>-tuned``
    (:meth:`~gnnbench.protocols.base.Benchmark.add_tuned`). ``num_splits``: the random splits of a pitfalls
    benchmark (the only protocol with ``tuning.splits``); None for the others. Errors name the key."""
    shared = entry.get("tuning")
    for label, model in entry["models"].items():
        own = model.get("tuning") if isinstance(model, dict) else None
        if shared is None and own is None:
            continue
        model_where = f"{where}.models.{label}.tuning"
        settings = {**DEFAULTS, **(shared or {})}
        if own and "trials" in own:
            settings["trials"] = own["trials"]
        if settings["trials"] == 0:  # this model keeps its published configuration only
            continue
        space_where = f"{model_where}.space" if own and "space" in own else f"{where}.tuning.space"
        space = {**(settings.get("space") or {}), **((own or {}).get("space") or {})} or None
        config = benchmark.tuning_config(label)
        if space is not None:  # a wrong space fails while the suite loads
            check_space(parse_space(space, space_where), config, benchmark.protocol, space_where)
        elif not default_space(config, benchmark.protocol):
            raise ConfigError(f"{model_where}: model {config.get('model')} has no key to tune by default (no "
                              "learning rate, weight decay, dropout, width or depth); declare tuning.space for it or "
                              "set tuning.trials: 0")
        splits = settings.get("splits")
        if splits is not None and num_splits is None:
            raise ConfigError(f"{where}.tuning.splits: protocol {benchmark.protocol} does not tune on a subset of "
                              "random splits (pitfalls does; docs/tuning.md says where each protocol tunes); drop it")
        if num_splits is not None:
            splits = min(num_splits, 5) if splits is None else splits
            if splits > num_splits:
                raise ConfigError(f"{where}.tuning.splits: {splits} splits asked, but dataset {benchmark.dataset} has "
                                  f"{num_splits}; use at most {num_splits}")
        search = Search(label, int(settings["trials"]), int(settings["per_round"]), settings["sampler"],
                        int(settings["seed"]), settings["pruner"], space, splits, int(settings["min_epochs"]))
        if search.tuned_label in entry["models"]:
            raise ConfigError(f"{where}.models.{search.tuned_label}: the label of model {label}'s tuned runs is taken; "
                              "rename that model")
        benchmark.tuning[label] = search
        benchmark.add_tuned(label, search.tuned_label)


# ---------------------------------------------------------------------------------------------- selections


def select_search(records: list[str | os.PathLike], out: str | os.PathLike, *, job: dict) -> dict:
    """The selection of a search from the trial records of all its rounds: the best validation score, ties to the
    lower trial number (:func:`gnnbench.tuning.select.select`; test scores are never read), written with the chosen
    trial's values and full configuration, every candidate's score and a checksum (``selection.json``). No trial with
    a validation score (all pruned or diverged) is a one-line error naming the search."""
    runs = read_runs(records)
    if runs.empty:
        raise DataError(f"no trial records for {job['dataset']} / {job['model']} search {job['search']}; rerun "
                        "snakemake for its rounds")
    direction = "maximize" if bool(runs["higher_is_better"].iloc[0]) else "minimize"
    history = read_trials(list(records), job["search"])
    name = f"{job['dataset']} / {job['model']} {job['search']}"
    best = select(history, direction, search=name)
    config = apply(job["config"], best.params)
    candidates = [{"trial": t.number, "round": t.round, "params": t.params, "val_score": t.value, "state": t.state,
                   "pruned_epoch": t.pruned_epoch} for t in history]
    body = {"format": SELECTION_FORMAT, "protocol": job["protocol"], "dataset": job["dataset"],
            "model": job["model"], "search": job["search"], "fold": job["scope"].get("fold"),
            "direction": direction, "trials": len(candidates),
            "chosen": {"trial": best.number, "params": best.params, "val_score": best.value, "config": config,
                       "config_id": config_id(config)},
            "candidates": candidates}
    write_json(out, {**body, "checksum": sha256_json(body)})
    log.info("%s: chose trial %d of %d (validation %s): %s", name, best.number, len(candidates), best.value,
             best.params)
    return body



def read_tuning_selection(path) -> dict:
    """A tuning selection file (:func:`select_search`), verified: its checksum must
    match its content (no hand edits)."""
    return read_checked_json(path, "tuning selection file", "chosen", "select again from the trial records")


def tuned_run(config: dict, selection: str | None) -> tuple[dict, dict | None]:
    """(the run config, what the run's record adds to its ``extra``) of a scored run: ``config`` itself and None for a
    published configuration (``selection`` None); for a tuned model ``config`` with the selected trial's values (its
    ``seed`` kept: the protocol seeds its runs; :func:`gnnbench.tuning.space.apply`) and ``{"tuning":
    tuning_extra(...)}``."""
    if selection is None:
        return config, None
    body = read_tuning_selection(selection)
    return apply(config, body["chosen"]["params"]), {"tuning": tuning_extra(body)}


def tuning_extra(body: dict) -> dict:
    """What a tuned run's record keeps of its selection (``extra.tuning``): the search, its number of trials, the
    selected trial, its values and validation score, and how many trials failed (diverged)."""
    chosen = body["chosen"]
    return {"search": body["search"], "trials": body["trials"], "selected_trial": chosen["trial"],
            "params": chosen["params"], "val_score": chosen["val_score"],
            "failed": sum(c["state"] == "failed" for c in body["candidates"])}


def selection_extra(path) -> dict | None:
    """What the final runs that read selection file ``path`` (fair-comparison) add to their records' ``extra``: a
    tuned model's ``{"tuning": ...}`` (:func:`tuning_extra`), None for the grid search's selection."""
    data = read_json(path, "selection file")
    if not (isinstance(data, dict) and "search" in data):
        return None
    return {"tuning": tuning_extra(read_tuning_selection(path))}
