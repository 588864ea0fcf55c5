"""Average ranks, Friedman, Nemenyi CD and Wilcoxon–Holm cliques over datasets (gnnbench.reporting.critical_difference),
checked against Demšar (2006), §3.2.2, and scipy."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from scipy.stats import friedmanchisquare, rankdata, studentized_range, wilcoxon

from gnnbench.errors import DataError
from gnnbench.records import COLUMNS
from gnnbench.reporting import critical_difference as CD
from gnnbench.reporting.significance import holm

# Demšar (2006), Table 6: AUC of C4.5 with tuned m, tuned cf, and both, on 14 UCI data sets
C45 = ["C4.5", "C4.5+m", "C4.5+cf", "C4.5+m+cf"]
AUC = np.array([[0.763, 0.768, 0.771, 0.798], [0.599, 0.591, 0.590, 0.569], [0.954, 0.971, 0.968, 0.967],
                [0.628, 0.661, 0.654, 0.657], [0.882, 0.888, 0.886, 0.898], [0.936, 0.931, 0.916, 0.931],
                [0.661, 0.668, 0.609, 0.685], [0.583, 0.583, 0.563, 0.625], [0.775, 0.838, 0.866, 0.875],
                [1.000, 1.000, 1.000, 1.000], [0.940, 0.962, 0.965, 0.962], [0.619, 0.666, 0.614, 0.669],
                [0.972, 0.981, 0.975, 0.975], [0.957, 0.978, 0.946, 0.970]])


def records(table: pd.DataFrame, higher_is_better: dict | bool = True, runs: int = 1, stage: str = "run"
            ) -> pd.DataFrame:
    """Run records with ``runs`` runs per (dataset, model) whose test scores average to ``table``'s cell."""
    rows = []
    for dataset, row in table.iterrows():
        higher = higher_is_better if isinstance(higher_is_better, bool) else higher_is_better[dataset]
        for model, value in row.items():
            for i in range(runs):
                spread = (i - (runs - 1) / 2) * 0.01
                rows.append({**dict.fromkeys(COLUMNS), "dataset": dataset, "model": model, "stage": stage,
                             "split": i, "test_score": value + spread, "status": "completed",
                             "metric": "accuracy" if higher else "mae", "higher_is_better": higher})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def test_demsar_table_6_ranks_friedman_and_critical_difference():
    scores = pd.DataFrame(AUC, columns=C45, index=[f"d{i}" for i in range(14)])
    ranks = CD.average_ranks(scores)
    # the printed 3-decimal AUCs give these ranks; the paper's (3.143, 2.000, 2.893, 1.964) tie C4.5+cf with
    # C4.5+m+cf on one more data set (differences below the printed precision): same sums but ±0.5 on those two
    assert ranks.to_numpy() == pytest.approx([44 / 14, 28 / 14, 41 / 14, 27 / 14])
    assert ranks.to_numpy() == pytest.approx(np.mean([rankdata(-r) for r in AUC], axis=0))
    # the paper's ranks: χ²_F = 9.28, F_F = 3.69, CD = 1.25 (k = 4, N = 14, α = 0.05)
    paper = pd.Series([3.143, 2.000, 2.893, 1.964], index=C45)
    f = CD.friedman(paper, 14)
    assert f["chi2"] == pytest.approx(9.28, abs=0.01)
    assert f["f_f"] == pytest.approx(3.69, abs=0.01)
    assert CD.critical_difference(4, 14) == pytest.approx(1.25, abs=0.005)
    assert CD.critical_difference(4, 14, 0.10) == pytest.approx(1.12, abs=0.005)  # the paper's CD at α = 0.10
    # F(3, 39) critical value at 0.05 is 2.85 (the paper): F_F = 3.69 rejects the null
    assert f["f_f_p"] < 0.05 and (f["k"], f["datasets"]) == (4, 14)


def test_friedman_statistic_is_scipys_without_ties():
    rng = np.random.default_rng(3)
    scores = pd.DataFrame(rng.normal(size=(9, 5)), columns=list("ABCDE"))
    mine = CD.friedman(CD.average_ranks(scores), 9)
    theirs = friedmanchisquare(*scores.to_numpy().T)
    assert mine["chi2"] == pytest.approx(theirs.statistic)
    assert mine["chi2_p"] == pytest.approx(theirs.pvalue)
    assert mine["f_f"] == pytest.approx(8 * mine["chi2"] / (9 * 4 - mine["chi2"]))


def test_nemenyi_q_is_demsars_table_and_scipys_studentized_range_beyond_it():
    assert [CD.nemenyi_q(k) for k in (2, 4, 10)] == [1.960, 2.569, 3.164]
    assert CD.nemenyi_q(4, 0.10) == 2.291
    for k, alpha in itertools.product(range(2, 11), (0.05, 0.10)):  # the studentized range over √2, 3 decimals
        exact = studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2)
        assert CD.nemenyi_q(k, alpha) == pytest.approx(exact, abs=1e-3)
    assert CD.nemenyi_q(12) == pytest.approx(studentized_range.ppf(0.95, 12, np.inf) / np.sqrt(2))
    assert 3.164 < CD.nemenyi_q(12) < 3.4
    with pytest.raises(ValueError, match="at least 2 models"):
        CD.nemenyi_q(1)


def test_lower_is_better_datasets_rank_the_smallest_score_first():
    scores = pd.DataFrame({"A": [2.0, 0.2], "B": [1.0, 0.1]}, index=["acc", "mae"])
    ranks = CD.average_ranks(scores, pd.Series({"acc": True, "mae": False}))
    assert ranks.to_dict() == {"A": 1.5, "B": 1.5}  # A best on accuracy, B (lower MAE) best on MAE
    assert CD.average_ranks(scores, True).to_dict() == {"A": 1.0, "B": 2.0}


def test_cliques_are_maximal_consecutive_runs_of_models_that_do_not_differ():
    order = list("ABCDE")
    different = {frozenset(p): False for p in itertools.combinations(order, 2)}
    for pair in ("AD", "AE", "BE", "CE"):  # A..C, B..D, D..E are runs of mutually non-different models
        different[frozenset(pair)] = True
    assert CD.cliques(order, different) == [["A", "B", "C"], ["B", "C", "D"], ["D", "E"]]
    assert CD.cliques(order, dict.fromkeys(different, True)) == []
    assert CD.cliques(order, dict.fromkeys(different, False)) == [order]


def test_wilcoxon_holm_pairs_over_datasets_separate_a_model_that_is_always_better():
    rng = np.random.default_rng(0)
    base = rng.uniform(60, 90, 12)
    # Best is better everywhere; Mid and Low swap places at random (no consistent difference)
    noise = rng.normal(0, 1, 12)
    table = pd.DataFrame({"Low": base + noise, "Best": base + 5 + rng.uniform(0, 1, 12), "Mid": base - noise},
                         index=[f"d{i}" for i in range(12)])
    result = CD.comparison(records(table, runs=3))
    assert list(result["ranks"]["model"]) == ["Best", "Low", "Mid"] or list(result["ranks"]["model"]) == [
        "Best", "Mid", "Low"]
    pairs = result["pairs"].set_index(["model_a", "model_b"])
    p = {tuple(sorted(k)): v for k, v in pairs["wilcoxon_p"].items()}
    oriented = table  # all accuracy: higher is better
    for a, b in itertools.combinations(["Best", "Low", "Mid"], 2):
        assert p[tuple(sorted((a, b)))] == pytest.approx(wilcoxon(oriented[a] - oriented[b]).pvalue)
    assert result["pairs"]["wilcoxon_p_holm"].to_numpy() == pytest.approx(holm(result["pairs"]["wilcoxon_p"]))
    assert result["cliques"] == [[m for m in result["ranks"]["model"] if m != "Best"]]  # Low and Mid: one bar
    assert result["cd"] == pytest.approx(2.343 * np.sqrt(3 * 4 / (6 * 12)))
    assert result["ranks"]["average_rank"].iloc[0] == 1.0


def test_dataset_scores_are_mean_test_scores_of_completed_runs_and_incomplete_datasets_are_left_out():
    table = pd.DataFrame({"A": [80.0, 70.0, 60.0], "B": [81.0, 71.0, 61.0]}, index=["x", "y", "z"])
    runs = records(table, runs=2)
    runs.loc[(runs["dataset"] == "x") & (runs["model"] == "A") & (runs["split"] == 0), "status"] = "diverged"
    scores, higher, metric = CD.dataset_scores(runs)
    assert scores.loc["x", "A"] == pytest.approx(80.005)  # the completed run alone
    assert scores.loc["y", "B"] == pytest.approx(71.0)
    runs = runs[~((runs["dataset"] == "z") & (runs["model"] == "A"))]  # A not run on z
    result = CD.comparison(runs)
    assert result["datasets"] == ["x", "y"] and result["left_out"] == ["z"]
    with pytest.raises(DataError, match=r"2 or more models scored on 2 or more datasets; the records have 2 "
                                        r"model\(s\) scored on all of 1 dataset\(s\) \(z left out"):
        CD.comparison(runs[runs["dataset"] != "x"].assign(
            test_score=lambda r: r["test_score"].where(~((r["dataset"] == "z") & (r["model"] == "B")))))


def test_cd_report_writes_the_table_markdown_and_diagram(tmp_path):
    table = pd.DataFrame(AUC, columns=C45, index=[f"d{i}" for i in range(14)])
    files = {ext: tmp_path / f"cd.{ext}" for ext in ("csv", "md", "parquet", "png", "svg")}
    CD.cd_report(records(table), "suite", *files.values())
    md = files["md"].read_text()
    assert "| C4.5+m+cf | 1.929 |" in md and "| C4.5 | 3.143 |" in md
    assert "CD = 1.254" in md
    written = pd.read_parquet(files["parquet"])
    assert list(written.loc[written["kind"] == "rank", "model"]) == ["C4.5+m+cf", "C4.5+m", "C4.5+cf", "C4.5"]
    assert (written["kind"] == "pair").sum() == 6
    assert ET.parse(files["svg"]).getroot().tag.endswith("svg") and files["png"].stat().st_size > 0
    axes = CD.cd_figure(CD.comparison(records(table)), "suite").axes[0]
    texts = [t.get_text() for t in axes.texts]
    assert "C4.5+m+cf (1.93)" in texts and "C4.5 (3.14)" in texts and "CD = 1.25" in texts
    # Demšar's example: no pair differs by Wilcoxon–Holm (smallest adjusted p 0.065): one bar joins all four
    assert CD.comparison(records(table))["cliques"] == [["C4.5+m+cf", "C4.5+m", "C4.5+cf", "C4.5"]]
    bars = [c for c in axes.collections if max(c.get_linewidths()) == 3]
    assert len(bars) == 1 and bars[0].get_segments()[0][:, 0] == pytest.approx([27 / 14 - 0.03, 44 / 14 + 0.03])
    # one model only: no comparison, said in the table and the figure, the files still written
    CD.cd_report(records(table[["C4.5"]]), "suite", *files.values())
    assert "No comparison: a critical-difference comparison needs 2 or more models" in files["md"].read_text()
    assert pd.read_csv(files["csv"]).empty


def test_the_suite_compares_models_two_benchmarks_share_over_the_benchmarks_that_have_them_all(tmp_path):
    """A protocol's comparison: the labels two or more of its benchmarks have, over the benchmarks having all of
    them; the suite's report job writes its table, page and diagram from the run records alone."""
    import yaml

    from gnnbench.records import record, write_records
    from gnnbench.report_jobs import suite_job, suite_outputs
    from gnnbench.suite import load_suite

    csbm = {"generator": "csbm", "seed": 1, "params": {"num_nodes": 200, "num_classes": 3},
            "split": {"scheme": "random_per_class", "splits": 2, "seed": 1}}
    models = {"GCN": "pitfalls_GCN", "MLP": "pitfalls_MLP", "GAT": "pitfalls_GAT"}
    suite = load_suite({"datasets": {name: csbm for name in ("A", "B", "C")}, "benchmarks": {
        "A": {"protocol": "pitfalls", "models": models},
        "B": {"protocol": "pitfalls", "models": {m: models[m] for m in ("MLP", "GCN")}},
        "C": {"protocol": "pitfalls", "models": {"GCN": models["GCN"]}}}})
    comparison = suite.critical_difference()["pitfalls"]
    # GCN and MLP are in two or more benchmarks (GAT in one); C lacks MLP
    assert (comparison["models"], comparison["datasets"]) == (["GCN", "MLP"], ["A", "B"])
    assert comparison["table"] == "critical_difference_pitfalls" and comparison["stage"] == "run"
    assert suite.table_protocol("critical_difference_pitfalls") == ("pitfalls", None)
    assert "results/plots/critical_difference_pitfalls.svg" in suite.report_files()
    assert "results/report/tables/critical_difference_pitfalls.html" in suite.report_files()
    single = load_suite({"datasets": {"A": csbm}, "benchmarks": {"A": {"protocol": "pitfalls", "models": models}}})
    assert single.critical_difference() == {}

    scores = {"A": {"GCN": 80.0, "MLP": 70.0, "GAT": 90.0}, "B": {"GCN": 75.0, "MLP": 76.0}}
    for dataset, of_model in scores.items():
        for model, score in of_model.items():
            write_records(tmp_path / suite.benchmarks[dataset].record_files()[
                list(suite.benchmarks[dataset].models).index(model)],
                [record(protocol="pitfalls", dataset=dataset, model=model, config={"model": model}, split=s,
                        metric="accuracy", higher_is_better=True, test_score=score + s, status="completed")
                 for s in range(2)])
    cd = {**comparison, "records": [str(tmp_path / f) for f in comparison["records"]]}
    outputs = {role: str(tmp_path / path) for role, path in suite_outputs([cd["table"]], [cd["table"]]).items()}
    assert outputs["critical_difference_pitfalls_png"].endswith("results/plots/critical_difference_pitfalls.png")
    suite_job(suite={"datasets": {}, "benchmarks": {}}, tables={}, outputs=outputs,
              critical_difference={"pitfalls": cd})
    md = (tmp_path / "results/tables/critical_difference_pitfalls.md").read_text()
    assert "| GCN | 1.500 |" in md and "| MLP | 1.500 |" in md and "GAT" not in md  # GAT is in one benchmark only
    assert yaml.safe_load((tmp_path / "results/report/suite.yaml").read_text()) == {"datasets": {}, "benchmarks": {}}
    assert "<table" in (tmp_path / "results/report/tables/critical_difference_pitfalls.html").read_text()
    assert (tmp_path / "results/plots/critical_difference_pitfalls.svg").is_file()
