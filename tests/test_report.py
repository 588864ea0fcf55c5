"""Report figures and pages: the drawn data equal the tables / histories, PE pairs, and `snakemake --report`."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import snakemake

from gnnbench.records import history_frame, history_path, record, write_records
from gnnbench.reporting import plots
from gnnbench.reporting.report import markdown_to_html, suite_description, write_suite
from gnnbench.suite import load_suite

# ------------------------------------------------------------------------------------------------ learning curves

QUANTITIES = plots.CURVE_QUANTITIES


def write_run(folder, label, seed, fold, history: dict, metric="accuracy"):
    """A run's record and its history record, as its training job writes them (gnnbench.records); the record's
    path."""
    row = record(protocol="benchmarking-gnns", dataset="D", model=label, config={"model": "GCN"}, seed=seed,
                 split=fold, metric=metric, epochs=len(history["epoch"]))
    path = folder / "records" / "run.parquet"
    write_records(path, [row], history=history_frame(history, row["run_id"]))
    return path


def load(files):
    """The curves' histories of the runs whose record files are ``files``."""
    return plots.load_histories(files, [history_path(f) for f in files])


@pytest.fixture
def runs(tmp_path):
    """Two models × three runs of hand-made histories; one run of B stops after 2 of 4 epochs."""
    rng = np.random.default_rng(0)
    files, histories = [], {}
    for label, lengths in (("A", (3, 3, 3)), ("B", (4, 2, 4))):
        for i, n in enumerate(lengths):
            history = {"epoch": np.arange(n), "lr": np.full(n, 1e-3), "seconds": np.ones(n),
                       **{q: rng.random(n) * (100 if "metric" in q else 1) for q in QUANTITIES}}
            files.append(write_run(tmp_path / label / f"seed{i}" / "fold0", label, i, 0, history))
            histories.setdefault(label, []).append(history)
    return files, histories


def axes_by_title(figure):
    return {ax.get_title(): ax for ax in figure.axes if ax.get_title()}


def test_curves_are_the_mean_and_std_of_the_runs_at_every_epoch(runs):
    files, histories = runs
    figure = plots.learning_curves_figure(load(files), "toy")
    axes = axes_by_title(figure)
    assert set(axes) == {"Train loss", "Validation loss", "Train accuracy (%)", "Validation accuracy (%)"}
    titles = dict(zip(QUANTITIES, ["Train loss", "Validation loss", "Train accuracy (%)", "Validation accuracy (%)"],
                      strict=True))
    for quantity in QUANTITIES:
        ax = axes[titles[quantity]]
        assert ax.get_ylabel() in ("loss", "accuracy (%)")
        lines = {line.get_gid(): line for line in ax.get_lines()}
        for i, label in enumerate(("A", "B")):
            line = lines[f"curve_{quantity}_{i}"]
            assert line.get_label() == label
            longest = max(len(h["epoch"]) for h in histories[label])
            # expected, run by run: the runs that reached epoch e
            mean = [np.mean([h[quantity][e] for h in histories[label] if len(h["epoch"]) > e]) for e in range(longest)]
            std = [np.std([h[quantity][e] for h in histories[label] if len(h["epoch"]) > e]) for e in range(longest)]
            np.testing.assert_array_equal(line.get_xdata(), np.arange(1, longest + 1))
            np.testing.assert_allclose(line.get_ydata(), mean, rtol=1e-12)
            band = ax.collections[i].get_paths()[0].vertices  # fill_between: mean - std ... mean + std
            for x, m, s in zip(range(1, longest + 1), mean, std, strict=True):
                ys = band[np.isclose(band[:, 0], x), 1]
                assert ys.min() == pytest.approx(m - s) and ys.max() == pytest.approx(m + s)
    legend = figure.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["A", "B"]
    assert "3 runs per model" in figure.get_suptitle()
    assert {ax.get_yscale() for ax in figure.axes if ax.get_title()} == {"linear"}


def test_a_diverging_loss_gets_a_log_axis(tmp_path):
    # CSL's GCN without PE: validation loss in the millions beside GCN-PE's ~0.1 — a linear axis would flatten GCN-PE
    files = [write_run(tmp_path / label, label, 1, 0, {
        "epoch": np.arange(3), "lr": np.full(3, 1e-3), "seconds": np.ones(3), "train_loss": [2.3, 2.0, 1.5],
        "val_loss": val, "train_metric": [10.0, 20.0, 30.0], "val_metric": [10.0, 20.0, 30.0]})
        for label, val in (("GCN", [2.3, 5.0e6, 1.0e5]), ("GCN-PE", [2.3, 0.9, 0.1]))]
    axes = axes_by_title(plots.learning_curves_figure(load(files), "toy"))
    assert axes["Validation loss"].get_yscale() == "log"
    assert axes["Train loss"].get_yscale() == "linear" and axes["Validation accuracy (%)"].get_yscale() == "linear"


def test_curve_statistics_count_the_runs_behind_every_point(runs):
    files, _ = runs
    stats = plots.curve_statistics(load(files))
    assert stats[stats["model"] == "B"]["runs"].tolist() == [3, 3, 2, 2]
    assert stats["model"].tolist() == ["A"] * 3 + ["B"] * 4


def test_learning_curves_files_are_byte_reproducible(runs, tmp_path):
    files, _ = runs
    outputs = []
    for i in range(2):
        png, svg = tmp_path / f"c{i}.png", tmp_path / f"c{i}.svg"
        plots.learning_curves(load(files), "toy", png, svg)
        outputs.append((png.read_bytes(), svg.read_bytes()))
    assert outputs[0] == outputs[1]
    assert outputs[0][0][:8] == b"\x89PNG\r\n\x1a\n"
    svg = outputs[0][1].decode()
    assert 'id="curve_val_metric_1"' in svg and "toy: learning curves" in svg


def test_a_run_without_history_is_a_one_line_error(runs):
    files, _ = runs
    histories = [history_path(f) for f in files]
    with pytest.raises(plots.DataError, match=r"run [0-9a-f]{16} \(A, seed 0, fold 0\) has no rows in the given "
                                              "history records; rerun snakemake for its job"):
        plots.load_histories(files, histories[1:])
    histories[0].unlink()
    with pytest.raises(plots.DataError, match=f"history file {histories[0]} does not exist"):
        plots.load_histories(files, histories)


# ------------------------------------------------------------------------------------------------ bars

P1_TABLE = pd.DataFrame({"dataset": "D", "model": ["GCN", "GCN-PE", "MLP", "k-NN"], "metric": "mae",
                         "test_metric_mean": [0.5, 0.4, 0.7, 0.9], "test_metric_std": [0.05, 0.02, 0.0, 0.1]})


def bar_containers(ax):
    from matplotlib.container import BarContainer

    return [c for c in ax.containers if isinstance(c, BarContainer)]


def errorbar_segments(ax, container):
    """(x, low, high) of each error bar of a BarContainer."""
    segments = container.errorbar.lines[2][0].get_segments()
    return [(s[0][0], s[0][1], s[1][1]) for s in segments]


def test_score_bars_are_the_table_mean_with_std_error_bars():
    figure = plots.score_bars_figure(P1_TABLE, "D: test")
    ax = figure.axes[0]
    bars = {p.get_gid(): p for p in ax.patches}
    for i, row in P1_TABLE.iterrows():
        bar = bars[f"bar_test_{i}"]
        assert bar.get_height() == pytest.approx(row["test_metric_mean"])
    (container,) = bar_containers(ax)
    for (x, low, high), (_, row), bar in zip(errorbar_segments(ax, container), P1_TABLE.iterrows(), container,
                                             strict=True):
        assert x == pytest.approx(bar.get_x() + bar.get_width() / 2)
        assert (low, high) == pytest.approx((row["test_metric_mean"] - row["test_metric_std"],
                                             row["test_metric_mean"] + row["test_metric_std"]))
    assert [t.get_text() for t in ax.get_xticklabels()] == P1_TABLE["model"].tolist()
    assert ax.get_ylabel() == "Test MAE (mean ± std)"


def test_fair_comparison_bars_put_validation_beside_test_and_the_paper_where_known():
    table = pd.DataFrame({"model": ["GIN", "Baseline"], "architecture": ["GIN", "DeepMultisets"],
                          "test_mean": [70.0, 65.0], "test_std": [3.0, 2.0], "val_mean": [75.0, 66.0],
                          "val_std": [1.0, 0.5], "paper_mean": [73.0, np.nan], "paper_std": [4.0, np.nan]})
    ax = plots.score_bars_figure(table, "T").axes[0]
    bars = {p.get_gid(): p for p in ax.patches}
    test_container, val_container = bar_containers(ax)
    for i, row in table.iterrows():
        assert bars[f"bar_test_{i}"].get_height() == row["test_mean"]
        assert bars[f"bar_val_{i}"].get_height() == row["val_mean"]
        assert bars[f"bar_test_{i}"].get_x() < bars[f"bar_val_{i}"].get_x()
    for container, mean, std in ((test_container, "test_mean", "test_std"), (val_container, "val_mean", "val_std")):
        extents = [(low, high) for _, low, high in errorbar_segments(ax, container)]
        assert extents == pytest.approx(list(zip(table[mean] - table[std], table[mean] + table[std], strict=True)))
    (paper,) = [line for line in ax.get_lines() if line.get_gid() == "paper"]
    assert paper.get_ydata().tolist() == [73.0]  # only GIN has a published number
    legend = ax.figure.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["test (outer folds)", "validation of the selected configs",
                                                          "paper's test"]


def test_bars_name_the_diverged_runs_and_a_model_without_a_completed_run_has_no_bar():
    table = P1_TABLE.assign(diverged=[0, 1, 0, 0])
    table.loc[2, ["test_metric_mean", "test_metric_std"]] = np.nan
    table.loc[2, "diverged"] = 4
    ax = plots.score_bars_figure(table, "T").axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["GCN", "GCN-PE\n(1 diverged)", "MLP\n(4 diverged)",
                                                            "k-NN"]
    assert np.isnan({p.get_gid(): p for p in ax.patches}["bar_test_2"].get_height())
    folds = pd.DataFrame({"model": ["GIN"], "test_mean": [70.0], "test_std": [3.0], "val_mean": [75.0],
                          "val_std": [1.0], "diverged_runs": [2]})
    assert [t.get_text() for t in plots.score_bars_figure(folds, "T").axes[0].get_xticklabels()] == [
        "GIN\n(2 diverged)"]


def test_a_table_of_another_shape_is_refused():
    with pytest.raises(plots.DataError, match="neither test_metric_mean"):
        plots.score_bars_figure(pd.DataFrame({"model": ["A"], "x": [1]}), "T")


# ------------------------------------------------------------------------------------------------ PE pairs

def test_pe_pairs_match_by_config_then_label_then_fewest_differences():
    configs = {
        "GCN": {"model": "GCN", "L": 4, "pos_enc": False},
        "GatedGCN-L8": {"model": "GatedGCN", "L": 8, "pos_enc": False},
        "GatedGCN": {"model": "GatedGCN", "L": 4, "pos_enc": False},
        "GCN-PE": {"model": "GCN", "L": 4, "pos_enc": True, "pos_enc_dim": 20, "hidden_dim": 70},
        "GatedGCN-PE-L8": {"model": "GatedGCN", "L": 4, "pos_enc": True, "pos_enc_dim": 20},  # label wins
        "gated_lap": {"model": "GatedGCN", "L": 4, "pos_enc": True, "pos_enc_dim": 8},  # fewest differences
        "GIN-PE": {"model": "GIN", "L": 4, "pos_enc": True, "pos_enc_dim": 20},  # no GIN without PE
        "MLP-PE": {"model": "MLP", "L": 4, "pos_enc": True},
        "MLP": {"model": "GCN", "L": 4, "pos_enc": False},  # a label is not an architecture
    }
    assert plots.pe_pairs(configs) == [("GCN", "GCN", "GCN-PE"), ("GatedGCN", "GatedGCN-L8", "GatedGCN-PE-L8"),
                                       ("GatedGCN", "GatedGCN", "gated_lap")]
    assert plots.pe_pairs({k: v for k, v in configs.items() if not v["pos_enc"]}) == []


def test_pe_bars_pair_the_table_rows():
    pairs = [("GCN", "GCN", "GCN-PE")]
    ax = plots.pe_bars_figure(P1_TABLE, pairs, "D: PE").axes[0]
    bars = {p.get_gid(): p for p in ax.patches}
    assert bars["bar_nope_0"].get_height() == 0.5 and bars["bar_pe_0"].get_height() == 0.4
    extents = [errorbar_segments(ax, c)[0][1:] for c in bar_containers(ax)]
    assert extents == [pytest.approx((0.45, 0.55)), pytest.approx((0.38, 0.42))]
    assert ax.get_xticklabels()[0].get_text() == "GCN"
    two = plots.pe_bars_figure(P1_TABLE, [("GCN", "GCN", "GCN-PE"), ("GCN", "MLP", "k-NN")], "D").axes[0]
    assert [t.get_text() for t in two.get_xticklabels()] == ["GCN (GCN)", "GCN (MLP)"]
    assert [p.get_height() for p in two.patches if p.get_gid().startswith("bar_pe")] == [0.4, 0.9]
    with pytest.raises(plots.DataError, match="GAT-PE not in the table"):
        plots.pe_bars_figure(P1_TABLE, [("GAT", "GCN", "GAT-PE")], "D")


CONFIG = {
    "datasets": {"CSL": {"generator": "csl", "seed": 1},
                 "CSBM": {"generator": "csbm", "params": {"num_nodes": 200},
                          "split": {"scheme": "random_per_class", "splits": 2}},
                 "GF": {"generator": "graph_families", "params": {"num_graphs": 60},
                        "split": {"scheme": "stratified_kfold", "folds": 2}}},
    "benchmarks": {
        "CSL": {"seeds": [1], "set": {"epochs": 2},
                "models": {"GCN": "CSL_graph_classification_GCN_CSL_100k",
                           "MLP-PE": "CSL_graph_classification_MLP_CSL_PE_100k",
                           "GCN-PE": "CSL_graph_classification_GCN_CSL_PE_100k",
                           "MLP": "CSL_graph_classification_MLP_CSL_100k"}},
        "CSBM": {"protocol": "pitfalls", "inits": 2, "models": {"GCN": "pitfalls_GCN"}},
        "GF": {"protocol": "fair-comparison", "final_runs": 1,
               "models": {"GIN": {"preset": "fair_GIN", "grid": {"hidden_units": [[8]]}}}},
    },
}


def test_the_suite_decides_which_figures_exist():
    suite = load_suite(CONFIG)
    assert suite.pe_pairs("CSL") == [("MLP", "MLP", "MLP-PE"), ("GCN", "GCN", "GCN-PE")]  # order of the PE models
    assert suite.plot_files() == [f"results/plots/{d}_{k}.{e}" for d, k in
                                  [("CSL", "curves"), ("CSL", "bars"), ("CSL", "pe"), ("GF", "bars")]
                                  for e in ("png", "svg")]
    assert set(suite.report_files()) == {*suite.plot_files(), "results/report/suite.yaml",
                                         "results/report/suite.html",
                                         *(f"results/report/tables/{t}.html" for t in
                                           ("CSL", "CSBM", "GF", "GF_folds", "pitfalls", "CSL_significance"))}
    no_pairs = load_suite({**CONFIG, "benchmarks": {"CSL": {**CONFIG["benchmarks"]["CSL"], "models": {
        "GCN-PE": "CSL_graph_classification_GCN_CSL_PE_100k", "MLP": "CSL_graph_classification_MLP_CSL_100k"}}}})
    assert no_pairs.plot_kinds("CSL") == ["curves", "bars"]


# ------------------------------------------------------------------------------------------------ pages

def test_markdown_tables_become_html_tables():
    page = markdown_to_html("## D <x>\n\n| Model | Test |\n|---|---|\n| **GCN** | **1.0 ± 0.1** |\n| A&B | 0.5 |\n\n"
                            "Note: `std` is\nthe population std.\n", "D")
    assert "<h2>D &lt;x&gt;</h2>" in page
    assert "<th>Model</th><th>Test</th>" in page
    assert '<tr><td><b>GCN</b></td><td class="num"><b>1.0 ± 0.1</b></td></tr>' in page
    assert '<tr><td>A&amp;B</td><td class="num">0.5</td></tr>' in page
    assert "<p>Note: <code>std</code> is the population std.</p>" in page
    assert page.count("<tr>") == 3  # header + 2 rows: the separator row is not a row


def test_the_suite_description_lists_resolved_datasets_and_benchmarks(tmp_path):
    description = suite_description(load_suite(CONFIG), CONFIG)
    csbm = description["datasets"]["CSBM"]
    assert csbm["generator"] == "csbm" and csbm["params"]["num_nodes"] == 200 and csbm["params"]["num_classes"] == 4
    assert csbm["split"]["scheme"] == "random_per_class" and csbm["split"]["splits"] == 2
    csl = description["benchmarks"]["CSL"]
    assert csl["protocol"] == "benchmarking-gnns" and csl["seeds"] == [1] and csl["set"] == {"epochs": 2}
    assert csl["models"]["GCN-PE"] == {"preset": "CSL_graph_classification_GCN_CSL_PE_100k", "architecture": "GCN",
                                       "pos_enc_dim": 20}
    assert description["benchmarks"]["CSBM"]["inits"] == 2
    gin = description["benchmarks"]["GF"]["models"]["GIN"]
    assert gin["grid"] == {"hidden_units": [[8]]} and gin["architecture"] == "GIN" and gin["grid_size"] >= 1
    write_suite(description, tmp_path / "s.yaml", tmp_path / "s.html")
    assert yaml.safe_load((tmp_path / "s.yaml").read_text()) == description
    page = (tmp_path / "s.html").read_text()
    assert "<h2>Datasets</h2>" in page and "<b>GCN-PE</b>" in page and "random_per_class" in page


# ------------------------------------------------------------------------------------------------ snakemake --report

def embedded(html: str, script_id: str, name: str):
    """A JSON value the report embeds as ``<script id="<script_id>"> var <name> = ...; </script>``."""
    match = re.search(rf'<script id="{script_id}">\s*var {name} = (.*?);\s*</script>', html, flags=re.S)
    return json.loads(match.group(1))


@pytest.mark.slow
def test_snakemake_report_holds_the_figures_tables_captions_and_suite(tiny_workflow):
    workdir, _, result = tiny_workflow
    assert result.returncode == 0, result.stderr[-3000:]
    plots_dir = workdir / "results" / "plots"
    assert sorted(p.name for p in plots_dir.iterdir()) == sorted(
        f"{name}.{ext}" for name in ("CSL_curves", "CSL_bars", "CSL_pe", "PATTERN_curves", "PATTERN_bars")
        for ext in ("png", "svg"))
    made = snakemake(workdir, "--report", str(workdir / "report.html"))
    assert made.returncode == 0, made.stderr[-3000:]
    html = (workdir / "report.html").read_text()
    results, categories = embedded(html, "results", "results"), embedded(html, "categories", "categories")
    assert sorted(categories) == ["CSL", "PATTERN", "Suite"]
    assert sorted(categories["CSL"]["Figures"]) == [f"results/plots/CSL_{k}.svg" for k in ("bars", "curves", "pe")]
    assert sorted(categories["CSL"]["Tables"]) == ["results/report/tables/CSL.html",
                                                   "results/report/tables/CSL_significance.html",
                                                   "results/tables/CSL.csv"]
    significance = results["results/report/tables/CSL_significance.html"]
    page = base64.b64decode(significance["data_uri"].split("base64,", 1)[1]).decode()
    assert "is A better than B?" in page and "Is A better than B?" in significance["caption"]
    assert sorted(categories["Suite"]["Parameters"]) == ["results/report/suite.html", "results/report/suite.yaml"]
    curves = results["results/plots/CSL_curves.svg"]
    assert curves["mime_type"] == "image/svg+xml" and curves["labels"] == {"figure": "learning curves"}
    data = base64.b64decode(curves["data_uri"].split("base64,", 1)[1])
    assert data == (plots_dir / "CSL_curves.svg").read_bytes()  # the file itself, embedded
    assert "Learning curves on <strong>CSL</strong>" in curves["caption"]
    assert "GCN: GCN / GCN-PE" in results["results/plots/CSL_pe.svg"]["caption"]
    assert "protocol benchmarking-gnns" in results["results/plots/PATTERN_bars.svg"]["caption"]
    table = results["results/report/tables/CSL.html"]
    page = base64.b64decode(table["data_uri"].split("base64,", 1)[1]).decode()
    assert "<td>GCN-PE</td>" in page and table["mime_type"] == "text/html"
    description = embedded(html, "workflow-desc", "workflow_desc")
    assert "fair-comparison" in description and "models: GCN, GCN-PE, MLP" in description
