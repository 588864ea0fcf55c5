# fair-comparison (Errica et al.): inner runs -> selection per outer fold -> final runs; the tables are the
# benchmark's report job's (aggregate.smk), from the run records of both stages.
# Every finished training is also kept under .../fold{fold}/{inner,}/runs/ (not an output): a rerun job (grid
# point added, job killed) reuses them and trains only what is missing.


# A selection reads a fold's model-selection files and writes a few kilobytes: a local job (no cluster queueing). One
# job per outer fold, not per model: a fold's final runs start as soon as its own model-selection jobs are done, and a
# rerun fold (a failed or added model-selection job) rewrites only its own selection, so the other folds' final runs
# stay up to date.
localrules:
    fc_select,


# one job = grid_per_job configurations of one model on one outer fold, trained one after another in one process;
# with the benchmark's `stack`, whole groups of configurations of one shape, each group trained as one wide stack
rule fc_inner:
    input:
        unpack(run_inputs),
    output:
        runs=paths.INNER_FILE,
        records=record_file(fair_comparison.NAME, fair_comparison.INNER_RECORD_JOB),
        histories=history_file(fair_comparison.NAME, fair_comparison.INNER_RECORD_JOB),
    wildcard_constraints:
        dataset=_alternatives(FAIR_DATASETS),
    params:
        configs=lambda wc: benchmark_of(wc).part_configs(wc.model, int(wc.part)),
        positions=lambda wc: benchmark_of(wc).part_positions(wc.model, int(wc.part)),
        seed=lambda wc: benchmark_of(wc).seed,
        stack=lambda wc: benchmark_of(wc).stack,
        device=SUITE.device,
    threads: SUITE.resources["train"]["cpus"]
    resources:
        **SUITE.rule_resources("train"),
    log:
        paths.log_file("train", "{dataset}/{model}/fold{fold}/inner{part}"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/fc_inner.py"


rule fc_select:
    input:
        lambda wc: benchmark_of(wc).inner_files(wc.model, int(wc.fold)),
    output:
        paths.SELECTION_FILE,
    wildcard_constraints:
        dataset=_alternatives(FAIR_DATASETS),
    log:
        paths.log_file("select", "{dataset}/{model}/fold{fold}"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/fc_select.py"


rule fc_final:
    input:
        unpack(run_inputs),
        # the grid search's selection, or a tuned model's search of the fold (docs/tuning.md)
        selection=lambda wc: benchmark_of(wc).final_selection(wc.model, int(wc.fold)),
    output:
        runs=paths.FINAL_FILE,
        history=paths.FINAL_HISTORY_FILE,
        records=record_file(fair_comparison.NAME, fair_comparison.FINAL_RECORD_JOB),
        histories=history_file(fair_comparison.NAME, fair_comparison.FINAL_RECORD_JOB),
    wildcard_constraints:
        dataset=_alternatives(FAIR_DATASETS),
    params:
        runs=lambda wc: benchmark_of(wc).final_runs,
        holdout=lambda wc: benchmark_of(wc).final_holdout,
        seed=lambda wc: benchmark_of(wc).seed,
        stack=lambda wc: benchmark_of(wc).stack,
        device=SUITE.device,
    threads: SUITE.resources["train"]["cpus"]
    resources:
        **SUITE.rule_resources("train"),
    log:
        paths.log_file("train", "{dataset}/{model}/fold{fold}/final"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/fc_final.py"
