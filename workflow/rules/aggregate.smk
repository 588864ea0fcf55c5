rule aggregate:
    input:
        lambda wc: SUITE.metrics_files(wc.dataset),
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
