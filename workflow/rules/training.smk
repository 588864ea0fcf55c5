rule train:
    input:
        unpack(run_inputs),
    output:
        metrics="results/runs/{dataset}/{model}/seed{seed}/fold{fold}/metrics.json",
        history="results/runs/{dataset}/{model}/seed{seed}/fold{fold}/history.parquet",
    params:
        config=lambda wc: SUITE.run_config(wc.dataset, wc.model, int(wc.seed)),
        device=SUITE.device,
    threads: SUITE.threads_per_run
    resources:
        mem_mb=SUITE.mem_mb_per_run,
        runtime=SUITE.runtime_per_run,
        gpu=1 if SUITE.device == "cuda" else 0,
    log:
        "results/logs/train/{dataset}/{model}/seed{seed}/fold{fold}.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/train.py"
