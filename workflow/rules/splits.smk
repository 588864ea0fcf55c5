rule splits:
    input:
        unpack(lambda wc: dataset_files(wc.dataset)),
        published=lambda wc: SUITE.split_raw_files(wc.dataset),
    output:
        splits=paths.SPLITS_FILE,
        leakage=paths.LEAKAGE_FILE,
    params:
        split=lambda wc: SUITE.datasets[wc.dataset].split,
    log:
        paths.log_file("splits", "{dataset}"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/make_splits.py"
