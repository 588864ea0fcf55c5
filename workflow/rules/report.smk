# Figures and pages of the HTML report (`snakemake --report report.html` after the run). Every file here is built
# by `rule all`, so the report needs nothing the run did not make. Plot targets are decided at parse time from the
# suite: each benchmark's protocol names its figures (Benchmark.plot_kinds: learning curves, score bars, the PE
# comparison where models pair without / with Laplacian positional encodings) and writes their captions.


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
        png=paths.PLOT_FILE.format(dataset="{dataset}", kind="curves", ext="png"),
        svg=report(
            paths.PLOT_FILE.format(dataset="{dataset}", kind="curves", ext="svg"),
            caption="../report/curves.rst",
            category="{dataset}",
            subcategory="Figures",
            labels={"figure": "learning curves"},
        ),
    wildcard_constraints:
        dataset=_alternatives(PLOT_DATASETS["curves"]),
    log:
        paths.log_file("plots", "{dataset}_curves"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/plot_curves.py"


rule score_bars:
    input:
        paths.DATASET_TABLE.format(dataset="{dataset}", ext="parquet"),
    output:
        png=paths.PLOT_FILE.format(dataset="{dataset}", kind="bars", ext="png"),
        svg=report(
            paths.PLOT_FILE.format(dataset="{dataset}", kind="bars", ext="svg"),
            caption="../report/bars.rst",
            category="{dataset}",
            subcategory="Figures",
            labels={"figure": "test score per model"},
        ),
    wildcard_constraints:
        dataset=_alternatives(PLOT_DATASETS["bars"]),
    params:
        caption=lambda wc: SUITE.figure_caption("bars", wc.dataset),
    log:
        paths.log_file("plots", "{dataset}_bars"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/plot_bars.py"


rule pe_bars:
    input:
        paths.DATASET_TABLE.format(dataset="{dataset}", ext="parquet"),
    output:
        png=paths.PLOT_FILE.format(dataset="{dataset}", kind="pe", ext="png"),
        svg=report(
            paths.PLOT_FILE.format(dataset="{dataset}", kind="pe", ext="svg"),
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
        paths.log_file("plots", "{dataset}_pe"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/plot_pe.py"


# a Markdown table as an HTML page (Snakemake's report shows HTML inline; CSV and Markdown only as downloads)
rule table_page:
    input:
        paths.TABLE_FILE.format(table="{table}", ext="md"),
    output:
        report(
            paths.TABLE_PAGE,
            caption="../report/table.rst",
            category=lambda wc: table_category(wc.table),
            subcategory="Tables",
            labels=lambda wc: {"table": wc.table, "format": "HTML table"},
        ),
    wildcard_constraints:
        table=_alternatives(TABLE_NAMES),
    params:
        caption=lambda wc: SUITE.table_caption(wc.table),
    log:
        paths.log_file("report", "table_{table}"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/table_page.py"


# the suite's parameters: datasets (generator, params, split) and benchmarks (protocol, models, seeds, overrides)
rule suite_report:
    output:
        yaml=report(
            paths.SUITE_REPORT.format(ext="yaml"),
            caption="../report/suite.rst",
            category="Suite",
            subcategory="Parameters",
            labels={"file": "suite.yaml (download)"},
        ),
        html=report(
            paths.SUITE_REPORT.format(ext="html"),
            caption="../report/suite.rst",
            category="Suite",
            subcategory="Parameters",
            labels={"file": "suite (shown here)"},
        ),
    params:
        suite=suite_description(SUITE, config),
    log:
        paths.log_file("report", "suite"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/suite_report.py"
