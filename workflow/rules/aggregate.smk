# a generator's non-learnt baselines (TSP: the k-NN heuristic), scored like a run, a row of the dataset's table
rule baseline:
    input:
        unpack(lambda wc: dataset_files(wc.dataset)),
        splits=paths.SPLITS_FILE,
    output:
        json=paths.BASELINE_FILE,
        record=benchmarking_gnns.BASELINE_RECORD_FILE,
        history=str(history_path(benchmarking_gnns.BASELINE_RECORD_FILE)),
    wildcard_constraints:
        baseline=_alternatives(SUITE.baseline_names),
    params:
        batch_size=lambda wc: SUITE.baseline_batch_size(wc.dataset),
        method=lambda wc: SUITE.baselines(wc.dataset)[wc.baseline].method,
        params=lambda wc: dict(SUITE.baselines(wc.dataset)[wc.baseline].params),
    log:
        paths.log_file("baselines", "{dataset}_{baseline}"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/baseline.py"


# One report job per benchmark (rule tables_<dataset>): its protocol's tables and figures, its paired tests (is A
# better than B? over the units the protocol pairs: seed/fold runs, random splits, outer folds), where it tunes models
# its tuning report (published versus tuned, the trials, the tuning curves: docs/tuning.md) and every table as an HTML
# page of `snakemake --report`, in one process that reads only the run records (and history records) of the
# benchmark's jobs, the trial records of its searches (input `trials`, apart from the records: no trial is a row of
# the protocol's tables), the dataset's meta.json and its split's leakage.json (the note under the dataset table), and
# never imports torch (gnnbench.report_jobs). One rule per
# benchmark: its outputs (Benchmark.table_files, Benchmark.plot_kinds) differ by protocol and models. Seconds of
# reading and drawing: a local job, not worth a cluster job's queueing.
for _name, _dataset in _tables_rules():

    rule:
        name:
            _name
        localrule: True
        input:
            **table_inputs(_dataset),
        output:
            **reported(table_outputs(_dataset), _dataset),
        params:
            **table_params(_dataset),
        log:
            paths.log_file("tables", _dataset),
        conda:
            "../envs/gnnbench.yaml"
        script:
            "../scripts/dataset_tables.py"
