# Pre-emption: a job stopped by SIGTERM (time limit, pre-emption, scancel) keeps checkpoint.pt in the run
# folder (not an output, so Snakemake leaves it) and exits 143; the retried job resumes from it.
# Every job also writes its runs' records (gnnbench.records) under results/records/ and their per-epoch history
# under results/histories/ (same path).


# benchmarking-gnns: one run = one model config × seed × fold; a benchmark with `seeds_per_job` or `stack: true`
# trains several seeds of a model × fold in one job instead (rules train_seeds_* below)


rule train:
    input:
        unpack(run_inputs),
    output:
        metrics=paths.P1_METRICS,
        history=paths.P1_HISTORY,
        records=record_file(benchmarking_gnns.NAME, benchmarking_gnns.RECORD_JOB),
        histories=history_file(benchmarking_gnns.NAME, benchmarking_gnns.RECORD_JOB),
    wildcard_constraints:
        dataset=_alternatives(set(P1_DATASETS) - set(P1_STACKED)),
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


# benchmarking-gnns with `seeds_per_job` / `stack: true`: one job = a group of seeds of one model × fold
# (gnnbench.training.last_epoch_stack: the seeds one after another in one process, each exactly its separate run; with
# `stack: true` on CUDA one wide stack sharing the first seed's mini-batch order where the model widens). Its outputs
# are the seeds' own run outputs and records, at the paths a one-seed job writes, so aggregation and tables are
# unchanged. One rule per (dataset, model, group of seeds): a rule's outputs are fixed lists. A job asks for the
# train stage's CPUs and GPU; memory and runtime are a run's times the number of seeds (the one-after-another
# need; a stack needs less).
for _name, _dataset, _model, _seeds, _stack in _seed_stack_rules():

    rule:
        name:
            _name
        input:
            unpack(lambda wc, d=_dataset, m=_model: stack_run_inputs(d, m)),
        output:
            metrics=[paths.P1_METRICS.format(dataset=_dataset, model=_model, seed=s, fold="{fold}") for s in _seeds],
            history=[paths.P1_HISTORY.format(dataset=_dataset, model=_model, seed=s, fold="{fold}") for s in _seeds],
            records=[
                paths.RECORD_FILE.format(protocol=benchmarking_gnns.NAME, dataset=_dataset, model=_model,
                                         job=benchmarking_gnns.RECORD_JOB.format(seed=s, fold="{fold}"))
                for s in _seeds
            ],
            histories=[
                paths.HISTORY_RECORD_FILE.format(protocol=benchmarking_gnns.NAME, dataset=_dataset, model=_model,
                                                 job=benchmarking_gnns.RECORD_JOB.format(seed=s, fold="{fold}"))
                for s in _seeds
            ],
        params:
            config=SUITE.benchmarks[_dataset].models[_model].config,
            seeds=_seeds,
            stack=_stack,
            model=_model,
            device=SUITE.device,
        group:
            "train_runs"  # SLURM (workflow/profiles/slurm): packed into group jobs with the one-seed runs
        threads: SUITE.resources["train"]["cpus"]
        resources:
            **_stack_resources(_seeds),
        log:
            paths.log_file("train", f"{_dataset}/{_model}/seeds/fold{{fold}}"),
        conda:
            "../envs/gnnbench.yaml"
        script:
            "../scripts/train_seeds.py"


# pitfalls: one job = splits_per_job splits of one model, all initialisations of a split trained at once
rule train_inits:
    input:
        unpack(run_inputs),
    output:
        runs=paths.CHUNK_RUNS,
        history=paths.CHUNK_HISTORY,
        metrics=paths.CHUNK_METRICS,
        records=record_file(pitfalls.NAME, pitfalls.RECORD_JOB),
        histories=history_file(pitfalls.NAME, pitfalls.RECORD_JOB),
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


# heterophily: one job = the splits of one model at one layer count, trained as one stack
rule train_layers:
    input:
        unpack(run_inputs),
    output:
        metrics=paths.LAYERS_METRICS,
        records=record_file(heterophily.NAME, heterophily.CANDIDATE_JOB),
        histories=history_file(heterophily.NAME, heterophily.CANDIDATE_JOB),
    wildcard_constraints:
        dataset=_alternatives(HETEROPHILY_DATASETS),
    params:
        config=lambda wc: benchmark_of(wc).candidate_config(wc.model, int(wc.layers)),
        seed=lambda wc: benchmark_of(wc).seed,
        folds=lambda wc: benchmark_of(wc).folds,
        splits_per_stack=lambda wc: benchmark_of(wc).splits_per_stack,
        device=SUITE.device,
    threads: SUITE.resources["train"]["cpus"]
    resources:
        **SUITE.rule_resources("train"),
    log:
        paths.log_file("train", "{dataset}/{model}/layers{layers}"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/train_layers.py"


# heterophily: the layer count of a model chosen on the mean validation score (run records only, no torch)
rule select_layers:
    input:
        records=lambda wc: benchmark_of(wc).candidate_records(wc.model),
        histories=lambda wc: [str(history_path(f)) for f in benchmark_of(wc).candidate_records(wc.model)],
    output:
        selection=paths.LAYERS_SELECTION,
        records=record_file(heterophily.NAME, heterophily.SELECTED_JOB),
        histories=history_file(heterophily.NAME, heterophily.SELECTED_JOB),
    wildcard_constraints:
        dataset=_alternatives(HETEROPHILY_DATASETS),
    localrule: True
    log:
        paths.log_file("select", "{dataset}/{model}/layers"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/select_layers.py"
