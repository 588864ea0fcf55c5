localrules:
    raw_download,  # compute nodes of a cluster often have no internet access


# One job per raw file (checksummed download with retries; an existing verified file is reused).
rule raw_download:
    output:
        paths.RAW_FILE,
    wildcard_constraints:
        path=_alternatives([f.removeprefix(f"{paths.RAW_DIR}/") for f in SUITE.all_raw_files]),
    params:
        raw=lambda wc: SUITE.raw_download(paths.RAW_FILE.format(path=wc.path))[0],
        mirror=lambda wc: SUITE.raw_download(paths.RAW_FILE.format(path=wc.path))[1],
    log:
        paths.log_file("download", "{path}"),
    retries: 2
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/download_raw.py"


rule dataset:
    input:
        lambda wc: SUITE.raw_files(wc.dataset),
    output:
        graphs=paths.DATASET_GRAPHS,
        meta=paths.DATASET_META,
    wildcard_constraints:
        dataset=_alternatives(set(SUITE.datasets) - set(SUITE.sharded_datasets)),
    params:
        generator=lambda wc: SUITE.datasets[wc.dataset].generator,
        params=lambda wc: SUITE.datasets[wc.dataset].params,
        seed=lambda wc: SUITE.datasets[wc.dataset].seed,
    log:
        paths.log_file("dataset", "{dataset}"),
    threads: SUITE.resources["dataset"]["cpus"]
    resources:
        **SUITE.rule_resources("dataset"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/generate_dataset.py"


# A sharded generator's dataset (TSP: solving every instance) is made in shards, one job each, then merged.
rule label_shard:
    output:
        paths.LABEL_SHARD_FILE,
    wildcard_constraints:
        dataset=_alternatives(SUITE.sharded_datasets),
    params:
        generator=lambda wc: SUITE.datasets[wc.dataset].generator,
        params=lambda wc: SUITE.datasets[wc.dataset].params,
        seed=lambda wc: SUITE.datasets[wc.dataset].seed,
    log:
        paths.log_file("dataset", "{dataset}_label_shard{shard}"),
    threads: SUITE.resources["label_shard"]["cpus"]
    resources:
        **SUITE.rule_resources("label_shard"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/label_shard.py"


rule dataset_from_shards:
    input:
        shards=lambda wc: SUITE.label_shard_files(wc.dataset),
    output:
        graphs=paths.DATASET_GRAPHS,
        meta=paths.DATASET_META,
    wildcard_constraints:
        dataset=_alternatives(SUITE.sharded_datasets),
    params:
        generator=lambda wc: SUITE.datasets[wc.dataset].generator,
        params=lambda wc: SUITE.datasets[wc.dataset].params,
        seed=lambda wc: SUITE.datasets[wc.dataset].seed,
    log:
        paths.log_file("dataset", "{dataset}"),
    threads: SUITE.resources["dataset"]["cpus"]
    resources:
        **SUITE.rule_resources("dataset"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/merge_shards.py"
