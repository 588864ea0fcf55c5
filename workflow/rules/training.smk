# Pre-emption: a job stopped by SIGTERM (time limit, pre-emption, scancel) keeps checkpoint.pt in the run
# folder (not an output, so Snakemake leaves it) and exits 143; the retried job resumes from it.


# benchmarking-gnns: one run = one model config × seed × fold
rule train:
    input:
        unpack(run_inputs),
    output:
        metrics="results/runs/{dataset}/{model}/seed{seed}/fold{fold}/metrics.json",
        history="results/runs/{dataset}/{model}/seed{seed}/fold{fold}/history.parquet",
    wildcard_constraints:
        dataset=_alternatives(P1_DATASETS),
    params:
        config=lambda wc: SUITE.run_config(wc.dataset, wc.model, int(wc.seed)),
        device=SUITE.device,
    threads: SUITE.resources["train"]["cpus"]
    resources:
        # config `resources.train`: mem_mb, runtime, gpu (+ gpu_model) -> sbatch --mem, -t, --gpus=[model:]N
        **SUITE.rule_resources("train"),
    log:
        "results/logs/train/{dataset}/{model}/seed{seed}/fold{fold}.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/train.py"


# pitfalls: one job = splits_per_job splits of one model, all initialisations of a split trained at once
rule train_inits:
    input:
        unpack(run_inputs),
    output:
        runs="results/runs/{dataset}/{model}/chunk{chunk}/runs.parquet",
        history="results/runs/{dataset}/{model}/chunk{chunk}/history.parquet",
        metrics="results/runs/{dataset}/{model}/chunk{chunk}/metrics.json",
    wildcard_constraints:
        dataset=_alternatives(PITFALLS_DATASETS),
    params:
        config=lambda wc: benchmark_of(wc).models[wc.model].config,
        splits=lambda wc: benchmark_of(wc).chunk_splits(int(wc.chunk)),
        inits=lambda wc: benchmark_of(wc).model_inits(wc.model),
        seed=lambda wc: benchmark_of(wc).seed,
        device=SUITE.device,
    threads: SUITE.resources["train"]["cpus"]
    resources:
        **SUITE.rule_resources("train"),
    log:
        "results/logs/train/{dataset}/{model}/chunk{chunk}.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/train_inits.py"
