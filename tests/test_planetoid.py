"""Planetoid generator (Shchur et al.'s preprocessing, Table 3 and Table 2b) on the real Cora / CiteSeer files.

The eight original files per dataset (../shared/data/real/planetoid, the published bytes whose SHA-256 gnnbench pins)
are served from a local HTTP server and fetched through ``mirror``: the real download → checksum → allow-list unpickling
→ conversion path. Expected values come from the paper (Table 3: nodes, undirected edges, features, classes; min class
sizes 131 / 115 recomputed from gnn-benchmark's npz files) and from an independent recomputation written here with
networkx and a plain ``pickle.load`` of the trusted files (and PyG's ``read_planetoid_data`` when installed). PubMed has
no real ``allx`` here: its test writes small files in the same format.
"""

from __future__ import annotations

import collections
import json
import os
import pickle
import types
import warnings
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from test_download import closed_port_url

from gnnbench.data import download
from gnnbench.data.download import DownloadError, recorded_sha256
from gnnbench.data.generators import get_generator, planetoid, resolve_params
from gnnbench.data.meta import read_dataset
from gnnbench.data.transductive import standardize
from gnnbench.errors import ConfigError, DataError, GnnbenchError
from gnnbench.pipeline import generate_dataset

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real" / "planetoid"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="real Planetoid files not available "
                                                          "(../shared/data/real/planetoid is absent)")
EXTS = planetoid.EXTENSIONS
CANONICAL_URL = planetoid.URL  # before the autouse fixture points it at a closed port
# paper Table 3 (nodes, undirected edges, features, classes) and the smallest class (recomputed from the npz files)
TABLE3 = {"cora": (2485, 5069, 1433, 7, 131), "citeseer": (2110, 3668, 3703, 6, 115)}


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """Canonical URLs point at a closed local port and retries do not sleep: tests never leave 127.0.0.1."""
    dead = closed_port_url().rsplit("/", 1)[0]
    monkeypatch.setattr(planetoid, "URL", dead + "/ind.{name}.{ext}")
    monkeypatch.setattr(download, "time", types.SimpleNamespace(sleep=lambda seconds: None))


def serve(server, files: dict[str, bytes], prefix: str = "/m") -> str:
    for name, data in files.items():
        server.routes[f"{prefix}/{name}"] = data
    return server.url + prefix


def real_files(name: str) -> dict[str, bytes]:
    return {f"ind.{name}.{ext}": (REAL / name / "raw" / f"ind.{name}.{ext}").read_bytes() for ext in EXTS}


def load_trusted(files: dict[str, bytes], name: str) -> dict:
    """Plain pickle.load of trusted bytes (the reference reader)."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for ext in EXTS[:-1]:
            out[ext] = pickle.loads(files[f"ind.{name}.{ext}"], encoding="latin1")
    out["test.index"] = np.array([int(v) for v in files[f"ind.{name}.test.index"].split()])
    return out


def reference(files: dict[str, bytes], name: str, standard: bool):
    """Independent recomputation with networkx: (kept original node ids, edge set over kept ids, dense features,
    labels (−1 none), public split as node lists)."""
    raw = load_trusted(files, name)
    allx, tx = sp.csr_matrix(raw["allx"]).toarray(), sp.csr_matrix(raw["tx"]).toarray()
    ally, ty, test = np.asarray(raw["ally"]), np.asarray(raw["ty"]), raw["test.index"]
    n = max(len(allx) + len(tx), test.max() + 1)
    x = np.zeros((n, allx.shape[1]), np.float32)
    one_hot = np.zeros((n, ally.shape[1]))
    x[:len(allx)], one_hot[:len(ally)] = allx, ally
    for row, node in enumerate(test):  # row j of tx / ty is node test[j]
        x[node], one_hot[node] = tx[row], ty[row]
    labels = np.array([int(np.argmax(r)) if r.any() else -1 for r in one_hot])
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from((u, v) for u, nbrs in raw["graph"].items() for v in nbrs)
    if standard:
        g.remove_nodes_from([v for v in range(n) if labels[v] < 0])
        g.remove_edges_from(list(nx.selfloop_edges(g)))
        kept = sorted(max(nx.connected_components(g), key=len))
    else:
        kept = list(range(n))
    sub = g.subgraph(kept)
    edges = {(min(u, v), max(u, v)) for u, v in sub.edges()}
    split = {"train": list(range(len(raw["y"]))), "val": list(range(len(raw["y"]), len(raw["y"]) + 500)),
             "test": sorted(test.tolist())}
    return np.array(kept), edges, x[kept], labels[kept], split


def stored(out: Path):
    meta, cols = read_dataset(out)
    assert cols.num_graphs == 1 and meta.transductive
    return meta, cols


def stored_edges(cols) -> set[tuple[int, int]]:
    return {(int(u), int(v)) for u, v in zip(cols.src, cols.dst, strict=True) if u <= v}


def check_columns_layout(cols) -> None:
    """src/dst = both directions of every edge, sorted by (src, dst); y int16; sparse x."""
    key = cols.src.astype(np.int64) * int(cols.num_nodes[0]) + cols.dst
    assert (np.diff(key) > 0).all()
    pairs = set(zip(cols.src.tolist(), cols.dst.tolist(), strict=True))
    assert all((v, u) in pairs for u, v in pairs)
    assert cols.node["y"].dtype == np.int16 and "x" in cols.sparse and "x" not in cols.node


# ------------------------------------------------------------------------------------------------ real data
@needs_real
@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_standardized_real_data_matches_table3_and_networkx(server, tmp_path, name):
    files = real_files(name)
    mirror = serve(server, files)
    out, raw_dir = tmp_path / "ds", tmp_path / "raw"
    meta = generate_dataset("planetoid", name.upper(), {"name": name, "mirror": mirror}, 0, out, raw_dir=raw_dir)
    assert sorted(server.requests) == sorted(f"/m/{f}" for f in files)  # every file through the mirror
    for ext in EXTS:  # the pinned checksums were verified and recorded
        rel = f"planetoid/{name}/ind.{name}.{ext}"
        assert meta.source["raw_sha256"][rel] == planetoid.PINNED_SHA256[name][ext] == meta.source["raw_files"][rel]
        assert recorded_sha256(raw_dir / rel) == planetoid.PINNED_SHA256[name][ext]
    assert "mirror" not in meta.source["params"] and meta.source["preprocessing"][0].startswith("remove nodes")

    nodes, edges, features, classes, min_class = TABLE3[name]
    meta, cols = stored(out)
    stats = meta.statistics["all"]
    assert (stats["nodes"], stats["edges"], stats["features"], stats["classes"]) == (nodes, edges, features, classes)
    assert min(stats["class_sizes"]) == min_class and sum(stats["class_sizes"]) == nodes
    assert stats["self_loops"] == 0 and stats["isolated_nodes"] == 0 and stats["unlabelled_nodes"] == 0
    assert meta.num_outputs == classes and meta.node_features.size == features and meta.node_features.sparse
    assert meta.split_sizes is None and list(meta.statistics) == ["all"]
    assert (meta.task, meta.loss, meta.metric, meta.num_graphs) == ("node_classification", "cross_entropy",
                                                                   "accuracy", 1)
    check_columns_layout(cols)

    kept, ref_edges, ref_x, ref_y, _ = reference(files, name, standard=True)
    assert len(kept) == nodes and len(ref_edges) == edges
    assert {(int(kept[u]), int(kept[v])) for u, v in stored_edges(cols)} == ref_edges
    np.testing.assert_array_equal(cols.sparse["x"].to_dense(), (ref_x != 0).astype(np.float32))
    _, reindexed = np.unique(ref_y, return_inverse=True)
    np.testing.assert_array_equal(cols.node["y"], reindexed)
    assert stats["feature_nonzeros"] == int(np.count_nonzero(ref_x))


@needs_real
@pytest.mark.parametrize("name, train", [("cora", 140), ("citeseer", 120)])
def test_public_split_real_data(server, tmp_path, name, train):
    files = real_files(name)
    params = {"name": name, "standardize": False, "mirror": serve(server, files)}
    generate_dataset("planetoid", name, params, 0, tmp_path / "ds", raw_dir=tmp_path / "raw")
    meta, cols = stored(tmp_path / "ds")
    assert meta.split_sizes == {"train": train, "val": 500, "test": 1000}
    classes = TABLE3[name][3]
    assert meta.statistics["train"]["class_sizes"] == [20] * classes  # 20 per class: the public split
    assert meta.statistics["val"]["nodes"] == 500 and meta.statistics["test"]["nodes"] == 1000
    check_columns_layout(cols)

    kept, ref_edges, ref_x, ref_y, split = reference(files, name, standard=False)
    n = len(kept)
    stats = meta.statistics["all"]
    assert stats["nodes"] == n == int(cols.num_nodes[0])  # Cora 2708; CiteSeer 3327 incl. 15 nodes without data
    assert stats["unlabelled_nodes"] == (15 if name == "citeseer" else 0) == int((ref_y < 0).sum())
    loops = {(u, v) for u, v in ref_edges if u == v}
    assert stats["self_loops"] == len(loops) and stats["edges"] == len(ref_edges) - len(loops)
    assert stored_edges(cols) == ref_edges  # self loops kept once, duplicates merged
    np.testing.assert_array_equal(cols.sparse["x"].to_dense(), ref_x)  # not binarised
    np.testing.assert_array_equal(cols.node["y"], ref_y)
    for part, code in (("train", 0), ("val", 1), ("test", 2)):
        assert np.flatnonzero(cols.node["split"] == code).tolist() == split[part]
    assert (cols.node["split"] >= 0).sum() == train + 1500
    if name == "cora":  # PyG's Planetoid("Cora"): 2,708 nodes, 5,278 undirected edges
        assert (n, stats["edges"]) == (2708, 5278)


@needs_real
@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_public_split_equals_pyg(tmp_path, name):
    """PyG's reader on the same files: same features, labels (PyG gives CiteSeer's 15 empty nodes class 0), masks,
    and edges (PyG also drops self loops)."""
    torch_geometric_io = pytest.importorskip("torch_geometric.io.planetoid")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = torch_geometric_io.read_planetoid_data(str(REAL / name / "raw"), name)
    graph, split = planetoid.read_planetoid(REAL / name / "raw", name)
    np.testing.assert_array_equal(graph.features.toarray(), data.x.numpy())
    labelled = graph.labels >= 0
    np.testing.assert_array_equal(graph.labels[labelled], data.y.numpy()[labelled])
    assert (data.y.numpy()[~labelled] == 0).all() and (data.x.numpy()[~labelled] == 0).all()
    for part, mask in (("train", data.train_mask), ("val", data.val_mask), ("test", data.test_mask)):
        np.testing.assert_array_equal(split[part], np.flatnonzero(mask.numpy()))
    coo = graph.adjacency.tocoo()
    ours = {(int(u), int(v)) for u, v in zip(coo.row, coo.col, strict=True) if u != v}
    theirs = set(map(tuple, data.edge_index.t().tolist()))
    assert ours == theirs


@needs_real
def test_phantom_node_decision():
    """Keeping CiteSeer's 15 label-less nodes would give a 2,120-node / 3,679-edge LCC; dropping them gives the
    paper's 2,110 / 3,668 (the documented decision)."""
    graph, _ = planetoid.read_planetoid(REAL / "citeseer" / "raw", "citeseer")
    assert (graph.labels < 0).sum() == 15 and graph.num_nodes == 3327
    kept = standardize(graph)
    assert (kept.num_nodes, kept.adjacency.nnz // 2) == (2120, 3679)
    labelled = np.flatnonzero(graph.labels >= 0)
    assert labelled.size == 3312  # gnn-benchmark's citeseer.npz has 3,312 nodes


@needs_real
def test_reuse_and_corrupted_cache(server, tmp_path):
    files = real_files("cora")
    params = {"name": "cora", "mirror": serve(server, files)}
    raw_dir = tmp_path / "raw"
    first = generate_dataset("planetoid", "CORA", params, 0, tmp_path / "a", raw_dir=raw_dir)
    server.stop()  # second run: no network
    second = generate_dataset("planetoid", "CORA", params, 5, tmp_path / "b", raw_dir=raw_dir)
    assert first.checksum == second.checksum  # the seed plays no role; same bytes
    (raw_dir / "planetoid" / "cora" / "ind.cora.ally").write_bytes(b"tampered")
    with pytest.raises(DownloadError) as info:
        generate_dataset("planetoid", "CORA", params, 0, tmp_path / "c", raw_dir=raw_dir)
    msg = str(info.value)
    assert "\n" not in msg and "ind.cora.ally" in msg and planetoid.PINNED_SHA256["cora"]["ally"] in msg
    assert "delete it to download it again" in msg and not (tmp_path / "c").exists()


# ------------------------------------------------------------------------------------------------ unhappy paths
def assert_nothing_written(out: Path) -> None:
    assert not out.exists() or list(out.iterdir()) == []


@needs_real
def test_truncated_download_is_one_line_error(server, tmp_path):
    files = real_files("cora")
    mirror = serve(server, files)
    data = files["ind.cora.graph"]
    server.routes["/m/ind.cora.graph"] = (data, len(data) // 2)  # always cut short
    out = tmp_path / "ds"
    with pytest.raises(DownloadError) as info:
        generate_dataset("planetoid", "CORA", {"name": "cora", "mirror": mirror}, 0, out, raw_dir=tmp_path / "raw")
    msg = str(info.value)
    assert "\n" not in msg and "ind.cora.graph" in msg and f"got {len(data) // 2} of {len(data)} bytes" in msg
    assert "download failed from every URL" in msg
    assert_nothing_written(out)
    assert not (tmp_path / "raw" / "planetoid" / "cora" / "ind.cora.graph").exists()


@needs_real
def test_pinned_checksum_mismatch_is_one_line_error(server, tmp_path):
    files = real_files("citeseer")
    data = bytearray(files["ind.citeseer.tx"])
    data[len(data) // 2] ^= 0x01  # one bit changed
    files["ind.citeseer.tx"] = bytes(data)
    out = tmp_path / "ds"
    with pytest.raises(DownloadError) as info:
        generate_dataset("planetoid", "C", {"name": "citeseer", "mirror": serve(server, files)}, 0, out,
                         raw_dir=tmp_path / "raw")
    msg = str(info.value)
    assert "\n" not in msg and "ind.citeseer.tx: checksum mismatch" in msg
    assert f"expected SHA-256 {planetoid.PINNED_SHA256['citeseer']['tx']}" in msg
    assert_nothing_written(out)


# --------------------------------------------------------------------------------------- PubMed-format fixtures
def pubmed_fixture(seed: int = 0, evil: bytes | None = None) -> dict[str, bytes]:
    """Files in the Planetoid format (Python-2 style pickles, protocol 2): 3 classes, TF-IDF features, 560 allx nodes
    (60 labelled training nodes first), 40 test nodes listed in shuffled order, a graph with duplicates, a self loop,
    an isolated pair and isolated nodes."""
    rng = np.random.default_rng(seed)
    n_allx, n_test, width, classes = 560, 40, 12, 3
    n = n_allx + n_test
    labels = rng.integers(0, classes, n)
    labels[:60] = np.repeat(np.arange(classes), 20)
    tfidf = np.where(rng.random((n, width)) < 0.3, rng.random((n, width)).round(3) + 0.01, 0.0)
    one_hot = np.eye(classes, dtype=np.int32)[labels]
    test_nodes = rng.permutation(np.arange(n_allx, n))  # tx row j = node test_nodes[j]
    graph = collections.defaultdict(list)
    for u in range(n - 5):  # nodes n-5.. are isolated except one pair
        for v in (u + 1 + rng.choice(n - 6, 2, replace=False)) % (n - 5):  # never u itself
            graph[u].append(int(v))
            graph[int(v)].append(u)
    graph[7].append(7)  # a self loop
    graph[3].append(graph[3][0])  # a duplicate entry
    graph[n - 2].append(n - 1)
    graph[n - 1].append(n - 2)

    def dump(obj) -> bytes:
        return pickle.dumps(obj, protocol=2, fix_imports=True)

    files = {
        "x": dump(sp.csr_matrix(tfidf[:60], dtype=np.float32)), "y": dump(one_hot[:60]),
        "allx": dump(sp.csr_matrix(tfidf[:n_allx], dtype=np.float32)), "ally": dump(one_hot[:n_allx]),
        "tx": dump(sp.csr_matrix(tfidf[test_nodes], dtype=np.float32)), "ty": dump(one_hot[test_nodes]),
        "graph": evil if evil is not None else dump(graph),
        "test.index": "\n".join(map(str, test_nodes)).encode() + b"\n",
    }
    return {f"ind.pubmed.{ext}": data for ext, data in files.items()}


def test_pubmed_format_both_paths(server, tmp_path):
    files = pubmed_fixture()
    mirror = serve(server, files)
    raw_dir = tmp_path / "raw"
    for standard in (False, True):
        out = tmp_path / f"ds{standard}"
        generate_dataset("planetoid", "PUBMED", {"name": "pubmed", "standardize": standard, "mirror": mirror}, 0, out,
                         raw_dir=raw_dir)
        meta, cols = stored(out)
        kept, edges, x, y, split = reference(files, "pubmed", standard)
        assert stored_edges(cols) == {(int(np.searchsorted(kept, u)), int(np.searchsorted(kept, v)))
                                      for u, v in edges}
        dense = cols.sparse["x"].to_dense()
        if standard:
            np.testing.assert_array_equal(dense, (x != 0).astype(np.float32))  # binarised
            assert meta.statistics["all"]["self_loops"] == 0 and meta.split_sizes is None
            assert meta.statistics["all"]["nodes"] == len(kept) < 600  # isolated nodes left the LCC
        else:
            np.testing.assert_array_equal(dense, x)  # TF-IDF kept
            assert dense.max() < 1.02 and len(np.unique(dense)) > 50
            assert meta.split_sizes == {"train": 60, "val": 500, "test": 40}
            assert meta.statistics["all"]["self_loops"] == 1
            assert meta.statistics["all"]["isolated_nodes"] == 3
            for part, code in (("train", 0), ("val", 1), ("test", 2)):
                assert np.flatnonzero(cols.node["split"] == code).tolist() == split[part]
        np.testing.assert_array_equal(cols.node["y"], y)
        assert meta.num_outputs == 3 and meta.node_features.size == 12
    for ext in EXTS:  # no pinned checksum for PubMed: recorded at download, in meta.source
        rel = f"planetoid/pubmed/ind.pubmed.{ext}"
        assert meta.source["raw_files"][rel] is None
        assert recorded_sha256(raw_dir / rel) == meta.source["raw_sha256"][rel]


def test_pickle_outside_the_allow_list_is_refused_unexecuted(server, tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    files = pubmed_fixture(evil=pickle.dumps(collections.defaultdict(list, {0: [Evil()]}), protocol=2))
    out = tmp_path / "ds"
    with pytest.raises(DataError) as info:
        generate_dataset("planetoid", "PUBMED", {"name": "pubmed", "mirror": serve(server, files)}, 0, out,
                         raw_dir=tmp_path / "raw")
    msg = str(info.value)
    assert "\n" not in msg and "ind.pubmed.graph wants to load posix.system" in msg
    assert "not on gnnbench's allow-list" in msg and "delete it and download it again" in msg
    assert not marker.exists()
    assert_nothing_written(out)


def test_inconsistent_files_are_one_line_errors(server, tmp_path):
    files = pubmed_fixture()
    files["ind.pubmed.test.index"] = b"1\n2\n3\n"  # 3 entries for 40 tx rows
    with pytest.raises(DataError) as info:
        generate_dataset("planetoid", "P", {"name": "pubmed", "mirror": serve(server, files)}, 0, tmp_path / "ds",
                         raw_dir=tmp_path / "raw")
    msg = str(info.value)
    assert "\n" not in msg and "do not fit together: test.index has 3 entries but tx has 40 rows" in msg
    assert isinstance(info.value, GnnbenchError) and not (tmp_path / "ds").exists()


def test_registry_parameters_and_meta(monkeypatch):
    monkeypatch.setattr(planetoid, "URL", CANONICAL_URL)
    gen = get_generator("planetoid")
    assert gen.defaults == {"name": "cora", "standardize": True, "mirror": ""}
    with pytest.raises(ConfigError, match="p.name: 'reddit' is not a Planetoid dataset; choose one of cora, "
                                          "citeseer, pubmed"):
        resolve_params(gen, {"name": "reddit"}, "p")
    files = gen.raw_files(resolve_params(gen, {"name": "citeseer"}, "p"))
    assert [f.relative_path for f in files] == [f"planetoid/citeseer/ind.citeseer.{e}" for e in EXTS]
    assert files[0].urls == ("https://github.com/kimiyoung/planetoid/raw/master/data/ind.citeseer.x",)
    assert all(f.sha256 and f.md5 is None for f in files)
    assert all(f.sha256 is None for f in gen.raw_files({"name": "pubmed"}))
    meta = gen.describe("PM", resolve_params(gen, {"name": "pubmed", "standardize": False}, "p"), 0)
    assert meta.split_sizes == {"train": 60, "val": 500, "test": 1000} and meta.num_outputs == 3
    json.dumps(meta.to_json())
