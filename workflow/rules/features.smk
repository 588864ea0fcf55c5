rule laplacian_pe:
    input:
        unpack(lambda wc: dataset_files(wc.dataset)),
    output:
        "results/features/{dataset}/laplacian_pe_k{k}.parquet",
    log:
        "results/logs/features/{dataset}_laplacian_pe_k{k}.log",
    resources:
        mem_mb=4000,
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/laplacian_pe.py"
