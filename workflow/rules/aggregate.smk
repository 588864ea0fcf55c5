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


rule aggregate:
    input:
        lambda wc: SUITE.metrics_files(wc.dataset) + SUITE.baseline_files(wc.dataset),
    output:
        csv="results/tables/{dataset}.csv",
        md="results/tables/{dataset}.md",
        parquet="results/tables/{dataset}.parquet",
    log:
        "results/logs/tables/{dataset}.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/aggregate.py"
