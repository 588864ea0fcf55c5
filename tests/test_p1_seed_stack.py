"""P1 seeds of one config trained in one job (gnnbench.training.last_epoch_stack): each member of the wide stack equals
the run of its seed trained alone on the first seed's mini-batch order (float64, no dropout), also after another member
left the stack early (lr below min_lr); every seed's outputs and run record are where its own job writes them; the
default on CPU and the fallback (one seed after another) are exactly the separate runs; a stopped stack resumes to
the same results; the workflow plans one job per model × fold for a benchmark with `stack: true`."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import time

import pyarrow.parquet as pq
import pytest
import torch
from conftest import job_counts, labelled, meta_for, random_graphs, snakemake

from gnnbench.config.presets import run_config
from gnnbench.data.meta import write_dataset
from gnnbench.pipeline import make_split_file
from gnnbench.protocols.benchmarking_gnns import train as benchmarking_gnns_train
from gnnbench.records import read_runs
from gnnbench.training import last_epoch as run_module
from gnnbench.training import last_epoch_stack as seed_stack
from gnnbench.training.engine import stoppable
from gnnbench.training.preemption import Preempted

SEEDS = [3, 5, 7]
# patience 0 and min_lr 2e-4: three halvings of 1e-3 stop a run; with these seeds seed 5 stops at epoch 7 (min_lr),
# seed 3 at epoch 8 (min_lr) and seed 7 at the epoch cap
SMALL = {"L": 2, "hidden_dim": 16, "out_dim": 16, "batch_size": 8, "epochs": 8, "lr_schedule_patience": 0,
         "min_lr": 2e-4, "init_lr": 1e-3}
GATED = "molecules_graph_regression_GatedGCN_ZINC_100k"
TIMING = ("seconds", "seconds_per_epoch", "total_seconds", "total_hours", "stack")


@pytest.fixture(scope="module")
def zinc_like(tmp_path_factory):
    """40 small molecule-like graphs (categorical atoms and bonds, a regression target) with a given split."""
    root = tmp_path_factory.mktemp("zinc_like")
    columns = labelled(random_graphs(40, seed=1), "graph_regression")
    meta = dataclasses.replace(meta_for("graph_regression"), num_graphs=40,
                               split_sizes={"train": 24, "val": 8, "test": 8})
    write_dataset(root / "Z", columns, meta)
    make_split_file(root / "Z", "given", {}, root / "Z_splits.json")
    return root / "Z", root / "Z_splits.json"


@pytest.fixture
def float64():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def stacked(zinc_like, out, preset=GATED, stack=True, **overrides):
    config = run_config(preset, {**SMALL, **overrides})
    return seed_stack.train_seeds(dataset_dir=zinc_like[0], splits_path=zinc_like[1], fold=0, config=config,
                                  seeds=SEEDS, out_dirs=[out / f"seed{s}" for s in SEEDS], threads=1, stack=stack)


def alone(zinc_like, out, seed, order_seed=None, preset=GATED, **overrides):
    """The run of ``seed`` trained alone (its own process state), on the batch order of ``order_seed``."""
    config = run_config(preset, {**SMALL, **overrides, "seed": seed})

    def job(guard):
        data = run_module.load_run_data(dataset_dir=zinc_like[0], splits_path=zinc_like[1], fold=0, config=config,
                                        pe_path=None, device="cpu", threads=1, time_limit_hours=None)
        return run_module.train_one(guard, data, data.cfg, out, None, time.perf_counter(), order_seed=order_seed)

    return stoppable(job, lambda: "")


def history(run_dir) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "seconds"}
            for row in pq.read_table(run_dir / "history.parquet").to_pylist()]


def untimed(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k not in TIMING}


def test_members_equal_their_seeds_alone_on_the_first_seeds_batch_order(zinc_like, tmp_path, float64):
    results = stacked(zinc_like, tmp_path / "stack")
    stops = {r["seed"]: (r["epochs"], r["stop_reason"]) for r in results}
    assert stops == {3: (8, "min_lr"), 5: (7, "min_lr"), 7: (8, "max_epochs")}  # seed 5 left the stack early
    for seed, result in zip(SEEDS, results, strict=True):
        run_dir = tmp_path / "stack" / f"seed{seed}"
        assert json.loads((run_dir / "metrics.json").read_text()) == result
        assert (run_dir / "checkpoint.pt").is_file()
        assert result["stack"] == {"seeds": SEEDS, "batch_order_seed": 3, "wide": True}  # trained widened
        own = alone(zinc_like, tmp_path / f"alone{seed}", seed, order_seed=SEEDS[0])
        assert _close(result, own)
        mine, theirs = history(run_dir), history(tmp_path / f"alone{seed}")
        assert len(mine) == len(theirs) == result["epochs"]
        for a, b in zip(mine, theirs, strict=True):
            assert a == pytest.approx(b, rel=1e-10, abs=1e-12)
    # the seeds are different runs (own initialisations), and the shared order is a real departure from a seed's
    # separate run, which shuffles by its own seed
    assert len({r["test"]["metric"] for r in results}) == 3
    separate = alone(zinc_like, tmp_path / "separate5", 5)
    assert separate["test"]["metric"] != pytest.approx(results[1]["test"]["metric"], rel=1e-6)


def _close(a: dict, b: dict) -> bool:
    """Scores and run facts of two metrics.json within 1e-10 (nested parts compared value by value)."""
    for key in ("epochs", "stop_reason", "status", "num_params", "seed", "config"):
        if a[key] != b[key]:
            return False
    return all(a[p][k] == pytest.approx(b[p][k], rel=1e-10, abs=1e-12)
               for p in ("train", "val", "test") for k in ("metric", "loss"))


def test_on_cpu_by_default_the_seeds_train_one_after_another_exactly_as_their_separate_runs(zinc_like, tmp_path):
    results = stacked(zinc_like, tmp_path / "job", stack=None)  # the device's default: CPU here
    for seed, result in zip(SEEDS, results, strict=True):
        own = alone(zinc_like, tmp_path / f"alone{seed}", seed)
        assert "stack" not in result and untimed(result) == untimed(own)
        assert history(tmp_path / "job" / f"seed{seed}") == history(tmp_path / f"alone{seed}")


def test_a_model_that_does_not_widen_falls_back_to_separate_runs(zinc_like, tmp_path, caplog):
    """GAT views its channels as heads (members' channels mixed): the check refuses the stack."""
    preset = "molecules_graph_regression_GAT_ZINC_100k"
    small = {"hidden_dim": 4, "out_dim": 16, "n_heads": 4, "epochs": 2}
    with caplog.at_level("INFO", logger="gnnbench.training.last_epoch_stack"):
        results = stacked(zinc_like, tmp_path / "job", preset=preset, **small)
    assert "one after another: the model does not widen" in caplog.text
    for seed, result in zip(SEEDS, results, strict=True):
        assert "stack" not in result
        assert untimed(result) == untimed(alone(zinc_like, tmp_path / f"alone{seed}", seed, preset=preset, **small))


def test_a_stopped_stack_resumes_to_the_same_results(zinc_like, tmp_path, monkeypatch, float64):
    expected = stacked(zinc_like, tmp_path / "reference")
    real, calls = seed_stack.train_epoch_members, []

    def signal_in_epoch_8(*args, **kwargs):  # seed 5 has left the stack; 3 and 7 are running
        calls.append(1)
        if len(calls) == 8:
            os.kill(os.getpid(), signal.SIGTERM)
        return real(*args, **kwargs)

    monkeypatch.setattr(seed_stack, "train_epoch_members", signal_in_epoch_8)
    with pytest.raises(Preempted, match=r"seed 3: checkpoint .* holds 7 completed epoch\(s\)"):
        stacked(zinc_like, tmp_path / "job")
    monkeypatch.setattr(seed_stack, "train_epoch_members", real)
    for seed in SEEDS:  # Snakemake removes a failed job's outputs
        (tmp_path / "job" / f"seed{seed}" / "metrics.json").unlink(missing_ok=True)
    resumed = stacked(zinc_like, tmp_path / "job")
    for a, b, seed in zip(resumed, expected, SEEDS, strict=True):
        assert untimed(a) == untimed(b)
        assert history(tmp_path / "job" / f"seed{seed}") == history(tmp_path / "reference" / f"seed{seed}")


def test_the_protocol_writes_every_seeds_record(zinc_like, tmp_path):
    config = run_config(GATED, {**SMALL, "epochs": 1})
    records = [tmp_path / "records" / f"seed{s}_fold0.parquet" for s in SEEDS]
    results = benchmarking_gnns_train.train_seeds(dataset_dir=zinc_like[0], splits_path=zinc_like[1], fold=0,
                                            config=config, seeds=SEEDS, out_dirs=[tmp_path / f"s{s}" for s in SEEDS],
                                            threads=1, label="G", records_out=records)
    for seed, result, path in zip(SEEDS, results, records, strict=True):
        [row] = read_runs(path).to_dict("records")
        assert (row["seed"], row["model"], row["test_score"]) == (seed, "G", result["test"]["metric"])


def test_the_workflow_plans_one_job_per_model_and_fold_for_a_stacked_benchmark(tmp_path):
    suite = {
        "threads_per_run": 1,
        "datasets": {"CSL": {"generator": "csl", "seed": 2, "params": {"copies_per_class": 5}}},
        "benchmarks": {"CSL": {"seeds": [1, 2, 3], "folds": [0, 1], "stack": True, "set": {"epochs": 1},
                               "models": {"GCN": "CSL_graph_classification_GCN_CSL_100k",
                                          "MLP": {"preset": "CSL_graph_classification_MLP_CSL_100k",
                                                  "seeds": [4, 5]}}}},
    }
    dry = snakemake(tmp_path, "-n", config=suite)
    assert dry.returncode == 0, dry.stderr
    counts = job_counts(dry.stdout)
    assert counts.get("train_seeds_CSL_GCN") == 2 and counts.get("train_seeds_CSL_MLP") == 2  # one job per fold
    assert "train" not in counts  # no one-seed jobs
    # a stack job asks for a run's memory and runtime times its seeds (suite defaults 2000 MB, 720 min)
    block = re.search(r"rule train_seeds_CSL_GCN:.*?resources: ([^\n]*)", dry.stdout, flags=re.S).group(1)
    assert "mem_mb=6000" in block and "runtime=2160" in block


def test_seeds_per_job_groups_consecutive_seeds_into_jobs_without_a_stack(tmp_path):
    """seeds_per_job 2 of seeds [1, 2, 3]: per fold one job of seeds 1 and 2 and one of seed 3 (named by their first
    seed), no stack (the job trains them one after another on any device), and a model whose seeds fit one job
    keeps the plain rule name."""
    suite = {
        "threads_per_run": 1,
        "datasets": {"CSL": {"generator": "csl", "seed": 2, "params": {"copies_per_class": 5}}},
        "benchmarks": {"CSL": {"seeds": [1, 2, 3], "seeds_per_job": 2, "folds": [0, 1], "set": {"epochs": 1},
                               "models": {"GCN": "CSL_graph_classification_GCN_CSL_100k",
                                          "MLP": {"preset": "CSL_graph_classification_MLP_CSL_100k",
                                                  "seeds": [4, 5]}}}},
    }
    dry = snakemake(tmp_path, "-n", "-p", config=suite)
    assert dry.returncode == 0, dry.stderr
    counts = job_counts(dry.stdout)
    assert counts.get("train_seeds_CSL_GCN_seed1") == 2 and counts.get("train_seeds_CSL_GCN_seed3") == 2
    assert counts.get("train_seeds_CSL_MLP") == 2 and "train" not in counts
    block = re.search(r"rule train_seeds_CSL_GCN_seed1:.*?resources: ([^\n]*)", dry.stdout, flags=re.S).group(1)
    assert "mem_mb=4000" in block  # two seeds' memory
    outputs = re.findall(r"rule train_seeds_CSL_GCN_seed3:.*?output: ([^\n]*)", dry.stdout, flags=re.S)
    assert all("seed3" in o and "seed1" not in o and "seed2" not in o for o in outputs)

    from gnnbench.suite import load_suite

    benchmark = load_suite(suite).benchmarks["CSL"]
    assert (benchmark.stack, benchmark.seed_stacks()) == (False, [("GCN", [1, 2]), ("GCN", [3]), ("MLP", [4, 5])])


def test_slurm_names_the_train_stage_for_a_stack_job_that_fits_no_node():
    from gnnbench.errors import ConfigError
    from gnnbench.slurm import Node, check_requests

    nodes = [Node("n1", ("cpu",), 2, 4000)]
    check_requests({"train_seeds_ZINC_GatedGCN": {"threads": 1, "mem_mb": 4000}}, nodes, "cpu")
    with pytest.raises(ConfigError, match=r"^resources\.train\.mem_mb \(times the seeds a train_seeds_ZINC_GatedGCN "
                                          r"job trains\): a train_seeds_ZINC_GatedGCN job asks for 8000 MB"):
        check_requests({"train_seeds_ZINC_GatedGCN": {"threads": 1, "mem_mb": 8000}}, nodes, "cpu")
    with pytest.raises(ConfigError, match=r"^resources\.train\.cpus: a train_seeds_ZINC_GatedGCN job asks for 4"):
        check_requests({"train_seeds_ZINC_GatedGCN": {"threads": 4, "mem_mb": 1000}}, nodes, "cpu")
