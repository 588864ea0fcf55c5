"""gnn-benchmark npz generator and the shared Pitfalls standardisation (gnnbench.data.transductive).

No real npz file is available offline, so the tests write small files in gnn-benchmark's npz format (directed,
weighted, with self loops, several components, a TF-IDF-like feature matrix with a stored zero, classes too small
to keep) and serve them from a local HTTP server through ``mirror``. The expected graphs are recomputed here
independently with networkx following Shchur et al.'s preprocessing
(docs/datasets.md#datasets-of-pitfalls-of-gnn-evaluation).
"""

from __future__ import annotations

import io
import types
import zipfile

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from test_download import closed_port_url

from gnnbench.data import download
from gnnbench.data.download import recorded_sha256
from gnnbench.data.generators import get_generator, npz, resolve_params
from gnnbench.data.meta import read_dataset
from gnnbench.data.transductive import (
    RawGraph,
    largest_component,
    remove_self_loops,
    standardize,
    symmetric_unweighted,
)
from gnnbench.errors import ConfigError, DataError

CANONICAL_URL = npz.URL


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setattr(npz, "URL", closed_port_url().rsplit("/", 1)[0] + "/{file}")
    monkeypatch.setattr(download, "time", types.SimpleNamespace(sleep=lambda seconds: None))


def fixture_graph(seed: int = 0):
    """(adjacency CSR, features CSR, labels) of a raw gnn-benchmark-like graph with N = 300 nodes.

    Nodes 0..239: a random main component (classes 0, 1, 2 and the small class 3 with 40 nodes);
    240..249: a cluster of class 0 attached to the main component only through class-3 nodes 250..251;
    252..271: a second component; 272..279: isolated; 280..299: class 4 (6 nodes) + class 0, in the main component.
    """
    rng = np.random.default_rng(seed)
    n = 300
    labels = np.zeros(n, dtype=np.int64)
    labels[:200] = rng.integers(0, 3, 200)
    labels[200:240] = 3
    labels[240:250] = 0
    labels[250:252] = 3  # the bridge; class 3 has 42 nodes
    labels[252:280] = rng.integers(0, 3, 28)
    labels[280:286] = 4
    labels[286:] = rng.integers(0, 3, 14)
    main = np.r_[0:240, 280:300]
    edges = [(main[i], main[(i + 1) % main.size]) for i in range(main.size)]  # a ring: one component
    edges += [tuple(rng.choice(main, 2, replace=False)) for _ in range(250)]
    edges += [(240 + i, 240 + (i + 1) % 10) for i in range(10)]  # the cluster
    edges += [(250, 240), (250, 0), (251, 245), (251, 3)]  # only class-3 nodes join it to the main component
    edges += [(252 + i, 252 + (i + 1) % 20) for i in range(20)]  # second component
    edges += [(5, 5), (252, 252), (100, 100)]  # self loops
    src, dst = np.array(edges).T
    weights = rng.choice([1.0, 2.5, 0.5], src.size)
    adjacency = sp.csr_matrix((weights, (src, dst)), shape=(n, n))  # directed: each edge stored one way
    adjacency = adjacency + sp.csr_matrix((np.full(5, 3.0), ([1, 2, 3, 4, 5], [0, 1, 2, 3, 4])), shape=(n, n))
    width = 9
    dense = np.where(rng.random((n, width)) < 0.35, rng.random((n, width)) + 0.1, 0.0).astype(np.float32)
    features = sp.csr_matrix(dense)
    features.data[0] = 0.0  # a stored explicit zero: not a word occurrence
    return adjacency.tocsr(), features, labels


def npz_bytes(adjacency, features, labels, dense_attr: bool = False, drop: str | None = None,
              extra: dict | None = None) -> bytes:
    arrays = {"adj_data": adjacency.data, "adj_indices": adjacency.indices, "adj_indptr": adjacency.indptr,
              "adj_shape": np.array(adjacency.shape), "labels": labels.astype(np.int8),
              "node_names": np.array([f"n{i}" for i in range(adjacency.shape[0])]),
              "class_names": np.array(["a", "b", "c", "d", "e"])}
    if dense_attr:
        arrays["attr_matrix"] = features.toarray()
    else:
        arrays.update(attr_data=features.data, attr_indices=features.indices, attr_indptr=features.indptr,
                      attr_shape=np.array(features.shape))
    arrays.update(extra or {})
    if drop:
        arrays.pop(drop)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def reference(adjacency, features, labels, drop_up_to: int = 0):
    """Shchur et al.'s preprocessing with networkx: (kept original node ids ascending, edge set over kept ids,
    binary features, re-indexed labels)."""
    coo = adjacency.tocoo()
    g = nx.Graph()
    g.add_nodes_from(range(adjacency.shape[0]))
    g.add_edges_from(zip(coo.row.tolist(), coo.col.tolist(), strict=True))  # unweighted, undirected
    g.remove_edges_from(list(nx.selfloop_edges(g)))
    kept = max(nx.connected_components(g), key=len)
    if drop_up_to:
        counts = {c: sum(labels[v] == c for v in kept) for c in set(labels[list(kept)])}
        sub = g.subgraph([v for v in kept if counts[labels[v]] > drop_up_to])
        kept = max(nx.connected_components(sub), key=len)
    kept = sorted(kept)
    edges = {(min(u, v), max(u, v)) for u, v in g.subgraph(kept).edges()}
    binary = (features.toarray()[kept] != 0).astype(np.float32)
    _, reindexed = np.unique(labels[kept], return_inverse=True)
    return np.array(kept), edges, binary, reindexed


def generate(server, tmp_path, data: bytes, params: dict, name: str = "cora_full"):
    from gnnbench.pipeline import generate_dataset

    file = npz.FILES[name]
    server.routes[f"/npz/{file}"] = data
    out = tmp_path / "ds"
    params = {"name": name, "mirror": f"{server.url}/npz", **params}
    generate_dataset("npz", "DS", params, 0, out, raw_dir=tmp_path / "raw")
    return read_dataset(out)


def check_against_reference(meta, cols, ref) -> None:
    kept, edges, binary, labels = ref
    assert int(cols.num_nodes[0]) == kept.size == meta.statistics["all"]["nodes"]
    assert meta.statistics["all"]["edges"] == len(edges)
    key = cols.src.astype(np.int64) * kept.size + cols.dst
    assert (np.diff(key) > 0).all()  # both directions, sorted by (src, dst), no duplicates
    stored = {(int(kept[u]), int(kept[v])) for u, v in zip(cols.src, cols.dst, strict=True) if u < v}
    assert stored == edges and (cols.src != cols.dst).all() and cols.num_edges[0] == 2 * len(edges)
    np.testing.assert_array_equal(cols.sparse["x"].to_dense(), binary)
    np.testing.assert_array_equal(cols.node["y"], labels)
    assert meta.num_outputs == labels.max() + 1 == meta.statistics["all"]["classes"]
    assert meta.statistics["all"]["class_sizes"] == np.bincount(labels).tolist()
    assert meta.statistics["all"]["self_loops"] == 0 == meta.statistics["all"]["isolated_nodes"]


@pytest.mark.parametrize("dense_attr", [False, True])
def test_standardized_graph_equals_networkx_reference(server, tmp_path, dense_attr):
    adjacency, features, labels = fixture_graph()
    data = npz_bytes(adjacency, features, labels, dense_attr=dense_attr)
    meta, cols = generate(server, tmp_path, data, {})
    ref = reference(adjacency, features, labels)
    check_against_reference(meta, cols, ref)
    assert ref[0].size == 272  # main component (240 + 20) + the bridged cluster (10) + the bridge (2)
    assert meta.num_outputs == 5 and meta.node_features.size == 9 and meta.node_features.sparse
    rel = "gnn-benchmark/cora_full.npz"
    assert meta.source["raw_sha256"][rel] == recorded_sha256(tmp_path / "raw" / rel)
    assert meta.source["params"] == {"name": "cora_full", "standardize": True, "drop_classes_up_to": 0}


def test_class_filter_repeats_the_lcc_and_reindexes(server, tmp_path):
    adjacency, features, labels = fixture_graph()
    meta, cols = generate(server, tmp_path, npz_bytes(adjacency, features, labels), {"drop_classes_up_to": 42})
    ref = reference(adjacency, features, labels, drop_up_to=42)
    check_against_reference(meta, cols, ref)
    kept = ref[0]
    # class 3 (42 nodes: ≤ 42) and class 4 (6) are gone; the cluster 240..249 lost its bridge and left the LCC
    assert set(labels[kept]) == {0, 1, 2} and not np.isin(np.arange(240, 252), kept).any()
    assert meta.num_outputs == 3
    assert "drop classes with <= 42 nodes" in " ".join(meta.source["preprocessing"])
    # the boundary: a class of exactly m nodes is dropped, one with m + 1 kept (the released code: "≤ 50")
    graph = RawGraph(adjacency, features, labels, np.arange(300), np.arange(5))
    assert 3 in standardize(graph, 41).classes and 3 not in standardize(graph, 42).classes


def test_without_standardisation(server, tmp_path):
    adjacency, features, labels = fixture_graph()
    meta, cols = generate(server, tmp_path, npz_bytes(adjacency, features, labels), {"standardize": False})
    assert int(cols.num_nodes[0]) == 300
    stats = meta.statistics["all"]
    assert stats["self_loops"] == 3 and stats["isolated_nodes"] == 8
    np.testing.assert_array_equal(cols.sparse["x"].to_dense(), features.toarray())  # values kept
    sym = ((adjacency + adjacency.T) != 0).astype(np.float32).tocoo()
    assert set(zip(cols.src.tolist(), cols.dst.tolist(), strict=True)) == set(zip(sym.row.tolist(),
                                                                                  sym.col.tolist(), strict=True))


def test_read_errors_are_one_line(tmp_path):
    adjacency, features, labels = fixture_graph()
    cases = {
        "no_labels.npz": (npz_bytes(adjacency, features, labels, drop="labels"), "lacks the key 'labels'"),
        "no_adj.npz": (npz_bytes(adjacency, features, labels, drop="adj_indptr"), "lacks the key 'adj_indptr'"),
        "no_attr.npz": (npz_bytes(adjacency, features, labels, drop="attr_data"), "lacks the key 'attr_data'"),
        "multi.npz": (npz_bytes(adjacency, features, labels, drop="labels", extra={"labels_data": np.ones(3)}),
                      "multi-label labels"),
        "bad_ptr.npz": (npz_bytes(adjacency, features, labels, extra={"adj_indptr": adjacency.indptr[:-1]}),
                        "adj_*: indptr must have 301 entries"),
        "bad_col.npz": (npz_bytes(adjacency, features, labels, extra={"attr_shape": np.array([300, 4])}),
                        "attr_*: a column index lies outside [0, 4)"),
        "short_labels.npz": (npz_bytes(adjacency, features, labels, extra={"labels": labels[:-1]}),
                             "must be 300 integers"),
        "pickled.npz": (npz_bytes(adjacency, features, labels, extra={"labels": np.array([object()] * 300)}),
                        "not a readable npz archive (Object arrays cannot be loaded"),
        "truncated.npz": (npz_bytes(adjacency, features, labels)[:500], "not a readable npz archive"),
    }
    for name, (data, phrase) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(DataError) as info:
            npz.read_npz(path)
        msg = str(info.value)
        assert "\n" not in msg and str(path) in msg and phrase in msg, (name, msg)
    with pytest.raises(DataError, match="does not exist"):
        npz.read_npz(tmp_path / "missing.npz")


def test_failed_build_writes_no_dataset(server, tmp_path):
    adjacency, features, labels = fixture_graph()
    with pytest.raises(DataError, match="lacks the key 'labels'"):
        generate(server, tmp_path, npz_bytes(adjacency, features, labels, drop="labels"), {})
    assert not (tmp_path / "ds").exists()


def test_stored_arrays_only_no_pickle_ever(tmp_path, monkeypatch):
    """np.load is called with allow_pickle=False (object arrays in ignored keys are never touched)."""
    adjacency, features, labels = fixture_graph()
    path = tmp_path / "f.npz"
    path.write_bytes(npz_bytes(adjacency, features, labels, extra={"metadata": np.array([{"a": 1}], dtype=object)}))
    with zipfile.ZipFile(path) as z:
        assert "metadata.npy" in z.namelist()
    graph = npz.read_npz(path)  # the object array is in an unread key
    assert graph.num_nodes == 300 and graph.labels.dtype == np.int64
    calls = []
    real_load = np.load
    monkeypatch.setattr(np, "load", lambda *a, **k: calls.append(k) or real_load(*a, **k))
    npz.read_npz(path)
    assert calls == [{"allow_pickle": False}]


def test_transductive_building_blocks():
    # weights and directions vanish, a self loop is kept once; then removed
    a = sp.csr_matrix((np.array([2.0, 5.0, 1.0]), ([0, 1, 2], [1, 1, 0])), shape=(3, 3))
    sym = symmetric_unweighted(a)
    assert sym.toarray().tolist() == [[0, 1, 1], [1, 1, 0], [1, 0, 0]]
    assert remove_self_loops(sym).toarray().tolist() == [[0, 1, 1], [1, 0, 0], [1, 0, 0]]
    # tie between two largest components: the one holding the smallest node index is kept
    tie = symmetric_unweighted(sp.csr_matrix(([1.0, 1.0], ([4, 1], [5, 3])), shape=(6, 6)))
    assert largest_component(tie).tolist() == [1, 3]
    assert largest_component(sp.csr_matrix((0, 0))).tolist() == []


def test_registry():
    gen = get_generator("npz")
    assert gen.defaults == {"name": "cora", "standardize": True, "drop_classes_up_to": 0, "mirror": ""}
    assert resolve_params(gen, {"drop_classes_up_to": 0}, "p")["drop_classes_up_to"] == 0
    with pytest.raises(ConfigError, match="p.drop_classes_up_to: expected a non-negative integer, got -1"):
        resolve_params(gen, {"drop_classes_up_to": -1}, "p")
    with pytest.raises(ConfigError, match="p.name: 'ogbn' is not a gnn-benchmark npz dataset"):
        resolve_params(gen, {"name": "ogbn"}, "p")
    with pytest.raises(ConfigError, match="set standardize: true or drop_classes_up_to: 0"):
        resolve_params(gen, {"standardize": False, "drop_classes_up_to": 50}, "p")
    files = {name: gen.raw_files({"name": name})[0] for name in npz.FILES}
    assert {name: f.relative_path for name, f in files.items()} == {
        "cora": "gnn-benchmark/cora.npz", "citeseer": "gnn-benchmark/citeseer.npz",
        "pubmed": "gnn-benchmark/pubmed.npz", "cora_full": "gnn-benchmark/cora_full.npz",
        "coauthor_cs": "gnn-benchmark/ms_academic_cs.npz", "coauthor_physics": "gnn-benchmark/ms_academic_phy.npz",
        "amazon_computers": "gnn-benchmark/amazon_electronics_computers.npz",
        "amazon_photo": "gnn-benchmark/amazon_electronics_photo.npz"}
    assert CANONICAL_URL.format(file="ms_academic_phy.npz") == (
        "https://github.com/shchur/gnn-benchmark/raw/master/data/npz/ms_academic_phy.npz")
    assert all(f.md5 is None and f.sha256 is None for f in files.values())
    meta = gen.describe("PHY", resolve_params(gen, {"name": "coauthor_physics"}, "p"), 0)
    assert (meta.num_outputs, meta.node_features.size) == (5, 8415)  # Table 3
    assert meta.transductive and meta.split_sizes is None


# ------------------------------------------------------------------ transductive metadata and statistics (meta.py)
def small_transductive():
    from gnnbench.data.store import GraphColumns, SparseRows

    # 0–1 both ways, 1→2 one way only, 0–5 both ways plus a repeat, self loops at 2 and 3; nodes 3 and 4 isolated
    src = np.array([0, 0, 0, 1, 1, 2, 3, 5], dtype=np.int32)
    dst = np.array([1, 5, 5, 0, 2, 2, 3, 0], dtype=np.int32)
    x = sp.csr_matrix(np.array([[1, 0, 0, 2], [0, 0, 0, 0], [0, 3, 0, 0], [0, 0, 0, 0], [1, 1, 0, 0],
                                [0, 0, 0, 0]], dtype=np.float32))
    return GraphColumns(num_nodes=np.array([6]), num_edges=np.array([8]), src=src, dst=dst,
                        node={"y": np.array([0, 1, -1, 2, 2, 0], np.int16),
                              "split": np.array([0, 0, 1, 2, -1, 2], np.int8)},
                        sparse={"x": SparseRows.from_scipy(x)})


def test_transductive_statistics_and_refined_meta(tmp_path):
    from gnnbench.data.meta import DatasetMeta, FeatureSpec, read_meta, transductive_statistics, write_dataset

    columns = small_transductive()
    meta = DatasetMeta(name="T", task="node_classification", loss="cross_entropy", metric="accuracy",
                       num_outputs=5, num_graphs=1, node_features=FeatureSpec("continuous", 99, sparse=True),
                       edge_features=None, pe_usage="add", split_sizes=None)
    assert meta.transductive
    written = write_dataset(tmp_path / "t", columns, meta)
    assert written.num_outputs == 3 and written.node_features == FeatureSpec("continuous", 4, sparse=True)
    assert written.split_sizes == {"train": 2, "val": 1, "test": 2}
    stats = read_meta(tmp_path / "t").statistics
    assert stats["all"] == {"nodes": 6, "edges": 3, "self_loops": 2, "isolated_nodes": 2, "features": 4,
                            "feature_nonzeros": 5, "classes": 3, "class_sizes": [2, 1, 2], "unlabelled_nodes": 1,
                            # labelled pairs {0,1} (classes 0, 1) and {0,5} (0, 0): h_edge 1/2; class degree sums
                            # D_0 = 3, D_1 = 1 of 2|E| = 4: h_adj = (1/2 - 10/16) / (1 - 10/16) = -1/3
                            "edge_homophily": 0.5, "adjusted_homophily": pytest.approx(-1 / 3)}
    assert stats["train"] == {"nodes": 2, "class_sizes": [1, 1, 0], "unlabelled_nodes": 0}
    assert stats["val"] == {"nodes": 1, "class_sizes": [0, 0, 0], "unlabelled_nodes": 1}
    assert stats["test"] == {"nodes": 2, "class_sizes": [1, 0, 1], "unlabelled_nodes": 0}
    # any split can be described: node and class counts per part
    other = transductive_statistics(columns, written, {"a": np.array([0, 5]), "b": np.array([3])})
    assert other["a"] == {"nodes": 2, "class_sizes": [2, 0, 0], "unlabelled_nodes": 0}
    assert other["b"]["class_sizes"] == [0, 0, 1] and other["all"] == stats["all"]
    # two graphs with node labels are not transductive: per-graph statistics as before
    assert not DatasetMeta(**{**{k: getattr(meta, k) for k in ("name", "task", "loss", "metric", "num_outputs",
                                                               "node_features", "edge_features", "pe_usage",
                                                               "split_sizes")}, "num_graphs": 2}).transductive


def test_feature_spec_json_is_backward_compatible(tmp_path):
    import json

    from gnnbench.data.meta import DatasetMeta, FeatureSpec

    meta = DatasetMeta(name="D", task="graph_classification", loss="cross_entropy", metric="accuracy",
                       num_outputs=2, num_graphs=3, node_features=FeatureSpec("continuous", 3),
                       edge_features=FeatureSpec("categorical", 4), pe_usage="add", split_sizes=None)
    data = meta.to_json()
    assert data["node_features"] == {"kind": "continuous", "size": 3}  # no "sparse" key: files unchanged
    assert DatasetMeta.from_json(json.loads(json.dumps(data)), tmp_path).node_features.sparse is False
    meta.node_features = FeatureSpec("continuous", 3, sparse=True)
    data = meta.to_json()
    assert data["node_features"] == {"kind": "continuous", "size": 3, "sparse": True}
    assert DatasetMeta.from_json(data, tmp_path).node_features == FeatureSpec("continuous", 3, sparse=True)
    with pytest.raises(ValueError):
        FeatureSpec("categorical", 3, sparse=True)
