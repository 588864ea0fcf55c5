"""Protocol "heterophily" — Platonov et al., "A critical look at the evaluation of GNNs under heterophily: are we
really making progress?" (ICLR 2023, arXiv:2302.11640; the released code yandex-research/heterophilous-graphs).

Transductive node classification on one graph with the ten splits that come with the data (split scheme ``given``:
:mod:`gnnbench.data.generators.heterophily`). Every model trains with the same procedure (the released ``train.py``,
whose defaults every experiment of the paper used): full batch, AdamW (lr 3·10⁻⁵, no weight decay on biases and
normalisation parameters, weight decay 0 by default), 1,000 steps with a linear warmup (none by default), the model
evaluated after every step and the test score of its best validation step reported
(:mod:`gnnbench.training.split_stack`); accuracy, or ROC AUC for the binary datasets, in percent.

Model selection, as the paper did: the number of layers is chosen per model among 1..5 (the released
``scripts/run_all_experiments.sh`` trains l1..l5; ``notebooks/results.ipynb`` keeps the count of the highest mean
validation score over the ten splits and reports that count's test mean ± std). A benchmark block's ``num_layers``
(default [1, 2, 3, 4, 5]) lists the candidates of every model that takes the key ``num_layers`` (the zoo's, a user's
model with that argument) unless the model's ``set`` fixes it; any other model has one candidate, its config as it
is (``layers0``).

What one job is: one candidate — the ten splits of one model and layer count — as ONE stack (the same graph,
per-split masks, per-split initialisations) through the engine's ``fit``, with one checkpoint and resume path
(``results/runs/{dataset}/{model}/layers{L}/``; run records of stage ``inner`` at job ``layers{L}``, with every
part's score at the best validation step). Then one selection job per model (:mod:`.select`, records only, no
torch): the candidate of the highest mean validation score; its runs are written again as the model's scored runs
(stage ``run``, job ``selected``), which the tables and the paired tests read.

The package: :mod:`.plan` (the protocol object), :mod:`.train` (the candidate jobs), :mod:`.select` (the selection
job), :mod:`.tables` (the tables); this module holds the names, files and settings they share.
"""

from __future__ import annotations

from gnnbench import papers, paths

NAME = papers.PROTOCOLS[papers.PLATONOV2023]
PAPER = papers.PLATONOV2023
TRAINING_DEFAULTS = papers.TRAINING_DEFAULTS[PAPER]
DEFAULT_LAYERS = (1, 2, 3, 4, 5)  # scripts/run_all_experiments.sh: l1..l5 of every model
CANDIDATE_JOB = "layers{layers}"  # a candidate's run-record job name (stage inner)
SELECTED_JOB = "selected"  # the chosen candidate's runs as the model's scored runs (stage run)
RUN_DIR = paths.LAYERS_DIR
SELECTION_FILE = paths.LAYERS_SELECTION
TABLE_FILE = paths.DATASET_TABLE
TABLE_FORMATS = paths.TABLE_FORMATS
SUITE_TABLE_NAME = NAME  # the suite-wide table: every dataset × model (the paper's Table 4 and Table 2 layout)
SUITE_TABLE = paths.TABLE_FILE.replace("{table}", SUITE_TABLE_NAME)
