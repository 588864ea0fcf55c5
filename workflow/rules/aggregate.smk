from gnnbench.protocols.pitfalls import ranking_pairs, summary_inputs


rule tsp_knn_baseline:
    input:
        unpack(lambda wc: dataset_files(wc.dataset)),
        splits="results/splits/{dataset}/splits.json",
    output:
        "results/baselines/{dataset}/knn_k{k}.json",
    params:
        batch_size=lambda wc: SUITE.baseline_batch_size(wc.dataset),
        k=lambda wc: int(wc.k),
    log:
        "results/logs/baselines/{dataset}_knn_k{k}.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/knn_baseline.py"


# benchmarking-gnns: one table per dataset (with the paper's numbers where the dataset and model are the paper's)
rule aggregate:
    input:
        runs=lambda wc: SUITE.metrics_files(wc.dataset) + SUITE.baseline_files(wc.dataset),
        meta="results/datasets/{dataset}/meta.json",
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
    wildcard_constraints:
        dataset=_alternatives(P1_DATASETS),
    params:
        presets=lambda wc: model_presets(wc.dataset),
    log:
        "results/logs/tables/{dataset}.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/aggregate.py"


# pitfalls: per dataset a table over all runs and a box plot
rule pitfalls_tables:
    input:
        runs=lambda wc: SUITE.benchmarks[wc.dataset].run_files(),
        meta="results/datasets/{dataset}/meta.json",
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
        png="results/plots/{dataset}.png",
        svg=report(
            "results/plots/{dataset}.svg",
            caption="../report/boxplot.rst",
            category="{dataset}",
            subcategory="Figures",
            labels={"figure": "test accuracy of every run (box plot)"},
        ),
    wildcard_constraints:
        dataset=_alternatives(PITFALLS_DATASETS),
    params:
        presets=lambda wc: model_presets(wc.dataset),
        split=lambda wc: SUITE.datasets[wc.dataset].split,
    log:
        "results/logs/tables/{dataset}.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/pitfalls_tables.py"


# pitfalls across the suite: Table 1 matrix, relative accuracy and average rank over the random-split benchmarks
rule pitfalls_summary:
    input:
        summary_inputs([SUITE.benchmarks[d] for d in PITFALLS_DATASETS]),
    output:
        csv=report(
            "results/tables/pitfalls.csv",
            caption="../report/table_csv.rst",
            category="Suite",
            subcategory="Tables",
            labels={"table": "pitfalls", "format": "Raw CSV (download)"},
        ),
        md="results/tables/pitfalls.md",
        parquet="results/tables/pitfalls.parquet",
    log:
        "results/logs/tables/pitfalls.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/pitfalls_summary.py"


# pitfalls: a single fixed split ranks the models differently from random splits
rule pitfalls_split_ranking:
    input:
        [f for pair in ranking_pairs(SUITE.benchmarks) for d in pair for f in SUITE.benchmarks[d].run_files()],
    output:
        csv=report(
            "results/tables/pitfalls_split_ranking.csv",
            caption="../report/table_csv.rst",
            category="Suite",
            subcategory="Tables",
            labels={"table": "pitfalls_split_ranking", "format": "Raw CSV (download)"},
        ),
        md="results/tables/pitfalls_split_ranking.md",
        parquet="results/tables/pitfalls_split_ranking.parquet",
    params:
        pairs=[(fixed, SUITE.benchmarks[fixed].run_files(), rand, SUITE.benchmarks[rand].run_files())
               for fixed, rand in ranking_pairs(SUITE.benchmarks)],
    log:
        "results/logs/tables/pitfalls_split_ranking.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/pitfalls_split_ranking.py"
