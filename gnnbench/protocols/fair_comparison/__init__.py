"""Protocol "fair-comparison" — Errica et al., "A Fair Comparison of Graph Neural Networks for Graph
Classification" (ICLR 2020, arXiv:1912.09893; §3 and §5).

Risk assessment by an outer stratified k-fold cross-validation (10 folds); inside outer fold i, model selection
on its training part only: every configuration of the model's grid trains once on the inner-training graphs with
early stopping on the inner hold-out (≈10 %), and the configuration with the highest validation accuracy at its
early-stopping epoch wins (ties: the later configuration in grid order, the original's ``≤``); a configuration
whose run diverged (NaN or infinite loss: ``status`` "diverged", :mod:`gnnbench.training.best_epoch`) is never
chosen. A final run that diverges has no score: it is recorded (``status``, ``diverged_epoch``) and shown in the
tables, and the fold's score is the mean of its other final runs. The winner then
trains ``final_runs`` (3) times from scratch; each final run's score is the test accuracy at its early-stopping
epoch, the fold's score is their mean, and the reported value is mean ± population std over the folds. The test
fold is never seen by selection. Training procedure: :mod:`gnnbench.training.best_epoch`.

Splits are data: a split file whose fold i is ``{train: inner-train, val: inner hold-out, test: outer fold i}``
— the paper's released files (scheme ``published``) or gnnbench's own seeded ones in the same structure
(``stratified_kfold`` with 10 folds and ``val_fraction`` 0.1).

Decision (final runs' hold-out, ``final_holdout``; ``docs/protocols/fair-comparison.md``): the paper says each
final run holds out "a random fraction (10%)" of the outer training fold (Errica et al. §5); the released code
reuses the model-selection hold-out for all three (diningphil/gnn-comparison
``evaluation/risk_assessment/K_Fold_Assessment.py``, ``_risk_assessment_helper``). Default ``fresh``: final run r
of fold i draws its own stratified 10 % hold-out from the outer training fold (scikit-learn ``train_test_split``,
seeded per fold and run), as the paper describes; ``selection`` reproduces the released code path.

Grids are data: a preset's ``grid`` (key → values, Cartesian product in the written order, last key fastest) —
a model entry's ``grid`` replaces or adds dimensions, ``set`` fixes a value (and removes that dimension). Every
value is checked against the protocol's keys before anything runs.

The DAG (every step a cached file):

    inner/part{p}.parquet  (grid_per_job configurations of one outer fold, one process)
        → selection.json   (per outer fold: the chosen configuration and every candidate's validation scores)
        → final.parquet    (final_runs trainings of the chosen configuration)
        → tables           (per dataset: results/tables/{dataset}.*, per fold: results/tables/{dataset}_folds.*)

A job's one checkpoint (``inner/part{p}.checkpoint.pt``, ``final.checkpoint.pt``: a job of the training engine,
:class:`gnnbench.training.engine.Job`) keeps every finished training (by an id from its config, fold, seed and data)
and the epochs of the one in training (at most every ``CHECKPOINT_SECONDS``): a job stopped before its end resumes
there and trains only what is missing; a finished job run again trains afresh. ``selection.json`` carries a checksum of
its content: a hand-edited file is refused.
Stacks (the benchmark's ``stack``, off by default): the grid points of a job that differ only in
:data:`MEMBER_KEYS` (learning rate and schedule, ``l2``, dropout, stopping rule, patience, epochs, time limit) — and
in the model's keys a stack can mix (GIN's ``train_eps``: ε frozen at 0 in members that do not learn it) — have one
*shape* and train as one wide stack (:class:`~gnnbench.training.best_epoch_stack.HoldoutStack`): each member with its
own seed and initialisation (exactly its run alone's), its own settings, early stopping and scored epoch; the members
share the mini-batch order (the first member's stream) and the dropout stream, so with dropout a member's results are
those of its configuration on another batch order and other masks than its run alone (without dropout, the first
member's are its run alone's). Jobs are then made of whole shape groups (:meth:`FairComparisonBenchmark.parts`) and
the final runs of a fold (with ``final_holdout: selection``) train as one stack too. Where the model does not widen
the runs train one after another.

Shared trajectories (with ``stack``): configurations that differ only in :data:`OBSERVER_KEYS` (``early_stopping``,
``patience``, ``epochs``, ``time_limit_hours``: only the stopping rules read them; every grid of the paper has
``early_stopping: [accuracy, loss]``) take the same training steps, so they train as ONE trajectory
(:func:`trajectories`) whose members are the configurations, each with its own rules
(:func:`gnnbench.training.best_epoch.stopping_rules`: ``Diverged``, ``Patience`` on its criterion, ``MaxEpochs``,
``TimeLimit``, in the order of a run alone); each is scored at its own last improving epoch and stopped at its own epoch
(its history ends there), and the trajectory trains until all its members have stopped — as a block of a wide stack, or
as one ``holdout_fit`` trajectory where the model does not widen (DiffPool, ECC). To make each configuration's result
exactly its run alone, the seed of a configuration is then computed from the configuration without the observer keys:
with ``stack`` the seeds differ from those without it (the results differ by seed, as they already do by the stack's
shared batch order), and configurations that differ only in the stopping rule are the same training observed twice —
exactly what running them separately with those seeds gives. Each configuration still has its own row, record and result
(id from the trajectory's id and its stopping settings); the selection and the tables are unchanged. The final runs (one
configuration) are not affected.

Seeds: configuration c of fold i trains with a seed from ``SeedSequence(seed, spawn_key=(i, c))`` (c from the
config's hash — with ``stack``, of the config without :data:`OBSERVER_KEYS` — so adding grid points changes no other
run; a model file counts by its name, not its folder: :func:`seed_key`); final run r from spawn key
``(i, 2**31 + r)``.


The package: :mod:`.plan` (the protocol object: a suite's benchmark block → its grids and jobs), :mod:`.grid`
(configurations, their shapes, trajectories and seeds), :mod:`.train` (the model-selection and final-run jobs),
:mod:`.select` (the selection of each outer fold) and :mod:`.tables`; this module holds the names, files and
settings they share.
"""

from __future__ import annotations

from gnnbench import papers, paths

NAME = papers.PROTOCOLS[papers.ERRICA2020]
FOLD_DIR = paths.FOLD_DIR
INNER_FILE = paths.INNER_FILE
SELECTION_FILE = paths.SELECTION_FILE
FINAL_FILE = paths.FINAL_FILE
FINAL_HISTORY_FILE = paths.FINAL_HISTORY_FILE
INNER_RECORD_JOB, FINAL_RECORD_JOB = "fold{fold}_inner{part}", "fold{fold}_final"  # run-record files' job names
INNER_RECORD_JOB, FINAL_RECORD_JOB = "fold{fold}_inner{part}", "fold{fold}_final"  # run-record files' job names
TABLE_FILE = paths.DATASET_TABLE
FOLDS_TABLE_FILE = paths.FOLDS_TABLE
TABLE_FORMATS = paths.TABLE_FORMATS
TRAINING_DEFAULTS = papers.TRAINING_DEFAULTS[papers.ERRICA2020]  # training keys every run needs (gnnbench.papers)
TRAINING_REQUIRED = ("batch_size", "learning_rate", "epochs")
# keys only the trainer reads: configurations differing in these alone build the same network
TRAINING_KEYS = (*TRAINING_DEFAULTS, *TRAINING_REQUIRED, "scheduler_step_size", "scheduler_gamma")
DEFAULT_FINAL_RUNS, DEFAULT_GRID_PER_JOB = 3, 8
DEFAULT_FINAL_RUNS, DEFAULT_GRID_PER_JOB = 3, 8
# keys the members of one wide stack may differ in (module docstring, "Stacks"): the rest of a configuration is its
# shape key; the batch size, optimiser and clipping threshold are shared by a stack's members
MEMBER_KEYS = ("learning_rate", "l2", "dropout", "early_stopping", "patience", "scheduler", "scheduler_step_size",
               "scheduler_gamma", "epochs", "time_limit_hours")
# keys only the stopping rules read (gnnbench.training.best_epoch.OBSERVER_KEYS): with stacks, configurations differing
# in these alone share one training trajectory (module docstring, "Stacks")
OBSERVER_KEYS = ("early_stopping", "patience", "epochs", "time_limit_hours")
HOLDOUTS = ("fresh", "selection")
FINAL_VAL_FRACTION = 0.1  # the paper's "random fraction (10%)"
SELECTION_FORMAT = 1
