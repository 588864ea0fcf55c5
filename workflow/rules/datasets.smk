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
    threads: SUITE.resources["dataset"]["cpus"]
    resources:
        **SUITE.rule_resources("dataset"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/generate_dataset.py"
