# The suite's report job: the tables that span several benchmarks (pitfalls: the Table 1/2a summary over the
# random-split benchmarks, the fixed- versus random-split ranking; for every protocol with two or more benchmarks
# sharing two or more models, the critical-difference comparison and diagram), their HTML pages, and the suite's
# parameters — datasets (generator, params, split) and benchmarks (protocol, models, seeds, overrides) — in one process that never
# imports torch (gnnbench.report_jobs.suite_job). Each benchmark's own tables, figures and pages are its tables_*
# job's (aggregate.smk). Every file of the HTML report (`snakemake --report report.html` after the run) is built by
# `rule all`, so the report needs nothing the run did not make.


localrules:
    suite_report,  # seconds of reading and writing: not worth a cluster job's queueing


rule suite_report:
    input:
        list(dict.fromkeys([f for tables in [*suite_tables().values(), *CRITICAL_DIFFERENCE.values()]
                            for f in tables["records"]])),
    output:
        **reported(suite_outputs(SUITE_TABLES, SUITE_FIGURES), "Suite"),
    params:
        suite=suite_description(SUITE, config),
        tables=suite_tables(),
        critical_difference=CRITICAL_DIFFERENCE,
        captions={table: SUITE.table_caption(table) for table in SUITE_TABLES},
    log:
        paths.log_file("report", "suite"),
    conda:
        "../envs/gnnbench.yaml"
    script:
        "../scripts/suite_report.py"
