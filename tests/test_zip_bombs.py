"""Zip bombs against every zip reader (gnnbench.data.archive): refused before decompressing, fast, in bounded memory.

The bombs are real zips written here byte by byte (local headers, central directory, end record) around one deflate
stream of 300 MB of zeros (~300 KB): declared honestly (refused by the size rule), or with a central directory that
lies about ``file_size`` (read no further than declared). Memory is measured in a subprocess (``ru_maxrss``), the
temporary file of the PyG reader by wrapping its writes. The real TU and CSL zips must still read byte for byte.
"""

from __future__ import annotations

import gzip
import io
import json
import struct
import subprocess
import sys
import textwrap
import time
import types
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from test_download import closed_port_url

from gnnbench.cli import main
from gnnbench.data import archive, download
from gnnbench.data.generators import heterophily, molecules, npz, ogbl_collab, released, tu
from gnnbench.errors import DataError

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real"
needs_real = pytest.mark.skipif(not (REAL / "tu").is_dir() or not (REAL / "csl").is_dir(),
                                reason="real TU / CSL zips not available (../shared/data/real is absent)")
ZEROS = 300 << 20  # what the bomb expands to
FIX = "the file is not genuine — delete it and download it again"


# ------------------------------------------------------------------------------------------------ zip writing
def deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


def entry(name: str, data: bytes, method: int = zipfile.ZIP_DEFLATED) -> tuple:
    """A member (name, method, crc, stored bytes, declared size) holding ``data``."""
    stored = deflate(data) if method == zipfile.ZIP_DEFLATED else data
    return name, method, zlib.crc32(data), stored, len(data)


@pytest.fixture(scope="module")
def zeros() -> tuple[int, bytes]:
    """CRC and deflate stream of 300 MB of zeros, computed once (in 4 MiB pieces: never 300 MB in memory)."""
    packer, crc, chunk, parts = zlib.compressobj(6, zlib.DEFLATED, -15), 0, bytes(1 << 22), []
    for _ in range(ZEROS >> 22):
        crc = zlib.crc32(chunk, crc)
        parts.append(packer.compress(chunk))
    parts.append(packer.flush())
    return crc, b"".join(parts)


def bomb(zeros, name: str, declared: int = ZEROS) -> tuple:
    crc, stored = zeros
    return name, zipfile.ZIP_DEFLATED, crc, stored, declared


def zip_bytes(entries: list[tuple]) -> bytes:
    """A zip of ``entries`` written byte by byte: local header + data per member, central directory, end record;
    the declared sizes are written as given (in both headers)."""
    out, central = bytearray(), bytearray()
    for name, method, crc, stored, size in entries:
        raw_name, offset = name.encode(), len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc, len(stored), size,
                           len(raw_name), 0) + raw_name + stored
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0x21, crc, len(stored), size,
                               len(raw_name), 0, 0, 0, 0, 0, offset) + raw_name
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central), len(out), 0)
    return bytes(out + central + end)


def tu_members() -> list[tuple]:
    return [entry("ENZYMES/ENZYMES_graph_indicator.txt", b"1\n1\n2\n"), entry("ENZYMES/ENZYMES_graph_labels.txt",
                                                                               b"1\n2\n")]


def pt(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


# The readers, each with a bomb in the member it reads: (reader on a path, the zip's entries around the bomb member).
def _readers(zeros) -> dict[str, tuple]:
    return {
        "tu": (lambda p: tu.read_tu_zip(p, "ENZYMES"), [*tu_members(), bomb(zeros, "ENZYMES/ENZYMES_A.txt")]),
        "released_pyg": (lambda p: released.read_pyg_zip(p, "PATTERN"), [bomb(zeros, "PATTERN_v2.pt")]),
        "released_csl": (released.read_csl_zip, [entry(released.CSL_LABELS, pt(torch.zeros(150).long())),
                                                 bomb(zeros, released.CSL_GRAPHS)]),
        "zinc": (molecules.read_zinc, [bomb(zeros, "molecules/train.pickle"),
                                       *(entry(f"molecules/{s}.pickle", b"\x80\x02]q\x00.") for s in ("val", "test"))]),
        "aqsol": (lambda p: molecules.read_aqsol(p), [bomb(zeros, "asqol_graph_raw/train.pickle"),
                                                      *(entry(f"asqol_graph_raw/{s}.pickle", b"\x80\x02]q\x00.")
                                                        for s in ("val", "test"))]),
        "ogbl_collab": (ogbl_collab.read_collab_zip, [
            bomb(zeros, "collab/raw/edge.csv.gz"),
            *(entry(f"collab/raw/{m}.csv.gz", gzip.compress(b"1\n")) for m in ogbl_collab.RAW_MEMBERS[1:]),
            *(entry(f"collab/split/time/{p}.pt", pt({})) for p in ogbl_collab.SPLIT_PARTS)]),
        "npz": (npz.read_npz, [bomb(zeros, "adj_data.npy")]),
        "heterophily": (lambda p: heterophily.read_heterophily(p, "tolokers"), [bomb(zeros, "node_features.npy")]),
    }


READERS = ("tu", "released_pyg", "released_csl", "zinc", "aqsol", "ogbl_collab", "npz", "heterophily")
BOMB_MEMBER = {"tu": "ENZYMES/ENZYMES_A.txt", "released_pyg": "PATTERN_v2.pt", "released_csl": released.CSL_GRAPHS,
               "zinc": "molecules/train.pickle", "aqsol": "asqol_graph_raw/train.pickle",
               "ogbl_collab": "collab/raw/edge.csv.gz", "npz": "adj_data.npy", "heterophily": "node_features.npy"}


def one_line(info) -> str:
    message = str(info.value)
    assert "\n" not in message
    return message


# ------------------------------------------------------------------------------------------------- the rule
def test_allowance_rule():
    assert archive.allowance(0) == archive.FLOOR == 64 << 20
    assert archive.allowance(200_000) == 64 << 20  # 50 MB by the ratio: the floor wins
    assert archive.allowance(1 << 20) == 250 << 20  # 250 × compressed
    assert archive.allowance(100 << 20) == archive.CAP == 8 << 30  # 25 GB by the ratio: capped


@needs_real
def test_real_zips_pass_and_read_byte_for_byte():
    """Every member of the real TU zips and of CSL.zip passes the rule and reads exactly what zipfile reads."""
    paths = sorted((REAL / "tu").glob("*.zip")) + [REAL / "csl" / "CSL.zip"]
    assert len(paths) == 5
    for path in paths:
        with zipfile.ZipFile(path) as bundle:
            for info in bundle.infolist():
                if not info.is_dir():
                    assert archive.read_member(bundle, info, f"zip {path}") == bundle.read(info), info.filename
    columns = tu.read_tu_zip(REAL / "tu" / "ENZYMES.zip", "ENZYMES")
    assert columns.num_nodes.sum() == 19580 and columns.num_nodes.size == 600  # the published counts
    assert released.read_csl_zip(REAL / "csl" / "CSL.zip").num_graphs == 150


@pytest.mark.parametrize("reader", READERS)
def test_bomb_is_refused_before_decompressing(tmp_path, zeros, reader):
    read, entries = _readers(zeros)[reader]
    path = tmp_path / "bomb.zip"
    path.write_bytes(zip_bytes(entries))
    assert path.stat().st_size < 400_000  # a 300 MB member in ~300 KB
    start = time.perf_counter()
    with pytest.raises(DataError) as info:
        read(path)
    seconds = time.perf_counter() - start
    message = one_line(info)
    allowed = archive.allowance(len(zeros[1]))
    assert f"{path}: member {BOMB_MEMBER[reader]} declares 314,572,800 bytes uncompressed from {len(zeros[1]):,} " \
           f"bytes, more than the {allowed:,} bytes allowed" in message
    assert message.endswith(FIX)
    assert seconds < 3, seconds  # nothing was decompressed (decompressing alone takes ~1 s, parsing far longer)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bomb.zip"]  # no temporary file left


def test_bombs_take_no_memory(tmp_path, zeros):
    """All readers on their bombs in one fresh process: peak RSS grows by < 100 MB over the imports (the unguarded
    TU reader took 3.7 GB on such a zip)."""
    readers = _readers(zeros)
    for name in READERS:
        (tmp_path / f"{name}.zip").write_bytes(zip_bytes(readers[name][1]))
    script = textwrap.dedent(f"""
        import json, resource, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import test_zip_bombs as T
        from gnnbench.errors import DataError
        readers = T._readers((0, b""))  # entries unused here: only the reader functions
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        refused = {{}}
        for name in T.READERS:
            try:
                readers[name][0]({str(tmp_path)!r} + "/" + name + ".zip")
                refused[name] = "read"
            except DataError as exc:
                refused[name] = str(exc)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({{"grew_kb": after - before, "refused": refused}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert all("a zip bomb" in message for message in result["refused"].values()), result["refused"]
    print(f"peak RSS growth on all bombs: {result['grew_kb'] / 1024:.1f} MB")
    assert result["grew_kb"] < 100 * 1024, result


def test_lying_central_directory_reads_no_more_than_declared(tmp_path, zeros, monkeypatch):
    """The directory declares 1,000 bytes for a member that inflates to 300 MB: the rule lets it through, reading
    stops at the declared size (zipfile's CRC check then fails): a one-line error, fast, no large temporary file."""
    path = tmp_path / "PATTERN_v2.zip"
    path.write_bytes(zip_bytes([bomb(zeros, "PATTERN_v2.pt", declared=1000)]))
    written = []

    class Counting:
        def __init__(self, inner):
            self.inner = inner

        def write(self, data):
            written.append(len(data))
            return self.inner.write(data)

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def __enter__(self):
            self.inner.__enter__()
            return self

        def __exit__(self, *exc):
            return self.inner.__exit__(*exc)

    real = released.tempfile.NamedTemporaryFile
    monkeypatch.setattr(released, "tempfile", types.SimpleNamespace(
        NamedTemporaryFile=lambda *a, **k: Counting(real(*a, **k))))
    start = time.perf_counter()
    with pytest.raises(DataError, match="PATTERN_v2.zip is not a readable zip archive .*CRC") as info:
        released.read_pyg_zip(path, "PATTERN")
    assert time.perf_counter() - start < 3
    one_line(info)
    assert sum(written) <= 1000  # not 300 MB
    assert sorted(p.name for p in tmp_path.iterdir()) == ["PATTERN_v2.zip"]
    tu_path = tmp_path / "ENZYMES.zip"
    tu_path.write_bytes(zip_bytes([*tu_members(), bomb(zeros, "ENZYMES/ENZYMES_A.txt", declared=1000)]))
    with pytest.raises(DataError, match="ENZYMES_A.txt cannot be read .*CRC") as info:
        tu.read_tu_zip(tu_path, "ENZYMES")
    one_line(info)


def test_no_more_bytes_than_declared_even_if_zipfile_gave_them():
    """The streaming guard itself: a member stream yielding more than its declared size is stopped once past it
    (CPython's zipfile cuts at the declared size; the guard does not rely on that)."""
    info = zipfile.ZipInfo("A.txt")
    info.compress_type, info.file_size, info.compress_size = zipfile.ZIP_DEFLATED, 10, 10

    class Overflowing:
        def open(self, member):
            return io.BytesIO(b"x" * (archive.CHUNK * 3))

    with pytest.raises(DataError, match=r"zip Z: member A.txt expands to more than the 10 bytes its zip directory "
                                        r"declares; the file is not genuine"):
        archive.read_member(Overflowing(), info, "zip Z")
    info.file_size = info.compress_size = archive.CHUNK * 3
    assert archive.read_member(Overflowing(), info, "zip Z") == b"x" * (archive.CHUNK * 3)


def test_other_methods_and_stored_lies_are_refused(tmp_path):
    path = tmp_path / "ENZYMES.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_BZIP2) as bundle:  # bzip2: no ratio bound, decompressed at once
        for name, _, _, _, _ in tu_members():
            bundle.writestr(name, b"1\n")
        bundle.writestr("ENZYMES/ENZYMES_A.txt", b"1, 2\n")
    with pytest.raises(DataError, match=r"member ENZYMES/ENZYMES_\w+.txt uses compression method 12, not stored or "
                                        r"deflated") as info:
        tu.read_tu_zip(path, "ENZYMES")
    assert one_line(info).endswith(FIX)
    name, method, crc, stored, _ = entry("ENZYMES/ENZYMES_A.txt", b"1, 2\n", zipfile.ZIP_STORED)
    path.write_bytes(zip_bytes([*tu_members(), (name, method, crc, stored, 5_000)]))  # stores 5, declares 5,000
    with pytest.raises(DataError, match=r"declares 5,000 bytes uncompressed from 5 bytes, more than the 5 bytes "
                                        r"allowed \(its stored size: it is not compressed\)"):
        tu.read_tu_zip(path, "ENZYMES")


def test_gzip_bomb_inside_a_zip_member(tmp_path):
    """OGB's .csv.gz members: the zip stores them uncompressed-ratio (gzip does not deflate again), so the gzip
    stream is bounded on its own: 300 MB of zeros gzipped is refused after at most the allowance, not parsed."""
    packer, parts = zlib.compressobj(6, zlib.DEFLATED, 31), []
    for _ in range(ZEROS >> 22):
        parts.append(packer.compress(bytes(1 << 22)))
    gz = b"".join(parts) + packer.flush()
    allowed = archive.allowance(len(gz))
    with pytest.raises(DataError, match=rf"member raw/edge.csv.gz is a gzip stream of {len(gz):,} bytes that "
                                        rf"expands to more than the {allowed:,} bytes allowed") as info:
        archive.read_gzip(gz, f"{ogbl_collab.WHAT} X: member raw/edge.csv.gz")
    assert one_line(info).endswith(FIX)
    assert archive.read_gzip(gzip.compress(b"1,2\n") * 2, "w") == b"1,2\n1,2\n"  # every gzip member is read


def test_torch_file_with_a_record_declaring_more_than_it_stores(tmp_path):
    """A ``.pt`` is itself a zip whose reader allocates what a record declares: checked before ``torch.load``."""
    data = bytearray(pt(torch.arange(10)))
    record = b"archive/data/0"
    at = data.rfind(b"PK\x01\x02", 0, data.rfind(record))  # the record's central directory entry
    assert data[at + 46:at + 46 + len(record)] == record
    struct.pack_into("<I", data, at + 24, 0xFFFF_0000)  # declared uncompressed size: ~4 GB
    path = tmp_path / "PATTERN_v2.zip"
    path.write_bytes(zip_bytes([entry("PATTERN_v2.pt", bytes(data))]))
    with pytest.raises(DataError, match=r"member PATTERN_v2.pt \(a torch.save zip\): member archive/data/0 declares "
                                        r"4,294,901,760 bytes uncompressed from 80 bytes") as info:
        released.read_pyg_zip(path, "PATTERN")
    assert one_line(info).endswith(FIX)


def test_cli_refuses_a_tu_bomb_from_a_mirror(server, tmp_path, zeros, monkeypatch, capsys):
    """Through the command: exit 1, one line on stderr, nothing written but the downloaded zip and its record."""
    monkeypatch.setattr(tu, "URL", closed_port_url().rsplit("/", 1)[0] + "/{name}.zip")
    monkeypatch.setattr(download, "time", types.SimpleNamespace(sleep=lambda seconds: None))
    monkeypatch.chdir(tmp_path)
    server.routes["/m/ENZYMES.zip"] = zip_bytes([*tu_members(), bomb(zeros, "ENZYMES/ENZYMES_A.txt")])
    code = main(["generate", "tu", "--name", "ENZYMES", "--set", "name=ENZYMES", "--set", f"mirror={server.url}/m",
                 "--out", "ds"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and err[0].startswith(f"gnnbench: error: {tu.WHAT} ")
    assert "member ENZYMES/ENZYMES_A.txt declares 314,572,800 bytes" in err[0] and err[0].endswith(FIX)
    assert not (tmp_path / "ds").exists()
    assert sorted(p.name for p in (tmp_path / "resources" / "raw" / "tu").iterdir()) == ["ENZYMES.zip",
                                                                                        "ENZYMES.zip.sha256"]


def test_npz_bomb_is_checked_before_numpy(tmp_path, zeros):
    """np.load would inflate the member itself: the npz reader checks the zip first (a real npz still reads)."""
    good = tmp_path / "cora.npz"
    adj = np.eye(3, dtype=np.float32)
    np.savez_compressed(good, adj_data=adj[adj != 0], adj_indices=np.arange(3), adj_indptr=np.arange(4),
                        adj_shape=np.array([3, 3]), attr_matrix=np.ones((3, 2), np.float32), labels=np.arange(3))
    graph = npz.read_npz(good)
    assert graph.adjacency.shape == (3, 3) and graph.labels.tolist() == [0, 1, 2]
