"""Result tables: values against direct computation, formats on disk."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from gnnbench.errors import DataError
from gnnbench.protocols.benchmarking_gnns import aggregate_tables


def fake_run(folder, label, seed, fold, test, train, protocol, params=1000, epochs=10):
    path = folder / label / f"seed{seed}" / f"fold{fold}" / "metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({
        "dataset": "D", "label": label, "model": label.split("-")[0], "seed": seed, "fold": fold,
        "metric": "accuracy", "higher_is_better": True, "data": {"split_protocol": protocol},
        "test": {"metric": test, "loss": 0.1}, "val": {"metric": test + 1, "loss": 0.1},
        "train": {"metric": train, "loss": 0.1}, "num_params": params, "epochs": epochs,
        "seconds_per_epoch": 2.0 * epochs, "total_hours": epochs / 100, "stop_reason": "min_lr"}))
    return path


def test_cross_validation_table(tmp_path):
    rng = np.random.default_rng(0)
    files, expected = [], {}
    for label in ("GCN", "GCN-PE"):
        tests = rng.uniform(0, 100, (2, 5))
        for seed in range(2):
            for fold in range(5):
                files.append(fake_run(tmp_path, label, seed, fold, float(tests[seed, fold]), 50.0 + seed,
                                      "stratified_kfold", epochs=10 + fold))
        expected[label] = tests.ravel()
    aggregate_tables(files, tmp_path / "D.csv", tmp_path / "D.md", tmp_path / "D.parquet")
    table = pd.read_parquet(tmp_path / "D.parquet")
    assert table["model"].tolist() == ["GCN", "GCN-PE"]
    for _, row in table.iterrows():
        values = expected[row["model"]]
        assert row["runs"] == 10 and row["seeds"] == 2 and row["folds"] == 5 and row["params"] == 1000
        assert row["test_metric_mean"] == pytest.approx(values.mean())
        assert row["test_metric_std"] == pytest.approx(values.std())  # population std (ddof 0), as np.std
        assert row["test_metric_min"] == pytest.approx(values.min())
        assert row["test_metric_max"] == pytest.approx(values.max())
        assert row["train_metric_mean"] == pytest.approx(50.5) and row["train_metric_std"] == pytest.approx(0.5)
        assert row["epochs_mean"] == pytest.approx(12.0) and row["seconds_per_epoch_mean"] == pytest.approx(24.0)
        assert row["total_hours_mean"] == pytest.approx(0.12)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "D.csv"), table, check_dtype=False)
    markdown = (tmp_path / "D.md").read_text().splitlines()
    assert markdown[0] == "## D" and "Test min" in markdown[2] and "Test max" in markdown[2]
    gcn = table.iloc[0]
    assert f"| GCN | 10 | 1,000 | {gcn.test_metric_mean:.3f} ± {gcn.test_metric_std:.3f} |" in markdown[4]


def test_fixed_split_table_has_no_extrema(tmp_path):
    files = [fake_run(tmp_path, "MLP", seed, 0, 80.0 + seed, 90.0, "given") for seed in range(4)]
    aggregate_tables(files, tmp_path / "D.csv", tmp_path / "D.md", tmp_path / "D.parquet")
    table = pd.read_parquet(tmp_path / "D.parquet")
    assert "test_metric_min" not in table and table["test_metric_std"].iloc[0] == pytest.approx(np.std([80, 81,
                                                                                                          82, 83]))
    assert "Test min" not in (tmp_path / "D.md").read_text()


def test_missing_or_incomplete_metrics_files(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        aggregate_tables([tmp_path / "nope.json"], tmp_path / "a.csv", tmp_path / "a.md", tmp_path / "a.parquet")
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"dataset": "D"}))
    with pytest.raises(DataError, match="lacks 'label'"):
        aggregate_tables([broken], tmp_path / "a.csv", tmp_path / "a.md", tmp_path / "a.parquet")
    assert not list(tmp_path.glob("a.*"))


def test_multitask_per_task_scores_and_baseline_rows(tmp_path):
    """GraphTheoryProp-style runs report each task's test score; a baseline record (no loss) is a row too."""
    rng = np.random.default_rng(1)
    tasks = ["sssp", "eccentricity", "graph_laplacian_features", "is_connected", "diameter", "spectral_radius"]
    files, values = [], rng.uniform(-3, 0, (3, len(tasks)))
    for seed in range(3):
        path = fake_run(tmp_path, "GIN", seed, 0, float(values[seed].mean()), -1.0, "given")
        record = json.loads(path.read_text())
        record["test"]["per_task"] = [list(pair) for pair in zip(tasks, values[seed].tolist(), strict=True)]
        path.write_text(json.dumps(record))
        files.append(path)
    baseline = fake_run(tmp_path, "kNN", 0, 0, -0.5, -0.5, "given", params=0, epochs=0)
    record = json.loads(baseline.read_text())
    record["test"]["loss"] = None
    baseline.write_text(json.dumps(record))
    aggregate_tables([*files, baseline], tmp_path / "D.csv", tmp_path / "D.md", tmp_path / "D.parquet")
    table = pd.read_parquet(tmp_path / "D.parquet").set_index("model")
    for t, task in enumerate(tasks):
        assert table.loc["GIN", f"test_{task}_mean"] == pytest.approx(values[:, t].mean())
        assert table.loc["GIN", f"test_{task}_std"] == pytest.approx(values[:, t].std())
        assert np.isnan(table.loc["kNN", f"test_{task}_mean"])
    assert table.loc["kNN", "params"] == 0
    md = (tmp_path / "D.md").read_text().splitlines()
    header = [c.strip() for c in md[2].strip("|").split("|")]
    assert header[4:10] == [f"Test {task}" for task in tasks]
    gin = [c.strip() for c in md[4].strip("|").split("|")]
    assert gin[4] == f"{values[:, 0].mean():.3f} ± {values[:, 0].std():.3f}"


def diverged_run(folder, label, seed, fold, protocol="given", epochs=3):
    """A run's metrics.json as a diverged run writes it: status, diverged_epoch, null scores."""
    path = fake_run(folder, label, seed, fold, 0.0, 0.0, protocol, epochs=epochs)
    m = json.loads(path.read_text())
    m.update({"status": "diverged", "diverged_epoch": epochs - 1, "stop_reason": "diverged",
              **{part: {"metric": None, "loss": None} for part in ("train", "val", "test")}})
    path.write_text(json.dumps(m))
    return path


def test_diverged_runs_are_counted_not_averaged(tmp_path):
    files = [fake_run(tmp_path, "GCN", seed, 0, 80.0 + seed, 90.0 + seed, "given", epochs=10 + seed)
             for seed in range(3)]
    files.insert(1, diverged_run(tmp_path, "GCN", 9, 0))
    files += [diverged_run(tmp_path, "MLP", seed, 0) for seed in range(2)]
    aggregate_tables(files, tmp_path / "D.csv", tmp_path / "D.md", tmp_path / "D.parquet")
    table = pd.read_parquet(tmp_path / "D.parquet").set_index("model")
    gcn, mlp = table.loc["GCN"], table.loc["MLP"]
    assert gcn["runs"] == 4 and gcn["diverged"] == 1 and mlp["runs"] == mlp["diverged"] == 2
    completed = np.array([80.0, 81.0, 82.0])  # the mean and std of the three completed runs only
    assert gcn["test_metric_mean"] == pytest.approx(completed.mean())
    assert gcn["test_metric_std"] == pytest.approx(completed.std())
    assert gcn["train_metric_mean"] == pytest.approx(91.0) and gcn["epochs_mean"] == pytest.approx(11.0)
    assert np.isnan(mlp["test_metric_mean"])
    markdown = (tmp_path / "D.md").read_text()
    assert f"| GCN | 4 | 1,000 | {completed.mean():.3f} ± {completed.std():.3f} (1 of 4 diverged) |" in markdown
    mlp_line = next(line for line in markdown.splitlines() if line.startswith("| MLP "))
    assert "| diverged (2 of 2) |" in mlp_line and "nan" not in mlp_line


def test_metrics_files_without_a_status_count_as_completed(tmp_path):
    files = [fake_run(tmp_path, "GCN", seed, 0, 80.0, 90.0, "given") for seed in range(2)]  # no "status" key
    aggregate_tables(files, tmp_path / "D.csv", tmp_path / "D.md", tmp_path / "D.parquet")
    table = pd.read_parquet(tmp_path / "D.parquet")
    assert table["diverged"].tolist() == [0] and table["test_metric_mean"].tolist() == [80.0]
    assert "diverged" not in (tmp_path / "D.md").read_text()
