rule laplacian_pe:
    input:
        unpack(lambda wc: dataset_files(wc.dataset)),
    output:
        "results/features/{dataset}/laplacian_pe_k{k}.parquet",
    log:
        "results/logs/features/{dataset}_laplacian_pe_k{k}.log",
    threads: SUITE.resources["features"]["cpus"]
    resources:
        **SUITE.rule_resources("features"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/laplacian_pe.py"
