# fair-comparison (Errica et al.): inner runs -> selection per outer fold -> final runs -> tables.
# Every finished training is also kept under .../fold{fold}/{inner,}/runs/ (not an output): a rerun job (grid
# point added, job killed) reuses them and trains only what is missing.


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
        selection=paths.SELECTION_FILE,
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


rule fc_tables:
    input:
        meta=paths.DATASET_META,
        selections=lambda wc: SUITE.benchmarks[wc.dataset].selection_files(),
        finals=lambda wc: SUITE.benchmarks[wc.dataset].run_files(),
    output:
        csv=report(
            paths.DATASET_TABLE.format(dataset="{dataset}", ext="csv"),
            caption="../report/table_csv.rst",
            category="{dataset}",
            subcategory="Tables",
            labels={"table": "{dataset}", "format": "Raw CSV (download)"},
        ),
        md=paths.DATASET_TABLE.format(dataset="{dataset}", ext="md"),
        parquet=paths.DATASET_TABLE.format(dataset="{dataset}", ext="parquet"),
        folds_csv=report(
            paths.FOLDS_TABLE.format(dataset="{dataset}", ext="csv"),
            caption="../report/table_csv.rst",
            category="{dataset}",
            subcategory="Tables",
            labels={"table": "{dataset}_folds", "format": "Raw CSV (download)"},
        ),
        folds_md=paths.FOLDS_TABLE.format(dataset="{dataset}", ext="md"),
        folds_parquet=paths.FOLDS_TABLE.format(dataset="{dataset}", ext="parquet"),
    wildcard_constraints:
        dataset=_alternatives(FAIR_DATASETS),
    params:
        models=lambda wc: SUITE.benchmarks[wc.dataset].report_inputs(),
        presets=lambda wc: model_presets(wc.dataset),
    log:
        paths.log_file("tables", "{dataset}"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/fc_tables.py"
