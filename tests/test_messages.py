"""Problems a careless user runs into, each refused in one line that names the file or key and the fix, before
anything is built or allocated: a file where the workflow writes a folder, graph files whose node counts no data
backs, ``--records`` naming a file, split files and random splits the dataset's description already rules out, a
dataset of the parent suite left out of an extending suite, empty and garbage graph files, a key given twice on one
line of YAML."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import yaml
from conftest import REPO_ROOT, TINY
from torch_geometric.data import Data

from gnnbench.cli import main
from gnnbench.config.yamlfile import parse_yaml
from gnnbench.data.graph_import import FILE_FIX, _reason, read_graph_file
from gnnbench.data.store import MAX_GRAPH_NODES, METADATA_KEY, node_count_problem, read_graph_columns
from gnnbench.errors import ConfigError, DataError
from gnnbench.io import file_in_the_way
from gnnbench.paths import output_folders
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.suite import expand_extends, load_suite

EMPTY_FIX = ("write the graphs into it, one per row or list item (formats: docs/datasets.md#graphs-you-already-have; "
             "gnnbench.data.graph_import.write_graphs writes a valid one)")
SPLIT_FIX = "fix the file (format: docs/datasets.md#your-own-split)"


def one_line(capsys, *args) -> tuple[int, str]:
    """``gnnbench ARGS`` in this process: (exit status, its only stderr line); nothing on stdout."""
    capsys.readouterr()
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1, err
    return status, err.splitlines()[0]


# --------------------------------------------------------------------- a file where the workflow writes a folder


def test_output_folders_are_every_folder_the_workflow_writes_two_levels_deep():
    assert output_folders() == ["resources", "resources/raw", "results", "results/baselines", "results/datasets",
                                "results/features", "results/histories", "results/logs", "results/plots",
                                "results/records",
                                "results/report", "results/runs", "results/splits", "results/tables", "results/tuning"]


def test_file_in_the_way_names_the_first_file_on_the_path(tmp_path):
    (tmp_path / "results").write_text("notes\n")
    assert file_in_the_way(tmp_path / "results" / "runs") == (
        f"{tmp_path / 'results'} is a file, but a folder is expected there (to hold {tmp_path / 'results' / 'runs'})"
        "; move it away or choose another location")
    assert file_in_the_way(tmp_path / "elsewhere" / "runs") is None  # nothing there yet: nothing in the way


@pytest.mark.parametrize("blocker", ["results", "results/datasets", "results/runs", "resources"])
def test_snakemake_refuses_a_file_where_an_output_folder_goes_before_any_job(tmp_path, blocker):
    (tmp_path / blocker).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / blocker).write_text("my notes\n")
    suite = {"datasets": {"CSL": TINY["datasets"]["CSL"]}, "benchmarks": {"CSL": TINY["benchmarks"]["CSL"]}}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    result = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO_ROOT / "workflow/Snakefile"),
                             "--directory", str(tmp_path), "--configfile", str(tmp_path / "suite.yaml"), "--cores",
                             "1"], capture_output=True, text=True, timeout=300)  # not -n: a real run stops here
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.splitlines() == [f"gnnbench: error: {blocker} is a file, but a folder is expected there; "
                                          "move it away or choose another location"]
    assert (tmp_path / blocker).read_text() == "my notes\n"
    assert not (tmp_path / "results" / "datasets").is_dir()  # no job ran (the dataset job ran first before)


# ------------------------------------------------------------------------- node counts no data backs


def bare_parquet(path: Path, num_nodes: list[int]) -> None:
    """Graphs with a count of nodes, no edges, no node column, a label per graph."""
    pq.write_table(pa.table({"num_nodes": pa.array(num_nodes, pa.int64()),
                             "src": pa.array([[]] * len(num_nodes), pa.list_(pa.int32())),
                             "dst": pa.array([[]] * len(num_nodes), pa.list_(pa.int32())),
                             "y": pa.array([i % 2 for i in range(len(num_nodes))], pa.int64())}), path)


def test_a_graph_beyond_int32_node_ids_is_refused_before_allocation(tmp_path, capsys):
    path = tmp_path / "big.parquet"
    bare_parquet(path, [10**12, 3])
    out = tmp_path / "datasets" / "BIG"
    status, line = one_line(capsys, "generate", "graph_file", "--name", "BIG", "--set", f"path={path}", "--out", out)
    assert (status, line) == (1, f"gnnbench: error: graph file {path}: graph 0 has num_nodes 1000000000000, more "
                                 "than a graph can have (2,147,483,647: node ids are int32); give each graph's true "
                                 "num_nodes")
    assert not (tmp_path / "datasets").exists()


def test_a_billion_nodes_without_data_in_a_small_file_are_refused(tmp_path, capsys):
    path = tmp_path / "bare.parquet"
    bare_parquet(path, [10**9, 3])
    size = path.stat().st_size
    out = tmp_path / "datasets" / "BARE"
    status, line = one_line(capsys, "generate", "graph_file", "--name", "BARE", "--set", f"path={path}", "--out",
                            out)
    assert (status, line) == (1, f"gnnbench: error: graph file {path}: its graphs have 1,000,000,003 nodes in all but "
                                 "no node data (no features x, no per-node column), so gnnbench would allocate 4 "
                                 f"bytes per node (4,000,000,012 bytes), more than a file of {size:,} bytes may stand "
                                 "for (max(64 MiB, 250 × its size), at most 8 GiB); give each graph's true num_nodes")
    assert not (tmp_path / "datasets").exists()


def test_a_pt_of_data_with_a_billion_nodes_and_no_features_is_refused(tmp_path):
    path = tmp_path / "bare.pt"
    torch.save([Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=10**9, y=torch.tensor([i]))
                for i in range(2)], path)
    with pytest.raises(DataError) as err:
        read_graph_file(path)
    assert str(err.value).startswith(f"graph file {path}: its graphs have 2,000,000,000 nodes in all but no node "
                                     "data (no features x, no per-node column)")


def test_node_counts_at_the_bounds():
    assert node_count_problem(np.array([MAX_GRAPH_NODES]), True, 10) is None  # the file carries its nodes
    assert node_count_problem(np.array([MAX_GRAPH_NODES + 1]), True, 10**12).startswith("graph 0 has num_nodes")
    # no node data: 4 bytes per node within max(64 MiB, 250 × size)
    assert node_count_problem(np.array([2**24]), False, 1000) is None
    assert node_count_problem(np.array([2**24, 1]), False, 1000) is not None
    assert node_count_problem(np.array([2**25]), False, 2**20) is None  # 250 × 1 MiB holds 2**25 × 4 bytes
    assert node_count_problem(np.array([2**30, 2**30]), False, None) is None  # no file: 8 GiB at most
    assert node_count_problem(np.array([2**30, 2**30, 1]), False, None) is not None


def test_a_file_that_states_more_nodes_than_its_features_cover_is_refused(tmp_path):
    path = tmp_path / "short.parquet"
    pq.write_table(pa.table({"num_nodes": [10**9, 2], "src": [[0], [0]], "dst": [[1], [1]],
                             "x": [[1.0, 2.0], [0.0, 1.0]], "y": [0, 1]}), path)
    with pytest.raises(DataError) as err:
        read_graph_file(path)
    assert str(err.value) == (f"graph file {path}: column 'x' has 2 entries in graph 0, which has 1000000000 nodes; "
                              "give one entry per node")


def test_a_store_whose_row_claims_beyond_int32_nodes_is_refused(tmp_path):
    path = tmp_path / "graphs.parquet"
    layout = {"format": 1, "node": [], "edge": [], "graph": ["y"]}
    table = pa.table({"num_nodes": pa.array([10**12], pa.int64()), "src": pa.array([[]], pa.large_list(pa.int32())),
                      "dst": pa.array([[]], pa.large_list(pa.int32())), "y": pa.array([0], pa.int16())})
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps(layout).encode()}), path)
    with pytest.raises(DataError) as err:
        read_graph_columns(path)
    assert str(err.value) == (f"graph store {path}: graph 0 has num_nodes 1000000000000, more than a graph can have "
                              "(2,147,483,647: node ids are int32); delete it and rerun snakemake to recreate it")


# ------------------------------------------------------------------------------------------ empty graph files


@pytest.mark.parametrize("case, message", [
    ("zero_bytes.parquet", "is empty (0 bytes)"),
    ("zero_bytes.pt", "is empty (0 bytes)"),
    ("no_rows.parquet", "is empty (0 rows: no graphs)"),  # pandas writes the columns of an empty frame as null
])
def test_an_empty_graph_file_says_it_is_empty(tmp_path, capsys, case, message):
    path = tmp_path / case
    if case == "no_rows.parquet":
        import pandas as pd

        pd.DataFrame(columns=["num_nodes", "src", "dst", "y"]).to_parquet(path)
    else:
        path.write_bytes(b"")
    status, line = one_line(capsys, "generate", "graph_file", "--name", "E", "--set", f"path={path}", "--out",
                            tmp_path / "E")
    assert (status, line) == (1, f"gnnbench: error: graph file {path}: {message}; {EMPTY_FIX}")
    assert not (tmp_path / "E").exists()


def test_an_empty_graph_store_says_it_is_empty(tmp_path):
    path = tmp_path / "graphs.parquet"
    path.write_bytes(b"")
    with pytest.raises(DataError) as err:
        read_graph_columns(path)
    assert str(err.value) == (f"graph store {path} is empty (0 bytes), not a Parquet file; delete it and rerun "
                              "snakemake to recreate it")


# ------------------------------------------------------------------------------------------ garbage .pt files


def test_a_garbage_pt_file_gives_torchs_reason_whole_and_no_warning(tmp_path, capsys):
    path = tmp_path / "garbage.pt"
    path.write_bytes(pickle.dumps({"a": 1}, protocol=4))  # torch warns about the protocol, then refuses an opcode
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status, line = one_line(capsys, "generate", "graph_file", "--name", "G", "--set", f"path={path}", "--out",
                                tmp_path / "G")
    assert status == 1 and not caught
    assert line.startswith(f"gnnbench: error: graph file {path}: is not a readable torch file (UnpicklingError: "
                           "Unsupported operand ")
    reason = line.split("(UnpicklingError: ", 1)[1].split(")", 1)[0]
    assert reason.removeprefix("Unsupported operand ").isdigit()  # the reason, not torch's advice around it
    assert line.endswith(f"); {FILE_FIX}")
    assert not (tmp_path / "G").exists()


def test_a_long_reason_is_cut_at_a_word():
    reason = _reason(ValueError("word " * 100))
    assert reason.startswith("ValueError: word word") and reason.endswith("word ...")
    assert len(reason) <= len("ValueError: ") + 160 + 4


# ------------------------------------------------------------------------------------------------- --records


@pytest.fixture(scope="module")
def csl(tmp_path_factory):
    root = tmp_path_factory.mktemp("csl")
    generate_dataset("csl", "CSL", {"copies_per_class": 5}, 0, root / "CSL")
    make_split_file(root / "CSL", "stratified_kfold", {"folds": 5, "val_fraction": 0.25, "seed": 0},
                    root / "splits.json")
    return root / "CSL", root / "splits.json"


def train_args(csl, out, *extra) -> list:
    return ["train", "benchmarking-gnns", "--dataset", csl[0], "--splits", csl[1], "--preset",
            "CSL_graph_classification_MLP_CSL_100k", "--set", "epochs=1", "--out", out, *extra]


def test_records_naming_a_file_is_refused_before_training(csl, tmp_path, capsys):
    precious = tmp_path / "notes.txt"
    precious.write_text("my notes\n")
    status, line = one_line(capsys, *train_args(csl, tmp_path / "run", "--records", precious))
    assert (status, line) == (1, f"gnnbench: error: --records {precious} is a file, but train writes a folder there; "
                                 "give a new or existing folder (the file was left as it is)")
    status, line = one_line(capsys, *train_args(csl, tmp_path / "run", "--records", precious / "records"))
    assert (status, line) == (1, f"gnnbench: error: --records {precious / 'records'}: {precious} is a file, not a "
                                 "folder; move it away or choose another --records")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "records").write_text("mine\n")  # the default, OUT/records
    status, line = one_line(capsys, *train_args(csl, tmp_path / "out"))
    assert (status, line) == (1, f"gnnbench: error: --records {tmp_path / 'out' / 'records'} is a file, but train "
                                 "writes a folder there; give a new or existing folder (the file was left as it is)")
    assert precious.read_text() == "my notes\n" and not (tmp_path / "run").exists()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["records"]


# ---------------------------------------------------------------------------- splits checked at suite load


def suite_with(split: dict, generator: str = "csl", params: dict | None = None) -> dict:
    if generator == "csl":
        return {"datasets": {"D": {"generator": "csl", "params": params or {"copies_per_class": 5}, "split": split}},
                "benchmarks": {"D": {"seeds": [1], "models": {"M": "CSL_graph_classification_MLP_CSL_100k"}}}}
    return {"datasets": {"D": {"generator": generator, "params": params or {}, "split": split}},
            "benchmarks": {"D": {"protocol": "pitfalls", "inits": 1, "models": {"M": "pitfalls_GCN"}}}}


@pytest.mark.parametrize("content, message", [
    ([{"train": [0, 50], "val": [1], "test": [2]}], "fold 0 names graph 50 (the dataset has 50 graphs: 0 .. 49); "
                                                    f"{SPLIT_FIX}"),
    ([{"train": [-1], "val": [1], "test": [2]}], f"fold 0 names graph -1 (the dataset has 50 graphs: 0 .. 49); "
                                                 f"{SPLIT_FIX}"),
    ([{"train": [0, 1], "val": [1], "test": [2]}], "fold 0: graph 1 appears more than once (it is in train and val); "
                                                   "train, val and test must be disjoint, each index once"),
    ({"level": "node", "folds": [{"train": [0], "val": [1], "test": [2]}]},
     "holds node indices but the dataset is split by graph; give graph indices (or drop 'level')"),
])
def test_a_split_file_the_description_rules_out_fails_the_suite_load(tmp_path, content, message):
    path = tmp_path / "my_splits.json"
    path.write_text(json.dumps(content))
    with pytest.raises(DataError) as err:
        load_suite(suite_with({"scheme": "file", "path": "my_splits.json"}), base_dir=tmp_path)
    assert str(err.value) == f"split file {path}: {message}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my_splits.json"]  # nothing made


def test_a_split_file_with_more_folds_than_the_suite_runs_on_is_refused(tmp_path):
    (tmp_path / "my_splits.json").write_text(json.dumps([{"train": [0], "val": [1], "test": [2]}]))
    config = suite_with({"scheme": "file", "path": "my_splits.json"})
    config["benchmarks"]["D"]["folds"] = [0, 1]
    with pytest.raises(ConfigError) as err:
        load_suite(config, base_dir=tmp_path)
    assert str(err.value) == "benchmarks.D.folds: fold(s) [1] do not exist; D has 1 fold(s), numbered from 0"


def test_a_node_split_file_of_a_graph_file_is_checked_against_its_nodes_at_load(tmp_path):
    pq.write_table(pa.table({"num_nodes": [4], "src": [[0, 1, 2]], "dst": [[1, 2, 3]], "y": [[0, 1, 0, 1]]}),
                   tmp_path / "graph.parquet")
    (tmp_path / "my_splits.json").write_text(json.dumps([{"train": [0], "val": [1], "test": [4]}]))
    config = suite_with({"scheme": "file", "path": "my_splits.json"}, "graph_file", {"path": "graph.parquet"})
    with pytest.raises(DataError) as err:
        load_suite(config, base_dir=tmp_path)
    assert str(err.value) == (f"split file {tmp_path / 'my_splits.json'}: fold 0 names node 4 (the dataset has 4 "
                              f"nodes: 0 .. 3); {SPLIT_FIX}")


@pytest.mark.parametrize("split, message", [
    ({"scheme": "random_per_class", "train_per_class": 100, "val_per_class": 30},
     "class 0 has only 125 labelled nodes but scheme random_per_class needs 130 per class (100 train + 30 val); "
     "lower the per-class counts or drop small classes from the dataset"),
    ({"scheme": "random_sizes", "val_size": 300, "test_size": 200},
     "val_size + test_size = 500 but only 420 labelled nodes remain after the training nodes; lower them"),
])
def test_a_random_split_the_classes_cannot_give_fails_the_suite_load(split, message):
    with pytest.raises(ConfigError) as err:  # csbm: 500 nodes in 4 equal classes, stated by its description
        load_suite(suite_with(split, "csbm", {"num_nodes": 500}))
    assert str(err.value) == f"datasets.D.split: {message}"
    load_suite(suite_with({**split, "train_per_class": 20, "val_per_class": 30} if "val_per_class" in split else
                          {**split, "val_size": 200}, "csbm", {"num_nodes": 500}))  # within the classes: loads


def test_a_graph_files_classes_bound_its_random_split_at_load(tmp_path):
    pq.write_table(pa.table({"num_nodes": [6], "src": [[0, 1]], "dst": [[1, 2]], "y": [[0, 0, 0, 1, 1, -1]]}),
                   tmp_path / "graph.parquet")
    with pytest.raises(ConfigError) as err:
        load_suite(suite_with({"scheme": "random_per_class", "train_per_class": 1, "val_per_class": 2}, "graph_file",
                              {"path": "graph.parquet"}), base_dir=tmp_path)
    assert str(err.value) == ("datasets.D.split: class 1 has only 2 labelled nodes but scheme random_per_class needs 3 "
                              "per class (1 train + 2 val); lower the per-class counts or drop small classes from the "
                              "dataset")


# ------------------------------------------------------------------------------ a dataset left out of `extends`


@pytest.mark.parametrize("extra, where", [
    ({"models": {"Mine": {"model": "x.py:A", "datasets": ["CiteSeer"]}}}, "models.Mine.datasets"),
    ({"benchmarks": {"CiteSeer": {"inits": 2}}}, "benchmarks"),
])
def test_a_parent_dataset_left_out_of_the_selection_says_how_to_include_it(extra, where):
    with pytest.raises(ConfigError) as err:
        expand_extends({"extends": "pitfalls", "datasets": ["CORA", "PubMed"], **extra})
    assert str(err.value) == (f"{where}: dataset 'CiteSeer' is in pitfalls but not among the datasets this suite "
                              "selects (datasets: CORA, PubMed); add CiteSeer to datasets, or drop it here")


def test_an_extending_suite_file_names_its_parent_file(tmp_path):
    parent = {"datasets": {name: {"generator": "csbm", "params": {"num_nodes": 200}} for name in ("CSBM1", "CSBM2")},
              "benchmarks": {name: {"protocol": "pitfalls", "inits": 1, "models": {"GCN": "pitfalls_GCN"}}
                             for name in ("CSBM1", "CSBM2")}}
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(parent))
    with pytest.raises(ConfigError) as err:
        load_suite({"extends": "base.yaml", "datasets": ["CSBM1"],
                    "models": {"MLP": {"preset": "pitfalls_MLP", "datasets": ["CSBM2"]}}}, base_dir=tmp_path)
    assert str(err.value) == ("models.MLP.datasets: dataset 'CSBM2' is in base.yaml but not among the datasets this "
                              "suite selects (datasets: CSBM1); add CSBM2 to datasets, or drop it here")


# ---------------------------------------------------------------------------------- YAML: a key given twice


def test_a_key_given_twice_on_one_line_names_both_columns():
    with pytest.raises(ConfigError) as err:
        parse_yaml("seeds: [1]\nset: {a: 1, a: 2}\n", "config file suite.yaml")
    assert str(err.value) == ("config file suite.yaml: key 'a' is given twice in one mapping (line 2, columns 7 and "
                              "13), and YAML would silently keep only the last; remove or merge one")
    with pytest.raises(ConfigError, match=r"key 'a' is given twice in one mapping \(lines 1 and 3\)"):
        parse_yaml("a: 1\nb: 2\na: 3\n", "config file suite.yaml")
