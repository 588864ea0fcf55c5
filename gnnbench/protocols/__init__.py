"""Evaluation protocols: how models are compared fairly (``docs/protocols/index.md``).

- ``benchmarking-gnns`` — Dwivedi et al.: fixed splits (or k-fold CV), parameter budgets, plateau schedule,
  last-epoch scores (:mod:`gnnbench.protocols.benchmarking_gnns`);
- ``pitfalls`` — Shchur et al.: 100 random node splits × 20 initialisations, early stopping with best-weights
  restore, relative accuracy and ranks (:mod:`gnnbench.protocols.pitfalls`);
- ``fair-comparison`` — Errica et al.: outer 10-fold cross-validation, model selection by grid search on an inner
  hold-out, three final runs of the winner (:mod:`gnnbench.protocols.fair_comparison`).

A suite's benchmark block names its protocol; :func:`gnnbench.protocols.registry.get_protocol` returns it. See
:mod:`gnnbench.protocols.base` for what a protocol decides. This package module imports only the papers leaf: a job
that makes a protocol's tables asks :func:`tables_module` for them and loads neither the other protocols nor the
planning code, the models or torch.
"""

from __future__ import annotations

import importlib

from gnnbench.papers import protocol_paper


def tables_module(name: str):
    """The tables module of protocol ``name`` (``gnnbench.protocols.<package>.tables``, the package named as the
    protocol with ``_`` for ``-``: ``dataset_tables`` and, where the protocol has suite-wide tables,
    ``suite_tables``), imported without the protocol's plan, models or torch, for the workflow's report jobs; an
    unknown name is a ConfigError (:func:`gnnbench.papers.protocol_paper`)."""
    protocol_paper(name)
    return importlib.import_module(f"gnnbench.protocols.{name.replace('-', '_')}.tables")


def tune_module(name: str):
    """The tuning module of protocol ``name`` (``gnnbench.protocols.<package>.tune``: ``train_trials``, one round's
    trials trained where the protocol tunes; ``docs/tuning.md``), imported when a round job runs (it loads torch)."""
    protocol_paper(name)
    return importlib.import_module(f"gnnbench.protocols.{name.replace('-', '_')}.tune")
