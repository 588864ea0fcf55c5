rule tsp_knn_baseline:
    input:
        unpack(lambda wc: dataset_files(wc.dataset)),
        splits=paths.SPLITS_FILE,
    output:
        json=paths.KNN_BASELINE_FILE,
        record=benchmarking_gnns.KNN_RECORD_FILE,
        history=str(history_path(benchmarking_gnns.KNN_RECORD_FILE)),
    params:
        batch_size=lambda wc: SUITE.baseline_batch_size(wc.dataset),
        k=lambda wc: int(wc.k),
    log:
        paths.log_file("baselines", "{dataset}_knn_k{k}"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/knn_baseline.py"


# benchmarking-gnns: one table per dataset (with the paper's numbers where the dataset and model are the paper's),
# read from the run records of its runs and baselines
rule aggregate:
    input:
        runs=lambda wc: SUITE.benchmarks[wc.dataset].record_files() + SUITE.baseline_files(wc.dataset),
        meta=paths.DATASET_META,
    output:
        **table_outputs("{dataset}", "{dataset}"),
    wildcard_constraints:
        dataset=_alternatives(P1_DATASETS),
    params:
        presets=lambda wc: model_presets(wc.dataset),
    log:
        paths.log_file("tables", "{dataset}"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/aggregate.py"


# pitfalls: per dataset a table over all runs and a box plot
rule pitfalls_tables:
    input:
        runs=lambda wc: SUITE.benchmarks[wc.dataset].run_files(),
        meta=paths.DATASET_META,
    output:
        **table_outputs(
            "{dataset}",
            "{dataset}",
            png=paths.BOX_PLOT.format(dataset="{dataset}", ext="png"),
            svg=report(
                paths.BOX_PLOT.format(dataset="{dataset}", ext="svg"),
                caption="../report/boxplot.rst",
                category="{dataset}",
                subcategory="Figures",
                labels={"figure": "test accuracy of every run (box plot)"},
            ),
        ),
    wildcard_constraints:
        dataset=_alternatives(PITFALLS_DATASETS),
    params:
        presets=lambda wc: model_presets(wc.dataset),
        split=lambda wc: SUITE.datasets[wc.dataset].split,
    log:
        paths.log_file("tables", "{dataset}"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/pitfalls_tables.py"


# pitfalls across the suite: Table 1 matrix, relative accuracy and average rank over the random-split benchmarks
rule pitfalls_summary:
    input:
        pitfalls_plan.summary_inputs([SUITE.benchmarks[d] for d in PITFALLS_DATASETS]),
    output:
        **table_outputs(pitfalls.SUITE_TABLE_NAME, "Suite"),
    log:
        paths.log_file("tables", pitfalls.SUITE_TABLE_NAME),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/pitfalls_summary.py"


# pitfalls: a single fixed split ranks the models differently from random splits
rule pitfalls_split_ranking:
    input:
        [f for pair in pitfalls_plan.ranking_pairs(SUITE.benchmarks) for d in pair for f in SUITE.benchmarks[d].run_files()],
    output:
        **table_outputs(pitfalls.RANKING_TABLE_NAME, "Suite"),
    params:
        pairs=[(fixed, SUITE.benchmarks[fixed].run_files(), rand, SUITE.benchmarks[rand].run_files())
               for fixed, rand in pitfalls_plan.ranking_pairs(SUITE.benchmarks)],
    log:
        paths.log_file("tables", pitfalls.RANKING_TABLE_NAME),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/pitfalls_split_ranking.py"
