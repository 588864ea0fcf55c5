"""Tuning in suites and the workflow (docs/tuning.md): the `tuning:` key, the planned rounds and selections, the
round and selection jobs under every protocol — deterministic, blind to test labels, resumable — and the DAG."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO_ROOT, job_counts, snakemake

from gnnbench import paths
from gnnbench.data.meta import read_dataset, write_dataset
from gnnbench.errors import ConfigError
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.protocols.tuning import read_tuning_selection, select_search, tuned_run
from gnnbench.protocols.tuning_jobs import run_round
from gnnbench.records import read_histories, read_runs
from gnnbench.splits import read_splits
from gnnbench.suite import load_suite

pytestmark = pytest.mark.xdist_group("tuning_wire")

SPLITS = {"CSL": {"scheme": "stratified_kfold", "folds": 5, "val_fraction": 0.25, "seed": 0},
          "CSBM": {"scheme": "random_per_class", "splits": 2, "seed": 1},
          "GF": {"scheme": "stratified_kfold", "folds": 2, "val_fraction": 0.1, "seed": 0}}
SPACE_LR = {"log_uniform": [1.0e-3, 1.0e-1]}
SUITE = {
    "threads_per_run": 1,
    "datasets": {
        "CSL": {"generator": "csl", "seed": 2, "params": {"copies_per_class": 5}, "split": SPLITS["CSL"]},
        "CSBM": {"generator": "csbm", "seed": 1, "params": {"num_nodes": 240, "num_classes": 3},
                 "split": SPLITS["CSBM"]},
        "GF": {"generator": "graph_families", "seed": 1, "params": {"num_graphs": 60, "features": "degree"},
               "split": SPLITS["GF"]},
    },
    "benchmarks": {
        "CSL": {"seeds": [1], "folds": [0], "set": {"epochs": 2, "L": 2, "hidden_dim": 8, "out_dim": 8,
                                                      "batch_size": 16},
                "tuning": {"trials": 3, "per_round": 2, "seed": 3,
                           "space": {"init_lr": {"log_uniform": [1.0e-4, 1.0e-2]}, "dropout": {"uniform": [0, 0.5]}}},
                "models": {"GCN": "CSL_graph_classification_GCN_CSL_100k",
                           "MLP": "CSL_graph_classification_MLP_CSL_100k"}},
        "CSBM": {"protocol": "pitfalls", "inits": 2, "set": {"early_stopping_tolerance": 5},
                 "tuning": {"trials": 3, "per_round": 2, "splits": 1, "sampler": "random",
                            "space": {"learning_rate": SPACE_LR}},
                 "models": {"GCN": "pitfalls_GCN", "MLP": "pitfalls_MLP"}},
        "GF": {"protocol": "fair-comparison", "final_runs": 1, "set": {"epochs": 3, "patience": 2},
               "tuning": {"trials": 3, "per_round": 2, "space": {"learning_rate": SPACE_LR,
                                                                 "l2": {"log_uniform": [1.0e-6, 1.0e-3]}}},
               "models": {"Baseline": {"preset": "fair_Baseline_social",
                                       "grid": {"learning_rate": [0.01], "hidden_units": [8], "l2": [0.0001]}},
                          "GIN": {"preset": "fair_GIN", "set": {"aggregation": "sum", "dropout": 0.0,
                                                               "train_eps": False, "batch_size": 32},
                                  "grid": {"hidden_units": [[8]]}}}},
    },
}


def _suite(**benchmarks) -> dict:
    config = json.loads(json.dumps(SUITE))
    for name, changes in benchmarks.items():
        config["benchmarks"][name].update(changes)
    return config


@pytest.fixture(scope="module")
def suite():
    return load_suite(_suite())


@pytest.fixture(scope="module")
def data(suite, tmp_path_factory) -> dict:
    """The suite's three datasets and split files on disk: name -> (dataset folder, split file)."""
    root = tmp_path_factory.mktemp("tuning_data")
    out = {}
    for name, entry in SUITE["datasets"].items():
        generate_dataset(entry["generator"], name, entry["params"], entry["seed"], root / name)
        split = suite.datasets[name].split  # resolved: the scheme's defaults filled in
        make_split_file(root / name, split["scheme"], {k: v for k, v in split.items() if k != "scheme"},
                        root / f"{name}_splits.json")
        out[name] = (root / name, root / f"{name}_splits.json")
    return out


def _search(suite, name: str, model: str, data, root: Path, only: str | None = None) -> None:
    """Every round and the selection of every search of ``model`` (``only``: that search), as the workflow's jobs run
    them, under ``root``."""
    benchmark = suite.benchmarks[name]
    dataset_dir, splits = data[name]
    for search in benchmark.searches(model):
        if only not in (None, search):
            continue
        records = []
        for r in range(benchmark.tuning[model].rounds):
            job = benchmark.tuning_job(model, search, r)
            out = root / paths.TUNING_ROUND.format(protocol=benchmark.protocol, dataset=name, model=model,
                                                   search=search, round=r)
            run_round(job=job, dataset_dir=dataset_dir, splits_path=splits, pe_path=None, previous=list(records),
                      out=out, records_out=root / benchmark.trial_record_file(model, search, r), threads=1)
            records.append(root / benchmark.trial_record_file(model, search, r))
        select_search(records, root / benchmark.tuning_selection(model, search), job=benchmark.tuning_job(model,
                                                                                                     search, 0))


def _tune_all(suite, data, root: Path) -> None:
    for name, benchmark in suite.benchmarks.items():
        for model in benchmark.tuning:
            _search(suite, name, model, data, root)


def _trials(root: Path):
    """The trial records under ``root`` without what differs between runs of the same trials (time, device)."""
    runs = read_runs(root / paths.RECORDS_DIR).drop(columns=["seconds", "device", "versions"])
    return runs.sort_values(["protocol", "dataset", "model", "split", "init"]).reset_index(drop=True)


def _selections(root: Path) -> dict:
    return {str(p.relative_to(root)): read_tuning_selection(p) for p in sorted(root.rglob("selection.json"))}


@pytest.fixture(scope="module")
def tuned(suite, data, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tuned_a")
    _tune_all(suite, data, root)
    return root


# ------------------------------------------------------------------------------------------------ the suite key


def test_planned_rounds_selections_and_tuned_runs(suite):
    csl, csbm, gf = (suite.benchmarks[n] for n in ("CSL", "CSBM", "GF"))
    assert list(csl.models) == ["GCN", "MLP", "GCN-tuned", "MLP-tuned"]
    assert csl.tuning["GCN"].rounds == 2 and [csl.tuning["GCN"].round_size(r) for r in (0, 1)] == [2, 1]
    # benchmarking-gnns: one search, tuned on fold 0 with the first seed; the tuned runs read its selection
    assert csl.tuning_scope("GCN", "main") == {"fold": 0, "seed": 1, "pe": None, "stack": False}
    assert csl.job_inputs("GCN-tuned") == {"tuning": "results/tuning/benchmarking-gnns/CSL/GCN/main/selection.json"}
    assert csl.job_inputs("GCN") == {}
    assert "results/records/benchmarking-gnns/CSL/GCN-tuned/seed1_fold0.parquet" in csl.record_files()
    # pitfalls: the first tuning.splits random splits
    assert csbm.tuning_scope("GCN", "main") == {"splits": [0], "seed": 0}
    # fair-comparison: a search per outer fold, no grid for the tuned model, its final runs read the fold's search
    assert gf.searches("GIN") == ["fold0", "fold1"]
    assert gf.num_parts("GIN-tuned") == 0
    assert gf.final_selection("GIN-tuned", 1) == "results/tuning/fair-comparison/GF/GIN/fold1/selection.json"
    assert gf.final_selection("GIN", 1) == "results/runs/GF/GIN/fold1/selection.json"
    assert gf.tuning_files()[:3] == ["results/records/fair-comparison/GF/Baseline/tune_fold0_round0.parquet",
                                     "results/records/fair-comparison/GF/Baseline/tune_fold0_round1.parquet",
                                     "results/tuning/fair-comparison/GF/Baseline/fold0/selection.json"]
    assert len(suite.tuning_files()) == 2 * 3 + 2 * 3 + 2 * 2 * 3


def test_a_tuned_benchmarks_report_job_writes_the_tuning_report_from_every_searchs_trial_records(suite):
    from gnnbench.report_jobs import dataset_outputs

    gf = suite.benchmarks["GF"]
    # the trial records of every round of every search (2 models x 2 outer folds x 2 rounds), none of the records
    trials = gf.tuning_record_files()
    assert trials == [f"results/records/fair-comparison/GF/{m}/tune_fold{f}_round{r}.parquet"
                      for m in ("Baseline", "GIN") for f in (0, 1) for r in (0, 1)]
    assert not set(trials) & set(gf.record_files())
    outputs = dataset_outputs(gf, significance=True)
    assert {role: outputs[role] for role in outputs if role.startswith(("tuning", "trials"))} == {
        **{f"tuning_{e}": f"results/tables/GF_tuning.{e}" for e in ("csv", "md", "parquet")},
        "tuning_html": "results/report/tables/GF_tuning.html",
        **{f"trials_{e}": f"results/tables/GF_trials.{e}" for e in ("csv", "md", "parquet")},
        "trials_html": "results/report/tables/GF_trials.html",
        "tuning_png": "results/plots/GF_tuning.png", "tuning_svg": "results/plots/GF_tuning.svg"}
    assert set(gf.tuning_report_files()) <= set(suite.table_files())
    plain = load_suite(_suite(GF={"tuning": {"trials": 0}})).benchmarks["GF"]  # nothing tuned: no tuning report
    assert plain.tuning_report_files() == [] and plain.tuning_record_files() == []
    assert not [role for role in dataset_outputs(plain, significance=True) if role.startswith(("tuning", "trials"))]


def test_a_model_may_set_its_own_budget_or_opt_out():
    config = _suite(CSL={"models": {"GCN": {"preset": "CSL_graph_classification_GCN_CSL_100k",
                                            "tuning": {"trials": 5}},
                                    "MLP": {"preset": "CSL_graph_classification_MLP_CSL_100k",
                                            "tuning": {"trials": 0}}}})
    csl = load_suite(config).benchmarks["CSL"]
    assert csl.tuning["GCN"].trials == 5 and csl.tuning["GCN"].rounds == 3
    # a larger budget adds rounds: what the earlier round jobs are told (their Snakemake params) is unchanged
    assert csl.tuning_job("GCN", "main", 0) == load_suite(_suite()).benchmarks["CSL"].tuning_job("GCN", "main", 0)
    assert "MLP" not in csl.tuning and "MLP-tuned" not in csl.models


@pytest.mark.parametrize(("change", "message"), [
    ({"CSL": {"tuning": {"trials": 2, "splits": 1}}},
     "benchmarks.CSL.tuning.splits: protocol benchmarking-gnns does not tune on a subset of random splits"),
    ({"CSBM": {"tuning": {"splits": 5}}}, "benchmarks.CSBM.tuning.splits: 5 splits asked, but dataset CSBM has 2"),
    ({"CSL": {"tuning": {"sampler": "grid"}}}, "benchmarks.CSL.tuning.sampler: 'grid' is not one of"),
    ({"CSL": {"tuning": {"trails": 3}}}, "benchmarks.CSL.tuning: Additional properties are not allowed ('trails'"),
    ({"CSL": {"tuning": {"space": {"hidden_channels": {"int": [8, 16]}}}}},
     "benchmarks.CSL.tuning.space.hidden_channels: model GCN has no key 'hidden_channels'"),
    ({"CSL": {"tuning": {"space": {"init_lr": {"log_uniform": [0, 1]}}}}},
     "benchmarks.CSL.tuning.space.init_lr.log_uniform: a log range needs low > 0"),
    ({"CSL": {"models": {"GCN": "CSL_graph_classification_GCN_CSL_100k",
                         "GCN-tuned": "CSL_graph_classification_GCN_CSL_100k"}}},
     "benchmarks.CSL.models.GCN-tuned: the label of model GCN's tuned runs is taken"),
    # label propagation has no weights: its default space is empty (a learning rate would change nothing)
    ({"CSBM": {"tuning": {"splits": 1}, "models": {"LP": "pitfalls_LabelProp"}}},
     "benchmarks.CSBM.models.LP.tuning: model LabelProp has no key to tune by default"),
])
def test_a_wrong_tuning_key_is_one_line_naming_it(change, message):
    with pytest.raises(ConfigError) as info:
        load_suite(_suite(**change))
    assert message in str(info.value) and "\n" not in str(info.value)


# ------------------------------------------------------------------------------------------------ the jobs


def test_trials_are_recorded_on_validation_only_and_the_best_is_selected(tuned):
    runs = read_runs(tuned / paths.RECORDS_DIR)
    assert set(runs["stage"]) == {"trial"}
    assert runs["test_score"].isna().all() and runs["test_loss"].isna().all()
    histories = read_histories(tuned / paths.HISTORIES_DIR)
    assert histories["test_score"].isna().all() and histories["val_score"].notna().any()
    gf = runs[(runs["dataset"] == "GF") & (runs["model"] == "GIN")]
    assert sorted(gf["split"].unique()) == [0, 1]  # one search per outer fold, on that fold
    for (dataset, model), group in runs.groupby(["dataset", "model"]):
        for search, trials in group.groupby(group["extra"].map(lambda e: json.loads(e)["search"])):
            extra = [json.loads(e) for e in trials["extra"]]
            assert sorted(e["trial"] for e in extra) == [0, 1, 2] and sorted(trials["init"]) == [0, 1, 2]
            assert [e["round"] for e in sorted(extra, key=lambda e: e["trial"])] == [0, 0, 1]
            benchmark_protocol = trials["protocol"].iloc[0]
            selection = read_tuning_selection(tuned / paths.TUNING_SELECTION.format(
                protocol=benchmark_protocol, dataset=dataset, model=model, search=search))
            scores = dict(zip([e["trial"] for e in extra], trials["val_score"], strict=True))
            best = max(scores.values())
            assert selection["chosen"]["val_score"] == best
            assert selection["chosen"]["trial"] == min(t for t, s in scores.items() if s == best)  # ties: first
            params = next(e["params"] for e in extra if e["trial"] == selection["chosen"]["trial"])
            assert selection["chosen"]["params"] == params
            assert {k: selection["chosen"]["config"][k] for k in params} == params


def test_the_same_suite_tunes_to_the_same_trials_and_selections(suite, data, tuned, tmp_path):
    _tune_all(suite, data, tmp_path)
    pd.testing.assert_frame_equal(_trials(tmp_path), _trials(tuned))
    assert _selections(tmp_path) == _selections(tuned)
    assert len(_selections(tuned)) == 2 + 2 + 2 * 2


def _corrupt_test_labels(dataset_dir: Path, splits_path: Path, folds: list[int], out: Path) -> tuple[Path, Path]:
    """A copy of the dataset whose labels at the test indices of ``folds`` (the folds or splits a search tunes on)
    are changed, and its split file (the same folds, pointing at the copy): what the search must never read."""
    meta, columns = read_dataset(dataset_dir)
    splits, old = read_splits(splits_path, meta), meta.checksum
    level = columns.node if meta.transductive else columns.graph
    labels = level["y"].copy()
    test = np.unique(np.concatenate([splits.fold(f)["test"] for f in folds]))
    labels[test] = (labels[test] + 1) % meta.num_outputs
    level["y"] = labels
    out.mkdir()
    new = write_dataset(out / "data", columns, meta)
    content = json.loads(splits_path.read_text())
    content["dataset_checksum"] = new.checksum
    (out / "splits.json").write_text(json.dumps(content))
    assert new.checksum != old and len(test) > 0
    return out / "data", out / "splits.json"


def test_corrupted_test_labels_change_no_trial_and_no_selection(suite, data, tuned, tmp_path):
    root = tmp_path / "results_corrupt"
    for name, benchmark in suite.benchmarks.items():
        for model in benchmark.tuning:
            for search in benchmark.searches(model):
                scope = benchmark.tuning_scope(model, search)
                folds = scope["splits"] if "splits" in scope else [scope["fold"]]
                out = tmp_path / f"{name}_{model}_{search}"
                corrupted = {name: _corrupt_test_labels(*data[name], folds, out)}
                _search(suite, name, model, corrupted, root, only=search)
    pd.testing.assert_frame_equal(_trials(root).drop(columns=["run_id"]), _trials(tuned).drop(columns=["run_id"]))
    assert _selections(root) == _selections(tuned)


def test_a_killed_round_reruns_to_the_same_records(suite, data, tuned, tmp_path, monkeypatch):
    from gnnbench.training import engine
    from gnnbench.training.preemption import Preempted

    benchmark = suite.benchmarks["GF"]
    job = benchmark.tuning_job("GIN", "fold0", 0)
    out = tmp_path / "round_0.json"
    records = tmp_path / "records" / "tune_fold0_round0.parquet"
    real, saves = engine._checkpoint.save_checkpoint, {"n": 0}

    def save_then_stop(path, state):  # killed right after the round's first trial (or stack epoch) is saved
        real(path, state)
        saves["n"] += 1
        if saves["n"] == 3:
            raise Preempted(15, "stopped")

    monkeypatch.setattr("gnnbench.protocols.fair_comparison.train.CHECKPOINT_SECONDS", 0)
    monkeypatch.setattr(engine._checkpoint, "save_checkpoint", save_then_stop)
    with pytest.raises(Preempted):
        run_round(job=job, dataset_dir=data["GF"][0], splits_path=data["GF"][1], pe_path=None, previous=[], out=out,
                  records_out=records, threads=1)
    assert (tmp_path / "round_0.checkpoint.pt").is_file() and not records.exists() and not out.exists()
    monkeypatch.setattr(engine._checkpoint, "save_checkpoint", real)
    run_round(job=job, dataset_dir=data["GF"][0], splits_path=data["GF"][1], pe_path=None, previous=[], out=out,
              records_out=records, threads=1)
    first = tuned / benchmark.trial_record_file("GIN", "fold0", 0)
    columns = ["run_id", "config", "val_score", "val_loss", "train_score", "epochs", "scored_epoch", "extra"]
    pd.testing.assert_frame_equal(read_runs([records])[columns], read_runs([first])[columns])


def test_a_plugin_model_tunes_in_the_space_it_declares(data, tmp_path):
    model = str(REPO_ROOT / "examples/own-model/my_gnn.py") + ":MixJK"
    config = _suite(CSL={"models": {"MixJK": {"model": model, "set": {"num_layers": 2, "hidden_channels": 8},
                                              "tuning": {"space": {"hidden_channels": {"int": [4, 12]},
                                                                   "init_lr": {"log_uniform": [1e-3, 1e-2]}}}}},
                         "set": {"epochs": 2, "batch_size": 16},
                         "tuning": {"trials": 2, "per_round": 2, "sampler": "random"}})
    suite = load_suite(config)
    _search(suite, "CSL", "MixJK", data, tmp_path)
    runs = read_runs(tmp_path / paths.RECORDS_DIR)
    assert len(runs) == 2 and set(runs["architecture"]) == {model}
    widths = [json.loads(c)["hidden_channels"] for c in runs["config"]]
    assert all(4 <= w <= 12 for w in widths) and widths == [json.loads(e)["params"]["hidden_channels"]
                                                              for e in runs["extra"]]
    selection = tmp_path / suite.benchmarks["CSL"].tuning_selection("MixJK", "main")
    run_config, extra = tuned_run({"model": model, "hidden_channels": 8, "seed": 7}, str(selection))
    chosen = read_tuning_selection(selection)["chosen"]
    assert run_config == {"model": model, "seed": 7, **chosen["params"]}
    assert extra["tuning"]["selected_trial"] == chosen["trial"] and extra["tuning"]["trials"] == 2


def test_a_hand_edited_selection_is_refused(tuned, tmp_path):
    path = next(tuned.rglob("selection.json"))
    body = json.loads(path.read_text())
    body["chosen"]["params"] = {k: 0.5 for k in body["chosen"]["params"]}
    (tmp_path / "selection.json").write_text(json.dumps(body))
    with pytest.raises(Exception, match="edited by hand or is corrupt"):
        tuned_run({}, str(tmp_path / "selection.json"))


# ------------------------------------------------------------------------------------------------ the workflow


def test_the_workflow_plans_rounds_selections_and_tuned_runs(tmp_path):
    dry = snakemake(tmp_path, "-n", config=_suite())
    assert dry.returncode == 0, dry.stderr[-3000:]
    counts = job_counts(dry.stdout)
    # rounds: 2 per search; searches: CSL 2 models, CSBM 2, GF 2 models × 2 folds
    assert counts["tune_round"] == 2 * (2 + 2 + 4) and counts["select_tuning"] == 2 + 2 + 4
    assert counts["fc_final"] == 2 * 2 * 2  # published and tuned models, two folds
    assert counts["fc_inner"] == 2 * 2  # the tuned models have no grid jobs
    assert counts["train"] == 4 and counts["train_inits"] == 4


def test_the_workflow_lints_with_tuning(tmp_path):
    lint = snakemake(tmp_path, "--lint", config=_suite())
    output = lint.stdout + lint.stderr
    assert lint.returncode == 0 and "Congratulations, your workflow is in a good condition!" in output, output
    assert "Lints for" not in output


def test_round_output_is_the_records_layout():
    rule = paths.RECORD_FILE.replace("{job}", paths.TRIAL_RECORD_JOB)
    assert rule == "results/records/{protocol}/{dataset}/{model}/tune_{search}_round{round}.parquet"


def test_pruned_trials_stop_early_without_a_score_and_prune_the_same_again(data, tmp_path):
    suite = load_suite(_suite(CSBM={"tuning": {"trials": 4, "per_round": 4, "splits": 1, "sampler": "random",
                                               "pruner": "asha", "min_epochs": 2,
                                               "space": {"learning_rate": {"log_uniform": [1e-4, 1e-1]}}}}))
    for root in (tmp_path / "a", tmp_path / "b"):
        _search(suite, "CSBM", "GCN", data, root)
    runs = read_runs(tmp_path / "a" / paths.RECORDS_DIR)
    extra = [json.loads(e) for e in runs["extra"]]
    pruned = runs["stop_reason"].eq("pruned").to_numpy()
    assert 0 < pruned.sum() < len(runs)  # asha: the first trial runs to its end, later ones below its rung stop
    assert runs.loc[pruned, "val_score"].isna().all() and runs.loc[~pruned, "val_score"].notna().all()
    assert [e["pruned_epoch"] for e in extra] == [e - 1 if p else None for e, p in zip(runs["epochs"], pruned,
                                                                                        strict=True)]
    histories = read_histories(tmp_path / "a" / paths.HISTORIES_DIR)
    last = histories.groupby("run_id")["epoch"].max()
    assert [int(last[r]) for r in runs["run_id"]] == [e - 1 for e in runs["epochs"]]  # a pruned trial's epochs end
    selection = read_tuning_selection(tmp_path / "a" / suite.benchmarks["CSBM"].tuning_selection("GCN", "main"))
    assert selection["chosen"]["trial"] in {e["trial"] for e, p in zip(extra, pruned, strict=True) if not p}
    pd.testing.assert_frame_equal(_trials(tmp_path / "b"), _trials(tmp_path / "a"))


def test_the_example_suite_loads():
    suite = load_suite(__import__("yaml").safe_load((REPO_ROOT / "config/tuning-example.yaml").read_text()))
    assert set(suite.benchmarks["CSBM"].tuning) == {"GCN", "MLP"}


E2E = {
    "threads_per_run": 1,
    "datasets": {"CSL": SUITE["datasets"]["CSL"], "CSBM": SUITE["datasets"]["CSBM"], "GF": SUITE["datasets"]["GF"]},
    "benchmarks": {
        "CSL": {**SUITE["benchmarks"]["CSL"], "seeds": [1, 2], "seeds_per_job": 2,
                "tuning": {"trials": 2, "per_round": 2, "space": {"init_lr": {"log_uniform": [1e-4, 1e-2]}}},
                "models": {"GCN": "CSL_graph_classification_GCN_CSL_100k"}},
        "CSBM": {**SUITE["benchmarks"]["CSBM"], "inits": 1, "tuning": {"trials": 2, "per_round": 2, "splits": 1,
                                                                        "space": {"learning_rate": SPACE_LR}},
                 "models": {"GCN": "pitfalls_GCN"}},
        "GF": {**SUITE["benchmarks"]["GF"], "folds": [0], "tuning": {"trials": 2, "per_round": 2,
                                                                      "space": {"learning_rate": SPACE_LR}},
               "models": {"Baseline": SUITE["benchmarks"]["GF"]["models"]["Baseline"]}},
    },
}


@pytest.mark.slow
def test_the_workflow_trains_each_protocols_tuned_runs_with_its_selection(tmp_path):
    result = snakemake(tmp_path, config=E2E)
    assert result.returncode == 0, result.stderr[-3000:]
    runs = read_runs(tmp_path / paths.RECORDS_DIR)
    tuned = runs[runs["model"].str.endswith("-tuned")]
    # the protocols' own runs: every split × initialisation, every seed (one job of two), every fold's final run
    assert tuned.groupby(["dataset", "stage"]).size().to_dict() == {("CSBM", "run"): 2, ("CSL", "run"): 2,
                                                                     ("GF", "final"): 1}
    for row in tuned.to_dict("records"):
        extra = json.loads(row["extra"])["tuning"]
        protocol, model = row["protocol"], row["model"].removesuffix("-tuned")
        search = "fold0" if protocol == "fair-comparison" else "main"
        selection = read_tuning_selection(tmp_path / paths.TUNING_SELECTION.format(
            protocol=protocol, dataset=row["dataset"], model=model, search=search))
        assert extra["selected_trial"] == selection["chosen"]["trial"] and extra["params"] == selection["chosen"][
            "params"]
        config = json.loads(row["config"])
        assert {k: config[k] for k in extra["params"]} == extra["params"]  # trained with the selected values
    for table in ("CSL", "CSBM", "GF"):
        assert "-tuned" in (tmp_path / f"results/tables/{table}.md").read_text()
    # every protocol's report job writes the tuning report: one model tuned with 2 trials (GF: its one outer fold's)
    for table, model in (("CSL", "GCN"), ("CSBM", "GCN"), ("GF", "Baseline")):
        versus = pd.read_parquet(tmp_path / f"results/tables/{table}_tuning.parquet")
        assert versus[["model", "trials", "searches"]].values.tolist() == [[model, 2, 1]], table
        assert versus[["published_mean", "tuned_mean"]].notna().all(axis=None), table
        assert len(pd.read_parquet(tmp_path / f"results/tables/{table}_trials.parquet")) == 2, table
        assert (tmp_path / f"results/plots/{table}_tuning.svg").is_file(), table


def test_benchmarking_gnns_trials_of_one_shape_train_as_one_stack(data, tmp_path):
    """With the benchmark's stack (forced here on CPU) a round's trials of one shape are members of one wide stack: all
    trials share the search's seed, so the stack's batch order is each trial's own and, without dropout, a member is
    its trial trained alone up to float rounding."""
    from gnnbench.training import last_epoch_stack

    suite = load_suite(_suite(CSL={"set": {"epochs": 3, "L": 2, "hidden_dim": 8, "out_dim": 8, "batch_size": 16,
                                           "dropout": 0.0, "in_feat_dropout": 0.0},
                                   "tuning": {"trials": 3, "per_round": 3, "sampler": "random",
                                              "space": {"init_lr": {"log_uniform": [1e-3, 1e-1]},
                                                        "weight_decay": {"log_uniform": [1e-6, 1e-3]}}},
                                   "models": {"GCN": "CSL_graph_classification_GCN_CSL_100k"}}))
    job = suite.benchmarks["CSL"].tuning_job("GCN", "main", 0)
    stacked, calls = {**job, "scope": {**job["scope"], "stack": True}}, []
    real = last_epoch_stack.train_stack

    def counted(*args, **kwargs):
        calls.append(len(args[2]))
        return real(*args, **kwargs)

    for name, one in (("alone", job), ("stack", stacked)):
        import gnnbench.protocols.benchmarking_gnns.tune as tune

        original, tune.train_stack = tune.train_stack, counted
        try:
            run_round(job=one, dataset_dir=data["CSL"][0], splits_path=data["CSL"][1], pe_path=None, previous=[],
                      out=tmp_path / name / "round_0.json", records_out=tmp_path / name / "r.parquet", threads=1)
        finally:
            tune.train_stack = original
    assert calls == [3]  # the forced stack only, of all three trials
    alone, stack = (read_runs([tmp_path / n / "r.parquet"]) for n in ("alone", "stack"))
    assert list(stack["config"]) == list(alone["config"]) and stack["epochs"].tolist() == [3, 3, 3]
    np.testing.assert_allclose(stack["val_loss"], alone["val_loss"], rtol=1e-4)
    np.testing.assert_allclose(stack["train_loss"], alone["train_loss"], rtol=1e-4)
