"""Platonov et al.'s heterophilous graphs (gnnbench.data.generators.heterophily): the real released files served
from a local HTTP server (download → pinned SHA-256 → npz reader → graph store, statistics, ten given splits),
checksum refusal, record-at-first-download, the reader's checks, and the homophily measures."""

from __future__ import annotations

import io
import types
from pathlib import Path

import numpy as np
import pytest
from test_download import closed_port_url

from gnnbench.data import download
from gnnbench.data.download import DownloadError, recorded_sha256
from gnnbench.data.generators import get_generator, heterophily, resolve_params
from gnnbench.data.homophily import homophily
from gnnbench.data.meta import read_dataset
from gnnbench.errors import ConfigError, DataError
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.splits import read_splits

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real" / "heterophily"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="real heterophilous-graphs files not available "
                                                          "(../shared/data/real/heterophily is absent)")
# counted in the released files independently of gnnbench (rows of `edges`, each an undirected pair stored once, no
# self loops, no pair twice); classes and feature widths from node_labels / node_features
FILES = {"tolokers": (11758, 519000, 10, 2), "chameleon": (2277, 31371, 2325, 5),
         "chameleon_filtered": (890, 8854, 2325, 5), "squirrel": (5201, 198353, 2089, 5),
         "squirrel_filtered": (2223, 46998, 2089, 5)}


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """The canonical URL points at a closed local port and retries do not sleep: tests never leave 127.0.0.1."""
    monkeypatch.setattr(heterophily, "URL", closed_port_url().rsplit("/", 1)[0] + "/{file}")
    monkeypatch.setattr(download, "time", types.SimpleNamespace(sleep=lambda seconds: None))


def serve(server, files: dict[str, bytes]) -> str:
    for name, data in files.items():
        server.routes[f"/m/{name}"] = data
    return server.url + "/m"


def npz_bytes(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def small_file(**changes) -> dict:
    """A 6-node file in the release's format: edges 0–1, 1–2, 2–3, 3–4, 4–5, 0–5 stored once; labels 0 0 1 1 0 1;
    split k: train {k mod 6, (k+1) mod 6}, val {(k+2) mod 6}, the rest test."""
    n = 6
    train, val = np.zeros((10, n), bool), np.zeros((10, n), bool)
    for k in range(10):
        train[k, [k % n, (k + 1) % n]] = True
        val[k, (k + 2) % n] = True
    arrays = {"node_features": np.arange(n * 3, dtype=np.float32).reshape(n, 3),
              "node_labels": np.array([0, 0, 1, 1, 0, 1]),
              "edges": np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [0, 5]]),
              "train_masks": train, "val_masks": val, "test_masks": ~(train | val)}
    arrays.update(changes)
    return arrays


@needs_real
@pytest.mark.parametrize("name", sorted(FILES))
def test_real_files_download_statistics_and_ten_splits(server, tmp_path, name):
    nodes, edges, width, classes = FILES[name]
    data = (REAL / f"{name}.npz").read_bytes()
    mirror = serve(server, {f"{name}.npz": data})
    out, raw = tmp_path / "ds", tmp_path / "raw"
    meta = generate_dataset("heterophily", name.replace("_", "-"), {"name": name, "mirror": mirror}, 0, out,
                            raw_dir=raw)
    assert server.requests == [f"/m/{name}.npz"]
    rel = f"heterophily/{name}.npz"
    assert meta.source["raw_sha256"][rel] == heterophily.PINNED_SHA256[name] == meta.source["raw_files"][rel]
    stats = meta.statistics["all"]
    assert (stats["nodes"], stats["edges"], stats["features"], stats["classes"]) == (nodes, edges, width, classes)
    assert stats["self_loops"] == 0 and meta.given_splits == 10
    meta, columns = read_dataset(out)
    assert columns.src.size == 2 * edges  # stored once, both directions on reading (dgl.to_bidirected)
    assert meta.metric == ("roc_auc" if name == "tolokers" else "accuracy")
    with np.load(REAL / f"{name}.npz") as raw_file:
        masks = {part: raw_file[f"{part}_masks"] for part in ("train", "val", "test")}
        assert np.array_equal(columns.node["y"], raw_file["node_labels"])
    make_split_file(out, "given", {}, tmp_path / "splits.json")
    splits = read_splits(tmp_path / "splits.json", meta)
    assert splits.num_folds == 10
    for k in (0, 9):
        fold = splits.fold(k)
        for part, mask in masks.items():
            assert np.array_equal(fold[part], np.flatnonzero(mask[k]))


@needs_real
def test_tolokers_matches_table1(server, tmp_path):
    """Nodes, edges, classes and both homophily measures agree with the paper's Table 1 to its two decimals."""
    mirror = serve(server, {"tolokers.npz": (REAL / "tolokers.npz").read_bytes()})
    meta = generate_dataset("heterophily", "tolokers", {"name": "tolokers", "mirror": mirror}, 0, tmp_path / "ds",
                            raw_dir=tmp_path / "raw")
    paper = meta.source["published_statistics"]
    assert paper == heterophily.published_statistics()["tolokers"]
    assert (paper["nodes"], paper["edges"], paper["classes"]) == (11758, 519000, 2)
    stats = meta.statistics["all"]
    assert (stats["nodes"], stats["edges"], stats["classes"]) == (paper["nodes"], paper["edges"], paper["classes"])
    assert round(stats["edge_homophily"], 2) == paper["edge_homophily"] == 0.59
    assert round(stats["adjusted_homophily"], 2) == paper["adjusted_homophily"] == 0.09
    assert round(2 * stats["edges"] / stats["nodes"], 2) == paper["avg_degree"]


@needs_real
def test_filtered_datasets_lost_their_duplicates(server, tmp_path):
    """chameleon and squirrel without duplicate nodes are smaller graphs of the same features and classes, and
    their homophily is what we measured on the released files (original → filtered)."""
    names = ("chameleon", "chameleon_filtered", "squirrel", "squirrel_filtered")
    mirror = serve(server, {f"{n}.npz": (REAL / f"{n}.npz").read_bytes() for n in names})
    stats = {n: generate_dataset("heterophily", n, {"name": n, "mirror": mirror}, 0, tmp_path / n,
                                 raw_dir=tmp_path / "raw").statistics["all"] for n in names}
    measured = {"chameleon": (0.230, 0.032), "chameleon_filtered": (0.236, 0.030), "squirrel": (0.222, 0.007),
                "squirrel_filtered": (0.207, 0.009)}
    for name, (h_edge, h_adj) in measured.items():
        assert stats[name]["edge_homophily"] == pytest.approx(h_edge, abs=5e-4)
        assert stats[name]["adjusted_homophily"] == pytest.approx(h_adj, abs=5e-4)
    assert stats["chameleon_filtered"]["nodes"] < stats["chameleon"]["nodes"]
    assert stats["squirrel_filtered"]["nodes"] < stats["squirrel"]["nodes"]


@needs_real
def test_checksum_mismatch_is_refused_in_one_line(server, tmp_path):
    data = bytearray((REAL / "chameleon_filtered.npz").read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit changed
    mirror = serve(server, {"chameleon_filtered.npz": bytes(data)})
    out = tmp_path / "ds"
    with pytest.raises(DownloadError) as info:
        generate_dataset("heterophily", "cf", {"name": "chameleon_filtered", "mirror": mirror}, 0, out,
                         raw_dir=tmp_path / "raw")
    msg = str(info.value)
    assert "\n" not in msg and "chameleon_filtered.npz: checksum mismatch" in msg
    assert f"expected SHA-256 {heterophily.PINNED_SHA256['chameleon_filtered']}" in msg
    assert not out.exists() and not (tmp_path / "raw" / "heterophily" / "chameleon_filtered.npz").exists()


def test_lfs_file_sha256_recorded_at_first_download(server, tmp_path):
    """roman_empire has no pinned SHA-256 (Git LFS in the release): recorded at first download, verified on reuse."""
    data = npz_bytes(**small_file())
    mirror = serve(server, {"roman_empire.npz": data})
    raw = tmp_path / "raw"
    meta = generate_dataset("heterophily", "roman-empire", {"name": "roman_empire", "mirror": mirror}, 0,
                            tmp_path / "a", raw_dir=raw)
    path = raw / "heterophily" / "roman_empire.npz"
    assert recorded_sha256(path) == meta.source["raw_sha256"]["heterophily/roman_empire.npz"]
    assert meta.source["published_statistics"]["nodes"] == 22662  # Table 1 row kept beside ours
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # changed after its download
    with pytest.raises(DownloadError, match="recorded .* when it was downloaded; the file changed"):
        generate_dataset("heterophily", "roman-empire", {"name": "roman_empire", "mirror": mirror}, 0,
                         tmp_path / "b", raw_dir=raw)


def test_reader_doubles_undirected_edges_and_keeps_directed_ones(tmp_path):
    path = tmp_path / "g.npz"
    path.write_bytes(npz_bytes(**small_file(edges=np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [0, 5],
                                                            [1, 0]]))))
    undirected = heterophily.read_heterophily(path, "chameleon")
    pairs = set(zip(undirected.src.tolist(), undirected.dst.tolist(), strict=True))
    assert len(pairs) == undirected.src.size == 12  # 1→0 stored too: merged with the reverse of 0→1
    assert all((b, a) in pairs for a, b in pairs)
    directed = heterophily.read_heterophily(path, "chameleon_directed")
    edges = list(zip(directed.src.tolist(), directed.dst.tolist(), strict=True))
    assert edges == [(0, 1), (0, 5), (1, 0), (1, 2), (2, 3), (3, 4), (4, 5)]
    assert directed.node["split"].shape == (6, 10)
    assert directed.node["split"][:, 3].tolist() == [2, 2, 2, 0, 0, 1]  # train {3, 4}, val {5}
    assert "x" in directed.sparse and "x" in undirected.sparse  # chameleon's bag of words: sparse
    assert np.array_equal(heterophily.read_heterophily(path, "minesweeper").node["x"],
                          np.arange(18, dtype=np.float32).reshape(6, 3))  # the new datasets' features: dense


@pytest.mark.parametrize("change, expected", [
    ({"test_masks": None}, "lacks the key 'test_masks'"),
    ({"node_labels": np.array([0, 0, 1, 1, 0])}, "must be (N, D) and N class indices"),
    ({"edges": np.array([[0, 6]])}, "edges name a node outside 0..5"),
    ({"val_masks": np.ones((10, 6), bool)}, "node 0 is in two parts of split 0"),
    ({"train_masks": np.zeros((9, 6), bool)}, "train_masks must be (10, 6) booleans"),
])
def test_damaged_files_are_one_line_errors(tmp_path, change, expected):
    arrays = {k: v for k, v in small_file(**change).items() if v is not None}
    path = tmp_path / "g.npz"
    path.write_bytes(npz_bytes(**arrays))
    with pytest.raises(DataError) as info:
        heterophily.read_heterophily(path, "texas")
    msg = str(info.value)
    assert "\n" not in msg and expected in msg and str(path) in msg and "download it again" in msg


def test_pickled_arrays_are_refused_unread(tmp_path):
    arrays = small_file()
    arrays["node_labels"] = np.array([0, 0, 1, 1, 0, 1], dtype=object)  # needs pickle to load
    path = tmp_path / "g.npz"
    path.write_bytes(npz_bytes(**arrays))
    with pytest.raises(DataError, match="not a readable npz archive"):
        heterophily.read_heterophily(path, "texas")


def test_names_and_metric():
    gen = get_generator("heterophily")
    with pytest.raises(ConfigError) as info:
        resolve_params(gen, {"name": "roman-empire"}, "datasets.r.params")
    assert "datasets.r.params.name: 'roman-empire'" in str(info.value) and "use _ where" in str(info.value)
    assert len(heterophily.NAMES) == 18
    metas = {n: gen.describe(n, {"name": n, "mirror": ""}, 0) for n in heterophily.NAMES}
    binary = [n for n, m in metas.items() if (m.metric, m.loss) == ("roc_auc", "binary_cross_entropy")]
    assert binary == ["minesweeper", "tolokers", "questions"]
    assert {(m.metric, m.loss) for n, m in metas.items() if n not in binary} == {("accuracy", "cross_entropy")}
    pinned = [n for n, sha in heterophily.PINNED_SHA256.items() if sha is None]
    assert pinned == ["roman_empire", "amazon_ratings", "questions"]


def test_homophily_measures():
    # a 4-cycle 0-1-2-3 with labels 0 0 1 1: edges {0,1} and {2,3} inside a class, {1,2} and {0,3} across
    src, dst = np.array([0, 1, 2, 3, 1]), np.array([1, 2, 3, 0, 0])  # 1→0 repeats 0→1
    h = homophily(src, dst, np.array([0, 0, 1, 1]))
    assert h["edge_homophily"] == 0.5
    assert h["adjusted_homophily"] == 0.0  # D_0 = D_1 = 4: expected agreement 1/2, exactly what is observed
    # every edge across the two classes of a bipartite graph: h_adj = (0 - 1/2) / (1 - 1/2) = -1
    h = homophily(np.array([0, 0, 1, 1]), np.array([2, 3, 2, 3]), np.array([0, 0, 1, 1]))
    assert h == {"edge_homophily": 0.0, "adjusted_homophily": -1.0}
    assert homophily(np.array([0]), np.array([0]), np.array([0])) == {"edge_homophily": None,
                                                                     "adjusted_homophily": None}


def test_binary_loss_takes_one_logit_or_two():
    import torch

    from gnnbench.training.losses import get_loss

    loss = get_loss("binary_cross_entropy")
    y = torch.tensor([0, 1, 1, 0])
    one = torch.tensor([[0.3], [-1.2], [2.0], [0.1]])
    batch = types.SimpleNamespace(y=y)
    assert float(loss(one, batch)) == pytest.approx(float(torch.nn.functional.binary_cross_entropy_with_logits(
        one[:, 0], y.float())))
    two = torch.cat([torch.zeros_like(one), one], 1)  # softmax of (0, s) is the sigmoid of s: the same loss
    assert float(loss(two, batch)) == pytest.approx(float(loss(one, batch)))


def test_roc_auc_matches_sklearn():
    import torch
    from sklearn.metrics import roc_auc_score

    from gnnbench.training.metrics import get_metric, roc_auc

    g = torch.Generator().manual_seed(0)
    scores = torch.randint(0, 6, (300,), generator=g).double()  # many ties
    targets = torch.randint(0, 2, (300,), generator=g)
    assert float(roc_auc(scores, targets)) == pytest.approx(roc_auc_score(targets.numpy(), scores.numpy()))
    metric = get_metric("roc_auc")
    logits = torch.stack([torch.zeros(300, dtype=torch.float64), scores], dim=1)
    for part in (slice(0, 100), slice(100, 300)):  # global over the pass, not a mean over batches
        metric.update(logits[part], types.SimpleNamespace(y=targets[part]))
    assert metric.compute() == pytest.approx(100 * roc_auc_score(targets.numpy(), scores.numpy()))
