"""TSPLIB files: read and write symmetric ``EUC_2D`` instances.

Format (Reinelt, "TSPLIB 95"). A specification part of ``KEYWORD : VALUE`` lines (``NAME``, ``TYPE``,
``COMMENT``, ``DIMENSION``, ``EDGE_WEIGHT_TYPE``, ...), then ``NODE_COORD_SECTION`` with one ``id x y`` line per
node (ids 1..n, in any order), then ``EOF`` (optional, as in many published files). Only ``TYPE : TSP`` with
``EDGE_WEIGHT_TYPE : EUC_2D`` is supported; anything else is a :class:`DataError` naming the file.

Distances are TSPLIB's: ``d(i, j) = nint(sqrt(dx² + dy²))`` with ``nint(x) = int(x + 0.5)``, on float64
coordinates. Published optimal tour lengths are in these integer units, so the integer matrix goes to LKH as
it is (no :data:`tsp_solver.SCALE` scaling). LKH multiplies costs by its ``PRECISION`` (100) and keeps them
in a C ``int``, so a distance must stay below :data:`MAX_DISTANCE`; a larger instance is refused rather than
solved wrongly.

:func:`gnnbench.data.tsp_solver.solve_instance` solves an instance with LKH-3.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gnnbench.errors import ConfigError, DataError

SUPPORTED_EDGE_WEIGHT_TYPE = "EUC_2D"
MAX_DISTANCE = (2**31 - 1) // 100  # LKH: cost × PRECISION (100) must fit a C int


@dataclass
class TsplibInstance:
    """A parsed ``EUC_2D`` instance: ``coords`` (n, 2) float64, row i is the node with TSPLIB id i + 1."""

    name: str
    coords: np.ndarray
    comment: str = ""

    @property
    def dimension(self) -> int:
        """Number of cities (points) of the instance."""
        return len(self.coords)


def euc2d_distances(coords: np.ndarray) -> np.ndarray:
    """(n, n) int64 TSPLIB ``EUC_2D`` matrix ``int(sqrt(dx² + dy²) + 0.5)`` of coordinates (n, 2)."""
    p = np.asarray(coords, dtype=np.float64)
    diff = p[:, None, :] - p[None, :, :]
    # floor(x + 0.5) == int(x + 0.5) for x ≥ 0, TSPLIB's nint (not banker's rounding like np.rint)
    return np.floor(np.sqrt((diff * diff).sum(-1)) + 0.5).astype(np.int64)


def _split_keyword(line: str) -> tuple[str, str]:
    """``"KEY : value"`` / ``"KEY: value"`` / ``"KEY"`` → (upper-case key, value)."""
    if ":" in line:
        key, value = line.split(":", 1)
    else:
        parts = line.split(None, 1)
        key, value = parts[0], parts[1] if len(parts) > 1 else ""
    return key.strip().upper(), value.strip()


def read_tsplib(path: str | os.PathLike) -> TsplibInstance:
    """Parse a TSPLIB ``EUC_2D`` file; a missing, corrupt or unsupported file is a one-line :class:`DataError`."""
    path = Path(path)
    where = f"TSPLIB file {str(path)!r}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{where} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{where} cannot be read: {exc}") from None
    lines = [(no, line.strip()) for no, line in enumerate(text.splitlines(), 1)]
    lines = [(no, line) for no, line in lines if line]  # blank lines carry nothing

    spec: dict[str, str] = {}
    coords = None
    i = 0
    while i < len(lines):
        no, line = lines[i]
        key, value = _split_keyword(line)
        i += 1
        if key == "EOF":
            break
        if coords is not None and not key.endswith("_SECTION"):  # only EOF or a section may follow the nodes
            fields = line.split()
            if len(fields) == 3 and fields[0].lstrip("+-").isdigit():
                raise DataError(f"{where} line {no}: more coordinate lines than DIMENSION = {len(coords)}")
            raise DataError(f"{where} line {no}: expected EOF after NODE_COORD_SECTION, got {line!r}")
        if key == "NODE_COORD_SECTION":
            if coords is not None:
                raise DataError(f"{where} line {no}: NODE_COORD_SECTION given twice")
            n = _check_spec(spec, where)
            coords, i = _read_coords(lines, i, n, where)
        elif key.endswith("_SECTION"):
            _check_spec(spec, where)  # e.g. EDGE_WEIGHT_SECTION: the unsupported EDGE_WEIGHT_TYPE says more
            raise DataError(f"{where} line {no}: section {key} is not supported (only NODE_COORD_SECTION of "
                            f"{SUPPORTED_EDGE_WEIGHT_TYPE} instances)")
        elif key in spec:
            raise DataError(f"{where} line {no}: keyword {key} given twice")
        else:
            spec[key] = value
    if coords is None:
        _check_spec(spec, where)  # a header error explains the file better than the missing section
        raise DataError(f"{where} has no NODE_COORD_SECTION")
    return TsplibInstance(name=spec.get("NAME", path.stem), coords=coords, comment=spec.get("COMMENT", ""))


def _check_spec(header: dict[str, str], where: str) -> int:
    """Validate the specification part; return DIMENSION."""
    kind = (header.get("TYPE") or "TSP").split()[0].upper()  # e.g. "TSP (M.~Hofmeister)" in some files
    if kind != "TSP":
        raise DataError(f"{where}: TYPE {header['TYPE']!r} is not supported (only TSP, symmetric)")
    weight = header.get("EDGE_WEIGHT_TYPE")
    if weight is None:
        raise DataError(f"{where}: EDGE_WEIGHT_TYPE is missing (supported: {SUPPORTED_EDGE_WEIGHT_TYPE})")
    if weight.upper() != SUPPORTED_EDGE_WEIGHT_TYPE:
        raise DataError(f"{where}: EDGE_WEIGHT_TYPE {weight!r} is not supported (supported: "
                        f"{SUPPORTED_EDGE_WEIGHT_TYPE})")
    coord_type = header.get("NODE_COORD_TYPE", "TWOD_COORDS").upper()
    if coord_type != "TWOD_COORDS":
        raise DataError(f"{where}: NODE_COORD_TYPE {coord_type!r} is not supported (only TWOD_COORDS)")
    if "DIMENSION" not in header:
        raise DataError(f"{where}: DIMENSION is missing")
    try:
        n = int(header["DIMENSION"])
    except ValueError:
        raise DataError(f"{where}: DIMENSION {header['DIMENSION']!r} is not an integer") from None
    if n < 1:
        raise DataError(f"{where}: DIMENSION {n} must be at least 1")
    return n


def _read_coords(lines: list[tuple[int, str]], i: int, n: int, where: str) -> tuple[np.ndarray, int]:
    """Read exactly ``n`` ``id x y`` lines from ``lines[i:]``; return coords ordered by id and the next index."""
    coords = np.full((n, 2), np.nan)
    seen = np.zeros(n, dtype=bool)
    for k in range(n):
        if i + k >= len(lines):
            raise DataError(f"{where}: NODE_COORD_SECTION has {k} coordinate lines, DIMENSION says {n}")
        no, line = lines[i + k]
        fields = line.split()
        if fields[0].upper() == "EOF" or fields[0].upper().endswith("_SECTION"):
            raise DataError(f"{where}: NODE_COORD_SECTION has {k} coordinate lines, DIMENSION says {n}")
        if len(fields) != 3:
            raise DataError(f"{where} line {no}: expected 'id x y', got {line!r}")
        try:
            node = int(fields[0])
            x, y = float(fields[1]), float(fields[2])
        except ValueError:
            raise DataError(f"{where} line {no}: expected an integer id and two numbers, got {line!r}") from None
        if not (math.isfinite(x) and math.isfinite(y)):
            raise DataError(f"{where} line {no}: coordinates must be finite, got {line!r}")
        if not 1 <= node <= n:
            raise DataError(f"{where} line {no}: node id {node} outside 1..{n} (DIMENSION)")
        if seen[node - 1]:
            raise DataError(f"{where} line {no}: node id {node} given twice")
        seen[node - 1] = True
        coords[node - 1] = (x, y)
    return coords, i + n


def write_tsplib(path: str | os.PathLike, coords: np.ndarray, name: str, comment: str | None = None) -> None:
    """Write coordinates (n, 2) as a TSPLIB ``EUC_2D`` file (node ids 1..n in row order).

    Coordinates are written with ``repr(float)``, the shortest text that reads back as the same float64, so
    :func:`read_tsplib` returns them exactly.
    """
    p = np.asarray(coords, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 2 or len(p) < 1:
        raise ConfigError(f"write_tsplib: coordinates must have shape (n, 2) with n ≥ 1, got {p.shape}")
    if not np.isfinite(p).all():
        raise ConfigError("write_tsplib: coordinates must be finite")
    for label, text in (("name", name), ("comment", comment or "")):
        if any(c in text for c in "\r\n") or (label == "name" and (not text.strip() or ":" in text)):
            raise ConfigError(f"write_tsplib: {label} {text!r} must be one line (a name: non-empty, without ':')")
    header = [f"NAME : {name}", "TYPE : TSP"]
    if comment:
        header.append(f"COMMENT : {comment}")
    header += [f"DIMENSION : {len(p)}", f"EDGE_WEIGHT_TYPE : {SUPPORTED_EDGE_WEIGHT_TYPE}", "NODE_COORD_SECTION"]
    body = [f"{i} {float(x)!r} {float(y)!r}" for i, (x, y) in enumerate(p.tolist(), 1)]
    Path(path).write_text("\n".join(header + body + ["EOF"]) + "\n", encoding="utf-8")
