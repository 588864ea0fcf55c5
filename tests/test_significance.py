"""Is A better than B? Paired tests between the models of a benchmark (gnnbench.reporting.significance)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy.stats import ttest_1samp, ttest_rel, wilcoxon

from gnnbench.protocols.registry import get_protocol
from gnnbench.reporting import significance as S

REPO_ROOT = Path(__file__).resolve().parents[1]


def scores(**models) -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "unit": u, "score": v} for m, values in models.items()
                         for u, v in values.items()])


def test_p_values_are_scipys_on_hand_made_pairs():
    a = np.array([0.81, 0.79, 0.84, 0.80, 0.83, 0.78, 0.85, 0.82])
    b = np.array([0.78, 0.80, 0.80, 0.77, 0.79, 0.78, 0.80, 0.79])
    table = S.paired_tests(scores(A=dict(enumerate(a)), B=dict(enumerate(b))), higher_is_better=True)
    row = table.iloc[0]
    assert (row["model_a"], row["model_b"], row["pairs"], row["dropped_units"]) == ("A", "B", 8, 0)
    assert row["mean_difference"] == pytest.approx((a - b).mean())
    assert row["wilcoxon_p"] == pytest.approx(wilcoxon(a - b).pvalue)
    assert row["ttest_p"] == pytest.approx(ttest_rel(a, b).pvalue)
    assert row["wilcoxon_p_holm"] == row["wilcoxon_p"]  # one pair: nothing to adjust
    assert row["verdict_test"] == "wilcoxon" and row["verdict"] == "A better (Wilcoxon)"  # 8 pairs: 2/2^8 < 0.05


def test_tied_or_zero_differences_get_scipys_exact_p_value_without_its_slow_permutation_loop(monkeypatch):
    """With ties or zeros among ≤ 13 differences scipy runs an exact sign-flip test one flip at a time; the
    vectorised test gives its p-values exactly, on random tied inputs with zeros, and does not call scipy."""
    rng = np.random.default_rng(0)
    cases = []
    for i in range(200):  # scipy's loop takes ~1 s at n = 12: most cases are smaller
        n = S.SIGN_FLIPS_UP_TO - i % 2 if i < 4 else int(rng.integers(1, 11))
        d = rng.integers(-2 if i % 2 else -4, 5, n) * rng.choice([0.5, 1.0, 1 / 3])
        magnitudes = np.abs(d[d != 0])
        if 0 < len(magnitudes) and (len(magnitudes) < n or len(np.unique(magnitudes)) < n):  # zeros or ties
            cases.append((d, float(wilcoxon(d, alternative="two-sided").pvalue)))
    assert sum(p < 0.05 for _, p in cases) >= 10 and sum(p == 1.0 for _, p in cases) >= 10  # both tails exercised
    monkeypatch.setattr("scipy.stats.wilcoxon", lambda *a, **k: pytest.fail("scipy's loop was used"))
    for d, expected in cases:
        assert S.wilcoxon_p(d) == expected, d
    assert S.wilcoxon_p(np.array([0, 1, 2, -3, 2, 4, 5, 6])) == 28 / 256  # scipy 1.17's value
    assert S.sign_flip_p(np.array([1.0, 1.0, 1.0])) == 0.25  # all positive ties: 2 × (1 pattern of 8 as extreme)


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04, 0.20 → ×4, ×3, ×2, ×1 = 0.04, 0.09, 0.08, 0.20 → running max 0.04, 0.09, 0.09, 0.20
    assert S.holm([0.01, 0.04, 0.03, 0.20]).tolist() == pytest.approx([0.04, 0.09, 0.09, 0.20])
    assert S.holm([0.5, 0.6]).tolist() == [1.0, 1.0]  # 0.5 × 2 = 1.0 caps; 0.6 follows the running max
    out = S.holm([0.02, np.nan, 0.01])  # NaN left out: m = 2
    assert out[0] == pytest.approx(0.02) and np.isnan(out[1]) and out[2] == pytest.approx(0.02)


def test_holm_over_all_pairs_of_a_dataset():
    rng = np.random.default_rng(0)
    base = rng.normal(80, 1, 10)
    table = S.paired_tests(scores(A=dict(enumerate(base + 2)), B=dict(enumerate(base + rng.normal(0, 1, 10))),
                                  C=dict(enumerate(base + rng.normal(0, 1, 10)))), True)
    assert [tuple(p) for p in table[["model_a", "model_b"]].to_numpy()] == [("A", "B"), ("A", "C"), ("B", "C")]
    raw = table["wilcoxon_p"].to_numpy()
    order = np.argsort(raw)
    expected = np.maximum.accumulate(np.minimum(1, raw[order] * np.array([3, 2, 1])))
    assert table["wilcoxon_p_holm"].to_numpy()[order] == pytest.approx(expected)


def test_pairs_use_only_shared_units_and_orientation_follows_the_metric():
    a = {u: 0.30 + 0.01 * u for u in range(8)}  # an MAE: lower is better
    b = {u: 0.40 + 0.02 * u for u in range(7)}  # B lacks unit 7
    b[9] = 0.1  # and has a unit A lacks
    table = S.paired_tests(scores(A=a, B=b), higher_is_better=False)
    row = table.iloc[0]
    assert (row["pairs"], row["dropped_units"]) == (7, 2)
    x, y = np.array([a[u] for u in range(7)]), np.array([b[u] for u in range(7)])
    assert row["wilcoxon_p"] == pytest.approx(wilcoxon(x - y).pvalue) == pytest.approx(2 / 2**7)
    assert row["mean_difference"] == pytest.approx((x - y).mean()) and row["verdict"] == "A better (Wilcoxon)"
    flipped = S.paired_tests(scores(A=a, B=b), higher_is_better=True).iloc[0]
    assert flipped["verdict"] == "B better (Wilcoxon)"


def test_degenerate_differences_and_the_small_sample_floor():
    same = S.paired_tests(scores(A={0: 1.0, 1: 2.0, 2: 3.0}, B={0: 1.0, 1: 2.0, 2: 3.0}), True).iloc[0]
    assert (same["wilcoxon_p"], same["ttest_p"]) == (1.0, 1.0)
    # identical scores: no difference, and equal within any margin (δ: 1 % of the mean score 2.0 without a metric)
    assert (same["mde"], same["margin"], same["tost_p"]) == (0.0, pytest.approx(0.02), 0.0)
    assert same["verdict"] == "equivalent within δ = 0.02"
    shifted = S.paired_tests(scores(A={u: u + 1.0 for u in range(5)}, B={u: float(u) for u in range(5)}), True)
    row = shifted.iloc[0]
    assert row["ttest_p"] == 0.0  # constant non-zero difference: t = ∞
    # five pairs all in A's favour: the smallest two-sided exact p, 2 / 2^5 = 0.0625 > 0.05, so the rank test
    # cannot decide, and the t-test's infinite t on constant differences means nothing
    assert row["wilcoxon_p"] == pytest.approx(2 / 2**5) and row["verdict"] == "too few units to tell (n = 5)"
    one = S.paired_tests(scores(A={0: 1.0}, B={1: 2.0}), True).iloc[0]
    assert one["pairs"] == 0 and np.isnan(one["wilcoxon_p"]) and one["verdict"] == "too few units to tell (n = 0)"
    assert np.isnan(one["mde"]) and np.isnan(one["tost_p"])


def test_too_few_pairs_for_the_rank_test_fall_back_on_the_paired_t_test():
    # four seeds, as P1's protocol: MLP constant (as on PATTERN), GCN varying around 83 — Wilcoxon's floor is 0.125
    mlp, gcn = [51.0, 51.0, 51.0, 51.0], [83.0, 82.0, 85.0, 84.0]
    close = [83.5, 81.0, 85.5, 83.0]  # differences to GCN of both signs
    table = S.paired_tests(scores(MLP=dict(enumerate(mlp)), GCN=dict(enumerate(gcn)), GIN=dict(enumerate(close))),
                           True, metric="accuracy")
    rows = table.set_index(["model_a", "model_b"])
    assert rows.loc[("MLP", "GCN"), "wilcoxon_p"] == pytest.approx(0.125)
    t = np.array([ttest_rel(mlp, other).pvalue for other in (gcn, close)] + [ttest_rel(gcn, close).pvalue])
    assert rows["ttest_p_holm"].to_numpy() == pytest.approx(S.holm(t))
    assert rows.loc[("MLP", "GCN"), "verdict_test"] == "t-test"
    assert rows.loc[("MLP", "GCN"), "verdict"] == "GCN better (paired t-test; 4 pairs are too few for Wilcoxon)"
    assert rows.loc[("MLP", "GIN"), "verdict"] == "GIN better (paired t-test; 4 pairs are too few for Wilcoxon)"
    # GCN − GIN = (−0.5, 1, −0.5, 1): s_d = √0.75, MDE = (t_{0.975,3} + t_{0.8,3}) · s_d / 2 = (3.182446 + 0.978472)
    # · 0.433013 = 1.80 > δ = 1 point of accuracy: four seeds could not have shown a difference of δ
    gcn_gin = rows.loc[("GCN", "GIN")]
    assert gcn_gin["mde"] == pytest.approx((3.182446 + 0.978472) * np.sqrt(0.75) / 2, rel=1e-6)
    assert gcn_gin["verdict"] == "too few units to tell (MDE 1.8 > δ 1)"


def write_runs(path, protocol: str, rows: list[dict], stage: str = "run"):
    """Run records of one job (gnnbench.records), one per row: model, split, seed, init, test_score, status."""
    from gnnbench.records import record, write_records

    write_records(path, [record(protocol=protocol, dataset="D", model=r["model"], config={"model": r["model"]},
                                stage=stage, split=r["split"], seed=r.get("seed", 0), init=r.get("init", 0),
                                metric=r.get("metric", "accuracy"), higher_is_better=r.get("higher", True),
                                test_score=r["test_score"], status=r.get("status", "completed")) for r in rows])
    return path


def test_pitfalls_and_fair_comparison_units(tmp_path):
    runs = [{"model": model, "split": split, "init": init, "test_score": 70.0 + 5 * (model == "GCN") + split + init}
            for model, split, init in itertools.product(("GCN", "MLP"), range(3), range(2))]
    per_split, metric, higher = get_protocol("pitfalls").significance_scores(
        [write_runs(tmp_path / "chunk0.parquet", "pitfalls", runs)])
    assert metric == "accuracy" and higher
    assert per_split[per_split["model"] == "GCN"]["score"].tolist() == [75.5, 76.5, 77.5]  # mean over the 2 inits
    assert per_split[per_split["model"] == "GCN"]["unit"].tolist() == [0, 1, 2]
    files = []
    for label, fold in itertools.product(("A", "B"), range(2)):
        finals = [{"model": label, "split": fold, "init": r, "test_score": 60.0 + fold + r + (label == "A")}
                  for r in range(3)]
        inner = [{"model": label, "split": fold, "test_score": None}]  # model selection: no test score
        files += [write_runs(tmp_path / f"{label}{fold}_inner.parquet", "fair-comparison", inner, "inner"),
                  write_runs(tmp_path / f"{label}{fold}_final.parquet", "fair-comparison", finals, "final")]
    folds, _, _ = get_protocol("fair-comparison").significance_scores(files)
    assert folds[folds["model"] == "A"]["score"].tolist() == [62.0, 63.0]  # mean of the 3 final runs per fold
    assert len(folds) == 4  # the inner runs are no unit


def test_benchmarking_gnns_units_are_seed_and_fold_runs(tmp_path):
    rng = np.random.default_rng(3)
    runs = [{"model": m, "seed": seed, "split": fold, "test_score": float(rng.uniform(0, 1)), "metric": "MAE",
             "higher": False} for m, seed, fold in itertools.product(("GCN", "GIN"), (41, 95), range(3))]
    files = [write_runs(tmp_path / f"{r['model']}_{r['seed']}_{r['split']}.parquet", "benchmarking-gnns", [r])
             for r in runs]
    scores_, metric, higher = get_protocol("benchmarking-gnns").significance_scores(files)
    assert (metric, higher) == ("MAE", False)
    assert scores_["unit"].tolist() == [(seed, fold) for _ in range(2) for seed in (41, 95) for fold in range(3)]
    assert scores_["score"].tolist() == [r["test_score"] for r in runs]  # one run per unit: its own score


def test_a_diverged_unit_is_no_score_and_is_counted(tmp_path):
    a = {u: 0.80 + 0.01 * u for u in range(8)}
    b = {u: 0.70 + 0.01 * u for u in range(8)}
    b[3] = np.nan  # B's run on unit 3 diverged
    a[5] = np.nan  # and A's on unit 5
    row = S.paired_tests(scores(A=a, B=b), higher_is_better=True).iloc[0]
    assert (row["pairs"], row["dropped_units"], row["diverged_units"]) == (6, 0, 2)
    kept = [u for u in range(8) if u not in (3, 5)]
    x, y = np.array([a[u] for u in kept]), np.array([b[u] for u in kept])
    assert row["mean_a"] == pytest.approx(x.mean()) and row["mean_b"] == pytest.approx(y.mean())
    assert row["wilcoxon_p"] == pytest.approx(wilcoxon(x - y).pvalue) and not np.isnan(row["ttest_p"])
    text = S.markdown("D", S.paired_tests(scores(A=a, B=b), True), "(seed, fold) runs", "accuracy", True)
    assert "| A | B | 6 | 0 | 2 |" in text and "diverged" in text.splitlines()[2]
    none = S.paired_tests(scores(A=a, C={u: np.nan for u in range(8)}), True)  # every run of C diverged
    assert (none["pairs"].iloc[0], none["diverged_units"].iloc[0]) == (0, 8)
    line = S.markdown("D", none, "(seed, fold) runs", "accuracy", True).splitlines()[4]
    assert line.startswith("| A | C | 0 | 0 | 8 |") and "nan" not in line

    # the run records: a diverged P1 run has null scores; P2 splits average their completed inits; P3 folds their
    # completed final runs
    p1_runs = [{"model": label, "seed": seed, "split": 0, "status": "diverged" if diverged else "completed",
                "test_score": None if diverged else 0.5 + 0.1 * seed}
               for label, seed in itertools.product(("GCN", "MLP"), range(3))
               for diverged in [label == "MLP" and seed == 1]]
    p1, _, _ = get_protocol("benchmarking-gnns").significance_scores(
        [write_runs(tmp_path / "p1.parquet", "benchmarking-gnns", p1_runs)])
    row = S.paired_tests(p1, True).iloc[0]
    assert (row["pairs"], row["diverged_units"]) == (2, 1)
    runs = [{"model": "GCN", "split": split, "init": init, "status": status,
             "test_score": np.nan if status == "diverged" else 70.0 + split + init}
            for split, init, status in [(0, 0, "completed"), (0, 1, "diverged"), (1, 0, "diverged"),
                                        (1, 1, "diverged"), (2, 0, "completed"), (2, 1, "completed")]]
    per_split, _, _ = get_protocol("pitfalls").significance_scores(
        [write_runs(tmp_path / "runs.parquet", "pitfalls", runs)])
    got = per_split["score"].tolist()
    assert got[0] == 70.0 and np.isnan(got[1]) and got[2] == 72.5  # split 1: every init diverged, no score
    finals = [{"model": "A", "split": 0, "init": 0, "test_score": 60.0},
              {"model": "A", "split": 0, "init": 1, "test_score": np.nan, "status": "diverged"},
              {"model": "A", "split": 0, "init": 2, "test_score": 64.0},
              {"model": "A", "split": 1, "init": 0, "test_score": np.nan, "status": "diverged"}]
    folds, _, _ = get_protocol("fair-comparison").significance_scores(
        [write_runs(tmp_path / "final.parquet", "fair-comparison", finals, "final")])
    assert folds["score"].iloc[0] == 62.0 and np.isnan(folds["score"].iloc[1])


@pytest.mark.slow
def test_workflow_writes_the_significance_table_of_a_benchmark(tmp_path):
    suite = {
        "threads_per_run": 1,
        "datasets": {"CSL": {"generator": "csl", "seed": 2, "params": {"copies_per_class": 5}}},
        "benchmarks": {"CSL": {"seeds": [1, 2], "folds": [0, 1, 2],
                               "set": {"epochs": 2, "L": 2, "hidden_dim": 8, "out_dim": 8, "batch_size": 16},
                               "models": {"GCN": "CSL_graph_classification_GCN_CSL_100k",
                                          "MLP": {"preset": "CSL_graph_classification_MLP_CSL_100k",
                                                  "seeds": [1]}}}},
    }
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    result = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO_ROOT / "workflow/Snakefile"),
                             "--directory", str(tmp_path), "--configfile", str(tmp_path / "suite.yaml"), "--cores",
                             "2"], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    tables = tmp_path / "results" / "tables"
    table = pd.read_csv(tables / "CSL_significance.csv")
    assert len(table) == 1 and (table["model_a"].iloc[0], table["model_b"].iloc[0]) == ("GCN", "MLP")
    # recomputed from the runs' metrics.json (the tests read the records): MLP has seed 1 only, so the pairs are the
    # three folds of seed 1
    score = {}
    for path in (tmp_path / "results" / "runs" / "CSL").rglob("metrics.json"):
        m = json.loads(path.read_text())
        score[(m["label"], m["seed"], m["fold"])] = m["test"]["metric"]
    a = np.array([score[("GCN", 1, f)] for f in range(3)])
    b = np.array([score[("MLP", 1, f)] for f in range(3)])
    row = table.iloc[0]
    assert (row["pairs"], row["dropped_units"]) == (3, 3)
    assert row["mean_difference"] == pytest.approx((a - b).mean())
    expected = 1.0 if np.all(a == b) else wilcoxon(a - b).pvalue
    assert row["wilcoxon_p"] == pytest.approx(expected) and row["wilcoxon_p_holm"] == pytest.approx(expected)
    d = a - b  # 3 pairs: the rank test can never reject; the verdict is the paired t-test's when d varies
    delta = 1.0  # the default margin of an accuracy (CSL's metric, in percent): one point
    tost = max(ttest_1samp(d + delta, 0, alternative="greater").pvalue,
               ttest_1samp(d - delta, 0, alternative="less").pvalue) if np.ptp(d) else float(abs(d[0]) >= delta)
    assert row["margin"] == delta and row["tost_p"] == pytest.approx(tost)
    if np.ptp(d) == 0 and d[0]:
        expected = "too few units to tell (n = 3)"
    elif np.ptp(d) and ttest_rel(a, b).pvalue < 0.05:
        expected = f"{'GCN' if d.mean() > 0 else 'MLP'} better (paired t-test; 3 pairs are too few for Wilcoxon)"
    elif tost < 0.05:
        expected = f"equivalent within δ = {delta:.3g}"
    elif row["mde"] > delta:
        expected = f"too few units to tell (MDE {row['mde']:.3g} > δ {delta:.3g})"
    else:
        expected = "not different, not shown equivalent"
    assert row["verdict"] == expected
    text = (tables / "CSL_significance").with_suffix(".md").read_text()
    assert text.startswith("## CSL: is A better than B?") and "n ≤ 5 pairs can never be significant by it" in text
    assert pd.read_parquet(tables / "CSL_significance.parquet")["pairs"].tolist() == [3]
    # the dataset table carries the comparison with the paper (CSL is the paper's; its data here is shrunk)
    csl = pd.read_csv(tables / "CSL.csv").set_index("model")
    assert csl.loc["GCN", "paper_mean"] == 10.0 and csl.loc["GCN", "setting"].startswith("reduced: 50 of 150 graphs")
    assert pd.isna(csl.loc["MLP", "paper_mean"])  # the paper's CSL table has no MLP row without PE
