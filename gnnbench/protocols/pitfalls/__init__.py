"""Protocol "pitfalls" — Shchur et al., "Pitfalls of Graph Neural Network Evaluation" (arXiv:1811.05868).

Transductive node classification on one graph. Splits: ``random_per_class`` — 100 random splits of 20 training
and 30 validation nodes per class, the rest test (the same splits for every model); ``random_sizes`` and
``given`` (the Planetoid public split) for the paper's single-split comparison. Every model trains 20 random
initialisations per split, full batch, with the same procedure for every model (Shchur et al.; the released
code, shchur/gnn-benchmark ``gnnbench/train.py`` and ``config/train.conf.yaml``): Adam (TF1's update), the model's
L2 terms in the loss, at most ``num_epochs`` (100,000) epochs, early stopping when the total validation loss
(data + L2) has not improved for ``early_stopping_tolerance`` (50) epochs, then the weights of the best
validation-loss epoch are restored and scored. Label propagation runs its propagation steps under its own rule
(``gat_tol``) with one run per split (it has no weights). Models: the paper's two-layer networks
(:func:`gnnbench.models.stacked.build_stacked_model`) with the published configs
(``gnnbench/config/presets/pitfalls.yaml``).

What one job is. The protocol is 2,000 runs per model and dataset; one process per run would spend most of its
time starting Python and importing torch. A job (``results/runs/{dataset}/{model}/chunk{c}/``) trains
``splits_per_job`` consecutive splits of one model, and within a split all initialisations **at once** as one
stacked model (:mod:`gnnbench.training.init_stack`): one forward/backward pass per epoch for the whole stack,
each initialisation with its own early stopping, finished ones dropped from the stack. A stack holds the
initialisations of one split only: several splits in one stack would share the dropout stream (a split's results
would then depend on its stack mates, not only on its seed) and need the union of their receptive fields; and on a
CPU a member's cost per epoch does not fall with larger stacks (``docs/performance.md``), so the only saving would
be the per-epoch fixed cost. A model without a hand-written stacked form (another zoo's, a user's) is stacked by
torch.func (:mod:`gnnbench.training.functional_stack`), or, where it cannot be vmapped, its initialisations train
one after another in the same process. Seeds: initialisation i of split k draws its weights from
``SeedSequence(seed, spawn_key=(k, i))`` and the split's dropout masks from ``SeedSequence(seed, spawn_key=(k,))``,
so results do not depend on how splits are grouped into jobs.
A job writes ``runs.parquet`` (one row per split × initialisation), ``history.parquet`` (per epoch and run: train
and validation loss, validation accuracy) and ``metrics.json`` (config, timing, versions; ``test_accuracy_mean`` over
the runs that did not diverge — null if none — and ``diverged`` their count), and checkpoints between
epochs (at most every ``CHECKPOINT_SECONDS``) and after every split; a killed job resumes to the same results.
An initialisation whose training or validation loss becomes NaN or infinite stops at that epoch and its row says
so: ``status`` "diverged" (else "completed"), ``diverged_epoch``, ``stop_reason`` "diverged" and NaN scores
(:mod:`gnnbench.training.init_stack`); the other initialisations of its stack train on unaffected, and the
tables count diverged runs instead of averaging them (:mod:`gnnbench.reporting.pitfalls`).

Reports: per dataset a table (mean ± std of test accuracy over all completed runs, sample std as the paper's
script) and a box plot; per suite the Table-1 matrix with relative accuracy and average rank (Table 2a) over the
random-split benchmarks, and, for benchmarks that name ``compare_with``, the fixed-split versus random-splits ranking
(Table 2b).


The package: :mod:`.plan` (the protocol object: a suite's benchmark block → its jobs), :mod:`.train` (the
training jobs) and :mod:`.tables` (the tables); this module holds the names, files and settings they share.
"""

from __future__ import annotations

from gnnbench import papers, paths

NAME = papers.PROTOCOLS[papers.SHCHUR2018]
RUN_DIR = paths.CHUNK_DIR
RUN_OUTPUTS = ("runs.parquet", "history.parquet", "metrics.json")
RECORD_JOB = "chunk{chunk}"  # a job's run-record file: paths.RECORD_FILE with this job name
TABLE_FILE = paths.DATASET_TABLE
PLOT_FILE = paths.BOX_PLOT
SUITE_TABLE_NAME, RANKING_TABLE_NAME = NAME, f"{NAME}_split_ranking"  # the suite-wide tables
SUITE_TABLE_NAME, RANKING_TABLE_NAME = NAME, f"{NAME}_split_ranking"  # the suite-wide tables
SUITE_TABLE = paths.TABLE_FILE.replace("{table}", SUITE_TABLE_NAME)
RANKING_TABLE = paths.TABLE_FILE.replace("{table}", RANKING_TABLE_NAME)
TABLE_FORMATS = paths.TABLE_FORMATS
PLOT_FORMATS = paths.PLOT_FORMATS
TRAINING_DEFAULTS = papers.TRAINING_DEFAULTS[papers.SHCHUR2018]  # gnn-benchmark's config/train.conf.yaml
DEFAULT_INITS, DEFAULT_SPLITS_PER_JOB = 20, 10
DEFAULT_INITS, DEFAULT_SPLITS_PER_JOB = 20, 10
PROPAGATION_MODELS = ("LabelProp",)
