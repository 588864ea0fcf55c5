"""Atomic file output, small JSON/checksum helpers, and one-line messages for operating-system errors on paths.

Every output is written to a temporary file beside its target and renamed into place, so a killed job
never leaves a half-written file under the target's name. The temporary file is named after its target, host and
process (``.{name}.tmp-{host}-{pid}``); one left behind by a process killed outright (SIGKILL, power loss) is
removed by the next process that writes into the same directory on the same host, once it finds the writer gone.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gnnbench.errors import DataError

log = logging.getLogger(__name__)


# .{target}.tmp-{host}-{pid}; files of earlier versions have no host (.{target}.tmp-{pid})
_TEMP_NAME = re.compile(r"\.(?P<target>.+)\.tmp-(?:(?P<host>.+)-)?(?P<pid>\d+)")
_swept: set[Path] = set()  # directories this process has cleared of stale temporary files


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def temporary_target(path: str | os.PathLike) -> Path | None:
    """The target a temporary file of :func:`atomic_path` stands for (``dir/.NAME.tmp-HOST-PID`` → ``dir/NAME``);
    None for any other path."""
    path = Path(path)
    match = _TEMP_NAME.fullmatch(path.name)
    return path.with_name(match["target"]) if match else None


def remove_stale_temp_files(directory: str | os.PathLike) -> list[Path]:
    """Delete the temporary files in ``directory`` that writers on this host left behind when they were killed
    (their process no longer exists); returns them. Files of live processes and of other hosts (a shared file
    system) are kept."""
    host, removed = socket.gethostname(), []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP_NAME.fullmatch(entry.name)
        if match is None or match["host"] not in (None, host) or not entry.is_file(follow_symlinks=False):
            continue
        pid = int(match["pid"])
        if pid == os.getpid() or _alive(pid):
            continue
        try:
            os.unlink(entry.path)
        except FileNotFoundError:  # another process removed it first
            continue
        removed.append(Path(entry.path))
    return removed


@contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success rename it onto ``target``, else delete it.

    The first write of a process into a directory also removes the stale temporary files there
    (:func:`remove_stale_temp_files`)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    directory = target.parent.resolve()
    if directory not in _swept:
        for path in remove_stale_temp_files(directory):
            log.info("removed %s, left behind by a killed process", path)
        _swept.add(directory)
    tmp = target.with_name(f".{target.name}.tmp-{socket.gethostname()}-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as indented, key-sorted JSON, atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


class DuplicateKey(ValueError):
    """A JSON object that holds one key twice (``json.loads`` keeps the last value and drops the others silently):
    the key and the line and column of its second occurrence."""

    def __init__(self, key: str, line: int, column: int) -> None:
        super().__init__(f"the key {json.dumps(key)} twice in one object (line {line}, column {column})")
        self.key, self.line, self.column = key, line, column


class _Repeated(Exception):
    """Raised by :func:`_unique_pairs` on the fast path; :func:`parse_json` then locates the key."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Repeated
    return out


def parse_json(text: str) -> Any:
    """``json.loads``, except that an object holding a key twice is a :class:`DuplicateKey` (as a YAML suite's
    duplicate key is refused): a hand-written file with two ``"train"`` lists in one fold would otherwise lose the
    first silently."""
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs)
    except _Repeated:
        pass
    # only on the error path: a second, pure-Python pass that knows where each key starts
    key, position = _first_repeated_key(text)
    line = text.count("\n", 0, position) + 1
    raise DuplicateKey(key, line, position - text.rfind("\n", 0, position))


def _first_repeated_key(text: str) -> tuple[str, int]:
    """The first key (in the order of the text, valid JSON) that its object already holds, and its offset."""
    from json import decoder, scanner

    whitespace = decoder.WHITESPACE.match

    class Found(Exception):
        pass

    def parse_object(s_and_end, strict, scan_once, *_):  # json.decoder.JSONObject, keeping key offsets
        s, end = s_and_end
        seen: set[str] = set()
        end = whitespace(s, end).end()
        while s[end] != "}":
            start = end
            key, end = decoder.scanstring(s, end + 1, strict)
            if key in seen:
                raise Found(key, start)
            seen.add(key)
            end = whitespace(s, whitespace(s, end).end() + 1).end()  # past the colon
            _, end = scan_once(s, end)
            end = whitespace(s, end).end()
            if s[end] == ",":
                end = whitespace(s, end + 1).end()
        return None, end + 1

    locator = json.JSONDecoder()
    locator.parse_object = parse_object
    locator.scan_once = scanner.py_make_scanner(locator)
    try:
        locator.decode(text)
    except Found as found:
        return found.args
    raise AssertionError("parse_json found a repeated key that the second pass did not")


def read_json(path: str | os.PathLike, what: str) -> Any:
    """Read a JSON file; a missing or unparsable file, or one whose object holds a key twice (:func:`parse_json`),
    raises a DataError naming ``what`` and the path."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{what} {path} does not exist; create it first (run snakemake for that file)")
    try:
        return parse_json(path.read_text())
    except DuplicateKey as exc:
        raise DataError(f"{what} {path} has {exc}: JSON would keep only the last value; remove or merge the "
                        "other") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{what} {path} is not valid JSON ({exc}); delete it and rerun to recreate it") from None


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_checked_json(path: str | os.PathLike, what: str, key: str, redo: str) -> dict:
    """A JSON file written with a ``checksum`` of the rest of its content (:func:`sha256_json`), verified: a hand edit
    or damage (or a missing ``key``) is a one-line DataError naming ``what`` and what rerunning snakemake will
    ``redo``. Returns the content without the checksum."""
    data = read_json(path, what)
    body = {k: v for k, v in data.items() if k != "checksum"} if isinstance(data, dict) else None
    if body is None or data.get("checksum") != sha256_json(body) or key not in body:
        raise DataError(f"{what} {path} was edited by hand or is corrupt (checksum mismatch); delete it and rerun "
                        f"snakemake to {redo}")
    return body


def sha256_json(obj: Any) -> str:
    """Hex SHA-256 of the canonical (sorted, compact) JSON form of ``obj``."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def os_error_message(exc: OSError) -> str | None:
    """One line for an operating-system error on a named path (permission denied, a file where a folder is
    expected, disk full, ...): the path, the reason and what to do; None for an error without a file name, which is
    not the user's to fix and keeps its traceback."""
    if not isinstance(exc, OSError) or not exc.filename:
        return None
    path = str(exc.filename2 or exc.filename)  # a rename's target: the user's path
    path = str(temporary_target(path) or path)  # the temporary file beside a target: name the target
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):  # making a folder, or a path through one: name the file in the way
        blocked = file_in_the_way(path)
        if blocked is not None:
            return blocked
    hints = {
        errno.EACCES: "give yourself access to it (or its folder), or choose another location",
        errno.EPERM: "give yourself access to it (or its folder), or choose another location",
        errno.EROFS: "choose a location on a writable file system",
        errno.EISDIR: "a folder stands where a file is expected: move it away or choose another location",
        errno.ENOSPC: "free some disk space and rerun",
        errno.EDQUOT: "free some disk space and rerun",
        errno.ENAMETOOLONG: "use shorter names",
    }
    return f"{path}: {exc.strerror or type(exc).__name__}; {hints.get(exc.errno, 'check the path and rerun')}"


def file_in_the_way(folder: str | os.PathLike) -> str | None:
    """One line naming the file that stands where ``folder`` or one of its parents should be a folder (``results is
    a file, but a folder is expected there (to hold results/runs); ...``); None when nothing is in the way."""
    target = Path(folder)
    blocker = next((p for p in [*reversed(target.parents), target] if p.exists() and not p.is_dir()), None)
    if blocker is None:
        return None
    held = f" (to hold {folder})" if blocker != target else ""
    return f"{blocker} is a file, but a folder is expected there{held}; move it away or choose another location"
