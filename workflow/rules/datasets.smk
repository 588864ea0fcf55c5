rule dataset:
    output:
        graphs="results/datasets/{dataset}/graphs.parquet",
        meta="results/datasets/{dataset}/meta.json",
    params:
        generator=lambda wc: SUITE.datasets[wc.dataset].generator,
        params=lambda wc: SUITE.datasets[wc.dataset].params,
        seed=lambda wc: SUITE.datasets[wc.dataset].seed,
    log:
        "results/logs/dataset/{dataset}.log",
    resources:
        mem_mb=8000,
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/generate_dataset.py"
