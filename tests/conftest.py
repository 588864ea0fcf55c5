"""Shared fixtures: small graph sets built directly in columnar form, and generated datasets on disk."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from gnnbench.data.batching import GraphLoader, model_dtypes
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns, GraphStore
from gnnbench.pipeline import compute_pe, generate_dataset, make_split_file


def random_graphs(num_graphs: int, seed: int = 0, min_nodes: int = 3, max_nodes: int = 12, edge_prob: float = 0.4,
                  directed: bool = False) -> GraphColumns:
    """Random graphs with categorical node ('x', vocab 5) and edge ('edge_attr', vocab 4) features."""
    rng = np.random.default_rng(seed)
    num_nodes = rng.integers(min_nodes, max_nodes + 1, num_graphs)
    srcs, dsts, num_edges = [], [], []
    for n in num_nodes:  # test fixture, not a hot path
        adj = rng.random((n, n)) < edge_prob
        np.fill_diagonal(adj, False)
        if not directed:
            adj = np.triu(adj, 1)
            adj = adj | adj.T
        s, d = np.nonzero(adj)
        srcs.append(s)
        dsts.append(d)
        num_edges.append(len(s))
    total_nodes, total_edges = int(num_nodes.sum()), int(sum(num_edges))
    return GraphColumns(
        num_nodes=num_nodes.astype(np.int64), num_edges=np.asarray(num_edges, dtype=np.int64),
        src=np.concatenate(srcs).astype(np.int32), dst=np.concatenate(dsts).astype(np.int32),
        node={"x": rng.integers(0, 5, total_nodes).astype(np.int16)},
        edge={"edge_attr": rng.integers(0, 4, total_edges).astype(np.int16)},
    )


TASK_LOSS_METRIC = {
    "node_classification": ("weighted_cross_entropy", "weighted_accuracy"),
    "graph_classification": ("cross_entropy", "accuracy"),
    "graph_regression": ("l1", "mae"),
    "edge_classification": ("cross_entropy", "f1"),
    "link_prediction": ("link_bce", "hits@50"),
    "multitask_regression": ("multitask_mse", "log10_mse"),
}
# every task with a number of outputs that exercises it (multitask: 3 node + 3 graph targets)
TASK_OUTPUTS = {"node_classification": 3, "graph_classification": 2, "graph_regression": 1,
                "edge_classification": 2, "link_prediction": 1, "multitask_regression": 3}


CATEGORICAL_5 = FeatureSpec("categorical", 5)


def meta_for(task: str, num_outputs: int | None = None, pe_usage: str = "add", edge_features: bool = True,
             node_features: FeatureSpec | None = CATEGORICAL_5) -> DatasetMeta:
    loss, metric = TASK_LOSS_METRIC[task]
    return DatasetMeta(name=f"test-{task}", task=task, loss=loss, metric=metric,
                       num_outputs=TASK_OUTPUTS[task] if num_outputs is None else num_outputs,
                       num_graphs=0, node_features=node_features,
                       edge_features=FeatureSpec("categorical", 4) if edge_features else None,
                       pe_usage=pe_usage, split_sizes=None,
                       num_graph_outputs=3 if task == "multitask_regression" else 0)


def labelled(columns: GraphColumns, task: str, num_outputs: int | None = None, seed: int = 0) -> GraphColumns:
    """Attach learnable labels: a function of the node features so that training can reduce the loss.

    Link prediction gets no stored labels: :func:`with_pairs` adds scored pairs and their labels to a batch."""
    num_outputs = TASK_OUTPUTS[task] if num_outputs is None else num_outputs
    x = columns.node["x"].astype(np.int64)
    graph_of_node = np.repeat(np.arange(columns.num_graphs), columns.num_nodes)
    counts = np.bincount(graph_of_node, weights=(x >= 3), minlength=columns.num_graphs)
    if task == "node_classification":
        columns.node["y"] = (x % num_outputs).astype(np.int16)
    elif task == "edge_classification":
        offsets = np.repeat(np.cumsum(columns.num_nodes) - columns.num_nodes, columns.num_edges)
        src_x, dst_x = x[columns.src + offsets], x[columns.dst + offsets]
        columns.edge["y"] = ((src_x + dst_x) % num_outputs).astype(np.int16)
    elif task == "multitask_regression":
        columns.node["y"] = np.stack([x / 4, (x % 2), x ** 2 / 16], axis=1).astype(np.float32)
        fraction = counts / columns.num_nodes
        columns.graph["y"] = np.stack([fraction, 1 - fraction, columns.num_nodes / 12], axis=1).astype(np.float32)
    elif task == "graph_classification":
        columns.graph["y"] = (counts > np.median(counts)).astype(np.int16)
    elif task == "graph_regression":
        columns.graph["y"] = (counts / columns.num_nodes).astype(np.float32)
    return columns


BENCHMARK_CODE = "graphdeeplearning/benchmarking-gnns"
HETEROPHILY_CODE = "yandex-research/heterophilous-graphs@a431395"


def published_rows(*models: str, source: str = BENCHMARK_CODE) -> list[tuple[str, dict, int]]:
    """(config, overrides, total) of tests/data/published_param_counts.csv whose ``source`` (the released code) is
    ``source``, for the given models (default all): a row's model is its ``model`` override, else its preset's."""
    from gnnbench.config.presets import all_presets

    path = Path(__file__).parent / "data" / "published_param_counts.csv"
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    rows = []
    for row in csv.DictReader(lines):
        if row["source"] != source:
            continue
        overrides = dict(kv.split("=", 1) for kv in row["overrides"].split(";")) if row["overrides"] else {}
        if not models or (overrides.get("model") or all_presets()[row["config"]]["model"]) in models:
            rows.append((row["config"], overrides, int(row["total_params"])))
    return rows


def with_pairs(batch, seed: int = 0):
    """Link prediction: score every edge of the batch (label 1) and as many random node pairs (label 0)."""
    gen = torch.Generator().manual_seed(seed)
    negatives = torch.randint(0, batch.num_nodes, batch.edge_index.shape, generator=gen)
    batch.pairs = torch.cat([batch.edge_index, negatives], dim=1)
    batch.y = torch.cat([torch.ones(batch.num_edges), torch.zeros(negatives.shape[1])])
    return batch


def one_batch(columns: GraphColumns, pe: torch.Tensor | None = None):
    store = model_dtypes(GraphStore.from_columns(columns))
    return GraphLoader(store, torch.arange(store.num_graphs), store.num_graphs, pe=pe).collate(
        torch.arange(store.num_graphs))


@pytest.fixture(scope="session")
def datasets(tmp_path_factory) -> dict:
    """Tiny generated CSL (with PE and 5-fold splits) and PATTERN (given split) datasets on disk."""
    root = tmp_path_factory.mktemp("datasets")
    generate_dataset("csl", "CSL", {"copies_per_class": 5}, 3, root / "CSL")
    compute_pe(root / "CSL", 20, root / "CSL_pe20.parquet")
    make_split_file(root / "CSL", "stratified_kfold", {"folds": 5, "val_fraction": 0.25, "seed": 0},
                    root / "CSL_splits.json")
    generate_dataset("sbm_pattern", "PATTERN", {"num_train": 12, "num_val": 4, "num_test": 4, "num_patterns": 2},
                     3, root / "PATTERN")
    compute_pe(root / "PATTERN", 2, root / "PATTERN_pe2.parquet")
    make_split_file(root / "PATTERN", "given", {}, root / "PATTERN_splits.json")
    return {"root": root, "CSL": root / "CSL", "CSL_pe": root / "CSL_pe20.parquet",
            "CSL_splits": root / "CSL_splits.json", "PATTERN": root / "PATTERN",
            "PATTERN_pe": root / "PATTERN_pe2.parquet", "PATTERN_splits": root / "PATTERN_splits.json"}


@pytest.fixture
def server():
    """A local HTTP server on 127.0.0.1 (:class:`test_download.LocalServer`) for the real download paths."""
    from test_download import LocalServer

    srv = LocalServer()
    yield srv
    srv.stop()


def randomise_batch_norms(model, seed: int = 1):
    """Random running statistics and affine weights in every BatchNorm1d (eval-mode comparisons then test them)."""
    from torch import nn

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm1d):
                n = module.num_features
                module.running_mean.copy_(torch.randn(n, generator=gen))
                module.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
                module.weight.copy_(torch.randn(n, generator=gen))
                module.bias.copy_(torch.randn(n, generator=gen))
    return model


# ------------------------------------------------------------------------------------------------ workflow

REPO_ROOT = Path(__file__).resolve().parents[1]
TINY = {  # a small suite run end to end once per session (tests/test_workflow.py, tests/test_report.py)
    "threads_per_run": 1,
    "datasets": {
        "CSL": {"generator": "csl", "seed": 2, "params": {"copies_per_class": 5}},
        "PATTERN": {"generator": "sbm_pattern", "seed": 2,
                    "params": {"num_train": 6, "num_val": 2, "num_test": 2, "num_patterns": 2}},
    },
    "benchmarks": {
        "CSL": {"seeds": [1], "folds": [0, 1],
                "set": {"epochs": 2, "L": 2, "hidden_dim": 16, "out_dim": 16, "batch_size": 16},
                "models": {"GCN-PE": "CSL_graph_classification_GCN_CSL_PE_100k",
                           "MLP": "CSL_graph_classification_MLP_CSL_100k",
                           "GCN": "CSL_graph_classification_GCN_CSL_100k"}},
        "PATTERN": {"seeds": [1, 2], "set": {"epochs": 1, "L": 2, "hidden_dim": 16, "out_dim": 16, "batch_size": 4},
                    "models": {"GatedGCN": "SBMs_node_clustering_GatedGCN_PATTERN_100k"}},
    },
}


def snakemake(workdir, *args, config=TINY, timeout=600, env=None):
    """Run the repository's workflow on ``config`` (written to ``workdir``/suite.yaml) in ``workdir`` (``env``: the
    environment, default this process's)."""
    (workdir / "suite.yaml").write_text(yaml.safe_dump(config))
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO_ROOT / "workflow/Snakefile"),
               "--directory", str(workdir), "--configfile", str(workdir / "suite.yaml"), "--cores", "2", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


def job_counts(output: str) -> dict[str, int]:
    stats = output.split("Job stats:", 1)[1]
    return {m[0]: int(m[1]) for m in re.findall(r"^(\w+)\s+(\d+)$", stats, flags=re.M) if m[0] != "total"}


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory) -> tuple[Path, Path]:
    """The checkout built into a wheel and installed with ``pip install --target`` (no dependencies) into a folder
    outside it, once per session: (wheel file, target folder). Put the folder first on ``PYTHONPATH`` to import the
    installed copy instead of the checkout; tests only read it."""
    root = tmp_path_factory.mktemp("wheel")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO_ROOT), "--no-deps", "--no-build-isolation",
                            "-w", str(root / "dist"), "-q"], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    wheel = next((root / "dist").glob("gnnbench-*.whl"))
    target = root / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel),
                              "-q"], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr
    return wheel, target


@pytest.fixture(scope="session")
def tiny_workflow(tmp_path_factory):
    """``TINY`` planned (``-n``) and run once: (workdir, dry-run result, run result)."""
    workdir = tmp_path_factory.mktemp("workflow")
    dry = snakemake(workdir, "-n")
    result = snakemake(workdir)
    return workdir, dry, result


# a small suite under all three protocols (the shape of examples/own-model/suite.yaml at toy size): every kind of
# job, table and figure — the PE comparison and learning curves, the pitfalls summary and split ranking, the
# fair-comparison selection and per-fold table — run once per session (tests/test_job_imports.py)
ALL_PROTOCOLS = {
    "threads_per_run": 1,
    "datasets": {
        "CSL": {"generator": "csl", "seed": 2, "params": {"copies_per_class": 5}},
        "CSBM": {"generator": "csbm", "seed": 1, "params": {"num_nodes": 200, "num_classes": 3},
                 "split": {"scheme": "random_per_class", "splits": 2, "seed": 1}},
        "CSBM-one-split": {"generator": "csbm", "seed": 1, "params": {"num_nodes": 200, "num_classes": 3},
                           "split": {"scheme": "random_sizes", "val_size": 30, "test_size": 100}},
        "GF": {"generator": "graph_families", "seed": 1, "params": {"num_graphs": 60, "features": "degree"},
               "split": {"scheme": "stratified_kfold", "folds": 2, "val_fraction": 0.1, "seed": 0}},
    },
    "benchmarks": {
        "CSL": {"seeds": [1], "folds": [0, 1], "set": {"epochs": 2, "L": 2, "hidden_dim": 8, "out_dim": 8,
                                                        "batch_size": 16},
                "models": {"GCN": "CSL_graph_classification_GCN_CSL_100k",
                           "GCN-PE": "CSL_graph_classification_GCN_CSL_PE_100k"}},
        "CSBM": {"protocol": "pitfalls", "inits": 2, "models": {"GCN": "pitfalls_GCN", "MLP": "pitfalls_MLP"}},
        "CSBM-one-split": {"protocol": "pitfalls", "inits": 2, "compare_with": "CSBM",
                           "models": {"GCN": "pitfalls_GCN", "MLP": "pitfalls_MLP"}},
        "GF": {"protocol": "fair-comparison", "final_runs": 2, "set": {"epochs": 3, "patience": 2},
               "models": {"Baseline": {"preset": "fair_Baseline_social",
                                       "grid": {"learning_rate": [0.01], "hidden_units": [8], "l2": [0.0001]}},
                          "GIN": {"preset": "fair_GIN",
                                  "set": {"aggregation": "sum", "dropout": 0.0, "train_eps": False, "batch_size": 32},
                                  "grid": {"hidden_units": [[8], [8, 8]]}}}},
    },
}
# on PYTHONPATH, run by every Python process at start-up: at exit it appends its command line and whether it had
# imported torch to $GNNBENCH_IMPORTS_LOG (benchmarks/workflow_cost.py measures the jobs' cost the same way)
IMPORTS_HOOK = """
import atexit, json, os, sys
def _report():
    with open(os.environ["GNNBENCH_IMPORTS_LOG"], "a") as f:
        f.write(json.dumps({"argv": sys.argv, "torch": "torch" in sys.modules}) + "\\n")
atexit.register(_report)
"""


def job_script(argv: list[str]) -> str | None:
    """The workflow script a process ran (Snakemake runs a copy named ``tmp<random>.<script>.py``), or None."""
    for arg in argv:
        match = re.search(r"tmp[^/.]*\.(\w+)\.py$", arg)
        if match:
            return match.group(1)
    return None


def hooked_workflow(workdir: Path, config: dict):
    """``config`` planned (``-n``) and run once in ``workdir``, every Python process recording at its exit whether it
    had imported torch: (dry-run result, run result, [{"argv", "torch"} per process])."""
    hook = workdir / "_hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(IMPORTS_HOOK)
    log = workdir / "_imports.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(hook), str(REPO_ROOT),
                                                                     os.environ.get("PYTHONPATH")])),
           "GNNBENCH_IMPORTS_LOG": str(log)}
    dry = snakemake(workdir, "-n", config=config, env=env)
    log.unlink(missing_ok=True)  # the dry run's processes are not jobs
    result = snakemake(workdir, config=config, env=env)
    processes = [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []
    return dry, result, processes


@pytest.fixture(scope="session")
def all_protocols_workflow(tmp_path_factory):
    """``ALL_PROTOCOLS`` planned (``-n``) and run once, every Python process recording at its exit whether it had
    imported torch: (workdir, dry-run result, run result, [{"argv", "torch"} per process])."""
    workdir = tmp_path_factory.mktemp("all_protocols")
    return workdir, *hooked_workflow(workdir, ALL_PROTOCOLS)


# ------------------------------------------------------------------------------------------------ parallel runs

# pytest-xdist (pyproject's addopts: -n logical --dist loadgroup): each test module runs on one worker, so that its
# module-scoped fixtures (a workflow run, generated data) are built once; modules that share a session fixture or a
# resource run on one worker too, under one group name.
SHARED_GROUPS = {
    "test_workflow": "tiny_workflow", "test_report": "tiny_workflow",  # one run of TINY (tiny_workflow)
    "test_examples": "wheel", "test_packaging": "wheel",  # one installed wheel; builds write the checkout's build/
}


@pytest.hookimpl(tryfirst=True)  # before xdist names each test's group in its node id
def pytest_collection_modifyitems(config, items):
    """Group every test by module (or by its shared group), and put the slow modules (end-to-end workflow runs)
    first: a worker takes a whole group at a time, so a long group started last would keep the run waiting."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            module = item.module.__name__ if item.module is not None else item.nodeid.split("::")[0]
            item.add_marker(pytest.mark.xdist_group(SHARED_GROUPS.get(module, module)))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: module order kept within
