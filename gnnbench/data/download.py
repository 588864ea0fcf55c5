"""Downloading raw files: mirrors, retries, checksums, atomic placement.

A :class:`RawFile` names one file by its path relative to the raw-data folder (``mnist/t10k-labels-idx1-ubyte.gz``),
its published MD5 and the canonical URLs to try in order. :func:`fetch` places it at ``dest_dir/relative_path``:

* an existing file with the right MD5 is reused without touching the network; an existing file with a wrong MD5
  raises :class:`DownloadError` (it is never overwritten silently: the user decides whether to delete it);
* otherwise the URLs are tried in order — ``mirror + file name`` first when a mirror is given, then the canonical
  URLs. Each transfer streams to ``<target>.<pid>.part`` beside the target (per process, so two jobs fetching the
  same file never write into one part file); the MD5 is checked and the part file renamed
  onto the target (``os.replace``, atomic), so a killed job never leaves a half-written target;
* a transfer that ends early (connection closed, fewer bytes than ``Content-Length``, timeout, reset) or an HTTP
  5xx answer is retried on the same URL up to ``retries`` attempts with exponential backoff (``backoff``,
  2·``backoff``, ...); an HTTP 4xx status (404, 403, ...) or an unreachable host moves on to the next URL at once;
* a downloaded file with the wrong MD5 is deleted and the next URL is tried; when no URL gave a good file the error
  names the file, every URL tried with what went wrong, expected vs got MD5 and the fix (set a ``mirror`` or
  place the file by hand).

``sha256`` pins a file's SHA-256 (for sources that publish none, gnnbench pins the value it verified once): a
downloaded file with another SHA-256 is rejected exactly like one with a wrong MD5 (deleted, next URL; the final
error names expected and got), and an existing file with another SHA-256 is an error.

``md5=None`` means "no published MD5": the file's SHA-256 is recorded in a sidecar ``<target>.sha256`` (written
atomically after the target) on first download, so a later reader can pin it. An existing file is verified against
that record (and against the pinned ``sha256``) every time it is reused: a file whose bytes changed after it was
recorded raises :class:`DownloadError` naming the file, both checksums and the fix (delete it to download it again).
An existing file without a record (placed by hand) gets one. :func:`file_checksums` returns MD5 and SHA-256 of any
fetched file. Only the standard library is used (urllib).
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gnnbench.errors import GnnbenchError

log = logging.getLogger(__name__)

BLOCK = 1 << 20
USER_AGENT = "gnnbench-downloader/1"


class DownloadError(GnnbenchError):
    """A raw file could not be downloaded, or a downloaded / existing file has the wrong checksum."""


@dataclass(frozen=True)
class RawFile:
    """One raw file: where it lives under the raw-data folder, its published MD5 (or None), canonical URLs and an
    optional pinned SHA-256."""

    relative_path: str  # POSIX path under raw_dir, e.g. "mnist/train-images-idx3-ubyte.gz"
    md5: str | None
    urls: tuple[str, ...]
    sha256: str | None = None  # pinned SHA-256 (hex), checked on download and on reuse

    @property
    def name(self) -> str:
        """The file's name (the last part of ``relative_path``)."""
        return PurePosixPath(self.relative_path).name

    def __post_init__(self) -> None:
        path = PurePosixPath(self.relative_path)
        if path.is_absolute() or ".." in path.parts or not path.parts:
            raise ValueError(f"RawFile.relative_path must be a relative path inside raw_dir: {self.relative_path!r}")


class _Interrupted(Exception):
    """The transfer ended before the announced length (retryable)."""


def file_checksums(path: str | os.PathLike) -> dict[str, str]:
    """``{"md5": ..., "sha256": ...}`` (hex) of a file's bytes."""
    md5, sha = hashlib.md5(), hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(BLOCK), b""):
            md5.update(block)
            sha.update(block)
    return {"md5": md5.hexdigest(), "sha256": sha.hexdigest()}


def candidate_urls(raw: RawFile, mirror: str | None = None) -> list[str]:
    """URLs tried in order: ``mirror`` + file name (if a mirror is given), then the canonical URLs."""
    urls = []
    if mirror:
        urls.append(mirror.rstrip("/") + "/" + raw.name)
    urls.extend(u for u in raw.urls if u not in urls)
    return urls


def fetch(raw: RawFile, dest_dir: str | os.PathLike, mirror: str | None = None, retries: int = 3,
          timeout: float = 60.0, backoff: float = 1.0) -> Path:
    """Place ``raw`` at ``dest_dir/raw.relative_path`` (download if missing) and return that path."""
    target = Path(dest_dir) / raw.relative_path
    if target.is_file():
        _check_existing(raw, target)
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(f"{target.name}.{os.getpid()}.part")  # per process: concurrent fetches never mix
    failures: list[str] = []
    bad_md5: list[str] = []
    bad_sha: list[str] = []
    for url in candidate_urls(raw, mirror):
        for attempt in range(1, max(retries, 1) + 1):
            try:
                got = _download(url, part, timeout)
            except _Interrupted as exc:
                part.unlink(missing_ok=True)
                if attempt < max(retries, 1):
                    wait = backoff * 2 ** (attempt - 1)
                    log.warning("%s: %s (attempt %d of %d); retrying in %.1fs", url, exc, attempt, retries, wait)
                    time.sleep(wait)
                    continue
                failures.append(f"{url} ({exc}, {attempt} attempts)")
                break
            except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
                part.unlink(missing_ok=True)
                if isinstance(exc, urllib.error.HTTPError) and exc.code >= 500 and attempt < max(retries, 1):
                    time.sleep(backoff * 2 ** (attempt - 1))  # server-side error: transient, retry
                    continue
                failures.append(f"{url} ({_reason(exc)})")
                break
            if raw.md5 is not None and got["md5"] != raw.md5:
                part.unlink(missing_ok=True)
                bad_md5.append(f"{url} gave MD5 {got['md5']}")
                failures.append(f"{url} (MD5 {got['md5']}, expected {raw.md5})")
                break
            if raw.sha256 is not None and got["sha256"] != raw.sha256:
                part.unlink(missing_ok=True)
                bad_sha.append(f"{url} gave SHA-256 {got['sha256']}")
                failures.append(f"{url} (SHA-256 {got['sha256']}, expected {raw.sha256})")
                break
            os.replace(part, target)
            if raw.md5 is None:
                _write_sha256(target, got["sha256"])
            log.info("downloaded %s from %s (%s)", target, url, _verified(raw, got))
            return target
    if bad_md5 or bad_sha:
        expected = "; ".join([*([f"expected MD5 {raw.md5} but {'; '.join(bad_md5)}"] if bad_md5 else []),
                              *([f"expected SHA-256 {raw.sha256} but {'; '.join(bad_sha)}"] if bad_sha else [])])
        raise DownloadError(f"{target}: checksum mismatch, {expected} "
                            f"(all URLs tried: {'; '.join(failures)}); the source is corrupt or changed: set "
                            "`mirror` to a trusted copy or place the correct file at that path")
    raise DownloadError(f"{target}: download failed from every URL: {'; '.join(failures)}; check the network, "
                        f"set `mirror` to a reachable copy, or place the file ({_published(raw)}) at that path by hand")


def _published(raw: RawFile) -> str:
    if raw.md5 is None and raw.sha256 is not None:
        return f"SHA-256 {raw.sha256}"
    return f"MD5 {raw.md5}"


def _verified(raw: RawFile, got: dict[str, str]) -> str:
    done = [f"MD5 {got['md5']} verified"] if raw.md5 else []
    if raw.sha256:
        done.append(f"SHA-256 {got['sha256']} verified")
    if raw.md5 is None:
        done.append(f"SHA-256 {got['sha256']} recorded")
    return ", ".join(done)


def _check_existing(raw: RawFile, target: Path) -> None:
    got = file_checksums(target)
    fix = (f"(URLs: {', '.join(raw.urls)}); it is corrupt or a different version: delete it to download it again "
           "(or set `mirror` to a trusted copy)")
    if raw.md5 is not None and got["md5"] != raw.md5:
        raise DownloadError(f"{target}: existing file has MD5 {got['md5']}, expected {raw.md5} {fix}")
    if raw.sha256 is not None and got["sha256"] != raw.sha256:
        raise DownloadError(f"{target}: existing file has SHA-256 {got['sha256']}, expected the pinned "
                            f"{raw.sha256} {fix}")
    if raw.md5 is not None:
        return
    recorded, sidecar = recorded_sha256(target), _sidecar(target)
    if recorded is None and sidecar.is_file():
        raise DownloadError(f"{target}: its SHA-256 record {sidecar} is unreadable (expected 64 hex digits); delete "
                            "both files to download it again")
    if recorded is None or (raw.sha256 is not None and recorded != raw.sha256):
        _write_sha256(target, got["sha256"])  # placed by hand (or a stale record): the file matches any pin
    elif recorded != got["sha256"]:
        raise DownloadError(f"{target}: existing file has SHA-256 {got['sha256']}, but {_sidecar(target).name} "
                            f"recorded {recorded} when it was downloaded; the file changed since then "
                            f"{fix.replace('delete it', 'delete it and its .sha256 record')}")


def _sidecar(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def recorded_sha256(target: str | os.PathLike) -> str | None:
    """The SHA-256 recorded beside a file fetched with ``md5=None`` (None when there is no readable record)."""
    sidecar = _sidecar(Path(target))
    if not sidecar.is_file():
        return None
    words = sidecar.read_text(errors="replace").split()
    value = words[0].lower() if words else ""
    return value if len(value) == 64 and all(c in "0123456789abcdef" for c in value) else None


def _write_sha256(target: Path, sha256: str) -> None:
    sidecar = _sidecar(target)
    tmp = sidecar.with_name(f"{sidecar.name}.{os.getpid()}.part")  # per process: two jobs may check one file at once
    tmp.write_text(f"{sha256}  {target.name}\n")
    os.replace(tmp, sidecar)


def _download(url: str, part: Path, timeout: float) -> dict[str, str]:
    """Stream ``url`` into ``part``; return its checksums. Raises _Interrupted when the body is cut short."""
    md5, sha = hashlib.md5(), hashlib.sha256()
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    received = 0
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response, open(part, "wb") as out:
            length = response.headers.get("Content-Length")
            expected = int(length) if length is not None and length.isdigit() else None
            while True:
                block = response.read(BLOCK)
                if not block:
                    break
                received += len(block)
                md5.update(block)
                sha.update(block)
                out.write(block)
    except urllib.error.HTTPError:
        raise
    except (http.client.IncompleteRead, ConnectionResetError, TimeoutError) as exc:
        raise _Interrupted(f"transfer interrupted after {received} bytes: {_reason(exc)}") from None
    if expected is not None and received != expected:
        raise _Interrupted(f"got {received} of {expected} bytes (connection closed early)")
    return {"md5": md5.hexdigest(), "sha256": sha.hexdigest()}


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return f"unreachable: {exc.reason}"
    if isinstance(exc, http.client.IncompleteRead):
        return f"incomplete read, {len(exc.partial)} bytes in the last block"
    return f"{type(exc).__name__}: {exc}"
