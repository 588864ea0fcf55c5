# Is A better than B? Per benchmark, paired tests of every pair of models over the units both share (seed/fold
# runs, random splits, outer folds), from the same run files as the dataset's table (gnnbench.reporting.significance).


def significance_finals(dataset):
    """fair-comparison: label -> [(outer fold, final.parquet), ...]; other protocols read the run files."""
    benchmark = SUITE.benchmarks[dataset]
    if benchmark.protocol != "fair-comparison":
        return None
    return {label: list(zip(benchmark.folds, files["finals"]))
            for label, files in benchmark.report_inputs().items()}


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
