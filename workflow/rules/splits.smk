rule splits:
    input:
        unpack(lambda wc: dataset_files(wc.dataset)),
        published=lambda wc: SUITE.split_raw_files(wc.dataset),
    output:
        "results/splits/{dataset}/splits.json",
    params:
        split=lambda wc: SUITE.datasets[wc.dataset].split,
    log:
        "results/logs/splits/{dataset}.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/make_splits.py"
