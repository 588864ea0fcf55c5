# Is A better than B? Per benchmark, paired tests of every pair of models over the units both share (seed/fold
# runs, random splits, outer folds), from the same run files as the dataset's table (gnnbench.reporting.significance).


localrules:
    significance,  # reads the run files' scores and runs a few tests: not worth a cluster job


rule significance:
    input:
        lambda wc: SUITE.benchmarks[wc.dataset].run_files(),
    output:
        csv="results/tables/{dataset}_significance.csv",
        md="results/tables/{dataset}_significance.md",
        parquet="results/tables/{dataset}_significance.parquet",
    params:
        protocol=lambda wc: SUITE.benchmarks[wc.dataset].protocol,
        finals=lambda wc: significance_finals(wc.dataset),
    log:
        "results/logs/tables/{dataset}_significance.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/significance.py"
