"""The workflow's report jobs: each is one process that reads run records (and history records), the dataset's
``meta.json`` and its split's ``leakage.json``, and never imports torch (``docs/results.md``).

- One job per benchmark (:func:`dataset_job`; rules ``tables_<dataset>`` in ``workflow/rules/aggregate.smk``): its
  protocol's tables and figures (the protocol's tables module, :func:`gnnbench.protocols.tables_module`), its paired
  tests (:mod:`gnnbench.reporting.significance`), where it tunes models its tuning report (published versus tuned,
  the trial table and the tuning curves, :mod:`gnnbench.reporting.tuning`) and every table as an HTML page of the
  report.
- One job for the suite (:func:`suite_job`; rule ``suite_report``): the tables spanning several benchmarks, the
  comparison of each protocol's models over its datasets (:mod:`gnnbench.reporting.critical_difference`: average
  ranks, Friedman test, critical-difference diagram), their pages, and the suite's parameters
  (:mod:`gnnbench.reporting.report`).

A job's outputs are named by role (:func:`dataset_outputs`, :func:`suite_outputs`): a table's ``{role}_csv``,
``{role}_md``, ``{role}_parquet`` and its page ``{role}_html`` — roles ``table`` (the dataset table), ``folds``
(fair-comparison's per-fold table), ``significance``, ``tuning`` and ``trials`` (the tuning report), and a suite-wide
table's name —, and a figure's ``{kind}_png``, ``{kind}_svg`` — kinds ``box`` (pitfalls' box plot), those of
:meth:`~gnnbench.protocols.base.Benchmark.plot_kinds`, ``tuning`` (the tuning curves) and, in the suite's job, a
critical-difference comparison's table name.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from gnnbench import paths
from gnnbench.data.leakage import DEFAULT_THRESHOLD
from gnnbench.data.meta import read_meta
from gnnbench.protocols import tables_module
from gnnbench.records import read_histories, read_runs
from gnnbench.reporting.critical_difference import cd_report
from gnnbench.reporting.leakage import append_note
from gnnbench.reporting.report import table_html, write_suite
from gnnbench.reporting.significance import significance_report, unit_scores
from gnnbench.reporting.tuning import published_vs_tuned_report, trial_report, tuning_curves

# a benchmark's tables by role (the protocol lists the ones it writes, Benchmark.table_files; the tuning report's,
# Benchmark.tuning_report_files)
TABLE_ROLES = {"table": paths.DATASET_TABLE, "folds": paths.FOLDS_TABLE, "significance": paths.SIGNIFICANCE_FILE,
               "tuning": paths.TUNING_TABLE, "trials": paths.TRIALS_TABLE}


def table_outputs(role: str, table: str) -> dict[str, str]:
    """The files of one table by role: ``results/tables/{table}.{csv,md,parquet}`` and its HTML page."""
    files = {f"{role}_{ext}": paths.TABLE_FILE.format(table=table, ext=ext) for ext in paths.TABLE_FORMATS}
    return {**files, f"{role}_html": paths.TABLE_PAGE.format(table=table)}


def dataset_outputs(benchmark, significance: bool) -> dict[str, str]:
    """The files of a benchmark's report job by role: the tables its protocol lists (:meth:`Benchmark.table_files`:
    the dataset table, the per-fold table, the box plot), with ``significance`` the paired tests' table, the tuning
    report where the benchmark tunes models (:meth:`Benchmark.tuning_report_files`: the ``tuning`` and ``trials``
    tables, the figure ``tuning``), an HTML page per table, and the figures of :meth:`Benchmark.plot_kinds`. A
    listed file of no role here is a ValueError (a protocol's new kind of table needs one)."""
    dataset, listed = benchmark.dataset, benchmark.table_files() + benchmark.tuning_report_files()
    out: dict[str, str] = {}
    for role, template in TABLE_ROLES.items():
        markdown = template.format(dataset=dataset, ext="md")
        if markdown in listed or (role == "significance" and significance):
            out.update(table_outputs(role, Path(markdown).stem))
    if paths.BOX_PLOT.format(dataset=dataset, ext="png") in listed:
        out.update({f"box_{ext}": paths.BOX_PLOT.format(dataset=dataset, ext=ext) for ext in paths.PLOT_FORMATS})
    curves = paths.PLOT_FILE.format(dataset=dataset, kind=paths.TUNING_CURVES, ext="png") in listed
    for kind in benchmark.plot_kinds() + ([paths.TUNING_CURVES] if curves else []):
        out.update({f"{kind}_{ext}": paths.PLOT_FILE.format(dataset=dataset, kind=kind, ext=ext)
                    for ext in paths.PLOT_FORMATS})
    unknown = [f for f in listed if f not in out.values()]
    if unknown:
        raise ValueError(f"benchmark {dataset}: no report role for {', '.join(unknown)} (gnnbench.report_jobs)")
    return out


def suite_outputs(tables: list[str], figures: list[str] = ()) -> dict[str, str]:
    """The files of the suite's report job by role: every suite-wide table (role: its name), every figure (role:
    its name; ``results/plots/{name}.{png,svg}``) and the suite's parameters (``yaml``, ``html``)."""
    out = {role: paths.SUITE_REPORT.format(ext=role) for role in ("yaml", "html")}
    for table in tables:
        out.update(table_outputs(table, table))
    for figure in figures:
        out.update({f"{figure}_{ext}": paths.SUITE_PLOT.format(name=figure, ext=ext) for ext in paths.PLOT_FORMATS})
    return out


def dataset_job(*, protocol: str, dataset: str, records: list[str | os.PathLike],
                histories: list[str | os.PathLike], dataset_dir: str | os.PathLike, outputs: dict[str, str],
                models: list[str], significance: dict | None = None, options: dict | None = None,
                leakage: str | os.PathLike | None = None, leakage_threshold: float = DEFAULT_THRESHOLD,
                trials: list[str | os.PathLike] = ()) -> None:
    """One benchmark's report: its protocol's ``dataset_tables`` on the run records of ``records`` (and the history
    records of ``histories``; ``options``: the protocol's own settings, e.g. the suite's presets), under the dataset
    table the note of the split's ``leakage`` file (warning and logging above ``leakage_threshold``,
    :mod:`gnnbench.reporting.leakage`), the paired tests of its ``models`` where ``outputs`` has a ``significance``
    table (``significance``: the protocol's ``units`` in words, ``unit_columns`` and ``stage``,
    :func:`gnnbench.reporting.significance.unit_scores`, and its equivalence ``margin``, None or absent: the metric's
    default), where ``outputs`` has a ``tuning`` table the tuning report from the trial records of ``trials`` and
    the run records (read apart, so that no trial enters the protocol's tables; the published-versus-tuned tests pair
    over the same units as ``significance``), then the HTML page of every table."""
    runs = read_runs(records)
    tables_module(protocol).dataset_tables(dataset, runs, outputs,
                                           histories=read_histories(histories) if histories else None,
                                           meta=read_meta(dataset_dir), **(options or {}))
    if leakage is not None:
        append_note(outputs["table_md"], leakage, leakage_threshold)
    if "significance_md" in outputs:
        ours = runs[runs["model"].isin(models)].reset_index(drop=True)  # not the baselines of the dataset table
        scores, metric, higher = unit_scores(ours, tuple(significance["unit_columns"]), significance["stage"])
        significance_report(dataset=dataset, scores=scores, metric=metric, higher_is_better=higher,
                            units=significance["units"], csv=outputs["significance_csv"],
                            md=outputs["significance_md"], parquet=outputs["significance_parquet"],
                            margin=significance.get("margin"))
    if "tuning_md" in outputs:
        tuning_report(dataset, runs, read_runs(trials), outputs, significance)
    write_pages(outputs)


def tuning_report(dataset: str, runs: pd.DataFrame, trial_runs: pd.DataFrame, outputs: dict[str, str],
                  significance: dict) -> None:
    """A benchmark's tuning report (``docs/tuning.md``): the published-versus-tuned table (role ``tuning``), the
    trial table (``trials``) and the tuning curves (figure ``tuning``) of its run records ``runs`` and its trial
    records ``trial_runs``."""
    every = pd.concat([runs, trial_runs], ignore_index=True)
    published_vs_tuned_report(every, dataset, *(outputs[f"tuning_{ext}"] for ext in paths.TABLE_FORMATS),
                              units=significance["units"], unit_columns=tuple(significance["unit_columns"]),
                              stage=significance["stage"], margin=significance.get("margin"))
    trial_report(trial_runs, dataset, *(outputs[f"trials_{ext}"] for ext in paths.TABLE_FORMATS))
    tuning_curves(trial_runs, dataset, *(outputs[f"{paths.TUNING_CURVES}_{ext}"] for ext in paths.PLOT_FORMATS))


def suite_job(*, suite: dict, tables: dict[str, dict], outputs: dict[str, str],
              critical_difference: dict[str, dict] | None = None) -> None:
    """The suite's report: for every protocol with suite-wide tables (``tables``: protocol → its tables module's
    ``suite_tables`` settings, ``records`` the run-record files they read) those tables; for every protocol of
    ``critical_difference`` (:meth:`gnnbench.suite.Suite.critical_difference`) the comparison of its ``models`` over
    the datasets of its ``records`` (runs of its ``stage``) as the table and diagram named ``table``; their HTML
    pages, and the suite's parameters (``suite``: :func:`gnnbench.reporting.report.suite_description`) as YAML and
    HTML."""
    for protocol, settings in tables.items():
        settings = dict(settings)
        tables_module(protocol).suite_tables(read_runs(settings.pop("records")), outputs, **settings)
    for comparison in (critical_difference or {}).values():
        name = comparison["table"]
        cd_report(read_runs(comparison["records"]), comparison["title"],
                  *(outputs[f"{name}_{ext}"] for ext in (*paths.TABLE_FORMATS, *paths.PLOT_FORMATS)),
                  stage=comparison["stage"], models=list(comparison["models"]))
    write_pages(outputs)
    write_suite(suite, outputs["yaml"], outputs["html"])


def write_pages(outputs: dict[str, str]) -> None:
    """The HTML page (``{role}_html``) of every table of ``outputs`` from its Markdown (``{role}_md``)."""
    for role, page in outputs.items():
        if role.endswith("_html"):
            table_html(outputs[role.removesuffix("_html") + "_md"], page)
