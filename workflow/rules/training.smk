# Pre-emption: a job stopped by SIGTERM (time limit, pre-emption, scancel) keeps checkpoint.pt in the run
# folder (not an output, so Snakemake leaves it) and exits 143; the retried job resumes from it.
rule train:
    input:
        unpack(run_inputs),
    output:
        metrics="results/runs/{dataset}/{model}/seed{seed}/fold{fold}/metrics.json",
        history="results/runs/{dataset}/{model}/seed{seed}/fold{fold}/history.parquet",
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
