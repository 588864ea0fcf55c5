"""Generator ``released``: the published CSL (real CSL.zip) and PyG's PATTERN/CLUSTER/MNIST/CIFAR10/TSP zips.

The real CSL.zip (../shared/data/real/csl) is served from a local HTTP server and goes through download → pinned
SHA-256 → safe unpickling → conversion; the graphs are checked against an independent construction (networkx
isomorphism to the circulant graph of their class). PyG's ``*_v2.zip`` releases are not available offline: the tests
write small fixture zips in PyG's format (a ``{NAME}_v2.pt`` member holding ``[train, val, test]`` lists of dicts of
tensors) and compare the conversion with PyTorch Geometric's own ``GNNBenchmarkDataset`` processing the same raw file.
Bad input (checksum, truncated zip, missing member, forbidden classes in .pt and pickle) must be a one-line error
that writes nothing.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import types
import zipfile
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import torch
from test_download import closed_port_url

from gnnbench.config.presets import all_presets, run_config
from gnnbench.data import download
from gnnbench.data.catalog import describe_dataset, published_name
from gnnbench.data.download import DownloadError, recorded_sha256
from gnnbench.data.generators import get_generator, resolve_params
from gnnbench.data.generators import released as R
from gnnbench.data.meta import read_dataset
from gnnbench.errors import ConfigError, DataError
from gnnbench.models.build import build_model, count_parameters
from gnnbench.papers import DWIVEDI2020
from gnnbench.pipeline import compute_pe, generate_dataset, make_split_file
from gnnbench.protocols.benchmarking_gnns.train import train

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real" / "csl"
needs_real = pytest.mark.skipif(not (REAL / "CSL.zip").is_file(),
                                reason="real CSL.zip not available (../shared/data/real/csl is absent)")
SKIPS = (2, 3, 4, 5, 6, 9, 11, 12, 13, 16)  # CSL class c: circulant C_41(1, SKIPS[c]) (docs/datasets.md#csl)
SIZES = {"num_train": 5, "num_val": 3, "num_test": 4}  # fixture parts


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """Canonical URLs point at a closed local port and retries do not sleep: tests never leave 127.0.0.1."""
    dead = closed_port_url().rsplit("/", 1)[0]
    monkeypatch.setattr(R, "PYG_URL", dead + "/{name}_v2.zip")
    monkeypatch.setattr(R, "CSL_URL", dead + "/CSL.zip")
    monkeypatch.setattr(download, "time", types.SimpleNamespace(sleep=lambda seconds: None))


def generate(server, tmp_path: Path, name: str, data: bytes, out: str = "ds", **params):
    """Serve ``data`` under the release's file name and generate the dataset through the mirror."""
    file_name = "CSL.zip" if name == "CSL" else f"{name}_v2.zip"
    server.routes[f"/m/{file_name}"] = data
    generate_dataset("released", name, {"name": name, "mirror": server.url + "/m", **params}, 0, tmp_path / out,
                     raw_dir=tmp_path / "raw")
    return read_dataset(tmp_path / out)


def leftovers(directory: Path) -> list[str]:
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())


# ------------------------------------------------------------------------------------- fixtures in PyG's format
def _random_edges(rng: np.random.Generator, n: int, p: float, symmetric: bool) -> torch.Tensor:
    adj = rng.random((n, n)) < p
    np.fill_diagonal(adj, False)
    if symmetric:
        adj = np.triu(adj, 1)
        adj |= adj.T
    src, dst = np.nonzero(adj)
    order = rng.permutation(src.size)  # not row-major: the release's order must be kept as it is
    return torch.from_numpy(np.stack([src[order], dst[order]]).astype(np.int64))


def sbm_graph(rng: np.random.Generator, vocabulary: int, classes: int, one_hot: bool, edge_attr: bool) -> dict:
    """A PATTERN/CLUSTER graph: x one-hot float (N, vocabulary) (PyG: 3 / 7 features) or integer ids, y (N,)."""
    n = int(rng.integers(6, 15))
    ids = rng.integers(0, vocabulary, n)
    x = torch.from_numpy(np.eye(vocabulary, dtype=np.float32)[ids]) if one_hot else torch.from_numpy(ids)
    graph = {"x": x, "edge_index": _random_edges(rng, n, 0.4, True), "y": torch.from_numpy(rng.integers(0, classes, n))}
    if edge_attr:
        graph["edge_attr"] = torch.ones(graph["edge_index"].shape[1], 1)
    return graph


def superpixel_graph(rng: np.random.Generator, channels: int, dtype: torch.dtype) -> dict:
    """An MNIST/CIFAR10 graph as PyG stores it: x = intensity (N, C), pos = coordinates (N, 2), edge_attr (E,)."""
    n = int(rng.integers(5, 16))
    edges = _random_edges(rng, n, 0.5, False)
    return {"x": torch.from_numpy(rng.random((n, channels))).to(dtype),
            "pos": torch.from_numpy(rng.random((n, 2))).to(dtype),
            "edge_index": edges, "edge_attr": torch.from_numpy(rng.random(edges.shape[1])).to(dtype),
            "y": torch.tensor([int(rng.integers(0, 10))])}


def tsp_graph(rng: np.random.Generator, coords: str = "x") -> dict:
    """A TSP graph: coordinates (N, 2) under ``coords``, directed edges, distances (E, 1), edge labels (E,)."""
    n = int(rng.integers(6, 14))
    points = torch.from_numpy(rng.random((n, 2)).astype(np.float32))
    edges = _random_edges(rng, n, 0.5, False)
    distance = (points[edges[0]] - points[edges[1]]).norm(dim=1, keepdim=True)
    return {coords: points, "edge_index": edges, "edge_attr": distance,
            "y": torch.from_numpy(rng.integers(0, 2, edges.shape[1]))}


def fixture_parts(name: str, seed: int = 0, counts=(5, 3, 4), **options) -> list[list[dict]]:
    rng = np.random.default_rng(seed)
    make = {
        "PATTERN": lambda: sbm_graph(rng, 3, 2, options.get("one_hot", True), options.get("edge_attr", True)),
        "CLUSTER": lambda: sbm_graph(rng, 7, 6, options.get("one_hot", True), options.get("edge_attr", False)),
        "MNIST": lambda: superpixel_graph(rng, 1, torch.float16),  # the benchmark stores float16
        "CIFAR10": lambda: superpixel_graph(rng, 3, torch.float32),
        "TSP": lambda: tsp_graph(rng, options.get("coords", "x")),
    }[name]
    return [[make() for _ in range(count)] for count in counts]


def pt_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return buffer.getvalue()


def pyg_zip(name: str, parts) -> bytes:
    return zip_bytes({f"{name}_v2.pt": pt_bytes(parts)})


def pyg_datasets(tmp_path: Path, name: str, parts) -> list:
    """PyG's GNNBenchmarkDataset (train, val, test) processing the same raw file, offline (raw file in place)."""
    from torch_geometric.datasets import GNNBenchmarkDataset

    raw = tmp_path / "pyg" / name / "raw"
    raw.mkdir(parents=True)
    (raw / f"{name}_v2.pt").write_bytes(pt_bytes(parts))
    return [GNNBenchmarkDataset(str(tmp_path / "pyg"), name, split=split) for split in ("train", "val", "test")]


def assert_matches_pyg(name: str, columns, pyg: list, counts) -> None:
    """Every stored graph equals PyG's Data object of the same split position (order train, val, test)."""
    k = 0
    for dataset, count in zip(pyg, counts, strict=True):
        for i in range(count):
            data, got = dataset[i], columns.graph_at(k)
            k += 1
            assert got["num_nodes"] == data.num_nodes
            np.testing.assert_array_equal(got["src"], data.edge_index[0].numpy())
            np.testing.assert_array_equal(got["dst"], data.edge_index[1].numpy())
            if name in ("PATTERN", "CLUSTER"):
                ids = data.x.argmax(1) if data.x.dim() == 2 else data.x
                np.testing.assert_array_equal(got["x"], ids.numpy())
                np.testing.assert_array_equal(got["y"], data.y.numpy())
                assert "edge_attr" not in got  # the constant 1 is recreated by the models, as for sbm_*
            elif name in ("MNIST", "CIFAR10"):
                np.testing.assert_array_equal(got["x"], torch.cat([data.x, data.pos], 1).float().numpy())
                np.testing.assert_array_equal(got["edge_attr"], data.edge_attr.float().view(-1, 1).numpy())
                assert got["y"] == int(data.y)
            else:
                coords = data.x if data.x is not None else data.pos
                np.testing.assert_array_equal(got["x"], coords.numpy())
                np.testing.assert_array_equal(got["edge_attr"], data.edge_attr.numpy())
                np.testing.assert_array_equal(got["y"], data.y.numpy())
    assert k == columns.num_graphs


# ------------------------------------------------------------------------------------------------ real CSL
@needs_real
def test_real_csl_download_checksum_and_circulant_classes(server, tmp_path):
    data = (REAL / "CSL.zip").read_bytes()
    meta, columns = generate(server, tmp_path, "CSL", data)
    assert server.requests == ["/m/CSL.zip"]
    assert meta.source["raw_sha256"] == {"dwivedi2020/CSL.zip": R.CSL_SHA256}
    assert hashlib.sha256(data).hexdigest() == R.CSL_SHA256
    assert recorded_sha256(tmp_path / "raw" / "dwivedi2020" / "CSL.zip") == R.CSL_SHA256
    assert columns.num_graphs == 150 and meta.num_graphs == 150 and meta.split_sizes is None
    assert columns.num_nodes.tolist() == [41] * 150 and columns.num_edges.tolist() == [164] * 150
    assert not (columns.src == columns.dst).any()  # the raw matrices' 41 self loops per graph are gone
    assert columns.node["x"].dtype == np.int16 and columns.node["x"].shape == (150 * 41,)
    assert not columns.node["x"].any()
    assert columns.graph["y"].dtype == np.int16
    assert columns.graph["y"].tolist() == np.repeat(np.arange(10), 15).tolist()  # class-sorted, 15 per class
    for k in range(150):  # independent check: each graph is the circulant graph of its class's skip length
        graph = columns.graph_at(k)
        g = nx.DiGraph()
        g.add_nodes_from(range(41))
        g.add_edges_from(zip(graph["src"].tolist(), graph["dst"].tolist(), strict=True))
        assert nx.is_isomorphic(g.to_undirected(reciprocal=True), nx.circulant_graph(41, [1, SKIPS[graph["y"]]])), k
        assert all(d == 4 for _, d in g.out_degree()) and all(d == 4 for _, d in g.in_degree())
    server.stop()  # reuse: the verified file is read again without the network
    meta2, columns2 = generate(server, tmp_path, "CSL", b"", out="again")
    np.testing.assert_array_equal(columns2.src, columns.src)


@needs_real
def test_real_csl_trains_a_preset_with_its_published_parameter_count(server, tmp_path):
    meta, _ = generate(server, tmp_path, "CSL", (REAL / "CSL.zip").read_bytes())
    compute_pe(tmp_path / "ds", 20, tmp_path / "pe.parquet")
    make_split_file(tmp_path / "ds", "stratified_kfold", {"folds": 5, "val_fraction": 0.25, "seed": 0},
                    tmp_path / "splits.json")
    preset = "CSL_graph_classification_GatedGCN_CSL_PE_100k"
    config = run_config(preset, {"epochs": 1, "batch_size": 32})
    metrics = train(dataset_dir=tmp_path / "ds", splits_path=tmp_path / "splits.json", fold=0, config=config,
                    out_dir=tmp_path / "run", pe_path=tmp_path / "pe.parquet", threads=1)
    assert metrics["num_params"] == all_presets()[preset]["total_params"] == 105407
    assert metrics["epochs"] == 1 and 0.0 <= metrics["test"]["metric"] <= 100.0


@needs_real
def test_real_csl_with_a_wrong_checksum_is_refused_and_nothing_is_written(server, tmp_path):
    data = bytearray((REAL / "CSL.zip").read_bytes())
    data[1000] ^= 1
    with pytest.raises(DownloadError, match=f"CSL.zip.*expected SHA-256 {R.CSL_SHA256}") as info:
        generate(server, tmp_path, "CSL", bytes(data))
    assert "\n" not in str(info.value)
    assert leftovers(tmp_path) == []  # no raw file, no .part, no dataset folder


# --------------------------------------------------------------------------- PyG releases: fixtures vs PyG
@pytest.mark.parametrize("name", ["PATTERN", "CLUSTER", "MNIST", "CIFAR10", "TSP"])
def test_conversion_equals_pyg_processing_of_the_same_file(server, tmp_path, name):
    parts = fixture_parts(name)
    data = pyg_zip(name, parts)
    meta, columns = generate(server, tmp_path, name, data, **SIZES)
    assert_matches_pyg(name, columns, pyg_datasets(tmp_path, name, parts), (5, 3, 4))
    assert meta.split_sizes == {"train": 5, "val": 3, "test": 4} and meta.num_graphs == 12
    assert meta.source["raw_sha256"] == {f"dwivedi2020/{name}_v2.zip": hashlib.sha256(data).hexdigest()}
    assert "mirror" not in meta.source["params"]
    # the generators' dtypes: ids and labels int16, continuous features float32, (E, 1) edge features
    level = {"PATTERN": "node", "CLUSTER": "node", "MNIST": "graph", "CIFAR10": "graph", "TSP": "edge"}[name]
    y = getattr(columns, level)["y"]
    assert y.dtype == np.int16 and y.ndim == 1
    if name in ("PATTERN", "CLUSTER"):
        assert columns.node["x"].dtype == np.int16 and columns.node["x"].ndim == 1 and not columns.edge
    else:
        assert columns.node["x"].dtype == np.float32 and columns.node["x"].shape[1] == meta.node_features.size
        assert columns.edge["edge_attr"].dtype == np.float32 and columns.edge["edge_attr"].shape[1] == 1
    raw = f"dwivedi2020/{name}_v2.zip"
    assert leftovers(tmp_path / "raw") == [raw, f"{raw}.sha256"]  # the extracted .pt copy is gone


@pytest.mark.parametrize(("name", "options"), [("PATTERN", {"one_hot": False}), ("CLUSTER", {"one_hot": False}),
                                               ("TSP", {"coords": "pos"})])
def test_other_encodings_of_the_same_content(server, tmp_path, name, options):
    """Integer ids instead of one-hot rows; TSP coordinates under ``pos`` instead of ``x``."""
    parts = fixture_parts(name, seed=3, **options)
    _, columns = generate(server, tmp_path, name, pyg_zip(name, parts), **SIZES)
    assert_matches_pyg(name, columns, pyg_datasets(tmp_path, name, parts), (5, 3, 4))


def test_superpixel_float16_values_are_kept_exactly_and_input_is_intensity_then_coordinates(server, tmp_path):
    parts = fixture_parts("MNIST", seed=5)
    _, columns = generate(server, tmp_path, "MNIST", pyg_zip("MNIST", parts), **SIZES)
    first = parts[0][0]
    x = columns.graph_at(0)["x"]
    assert x.shape == (first["x"].shape[0], 3)
    assert x[:, 0].tolist() == first["x"][:, 0].tolist()  # float16 → float32 is exact
    assert x[:, 1:].tolist() == first["pos"].tolist()
    assert columns.graph_at(0)["edge_attr"][:, 0].tolist() == first["edge_attr"].tolist()


def test_positive_sizes_take_the_first_graphs_of_each_part(server, tmp_path):
    parts = fixture_parts("TSP", seed=1)
    _, columns = generate(server, tmp_path, "TSP", pyg_zip("TSP", parts), num_train=2, num_val=1, num_test=3)
    pyg = pyg_datasets(tmp_path, "TSP", parts)
    assert columns.num_graphs == 6
    assert_matches_pyg("TSP", columns, pyg, (2, 1, 3))  # train[:2], val[:1], test[:3]


def test_default_sizes_demand_the_published_counts(server, tmp_path):
    data = pyg_zip("PATTERN", fixture_parts("PATTERN"))
    with pytest.raises(DataError, match="train part holds 5 graphs, but the published PATTERN has 10000") as info:
        generate(server, tmp_path, "PATTERN", data)
    assert "\n" not in str(info.value) and not (tmp_path / "ds").exists()
    with pytest.raises(DataError, match="val part holds 3 graphs.*num_val asks for 4"):
        generate(server, tmp_path, "PATTERN", data, num_train=5, num_val=4, num_test=1)


# ------------------------------------------------------------------------------- meta and presets unchanged
@pytest.mark.parametrize("name", R.NAMES)
def test_meta_equals_the_regenerating_generators(name):
    ours = R.describe(name, resolve_params(R.RELEASED, {"name": name}, "test"), 0)
    generator = get_generator(R.RELEASES[name].generator)
    theirs = generator.describe(name, dict(generator.defaults), 0)
    for field in ("task", "loss", "metric", "num_outputs", "num_graphs", "node_features", "edge_features",
                  "pe_usage", "split_sizes", "num_graph_outputs", "net_conventions"):
        assert getattr(ours, field) == getattr(theirs, field), field
    released_default = R.RELEASED.default_split({"name": name})
    if name != "CSL":  # CSL has no given split: by default the benchmark's 5 released folds
        assert generator.default_split == released_default == {"scheme": "given"}
    else:
        assert released_default == {"scheme": "published", "source": DWIVEDI2020}
    # the catalog's description of the benchmark's dataset (hand-written for MNIST / CIFAR10) agrees too
    catalog = describe_dataset(R.BENCHMARK_NAMES[name])
    assert (catalog.task, catalog.num_outputs, catalog.node_features, catalog.edge_features, catalog.pe_usage) == (
        ours.task, ours.num_outputs, ours.node_features, ours.edge_features, ours.pe_usage)
    assert published_name("released", name, {"name": name}) == R.BENCHMARK_NAMES[name]


GATED_GCN = {"PATTERN": "SBMs_node_clustering_GatedGCN_PATTERN_100k",
             "CLUSTER": "SBMs_node_clustering_GatedGCN_CLUSTER_100k",
             "MNIST": "superpixels_graph_classification_GatedGCN_MNIST_100k",
             "CIFAR10": "superpixels_graph_classification_GatedGCN_CIFAR10_100k",
             "TSP": "TSP_edge_classification_GatedGCN_100k"}


@pytest.mark.parametrize("name", list(GATED_GCN))
def test_preset_trains_on_the_converted_data_with_the_published_parameter_count(server, tmp_path, name):
    meta, _ = generate(server, tmp_path, name, pyg_zip(name, fixture_parts(name)), **SIZES)
    make_split_file(tmp_path / "ds", "given", {}, tmp_path / "splits.json")
    preset = all_presets()[GATED_GCN[name]]
    config = run_config(GATED_GCN[name], {"epochs": 1, "batch_size": 4})
    metrics = train(dataset_dir=tmp_path / "ds", splits_path=tmp_path / "splits.json", fold=0, config=config,
                    out_dir=tmp_path / "run", threads=1)
    # the published total where the preset records it (PATTERN), else the count on the catalog's description of
    # the benchmark's dataset (its input and output sizes, gnnbench.data.catalog)
    expected = preset.get("total_params") or count_parameters(build_model(config, describe_dataset(preset["dataset"])))
    assert metrics["num_params"] == expected
    if name == "PATTERN":
        assert expected == 104003
    assert metrics["epochs"] == 1 and np.isfinite(metrics["test"]["loss"])


# ---------------------------------------------------------------------------------------------- bad input
def evil_marker(tmp_path: Path) -> tuple[object, Path]:
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    return Evil(), marker


def test_truncated_zip_is_a_one_line_error_and_leaves_nothing(server, tmp_path):
    data = pyg_zip("CLUSTER", fixture_parts("CLUSTER"))
    with pytest.raises(DataError, match="CLUSTER_v2.zip is not a readable zip archive") as info:
        generate(server, tmp_path, "CLUSTER", data[: len(data) // 2], **SIZES)
    assert "\n" not in str(info.value) and "download it again" in str(info.value)
    assert not (tmp_path / "ds").exists()
    assert not [p for p in leftovers(tmp_path / "raw") if p.endswith(".part")]  # the extracted copy is gone


def test_truncated_pt_member_in_a_sound_zip_is_a_one_line_error(server, tmp_path):
    member = pt_bytes(fixture_parts("TSP"))
    with pytest.raises(DataError, match="TSP_v2.pt is not a readable torch file .* truncated or corrupt") as info:
        generate(server, tmp_path, "TSP", zip_bytes({"TSP_v2.pt": member[: len(member) // 2]}), **SIZES)
    assert "\n" not in str(info.value) and not (tmp_path / "ds").exists()


def test_missing_member_is_named(server, tmp_path):
    data = zip_bytes({"MNIST.pt": pt_bytes(fixture_parts("MNIST"))})  # v1 name: not the v2 release
    with pytest.raises(DataError, match="lacks the member MNIST_v2.pt") as info:
        generate(server, tmp_path, "MNIST", data, **SIZES)
    assert "\n" not in str(info.value) and not (tmp_path / "ds").exists()


def test_pt_with_a_forbidden_object_is_refused_without_running_it(server, tmp_path):
    from torch_geometric.data import Data

    parts = fixture_parts("TSP")
    parts[1][0] = Data(**parts[1][0])  # PyG's v1 files held Data objects: not loadable with weights_only=True
    with pytest.raises(DataError, match=r"weights_only=True\) refuses \(it names torch_geometric\.data") as info:
        generate(server, tmp_path, "TSP", pyg_zip("TSP", parts), **SIZES)
    assert "\n" not in str(info.value) and not (tmp_path / "ds").exists()
    evil, marker = evil_marker(tmp_path)
    with pytest.raises(DataError, match="refuses"):
        generate(server, tmp_path, "PATTERN", pyg_zip("PATTERN", [[evil], [], []]), **SIZES)
    assert not marker.exists() and not (tmp_path / "ds").exists()
    assert not [p for p in leftovers(tmp_path / "raw") if p.endswith(".part")]


def test_csl_pickle_with_a_forbidden_global_is_refused(tmp_path):
    evil, marker = evil_marker(tmp_path)
    path = tmp_path / "CSL.zip"
    path.write_bytes(zip_bytes({R.CSL_GRAPHS: pickle.dumps([evil]), R.CSL_LABELS: pt_bytes(torch.zeros(150).long())}))
    with pytest.raises(DataError, match="posix.system, which is not on gnnbench's allow-list") as info:
        R.read_csl_zip(path)
    assert "\n" not in str(info.value) and not marker.exists()


def test_csl_structure_errors(tmp_path):
    import scipy.sparse as sp

    cycle = sp.coo_matrix(nx.to_scipy_sparse_array(nx.circulant_graph(41, [1, 2])) + sp.eye(41))
    labels = pt_bytes(torch.arange(150) // 15)
    path = tmp_path / "CSL.zip"
    for graphs, y, message in (
            ([cycle] * 149, labels, "holds 149 graphs, expected a list of 150"),
            ([cycle] * 149 + [sp.coo_matrix(np.ones((41, 41)))], labels, "graph 149 has 1640 directed edges"),
            ([cycle] * 150, pt_bytes(torch.arange(150) // 10), "150 integer labels in 0..9"),
            ([cycle] * 150, pt_bytes(torch.arange(150) // 15.0), "150 integer labels")):
        path.write_bytes(zip_bytes({R.CSL_GRAPHS: pickle.dumps(graphs), R.CSL_LABELS: y}))
        with pytest.raises(DataError, match=message):
            R.read_csl_zip(path)
    path.write_bytes(zip_bytes({R.CSL_GRAPHS: pickle.dumps([cycle] * 150)}))
    with pytest.raises(DataError, match=f"lacks the member {R.CSL_LABELS}"):
        R.read_csl_zip(path)
    path.write_bytes(zip_bytes({R.CSL_GRAPHS: pickle.dumps([cycle] * 150), R.CSL_LABELS: labels}))
    columns = R.read_csl_zip(path)  # the well-formed version of the same fixture converts
    assert columns.num_edges.tolist() == [164] * 150 and columns.graph["y"].tolist() == (np.arange(150) // 15).tolist()


def _id_out_of_range(part: list[dict]) -> None:
    for graph in part:  # ids instead of one-hot rows, one of them outside the vocabulary 0..6
        graph["x"] = graph["x"].argmax(1)
    part[-1]["x"][0] = 7


def _drop_pos(part: list[dict]) -> None:
    for graph in part:  # a release without pos must carry the coordinates in x
        del graph["pos"]


@pytest.mark.parametrize(("name", "change", "message"), [
    ("PATTERN", lambda part: part[-1].update(x=part[-1]["x"] * 2), "'x' is .* but not one-hot"),
    ("CLUSTER", _id_out_of_range, "'x' holds values outside the integers 0..6"),
    ("CLUSTER", lambda part: part[-1].update(y=part[-1]["y"][:-1]), "'y' holds .* labels over all graphs"),
    ("PATTERN", lambda part: part[-1].update(edge_attr=part[-1]["edge_attr"] * 0.5), "not the constant 1"),
    ("MNIST", lambda part: part[-1].update(edge_index=part[-1]["edge_index"] + 100), "a node outside its graph"),
    ("MNIST", _drop_pos, r"'x' has shape \(\d+, 1\) over all graphs, expected \(\d+, 3\)"),
    ("MNIST", lambda part: part[-1].update(pos=part[-1]["pos"][:, :1]), "'pos' tensors of the graphs do not fit"),
    ("CIFAR10", lambda part: part[-1].update(x=part[-1]["x"].double()), None),  # promoted by torch.cat: accepted
    ("CIFAR10", lambda part: [g.update(x=g["x"].long()) for g in part], "'x' has dtype int64, expected floating"),
    ("TSP", lambda part: part[-1].update(edge_attr=part[-1]["edge_attr"] * float("nan")), "non-finite"),
    ("TSP", lambda part: part[-1].pop("y"), "1 of 5 graphs lack the key 'y'"),
    ("TSP", lambda part: part.__setitem__(0, [1, 2]), "graph 0 is a list, expected a dict of tensors"),
])
def test_malformed_graphs_are_one_line_errors(server, tmp_path, name, change, message):
    parts = fixture_parts(name)
    change(parts[0])
    if message is None:
        generate(server, tmp_path, name, pyg_zip(name, parts), **SIZES)
        return
    with pytest.raises(DataError, match=message) as info:
        generate(server, tmp_path, name, pyg_zip(name, parts), **SIZES)
    assert "\n" not in str(info.value) and f"{name}_v2.pt, train part" in str(info.value)
    assert not (tmp_path / "ds").exists()


def test_config_errors():
    with pytest.raises(ConfigError, match="'ZINC' is not a released dataset; choose one of PATTERN, CLUSTER"):
        resolve_params(R.RELEASED, {"name": "ZINC"}, "datasets.x.params")
    with pytest.raises(ConfigError, match="num_train: CSL comes without a split"):
        resolve_params(R.RELEASED, {"name": "CSL", "num_train": 5}, "datasets.x.params")
    assert R.raw_files({"name": "CSL"})[0].sha256 == R.CSL_SHA256
    assert R.raw_files({"name": "MNIST"})[0].sha256 is None  # no published checksum: recorded at first download


def test_suite_fits_budgets_from_the_released_datasets_published_configs():
    """published_name maps generator ``released`` by its ``name``: a budget starts from that dataset's preset."""
    from gnnbench.suite import load_suite

    csl_split = {"scheme": "stratified_kfold", "folds": 5, "val_fraction": 0.25, "seed": 0}
    suite = load_suite({
        "datasets": {"P": {"generator": "released", "params": {"name": "PATTERN"}},
                     "C": {"generator": "released", "params": {"name": "CSL"}, "split": csl_split}},
        "benchmarks": {name: {"seeds": [1], "models": {"fit": {"model": "GatedGCN", "budget": 100000}}}
                       for name in ("P", "C")}})
    assert suite.raw_files("P") == ["resources/raw/dwivedi2020/PATTERN_v2.zip"]  # named by the paper
    assert suite.datasets["P"].split == {"scheme": "given"} and suite.datasets["C"].split == csl_split
    pattern, csl = (suite.run_config(name, "fit", 1) for name in ("P", "C"))
    assert (pattern["batch_size"], pattern["init_lr"]) == (128, 0.001)  # SBMs_node_clustering_GatedGCN_PATTERN_100k
    assert (csl["batch_size"], csl["init_lr"]) == (5, 0.0005)  # CSL_graph_classification_GatedGCN_CSL_100k
    with pytest.raises(ConfigError, match="dataset X comes without a split; use stratified_kfold"):
        load_suite({"datasets": {"X": {"generator": "released", "params": {"name": "CSL"}, "split": {
                    "scheme": "given"}}}, "benchmarks": {"X": {"seeds": [1], "models": {
                        "G": "CSL_graph_classification_GatedGCN_CSL_100k"}}}})
    default = load_suite({"datasets": {"X": {"generator": "released", "params": {"name": "CSL"}}},
                          "benchmarks": {"X": {"seeds": [1], "models": {
                              "G": "CSL_graph_classification_GCN_CSL_100k"}}}})
    assert default.datasets["X"].num_folds == 5  # the benchmark's released CSL folds
    assert default.split_raw_files("X") == [f"resources/raw/csl/splits/CSL_{p}.index" for p in ("train", "val", "test")]
