# Tuning (docs/tuning.md): per tuned model and search (benchmarking-gnns, pitfalls: one, "main"; fair-comparison: one
# per outer fold) a chain of rounds, each a job that reads every earlier round's trial records, asks the seeded
# sampler for its trials, trains them and writes their records (stage "trial"); then a selection on validation scores
# only. The model's scored runs under <label>-tuned (training.smk, fair_comparison.smk) read the selection.
# A killed round keeps its finished trials (results/tuning/.../round_{round}.checkpoint.pt, not an output).


# a selection reads a few record files and writes a few kilobytes: a local job
localrules:
    select_tuning,


rule tune_round:
    input:
        unpack(tuning_round_inputs),
    output:
        round=paths.TUNING_ROUND,
        records=paths.RECORD_FILE.replace("{job}", paths.TRIAL_RECORD_JOB),
        histories=paths.HISTORY_RECORD_FILE.replace("{job}", paths.TRIAL_RECORD_JOB),
    wildcard_constraints:
        dataset=_alternatives(SUITE.tuned_benchmarks()),
        protocol=_alternatives({SUITE.benchmarks[d].protocol for d in SUITE.tuned_benchmarks()}),
        search=r"main|fold\d+",
        round=r"\d+",
    params:
        job=lambda wc: benchmark_of(wc).tuning_job(wc.model, wc.search, int(wc["round"])),
        device=SUITE.device,
    threads: SUITE.resources["train"]["cpus"]
    resources:
        **SUITE.rule_resources("train"),
    log:
        paths.log_file("tune", "{protocol}/{dataset}/{model}/{search}/round_{round}"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/tune_round.py"


rule select_tuning:
    input:
        lambda wc: benchmark_of(wc).trial_record_files(wc.model, wc.search),
    output:
        paths.TUNING_SELECTION,
    wildcard_constraints:
        dataset=_alternatives(SUITE.tuned_benchmarks()),
        protocol=_alternatives({SUITE.benchmarks[d].protocol for d in SUITE.tuned_benchmarks()}),
        search=r"main|fold\d+",
    params:
        job=lambda wc: benchmark_of(wc).tuning_job(wc.model, wc.search, 0),
    log:
        paths.log_file("tune", "{protocol}/{dataset}/{model}/{search}/selection"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/select_tuning.py"
