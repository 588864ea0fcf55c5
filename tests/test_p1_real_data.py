"""The benchmark's TU sets on its released 10-fold index files, and WikiCS (one graph, 20 published splits, full-batch
training) — docs/datasets.md#tu-dortmund-datasets, docs/datasets.md#wikics and the released code's
``main_TUs_graph_classification.py`` / ``main_WikiCS_node_classification.py`` time budgets.

Expected values come from the real ENZYMES zip and index files (read here with ``zipfile`` / plain text parsing),
from a WikiCS fixture written here in the release's ``data.json`` format (edges counted from its adjacency lists),
and from losses recomputed with plain ``torch.nn.functional`` on the trained weights.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
import yaml

from gnnbench.config.presets import run_config
from gnnbench.data.batching import GraphLoader, model_dtypes
from gnnbench.data.generators import wikics
from gnnbench.data.meta import read_dataset
from gnnbench.data.store import GraphStore
from gnnbench.errors import DataError
from gnnbench.models.build import build_model, count_parameters
from gnnbench.papers import DWIVEDI2020
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.protocols.benchmarking_gnns.train import train
from gnnbench.splits import read_index_folds, read_splits
from gnnbench.suite import load_suite

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "real"
INDEX = SHARED / "splits" / "benchmarking-gnns"
needs_real = pytest.mark.skipif(not (SHARED / "tu" / "ENZYMES.zip").is_file() or not INDEX.is_dir(),
                                reason="real ENZYMES zip / benchmark index files not available (../shared absent)")


def index_rows(name: str, part: str) -> list[list[int]]:
    return [[int(v) for v in line.split(",")] for line in (INDEX / f"{name}_{part}.index").read_text().split("\n")
            if line.strip()]


# ------------------------------------------------------------------------------------ TU with the released folds

@pytest.fixture(scope="module")
def enzymes(tmp_path_factory):
    if not (SHARED / "tu" / "ENZYMES.zip").is_file() or not INDEX.is_dir():
        pytest.skip("real ENZYMES zip / benchmark index files not available (../shared absent)")
    root = tmp_path_factory.mktemp("enzymes")
    raw = root / "raw"
    (raw / "tu").mkdir(parents=True)
    (raw / "tu" / "ENZYMES.zip").write_bytes((SHARED / "tu" / "ENZYMES.zip").read_bytes())
    generate_dataset("tu", "ENZYMES", {"name": "ENZYMES", "variant": DWIVEDI2020}, 0, root / "ds", raw)
    files = [INDEX / f"TUs_ENZYMES_{part}.index" for part in ("train", "val", "test")]
    make_split_file(root / "ds", "published", {"source": DWIVEDI2020}, root / "splits.json", files)
    return root


@needs_real
def test_enzymes_benchmark_variant_has_the_attributes_and_the_released_folds(enzymes):
    meta, columns = read_dataset(enzymes / "ds")
    with zipfile.ZipFile(SHARED / "tu" / "ENZYMES.zip") as archive:
        member = next(n for n in archive.namelist() if n.endswith("ENZYMES_node_attributes.txt"))
        attributes = np.loadtxt(io.BytesIO(archive.read(member)), delimiter=",", dtype=np.float32)
    # the benchmark's TU loader (DGL's LegacyTUDataset; docs/datasets.md#tu-dortmund-datasets): the 18 node
    # attributes override the one-hot labels
    assert meta.node_features.size == 18 and np.array_equal(columns.node["x"], attributes)
    assert meta.net_conventions == ["edge_ones_node_width"] and meta.edge_features is None
    # the GatedGCN config's printed parameter total needs the edge input Linear(18, hidden) of ones(E, 18)
    model = build_model(run_config("TUs_graph_classification_GatedGCN_ENZYMES_100k"), meta)
    assert count_parameters(model) == 103409
    splits = read_splits(enzymes / "splits.json", meta)
    assert splits.scheme == "published" and splits.num_folds == 10
    rows = {part: index_rows("TUs_ENZYMES", part) for part in ("train", "val", "test")}
    for i in range(10):
        assert [splits.folds[i][p] for p in ("train", "val", "test")] == [rows[p][i] for p in ("train", "val", "test")]
        assert [len(splits.folds[i][p]) for p in ("train", "val", "test")] == [480, 60, 60]  # released folds


@needs_real
def test_a_fold_run_gets_a_tenth_of_max_time_and_scores_its_test_fold(enzymes, tmp_path):
    config = {**run_config("TUs_graph_classification_GCN_ENZYMES_100k"), "epochs": 1, "seed": 41}
    metrics = train(dataset_dir=enzymes / "ds", splits_path=enzymes / "splits.json", fold=3, config=config,
                    out_dir=tmp_path, device="cpu", threads=1)
    assert metrics["time_limit_hours"] == pytest.approx(config["max_time"] / 10)  # per fold: max_time / 10
    assert metrics["data"]["split_scheme"] == "published"
    # a global accuracy over the 60 graphs of test fold 3: a multiple of 100 / 60
    assert metrics["test"]["metric"] * 60 / 100 == pytest.approx(round(metrics["test"]["metric"] * 60 / 100))


def write_index(tmp_path: Path, rows: dict[str, list[list[int]]]) -> list[Path]:
    paths = []
    for part in ("train", "val", "test"):
        path = tmp_path / f"X_{part}.index"
        path.write_text("\r\n".join(",".join(map(str, r)) for r in rows[part]) + "\r\n")
        paths.append(path)
    return paths


def test_index_files_are_read_line_by_line_and_checked(tmp_path):
    good = {"train": [[0], [2]], "val": [[1], [3]], "test": [[2, 3], [0, 1]]}
    assert read_index_folds(*write_index(tmp_path, good), num_graphs=4) == [
        {"train": [0], "val": [1], "test": [2, 3]}, {"train": [2], "val": [3], "test": [0, 1]}]
    bad = [({**good, "val": [[1]]}, "lines"),  # one file with fewer folds
           ({**good, "val": [[1], [2]]}, "disjoint"),  # val overlaps train in fold 1
           ({**good, "val": [[7], [3]]}, "refers to graph 7"),
           ]
    for rows, message in bad:
        with pytest.raises(DataError, match=message) as err:
            read_index_folds(*write_index(tmp_path, rows), num_graphs=4)
        assert "\n" not in str(err.value) and "download it again" in str(err.value)
    # every fold well formed, but graph 3 is tested twice and graph 1 never: not a cross-validation
    rows = {"train": [[0], [0]], "val": [[1], [1]], "test": [[2, 3], [2, 3]]}
    with pytest.raises(DataError, match="do not partition"):
        read_index_folds(*write_index(tmp_path, rows), num_graphs=4)
    paths = write_index(tmp_path, good)
    paths[1].write_text("0,x\r\n1\r\n")
    with pytest.raises(DataError, match="not comma-separated graph indices"):
        read_index_folds(*paths, num_graphs=4)


@needs_real
def test_index_files_of_another_dataset_do_not_fit(enzymes, tmp_path):
    files = [INDEX / f"TUs_PROTEINS_full_{part}.index" for part in ("train", "val", "test")]
    with pytest.raises(DataError, match="refers to graph 1112 but the dataset has 600 graphs"):
        make_split_file(enzymes / "ds", "published", {"source": DWIVEDI2020}, tmp_path / "s.json", files)
    assert not (tmp_path / "s.json").exists()


@pytest.mark.skipif(not INDEX.is_dir(), reason="benchmark index files not available (../shared absent)")
def test_csl_takes_the_released_five_folds(tmp_path):
    generate_dataset("csl", "CSL", {}, 0, tmp_path / "ds")
    files = [INDEX / f"CSL_{part}.index" for part in ("train", "val", "test")]
    make_split_file(tmp_path / "ds", "published", {"source": DWIVEDI2020}, tmp_path / "s.json", files)
    splits = read_splits(tmp_path / "s.json")
    rows = {part: index_rows("CSL", part) for part in ("train", "val", "test")}
    assert splits.num_folds == 5 and all(splits.folds[i][p] == rows[p][i] for i in range(5) for p in rows)
    for fold in splits.folds:
        assert [len(fold[p]) for p in ("train", "val", "test")] == [90, 30, 30]
        # stratified (the released CSL folds, Dwivedi et al. §C.8): graphs are class-sorted, 15 per class → 3 of
        # every class in each test fold
        assert np.bincount(np.asarray(fold["test"]) // 15, minlength=10).tolist() == [3] * 10
    with pytest.raises(DataError, match="has 5 folds, expected 10"):  # CSL's files offered as a TU split
        make_splits_expecting(tmp_path, files, 10)


def make_splits_expecting(tmp_path, files, folds):
    from gnnbench.splits import make_splits

    meta, columns = read_dataset(tmp_path / "ds")
    return make_splits(meta, columns.graph["y"], "published", {"source": DWIVEDI2020}, None, files, folds)


def test_suites_plan_the_released_folds_and_their_downloads():
    suite = load_suite({
        "datasets": {"DD": {"generator": "tu", "params": {"name": "DD", "variant": DWIVEDI2020},
                            "split": {"scheme": "published", "source": DWIVEDI2020}}},
        "benchmarks": {"DD": {"seeds": [41, 95], "models": {"GCN": "TUs_graph_classification_GCN_DD_100k"}}}})
    assert suite.datasets["DD"].num_folds == 10
    assert suite.split_raw_files("DD") == [f"resources/raw/tu/splits/dwivedi2020/DD_{p}.index"
                                           for p in ("train", "val", "test")]
    assert len(suite.benchmarks["DD"].runs()) == 20  # 2 seeds × 10 folds


# ------------------------------------------------------------------------------------------------------ WikiCS

def wikics_json(seed: int = 0, nodes: int = 80, classes: int = 10, splits: int = 20) -> dict:
    """A small graph in the release's data.json format: class-dependent features, some links listed from both
    ends (which the benchmark's loader turns into parallel edges), 20 train/val masks and one test mask."""
    rng = np.random.default_rng(seed)
    labels = np.arange(nodes) % classes
    features = rng.normal(size=(nodes, 300)) * 0.5 + np.eye(classes, 300)[labels] * 3
    links = [sorted({int(j) for j in rng.choice(nodes, 3, replace=False) if j != i}) for i in range(nodes)]
    test = np.zeros(nodes, dtype=bool)
    test[rng.choice(nodes, 30, replace=False)] = True
    train_masks, val_masks = [], []
    for _ in range(splits):
        free = rng.permutation(np.flatnonzero(~test))
        train, val = np.zeros(nodes, dtype=bool), np.zeros(nodes, dtype=bool)
        train[free[:20]], val[free[20:35]] = True, True
        train_masks.append(train.tolist())
        val_masks.append(val.tolist())
    return {"features": features.round(4).tolist(), "labels": labels.tolist(), "links": links,
            "train_masks": train_masks, "val_masks": val_masks, "stopping_masks": val_masks,
            "test_mask": test.tolist()}


def test_wikics_edges_are_the_adjacency_lists_then_reversed_without_dedup(tmp_path):
    data = wikics_json()
    (tmp_path / "data.json").write_text(json.dumps(data))
    columns = wikics.read_wikics(tmp_path / "data.json")
    listed = [(i, j) for i, js in enumerate(data["links"]) for j in js]
    expected = listed + [(j, i) for i, j in listed]
    assert list(zip(columns.src.tolist(), columns.dst.tolist(), strict=True)) == expected
    pairs = set(listed)
    assert any((j, i) in pairs for i, j in listed)  # the fixture has reciprocal links → parallel edges kept
    split = columns.node["split"]
    assert split.shape == (80, 20)
    for k in range(20):
        assert np.array_equal(np.flatnonzero(split[:, k] == 0), np.flatnonzero(data["train_masks"][k]))
        assert np.array_equal(np.flatnonzero(split[:, k] == 1), np.flatnonzero(data["val_masks"][k]))
        assert np.array_equal(np.flatnonzero(split[:, k] == 2), np.flatnonzero(data["test_mask"]))
    assert np.array_equal(columns.node["x"], np.asarray(data["features"], dtype=np.float32))


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.pop("links"), "lacks one of the keys"),
    (lambda d: d["links"][3].append(500), "outside 0..79"),
    (lambda d: d["val_masks"][2].__setitem__(int(np.flatnonzero(d["train_masks"][2])[0]), True),
     "two parts of split 2"),
    (lambda d: d["labels"].pop(), "disagree on the number of nodes"),
])
def test_wikics_bad_files_are_one_line_errors(tmp_path, edit, message):
    data = wikics_json()
    edit(data)
    (tmp_path / "data.json").write_text(json.dumps(data))
    with pytest.raises(DataError, match=message) as err:
        wikics.read_wikics(tmp_path / "data.json")
    assert "\n" not in str(err.value) and "download it again" in str(err.value)
    (tmp_path / "data.json").write_text("{not json")
    with pytest.raises(DataError, match="not readable JSON"):
        wikics.read_wikics(tmp_path / "data.json")


@pytest.fixture(scope="module")
def wikics_dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("wikics")
    (root / "raw" / "wikics").mkdir(parents=True)
    (root / "raw" / "wikics" / "data.json").write_text(json.dumps(wikics_json()))
    generate_dataset("wikics", "WikiCS", {}, 0, root / "ds", root / "raw")
    make_split_file(root / "ds", "given", {}, root / "splits.json")
    return root


def full_graph_scores(model, dataset_dir):
    """Scores of every node from one forward pass of the whole graph (eval mode)."""
    meta, columns = read_dataset(dataset_dir)
    store = model_dtypes(GraphStore.from_columns(columns))
    batch = GraphLoader(store, torch.zeros(1, dtype=torch.int64), 1).collate(torch.zeros(1, dtype=torch.int64))
    model.eval()
    with torch.no_grad():
        return model(batch), batch.y


@pytest.mark.parametrize(("preset", "weighted"), [("WikiCS_node_classification_GCN_100k", False),
                                                  ("WikiCS_node_classification_GAT_100k", True)])
def test_wikics_runs_train_full_batch_and_score_each_part_on_its_nodes(wikics_dataset, tmp_path, preset, weighted):
    splits = read_splits(wikics_dataset / "splits.json")
    assert splits.num_folds == 20 and splits.level == "node"
    config = {**run_config(preset), "epochs": 3, "seed": 12, "L": 2}
    fold = 7
    metrics = train(dataset_dir=wikics_dataset / "ds", splits_path=wikics_dataset / "splits.json", fold=fold,
                    config=config, out_dir=tmp_path, device="cpu", threads=1)
    assert metrics["time_limit_hours"] == pytest.approx(config["max_time"] / 20)  # per split: max_time / 20
    meta, _ = read_dataset(wikics_dataset / "ds")
    model = build_model(config, meta)
    model.load_state_dict(torch.load(tmp_path / "checkpoint.pt", weights_only=True)["model"])
    scores, y = full_graph_scores(model, wikics_dataset / "ds")
    for part in ("train", "val", "test"):
        nodes = torch.tensor(splits.folds[fold][part])
        expected_acc = (scores[nodes].argmax(1) == y[nodes]).double().mean().item() * 100
        assert metrics[part]["metric"] == pytest.approx(expected_acc)
        counts = torch.bincount(y[nodes], minlength=10).double()
        # GAT: the class-weighted CE of the SBM loss over the part's nodes (main_WikiCS_node_classification.py),
        # w_c = (V - n_c) / V
        weight = ((nodes.numel() - counts) / nodes.numel()).float() if weighted else None
        expected_loss = F.cross_entropy(scores[nodes], y[nodes], weight=weight).item()
        assert metrics[part]["loss"] == pytest.approx(expected_loss, rel=1e-5)


@pytest.mark.slow
@needs_real
def test_enzymes_and_wikics_train_through_the_workflow(server, tmp_path):
    server.routes["/tu/ENZYMES.zip"] = (SHARED / "tu" / "ENZYMES.zip").read_bytes()
    for part in ("train", "val", "test"):
        server.routes[f"/idx/ENZYMES_{part}.index"] = (INDEX / f"TUs_ENZYMES_{part}.index").read_bytes()
    server.routes["/wikics/data.json"] = json.dumps(wikics_json()).encode()
    short = {"epochs": 2, "L": 2}
    config = {
        "datasets": {
            "ENZYMES": {"generator": "tu", "params": {"name": "ENZYMES", "variant": DWIVEDI2020,
                                                      "mirror": server.url + "/tu"},
                        "split": {"scheme": "published", "source": DWIVEDI2020,
                                  "mirror": server.url + "/idx"}},
            "WikiCS": {"generator": "wikics", "params": {"mirror": server.url + "/wikics"}}},
        "benchmarks": {
            "ENZYMES": {"seeds": [41], "folds": [9], "set": short, "models": {
                "GatedGCN": "TUs_graph_classification_GatedGCN_ENZYMES_100k",
                "GCN": "TUs_graph_classification_GCN_ENZYMES_100k"}},
            "WikiCS": {"seeds": [12], "folds": [19], "set": short, "models": {
                "GatedGCN": "WikiCS_node_classification_GatedGCN",
                "GCN": "WikiCS_node_classification_GCN_100k"}}},
    }
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(config))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow/Snakefile"), "--configfile",
                           "suite.yaml", "--cores", "2", "-q"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name, folds, test_size in (("ENZYMES", [9], 60), ("WikiCS", [19], 30)):
        table = pd.read_csv(tmp_path / f"results/tables/{name}.csv").set_index("model")
        assert sorted(table.index) == ["GCN", "GatedGCN"]
        for label in ("GatedGCN", "GCN"):
            runs = [json.loads((tmp_path / f"results/runs/{name}/{label}/seed{41 if name == 'ENZYMES' else 12}/"
                                           f"fold{f}/metrics.json").read_text()) for f in folds]
            scores = np.array([r["test"]["metric"] for r in runs])
            assert np.allclose(scores * test_size / 100, np.round(scores * test_size / 100))
            assert table.loc[label, "test_metric_mean"] == pytest.approx(scores.mean())
            assert table.loc[label, "test_metric_std"] == pytest.approx(scores.std(ddof=0))
