localrules:
    raw_download,  # compute nodes of a cluster often have no internet access


# One job per raw file (checksummed download with retries; an existing verified file is reused).
rule raw_download:
    output:
        "resources/raw/{path}",
    wildcard_constraints:
        path=_alternatives([f.removeprefix("resources/raw/") for f in SUITE.all_raw_files]),
    params:
        raw=lambda wc: SUITE.raw_download(f"resources/raw/{wc.path}")[0],
        mirror=lambda wc: SUITE.raw_download(f"resources/raw/{wc.path}")[1],
    log:
        "results/logs/download/{path}.log",
    retries: 2
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/download_raw.py"


rule dataset:
    input:
        lambda wc: SUITE.raw_files(wc.dataset),
    output:
        graphs="results/datasets/{dataset}/graphs.parquet",
        meta="results/datasets/{dataset}/meta.json",
    wildcard_constraints:
        dataset=_alternatives(set(SUITE.datasets) - set(SUITE.sharded_datasets)),
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


# TSP: labelling (solving every instance) is split into shards, one job each, merged into the dataset.
rule tsp_label_shard:
    output:
        "results/datasets/{dataset}/label_shards/{shard}.parquet",
    wildcard_constraints:
        dataset=_alternatives(SUITE.sharded_datasets),
    params:
        params=lambda wc: SUITE.datasets[wc.dataset].params,
        seed=lambda wc: SUITE.datasets[wc.dataset].seed,
    log:
        "results/logs/dataset/{dataset}_label_shard{shard}.log",
    threads: SUITE.resources["tsp_label"]["cpus"]
    resources:
        **SUITE.rule_resources("tsp_label"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/tsp_label_shard.py"


rule tsp_dataset:
    input:
        shards=lambda wc: SUITE.label_shard_files(wc.dataset),
    output:
        graphs="results/datasets/{dataset}/graphs.parquet",
        meta="results/datasets/{dataset}/meta.json",
    wildcard_constraints:
        dataset=_alternatives(SUITE.sharded_datasets),
    params:
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
        "../scripts/tsp_merge_shards.py"
