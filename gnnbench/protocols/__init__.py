"""Evaluation protocols: how models are compared fairly (``docs/protocols/index.md``).

- ``benchmarking-gnns`` — Dwivedi et al.: fixed splits (or k-fold CV), parameter budgets, plateau schedule,
  last-epoch scores (:mod:`gnnbench.protocols.benchmarking_gnns`);
- ``pitfalls`` — Shchur et al.: 100 random node splits × 20 initialisations, early stopping with best-weights
  restore, relative accuracy and ranks (:mod:`gnnbench.protocols.pitfalls`);
- ``fair-comparison`` — Errica et al.: outer 10-fold cross-validation, model selection by grid search on an inner
  hold-out, three final runs of the winner (:mod:`gnnbench.protocols.fair_comparison`).

A suite's benchmark block names its protocol; :func:`get_protocol` returns it. See
:mod:`gnnbench.protocols.base` for what a protocol decides. The report jobs ask :func:`tables_module` for a
protocol's tables alone (no plan, no models, no torch).
"""

from __future__ import annotations

import importlib

from gnnbench.errors import ConfigError
from gnnbench.protocols.base import Protocol

DEFAULT_PROTOCOL = "benchmarking-gnns"
PLANNED: dict[str, str] = {}  # protocols announced but not yet available: name -> why
PACKAGES = {"benchmarking-gnns": "benchmarking_gnns", "pitfalls": "pitfalls", "fair-comparison": "fair_comparison"}


def _registry() -> dict[str, Protocol]:
    from gnnbench.protocols.benchmarking_gnns.plan import BenchmarkingGNNs
    from gnnbench.protocols.fair_comparison.plan import FairComparison
    from gnnbench.protocols.pitfalls.plan import Pitfalls

    return {p.name: p for p in (BenchmarkingGNNs(), Pitfalls(), FairComparison())}


def protocol_names() -> list[str]:
    """The names of the available protocols (``benchmarking-gnns``, ``pitfalls``, ``fair-comparison``)."""
    return list(_registry())


def get_protocol(name: str, where: str = "protocol") -> Protocol:
    """The protocol called ``name``; an unknown name raises a ConfigError that names ``where`` (the suite key or
    command-line option it came from) and lists the available ones."""
    registry = _registry()
    if name in registry:
        return registry[name]
    if name in PLANNED:
        raise ConfigError(f"{where}: protocol {name!r}: {PLANNED[name]}; use one of {', '.join(registry)}")
    raise ConfigError(f"{where}: unknown protocol {name!r}; choose one of {', '.join(registry)}")


def tables_module(name: str):
    """The tables module of protocol ``name`` (``gnnbench.protocols.<package>.tables``: ``dataset_tables`` and, where
    the protocol has suite-wide tables, ``suite_tables``), imported without the protocol's plan, models or torch, for
    the workflow's report jobs; an unknown name is a ConfigError."""
    if name not in PACKAGES:
        raise ConfigError(f"protocol: unknown protocol {name!r}; choose one of {', '.join(PACKAGES)}")
    return importlib.import_module(f"gnnbench.protocols.{PACKAGES[name]}.tables")
