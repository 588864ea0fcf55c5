"""Downloader (gnnbench.data.download) against a local HTTP server on 127.0.0.1.

The server serves fixture files generated here in the real formats (gzipped IDX files, a cifar-10-python.tar.gz with
pickled batches) and can cut a response short (fewer bytes than Content-Length, then close) or answer 404. The
registries' MD5s are monkeypatched to the fixtures' MD5s; the library's canonical checksums are never faked.
The helpers (server, fixture writers) are also used by tests/test_superpixels.py.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import pickle
import socket
import struct
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from gnnbench.data import raw_images
from gnnbench.data.download import DownloadError, RawFile, candidate_urls, fetch, file_checksums, recorded_sha256
from gnnbench.errors import ConfigError, GnnbenchError


# ------------------------------------------------------------------------------------------- fixture file formats
def idx_bytes(array: np.ndarray, compress: bool = True) -> bytes:
    """An IDX file (uint8) as MNIST distributes it: magic 0x0000 08 ndim, big-endian sizes, data."""
    array = np.ascontiguousarray(array, dtype=np.uint8)
    raw = struct.pack(">I", 0x0800 | array.ndim) + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()
    return gzip.compress(raw, mtime=0) if compress else raw


def mnist_fixture(num_train: int = 12, num_test: int = 6) -> tuple[dict[str, bytes], tuple[np.ndarray, ...]]:
    """The four MNIST .gz files holding upsampled digits images (so SLIC has real strokes to segment)."""
    tr, trl, te, tel = raw_images.load_digits_28()
    arrays = (tr[:num_train], trl[:num_train], te[:num_test], tel[:num_test])
    names = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
             "t10k-labels-idx1-ubyte.gz")
    return {n: idx_bytes(a) for n, a in zip(names, arrays, strict=True)}, arrays


def cifar_fixture(per_batch: int = 2, seed: int = 0) -> tuple[bytes, tuple[np.ndarray, ...]]:
    """A cifar-10-python.tar.gz in the real layout; returns its bytes and the (N, 3072) data / labels it holds."""
    rng = np.random.default_rng(seed)
    buf = io.BytesIO()
    datas, labels = [], []
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        def add(name: str, obj: object) -> None:
            payload = pickle.dumps(obj, protocol=2)
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))

        for name in (*raw_images.CIFAR_TRAIN_BATCHES, "test_batch"):
            data = rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8)
            lab = rng.integers(0, 10, per_batch).tolist()
            add(name, {"batch_label": name, "labels": lab, "data": data, "filenames": [f"{name}_{i}.png"
                                                                                       for i in range(per_batch)]})
            datas.append(data)
            labels.append(np.asarray(lab, dtype=np.uint8))
        add("batches.meta", {"label_names": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog",
                                             "horse", "ship", "truck"], "num_cases_per_batch": per_batch})
    return buf.getvalue(), (np.concatenate(datas[:5]), np.concatenate(labels[:5]), datas[5], labels[5])


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


# ---------------------------------------------------------------------------------------------------- HTTP server
class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        server = self.server
        server.requests.append(self.path)
        plan = server.routes.get(self.path)
        if isinstance(plan, list):  # a sequence of answers, one per request; the last one repeats
            plan = plan.pop(0) if len(plan) > 1 else plan[0]
        if plan is None or isinstance(plan, int):
            self.send_error(plan or 404)
            return
        data, cut = plan if isinstance(plan, tuple) else (plan, None)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data if cut is None else data[:cut])
        self.wfile.flush()
        if cut is not None:  # announce len(data), send fewer bytes, close
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

    def log_message(self, *args) -> None:
        pass


class LocalServer:
    """``routes``: path → bytes | (bytes, bytes_to_send) | HTTP error code | [answer, ...] (one per request)."""

    def __init__(self) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.routes, self.httpd.requests = {}, []
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def routes(self) -> dict:
        return self.httpd.routes

    @property
    def requests(self) -> list[str]:
        return self.httpd.requests

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def closed_port_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/nothing-here.gz"


FAST = {"timeout": 5.0, "backoff": 0.0}


def _leftovers(directory) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if p.is_file())


# ---------------------------------------------------------------------------------------------------------- tests
def test_success_verifies_md5_and_reuses_without_network(server, tmp_path):
    files, _ = mnist_fixture()
    data = files["train-labels-idx1-ubyte.gz"]
    server.routes["/canon/train-labels-idx1-ubyte.gz"] = data
    raw = RawFile("mnist/train-labels-idx1-ubyte.gz", md5(data), (f"{server.url}/canon/train-labels-idx1-ubyte.gz",))
    path = fetch(raw, tmp_path, **FAST)
    assert path == tmp_path / "mnist" / "train-labels-idx1-ubyte.gz"
    assert path.read_bytes() == data
    assert _leftovers(tmp_path) == ["train-labels-idx1-ubyte.gz"]  # no .part left
    assert server.requests == ["/canon/train-labels-idx1-ubyte.gz"]
    assert file_checksums(path) == {"md5": md5(data), "sha256": hashlib.sha256(data).hexdigest()}
    server.stop()  # reuse must not touch the network
    assert fetch(raw, tmp_path, **FAST) == path
    assert path.read_bytes() == data


def test_mirror_is_tried_first(server, tmp_path):
    data = b"mirror bytes" * 100
    server.routes["/mirror/f.bin"] = data
    server.routes["/canon/f.bin"] = data
    raw = RawFile("src/f.bin", md5(data), (f"{server.url}/canon/f.bin",))
    assert candidate_urls(raw, f"{server.url}/mirror/") == [f"{server.url}/mirror/f.bin", f"{server.url}/canon/f.bin"]
    fetch(raw, tmp_path, mirror=f"{server.url}/mirror", **FAST)
    assert server.requests == ["/mirror/f.bin"]


def test_checksum_mismatch_raises_and_leaves_nothing(server, tmp_path):
    data = b"the wrong file"
    server.routes["/canon/train-images-idx3-ubyte.gz"] = data
    url = f"{server.url}/canon/train-images-idx3-ubyte.gz"
    raw = RawFile("mnist/train-images-idx3-ubyte.gz", "0" * 32, (url,))
    with pytest.raises(DownloadError) as info:
        fetch(raw, tmp_path, **FAST)
    msg = str(info.value)
    assert isinstance(info.value, GnnbenchError) and "\n" not in msg
    target = tmp_path / "mnist" / "train-images-idx3-ubyte.gz"
    assert str(target) in msg and url in msg
    assert f"expected MD5 {'0' * 32}" in msg and md5(data) in msg and "mirror" in msg
    assert _leftovers(tmp_path) == []


def test_existing_file_with_wrong_md5_is_an_error_not_overwritten(server, tmp_path):
    target = tmp_path / "mnist" / "x.gz"
    target.parent.mkdir()
    target.write_bytes(b"stale")
    raw = RawFile("mnist/x.gz", md5(b"fresh"), (f"{server.url}/x.gz",))
    with pytest.raises(DownloadError, match=r"existing file has MD5 .* expected .*delete it to download it again"):
        fetch(raw, tmp_path, **FAST)
    assert target.read_bytes() == b"stale" and server.requests == []


def test_interrupted_transfer_is_retried(server, tmp_path):
    data, _ = cifar_fixture()
    server.routes["/cifar-10-python.tar.gz"] = [(data, 100), data]  # first answer cut after 100 bytes
    raw = RawFile("cifar10/cifar-10-python.tar.gz", md5(data), (f"{server.url}/cifar-10-python.tar.gz",))
    path = fetch(raw, tmp_path, **FAST)
    assert path.read_bytes() == data and len(server.requests) == 2
    assert _leftovers(tmp_path) == ["cifar-10-python.tar.gz"]


def test_persistent_interruption_raises_after_retries(server, tmp_path):
    data = bytes(range(256)) * 50
    server.routes["/f.bin"] = (data, 1000)
    url = f"{server.url}/f.bin"
    raw = RawFile("src/f.bin", md5(data), (url,))
    with pytest.raises(DownloadError) as info:
        fetch(raw, tmp_path, retries=3, **FAST)
    msg = str(info.value)
    assert "download failed from every URL" in msg and url in msg and "3 attempts" in msg
    assert "got 1000 of 12800 bytes" in msg or "interrupted" in msg
    assert len(server.requests) == 3
    assert _leftovers(tmp_path) == []  # neither target nor .part


def test_server_error_is_retried_on_the_same_url(server, tmp_path):
    data = b"after a 503"
    server.routes["/f.bin"] = [503, data]
    raw = RawFile("src/f.bin", md5(data), (f"{server.url}/f.bin",))
    assert fetch(raw, tmp_path, **FAST).read_bytes() == data
    assert server.requests == ["/f.bin", "/f.bin"]


def test_404_falls_through_to_next_url(server, tmp_path):
    data = b"second url"
    server.routes["/b/f.bin"] = data
    raw = RawFile("src/f.bin", md5(data), (f"{server.url}/a/f.bin", f"{server.url}/b/f.bin"))
    assert fetch(raw, tmp_path, **FAST).read_bytes() == data
    assert server.requests == ["/a/f.bin", "/b/f.bin"]


def test_all_urls_failing_names_each(server, tmp_path):
    dead = closed_port_url()
    raw = RawFile("src/nothing-here.gz", md5(b""), (f"{server.url}/missing.gz", dead))
    with pytest.raises(DownloadError) as info:
        fetch(raw, tmp_path, **FAST)
    msg = str(info.value)
    assert f"{server.url}/missing.gz (HTTP 404" in msg
    assert f"{dead} (unreachable" in msg and "set `mirror`" in msg
    assert _leftovers(tmp_path) == []


def test_md5_none_records_sha256(server, tmp_path):
    data = b"unknown checksum" * 10
    server.routes["/u.bin"] = data
    raw = RawFile("other/u.bin", None, (f"{server.url}/u.bin",))
    path = fetch(raw, tmp_path, **FAST)
    sha = hashlib.sha256(data).hexdigest()
    assert recorded_sha256(path) == sha == file_checksums(path)["sha256"]
    server.stop()
    assert fetch(raw, tmp_path, **FAST) == path  # reused


def test_relative_path_must_stay_inside_raw_dir():
    with pytest.raises(ValueError, match="relative path inside raw_dir"):
        RawFile("../escape.gz", None, ())


def test_registries_hold_the_published_checksums():
    assert {k: f.md5 for k, f in raw_images.MNIST_FILES.items()} == {
        "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
        "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
        "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c"}
    assert raw_images.MNIST_FILES["t10k-images-idx3-ubyte.gz"].urls == (
        "http://yann.lecun.com/exdb/mnist/t10k-images-idx3-ubyte.gz",
        "https://ossci-datasets.s3.amazonaws.com/mnist/t10k-images-idx3-ubyte.gz")
    cifar = raw_images.CIFAR10_FILES["cifar-10-python.tar.gz"]
    assert cifar.md5 == "c58f30108f718f92721af3b95e74349a"
    assert cifar.urls == ("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",)
    assert cifar.relative_path == "cifar10/cifar-10-python.tar.gz"


def patch_registries(monkeypatch, mnist_files: dict[str, bytes] | None = None, cifar: bytes | None = None) -> None:
    """Point the registries' MD5s at fixture files (URLs stay canonical; tests pass a local mirror)."""
    for name, data in (mnist_files or {}).items():
        monkeypatch.setitem(raw_images.MNIST_FILES, name, dataclasses.replace(raw_images.MNIST_FILES[name],
                                                                              md5=md5(data)))
    if cifar is not None:
        name = "cifar-10-python.tar.gz"
        monkeypatch.setitem(raw_images.CIFAR10_FILES, name, dataclasses.replace(raw_images.CIFAR10_FILES[name],
                                                                                md5=md5(cifar)))
    for f in (*raw_images.MNIST_FILES.values(), *raw_images.CIFAR10_FILES.values()):
        monkeypatch.setitem(raw_images.RAW_FILES, f.relative_path, f)


def test_fetch_into_uses_registry_and_mirror(server, tmp_path, monkeypatch):
    files, arrays = mnist_fixture()
    patch_registries(monkeypatch, files)
    for name, data in files.items():
        server.routes[f"/m/{name}"] = data
    for name in files:
        raw_images.fetch_into(tmp_path, f"mnist/{name}", f"{server.url}/m/", **FAST)
    got = raw_images.load_mnist(tmp_path)
    for a, b in zip(got, arrays, strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ConfigError, match="'mnist/nope.gz' is not registered; known: cifar10/cifar-10-python"):
        raw_images.fetch_into(tmp_path, "mnist/nope.gz")


# ------------------------------------------------------------------------------- SHA-256: pinned and recorded
def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_pinned_sha256_accepts_the_right_file_and_verifies_on_reuse(server, tmp_path):
    data = b"pinned bytes" * 50
    server.routes["/p.bin"] = data
    raw = RawFile("src/p.bin", None, (f"{server.url}/p.bin",), sha256=sha(data))
    path = fetch(raw, tmp_path, **FAST)
    assert path.read_bytes() == data and recorded_sha256(path) == sha(data)
    server.stop()
    assert fetch(raw, tmp_path, **FAST) == path  # reused without the network


def test_wrong_pinned_sha256_tries_next_url_then_names_expected_and_got(server, tmp_path):
    good, bad = b"the genuine file", b"a tampered file"
    server.routes["/a/p.bin"] = bad
    server.routes["/b/p.bin"] = good
    raw = RawFile("src/p.bin", None, (f"{server.url}/a/p.bin", f"{server.url}/b/p.bin"), sha256=sha(good))
    assert fetch(raw, tmp_path, **FAST).read_bytes() == good  # the bad copy was rejected, the next URL used
    assert server.requests == ["/a/p.bin", "/b/p.bin"]

    other = tmp_path / "other"
    raw_bad = RawFile("src/p.bin", None, (f"{server.url}/a/p.bin",), sha256=sha(good))
    with pytest.raises(DownloadError) as info:
        fetch(raw_bad, other, **FAST)
    msg = str(info.value)
    assert "\n" not in msg and str(other / "src" / "p.bin") in msg
    assert f"expected SHA-256 {sha(good)}" in msg and sha(bad) in msg and "mirror" in msg
    assert _leftovers(other) == []  # neither the file, its record nor a .part


def test_pinned_sha256_and_md5_both_checked(server, tmp_path):
    data = b"both checksums"
    server.routes["/f.bin"] = data
    raw = RawFile("src/f.bin", md5(data), (f"{server.url}/f.bin",), sha256="0" * 64)
    with pytest.raises(DownloadError, match=f"expected SHA-256 {'0' * 64} but .* gave SHA-256 {sha(data)}"):
        fetch(raw, tmp_path, **FAST)
    assert _leftovers(tmp_path) == []


def test_existing_file_that_changed_since_it_was_recorded_is_an_error(server, tmp_path):
    data = b"recorded once" * 10
    server.routes["/u.bin"] = data
    raw = RawFile("other/u.bin", None, (f"{server.url}/u.bin",))
    path = fetch(raw, tmp_path, **FAST)
    path.write_bytes(b"changed afterwards")
    with pytest.raises(DownloadError) as info:
        fetch(raw, tmp_path, **FAST)
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg
    assert sha(b"changed afterwards") in msg and sha(data) in msg
    assert "delete it and its .sha256 record to download it again" in msg
    assert path.read_bytes() == b"changed afterwards" and server.requests == ["/u.bin"]  # not overwritten
    path.unlink()
    (path.parent / "u.bin.sha256").unlink()
    assert fetch(raw, tmp_path, **FAST).read_bytes() == data  # the documented fix works


def test_existing_file_with_wrong_pinned_sha256_is_an_error(server, tmp_path):
    target = tmp_path / "src" / "p.bin"
    target.parent.mkdir()
    target.write_bytes(b"placed by hand, wrong")
    raw = RawFile("src/p.bin", None, (f"{server.url}/p.bin",), sha256=sha(b"right"))
    with pytest.raises(DownloadError) as info:
        fetch(raw, tmp_path, **FAST)
    msg = str(info.value)
    assert f"existing file has SHA-256 {sha(b'placed by hand, wrong')}, expected the pinned {sha(b'right')}" in msg
    assert "delete it to download it again" in msg and server.requests == []
    assert not (tmp_path / "src" / "p.bin.sha256").exists()


def test_existing_file_placed_by_hand_gets_a_record_then_is_verified(tmp_path):
    target = tmp_path / "src" / "h.bin"
    target.parent.mkdir()
    target.write_bytes(b"by hand")
    raw = RawFile("src/h.bin", None, ("http://127.0.0.1:9/never",))
    assert fetch(raw, tmp_path, **FAST) == target
    assert recorded_sha256(target) == sha(b"by hand")
    target.write_bytes(b"by hand, edited")
    with pytest.raises(DownloadError, match="the file changed since then"):
        fetch(raw, tmp_path, **FAST)


def test_unreadable_record_is_an_error(tmp_path):
    target = tmp_path / "src" / "h.bin"
    target.parent.mkdir()
    target.write_bytes(b"data")
    (tmp_path / "src" / "h.bin.sha256").write_text("not a checksum\n")
    raw = RawFile("src/h.bin", None, ("http://127.0.0.1:9/never",))
    with pytest.raises(DownloadError, match=r"record .*h\.bin\.sha256 is unreadable .* delete both files"):
        fetch(raw, tmp_path, **FAST)
