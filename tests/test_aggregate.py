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
