"""Superpixel datasets (docs/datasets.md#superpixels-mnist-cifar-10-and-digits): parsers, SLIC loop, features, graphs.

Reference values are computed independently: IDX/CIFAR contents from the arrays the fixtures were written from
(CIFAR pixel (r, c, ch) = data[ch·1024 + 32r + c]), per-superpixel features with scipy.ndimage, the SLIC loop
without the grid cache, and the graph (σ, W, 8 most similar) with per-node Python loops. The downloads go through a
local HTTP server (tests/test_download.py) serving fixture files in the real formats.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import pickle
import tarfile

import numpy as np
import pytest
from scipy import ndimage
from test_download import cifar_fixture, idx_bytes, mnist_fixture, patch_registries

from gnnbench.data import raw_images
from gnnbench.data.catalog import describe_dataset
from gnnbench.data.download import DownloadError
from gnnbench.data.generators import get_generator, resolve_params
from gnnbench.data.generators import superpixels as sp
from gnnbench.data.meta import read_meta
from gnnbench.data.store import read_graph_columns
from gnnbench.errors import ConfigError, DataError
from gnnbench.pipeline import generate_dataset

SMALL = {"num_train": 6, "num_val": 3, "num_test": 4}


@pytest.fixture(scope="module")
def digits():
    return raw_images.load_digits_28()


# ---------------------------------------------------------------------------------------------------------- parsers
def test_read_idx_gz_and_plain(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (3, 28, 28), dtype=np.uint8)
    labels = np.array([7, 0, 9], dtype=np.uint8)
    (tmp_path / "i.gz").write_bytes(idx_bytes(images))
    (tmp_path / "l").write_bytes(idx_bytes(labels, compress=False))
    got = raw_images.read_idx(tmp_path / "i.gz")
    assert got.dtype == np.uint8 and got.shape == (3, 28, 28)
    np.testing.assert_array_equal(got, images)
    np.testing.assert_array_equal(raw_images.read_idx(tmp_path / "l"), labels)
    # header written by hand: magic 0x00000803 = uint8, 3 dims
    assert gzip.decompress((tmp_path / "i.gz").read_bytes())[:16] == bytes.fromhex("00000803000000030000001c0000001c")


def test_read_idx_errors(tmp_path):
    good = idx_bytes(np.zeros((2, 28, 28), np.uint8), compress=False)
    cases = {
        "magic.idx": (b"\x12\x34" + good[2:], "has magic 12340803, expected 0000TTDD"),
        "type.idx": (good[:2] + b"\x07" + good[3:], "type code 0x07 and 3 dims"),
        "short.idx": (good[:-5], "holds 1563 data bytes, expected 1568 for shape (2, 28, 28)"),
        "head.idx": (good[:9], "truncated inside its header"),
        "gz.idx": (b"\x1f\x8b" + b"junk" * 5, "is a corrupt gzip file"),
    }
    for name, (data, expected) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(DataError) as info:
            raw_images.read_idx(tmp_path / name)
        assert expected in str(info.value) and str(tmp_path / name) in str(info.value)
        assert "download it again" in str(info.value)
    with pytest.raises(DataError, match="does not exist; download it first"):
        raw_images.read_idx(tmp_path / "missing.gz")


def test_load_mnist_checks_shapes(tmp_path):
    files, _ = mnist_fixture(4, 2)
    (tmp_path / "mnist").mkdir()
    for name, data in files.items():
        (tmp_path / "mnist" / name).write_bytes(data)
    (tmp_path / "mnist" / "t10k-labels-idx1-ubyte.gz").write_bytes(idx_bytes(np.zeros(3, np.uint8)))
    with pytest.raises(DataError, match="t10k has 2 images but 3 labels"):
        raw_images.load_mnist(tmp_path)
    (tmp_path / "mnist" / "t10k-images-idx3-ubyte.gz").write_bytes(idx_bytes(np.zeros((2, 27, 28), np.uint8)))
    with pytest.raises(DataError, match=r"holds uint8 \(2, 27, 28\), expected uint8 images \(N, 28, 28\)"):
        raw_images.load_mnist(tmp_path)


def test_load_cifar10_matches_the_batch_layout(tmp_path):
    data, (train_data, train_labels, test_data, test_labels) = cifar_fixture(per_batch=3)
    path = tmp_path / "cifar-10-python.tar.gz"
    path.write_bytes(data)
    tr, trl, te, tel = raw_images.load_cifar10(path)
    assert tr.shape == (15, 32, 32, 3) and te.shape == (3, 32, 32, 3) and tr.dtype == np.uint8
    np.testing.assert_array_equal(trl, train_labels)
    np.testing.assert_array_equal(tel, test_labels)
    for images, flat in ((tr, train_data), (te, test_data)):
        for i, r, c, ch in [(0, 0, 0, 0), (1, 5, 31, 2), (2, 31, 7, 1), (len(flat) - 1, 16, 16, 0)]:
            assert images[i, r, c, ch] == flat[i, ch * 1024 + 32 * r + c]  # R, G, B planes, row-major


def _tarball(tmp_path, members: dict[str, object], link: str | None = None):
    path = tmp_path / "bad.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, obj in members.items():
            payload = obj if isinstance(obj, bytes) else pickle.dumps(obj, protocol=2)
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
        if link:
            info = tarfile.TarInfo(f"cifar-10-batches-py/{link}")
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(info)
    return path


class _Evil:
    def __reduce__(self):
        return (print, ("pwned",))


def test_load_cifar10_rejects_unsafe_or_corrupt_archives(tmp_path):
    batch = {"data": np.zeros((1, 3072), np.uint8), "labels": [1]}
    with pytest.raises(DataError, match="has no member cifar-10-batches-py/data_batch_2"):
        raw_images.load_cifar10(_tarball(tmp_path, {"data_batch_1": batch}))
    with pytest.raises(DataError, match="data_batch_1 is not a regular file"):
        raw_images.load_cifar10(_tarball(tmp_path, {}, link="data_batch_1"))
    unsafe = r"data_batch_1 is not a valid batch .*refusing to load (__builtin__|builtins)\.print"
    with pytest.raises(DataError, match=unsafe):
        raw_images.load_cifar10(_tarball(tmp_path, {"data_batch_1": {"data": _Evil(), "labels": [1]}}))
    with pytest.raises(DataError, match=r"holds data \(1, 100\) and 1 labels, expected \(N, 3072\)"):
        raw_images.load_cifar10(_tarball(tmp_path, {"data_batch_1": {"data": np.zeros((1, 100), np.uint8),
                                                                    "labels": [1]}}))
    (tmp_path / "x.tar.gz").write_bytes(b"not a tarball")
    with pytest.raises(DataError, match="x.tar.gz cannot be read"):
        raw_images.load_cifar10(tmp_path / "x.tar.gz")


def test_digits_upsampled(digits):
    tr, trl, te, tel = digits
    assert tr.shape == (1500, 28, 28) and te.shape == (297, 28, 28) and tr.dtype == np.uint8
    assert tr.max() == 255 and tr.min() == 0
    from sklearn.datasets import load_digits
    ref = load_digits()
    np.testing.assert_array_equal(np.concatenate([trl, tel]), ref.target)
    # corners of the 28×28 image are the 8×8 corners scaled to 0..255 (bilinear, edge mode)
    np.testing.assert_array_equal(tr[:, 0, 0], np.rint(ref.images[:1500, 0, 0] / 16 * 255).astype(np.uint8))


# ------------------------------------------------------------------------------------------------ SLIC and features
def _naive_slic(img, n_sp, compactness, q):
    """The loop without the grid cache: SLIC at every q, then scikit-image 0.15's connectivity size H·W/q."""
    from skimage.color import rgb2lab
    from skimage.segmentation import slic

    work = rgb2lab(img.astype(np.float64)) if img.ndim == 3 else img.astype(np.float64)
    span = work.max() - work.min()
    while True:
        raw = slic(work, n_segments=q, compactness=compactness / span, max_num_iter=10, sigma=0, convert2lab=False,
                   start_label=0, enforce_connectivity=False, channel_axis=-1 if img.ndim == 3 else None)
        labels = sp.enforce_connectivity(raw, work.shape[0] * work.shape[1] / q)
        if labels.max() + 1 <= n_sp:
            return labels
        q -= 1


def test_slic_loop_bounds_labels_and_grid_cache(digits):
    rng = np.random.default_rng(1)
    for i in range(8):
        img = digits[0][i].astype(np.float32) / 255
        for n_sp in (75, 30):
            labels = sp.slic_segments(img, n_sp, 0.25, n_sp + 20)
            n = labels.max() + 1
            assert 0 < n <= n_sp and set(np.unique(labels)) == set(range(n))
            np.testing.assert_array_equal(labels, _naive_slic(img, n_sp, 0.25, n_sp + 20))
    for _ in range(3):
        img = rng.random((32, 32, 3))
        labels = sp.slic_segments(img, 150, 10.0, 200)
        assert labels.max() + 1 <= 150 and set(np.unique(labels)) == set(range(labels.max() + 1))
        np.testing.assert_array_equal(labels, _naive_slic(img, 150, 10.0, 200))


def test_connectivity_step_is_slics_own(digits):
    """With the modern segment size (H·W / number of seeds) our connectivity call reproduces slic() exactly."""
    from skimage.segmentation import slic

    for i, q in ((0, 95), (1, 80), (2, 60)):
        img = digits[0][i] / 255.0
        seeds = np.zeros((28, 28))[tuple(slice(*k) for k in sp._grid_key((28, 28), q)[1:])].size
        kw = dict(n_segments=q, compactness=0.25, max_num_iter=10, sigma=0, start_label=0, channel_axis=None)
        full = slic(img, enforce_connectivity=True, **kw)
        ours = sp.enforce_connectivity(slic(img, enforce_connectivity=False, **kw), 28 * 28 / seeds)
        np.testing.assert_array_equal(ours, full)


def test_features_match_scipy_ndimage(digits):
    seed, index = 5, 3
    img8 = digits[0][index]
    img = img8.astype(np.float32) / 255
    labels = sp.slic_segments(img, 75, 0.25, 95)
    n = labels.max() + 1
    ids = np.arange(n)
    means, coords = sp.superpixel_features(img, labels)
    np.testing.assert_allclose(means[:, 0], ndimage.mean(img, labels, ids), rtol=1e-6, atol=1e-7)
    ref_com = np.array([ndimage.center_of_mass(labels == s) for s in ids])
    np.testing.assert_allclose(coords, ref_com, rtol=1e-12, atol=1e-12)
    # the generator's node features: permuted by SeedSequence(seed, spawn_key=(0, index)), coordinates / 28
    cols = sp.build_superpixel_graphs(img8[None], np.array([4]), index, 0, seed, 75, 0.25, 95)
    order = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0, index))).permutation(n)
    expected = np.concatenate([means[order], ref_com[order] / 28], 1)
    assert cols.node["x"].dtype == np.float32 and cols.node["x"].shape == (n, 3)
    np.testing.assert_allclose(cols.node["x"], expected, rtol=1e-6, atol=1e-7)
    assert cols.graph["y"].tolist() == [4]


def test_rgb_features_are_means_in_rgb():
    rng = np.random.default_rng(2)
    img8 = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
    cols = sp.build_superpixel_graphs(img8[None], np.array([0]), 0, 1, 0, 150, 10.0, 200)
    labels = sp.slic_segments(img8.astype(np.float32) / 255, 150, 10.0, 200)
    n = labels.max() + 1
    order = np.random.default_rng(np.random.SeedSequence(0, spawn_key=(1, 0))).permutation(n)
    x = cols.node["x"]
    assert x.shape == (n, 5)
    for c in range(3):
        ref = ndimage.mean(img8[..., c].astype(np.float64) / 255, labels, np.arange(n))[order]
        np.testing.assert_allclose(x[:, c], ref, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------------- graph construction
def _reference_graph(coords: np.ndarray):
    """(src, dst, w) by loops: σ_i, W symmetrised, 8 most similar other nodes (ties by index), or complete n ≤ 9."""
    n = len(coords)
    p = coords.astype(np.float64)
    d = [[math.dist(p[i], p[j]) for j in range(n)] for i in range(n)]
    sigma = [sum(sorted(row)[:9]) / 8 + 1e-8 if n >= 9 else 1 + 1e-8 for row in d]
    a = [[math.exp(-((d[i][j] / sigma[i]) ** 2)) for j in range(n)] for i in range(n)]
    w = [[0.0 if i == j else (a[i][j] + a[j][i]) / 2 for j in range(n)] for i in range(n)]
    src, dst, val = [], [], []
    for i in range(n):
        others = [j for j in range(n) if j != i]
        if n > 9:
            others = sorted(others, key=lambda j: (-w[i][j], j))[:8]
        for j in others:
            src.append(i)
            dst.append(j)
            val.append(w[i][j])
    return np.array(src), np.array(dst), np.array(val), np.array(w)


def test_knn_graph_matches_brute_force():
    rng = np.random.default_rng(3)
    sizes = np.array([12, 5, 9, 10, 30, 12, 75, 1, 2, 41])
    coords = rng.random((sizes.sum(), 2)).astype(np.float32)
    coords[5:7] = coords[4]  # ties in the first 12-node graph (equal W); ties broken by index
    num_edges, src, dst, w = sp.knn_graph(sizes, coords)
    np.testing.assert_array_equal(num_edges, [n * 8 if n > 9 else n * (n - 1) for n in sizes])
    node_ptr, edge_ptr = np.concatenate([[0], np.cumsum(sizes)]), np.concatenate([[0], np.cumsum(num_edges)])
    for g, n in enumerate(sizes):
        rs, rd, rv, wmat = _reference_graph(coords[node_ptr[g]:node_ptr[g + 1]])
        e = slice(edge_ptr[g], edge_ptr[g + 1])
        np.testing.assert_array_equal(src[e], rs)
        np.testing.assert_array_equal(dst[e], rd)
        np.testing.assert_allclose(w[e], rv, rtol=1e-12, atol=1e-300)
        if n > 1:
            full = sp.affinity(coords[None, node_ptr[g]:node_ptr[g + 1]])[0]
            np.testing.assert_allclose(full, wmat, rtol=1e-12, atol=1e-300)
            np.testing.assert_array_equal(full, full.T)
            assert (np.diag(full) == 0).all()


# ----------------------------------------------------------------------------------------- generators, end to end
def _digits_params(**extra):
    return {**SMALL, **extra}


def test_determinism_workers_and_chunking(tmp_path, monkeypatch):
    a = generate_dataset("superpixels_digits", "DIGITS", _digits_params(workers=1), 7, tmp_path / "a")
    monkeypatch.setattr(sp, "CHUNK", 2)
    b = generate_dataset("superpixels_digits", "DIGITS", _digits_params(workers=2), 7, tmp_path / "b")
    c = generate_dataset("superpixels_digits", "DIGITS", _digits_params(workers=1), 8, tmp_path / "c")
    assert (tmp_path / "a" / "graphs.parquet").read_bytes() == (tmp_path / "b" / "graphs.parquet").read_bytes()
    assert (tmp_path / "a" / "meta.json").read_text() == (tmp_path / "b" / "meta.json").read_text()
    assert a.checksum == b.checksum != c.checksum  # the seed changes the node order
    ca, cc = (read_graph_columns(tmp_path / d / "graphs.parquet") for d in "ac")
    np.testing.assert_array_equal(ca.num_nodes, cc.num_nodes)  # same segmentation, other permutation
    assert not np.array_equal(ca.node["x"], cc.node["x"])
    np.testing.assert_array_equal(np.sort(ca.node["x"], 0), np.sort(cc.node["x"], 0))


def test_split_prefixes(tmp_path, digits):
    _, trl, _, tel = digits
    generate_dataset("superpixels_digits", "D1", {"num_train": 6, "num_val": 3, "num_test": 4}, 1, tmp_path / "1")
    generate_dataset("superpixels_digits", "D2", {"num_train": 2, "num_val": 5, "num_test": 2}, 1, tmp_path / "2")
    c1, c2 = (read_graph_columns(tmp_path / d / "graphs.parquet") for d in "12")
    # stored order train, val, test; val = first num_val training images, train = the next num_train
    np.testing.assert_array_equal(c1.graph["y"], np.concatenate([trl[3:9], trl[:3], tel[:4]]))
    np.testing.assert_array_equal(c2.graph["y"], np.concatenate([trl[5:7], trl[:5], tel[:2]]))

    def graph(cols, i):
        g = cols.graph_at(i)
        return g["x"], g["src"], g["dst"], g["edge_attr"]

    pairs = [(2, 0), (3, 1),  # images 5, 6: train in D1 (positions 2, 3), train in D2 (0, 1)
             (6, 2), (7, 3), (8, 4),  # images 0..2: val in both
             (0, 5), (1, 6),  # images 3, 4: train in D1, val in D2
             (9, 7), (10, 8)]  # test images 0, 1
    for i, j in pairs:
        for u, v in zip(graph(c1, i), graph(c2, j), strict=True):
            np.testing.assert_array_equal(u, v)


def test_digits_end_to_end_meta_and_statistics(tmp_path):
    meta = generate_dataset("superpixels_digits", "DIGITS", _digits_params(), 0, tmp_path)
    on_disk = read_meta(tmp_path)
    assert on_disk.task == "graph_classification" and on_disk.num_outputs == 10
    assert on_disk.loss == "cross_entropy" and on_disk.metric == "accuracy"
    assert on_disk.split_sizes == {"train": 6, "val": 3, "test": 4} and on_disk.num_graphs == 13
    cat = describe_dataset("MNIST")
    assert on_disk.node_features == cat.node_features and on_disk.edge_features == cat.edge_features
    assert set(meta.statistics) >= {"all", "train", "val", "test"}
    assert "workers" not in on_disk.source["params"] and on_disk.source["params"]["n_sp"] == 75
    cols = read_graph_columns(tmp_path / "graphs.parquet")
    n = cols.num_nodes
    assert (n <= 75).all() and (n >= 1).all()
    np.testing.assert_array_equal(cols.num_edges, np.where(n > 9, 8 * n, n * (n - 1)))
    assert cols.node["x"].shape == (n.sum(), 3) and cols.edge["edge_attr"].shape == (cols.num_edges.sum(), 1)
    x = cols.node["x"]
    assert (x >= 0).all() and (x <= 1).all()
    w = cols.edge["edge_attr"]
    assert (w > 0).all() and (w <= 1).all()
    # the paper's averages imply 8 out-edges per node: 564.53 / 70.57 and 941.07 / 117.63
    assert abs(564.53 / 70.57 - 8) < 0.001 and abs(941.07 / 117.63 - 8) < 0.001
    stats = json.loads((tmp_path / "meta.json").read_text())["statistics"]["all"]
    assert json.dumps(stats)  # present and serialisable


def test_parameter_checks():
    mnist = get_generator("superpixels_mnist")
    cifar = get_generator("superpixels_cifar10")
    digits = get_generator("superpixels_digits")
    assert resolve_params(cifar, None, "w")["compactness"] == 10
    assert resolve_params(cifar, {"compactness": 20}, "w")["compactness"] == 20
    with pytest.raises(ConfigError, match=r"w.compactness: expected a positive integer, got 2.5"):
        resolve_params(cifar, {"compactness": 2.5}, "w")
    with pytest.raises(ConfigError, match=r"w.num_train: num_val \+ num_train = 60001 but MNIST has 60000"):
        resolve_params(mnist, {"num_train": 55001}, "w")
    with pytest.raises(ConfigError, match=r"w.num_test: 11000 but CIFAR-10 has 10000 test images"):
        resolve_params(cifar, {"num_test": 11000}, "w")
    with pytest.raises(ConfigError, match=r"w.compactness: must be > 0, got 0.0"):
        resolve_params(digits, {"compactness": 0}, "w")
    with pytest.raises(ConfigError, match=r"w.n_sp: 785 must lie in 1..784"):
        resolve_params(digits, {"n_sp": 785}, "w")
    assert digits.raw_files is None and [f.relative_path for f in mnist.raw_files({})] == [
        "mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz", "mnist/t10k-images-idx3-ubyte.gz",
        "mnist/t10k-labels-idx1-ubyte.gz"]


def test_mnist_download_and_generate_through_local_server(server, tmp_path, monkeypatch):
    files, (tr, trl, te, tel) = mnist_fixture(8, 3)
    patch_registries(monkeypatch, files)
    for name, data in files.items():
        server.routes[f"/mirror/{name}"] = data
    params = {"num_train": 5, "num_val": 2, "num_test": 3, "mirror": f"{server.url}/mirror/"}
    meta = generate_dataset("superpixels_mnist", "MNIST", params, 111, tmp_path / "ds", raw_dir=tmp_path / "raw")
    assert sorted(server.requests) == sorted(f"/mirror/{n}" for n in files)
    assert meta.split_sizes == {"train": 5, "val": 2, "test": 3}
    assert "mirror" not in meta.source["params"]
    assert meta.source["raw_files"]["mnist/train-images-idx3-ubyte.gz"] == raw_images.MNIST_FILES[
        "train-images-idx3-ubyte.gz"].md5
    cols = read_graph_columns(tmp_path / "ds" / "graphs.parquet")
    np.testing.assert_array_equal(cols.graph["y"], np.concatenate([trl[2:7], trl[:2], tel[:3]]))
    assert cols.node["x"].shape[1] == 3
    # the same images through the offline digits path give the same graphs (same pixels, same seeding)
    generate_dataset("superpixels_digits", "D", {"num_train": 5, "num_val": 2, "num_test": 3}, 111, tmp_path / "d")
    assert read_meta(tmp_path / "d").checksum == meta.checksum
    # a corrupt cached file is reported, not silently replaced
    (tmp_path / "raw" / "mnist" / "t10k-labels-idx1-ubyte.gz").write_bytes(b"corrupt")
    with pytest.raises(DownloadError, match=r"t10k-labels-idx1-ubyte.gz: existing file has MD5 "):
        generate_dataset("superpixels_mnist", "MNIST", params, 111, tmp_path / "ds2", raw_dir=tmp_path / "raw")


def test_cifar_download_and_generate_through_local_server(server, tmp_path, monkeypatch):
    tarball, (train_data, train_labels, test_data, test_labels) = cifar_fixture(per_batch=2, seed=4)
    patch_registries(monkeypatch, cifar=tarball)
    server.routes["/c/cifar-10-python.tar.gz"] = [(tarball, 50), tarball]  # first transfer interrupted
    params = {"num_train": 3, "num_val": 2, "num_test": 2, "mirror": f"{server.url}/c"}
    meta = generate_dataset("superpixels_cifar10", "CIFAR10", params, 111, tmp_path / "ds", raw_dir=tmp_path / "raw")
    assert len(server.requests) == 2 and (tmp_path / "raw" / "cifar10" / "cifar-10-python.tar.gz").is_file()
    assert meta.node_features == describe_dataset("CIFAR10").node_features
    cols = read_graph_columns(tmp_path / "ds" / "graphs.parquet")
    np.testing.assert_array_equal(cols.graph["y"], np.concatenate([train_labels[2:5], train_labels[:2],
                                                                   test_labels[:2]]))
    n = cols.num_nodes
    assert cols.node["x"].shape[1] == 5 and (n <= 150).all()
    np.testing.assert_array_equal(cols.num_edges, np.where(n > 9, 8 * n, n * (n - 1)))
