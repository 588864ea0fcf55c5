rule laplacian_pe:
    input:
        unpack(lambda wc: dataset_files(wc.dataset)),
    output:
        paths.PE_FILE,
    log:
        paths.log_file("features", "{dataset}_laplacian_pe_k{k}"),
    threads: SUITE.resources["features"]["cpus"]
    resources:
        **SUITE.rule_resources("features"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/laplacian_pe.py"
