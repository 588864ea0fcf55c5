"""Reading zip members (and gzip streams inside them) with a bound on what they may expand to.

A download is not trusted until it is read: a zip's central directory states each member's uncompressed size
(``file_size``) and its stored size (``compress_size``), and a "zip bomb" pairs a small ``compress_size`` with a huge
``file_size`` (300 MB of zeros deflate to ~300 KB). Every zip reader of gnnbench reads members through this module:

* :func:`check_member` refuses a member before a byte is decompressed when its compression method is neither stored
  nor deflated (bzip2 and LZMA have no ratio bound and Python decompresses a whole input chunk of them at once; every
  published file uses deflate), when it is stored but declares more bytes than it stores, or when its declared
  ``file_size`` exceeds its *allowance* ``min(CAP, max(FLOOR, RATIO × compress_size))``;
* :func:`read_member` / :func:`copy_member` then stream the member in chunks and fail as soon as more bytes come out
  than the declared size (a central directory that lies about ``file_size``); Python's :mod:`zipfile` cuts the output
  at the declared size and reports a bad CRC itself, the check here does not depend on that;
* :func:`read_gzip` bounds a gzip stream held in memory (OGB's ``.csv.gz`` members) by the same rule;
* :func:`open_npz` opens a NumPy ``.npz`` (a zip) after checking its members, without pickles;
* :func:`check_zip` checks the records of a ``.pt`` file in ``torch.save``'s zip format before ``torch.load``, whose
  reader allocates what a record declares.

The numbers, from the real zips (``infolist()`` of the TU zips ENZYMES, PROTEINS, PROTEINS_full, IMDB-BINARY and of
the benchmark's CSL.zip, all deflated):

* bulk data compresses 5–27×: edge lists ``*_A.txt`` 4.8–8.0×, node attributes 11–15×, CSL's pickle 27×;
* only small, run-like files compress more: graph indicators 44–73×, graph labels up to 100× (IMDB-BINARY, 2 KB);
  an indicator shaped like REDDIT-MULTI-5K's (5,000 graphs of ~500 nodes, 12 MB) deflates 431×;
* deflate cannot exceed ~1032× (258-byte matches at best); 300 MB of zeros deflate 1029×.

So :data:`FLOOR` = 64 MiB lets any member of up to 64 MiB through whatever its ratio (the run-like files above are at
most ~28 MB: REDDIT-MULTI-12K's indicator, 4.7 M lines), :data:`RATIO` = 250 is ~10× the largest ratio of any bulk
member and 4× below deflate's limit (a bomb needs ≥ 250 bytes of input per byte refused above the floor), and
:data:`CAP` = 8 GiB bounds every member whatever its stored size: the largest published members gnnbench reads are
PyG's ``TSP_v2.pt`` (~2.5 GB: 12,000 graphs × ~6,900 k-NN edges of int64 indices, an attribute and a label) and the
ZINC-full pickle. A refusal is a one-line :class:`DataError` naming the zip, the member, the declared and the allowed
size, ending "the file is not genuine — delete it and download it again".
"""

from __future__ import annotations

import gzip
import io
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from gnnbench.errors import DataError

FLOOR = 64 << 20  # a member may always expand to 64 MiB
RATIO = 250  # ... or to 250 × its compressed size
CAP = 8 << 30  # ... but never beyond 8 GiB
CHUNK = 1 << 22  # bytes decompressed per read
FIX = "the file is not genuine — delete it and download it again"
_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}


def allowance(compressed: int) -> int:
    """The most bytes a member stored in ``compressed`` bytes may expand to (module doc)."""
    return min(CAP, max(FLOOR, RATIO * max(int(compressed), 0)))


def _size(n: int) -> str:
    return f"{n:,} bytes"


def check_member(info: zipfile.ZipInfo, where: str) -> None:
    """Refuse ``info``, a member of the zip ``where`` names (e.g. ``"TU zip /raw/tu/DD.zip"``), before reading it:
    an unsupported compression method, a stored member declaring more than it stores, or a declared size above
    its allowance."""
    member = f"{where}: member {info.filename}"
    if info.compress_type not in _METHODS:
        raise DataError(f"{member} uses compression method {info.compress_type}, not stored or deflated (which every "
                        f"published file uses, and which bounds what a member expands to); {FIX}")
    allowed = info.compress_size if info.compress_type == zipfile.ZIP_STORED else allowance(info.compress_size)
    if info.file_size > allowed:
        rule = ("its stored size: it is not compressed" if info.compress_type == zipfile.ZIP_STORED else
                f"max({FLOOR >> 20} MiB, {RATIO} × compressed), at most {CAP >> 30} GiB")
        raise DataError(f"{member} declares {_size(info.file_size)} uncompressed from {_size(info.compress_size)}, "
                        f"more than the {_size(allowed)} allowed ({rule}): a zip bomb or a damaged zip; {FIX}")


@contextmanager
def open_npz(path: str | Path, what: str, fix: str) -> Iterator:
    """``np.load(path, allow_pickle=False)`` (no object arrays, so no code runs) after :func:`check_member` on every
    member. A missing file, a damaged zip or a member NumPy cannot read, inside the ``with`` block too, is a
    one-line :class:`DataError` naming ``what`` and ``path`` and ending with ``fix``."""
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise DataError(f"{what} {path} does not exist; download it first")
    try:
        with zipfile.ZipFile(path) as bundle:  # refuse a bomb before NumPy decompresses a member
            for info in bundle.infolist():
                check_member(info, f"{what} {path}")
        with np.load(path, allow_pickle=False) as archive:
            yield archive
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise DataError(f"{what} {path} is not a readable npz archive ({reason}); {fix}") from None


def check_zip(source: str | Path | BinaryIO, where: str) -> None:
    """Check every member of a file in zip format (e.g. a ``.pt`` of ``torch.save``, whose loader allocates what a
    record declares) before another reader opens it. A file object is rewound; a file that is no zip is left to its
    reader."""
    position = source.tell() if hasattr(source, "tell") else None
    try:
        if zipfile.is_zipfile(source):
            if position is not None:
                source.seek(position)
            with zipfile.ZipFile(source) as bundle:
                for info in bundle.infolist():
                    check_member(info, where)
    finally:
        if position is not None:
            source.seek(position)


def _chunks(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str):
    """The member's bytes in chunks of at most :data:`CHUNK`, never more than its declared size in all."""
    check_member(info, where)
    left = info.file_size
    with archive.open(info) as member:
        while True:
            chunk = member.read(min(CHUNK, left + 1))
            if not chunk:
                return
            left -= len(chunk)
            if left < 0:
                raise DataError(f"{where}: member {info.filename} expands to more than the "
                                f"{_size(info.file_size)} its zip directory declares; {FIX}")
            yield chunk


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo | str, where: str) -> bytes:
    """The bytes of one member (a :class:`~zipfile.ZipInfo` or a name) of the zip ``where`` names, checked and
    bounded (module doc).

    Size refusals are :class:`DataError`; a damaged member raises what :mod:`zipfile` raises (``BadZipFile``,
    ``zlib.error``, ``EOFError``), for the caller's own message."""
    if isinstance(info, str):
        info = archive.getinfo(info)
    buffer = io.BytesIO()
    for chunk in _chunks(archive, info, where):
        buffer.write(chunk)
    return buffer.getvalue()


def copy_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, out: BinaryIO, where: str) -> None:
    """Write one member to ``out`` (e.g. a temporary file), checked and bounded like :func:`read_member`."""
    for chunk in _chunks(archive, info, where):
        out.write(chunk)


def read_gzip(data: bytes, where: str) -> bytes:
    """The decompressed content of a gzip stream (all members) held in memory, at most
    ``allowance(len(data))`` bytes; more is a one-line :class:`DataError` naming ``where`` (e.g. "OGBL-COLLAB zip
    X: member raw/edge.csv.gz"). A damaged stream raises what :mod:`gzip` raises (``BadGzipFile``, ``zlib.error``,
    ``EOFError``)."""
    allowed = allowance(len(data))
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
        out = stream.read(allowed + 1)  # GzipFile.read(n) decompresses at most n bytes
    if len(out) > allowed:
        raise DataError(f"{where} is a gzip stream of {_size(len(data))} that expands to more than the "
                        f"{_size(allowed)} allowed (max({FLOOR >> 20} MiB, {RATIO} × compressed), at most "
                        f"{CAP >> 30} GiB): a gzip bomb; {FIX}")
    return out
