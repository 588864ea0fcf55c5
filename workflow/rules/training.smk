# Pre-emption: a job stopped by SIGTERM (time limit, pre-emption, scancel) keeps checkpoint.pt in the run
# folder (not an output, so Snakemake leaves it) and exits 143; the retried job resumes from it.
# Every job also writes its runs' records (gnnbench.records) under results/records/.


# benchmarking-gnns: one run = one model config × seed × fold
rule train:
    input:
        unpack(run_inputs),
    output:
        metrics=paths.P1_METRICS,
        history=paths.P1_HISTORY,
        records=record_file(benchmarking_gnns.NAME, benchmarking_gnns.RECORD_JOB),
    wildcard_constraints:
        dataset=_alternatives(P1_DATASETS),
    params:
        config=lambda wc: benchmark_of(wc).run_config(wc.model, int(wc.seed)),
        device=SUITE.device,
    threads: SUITE.resources["train"]["cpus"]
    resources:
        # config `resources.train`: mem_mb, runtime, gpu (+ gpu_model) -> sbatch --mem, -t, --gpus=[model:]N
        **SUITE.rule_resources("train"),
    log:
        paths.log_file("train", "{dataset}/{model}/seed{seed}/fold{fold}"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/train.py"


# pitfalls: one job = splits_per_job splits of one model, all initialisations of a split trained at once
rule train_inits:
    input:
        unpack(run_inputs),
    output:
        runs=paths.CHUNK_RUNS,
        history=paths.CHUNK_HISTORY,
        metrics=paths.CHUNK_METRICS,
        records=record_file(pitfalls.NAME, pitfalls.RECORD_JOB),
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
        paths.log_file("train", "{dataset}/{model}/chunk{chunk}"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/train_inits.py"
