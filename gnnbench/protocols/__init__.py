"""Evaluation protocols: how models are compared fairly (``docs/protocols/index.md``).

- ``benchmarking-gnns`` — Dwivedi et al.: fixed splits (or k-fold CV), parameter budgets, plateau schedule,
  last-epoch scores (:mod:`gnnbench.protocols.benchmarking_gnns`);
- ``pitfalls`` — Shchur et al.: 100 random node splits × 20 initialisations, early stopping with best-weights
  restore, relative accuracy and ranks (:mod:`gnnbench.protocols.pitfalls`);
- ``fair-comparison`` — Errica et al.: outer 10-fold cross-validation, model selection by grid search on an inner
  hold-out, three final runs of the winner (:mod:`gnnbench.protocols.fair_comparison`).

A suite's benchmark block names its protocol; :func:`gnnbench.protocols.registry.get_protocol` returns it. See
:mod:`gnnbench.protocols.base` for what a protocol decides. This package module imports nothing: a job that makes a
protocol's tables (:mod:`.pitfalls.tables`, ...) loads neither the other protocols nor the planning code.
"""
