"""Protocol "benchmarking-gnns" — Dwivedi et al., "Benchmarking Graph Neural Networks" (arXiv:2003.00982).

Splits: the split that comes with the data (``given``: SBM, TSP, ZINC, ...; WikiCS's 20 node splits of its one
graph, trained full-batch; OGBL-COLLAB's evaluation pairs), the released cross-validation folds (``published``:
the TU sets' 10 and CSL's 5 index files) or seeded stratified k-fold cross-validation of graphs. A run is one model
config × one seed × one fold (:func:`gnnbench.training.last_epoch.train_run`; link prediction:
:mod:`gnnbench.training.link_prediction`, whose scheduler is stepped on the validation Hits@50 with mode max): Adam
with L2 weight decay, ReduceLROnPlateau on the validation loss, stop when the learning rate falls below
``min_lr``, at ``epochs`` or when the wall-clock budget is spent; the **last** epoch's scores are reported. The
budget is ``max_time`` hours per run, divided by 10 per fold under cross-validation (the original does this for
CSL and TU) and by 20 per WikiCS split. With ``seeds_per_job: k`` in a benchmark one job trains k seeds of a model
on a fold one after another in one process (:func:`train_seeds`, :mod:`gnnbench.training.last_epoch_stack`), each
exactly its separate run: the job saves the process start, the imports and the data loading of k − 1 jobs. With
``stack: true`` (whose default ``seeds_per_job`` is all seeds) a job's seeds train on CUDA as one wide stack where
the model widens — the seeds then share the first seed's mini-batch order, the one departure from separate runs —
and on CPU (where a wide stack is no faster: ``docs/performance.md``) or for a model that does not widen one after
another. Every
seed's outputs and record are those of its own job. The default is one job per seed and no stack (each seed its
own batch order, as the paper's runs), so published spreads over seeds keep the batch order's part. Models are
the benchmark's: input encoders → L layers → task head (:func:`gnnbench.models.build.build_model`), sized by the
published configs or fitted to a parameter budget. Tables: mean ± std over seeds (and folds) of the
test and train scores, #params, epochs, s/epoch, total hours; with cross-validation also the min and max test
score (CSL is reported as mean ± std, max, min over 5 folds × seeds). Standard deviations are population
deviations (``np.std``), as the original computes them.


The package: :mod:`.plan` (the protocol object: a suite's benchmark block → its runs), :mod:`.train` (the
training jobs) and :mod:`.tables` (the dataset tables); this module holds the names and files they share.
"""

from __future__ import annotations

from gnnbench import papers, paths

NAME = papers.PROTOCOLS[papers.DWIVEDI2020]

RUN_DIR = paths.P1_RUN_DIR

RECORD_JOB = "seed{seed}_fold{fold}"  # a job's run-record file: paths.RECORD_FILE with this job name

# a generator's non-learnt baseline (gnnbench.baselines; TSP's k-NN heuristic): its run record, a row of the
# dataset's table like the models'
BASELINE_RECORD_FILE = paths.RECORD_FILE.replace("{protocol}", NAME).replace("{model}", "{baseline}").replace(
    "{job}", "baseline")

TABLE_FILE = paths.DATASET_TABLE

TABLE_FORMATS = paths.TABLE_FORMATS

FOLD_TIME_DIVISOR = 10  # the original's per-fold time budget under cross-validation: max_time / 10

SPLIT_TIME_DIVISOR = 20  # ... and per node split of WikiCS: max_time / 20
