"""OGBL-COLLAB: the ogbl_collab generator on a fixture in OGB's exact raw format, and link-prediction training.

The fixture is a small co-authorship graph written here as OGB distributes ogbl-collab — a zip holding
``collab/raw/*.csv.gz`` and ``collab/split/time/{train,valid,test}.pt`` — and served from a local HTTP server on
127.0.0.1 (the real download → SHA-256 record → zip → conversion path). Expected values come from ``ogb`` itself:
``PygLinkPropPredDataset('ogbl-collab')`` reading the same raw folder, and ``ogb.linkproppred.Evaluator`` for Hits@K.
(The real collab.zip is not in ../shared/data/real.)
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import signal
import subprocess
import sys
import types
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch
import yaml
from test_download import LocalServer, closed_port_url

from gnnbench.config.presets import all_presets, run_config
from gnnbench.data import download
from gnnbench.data.batching import GraphBatch, model_dtypes
from gnnbench.data.download import DownloadError, recorded_sha256
from gnnbench.data.generators import ogbl_collab
from gnnbench.data.meta import read_dataset, read_pairs
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError, DataError
from gnnbench.io import sha256_json, write_json
from gnnbench.models.build import build_model
from gnnbench.pipeline import compute_pe, generate_dataset, make_split_file
from gnnbench.protocols.benchmarking_gnns.train import train
from gnnbench.splits import read_splits
from gnnbench.suite import load_suite
from gnnbench.training import link_prediction as lp
from gnnbench.training.losses import link_bce
from gnnbench.training.preemption import Preempted

REPO_ROOT = Path(__file__).resolve().parents[1]
NODES, EDGES, VALID, TEST = 80, 220, (70, 120), (60, 120)  # (positives, negatives): more negatives than positives
SMALL = {"epochs": 1, "batch_size": 64}


# --------------------------------------------------------------------------------------------- fixture in OGB format
class Forbidden:
    """Any class outside the loader's allow-list (a .pt naming it must be refused)."""


def _gz_csv(rows) -> bytes:
    return gzip.compress(("\n".join(",".join(map(str, r)) for r in rows) + "\n").encode(), mtime=0)


def _pt(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def collab_files(seed: int = 0, numpy_splits: bool = False) -> dict[str, bytes]:
    """The members of OGB's collab.zip (under ``collab/``) for a random graph; split dicts of tensors, or of NumPy
    arrays with ``numpy_splits``. Some training pairs are listed twice (another year), as in ogbl-collab."""
    rng = np.random.default_rng(seed)
    edge = rng.integers(0, NODES, (EDGES, 2))
    edge = np.concatenate([edge[edge[:, 0] != edge[:, 1]], edge[:6]])
    year, weight = rng.integers(1990, 2018, len(edge)), rng.integers(1, 4, len(edge))
    feat = rng.normal(size=(NODES, 128))
    arrays = (lambda a: a) if numpy_splits else torch.from_numpy
    files = {"raw/edge.csv.gz": _gz_csv(edge.tolist()),
             "raw/node-feat.csv.gz": _gz_csv([[f"{v:.6f}" for v in row] for row in feat]),
             "raw/edge_weight.csv.gz": _gz_csv(weight[:, None].tolist()),
             "raw/edge_year.csv.gz": _gz_csv(year[:, None].tolist()),
             "raw/num-node-list.csv.gz": _gz_csv([[NODES]]), "raw/num-edge-list.csv.gz": _gz_csv([[len(edge)]]),
             "split/time/train.pt": _pt({"edge": arrays(edge), "weight": arrays(weight), "year": arrays(year)}),
             "RELEASE_v1.txt": b"ogbl-collab\n"}
    for part, (pos, neg) in (("valid", VALID), ("test", TEST)):
        files[f"split/time/{part}.pt"] = _pt({
            "edge": arrays(rng.integers(0, NODES, (pos, 2))), "weight": arrays(np.ones(pos, dtype=np.int64)),
            "year": arrays(np.full(pos, 2018 if part == "valid" else 2019)),
            "edge_neg": arrays(rng.integers(0, NODES, (neg, 2)))})
    return files


def zip_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(f"collab/{name}", data)
    return buf.getvalue()


def generate(server: LocalServer, tmp_path: Path, data: bytes, out: str = "ds", route: str = "m") -> Path:
    server.routes[f"/{route}/collab.zip"] = data
    generate_dataset("ogbl_collab", "COLLAB", {"mirror": f"{server.url}/{route}"}, 0, tmp_path / out,
                     raw_dir=tmp_path / "raw")
    return tmp_path / out


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """The canonical URL points at a closed local port and retries do not sleep: tests never leave 127.0.0.1."""
    monkeypatch.setattr(ogbl_collab, "URL", closed_port_url())
    monkeypatch.setattr(download, "time", types.SimpleNamespace(sleep=lambda seconds: None))


@pytest.fixture(scope="module")
def collab(tmp_path_factory):
    """The fixture served, downloaded and converted once; with its PE (k = 20) and split file."""
    root = tmp_path_factory.mktemp("collab")
    server = LocalServer()
    data = zip_bytes(collab_files())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ogbl_collab, "URL", closed_port_url())
        dataset = generate(server, root, data)
    compute_pe(dataset, 20, root / "pe20.parquet")
    make_split_file(dataset, "given", {}, root / "splits.json")
    yield {"root": root, "data": data, "dataset": dataset, "pe": root / "pe20.parquet",
           "splits": root / "splits.json", "server": server}
    server.stop()


def ogb_reference(data: bytes, root: Path):
    """What ogb 1.3.6 itself gives for the same files: (PyG graph, edge split)."""
    from ogb.linkproppred import PygLinkPropPredDataset
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import GlobalStorage

    zipfile.ZipFile(io.BytesIO(data)).extractall(root / "unzipped")
    (root / "unzipped" / "collab").rename(root / "ogbl_collab")  # where ogb moves its download
    # ogb loads the file it has just processed without weights_only; allow PyG's classes for that file only
    with torch.serialization.safe_globals([DataEdgeAttr, DataTensorAttr, GlobalStorage]):
        dataset = PygLinkPropPredDataset("ogbl-collab", root=str(root))
    return dataset[0], dataset.get_edge_split()


# ---------------------------------------------------------------------------------------------------------- dataset
def test_dataset_equals_what_ogb_reads_from_the_same_files(collab, tmp_path):
    graph, split = ogb_reference(collab["data"], tmp_path)
    meta, columns = read_dataset(collab["dataset"])
    # the graph: training edges in both directions, OGB's interleaved order, repeated pairs kept
    np.testing.assert_array_equal(np.stack([columns.src, columns.dst]), graph.edge_index.numpy())
    np.testing.assert_array_equal(columns.node["x"], graph.x.numpy())
    assert columns.node["x"].dtype == np.float32 and columns.edge["edge_attr"].dtype == np.float32
    np.testing.assert_array_equal(columns.edge["edge_attr"],
                                  torch.cat([graph.edge_weight, graph.edge_year], dim=1).numpy().astype(np.float32))
    assert columns.num_nodes.tolist() == [graph.num_nodes] == [NODES]
    # the evaluation pairs, part by part, in OGB's order
    pairs = read_pairs(collab["dataset"], meta)
    for part, ogb_part in (("train", "train"), ("val", "valid"), ("test", "test")):
        code = {"train": 0, "val": 1, "test": 2}[part]
        for label, key in ((1, "edge"), (0, "edge_neg")):
            rows = (pairs.part == code) & (pairs.label == label)
            got = np.stack([pairs.src[rows], pairs.dst[rows]], axis=1)
            expected = split[ogb_part][key].numpy() if key in split[ogb_part] else np.zeros((0, 2))
            np.testing.assert_array_equal(got, expected)
    assert meta.task == "link_prediction" and meta.num_graphs == 1 and meta.pe_solver == "sparse"
    assert (meta.node_features.size, meta.edge_features.size, meta.loss, meta.metric) == (128, 2, "link_bce",
                                                                                           "hits@50")
    assert meta.split_sizes == {"train": len(split["train"]["edge"]), "val": sum(VALID), "test": sum(TEST)}
    assert meta.statistics["all"]["edges"] == 2 * len(split["train"]["edge"])
    assert meta.statistics["val"] == {"positive_pairs": VALID[0], "negative_pairs": VALID[1]}
    # the raw file's SHA-256, recorded at first download (no published checksum)
    raw = collab["root"] / "raw" / ogbl_collab.RELATIVE_PATH
    sha = hashlib.sha256(collab["data"]).hexdigest()
    assert recorded_sha256(raw) == sha and meta.source["raw_sha256"] == {ogbl_collab.RELATIVE_PATH: sha}


def test_split_files_holding_numpy_arrays_read_like_tensors(tmp_path):
    tensors, arrays = collab_files(seed=3), collab_files(seed=3, numpy_splits=True)
    # a NumPy-1 pickle names numpy.core.multiarray (NumPy 2: numpy._core)
    arrays["split/time/valid.pt"] = _legacy_numpy_names(arrays["split/time/valid.pt"])
    (tmp_path / "a.zip").write_bytes(zip_bytes(tensors))
    (tmp_path / "b.zip").write_bytes(zip_bytes(arrays))
    a, b = ogbl_collab.read_collab_zip(tmp_path / "a.zip"), ogbl_collab.read_collab_zip(tmp_path / "b.zip")
    for part in ("train", "valid", "test"):
        assert a.split[part].keys() == b.split[part].keys()
        for key in a.split[part]:
            np.testing.assert_array_equal(a.split[part][key], b.split[part][key])


def _legacy_numpy_names(pt: bytes) -> bytes:
    src, out = zipfile.ZipFile(io.BytesIO(pt)), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("data.pkl"):
                assert b"numpy._core.multiarray" in data
                data = data.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
            dst.writestr(info, data)
    return out.getvalue()


def _bad(name: str) -> bytes:
    files = collab_files()
    if name == "truncated zip":
        good = zip_bytes(files)
        return good[: len(good) // 2]
    if name == "missing member":
        del files["raw/edge_year.csv.gz"]
    elif name == "forbidden object":
        files["split/time/train.pt"] = _pt({"edge": torch.zeros(2, 2, dtype=torch.int64), "x": Forbidden()})
    elif name == "node outside the graph":
        files["split/time/test.pt"] = _pt({"edge": torch.tensor([[0, 1]]), "edge_neg": torch.tensor([[NODES, 0]])})
    elif name == "edge count":
        files["raw/num-edge-list.csv.gz"] = _gz_csv([[3]])
    return zip_bytes(files)


@pytest.mark.parametrize("case, message", [
    ("truncated zip", r"collab.zip is not a readable zip archive \(BadZipFile.*delete it \(and its .sha256 record\)"),
    ("missing member", r"collab.zip lacks raw/edge_year.csv.gz \(OGB layout.*download it again"),
    ("forbidden object", r"member collab/split/time/train.pt cannot be loaded safely \(it names "
                         r"test_collab.Forbidden, which is not allowed: only tensors and NumPy arrays\)"),
    ("node outside the graph", rf"collab/split/time/test.pt 'edge_neg': row 0 names node {NODES}, outside "
                               rf"0..{NODES - 1}"),
    ("edge count", r"raw/edge.csv.gz has \d+ edges but num-edge-list.csv.gz says 3"),
])
def test_bad_zips_are_one_line_errors_and_write_nothing(collab, tmp_path, case, message):
    with pytest.raises(DataError, match=message) as info:
        generate(collab["server"], tmp_path, _bad(case), route=case.replace(" ", "-"))
    assert "\n" not in str(info.value) and str(tmp_path / "raw" / ogbl_collab.RELATIVE_PATH) in str(info.value)
    assert not (tmp_path / "ds").exists()


def test_a_changed_raw_file_is_refused_before_anything_is_written(collab, tmp_path):
    generate(collab["server"], tmp_path, collab["data"])
    raw = tmp_path / "raw" / ogbl_collab.RELATIVE_PATH
    raw.write_bytes(zip_bytes(collab_files(seed=9)))  # same layout, other bytes: not the file that was recorded
    with pytest.raises(DownloadError, match=r"existing file has SHA-256 \w+, but collab.zip.sha256 recorded "
                                            rf"{hashlib.sha256(collab['data']).hexdigest()}") as info:
        generate(collab["server"], tmp_path, collab["data"], out="ds2")
    assert "\n" not in str(info.value) and not (tmp_path / "ds2").exists()


# ----------------------------------------------------------------------------------------------------- splits, PE
def test_given_split_lists_the_pair_rows_of_each_part_and_is_checked(collab, tmp_path):
    meta, _ = read_dataset(collab["dataset"])
    splits = read_splits(collab["splits"], meta)
    pairs = read_pairs(collab["dataset"], meta)
    assert (splits.scheme, splits.level, splits.num_folds) == ("given", "pair", 1)
    for part, code in (("train", 0), ("val", 1), ("test", 2)):
        assert splits.fold(0)[part].tolist() == np.flatnonzero(pairs.part == code).tolist()
    edited = json.loads(collab["splits"].read_text())
    edited["folds"][0]["test"].append(pairs.num_pairs)  # a row that does not exist
    edited["checksum"] = sha256_json(edited["folds"])
    write_json(tmp_path / "edited.json", edited)
    with pytest.raises(DataError, match="fold 0 refers to pairs outside dataset COLLAB"):
        read_splits(tmp_path / "edited.json", meta)
    with pytest.raises(ConfigError, match="does not apply to link-prediction dataset COLLAB.*use given"):
        make_split_file(collab["dataset"], "stratified_kfold", {"folds": 2, "val_fraction": 0.2, "seed": 0},
                        tmp_path / "kfold.json")


def test_positional_encodings_use_the_sparse_eigs_variant(collab, tmp_path, monkeypatch):
    import scipy.sparse.linalg

    calls, real = [], scipy.sparse.linalg.eigs
    monkeypatch.setattr(scipy.sparse.linalg, "eigs", lambda *a, **kw: calls.append(kw) or real(*a, **kw))
    compute_pe(collab["dataset"], 20, tmp_path / "pe.parquet")
    assert [(c["k"], c["which"], c["tol"]) for c in calls] == [(21, "SR", 1e-2)]  # the original's COLLAB call
    pe = pq.read_table(tmp_path / "pe.parquet").column("pe").combine_chunks().flatten().flatten().to_numpy()
    pe = pe.reshape(NODES, 20).astype(np.float64)
    # independent check: each column is (to ARPACK's tol) an eigenvector of L = I − D^-½ A D^-½ whose eigenvalue is
    # the next smallest after the trivial one, from a dense decomposition of the Laplacian built here
    _, columns = read_dataset(collab["dataset"])
    adj = np.zeros((NODES, NODES))
    np.add.at(adj, (columns.src, columns.dst), 1.0)  # repeated pairs count twice, as in the multigraph
    d = adj.sum(axis=0).clip(1) ** -0.5
    lap = np.eye(NODES) - d[:, None] * adj * d[None, :]
    exact = np.linalg.eigvalsh(lap)[1:21]
    rayleigh = np.einsum("ij,ij->j", pe, lap @ pe) / np.einsum("ij,ij->j", pe, pe)
    np.testing.assert_allclose(np.sort(rayleigh), exact, atol=2e-2)
    residual = np.linalg.norm(lap @ pe - pe * rayleigh, axis=0) / np.linalg.norm(pe, axis=0)
    assert residual.max() < 0.05


# -------------------------------------------------------------------------------------------------- training parts
class TableScores(torch.nn.Module):
    """A stand-in model whose score of a pair (u, v) is ``table[u, v]``."""

    def __init__(self, table: torch.Tensor) -> None:
        super().__init__()
        self.table = table

    def encode(self, batch):
        return None

    def head(self, rep, batch):
        u, v = batch.pairs
        return self.table[u, v]


def _tiny_graph(num_nodes: int) -> GraphBatch:
    return GraphBatch(edge_index=torch.zeros(2, 0, dtype=torch.int64), batch=torch.zeros(num_nodes, dtype=torch.int64),
                      ptr=torch.tensor([0, num_nodes]), num_graphs=1)


def test_hits_equal_ogbs_evaluator_on_the_first_pos_negatives(collab):
    from ogb.linkproppred import Evaluator

    meta, _ = read_dataset(collab["dataset"])
    parts = lp.part_pairs(read_pairs(collab["dataset"], meta),
                          {k: torch.from_numpy(v) for k, v in read_splits(collab["splits"]).fold(0).items()})
    assert [parts[p].neg.shape[1] for p in ("train", "val", "test")] == [0, VALID[0], TEST[0]]  # |pos| of |neg|
    gen = torch.Generator().manual_seed(0)
    table = torch.randn(NODES, NODES, generator=gen) * 3
    table[table > 6] = 40.0
    # saturated probabilities tie (σ = 1 in float32) where the logits differ, and a tie is not a hit
    table[tuple(parts["val"].pos[:, :5])] = 40.0
    table[tuple(parts["val"].neg[:, :12])] = 20.0
    # the negatives beyond the first |pos| score high: scoring them all would lower every Hits@K
    pairs = read_pairs(collab["dataset"], meta)
    for code, pos in ((1, VALID[0]), (2, TEST[0])):
        rows = np.flatnonzero((pairs.part == code) & (pairs.label == 0))[pos:]
        table[pairs.src[rows], pairs.dst[rows]] = 30.0
    got = lp.evaluate_link(TableScores(table), _tiny_graph(NODES), parts, batch_size=7, loss_fn=link_bce)

    evaluator = Evaluator("ogbl-collab")
    prob = torch.sigmoid(table)
    val_neg = prob[tuple(parts["val"].neg)]
    for part in ("train", "val", "test"):
        pos = prob[tuple(parts[part].pos)]
        neg = val_neg if part in ("train", "val") else prob[tuple(parts["test"].neg)]
        for k in (10, 50, 100):
            evaluator.K = k
            assert got[part][f"hits@{k}"] == evaluator.eval({"y_pred_pos": pos, "y_pred_neg": neg})[f"hits@{k}"]
        # the loss on the same pairs, computed by hand in float64
        p = torch.sigmoid(table[tuple(parts[part].pos)]).double().numpy()  # σ in float32, as the model's
        q = torch.sigmoid(table[tuple(parts[part if part != "train" else "val"].neg)]).double().numpy()
        expected = -np.log(p + 1e-15).mean() - np.log(1 - q + 1e-15).mean()
        assert got[part]["loss"] == pytest.approx(expected, rel=1e-5)
    all_neg = torch.sigmoid(table[pairs.src[(pairs.part == 1) & (pairs.label == 0)],
                                  pairs.dst[(pairs.part == 1) & (pairs.label == 0)]])
    evaluator.K = 50
    assert evaluator.eval({"y_pred_pos": prob[tuple(parts["val"].pos)], "y_pred_neg": all_neg})["hits@50"] < \
        got["val"]["hits@50"]  # the truncation matters on this data


def test_link_bce_is_the_hand_computed_loss():
    scores = torch.tensor([2.0, -1.0, 0.5, 40.0, -3.0, 1.5])
    y = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    p = 1 / (1 + np.exp(-scores.double().numpy()))
    expected = -np.mean(np.log(p[:3] + 1e-15)) - np.mean(np.log(1 - p[3:] + 1e-15))  # σ(40) = 1: log(1e-15)
    assert link_bce(scores, types.SimpleNamespace(y=y)).item() == pytest.approx(expected, rel=1e-6)


def test_training_epoch_batches_positives_and_samples_as_many_random_pairs(collab):
    meta, columns = read_dataset(collab["dataset"])
    train_pos = lp.part_pairs(read_pairs(collab["dataset"], meta),
                              {k: torch.from_numpy(v) for k, v in read_splits(collab["splits"]).fold(0).items()}
                              )["train"].pos
    graph = lp.full_graph(model_dtypes(GraphStore.from_columns(columns)), None)
    model = build_model(run_config("COLLAB_edge_classification_GCN_40k", {"L": 2, "hidden_dim": 8, "out_dim": 8}),
                        meta)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def epoch(global_seed: int):
        seen = []

        def spy(scores, batch):
            loss = link_bce(scores, batch)
            seen.append((batch.pairs.clone(), batch.y.clone(), float(loss.detach())))
            return loss

        torch.manual_seed(global_seed)
        value = lp.train_link_epoch(model, graph, train_pos, optimizer, spy, 50, torch.Generator().manual_seed(3))
        return seen, value

    seen, value = epoch(0)
    total = train_pos.shape[1]
    assert len(seen) == math.ceil(total / 50)
    positives = []
    for pairs, y, _ in seen:
        p = int(y.sum())
        assert pairs.shape[1] == 2 * p and y[:p].eq(1).all() and y[p:].eq(0).all()  # as many negatives as positives
        negatives = pairs[:, p:]
        assert negatives.min() >= 0 and negatives.max() < NODES and negatives.unique().numel() > 10
        positives.append(pairs[:, :p])
    positives = torch.cat(positives, dim=1)
    assert [p[1].shape[0] for p in seen[:-1]] == [100] * (len(seen) - 1)  # batch_size positives (+ as many negatives)
    # every training positive exactly once per epoch, shuffled
    assert sorted(map(tuple, positives.t().tolist())) == sorted(map(tuple, train_pos.t().tolist()))
    assert not torch.equal(positives, train_pos)
    # the epoch loss weighs each mini-batch by its positives (the original's total_loss / total_examples)
    weights = np.array([int(y.sum()) for _, y, _ in seen])
    assert value == pytest.approx(float(np.dot([loss for *_, loss in seen], weights) / weights.sum()))
    # negatives come from the global RNG (torch.randint), the shuffle from the run's generator
    def split(batches):  # (positives, negatives) of the whole epoch
        return (torch.cat([pairs[:, :int(y.sum())] for pairs, y, _ in batches], dim=1),
                torch.cat([pairs[:, int(y.sum()):] for pairs, y, _ in batches], dim=1))

    again, other = split(epoch(0)[0]), split(epoch(1)[0])
    assert torch.equal(again[0], split(seen)[0]) and torch.equal(other[0], split(seen)[0])
    assert torch.equal(again[1], split(seen)[1]) and not torch.equal(other[1], split(seen)[1])


def _run(collab, out: Path, preset: str, overrides: dict | None = None, **kwargs) -> dict:
    config = run_config(preset, {**SMALL, **(overrides or {})})
    return train(dataset_dir=collab["dataset"], splits_path=collab["splits"], fold=0, config=config, out_dir=out,
                 pe_path=collab["pe"] if config.get("pos_enc") else None, threads=1, label="run", **kwargs)


def test_scheduler_is_mode_max_on_validation_hits50(collab, tmp_path, monkeypatch):
    real = lp.evaluate_link

    def scripted(values):
        calls = []

        def evaluate(*args, **kwargs):
            scores = real(*args, **kwargs)
            scores["val"]["hits@50"] = values[min(len(calls), len(values) - 1)]
            calls.append(1)
            return scores
        return evaluate

    overrides = {"epochs": 8, "lr_schedule_patience": 2, "init_lr": 1e-3, "min_lr": 1e-6, "L": 2, "hidden_dim": 8,
                 "out_dim": 8}
    # rising Hits@50, then three epochs without improvement: the lr halves after the third (patience 2) — and not
    # while Hits@50 rises, as a mode-min scheduler would have it
    monkeypatch.setattr(lp, "evaluate_link", scripted([0.1, 0.2, 0.3, 0.3, 0.3, 0.3, 0.4, 0.4, 0.77]))
    metrics = _run(collab, tmp_path / "a", "COLLAB_edge_classification_GCN_40k", overrides)
    lrs = pd.read_parquet(tmp_path / "a" / "history.parquet")["lr"].tolist()
    assert lrs == pytest.approx([1e-3] * 6 + [5e-4] * 2)
    assert metrics["val"]["metric"] == metrics["val"]["hits@50"] == 0.77  # the final (last-epoch) evaluation
    # no improvement at all: halved after epochs 3 and 6; 2.5e-4 < min_lr stops the run after epoch 6
    monkeypatch.setattr(lp, "evaluate_link", scripted([0.5]))
    metrics = _run(collab, tmp_path / "b", "COLLAB_edge_classification_GCN_40k", {**overrides, "min_lr": 3e-4})
    assert (metrics["epochs"], metrics["stop_reason"]) == (7, "min_lr")
    lrs = pd.read_parquet(tmp_path / "b" / "history.parquet")["lr"].tolist()
    assert lrs == pytest.approx([1e-3] * 4 + [5e-4] * 3)


def test_sigterm_inside_an_epoch_and_the_resumed_run_matches(collab, tmp_path, monkeypatch):
    preset = "COLLAB_edge_classification_GatedGCN_PE_40k"  # PE signs, negatives and dropout all draw random numbers
    overrides = {"epochs": 4, "L": 2, "hidden_dim": 8, "out_dim": 8, "edge_feat": True, "dropout": 0.1,
                 "lr_schedule_patience": 1000}
    expected = _run(collab, tmp_path / "reference", preset, overrides)
    real_epoch, calls = lp.train_link_epoch, []

    def epoch_then_signal(model, graph, train_pos, *rest):
        calls.append(1)
        if len(calls) == 3:  # epoch index 2: one mini-batch of it, then the signal
            real_epoch(model, graph, train_pos[:, :64], *rest)
            os.kill(os.getpid(), signal.SIGTERM)
        return real_epoch(model, graph, train_pos, *rest)

    monkeypatch.setattr(lp, "train_link_epoch", epoch_then_signal)
    out = tmp_path / "run"
    with pytest.raises(Preempted, match=r"training stopped by SIGTERM; checkpoint .*checkpoint.pt holds 2 "
                                        r"completed epoch\(s\)") as info:
        _run(collab, out, preset, overrides)
    assert info.value.exit_code == 143 and not (out / "metrics.json").exists()
    monkeypatch.setattr(lp, "train_link_epoch", real_epoch)
    resumed = _run(collab, out, preset, overrides)
    for key in ("train", "val", "test", "epochs", "stop_reason", "num_params"):
        assert resumed[key] == expected[key]
    pd.testing.assert_frame_equal(pd.read_parquet(out / "history.parquet").drop(columns="seconds"),
                                  pd.read_parquet(tmp_path / "reference" / "history.parquet").drop(columns="seconds"))


def test_a_link_run_whose_loss_turns_nan_is_diverged_without_scores(collab, tmp_path, monkeypatch):
    real_epoch, calls = lp.train_link_epoch, []

    def nan_from_epoch_one(*args, **kwargs):
        loss = real_epoch(*args, **kwargs)
        calls.append(1)
        return math.nan if len(calls) >= 2 else loss

    monkeypatch.setattr(lp, "train_link_epoch", nan_from_epoch_one)
    metrics = _run(collab, tmp_path, "COLLAB_edge_classification_MLP_40k", {"epochs": 5})
    assert metrics["status"] == "diverged" and metrics["stop_reason"] == "diverged"
    assert metrics["diverged_epoch"] == 1 and metrics["epochs"] == 2 and len(calls) == 2
    for part in ("train", "val", "test"):  # no Hits, no loss: nothing that looks like a score
        assert set(metrics[part]) == {"metric", "loss", "hits@10", "hits@50", "hits@100"}
        assert all(value is None for value in metrics[part].values())
    history = pd.read_parquet(tmp_path / "history.parquet")
    assert history["epoch"].tolist() == [0, 1] and history.iloc[1].drop(["epoch", "lr", "seconds"]).isna().all()
    assert history.iloc[0].notna().all()


COLLAB_PRESETS = sorted(name for name, p in all_presets().items() if p.get("dataset") in ("OGBL-COLLAB", "COLLAB"))


def test_there_are_eighteen_collab_presets():
    assert len(COLLAB_PRESETS) == 18


@pytest.mark.parametrize("preset", COLLAB_PRESETS)
def test_every_collab_preset_builds_and_trains_with_its_published_size(collab, tmp_path, preset):
    published = all_presets()[preset]
    overrides = {"num_embs": NODES} if published["model"] == "MF" else {}
    metrics = _run(collab, tmp_path, preset, overrides)
    total = published["total_params"]
    if published["model"] == "MF":  # the table shrinks to the fixture's nodes; everything else is the published net
        total -= (published["net_params"]["num_embs"] - NODES) * published["net_params"]["hidden_dim"]
    assert metrics["num_params"] == total
    assert metrics["epochs"] == 1 and metrics["metric"] == "hits@50"
    for part in ("train", "val", "test"):
        scores = metrics[part]
        assert scores["metric"] == scores["hits@50"] and np.isfinite(scores["loss"])
        assert 0 <= scores["hits@10"] <= scores["hits@50"] <= scores["hits@100"] <= 1
    history = pd.read_parquet(tmp_path / "history.parquet")
    assert len(history) == 1 and history["test_metric"].iloc[0] == pytest.approx(metrics["test"]["metric"])


def test_metrics_have_the_keys_of_graph_runs(collab, datasets, tmp_path):
    link = _run(collab, tmp_path / "link", "COLLAB_edge_classification_MLP_40k")
    graph = train(dataset_dir=datasets["CSL"], splits_path=datasets["CSL_splits"], fold=0, out_dir=tmp_path / "csl",
                  config=run_config("CSL_graph_classification_MLP_CSL_100k", {"epochs": 1, "L": 2, "hidden_dim": 8,
                                                                             "out_dim": 8, "batch_size": 32}))
    assert set(link) == set(graph)
    assert set(link["test"]) == set(graph["test"]) | {"hits@10", "hits@50", "hits@100"}
    assert set(link["data"]) == set(graph["data"]) | {"pairs_checksum"}
    history = pq.read_schema(tmp_path / "link" / "history.parquet").names
    assert set(pq.read_schema(tmp_path / "csl" / "history.parquet").names) <= set(history)


def test_gated_gcn_edge_feat_reads_weight_and_year(collab):
    meta, columns = read_dataset(collab["dataset"])
    graph = lp.full_graph(model_dtypes(GraphStore.from_columns(columns)), None)
    later = replace(graph, edge_attr=graph.edge_attr + torch.tensor([0.0, 1.0]))  # every year + 1
    for edge_feat in (True, False):
        torch.manual_seed(0)
        model = build_model(run_config("COLLAB_edge_classification_GatedGCN_40k", {"edge_feat": edge_feat}),
                            meta).eval()
        assert model.edge_encoder.layer.in_features == 2  # Linear(2, hidden): [weight, year] or ones(E, 2)
        with torch.no_grad():
            changed = not torch.equal(model.encode(graph).nodes, model.encode(later).nodes)
        assert changed == edge_feat


def test_mf_table_smaller_than_the_graph_is_a_config_error(collab, tmp_path):
    with pytest.raises(ConfigError, match=rf"num_embs is 10 but dataset COLLAB has {NODES} nodes.*at least {NODES}"):
        _run(collab, tmp_path, "COLLAB_edge_classification_MF", {"num_embs": 10})


def test_suite_accepts_collab_with_its_given_split_only():
    dataset = {"generator": "ogbl_collab", "params": {"mirror": "http://127.0.0.1:1/"}}
    bench = {"seeds": [41], "models": {"GatedGCN-PE": "COLLAB_edge_classification_GatedGCN_PE_40k",
                                       "MF": "COLLAB_edge_classification_MF"}}
    suite = load_suite({"datasets": {"COLLAB": dataset}, "benchmarks": {"COLLAB": bench}})
    assert suite.datasets["COLLAB"].split["scheme"] == "given"
    assert suite.pe_dim("COLLAB", "GatedGCN-PE") == 20 and suite.pe_dim("COLLAB", "MF") is None
    assert suite.raw_files("COLLAB") == [f"resources/raw/{ogbl_collab.RELATIVE_PATH}"]
    bad = {**dataset, "split": {"scheme": "stratified_kfold", "folds": 2}}
    with pytest.raises(ConfigError, match="stratified_kfold needs graph labels but COLLAB is a link_prediction"):
        load_suite({"datasets": {"COLLAB": bad}, "benchmarks": {"COLLAB": bench}})


# -------------------------------------------------------------------------------------------------------- workflow
@pytest.mark.slow
def test_workflow_trains_collab_end_to_end(collab, tmp_path):
    server = collab["server"]
    server.routes["/wf/collab.zip"] = collab["data"]
    tiny = {"epochs": 2, "batch_size": 64, "L": 2, "hidden_dim": 8, "out_dim": 8}
    suite = {
        "datasets": {"COLLAB": {"generator": "ogbl_collab", "params": {"mirror": f"{server.url}/wf"}}},
        "benchmarks": {"COLLAB": {"seeds": [1], "set": tiny, "models": {
            "GatedGCN-PE-E": {"preset": "COLLAB_edge_classification_GatedGCN_PE_40k", "set": {"edge_feat": True}},
            "GCN": "COLLAB_edge_classification_GCN_40k",
            "MF": {"preset": "COLLAB_edge_classification_MF", "set": {"num_embs": NODES}}}}},
    }
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    dead = closed_port_url()  # offline: only the local server answers
    env = {**os.environ, "http_proxy": dead, "https_proxy": dead, "HTTP_PROXY": dead, "HTTPS_PROXY": dead,
           "no_proxy": "127.0.0.1,localhost", "NO_PROXY": "127.0.0.1,localhost"}
    result = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO_ROOT / "workflow/Snakefile"),
                             "--directory", str(tmp_path), "--configfile", str(tmp_path / "suite.yaml"), "--cores",
                             "2"], capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    results = tmp_path / "results"
    assert (results / "features" / "COLLAB" / "laplacian_pe_k20.parquet").is_file()
    assert json.loads((results / "splits" / "COLLAB" / "splits.json").read_text())["level"] == "pair"
    table = pd.read_csv(results / "tables" / "COLLAB.csv")
    assert sorted(table["model"]) == ["GCN", "GatedGCN-PE-E", "MF"]
    assert table["runs"].tolist() == [1] * 3 and (table["metric"] == "hits@50").all()
    for label in table["model"]:
        metrics = json.loads((results / "runs" / "COLLAB" / label / "seed1" / "fold0" / "metrics.json").read_text())
        row = table[table["model"] == label].iloc[0]
        assert row["test_metric_mean"] == pytest.approx(metrics["test"]["hits@50"])
        assert row["epochs_mean"] == 2 and metrics["config"]["batch_size"] == 64
        assert (metrics["data"]["pe_file"] is not None) == (label == "GatedGCN-PE-E")
    assert server.requests.count("/wf/collab.zip") == 1
