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

``md5=None`` means "no published checksum": the file is accepted as downloaded and its SHA-256 is recorded in a
sidecar ``<target>.sha256`` (written atomically after the target), so a later reader can pin it;
:func:`file_checksums` returns MD5 and SHA-256 of any fetched file. Only the standard library is used (urllib).
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
    """One raw file: where it lives under the raw-data folder, its published MD5 (or None) and canonical URLs."""

    relative_path: str  # POSIX path under raw_dir, e.g. "mnist/train-images-idx3-ubyte.gz"
    md5: str | None
    urls: tuple[str, ...]

    @property
    def name(self) -> str:
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
            os.replace(part, target)
            if raw.md5 is None:
                _write_sha256(target, got["sha256"])
            log.info("downloaded %s from %s (%s)", target, url, f"MD5 {got['md5']} verified" if raw.md5
                     else f"SHA-256 {got['sha256']} recorded")
            return target
    if bad_md5:
        raise DownloadError(f"{target}: checksum mismatch, expected MD5 {raw.md5} but {'; '.join(bad_md5)} "
                            f"(all URLs tried: {'; '.join(failures)}); the source is corrupt or changed: set "
                            "`mirror` to a trusted copy or place the correct file at that path")
    raise DownloadError(f"{target}: download failed from every URL: {'; '.join(failures)}; check the network, "
                        f"set `mirror` to a reachable copy, or place the file (MD5 {raw.md5}) at that path by hand")


def _check_existing(raw: RawFile, target: Path) -> None:
    if raw.md5 is None:
        sidecar = target.with_name(target.name + ".sha256")
        if not sidecar.is_file():
            _write_sha256(target, file_checksums(target)["sha256"])
        return
    got = file_checksums(target)["md5"]
    if got != raw.md5:
        raise DownloadError(f"{target}: existing file has MD5 {got}, expected {raw.md5} (URLs: "
                            f"{', '.join(raw.urls)}); it is corrupt or a different version: delete it to download "
                            "it again (or set `mirror` to a trusted copy)")


def recorded_sha256(target: str | os.PathLike) -> str | None:
    """The SHA-256 recorded beside a file fetched with ``md5=None`` (None when there is no record)."""
    sidecar = Path(target).with_name(Path(target).name + ".sha256")
    return sidecar.read_text().split()[0] if sidecar.is_file() else None


def _write_sha256(target: Path, sha256: str) -> None:
    sidecar = target.with_name(target.name + ".sha256")
    tmp = sidecar.with_name(sidecar.name + ".part")
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
