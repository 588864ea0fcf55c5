# fair-comparison (Errica et al.): inner runs -> selection per outer fold -> final runs -> tables.
# Every finished training is also kept under .../fold{fold}/{inner,}/runs/ (not an output): a rerun job (grid
# point added, job killed) reuses them and trains only what is missing.

# one job = grid_per_job configurations of one model on one outer fold, trained one after another in one process
rule fc_inner:
    input:
        unpack(run_inputs),
    output:
        "results/runs/{dataset}/{model}/fold{fold}/inner/part{part}.parquet",
    wildcard_constraints:
        dataset=_alternatives(FAIR_DATASETS),
    params:
        configs=lambda wc: benchmark_of(wc).part_configs(wc.model, int(wc.part)),
        positions=lambda wc: benchmark_of(wc).part_positions(wc.model, int(wc.part)),
        seed=lambda wc: benchmark_of(wc).seed,
        device=SUITE.device,
    threads: SUITE.resources["train"]["cpus"]
    resources:
        **SUITE.rule_resources("train"),
    log:
        "results/logs/train/{dataset}/{model}/fold{fold}/inner{part}.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/fc_inner.py"


rule fc_select:
    input:
        lambda wc: benchmark_of(wc).inner_files(wc.model, int(wc.fold)),
    output:
        "results/runs/{dataset}/{model}/fold{fold}/selection.json",
    wildcard_constraints:
        dataset=_alternatives(FAIR_DATASETS),
    log:
        "results/logs/select/{dataset}/{model}/fold{fold}.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/fc_select.py"


rule fc_final:
    input:
        unpack(run_inputs),
        selection="results/runs/{dataset}/{model}/fold{fold}/selection.json",
    output:
        runs="results/runs/{dataset}/{model}/fold{fold}/final.parquet",
        history="results/runs/{dataset}/{model}/fold{fold}/final_history.parquet",
    wildcard_constraints:
        dataset=_alternatives(FAIR_DATASETS),
    params:
        runs=lambda wc: benchmark_of(wc).final_runs,
        holdout=lambda wc: benchmark_of(wc).final_holdout,
        seed=lambda wc: benchmark_of(wc).seed,
        device=SUITE.device,
    threads: SUITE.resources["train"]["cpus"]
    resources:
        **SUITE.rule_resources("train"),
    log:
        "results/logs/train/{dataset}/{model}/fold{fold}/final.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/fc_final.py"


rule fc_tables:
    input:
        meta="results/datasets/{dataset}/meta.json",
        selections=lambda wc: SUITE.benchmarks[wc.dataset].selection_files(),
        finals=lambda wc: SUITE.benchmarks[wc.dataset].run_files(),
    output:
        csv=report(
            "results/tables/{dataset}.csv",
            caption="../report/table_csv.rst",
            category="{dataset}",
            subcategory="Tables",
            labels={"table": "{dataset}", "format": "Raw CSV (download)"},
        ),
        md="results/tables/{dataset}.md",
        parquet="results/tables/{dataset}.parquet",
        folds_csv=report(
            "results/tables/{dataset}_folds.csv",
            caption="../report/table_csv.rst",
            category="{dataset}",
            subcategory="Tables",
            labels={"table": "{dataset}_folds", "format": "Raw CSV (download)"},
        ),
        folds_md="results/tables/{dataset}_folds.md",
        folds_parquet="results/tables/{dataset}_folds.parquet",
    wildcard_constraints:
        dataset=_alternatives(FAIR_DATASETS),
    params:
        models=lambda wc: SUITE.benchmarks[wc.dataset].report_inputs(),
        presets=lambda wc: model_presets(wc.dataset),
    log:
        "results/logs/tables/{dataset}.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/fc_tables.py"
