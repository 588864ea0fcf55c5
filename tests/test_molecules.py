"""ZINC and AQSOL generators (docs/datasets.md#zinc, docs/datasets.md#aqsol) and the allow-list's torch tensors.

AQSOL: the real ``val.pickle`` / ``test.pickle`` (../shared/data/real/aqsol) packed into an ``aqsol_graph_raw.zip``
(train = a copy of val: the real train pickle is not available) are served from a local HTTP server and fetched
through ``mirror`` — the real download → SHA-256 record → zip → allow-list unpickling → conversion path. Expected
values: the benchmark's counts and the target means of the released pickles, and PyTorch Geometric's own ``AQSOL``
processing the same files offline, plus the benchmark's second filter written here on PyG's graphs.

ZINC: ``molecules.zip`` is not available, so the tests write one in the released format (lists of dicts of torch
tensors, ``pickle.dump``) with 97 distinct molecules repeated by reference (pickle memoises them: the files stay
small) to the published split sizes, served together with the REAL subset index files. Expected values: molecule
``index[j] % 97`` for dataset graph j (edges from ``np.argwhere``), and PyG's ``ZINC(subset=True)`` processing the
same raw files offline.
"""

from __future__ import annotations

import collections
import hashlib
import io
import os
import pickle
import shutil
import types
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from test_download import closed_port_url

from gnnbench.config.presets import all_presets, run_config
from gnnbench.data import download
from gnnbench.data.catalog import describe_dataset, published_name
from gnnbench.data.download import DownloadError, recorded_sha256
from gnnbench.data.generators import get_generator, molecules
from gnnbench.data.meta import FeatureSpec, read_dataset
from gnnbench.data.safe_pickle import PickledTensor, safe_load, to_numpy
from gnnbench.errors import DataError
from gnnbench.models.build import build_model, count_parameters
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.splits import read_splits

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real"
needs_aqsol = pytest.mark.skipif(not (REAL / "aqsol").is_dir(), reason="real AQSOL pickles not available "
                                                                       "(../shared/data/real/aqsol is absent)")
needs_index = pytest.mark.skipif(not (REAL / "zinc").is_dir(), reason="real ZINC index files not available "
                                                                      "(../shared/data/real/zinc is absent)")
SPLITS = ("train", "val", "test")
FULL_SIZES = {"train": 220011, "val": 24445, "test": 5000}  # ZINC-full (the released molecules.zip)
DISTINCT = 97


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """Canonical URLs point at a closed local port and retries do not sleep: tests never leave 127.0.0.1."""
    dead = closed_port_url().rsplit("/", 1)[0]
    monkeypatch.setattr(molecules, "ZINC_URL", dead + "/molecules.zip")
    monkeypatch.setattr(molecules, "ZINC_INDEX_URL", dead + "/{split}.index")
    monkeypatch.setattr(molecules, "AQSOL_URL", dead + "/aqsol_graph_raw.zip")
    monkeypatch.setattr(download, "time", types.SimpleNamespace(sleep=lambda seconds: None))


def make_zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def serve(server, files: dict[str, bytes], prefix: str = "/m") -> str:
    for name, data in files.items():
        server.routes[f"{prefix}/{name}"] = data
    return server.url + prefix


# ------------------------------------------------------------------------------------------------ fixture files
def zinc_molecules(count: int = DISTINCT, seed: int = 0) -> list[dict]:
    """Molecule dicts in the released format: a random tree plus ring bonds, bond types 1..3 (symmetric)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        n = int(rng.integers(9, 38))  # ZINC's node counts (9–37)
        bond = np.zeros((n, n), dtype=np.int64)
        for k in range(1, n):
            p = int(rng.integers(0, k))
            bond[k, p] = bond[p, k] = rng.integers(1, 4)
        for _ in range(int(rng.integers(0, 4))):
            u, v = rng.choice(n, 2, replace=False)
            bond[u, v] = bond[v, u] = rng.integers(1, 4)
        out.append({"num_atom": n, "atom_type": torch.from_numpy(rng.integers(0, 28, n)),
                    "bond_type": torch.from_numpy(bond),
                    "logP_SA_cycle_normalized": torch.tensor([float(rng.normal(-0.14, 2.0))])})
    return out


def zinc_pickles(mols: list[dict], sizes: dict[str, int]) -> dict[str, bytes]:
    """``{split}.pickle`` bytes: split lists of ``mols[i % len(mols)]`` (the same objects: pickle memoises them)."""
    return {split: pickle.dumps([mols[i % len(mols)] for i in range(size)], protocol=4)
            for split, size in sizes.items()}


def zinc_zip(pickles: dict[str, bytes]) -> bytes:
    return make_zip({f"molecules/{split}.pickle": data for split, data in pickles.items()})


def real_indices() -> dict[str, bytes]:
    return {f"{split}.index": (REAL / "zinc" / f"{split}.index").read_bytes() for split in SPLITS}


def parse_index(data: bytes) -> list[int]:
    return [int(v) for v in data.decode().strip().split(",")]


def aqsol_zip() -> bytes:
    val, test = (REAL / "aqsol" / "val.pickle").read_bytes(), (REAL / "aqsol" / "test.pickle").read_bytes()
    return make_zip({"asqol_graph_raw/train.pickle": val, "asqol_graph_raw/val.pickle": val,
                     "asqol_graph_raw/test.pickle": test})


@pytest.fixture(scope="module")
def distinct():
    return zinc_molecules()


@pytest.fixture(scope="module")
def full_zip(distinct):
    """molecules.zip with the published ZINC-full split sizes (97 distinct molecules repeated by reference)."""
    return zinc_zip(zinc_pickles(distinct, FULL_SIZES))


def run_zinc(server, tmp_path: Path, archive: bytes, indices: dict[str, bytes] | None, out: str = "ds"):
    mirror = serve(server, {"molecules.zip": archive, **(indices or {})})
    params = {"mirror": mirror, "subset": indices is not None}
    generate_dataset("zinc", "ZINC", params, 0, tmp_path / out, raw_dir=tmp_path / "raw")
    return read_dataset(tmp_path / out)


def run_aqsol(server, tmp_path: Path, archive: bytes, out: str = "ds"):
    mirror = serve(server, {"aqsol_graph_raw.zip": archive})
    generate_dataset("aqsol", "AQSOL", {"mirror": mirror}, 0, tmp_path / out, raw_dir=tmp_path / "raw")
    return read_dataset(tmp_path / out)


def graph_edges(columns, k: int) -> np.ndarray:
    g = columns.graph_at(k)
    return np.stack([g["src"], g["dst"]], axis=1)


def pyg_flat(dataset) -> dict[str, np.ndarray]:
    """A PyG InMemoryDataset's collated storage (edge_index stays local per graph) as NumPy arrays."""
    data, slices = dataset._data, dataset.slices
    return {"num_nodes": np.diff(slices["x"].numpy()), "num_edges": np.diff(slices["edge_index"].numpy()),
            "x": data.x.view(-1).numpy(), "edge_index": data.edge_index.numpy(),
            "edge_attr": data.edge_attr.view(-1).numpy(), "y": data.y.view(-1).numpy()}


# ----------------------------------------------------------------------------------------------------------- AQSOL
@needs_aqsol
def test_aqsol_real_files_through_the_download_path(server, tmp_path):
    archive = aqsol_zip()
    meta, columns = run_aqsol(server, tmp_path, archive)
    # 998 / 999 raw val / test molecules → 996 / 996 after the benchmark's filter (its data/molecules.py)
    assert meta.split_sizes == {"train": 996, "val": 996, "test": 996} and columns.num_graphs == 2988
    assert columns.graph["split"].tolist() == [0] * 996 + [1] * 996 + [2] * 996
    assert (meta.task, meta.loss, meta.metric, meta.num_outputs) == ("graph_regression", "l1", "mae", 1)
    assert meta.node_features == FeatureSpec("categorical", 65) and meta.edge_features == FeatureSpec("categorical", 5)
    y = columns.graph["y"]
    assert y.dtype == np.float32 and round(float(y[996:1992].mean()), 2) == -3.41
    assert round(float(y[1992:].mean()), 2) == -3.58
    x, attr = columns.node["x"], columns.edge["edge_attr"]
    assert x.dtype == np.int16 and 0 <= x.min() and x.max() < 65 and 1 <= attr.min() and attr.max() < 5
    # every edge in both directions (the raw lists hold both), local indices inside each graph
    graph_of = np.repeat(np.arange(columns.num_graphs), columns.num_edges)
    forward = np.sort((graph_of * 256 + columns.src) * 256 + columns.dst)
    backward = np.sort((graph_of * 256 + columns.dst) * 256 + columns.src)
    np.testing.assert_array_equal(forward, backward)
    # SHA-256 recorded at download, named in meta.json
    sha = hashlib.sha256(archive).hexdigest()
    assert recorded_sha256(tmp_path / "raw" / "aqsol" / "aqsol_graph_raw.zip") == sha
    assert meta.source["raw_sha256"] == {"aqsol/aqsol_graph_raw.zip": sha} and "mirror" not in meta.source["params"]
    # the given split is the stored order
    make_split_file(tmp_path / "ds", "given", {}, tmp_path / "splits.json")
    fold = read_splits(tmp_path / "splits.json").folds[0]
    assert [len(fold[p]) for p in SPLITS] == [996, 996, 996] and fold["val"][0] == 996


@needs_aqsol
def test_aqsol_equals_pyg_plus_the_benchmarks_second_filter(server, tmp_path):
    from torch_geometric.datasets import AQSOL

    _, columns = run_aqsol(server, tmp_path, aqsol_zip())
    raw = tmp_path / "pyg" / "raw"  # PyG's raw folder: the three pickles plus the two dictionaries it lists
    raw.mkdir(parents=True)
    for name in ("val", "test", "atom_dict", "bond_dict"):
        shutil.copy(REAL / "aqsol" / f"{name}.pickle", raw / f"{name}.pickle")
    shutil.copy(REAL / "aqsol" / "val.pickle", raw / "train.pickle")
    ptr, edge_ptr = columns.node_ptr, columns.edge_ptr
    start = 0
    for code, split in enumerate(SPLITS):
        pyg = AQSOL(str(tmp_path / "pyg"), split=split)
        graphs = [pyg[i] for i in range(len(pyg))]
        raw_count = len(pickle.loads((raw / f"{split}.pickle").read_bytes()))  # trusted: the checked originals
        assert len(graphs) == raw_count  # PyG drops only bond-less molecules: none in val / test
        kept = [g for g in graphs if int(g.edge_index.max()) + 1 == g.num_nodes]  # the benchmark's second filter
        assert len(kept) == 996 and raw_count - len(kept) == {"train": 2, "val": 2, "test": 3}[split]
        stop = start + len(kept)
        nodes, edges = slice(ptr[start], ptr[stop]), slice(edge_ptr[start], edge_ptr[stop])
        assert columns.num_nodes[start:stop].tolist() == [g.num_nodes for g in kept]
        np.testing.assert_array_equal(columns.node["x"][nodes], torch.cat([g.x for g in kept]).numpy())
        np.testing.assert_array_equal(np.stack([columns.src[edges], columns.dst[edges]]),
                                      torch.cat([g.edge_index for g in kept], dim=1).numpy())
        np.testing.assert_array_equal(columns.edge["edge_attr"][edges], torch.cat([g.edge_attr for g in kept]).numpy())
        np.testing.assert_array_equal(columns.graph["y"][start:stop], torch.cat([g.y for g in kept]).numpy())
        assert (columns.graph["split"][start:stop] == code).all()
        start = stop


@needs_aqsol
def test_aqsol_meta_builds_the_published_networks(server, tmp_path):
    """Every AQSOL preset with a published parameter total builds to it on the generated meta (65 / 5 types)."""
    meta, _ = run_aqsol(server, tmp_path, aqsol_zip())
    checked = 0
    for name, preset in all_presets().items():
        if preset.get("dataset") == "AQSOL" and "total_params" in preset:
            assert count_parameters(build_model(run_config(name), meta)) == preset["total_params"], name
            checked += 1
    assert checked >= 10


def test_aqsol_filter_on_a_fixture(server, tmp_path):
    """Bond-less molecules and molecules whose last atoms have no bond are dropped; the rest kept in order."""
    def mol(atoms, edges, y, bonds=None):
        index = np.array(edges, dtype=np.int64).reshape(-1, 2).T
        bonds = np.ones(index.shape[1], dtype=np.int64) if bonds is None else np.array(bonds, dtype=np.int64)
        return np.array(atoms, dtype=np.int64), bonds, index, np.float64(y)

    edges = [(0, 1), (1, 0), (1, 2), (2, 1)]
    split = [mol([1, 2, 3], edges, -1.0, [1, 1, 3, 3]),
             mol([4], [], -2.0),  # no bond: dropped
             mol([1, 1, 1, 5], edges, -3.0),  # atom 3 isolated (max index + 1 = 3 ≠ 4): dropped
             mol([1, 1, 1, 5], [(0, 3), (3, 0), (1, 2), (2, 1)], -4.0),  # the highest atom is bonded: kept
             mol([64, 0, 0], edges, -5.0, [4, 4, 2, 2])]
    data = pickle.dumps(split, protocol=4)
    archive = make_zip({f"asqol_graph_raw/{s}.pickle": data for s in SPLITS})
    meta, columns = run_aqsol(server, tmp_path, archive)
    assert meta.split_sizes == {"train": 3, "val": 3, "test": 3}
    assert columns.graph["y"][:3].tolist() == [-1.0, -4.0, -5.0]
    assert columns.num_nodes[:3].tolist() == [3, 4, 3] and columns.num_edges[:3].tolist() == [4, 4, 4]
    assert columns.node["x"][:10].tolist() == [1, 2, 3, 1, 1, 1, 5, 64, 0, 0]
    assert columns.edge["edge_attr"][:12].tolist() == [1, 1, 3, 3, 1, 1, 1, 1, 4, 4, 2, 2]
    np.testing.assert_array_equal(graph_edges(columns, 1), [(0, 3), (3, 0), (1, 2), (2, 1)])


# ------------------------------------------------------------------------------------------------------------ ZINC
@needs_index
def test_zinc_subset_fixture_with_the_real_index_files(server, tmp_path, distinct, full_zip):
    indices = real_indices()
    meta, columns = run_zinc(server, tmp_path, full_zip, indices)
    assert meta.split_sizes == {"train": 10000, "val": 1000, "test": 1000} and columns.num_graphs == 12000
    assert meta.node_features == FeatureSpec("categorical", 28) and meta.edge_features == FeatureSpec("categorical", 4)
    assert (meta.task, meta.loss, meta.metric, meta.pe_usage) == ("graph_regression", "l1", "mae", "add")
    # dataset graph j = molecule index[j] (mod 97) of its split's pickle, in index order
    order = [i % DISTINCT for split in SPLITS for i in parse_index(indices[f"{split}.index"])]
    expected = [distinct[m] for m in order]
    assert columns.num_nodes.tolist() == [m["num_atom"] for m in expected]
    np.testing.assert_array_equal(columns.node["x"], np.concatenate([m["atom_type"].numpy() for m in expected]))
    np.testing.assert_array_equal(columns.graph["y"], [m["logP_SA_cycle_normalized"].item() for m in expected])
    per_molecule = [np.argwhere(m["bond_type"].numpy() != 0) for m in distinct]  # row-major nonzeros
    np.testing.assert_array_equal(np.stack([columns.src, columns.dst], axis=1),
                                  np.concatenate([per_molecule[m] for m in order]))
    attr = [distinct[m]["bond_type"].numpy()[tuple(per_molecule[m].T)] for m in order]
    np.testing.assert_array_equal(columns.edge["edge_attr"], np.concatenate(attr))
    # the index files' SHA-256 are the pinned ones; molecules.zip's is recorded
    assert meta.source["raw_sha256"]["zinc/train.index"] == molecules.ZINC_INDEX_SHA256["train"]
    assert {f"zinc/{s}.index": hashlib.sha256(indices[f"{s}.index"]).hexdigest() for s in SPLITS} == {
        f"zinc/{s}.index": molecules.ZINC_INDEX_SHA256[s] for s in SPLITS}
    assert meta.source["raw_sha256"]["zinc/molecules.zip"] == hashlib.sha256(full_zip).hexdigest()


@needs_index
def test_zinc_subset_equals_pyg(server, tmp_path, distinct, full_zip):
    from torch_geometric.datasets import ZINC

    _, columns = run_zinc(server, tmp_path, full_zip, real_indices())
    raw = tmp_path / "pyg" / "raw"  # PyG's raw folder: the extracted pickles and the index files
    raw.mkdir(parents=True)
    with zipfile.ZipFile(io.BytesIO(full_zip)) as archive:
        for split in SPLITS:
            (raw / f"{split}.pickle").write_bytes(archive.read(f"molecules/{split}.pickle"))
    for name, data in real_indices().items():
        (raw / name).write_bytes(data)
    ours = {"num_nodes": columns.num_nodes, "num_edges": columns.num_edges, "x": columns.node["x"],
            "edge_index": np.stack([columns.src, columns.dst]), "edge_attr": columns.edge["edge_attr"],
            "y": columns.graph["y"]}
    flats = [pyg_flat(ZINC(str(tmp_path / "pyg"), subset=True, split=split)) for split in SPLITS]
    theirs = {key: np.concatenate([f[key] for f in flats], axis=-1) for key in ours}
    for key in ours:
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)


def test_zinc_full_fixture(server, tmp_path):
    """subset: false gives every molecule in pickle order; the split sizes are counted from the file."""
    mols = zinc_molecules(50, seed=1)
    sizes = {"train": 30, "val": 12, "test": 8}
    pickles = {s: pickle.dumps(part, protocol=2) for s, part in  # protocol 2: bytes pickled via _codecs.encode
               zip(SPLITS, (mols[:30], mols[30:42], mols[42:]), strict=True)}
    meta, columns = run_zinc(server, tmp_path, zinc_zip(pickles), None)
    assert meta.split_sizes == sizes and meta.num_graphs == 50
    assert set(meta.source["raw_sha256"]) == {"zinc/molecules.zip"}  # no index file fetched
    for k in (0, 29, 30, 49):
        g, m = columns.graph_at(k), mols[k]
        np.testing.assert_array_equal(g["x"], m["atom_type"].numpy())
        edges = np.argwhere(m["bond_type"].numpy() != 0)
        np.testing.assert_array_equal(graph_edges(columns, k), edges)
        np.testing.assert_array_equal(g["edge_attr"], m["bond_type"].numpy()[tuple(edges.T)])
        assert g["y"] == m["logP_SA_cycle_normalized"].item()


def test_describe_matches_the_catalog_and_published_names():
    for generator, name, params in (("zinc", "ZINC", {}), ("aqsol", "AQSOL", {})):
        gen = get_generator(generator)
        meta, catalog = gen.describe(name, {**gen.defaults, **params}, 0), describe_dataset(name)
        for key in ("task", "loss", "metric", "num_outputs", "num_graphs", "node_features", "edge_features",
                    "pe_usage", "split_sizes"):
            assert getattr(meta, key) == getattr(catalog, key), (name, key)
        assert published_name(generator, "x") == name and gen.default_split == {"scheme": "given"}
    full = get_generator("zinc").describe("ZINC-full", {"subset": False, "mirror": ""}, 0)
    assert full.split_sizes == FULL_SIZES


# --------------------------------------------------------------------------------------------------- unhappy paths
def _error(info) -> str:
    text = str(info.value)
    assert "\n" not in text
    return text


@needs_index
def test_wrong_index_checksum_is_refused(server, tmp_path, full_zip):
    indices = real_indices()
    indices["val.index"] = b"0," + indices["val.index"]  # still well-formed, but not the published file
    with pytest.raises(DownloadError) as info:
        run_zinc(server, tmp_path, full_zip, indices)
    text = _error(info)
    assert "zinc/val.index" in text and molecules.ZINC_INDEX_SHA256["val"] in text and "checksum mismatch" in text
    assert not (tmp_path / "ds").exists() and not (tmp_path / "raw" / "zinc" / "val.index").exists()


@needs_index
def test_index_outside_the_pickle_is_refused(server, tmp_path, distinct):
    small = zinc_zip(zinc_pickles(distinct, {"train": 1000, "val": 24445, "test": 5000}))
    with pytest.raises(DataError) as info:
        run_zinc(server, tmp_path, small, real_indices())
    text = _error(info)
    assert "molecules/train.pickle holds 1000 molecules but its index file names position" in text
    assert not (tmp_path / "ds").exists()


@pytest.mark.parametrize("case", ["truncated", "missing member", "not a zip", "forbidden global", "smuggled storage",
                                  "not a list", "atom type", "bond matrix shape", "num_atom"])
def test_bad_zinc_archives(server, tmp_path, case):
    mols = zinc_molecules(6, seed=2)
    parts = {s: list(mols[2 * i:2 * i + 2]) for i, s in enumerate(SPLITS)}
    marker = tmp_path / "pwned"
    if case == "forbidden global":
        parts["val"].append(_Payload(os.system, f"touch {marker}"))
    elif case == "smuggled storage":  # allowed globals, but the storage bytes hold a payload
        evil = _SmuggledTensor(legacy_bytes(_Payload(os.system, f"touch {marker}")))
        parts["val"][1] = {**parts["val"][1], "bond_type": evil}
    elif case == "not a list":
        parts["val"] = {"molecules": parts["val"]}
    elif case == "atom type":
        parts["test"][1] = {**parts["test"][1], "atom_type": parts["test"][1]["atom_type"] + 27}
    elif case == "bond matrix shape":
        parts["test"][0] = {**parts["test"][0], "bond_type": parts["test"][0]["bond_type"][:, :-1]}
    elif case == "num_atom":
        parts["train"][1] = {**parts["train"][1], "num_atom": parts["train"][1]["num_atom"] + 1}
    archive = zinc_zip({s: pickle.dumps(p, protocol=4) for s, p in parts.items()})
    message = {"truncated": "is not a readable zip archive", "missing member": "lacks member molecules/test.pickle",
               "not a zip": "is not a readable zip archive",
               "forbidden global": ".system, which is not on gnnbench's allow-list",
               "smuggled storage": "molecules/val.pickle (molecule 1, bond_type) holds a torch storage that "
                                   "torch.load(weights_only=True) refuses",
               "not a list": "holds a dict, expected a list of molecule dicts",
               "atom type": "molecules/test.pickle has atom type", "num_atom": "train.pickle: molecule 1 is malformed",
               "bond matrix shape": "molecules/test.pickle: molecule 0 is malformed"}[case]
    if case == "truncated":
        archive = archive[: len(archive) * 2 // 3]
    elif case == "missing member":
        archive = zinc_zip({s: pickle.dumps(p, protocol=4) for s, p in parts.items() if s != "test"})
    elif case == "not a zip":
        archive = b"<html>Dropbox error page</html>"
    with pytest.raises(DataError) as info:
        run_zinc(server, tmp_path, archive, None)
    text = _error(info)
    assert message in text and str(tmp_path / "raw" / "zinc" / "molecules.zip") in text
    assert "download it again" in text
    assert not (tmp_path / "ds").exists() and not marker.exists()


@pytest.mark.parametrize("case", ["missing member", "forbidden global", "malformed tuple", "bond type"])
def test_bad_aqsol_archives(server, tmp_path, case):
    good = (np.array([1, 2], dtype=np.int64), np.array([1, 1], dtype=np.int64),
            np.array([[0, 1], [1, 0]], dtype=np.int64), np.float64(-1.5))
    split = [good, good]
    marker = tmp_path / "pwned"
    if case == "forbidden global":
        split.append(_Payload(os.system, f"touch {marker}"))
    elif case == "malformed tuple":
        split.append(good[:3])
    elif case == "bond type":
        split.append((good[0], np.array([5, 5], dtype=np.int64), good[2], good[3]))
    members = {f"asqol_graph_raw/{s}.pickle": pickle.dumps(split, protocol=4) for s in SPLITS}
    if case == "missing member":  # the folder spelled as a reader might expect, not as published
        members = {name.replace("asqol", "aqsol"): data for name, data in members.items()}
    with pytest.raises(DataError) as info:
        run_aqsol(server, tmp_path, make_zip(members))
    text = _error(info)
    message = {"missing member": "lacks member asqol_graph_raw/train.pickle",
               "forbidden global": ".system, which is not on", "malformed tuple": "molecule 2 is not (atom ids",
               "bond type": "has bond type 5, outside 0..4"}[case]
    assert message in text and "aqsol_graph_raw.zip" in text
    assert not (tmp_path / "ds").exists() and not marker.exists()


# --------------------------------------------------------------------- allow-list: classically pickled torch tensors
class _Payload:
    """Unpickling this object calls ``func(*args)``."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


class _SmuggledTensor:
    """Pickles like a tensor whose storage bytes are ``storage_bytes`` (whatever they hold)."""

    def __init__(self, storage_bytes: bytes, size: tuple = (3,), stride: tuple = (1,), offset: int = 0,
                 hooks: object = None):
        self.storage_bytes, self.view = storage_bytes, (offset, size, stride)
        self.hooks = collections.OrderedDict() if hooks is None else hooks

    def __reduce__(self):
        storage = _Payload(torch.storage._load_from_bytes, self.storage_bytes)
        offset, size, stride = self.view
        return torch._utils._rebuild_tensor_v2, (storage, offset, size, stride, False, self.hooks)


def legacy_bytes(obj: object) -> bytes:
    """``obj`` saved as a torch storage's pickled bytes are (torch's legacy format)."""
    buffer = io.BytesIO()
    torch.save(obj, buffer, _use_new_zipfile_serialization=False)
    return buffer.getvalue()


@pytest.mark.parametrize("protocol", [2, 3, 5])
def test_classic_tensor_pickles_read_as_arrays(protocol):
    base = torch.arange(12, dtype=torch.int64).reshape(3, 4)
    obj = {"plain": torch.tensor([0.5, -1.25]), "matrix": base, "view": base[1:, ::2], "transposed": base.t(),
           "scalar": torch.tensor(7), "empty": torch.zeros(0, 3), "int": 3}
    got = safe_load(pickle.dumps(obj, protocol=protocol), "test pickle")
    assert isinstance(got["plain"], PickledTensor) and got["int"] == 3
    for key, tensor in obj.items():
        if key != "int":
            array = to_numpy(got[key], "test pickle", "-")
            assert array.dtype == tensor.numpy().dtype and array.shape == tuple(tensor.shape), key
            np.testing.assert_array_equal(array, tensor.numpy(), err_msg=key)


def test_smuggled_storage_bytes_are_refused_without_running(tmp_path):
    marker = tmp_path / "pwned"
    evil = legacy_bytes(_Payload(os.system, f"touch {marker}"))
    data = pickle.dumps({"atom_type": _SmuggledTensor(evil)}, protocol=4)
    holder = safe_load(data, "ZINC pickle")["atom_type"]  # nothing decoded yet
    with pytest.raises(DataError) as info:
        to_numpy(holder, "ZINC pickle", "molecules.zip member molecules/train.pickle")
    text = _error(info)
    assert "torch.load(weights_only=True) refuses" in text and "molecules/train.pickle" in text
    assert "delete it and download it again" in text and not marker.exists()
    with pytest.raises(AttributeError):  # the stock _load_from_bytes runs the payload (then the rebuild fails)
        pickle.loads(data)
    assert marker.exists()  # the test's premise holds


@pytest.mark.parametrize("inner, message", [
    (legacy_bytes({"a": torch.zeros(3)}), "holds a dict where a torch storage belongs"),
    (legacy_bytes(torch.zeros(3)), "holds a Tensor where a torch storage belongs"),
    (b"not a torch file", "torch.load(weights_only=True) refuses"),
], ids=["dict", "tensor", "not-torch"])  # stable ids: the pickled bytes hold memory addresses (pytest-xdist compares)
def test_storage_bytes_that_are_not_one_storage(inner, message):
    holder = safe_load(pickle.dumps(_SmuggledTensor(inner), protocol=4), "ZINC pickle")
    with pytest.raises(DataError) as info:
        to_numpy(holder, "ZINC pickle", "-")
    assert message in _error(info)


def test_tensor_arguments_are_checked():
    storage = safe_load(pickle.dumps(torch.arange(4)), "p").storage.data  # a genuine pickled storage
    ok = safe_load(pickle.dumps(_SmuggledTensor(storage, (2, 2), (2, 1)), protocol=4), "p")
    np.testing.assert_array_equal(to_numpy(ok, "p", "-"), [[0, 1], [2, 3]])
    with pytest.raises(DataError) as info:  # a view beyond the 4 stored elements
        to_numpy(safe_load(pickle.dumps(_SmuggledTensor(storage, (3, 2), (2, 1)), protocol=4), "p"), "p", "-")
    assert "outside its storage of 4 elements" in _error(info)
    for bad in (_SmuggledTensor(storage, ("2",), (1,)), _SmuggledTensor(storage, (2,), (1,), offset=-1),
                _SmuggledTensor(storage, (2,), (1,), hooks=collections.OrderedDict(a=1)),
                _SmuggledTensor(storage, (2,), (1,), hooks={})):
        with pytest.raises(DataError, match="arguments other than plain tensor data"):
            safe_load(pickle.dumps(bad, protocol=4), "p")
    with pytest.raises(DataError, match="holds a list where a torch tensor belongs"):
        to_numpy([1, 2], "p", "-")


# ---------------------------------------------------------------------------------------------------- workflow
@pytest.mark.slow
@needs_aqsol
@needs_index
def test_workflow_zinc_and_aqsol(tmp_path, distinct, full_zip):
    """Both datasets downloaded (from the local server, as ``mirror``), converted, split and trained by Snakemake
    under the benchmarking-gnns protocol; tables, parameter counts and a recomputed test MAE are checked."""
    import pandas as pd
    from test_download import LocalServer
    from test_raw_data_workflow import snakemake

    from gnnbench.data.batching import GraphLoader, model_dtypes
    from gnnbench.data.meta import read_meta
    from gnnbench.data.store import GraphStore

    server = LocalServer()
    try:
        mirror = serve(server, {"molecules.zip": full_zip, "aqsol_graph_raw.zip": aqsol_zip(), **real_indices()})
        small = {"epochs": 2, "batch_size": 128, "L": 2, "hidden_dim": 16, "out_dim": 16}
        gated, gcn = "molecules_graph_regression_GatedGCN_{}_100k", "molecules_graph_regression_GCN_{}_100k"
        suite = {"device": "cpu", "datasets": {name: {"generator": name.lower(), "params": {"mirror": mirror}}
                                               for name in ("ZINC", "AQSOL")},
                 "benchmarks": {name: {"protocol": "benchmarking-gnns", "seeds": [1],
                                       "models": {"GatedGCN": {"preset": gated.format(name), "set": small},
                                                  "GCN": {"preset": gcn.format(name), "set": small}}}
                                for name in ("ZINC", "AQSOL")}}
        # AQSOL's GatedGCN keeps the published architecture (only epochs and batch size change)
        suite["benchmarks"]["AQSOL"]["models"]["GatedGCN"]["set"] = {"epochs": 2, "batch_size": 128}
        result = snakemake(tmp_path, suite)
        assert result.returncode == 0, result.stderr[-3000:]
    finally:
        server.stop()
    published = {name: all_presets()[gated.format(name)]["total_params"] for name in ("ZINC", "AQSOL")}
    assert published == {"ZINC": 105735, "AQSOL": 108325}  # the presets (the released code's printed counts)
    for name, sizes in (("ZINC", [10000, 1000, 1000]), ("AQSOL", [996, 996, 996])):
        meta = read_meta(tmp_path / f"results/datasets/{name}")
        assert [meta.split_sizes[s] for s in SPLITS] == sizes
        # the published architecture built on the generated meta.json has the published parameter count
        assert count_parameters(build_model(run_config(gated.format(name)), meta)) == published[name]
        table = pd.read_csv(tmp_path / f"results/tables/{name}.csv")
        assert sorted(table["model"]) == ["GCN", "GatedGCN"] and (table["runs"] == 1).all()
        assert (table["metric"] == "mae").all() and (table["epochs_mean"] == 2).all()
        assert np.isfinite(table["test_metric_mean"]).all() and (table["test_metric_mean"] > 0).all()
    assert pd.read_csv(tmp_path / "results/tables/AQSOL.csv").set_index("model").loc["GatedGCN", "params"] == \
        published["AQSOL"]  # the run trained the unmodified architecture
    # AQSOL GatedGCN: the test MAE recomputed from the final weights, with targets from the raw test pickle
    run = tmp_path / "results/runs/AQSOL/GatedGCN/seed1/fold0"
    metrics = __import__("json").loads((run / "metrics.json").read_text())
    meta, columns = read_dataset(tmp_path / "results/datasets/AQSOL")
    model = build_model(metrics["config"], meta)
    model.load_state_dict(torch.load(run / "checkpoint.pt", map_location="cpu", weights_only=True)["model"])
    model.eval()
    raw = pickle.loads((REAL / "aqsol" / "test.pickle").read_bytes())  # trusted: the checked original
    targets = np.array([m[3] for m in raw if m[2].size and m[2].max() + 1 == len(m[0])], dtype=np.float32)
    test = torch.arange(1992, 2988)
    loader = GraphLoader(model_dtypes(GraphStore.from_columns(columns)), test, 128)
    with torch.no_grad():
        predictions = np.concatenate([model(batch).view(-1).numpy() for batch in loader])
    errors = np.abs(predictions - targets)
    per_batch = [errors[i:i + 128].mean() for i in range(0, errors.size, 128)]  # the benchmark's batch-mean MAE
    assert metrics["test"]["metric"] == pytest.approx(float(np.mean(per_batch)), rel=1e-5)
