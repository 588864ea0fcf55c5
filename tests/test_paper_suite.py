"""The paper as suites (config/suites/benchmarking-gnns*.yaml): exactly one run per (config, CLI overrides, seed,
fold) that the original scripts ran — counted here from the presets' ``runs`` records and the folds of the released
code (graphdeeplearning/benchmarking-gnns, its ``scripts/`` and ``main_*.py``: TU 10 folds, CSL 5, WikiCS 20
splits), independently of the suite writer — and a Snakemake dry run that plans exactly those training jobs.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from gnnbench.config.presets import run_config
from gnnbench.suite import load_suite

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ROOT / "gnnbench" / "config" / "presets"
SUITE = ROOT / "config" / "suites" / "benchmarking-gnns.yaml"
FOLDS = {"ENZYMES": 10, "DD": 10, "PROTEINS_full": 10, "CSL": 5, "WikiCS": 20}  # the released code's folds / splits


def script_runs() -> Counter:
    """(preset, overrides, seed, fold) of every training the original scripts launched, from the presets."""
    runs = Counter()
    for path in PRESETS.glob("*.yaml"):
        for name, entry in yaml.safe_load(path.read_text()).items():
            if not isinstance(entry, dict) or "protocol" in entry or not isinstance(entry.get("runs"), list):
                continue
            for run in entry["runs"]:
                overrides = dict(run.get("set") or {})  # CYCLES: num_train_data, the training-set size
                for seed in run["seeds"]:
                    for fold in range(FOLDS.get(entry["dataset"], 1)):
                        runs[(name, tuple(sorted(overrides.items())), seed, fold)] += 1
    return runs


def planned_runs(suite) -> Counter:
    planned = Counter()
    for benchmark in suite.benchmarks.values():
        for run in benchmark.runs():
            entry = benchmark.models[run["model"]]
            base = run_config(entry.preset)
            overrides = {k: v for k, v in entry.config.items() if base.get(k) != v}
            dataset = suite.datasets[benchmark.dataset]
            if dataset.generator == "cycles_release":  # the training-set size is the dataset's
                overrides["num_train_data"] = dataset.params["num_train"]
            planned[(entry.preset, tuple(sorted(overrides.items())), run["seed"], run["fold"])] += 1
    return planned


@pytest.fixture(scope="module")
def paper():
    return load_suite(yaml.safe_load(SUITE.read_text()))


def test_the_paper_suite_plans_every_script_run_once(paper):
    expected = script_runs()
    planned = planned_runs(paper)
    assert planned == expected
    assert sum(expected.values()) == 3992
    # CYCLES: one dataset per training-set size, the four sizes of the sweep, each with 4 seeds × 4 models
    sizes = {d: paper.datasets[d].params["num_train"] for d in paper.datasets if d.startswith("CYCLES")}
    assert sorted(sizes.values()) == [200, 500, 1000, 5000]
    assert all(len(paper.benchmarks[d].runs()) == 16 for d in sizes)
    # the benchmark's released folds / splits, not freshly drawn ones
    for name, folds in FOLDS.items():
        assert paper.datasets[name].num_folds == folds


def test_the_paper_suite_generates_pnas_graph_theory_graphs(paper):
    """GraphTheoryProp is PNA's generated dataset: with PNA's seed, 1234, the generator reproduces the released
    graphs (tests/test_graph_theory_prop.py checks their digest); any other seed is another sample."""
    assert paper.datasets["GraphTheoryProp"].seed == 1234


@pytest.mark.parametrize(("name", "marker"), [("benchmarking-gnns-pe", "_PE_"), ("benchmarking-gnns-500k", "_500k")])
def test_table_suites_are_parts_of_the_paper_suite(paper, name, marker):
    part = load_suite(yaml.safe_load((ROOT / "config" / "suites" / f"{name}.yaml").read_text()))
    planned, everything = planned_runs(part), planned_runs(paper)
    assert not planned - everything  # nothing the paper suite does not plan
    presets = {key[0] for key in planned}
    studied = {p for p in presets if marker in p}
    assert studied and studied == {key[0] for key in everything if marker in key[0]}  # the whole study
    assert presets - studied  # ... beside the configs it is compared with (without PE / at 100k)


@pytest.mark.slow
def test_a_dry_run_of_the_paper_suite_plans_one_training_job_per_run(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow/Snakefile"),
                           "--configfile", str(SUITE), "--directory", str(tmp_path), "-n", "--quiet", "rules"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)\s*$", proc.stdout, flags=re.M))
    assert int(counts["train"]) == sum(script_runs().values())
