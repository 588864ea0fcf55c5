"""Tuning curves, the trial table and published versus tuned (gnnbench.reporting.tuning), on synthetic run records
with hand-computed expectations."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ttest_rel

from gnnbench.errors import DataError
from gnnbench.records import COLUMNS
from gnnbench.reporting import tuning as T
from gnnbench.reporting.significance import holm


def row(**fields) -> dict:
    base = {**dict.fromkeys(COLUMNS), "protocol": "pitfalls", "dataset": "D", "split": 0, "seed": 0, "init": 0,
            "metric": "accuracy", "higher_is_better": True, "status": "completed", "seconds": 1.0}
    return {**base, **fields}


def trial(model: str, t: int, val, *, search: str = "s", split: int = 0, pruned=None, seconds: float = 2.0,
          higher: bool = True, status: str = "completed") -> dict:
    extra = {"search": search, "round": t // 2, "trial": t, "params": {"lr": 0.1 * (t + 1), "layers": 2},
             "pruned_epoch": pruned}
    return row(model=model, stage="trial", split=split, val_score=val, seconds=seconds, extra=json.dumps(extra),
               higher_is_better=higher, metric="accuracy" if higher else "MAE", status=status)


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(COLUMNS))


# GCN: 10 trials, best (80) at trial 3 → converged; GAT: 5 trials, best (75) at trial 4 (position 5 > 0.8 · 5 = 4)
GCN_VALS = [70.0, None, 72.0, 80.0, 79.0, None, 80.0, 60.0, 78.0, 77.0]
GAT_VALS = [70.0, 71.0, 70.5, 74.0, 75.0]


def tuning_records() -> pd.DataFrame:
    rows = [trial("GCN", t, v, pruned=3 if v is None and t == 1 else None,
                  status="diverged" if v is None and t == 5 else "completed") for t, v in enumerate(GCN_VALS)]
    rows += [trial("GAT", t, v, seconds=1.5) for t, v in enumerate(GAT_VALS)]
    return frame(rows[::-1])  # out of order: the report sorts by trial


def test_curves_are_best_so_far_and_pruned_or_diverged_trials_leave_them():
    table = T.curves(tuning_records())
    gcn = table[table["model"] == "GCN"]
    assert gcn["trial"].tolist() == list(range(10))
    assert gcn["best_so_far"].tolist() == [70.0, 70.0, 72.0, 80.0, 80.0, 80.0, 80.0, 80.0, 80.0, 80.0]
    mae = frame([trial("M", t, v, higher=False) for t, v in enumerate([0.5, 0.7, 0.4, None, 0.45])])
    assert T.curves(mae)["best_so_far"].tolist() == [0.5, 0.5, 0.4, 0.4, 0.4]  # lower is better


def test_searches_count_the_budget_and_flag_a_best_trial_in_the_last_fifth():
    summary = T.searches(tuning_records()).set_index("model")
    gcn, gat = summary.loc["GCN"], summary.loc["GAT"]
    assert (gcn["trials"], gcn["completed"], gcn["pruned"], gcn["diverged"]) == (10, 8, 1, 1)
    assert gcn["seconds"] == 20.0 and gat["seconds"] == 7.5
    assert (gcn["best_trial"], gcn["best_val"], gcn["converged"]) == (3, 80.0, True)  # the first of the tied 80s
    assert (gat["best_trial"], gat["best_val"], gat["converged"]) == (4, 75.0, False)
    # position 8 of 10 is not beyond 0.8 · 10; position 9 is
    at8 = frame([trial("X", t, 90.0 if t == 7 else 50.0) for t in range(10)])
    at9 = frame([trial("X", t, 90.0 if t == 8 else 50.0) for t in range(10)])
    assert T.searches(at8)["converged"].tolist() == [True] and T.searches(at9)["converged"].tolist() == [False]
    nothing = T.searches(frame([trial("X", t, None, pruned=1) for t in range(3)]))
    assert nothing["converged"].tolist() == [None] and np.isnan(nothing["best_trial"].iloc[0])


def test_searches_per_outer_fold_are_separate():
    rows = [trial("GIN", t, v, split=fold) for fold, values in ((0, [60.0, 65.0]), (1, [70.0, 61.0]))
            for t, v in enumerate(values)]
    summary = T.searches(frame(rows))
    assert summary[["split", "best_trial", "converged"]].values.tolist() == [[0, 1, False], [1, 0, True]]


def test_tuning_curve_figure_has_one_line_per_search_and_flags_the_unconverged(tmp_path):
    figure = T.tuning_curves_figure(tuning_records(), "D")
    axes = figure.axes[0]
    lines = {line.get_label(): line for line in axes.get_lines()}
    assert set(lines) == {"GCN", "GAT — not converged"}
    assert list(lines["GCN"].get_xdata()) == list(range(1, 11))
    assert list(lines["GAT — not converged"].get_ydata()) == [70.0, 71.0, 71.0, 74.0, 75.0]
    T.tuning_curves(tuning_records(), "D", tmp_path / "c.png", tmp_path / "c.svg")
    assert (tmp_path / "c.png").stat().st_size > 0 and (tmp_path / "c.svg").read_text().lstrip().startswith("<?xml")
    with pytest.raises(DataError, match="no tuning trials"):
        T.tuning_curves_figure(frame([row(model="GCN", stage="run", test_score=1.0)]), "D")


def test_trial_table_lists_every_trial_with_params_and_the_search_flag(tmp_path):
    files = [tmp_path / f"t.{ext}" for ext in ("csv", "md", "parquet")]
    T.trial_report(tuning_records(), "D", *files)
    table = pd.read_parquet(files[2])
    assert list(table.columns) == [*T.TRIAL_COLUMNS, "converged"] and len(table) == 15
    second = table[(table["model"] == "GCN") & (table["trial"] == 1)].iloc[0]
    assert json.loads(second["params"]) == {"layers": 2, "lr": 0.2} and second["pruned_epoch"] == 3
    assert second["round"] == 0 and pd.isna(second["val_score"]) and second["seconds"] == 2.0
    assert table.loc[table["model"] == "GAT", "converged"].tolist() == [False] * 5
    md = files[1].read_text()
    assert "| GAT | s | 0 | 5 | 5 | 0 | 0 | 7.5 | 4 | 75 | **not converged** |" in md
    assert "| GCN | s | 0 | 1 | 0 | `{\"layers\": 2, \"lr\": 0.2}` | – | 3 | 2.0 |" in md


def versus_records() -> pd.DataFrame:
    """Published and tuned runs of GCN and GAT on 8 splits, with trials (GCN: 10, one pruned; GAT: 5)."""
    published = {"GCN": [70.0, 71.0, 69.0, 72.0, 70.0, 71.0, 70.0, 71.0],
                 "GAT": [68.0, 69.0, 70.0, 67.0, 68.0, 69.0, 68.0, 69.0]}
    tuned = {"GCN": [73.0, 74.5, 71.0, 75.0, 72.5, 74.0, 73.0, 74.0],
             "GAT": [68.2, 68.9, 70.1, 67.0, 68.1, 68.8, 68.0, 69.1]}
    rows = []
    for model, values in published.items():
        rows += [row(model=model, stage="run", split=s, test_score=v, seconds=3.0) for s, v in enumerate(values)]
    for model, values in tuned.items():
        rows += [row(model=f"{model}-tuned", stage="run", split=s, test_score=v, seconds=4.0)
                 for s, v in enumerate(values)]
    return pd.concat([tuning_records(), frame(rows)], ignore_index=True), published, tuned


def test_published_vs_tuned_rows_budget_and_paired_tests():
    runs, published, tuned = versus_records()
    table, versus, among = T.published_vs_tuned(runs, ("split",), "run")
    rows = table.set_index("model")
    gcn = rows.loc["GCN"]
    assert gcn["published_mean"] == pytest.approx(np.mean(published["GCN"]))
    assert gcn["published_std"] == pytest.approx(np.std(published["GCN"], ddof=1))
    assert gcn["tuned_mean"] == pytest.approx(np.mean(tuned["GCN"]))
    assert gcn["delta"] == pytest.approx(np.mean(tuned["GCN"]) - np.mean(published["GCN"]))
    assert (gcn["trials"], gcn["completed"], gcn["pruned"], gcn["not_converged"]) == (10, 8, 1, 0)
    # seconds: 10 trials × 2 s + 8 tuned runs × 4 s; GAT: 5 × 1.5 s + 32 s; all on CPU (no CUDA device)
    assert (gcn["trial_seconds"], gcn["tuned_run_seconds"], gcn["cpu_seconds"], gcn["gpu_seconds"]) == (
        20.0, 32.0, 52.0, 0.0)
    assert rows.loc["GAT", "cpu_seconds"] == 39.5 and rows.loc["GAT", "not_converged"] == 1
    # tuned vs published: 8 pairs (Wilcoxon decides: all 8 in GCN-tuned's favour, p = 2/2^8), Holm over the models
    assert [tuple(p) for p in versus[["model_a", "model_b"]].to_numpy()] == [("GCN-tuned", "GCN"),
                                                                              ("GAT-tuned", "GAT")]
    assert versus["wilcoxon_p_holm"].to_numpy() == pytest.approx(holm(versus["wilcoxon_p"]))
    assert gcn["verdict"] == "GCN-tuned better (Wilcoxon)" and gcn["p_holm"] == versus["wilcoxon_p_holm"].iloc[0]
    assert versus["wilcoxon_p"].iloc[0] == pytest.approx(2 / 2**8) and gcn["pairs"] == 8
    # GAT tuned within ±0.2 of published: equivalent within 1 point of accuracy
    assert rows.loc["GAT", "verdict"] == "equivalent within δ = 1"
    assert list(among[["model_a", "model_b"]].iloc[0]) == ["GCN-tuned", "GAT-tuned"] and len(among) == 1
    assert among["ttest_p"].iloc[0] == pytest.approx(ttest_rel(tuned["GCN"], tuned["GAT"]).pvalue)


def test_published_vs_tuned_report_files_and_errors(tmp_path):
    runs, published, tuned = versus_records()
    files = [tmp_path / f"v.{ext}" for ext in ("csv", "md", "parquet")]
    T.published_vs_tuned_report(runs, "D", *files, units="random splits (mean over inits)")
    assert list(pd.read_csv(files[0]).columns) == list(T.VERSUS_COLUMNS)
    md = files[1].read_text()
    p, t = np.array(published["GCN"]), np.array(tuned["GCN"])  # 70.5 ± 0.926, 73.375 ± 1.246
    assert (f"| GCN | {p.mean():.3f} ± {p.std(ddof=1):.3f} | {t.mean():.3f} ± {t.std(ddof=1):.3f} | "
            f"+{t.mean() - p.mean():.3f} | 10 (8 / 1) | 52 (20 + 32) | 52 / 0 | 0 of 1 | 8 |") in md
    assert "| GAT | 68.500 ± 0.926 |" in md and "**1 of 1**" in md
    assert "## D, tuned models: is A better than B? Paired tests over random splits (mean over inits)" in md
    with pytest.raises(DataError, match="no tuned runs \\(model labels ending in '-tuned'\\)"):
        T.published_vs_tuned(runs[~runs["model"].str.endswith("-tuned")])


def test_published_vs_tuned_splits_the_seconds_by_the_records_device():
    """GPU seconds: the trials' and tuned runs' records whose device is CUDA; the published runs' never count."""
    runs = versus_records()[0]
    gpu = (runs["model"] == "GCN-tuned") & (runs["split"] < 3) | (runs["stage"] == "trial") & (runs["model"] == "GAT")
    runs["device"] = np.where(gpu, "cuda (NVIDIA H200)", "cpu (x86_64)")
    published = (runs["model"] == "GCN") & (runs["stage"] == "run")
    runs.loc[published, "device"] = "cuda (NVIDIA H200)"  # the published runs: not the tuning's budget
    rows = T.published_vs_tuned(runs)[0].set_index("model")
    assert (rows.loc["GCN", "gpu_seconds"], rows.loc["GCN", "cpu_seconds"]) == (3 * 4.0, 20.0 + 5 * 4.0)
    assert (rows.loc["GAT", "gpu_seconds"], rows.loc["GAT", "cpu_seconds"]) == (5 * 1.5, 32.0)
