# Is A better than B? Per benchmark, paired tests of every pair of models over the units both share (seed/fold
# runs, random splits, outer folds: the protocol says which, Protocol.significance_scores), from the run records
# of its jobs (Benchmark.significance_inputs; gnnbench.reporting.significance).


localrules:
    significance,  # reads the run files' scores and runs a few tests: not worth a cluster job


rule significance:
    input:
        lambda wc: SUITE.benchmarks[wc.dataset].significance_inputs(),
    output:
        csv=paths.SIGNIFICANCE_FILE.format(dataset="{dataset}", ext="csv"),
        md=paths.SIGNIFICANCE_FILE.format(dataset="{dataset}", ext="md"),
        parquet=paths.SIGNIFICANCE_FILE.format(dataset="{dataset}", ext="parquet"),
    params:
        protocol=lambda wc: SUITE.benchmarks[wc.dataset].protocol,
    log:
        paths.log_file("tables", "{dataset}_significance"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/significance.py"
