"""Suites that extend a paper suite ("my model against the papers"): `extends:` + `datasets:` + `models:`, and the
packaged workflow's `gnnbench run` command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gnnbench import cli, packaged
from gnnbench.errors import ConfigError
from gnnbench.suite import expand_extends, load_suite, load_suite_file

REPO_ROOT = Path(__file__).resolve().parents[1]
SUITES = REPO_ROOT / "config" / "suites"
PYG_GIN = {"model": "torch_geometric.nn.models.GIN", "budget": 100000, "set": {"num_layers": 4}}

GRAPH_ONLY = '''
import torch
from torch import nn


class GraphOnly(nn.Module):
    tasks = ("graph_classification",)

    def __init__(self, num_classes: int):
        super().__init__()
        self.out = nn.LazyLinear(num_classes)

    def forward(self, batch):
        x = batch.x.float().reshape(batch.x.shape[0], -1)
        pooled = x.new_zeros(batch.num_graphs, x.shape[1]).index_add_(0, batch.batch, x)
        return self.out(pooled)
'''


def paper(name: str) -> dict:
    return yaml.safe_load((SUITES / f"{name}.yaml").read_text())


def test_extends_a_paper_suite_by_name_keeps_its_models_and_adds_mine_with_the_baselines_seeds():
    suite = load_suite({"extends": "benchmarking-gnns", "datasets": ["SBM_PATTERN", "ZINC"],
                        "models": {"PyG-GIN": PYG_GIN}})
    parent = paper("benchmarking-gnns")
    assert list(suite.benchmarks) == ["SBM_PATTERN", "ZINC"]  # the order the user listed
    assert set(suite.datasets) == {"SBM_PATTERN", "ZINC"}
    for name in ("SBM_PATTERN", "ZINC"):
        benchmark = suite.benchmarks[name]
        assert list(benchmark.models) == [*parent["benchmarks"][name]["models"], "PyG-GIN"]
        # every baseline runs on [12, 35, 41, 95] here: the added model pairs with them run for run
        assert benchmark.model_seeds["PyG-GIN"] == [12, 35, 41, 95]
        # the published configs: their table rows keep the paper's numbers (the tables look them up by preset)
        presets = {label: spec.preset for label, spec in benchmark.models.items()}
        assert presets["GCN_ZINC_100k" if name == "ZINC" else "GCN_PATTERN_100k"] == (
            "molecules_graph_regression_GCN_ZINC_100k" if name == "ZINC" else "SBMs_node_clustering_GCN_PATTERN_100k")
        assert presets["PyG-GIN"] is None
        mine = suite.run_config(name, "PyG-GIN", 41)
        assert mine["variant"] == "plugin" and mine["num_layers"] == 4
    # the 100k budget fitted on each dataset's own input sizes, as for the zoo's models
    widths = {name: suite.run_config(name, "PyG-GIN", 41)["hidden_channels"] for name in suite.benchmarks}
    assert widths == {"SBM_PATTERN": 107, "ZINC": 105}
    # the parent's own settings come along (a GPU per training run on the cluster)
    assert suite.resources["train"] == {"cpus": 4, "mem_mb": 32000, "runtime": 1500, "gpus": 1}


def test_an_extending_suite_without_models_is_the_parent_restricted_to_its_datasets():
    full = expand_extends({"extends": "fair-comparison"})
    parent = paper("fair-comparison")
    assert full["benchmarks"] == parent["benchmarks"] and full["datasets"] == parent["datasets"]
    subset = expand_extends({"extends": "fair-comparison", "datasets": ["ENZYMES"], "device": "cpu",
                             "resources": {"train": {"cpus": 2, "mem_mb": 4000, "runtime": 60}}})
    assert subset == {"resources": {"train": {"cpus": 2, "mem_mb": 4000, "runtime": 60},  # replaced stage by stage
                                    "dataset": parent["resources"]["dataset"]},
                      "device": "cpu", "datasets": {"ENZYMES": parent["datasets"]["ENZYMES"]},
                      "benchmarks": {"ENZYMES": parent["benchmarks"]["ENZYMES"]}}


def test_a_model_restricted_to_some_datasets_and_benchmark_overrides():
    full = expand_extends({
        "extends": "pitfalls", "datasets": ["CORA", "CiteSeer", "PubMed"],
        "models": {"Mine": {"model": "torch_geometric.nn.models.GCN", "datasets": ["CiteSeer"],
                            "set": {"hidden_channels": 64, "num_layers": 2}}},
        "benchmarks": {"PubMed": {"inits": 2, "models": {"Other": {"model": "torch_geometric.nn.models.GCN"}}}}})
    models = {name: list(entry["models"]) for name, entry in full["benchmarks"].items()}
    baselines = list(paper("pitfalls")["_models"])
    assert models == {"CORA": baselines, "CiteSeer": [*baselines, "Mine"], "PubMed": [*baselines, "Other"]}
    assert full["benchmarks"]["CiteSeer"]["models"]["Mine"] == {"model": "torch_geometric.nn.models.GCN",
                                                                "set": {"hidden_channels": 64, "num_layers": 2}}
    assert full["benchmarks"]["PubMed"]["inits"] == 2 and full["benchmarks"]["CORA"]["inits"] == 20
    assert "seeds" not in full["benchmarks"]["CiteSeer"]["models"]["Mine"]  # pitfalls: no per-model seeds


def test_a_model_added_to_one_benchmark_gets_its_baselines_seeds_too():
    full = expand_extends({"extends": "benchmarking-gnns", "datasets": ["CSL", "TSP"],
                           "benchmarks": {"CSL": {"models": {"Mine": {"model": "x.py:A"},
                                                             "Fixed": {"model": "x.py:A", "seeds": [1]}}},
                                          "TSP": {"seeds": [7],
                                                  "models": {"Mine": "TSP_edge_classification_GCN_100k"}}}})
    csl, tsp = full["benchmarks"]["CSL"]["models"], full["benchmarks"]["TSP"]
    assert csl["Mine"] == {"model": "x.py:A", "seeds": paper("benchmarking-gnns")["benchmarks"]["CSL"]["models"][
        "GCN_CSL_100k"]["seeds"]} and len(csl["Mine"]["seeds"]) == 20
    assert csl["Fixed"]["seeds"] == [1]
    assert tsp["seeds"] == [7] and tsp["models"]["Mine"] == "TSP_edge_classification_GCN_100k"  # the benchmark's own


@pytest.mark.parametrize("suite, message", [
    ({"extends": "benchmarking-gnns", "datasets": ["ZINC", "PATTERN"]},
     "datasets: unknown dataset 'PATTERN' of benchmarking-gnns; its datasets: ZINC, AQSOL, SBM_PATTERN, SBM_CLUSTER, "
     "MNIST, CIFAR10, TSP, CSL, GraphTheoryProp, ENZYMES, DD, PROTEINS_full, WikiCS, OGBL-COLLAB, CYCLES_200, "
     "CYCLES_500, CYCLES_1000, CYCLES_5000"),
    ({"extends": "benchmarking-gnn"},
     "extends: no paper suite 'benchmarking-gnn'; known: benchmarking-gnns, benchmarking-gnns-500k, "
     "benchmarking-gnns-pe, fair-comparison, heterophily, heterophily-cpu, heterophily-example, pitfalls, "
     "tuning-showcase, tuning-showcase-reduced (or give the path of a suite file, ending in .yaml)"),
    ({"extends": "pitfalls", "datasets": {"CORA": {}}},
     "datasets: expected a list of datasets of pitfalls (e.g. [CORA, CiteSeer]), got {'CORA': {}}"),
    ({"extends": "pitfalls", "datasets": ["CORA-Planetoid"]},
     "datasets: CORA-Planetoid is compared with CORA in pitfalls (its compare_with); add CORA to datasets"),
    ({"extends": "pitfalls", "models": {"GCN": "pitfalls_GCN"}},
     "models.GCN: benchmark CORA of pitfalls already has a model GCN; choose another label"),
    ({"extends": "pitfalls", "models": {"Mine": {"model": "x.py:A", "datasets": ["Cora"]}}},
     "models.Mine.datasets: unknown dataset 'Cora' of pitfalls; its datasets: CORA, CiteSeer, PubMed, CORA-Full, "
     "Coauthor-CS, Coauthor-Physics, Amazon-Computers, Amazon-Photo, CORA-Planetoid, CiteSeer-Planetoid, "
     "PubMed-Planetoid, CORA-random-split, CiteSeer-random-split, PubMed-random-split"),
    ({"extends": "pitfalls", "epochs": 10},
     "epochs: not a key of a suite that extends another; it takes extends, datasets, models, benchmarks and the "
     "settings device, mem_mb_per_run, resources, runtime_per_run, threads_per_run"),
    ({"extends": "pitfalls", "benchmarks": {"Cora": {"inits": 2}}},
     "benchmarks: unknown dataset 'Cora' of pitfalls; its datasets: CORA, CiteSeer, PubMed, CORA-Full, Coauthor-CS, "
     "Coauthor-Physics, Amazon-Computers, Amazon-Photo, CORA-Planetoid, CiteSeer-Planetoid, PubMed-Planetoid, "
     "CORA-random-split, CiteSeer-random-split, PubMed-random-split"),
    ({"extends": ["pitfalls"]},
     "extends: expected a paper suite's name (benchmarking-gnns, benchmarking-gnns-500k, benchmarking-gnns-pe, "
     "fair-comparison, heterophily, heterophily-cpu, heterophily-example, pitfalls, tuning-showcase, "
     "tuning-showcase-reduced) or the "
     "path of a suite file, got ['pitfalls']"),
])
def test_bad_extending_suites_are_one_line_errors(suite, message):
    with pytest.raises(ConfigError) as err:
        expand_extends(suite)
    assert str(err.value) == message


def test_a_model_that_cannot_do_a_benchmarks_task_is_refused_where_the_user_wrote_it(tmp_path):
    (tmp_path / "graph_only.py").write_text(GRAPH_ONLY)
    suite = {"extends": "benchmarking-gnns", "datasets": ["SBM_PATTERN", "ENZYMES"],
             "models": {"GraphOnly": {"model": "graph_only.py:GraphOnly"}}}
    with pytest.raises(ConfigError) as err:
        load_suite(suite, base_dir=tmp_path)
    message = str(err.value)
    assert message.startswith("benchmarks.SBM_PATTERN.models.GraphOnly.model: ") and "\n" not in message
    assert message.endswith("(models.GraphOnly of this suite, added to 2 benchmarks of benchmarking-gnns: list the "
                            "ones it can do in models.GraphOnly.datasets)")
    # restricted to the graph-classification benchmark it loads, beside the benchmark's own TU models
    suite["models"]["GraphOnly"]["datasets"] = ["ENZYMES"]
    loaded = load_suite(suite, base_dir=tmp_path)
    assert "GraphOnly" in loaded.benchmarks["ENZYMES"].models
    assert "GraphOnly" not in loaded.benchmarks["SBM_PATTERN"].models


def test_extends_a_suite_file_whose_paths_stay_relative_to_its_own_folder(tmp_path):
    (tmp_path / "papers").mkdir()
    (tmp_path / "mine").mkdir()
    (tmp_path / "papers" / "graph_only.py").write_text(GRAPH_ONLY)
    (tmp_path / "mine" / "graph_only.py").write_text(GRAPH_ONLY.replace("GraphOnly", "Mine"))
    base = {"datasets": {"FAM": {"generator": "graph_families", "params": {"num_graphs": 30},
                                 "split": {"scheme": "stratified_kfold", "folds": 3}}},
            "benchmarks": {"FAM": {"protocol": "fair-comparison",
                                   "models": {"Theirs": {"model": "graph_only.py:GraphOnly"}}}}}
    (tmp_path / "papers" / "base.yaml").write_text(yaml.safe_dump(base))
    # a suite that extends the base by path, and one that extends that one in turn
    (tmp_path / "mine" / "middle.yaml").write_text(yaml.safe_dump(
        {"extends": "../papers/base.yaml", "models": {"Mine": {"model": "graph_only.py:Mine"}}}))
    (tmp_path / "mine" / "top.yaml").write_text(yaml.safe_dump({"extends": "middle.yaml", "device": "cpu"}))
    suite = load_suite_file(tmp_path / "mine" / "top.yaml")
    expanded = expand_extends(yaml.safe_load((tmp_path / "mine" / "top.yaml").read_text()), tmp_path / "mine")
    models = expanded["benchmarks"]["FAM"]["models"]
    assert models["Theirs"]["model"] == f"{tmp_path / 'papers' / 'graph_only.py'}:GraphOnly"
    assert models["Mine"]["model"] == f"{tmp_path / 'mine' / 'graph_only.py'}:Mine"
    assert expanded["device"] == "cpu" and list(suite.benchmarks["FAM"].models) == ["Theirs", "Mine"]
    (tmp_path / "papers" / "base.yaml").write_text(yaml.safe_dump({**base, "extends": "../mine/top.yaml"}))
    with pytest.raises(ConfigError, match=r"^extends: middle\.yaml extends itself \(through middle\.yaml -> "
                                          r"base\.yaml -> top\.yaml\); remove the loop$"):
        load_suite_file(tmp_path / "mine" / "top.yaml")


def test_paper_suites_are_found_by_name_in_the_checkout():
    assert packaged.paper_suites() == {path.stem: path for path in sorted(SUITES.glob("*.yaml"))}
    assert packaged.snakefile() == REPO_ROOT / "workflow" / "Snakefile"
    assert packaged.default_suite(REPO_ROOT / "workflow") == REPO_ROOT / "config" / "config.yaml"
    assert packaged.default_suite(REPO_ROOT / "gnnbench" / "_workflow") is None  # an installed package: none
    assert packaged.profile_dir("slurm") == REPO_ROOT / "workflow" / "profiles" / "slurm"


def test_gnnbench_run_hands_its_arguments_to_snakemake_on_the_packaged_workflow(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(cli, "run_snakemake", lambda command: calls.append(command) or 3)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite.yaml").write_text("datasets: {}\n")
    target = str(Path("results/tables/CSL").with_suffix(".md"))  # a Snakemake target, passed on as it is
    assert cli.main(["run", "suite.yaml", "--cores", "2", "--profile", "slurm", target]) == 3
    assert calls[-1] == [sys.executable, "-m", "snakemake", "--snakefile", str(REPO_ROOT / "workflow" / "Snakefile"),
                         "--configfile", str(tmp_path / "suite.yaml"), "--rerun-incomplete", "--cores", "2",
                         "--profile", str(REPO_ROOT / "workflow" / "profiles" / "slurm"), target]
    (tmp_path / "slurm").mkdir()  # a profile folder of the user's own wins over the packaged one
    assert cli.main(["run", "pitfalls", "--profile=slurm", "-n"]) == 3
    assert calls[-1][6:] == [str(SUITES / "pitfalls.yaml"), "--rerun-incomplete", "--profile=slurm", "-n"]
    assert cli.main(["run", "pitfalls", "--ri"]) == 3  # given: not twice
    assert calls[-1][6:] == [str(SUITES / "pitfalls.yaml"), "--ri"]


@pytest.mark.parametrize("args, message", [
    (["run", "nosuch.yaml"], "run: suite file nosuch.yaml does not exist (a path is read from the working directory "
                             "{cwd}); give an existing file or a paper suite's name"),
    (["run", "pitfalls", "--configfile", "x.yaml"], "run: --configfile: gnnbench run sets it (the suite is the first "
     "argument; the working directory is where results/ goes: cd there); drop it"),
    (["run", "pitfalls", "--directory=elsewhere"], "run: --directory: gnnbench run sets it (the suite is the first "
     "argument; the working directory is where results/ goes: cd there); drop it"),
])
def test_gnnbench_run_refuses_in_one_line(args, message, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "run_snakemake", lambda command: pytest.fail("snakemake must not start"))
    monkeypatch.chdir(tmp_path)
    assert cli.main(args) == 1
    assert capsys.readouterr().err == f"gnnbench: error: {message.format(cwd=tmp_path)}\n"


@pytest.mark.slow
def test_a_dry_run_of_an_extending_suite_plans_the_parents_runs_and_mine(tmp_path):
    """The Snakefile reads the suite an extending suite stands for: the paper's training jobs of the chosen datasets
    plus the added model's, and one report job per dataset (its table and significance table)."""
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump({"extends": "benchmarking-gnns", "datasets": ["CSL", "ZINC"],
                                                        "models": {"PyG-GIN": PYG_GIN}}))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-m", "gnnbench.cli", "run", "mine.yaml", "-n", "--quiet", "rules"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = {line.split()[0]: int(line.split()[1]) for line in proc.stdout.splitlines()
              if len(line.split()) == 2 and line.split()[1].isdigit()}
    parent = load_suite_file(SUITES / "benchmarking-gnns.yaml")
    paper_runs = len(parent.runs("CSL")) + len(parent.runs("ZINC"))
    # mine: CSL's 20 seeds x 5 folds (its baselines' seeds), ZINC's 4 seeds
    assert counts["train"] == paper_runs + 20 * 5 + 4
    assert counts["tables_CSL"] == 1 and counts["tables_ZINC"] == 1  # each dataset's report job: tables, tests
    assert not (tmp_path / "results").exists()  # a dry run
