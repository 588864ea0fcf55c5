# Figures and pages of the HTML report (`snakemake --report report.html` after the run). Every file here is built
# by `rule all`, so the report needs nothing the run did not make. Plot targets are decided at parse time from the
# suite: learning curves and score bars per benchmarking-gnns dataset, score bars per fair-comparison dataset,
# and the PE comparison only where models pair without / with Laplacian positional encodings.


localrules:
    learning_curves,  # seconds of reading and drawing: not worth a cluster job's queueing
    score_bars,
    pe_bars,
    table_page,
    suite_report,


rule learning_curves:
    input:
        metrics=lambda wc: SUITE.metrics_files(wc.dataset),
        histories=lambda wc: [f.replace("metrics.json", "history.parquet") for f in SUITE.metrics_files(wc.dataset)],
    output:
        png="results/plots/{dataset}_curves.png",
        svg=report(
            "results/plots/{dataset}_curves.svg",
            caption="../report/curves.rst",
            category="{dataset}",
            subcategory="Figures",
            labels={"figure": "learning curves"},
        ),
    wildcard_constraints:
        dataset=_alternatives(PLOT_DATASETS["curves"]),
    log:
        "results/logs/plots/{dataset}_curves.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/plot_curves.py"


rule score_bars:
    input:
        "results/tables/{dataset}.parquet",
    output:
        png="results/plots/{dataset}_bars.png",
        svg=report(
            "results/plots/{dataset}_bars.svg",
            caption="../report/bars.rst",
            category="{dataset}",
            subcategory="Figures",
            labels={"figure": "test score per model"},
        ),
    wildcard_constraints:
        dataset=_alternatives(PLOT_DATASETS["bars"]),
    params:
        protocol=lambda wc: SUITE.benchmarks[wc.dataset].protocol,
    log:
        "results/logs/plots/{dataset}_bars.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/plot_bars.py"


rule pe_bars:
    input:
        "results/tables/{dataset}.parquet",
    output:
        png="results/plots/{dataset}_pe.png",
        svg=report(
            "results/plots/{dataset}_pe.svg",
            caption="../report/pe.rst",
            category="{dataset}",
            subcategory="Figures",
            labels={"figure": "positional encodings"},
        ),
    wildcard_constraints:
        dataset=_alternatives(PLOT_DATASETS["pe"]),
    params:
        pairs=lambda wc: [list(pair) for pair in SUITE.pe_pairs(wc.dataset)],
    log:
        "results/logs/plots/{dataset}_pe.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/plot_pe.py"


# a Markdown table as an HTML page (Snakemake's report shows HTML inline; CSV and Markdown only as downloads)
rule table_page:
    input:
        "results/tables/{table}.md",
    output:
        report(
            "results/report/tables/{table}.html",
            caption="../report/table.rst",
            category=lambda wc: table_category(wc.table),
            subcategory="Tables",
            labels=lambda wc: {"table": wc.table, "format": "HTML table"},
        ),
    wildcard_constraints:
        table=_alternatives(TABLE_NAMES),
    params:
        protocol=lambda wc: table_protocol(wc.table),
    log:
        "results/logs/report/table_{table}.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/table_page.py"


# the suite's parameters: datasets (generator, params, split) and benchmarks (protocol, models, seeds, overrides)
rule suite_report:
    output:
        yaml=report(
            "results/report/suite.yaml",
            caption="../report/suite.rst",
            category="Suite",
            subcategory="Parameters",
            labels={"file": "suite.yaml (download)"},
        ),
        html=report(
            "results/report/suite.html",
            caption="../report/suite.rst",
            category="Suite",
            subcategory="Parameters",
            labels={"file": "suite (shown here)"},
        ),
    params:
        suite=suite_description(SUITE, config),
    log:
        "results/logs/report/suite.log",
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/suite_report.py"
