"""Result tables: values against direct computation, formats on disk. The benchmarking-gnns table reads the runs'
records (gnnbench.records), written here as a run writes them (benchmarking_gnns.run_records of its metrics.json
content); the expected numbers are computed from the scores the tests wrote."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from gnnbench.errors import DataError
from gnnbench.protocols.benchmarking_gnns.tables import aggregate_tables
from gnnbench.protocols.benchmarking_gnns.train import run_records
from gnnbench.records import write_records


def fake_metrics(label, seed, fold, test, train, scheme, params=1000, epochs=10) -> dict:
    """A run's metrics.json content (what training/last_epoch.py writes, the fields the record takes)."""
    return {
        "dataset": "D", "label": label, "model": label.split("-")[0], "seed": seed, "fold": fold,
        "metric": "accuracy", "higher_is_better": True, "data": {"split_scheme": scheme},
        "test": {"metric": test, "loss": 0.1}, "val": {"metric": test + 1, "loss": 0.1},
        "train": {"metric": train, "loss": 0.1}, "num_params": params, "epochs": epochs,
        "seconds_per_epoch": 2.0 * epochs, "total_seconds": 36.0 * epochs, "total_hours": 36.0 * epochs / 3600,
        "stop_reason": "min_lr", "status": "completed", "device": "cpu", "versions": {"torch": "x"},
        "config": {"model": label.split("-")[0], "L": 4, "seed": seed}}


def write_run(folder, metrics: dict):
    """The run's record file, as the train job writes it beside its metrics.json."""
    path = folder / metrics["label"] / f"seed{metrics['seed']}_fold{metrics['fold']}.parquet"
    write_records(path, run_records(metrics))
    return path


def fake_run(folder, label, seed, fold, test, train, scheme, params=1000, epochs=10):
    return write_run(folder, fake_metrics(label, seed, fold, test, train, scheme, params, epochs))


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
        # s/epoch: the training epochs' seconds over their count (2 × epochs here), not total seconds / epochs
        assert row["epochs_mean"] == pytest.approx(12.0) and row["seconds_per_epoch_mean"] == pytest.approx(24.0)
        assert row["total_hours_mean"] == pytest.approx(36.0 * 12 / 3600)
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


def test_missing_corrupt_or_foreign_record_files(tmp_path):
    with pytest.raises(DataError, match="nope.parquet does not exist"):
        aggregate_tables([tmp_path / "nope.parquet"], tmp_path / "a.csv", tmp_path / "a.md", tmp_path / "a.parquet")
    broken = tmp_path / "broken.parquet"
    broken.write_text("not parquet")
    with pytest.raises(DataError, match="broken.parquet is corrupt"):
        aggregate_tables([broken], tmp_path / "a.csv", tmp_path / "a.md", tmp_path / "a.parquet")
    # a record of another protocol's job has no seconds per training epoch: refused, not shown as NaN
    from gnnbench.records import record

    foreign = tmp_path / "chunk0.parquet"
    write_records(foreign, [record(protocol="pitfalls", dataset="D", model="GCN", config={"model": "GCN"},
                                   test_score=80.0, status="completed")])
    with pytest.raises(DataError, match="GCN .*protocol pitfalls.* has no seconds_per_epoch"):
        aggregate_tables([foreign], tmp_path / "a.csv", tmp_path / "a.md", tmp_path / "a.parquet")
    assert not list(tmp_path.glob("a.*"))


def test_a_record_file_of_an_older_schema_is_refused(tmp_path):
    """Parquet would read a column the file lacks as nulls; the reader names the file instead."""
    import pyarrow.parquet as pq

    path = fake_run(tmp_path, "GCN", 0, 0, 80.0, 90.0, "given")
    pq.write_table(pq.read_table(path).drop_columns(["split_scheme", "extra"]), path)
    with pytest.raises(DataError, match="GCN/seed0_fold0.parquet has no column split_scheme, extra"):
        aggregate_tables([path], tmp_path / "a.csv", tmp_path / "a.md", tmp_path / "a.parquet")


def test_multitask_per_task_scores_and_baseline_rows(tmp_path):
    """GraphTheoryProp-style runs report each task's test score; a baseline record (no loss) is a row too."""
    rng = np.random.default_rng(1)
    tasks = ["sssp", "eccentricity", "graph_laplacian_features", "is_connected", "diameter", "spectral_radius"]
    files, values = [], rng.uniform(-3, 0, (3, len(tasks)))
    for seed in range(3):
        metrics = fake_metrics("GIN", seed, 0, float(values[seed].mean()), -1.0, "given")
        metrics["test"]["per_task"] = [list(pair) for pair in zip(tasks, values[seed].tolist(), strict=True)]
        files.append(write_run(tmp_path, metrics))
    baseline = fake_metrics("kNN", 0, 0, -0.5, -0.5, "given", params=0, epochs=0)
    baseline["test"]["loss"] = None
    aggregate_tables([*files, write_run(tmp_path, baseline)], tmp_path / "D.csv", tmp_path / "D.md",
                     tmp_path / "D.parquet")
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


def diverged_run(folder, label, seed, fold, scheme="given", epochs=3):
    """The record of a run whose metrics.json says it diverged: status, diverged_epoch, null scores."""
    m = fake_metrics(label, seed, fold, 0.0, 0.0, scheme, epochs=epochs)
    m.update({"status": "diverged", "diverged_epoch": epochs - 1, "stop_reason": "diverged",
              **{part: {"metric": None, "loss": None} for part in ("train", "val", "test")}})
    return write_run(folder, m)


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


def test_the_table_of_real_runs_equals_their_metrics_json(tmp_path, datasets):
    """Two real CSL runs (each writes metrics.json and its record): the table read from the records holds the
    numbers of the metrics.json files — scores, seconds per training epoch (elapsed / epochs, not total / epochs),
    total hours — computed here from the JSON with NumPy."""
    from gnnbench.config.presets import run_config
    from gnnbench.protocols.benchmarking_gnns.train import train

    config = run_config("CSL_graph_classification_GCN_CSL_PE_100k",
                        {"L": 2, "hidden_dim": 8, "out_dim": 8, "batch_size": 8, "epochs": 2})
    records, metrics = [], []
    for fold in (0, 1):
        out = tmp_path / f"fold{fold}"
        train(dataset_dir=datasets["CSL"], splits_path=datasets["CSL_splits"], fold=fold,
              config={**config, "seed": 7}, out_dir=out, pe_path=datasets["CSL_pe"], threads=1, label="GCN-PE",
              records_out=out / "records" / "run.parquet")
        records.append(out / "records" / "run.parquet")
        metrics.append(json.loads((out / "metrics.json").read_text()))
    aggregate_tables(records, tmp_path / "D.csv", tmp_path / "D.md", tmp_path / "D.parquet")
    row = pd.read_parquet(tmp_path / "D.parquet").iloc[0]
    assert (row["model"], row["architecture"], row["runs"], row["folds"]) == ("GCN-PE", "GCN", 2, 2)
    assert row["params"] == metrics[0]["num_params"]
    expected = {"test_metric": [m["test"]["metric"] for m in metrics],
                "train_metric": [m["train"]["metric"] for m in metrics],
                "epochs": [m["epochs"] for m in metrics],
                "seconds_per_epoch": [m["seconds_per_epoch"] for m in metrics],
                "total_hours": [m["total_hours"] for m in metrics]}
    for column, values in expected.items():
        assert row[f"{column}_mean"] == np.mean(values), column
        assert row[f"{column}_std"] == np.std(values), column
    assert row["test_metric_min"] == min(expected["test_metric"])  # stratified k-fold: extrema
    spe = [m["seconds_per_epoch"] for m in metrics]
    assert spe != [m["total_seconds"] / m["epochs"] for m in metrics]  # the training epochs only
