"""TU generator (docs/datasets.md#tu-dortmund-datasets) on the real TU zips and on small fixture zips.

The real zips (../shared/data/real/tu: ENZYMES, PROTEINS_full, PROTEINS, IMDB-BINARY) are served from a local HTTP
server and fetched through ``mirror``: the real download → SHA-256 record → zip → conversion path. Expected values
are the published counts (Errica et al.'s split files and released code: graphs, classes, feature widths; TU collection:
nodes) and an independent parse of the zip's text files written here with plain Python (``str.split``) and networkx for
degrees. Bad input is tested on fixture zips written by the tests.
"""

from __future__ import annotations

import hashlib
import io
import types
import zipfile
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from test_download import closed_port_url

from gnnbench.data import download
from gnnbench.data.download import DownloadError, recorded_sha256
from gnnbench.data.generators import get_generator, resolve_params, tu
from gnnbench.data.meta import read_dataset
from gnnbench.errors import ConfigError, DataError
from gnnbench.papers import DWIVEDI2020, ERRICA2020
from gnnbench.pipeline import generate_dataset
from gnnbench.splits import make_splits

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real" / "tu"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="real TU zips not available "
                                                          "(../shared/data/real/tu is absent)")
# published counts: graphs, nodes, classes (TU collection; graphs and classes also Errica et al.'s)
PUBLISHED = {"ENZYMES": (600, 19580, 6), "PROTEINS_full": (1113, 43471, 2), "PROTEINS": (1113, 43471, 2),
             "IMDB-BINARY": (1000, 19773, 2)}


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """The canonical URL points at a closed local port and retries do not sleep: tests never leave 127.0.0.1."""
    dead = closed_port_url().rsplit("/", 1)[0]
    monkeypatch.setattr(tu, "URL", dead + "/{name}.zip")
    monkeypatch.setattr(download, "time", types.SimpleNamespace(sleep=lambda seconds: None))


def run(server, tmp_path: Path, name: str, data: bytes, features: str = "", out: str = "ds"):
    """Serve ``data`` as ``{name}.zip`` and generate the dataset through the mirror; returns (meta, columns)."""
    server.routes[f"/m/{name}.zip"] = data
    params = {"name": name, "features": features, "mirror": server.url + "/m"}
    generate_dataset("tu", name, params, 0, tmp_path / out, raw_dir=tmp_path / "raw")
    return read_dataset(tmp_path / out)


# -------------------------------------------------------------------------------- independent plain-Python reader
def plain_read(data: bytes, name: str) -> dict:
    """The TU text files of a zip, parsed line by line (the reference reader)."""
    archive = zipfile.ZipFile(io.BytesIO(data))
    files = {info.filename.rsplit("/", 1)[-1]: info.filename for info in archive.infolist()}

    def lines(suffix: str) -> list[list[str]] | None:
        member = files.get(f"{name}_{suffix}.txt")
        if member is None:
            return None
        text = archive.read(member).decode()
        return [[word for word in line.replace(",", " ").split()] for line in text.splitlines() if line.strip()]

    return {"A": [(int(u), int(v)) for u, v in lines("A")], "indicator": [int(r[0]) for r in lines("graph_indicator")],
            "labels": [int(r[0]) for r in lines("graph_labels")],
            "node_labels": [int(r[0]) for r in lines("node_labels")] if files.get(f"{name}_node_labels.txt") else None,
            "attributes": ([[float(w) for w in r] for r in lines("node_attributes")]
                           if files.get(f"{name}_node_attributes.txt") else None)}


def graph_nodes(ref: dict, k: int) -> list[int]:
    """1-based global node ids of graph k (0-based), in file order."""
    return [i + 1 for i, g in enumerate(ref["indicator"]) if g == k + 1]


def file_edges(ref: dict, k: int) -> set[tuple[int, int]]:
    """Local directed edges of graph k from the A file: every listed pair in both directions, no self loops."""
    nodes = graph_nodes(ref, k)
    first, members = nodes[0], set(nodes)
    pairs = {(u - first, v - first) for u, v in ref["A"] if u in members and u != v}
    return pairs | {(v, u) for u, v in pairs}


def stored_edges(columns, k: int) -> list[tuple[int, int]]:
    graph = columns.graph_at(k)
    return list(zip(graph["src"].tolist(), graph["dst"].tolist(), strict=True))


# --------------------------------------------------------------------------------------------------- real data
@needs_real
def test_enzymes_labels_and_attributes_real_download(server, tmp_path):
    data = (REAL / "ENZYMES.zip").read_bytes()
    meta, columns = run(server, tmp_path, "ENZYMES", data)  # no features: Errica et al.'s choice for ENZYMES
    ref = plain_read(data, "ENZYMES")
    graphs, nodes, classes = PUBLISHED["ENZYMES"]
    assert (columns.num_graphs, int(columns.num_nodes.sum()), meta.num_outputs) == (graphs, nodes, classes)
    assert meta.task == "graph_classification" and meta.loss == "cross_entropy" and meta.metric == "accuracy"
    assert meta.node_features.size == 21 and columns.node["x"].shape == (nodes, 21)  # 3 one-hot + 18 attributes
    assert meta.source["features"] == "labels_and_attributes" and "mirror" not in meta.source["params"]
    assert columns.node["x"].dtype == np.float32 and columns.graph["y"].dtype == np.int16
    # graph labels 1..6 → 0..5, TU order, 100 per class
    assert columns.graph["y"].tolist() == [label - 1 for label in ref["labels"]]
    assert np.bincount(columns.graph["y"]).tolist() == [100] * 6
    # node features: one-hot of (label − 1), then the attributes, node for node
    x = columns.node["x"]
    expected_hot = np.zeros((nodes, 3), dtype=np.float32)
    expected_hot[np.arange(nodes), np.array(ref["node_labels"]) - 1] = 1
    np.testing.assert_array_equal(x[:, :3], expected_hot)
    np.testing.assert_allclose(x[:, 3:], np.array(ref["attributes"], dtype=np.float32), rtol=1e-6)
    # graph sizes and edges of a few graphs equal the file's
    assert columns.num_nodes.tolist() == [ref["indicator"].count(k + 1) for k in range(graphs)]
    for k in (0, 1, 299, 599):
        edges = stored_edges(columns, k)
        assert edges == sorted(file_edges(ref, k))  # row-major, each undirected edge in both directions, once
    assert int(columns.num_edges.sum()) == len(ref["A"]) == 74564  # the file lists both directions already
    # the SHA-256 was recorded at download and is what meta.json names
    sha = hashlib.sha256(data).hexdigest()
    assert recorded_sha256(tmp_path / "raw" / "tu" / "ENZYMES.zip") == sha
    assert meta.source["raw_sha256"] == {"tu/ENZYMES.zip": sha}


@needs_real
def test_enzymes_labels_only_reuse_and_tampering(server, tmp_path):
    data = (REAL / "ENZYMES.zip").read_bytes()
    meta, columns = run(server, tmp_path, "ENZYMES", data, features="labels")
    assert meta.node_features.size == 3 and columns.node["x"].shape == (19580, 3)
    assert (columns.node["x"].sum(axis=1) == 1).all()
    requests = len(server.requests)
    server.routes.clear()  # reuse: no network needed
    meta2, columns2 = run(server, tmp_path, "ENZYMES", b"", features="attributes", out="ds2")
    assert len(server.requests) == requests and columns2.node["x"].shape == (19580, 18)
    assert meta2.node_features.size == 18
    zip_path = tmp_path / "raw" / "tu" / "ENZYMES.zip"
    zip_path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # the file changed after its SHA-256 was recorded
    with pytest.raises(DownloadError, match="ENZYMES.zip.*recorded"):
        run(server, tmp_path, "ENZYMES", b"", out="ds3")
    assert not (tmp_path / "ds3").exists()


@needs_real
def test_default_split_is_stratified_10_fold(server, tmp_path):
    meta, columns = run(server, tmp_path, "ENZYMES", (REAL / "ENZYMES.zip").read_bytes(), features="labels")
    split = dict(tu.TU.default_split)
    assert split.pop("scheme") == "stratified_kfold"
    splits = make_splits(meta, columns.graph["y"], "stratified_kfold", split)
    assert len(splits.folds) == 10
    y = columns.graph["y"]
    for fold in splits.folds:
        assert np.bincount(y[fold["test"]], minlength=6).tolist() == [10] * 6  # 60 test graphs, stratified
        assert len(fold["train"]) + len(fold["val"]) == 540 and len(fold["val"]) == 54


@needs_real
def test_proteins_full_default_equals_plain_proteins_labels(server, tmp_path):
    full = (REAL / "PROTEINS_full.zip").read_bytes()
    meta, columns = run(server, tmp_path, "PROTEINS_full", full)  # Errica et al.: one-hot labels, attributes unused
    graphs, nodes, classes = PUBLISHED["PROTEINS_full"]
    assert (columns.num_graphs, int(columns.num_nodes.sum()), meta.num_outputs) == (graphs, nodes, classes)
    assert meta.source["features"] == "labels" and columns.node["x"].shape == (nodes, 3)
    ref = plain_read(full, "PROTEINS_full")
    # node labels 0..2 → index label − 0; graph labels 1, 2 → 0, 1 (663 / 450 graphs)
    assert columns.node["x"].argmax(axis=1).tolist() == ref["node_labels"]
    assert np.bincount(columns.graph["y"]).tolist() == [663, 450]
    for k in (0, 1112):
        assert stored_edges(columns, k) == sorted(file_edges(ref, k))
    # Errica et al.'s PROTEINS (PROTEINS_full with attributes off) has exactly the plain PROTEINS input
    meta_p, plain = run(server, tmp_path, "PROTEINS", (REAL / "PROTEINS.zip").read_bytes(), out="plain")
    assert (plain.num_graphs, int(plain.num_nodes.sum()), meta_p.num_outputs) == PUBLISHED["PROTEINS"]
    np.testing.assert_array_equal(plain.node["x"], columns.node["x"])
    np.testing.assert_array_equal(plain.graph["y"], columns.graph["y"])
    np.testing.assert_array_equal(plain.src, columns.src)
    np.testing.assert_array_equal(plain.dst, columns.dst)


@needs_real
def test_imdb_binary_degree_and_constant(server, tmp_path):
    data = (REAL / "IMDB-BINARY.zip").read_bytes()
    meta, columns = run(server, tmp_path, "IMDB-BINARY", data, features="degree")
    graphs, nodes, classes = PUBLISHED["IMDB-BINARY"]
    assert (columns.num_graphs, int(columns.num_nodes.sum()), meta.num_outputs) == (graphs, nodes, classes)
    assert meta.node_features.size == 1 and columns.node["x"].shape == (nodes, 1)
    ref = plain_read(data, "IMDB-BINARY")
    assert columns.graph["y"].tolist() == ref["labels"]  # already 0/1
    assert np.bincount(columns.graph["y"]).tolist() == [500, 500]
    # the file lists every edge twice per direction: stored once per direction
    assert int(columns.num_edges.sum()) * 2 == len(ref["A"])
    ptr = columns.node_ptr
    for k in (0, 1, 500, 999):
        nodes_k = graph_nodes(ref, k)
        first = nodes_k[0]
        g = nx.Graph()
        g.add_nodes_from(range(len(nodes_k)))
        members = set(nodes_k)
        g.add_edges_from((u - first, v - first) for u, v in ref["A"] if u in members)
        degree = [d for _, d in sorted(g.degree())]
        assert columns.node["x"][ptr[k]:ptr[k + 1], 0].tolist() == degree  # raw integer degree, not normalised
        assert stored_edges(columns, k) == sorted(file_edges(ref, k))
    _, constant = run(server, tmp_path, "IMDB-BINARY", data, features="constant", out="one")
    assert constant.node["x"].shape == (nodes, 1) and (constant.node["x"] == 1).all()
    np.testing.assert_array_equal(constant.src, columns.src)


# ------------------------------------------------------------------------------------------------ fixture zips
def make_zip(name: str, files: dict[str, str], folder: str = "") -> bytes:
    """A zip with members ``{folder or name + '/'}{name}_{suffix}.txt``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for suffix, text in files.items():
            archive.writestr(f"{folder or name + '/'}{name}_{suffix}.txt", text)
    return buffer.getvalue()


# two graphs: graph 1 = nodes 1..3 (path 1-2-3 with a duplicate and a self loop), graph 2 = nodes 4..5
SMALL = {"A": "1, 2\n2, 1\n1, 2\n2, 3\n3, 3\n4, 5\n", "graph_indicator": "1\n1\n1\n2\n2\n",
         "graph_labels": "-1\n1\n", "node_labels": "2\n4\n3\n2\n2\n"}


def test_reader_conventions_on_a_fixture(tmp_path):
    path = tmp_path / "ENZYMES.zip"
    path.write_bytes(make_zip("ENZYMES", {**SMALL, "node_attributes": "0.5, 1\n1, 2\n2, 3\n3, 4\n4, 5\n"},
                              folder="ENZYMES//"))  # the published zips' double slash
    graphs = tu.read_tu_zip(path, "ENZYMES")
    assert graphs.num_nodes.tolist() == [3, 2] and graphs.num_edges.tolist() == [4, 2]
    edges = list(zip(graphs.src.tolist(), graphs.dst.tolist(), strict=True))
    assert edges == [(0, 1), (1, 0), (1, 2), (2, 1), (0, 1), (1, 0)]
    assert graphs.self_loops_dropped == 1 and graphs.degree.tolist() == [1, 2, 1, 1, 1]
    assert np.unique(graphs.graph_labels, return_inverse=True)[1].tolist() == [0, 1]  # −1, 1 → 0, 1
    x = tu.node_features(graphs, "labels_and_attributes", path, "ENZYMES")
    # labels 2, 4, 3 → index label − 2, width 4 − 2 + 1 = 3; then the two attributes
    np.testing.assert_array_equal(x, [[1, 0, 0, 0.5, 1], [0, 0, 1, 1, 2], [0, 1, 0, 2, 3], [1, 0, 0, 3, 4],
                                      [1, 0, 0, 4, 5]])
    np.testing.assert_array_equal(tu.one_hot_labels(np.array([[1, 0], [2, 1]])), [[1, 0, 1, 0], [0, 1, 0, 1]])


def test_a_fixture_that_is_not_the_published_dataset(server, tmp_path):
    with pytest.raises(DataError, match=r"ENZYMES.zip gives 2 graphs, 2 classes.*published ENZYMES has 600, 6"):
        run(server, tmp_path, "ENZYMES", make_zip("ENZYMES", SMALL), features="labels")
    assert not (tmp_path / "ds").exists()


@pytest.mark.parametrize("case, files, message", [
    ("missing member", {k: v for k, v in SMALL.items() if k != "graph_indicator"},
     r"lacks ENZYMES_graph_indicator.txt .* download it again"),
    ("edge out of range", {**SMALL, "A": "1, 2\n2, 6\n"}, r"ENZYMES_A.txt line 2 names node 6, outside 1..5"),
    ("edge zero", {**SMALL, "A": "0, 1\n"}, r"ENZYMES_A.txt line 1 names node 0, outside 1..5"),
    ("edge across graphs", {**SMALL, "A": "1, 2\n3, 4\n"}, r"ENZYMES_A.txt line 2 joins nodes of graphs 1 and 2"),
    ("fewer labels", {**SMALL, "graph_labels": "1\n"}, r"graph_indicator.txt names graphs 1..2, but .* has 1 label"),
    ("unsorted indicator", {**SMALL, "graph_indicator": "1\n2\n1\n2\n2\n"}, r"not sorted by graph \(line 3\)"),
    ("node labels short", {**SMALL, "node_labels": "1\n1\n"}, r"node_labels.txt has 2 lines for the 5 nodes"),
    ("not numbers", {**SMALL, "graph_labels": "a\nb\n"}, r"graph_labels.txt is not a table of numbers"),
    ("three columns", {**SMALL, "A": "1, 2, 3\n"}, r"ENZYMES_A.txt has 3 columns per line, expected 2"),
])
def test_bad_fixture_zips(server, tmp_path, case, files, message):
    with pytest.raises(DataError, match=message) as info:
        run(server, tmp_path, "ENZYMES", make_zip("ENZYMES", files), features="labels")
    text = str(info.value)
    assert "\n" not in text and str(tmp_path / "raw" / "tu" / "ENZYMES.zip") in text
    assert not (tmp_path / "ds").exists()  # nothing written


def test_corrupt_zips(server, tmp_path):
    with pytest.raises(DataError, match=r"ENZYMES.zip is not a readable zip archive .*delete it .*download it again"):
        run(server, tmp_path, "ENZYMES", b"<html>not found</html>")
    assert not (tmp_path / "ds").exists()
    # a damaged member: the compressed bytes of the A file flipped (CRC or inflate error)
    good = make_zip("ENZYMES", {**SMALL, "A": "1, 2\n" * 2000})
    start = good.index(b"ENZYMES_A.txt") + len("ENZYMES_A.txt") + 10
    damaged = good[:start] + bytes(b ^ 0x55 for b in good[start:start + 20]) + good[start + 20:]
    with pytest.raises(DataError, match=r"ENZYMES.zip.*(cannot be read|not a readable zip)"):
        run(server, tmp_path, "ENZYMES", damaged, out="ds2")
    assert not (tmp_path / "ds2").exists()
    truncated = good[: len(good) // 2]  # a cut download that was placed by hand
    (tmp_path / "raw2" / "tu").mkdir(parents=True)
    (tmp_path / "raw2" / "tu" / "ENZYMES.zip").write_bytes(truncated)
    with pytest.raises(DataError, match="not a readable zip archive"):
        generate_dataset("tu", "E", {"name": "ENZYMES"}, 0, tmp_path / "ds3", raw_dir=tmp_path / "raw2")


def test_labels_requested_but_zip_has_none(server, tmp_path):
    files = {k: v for k, v in SMALL.items() if k != "node_labels"}
    with pytest.raises(DataError, match=r"ENZYMES.zip has no ENZYMES_node_labels.txt, so features: labels is "
                                        r"impossible; use features: constant or degree"):
        run(server, tmp_path, "ENZYMES", make_zip("ENZYMES", files), features="labels")


def test_download_failure_names_the_fix(tmp_path):
    with pytest.raises(DownloadError, match=r"tu/ENZYMES.zip: download failed .*set `mirror`"):
        generate_dataset("tu", "E", {"name": "ENZYMES"}, 0, tmp_path / "ds", raw_dir=tmp_path / "raw")


# ------------------------------------------------------------------------------------------------ config checks
@pytest.mark.parametrize("params, message", [
    ({"name": "IMDB-BINARY"}, r"features: IMDB-BINARY has no node labels .*constant or features: degree"),
    ({"name": "IMDB-BINARY", "features": "labels"}, r"IMDB-BINARY has no node labels, so 'labels' is impossible"),
    ({"name": "DD", "features": "attributes"}, r"DD has no node attributes, so 'attributes' is impossible"),
    ({"name": "MUTAGEN"}, r"'MUTAGEN' is not a supported TU dataset; choose one of DD, ENZYMES"),
    ({"name": "ENZYMES", "features": "onehot"}, r"'onehot' is unknown; choose one of labels"),
    # the benchmark's loader is named by its paper; its protocol's name of old says which key to use
    ({"name": "DD", "variant": "benchmarking-gnns"},
     r"^datasets.X.params.variant: 'benchmarking-gnns' was renamed: use variant: dwivedi2020 "),
    ({"name": "DD", "variant": "fair-comparison"}, r"'fair-comparison' is unknown; use dwivedi2020"),
])
def test_config_errors(params, message):
    with pytest.raises(ConfigError, match=message):
        resolve_params(get_generator("tu"), params, "datasets.X.params")


def test_describe_widths_and_spec_defaults():
    gen = get_generator("tu")
    widths = {}
    for name, (graphs, classes, _, _) in tu.PUBLISHED.items():
        for features in ("", *tu.FEATURES):
            try:
                params = resolve_params(gen, {"name": name, "features": features}, "p")
            except ConfigError:
                continue
            meta = gen.describe(name, params, 0)
            assert (meta.num_graphs, meta.num_outputs) == (graphs, classes)
            widths[name, features] = meta.node_features.size
    # the node features Errica et al.'s released code uses (width)
    assert widths["DD", ""] == 89 and widths["NCI1", ""] == 37 and widths["PROTEINS_full", ""] == 3
    assert widths["ENZYMES", ""] == 21 and widths["ENZYMES", "attributes"] == 18
    assert widths["PROTEINS_full", "attributes"] == 29  # Dwivedi et al.'s input (DGL's LegacyTUDataset)
    assert all(widths[name, f] == 1 for name in ("IMDB-BINARY", "IMDB-MULTI", "REDDIT-BINARY", "REDDIT-MULTI-5K",
                                                 "COLLAB") for f in ("constant", "degree"))
    assert ("COLLAB", "") not in widths and ("COLLAB", "labels") not in widths


def test_the_benchmarks_variant_and_released_splits_are_named_by_its_paper():
    gen = get_generator("tu")
    # variant dwivedi2020: DGL's feature rule (attributes, else labels, else constant) and ones(in_dim) edge input
    for name, features, width in (("ENZYMES", "attributes", 18), ("DD", "labels", 89), ("COLLAB", "constant", 1)):
        meta = gen.describe(name, resolve_params(gen, {"name": name, "variant": DWIVEDI2020}, "p"), 0)
        assert (meta.source["features"], meta.node_features.size) == (features, width)
        assert meta.net_conventions == ["edge_ones_node_width"]
    assert gen.describe("DD", resolve_params(gen, {"name": "DD"}, "p"), 0).net_conventions == []
    # split files: Dwivedi et al.'s three index files, Errica et al.'s one JSON — chosen by the paper's key
    dd = resolve_params(gen, {"name": "DD"}, "p")
    ours = tu.published_splits(dd, DWIVEDI2020)
    assert ours.folds == 10 and [f.relative_path for f in ours.files] == [
        f"tu/splits/dwivedi2020/DD_{part}.index" for part in ("train", "val", "test")]
    assert [f.relative_path for f in tu.published_splits(dd, ERRICA2020).files] == ["tu/splits/CHEMICAL/DD_splits.json"]
    assert tu.published_splits(resolve_params(gen, {"name": "NCI1"}, "p"), DWIVEDI2020) is None  # not released
