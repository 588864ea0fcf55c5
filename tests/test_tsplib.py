"""TSPLIB reader/writer and ``gnnbench tsp solve``.

References are independent of the implementation: distances ``int(sqrt(dx² + dy²) + 0.5)`` and tour lengths
by explicit loops, optima by Held–Karp (tsp_solver.held_karp, itself checked by brute force in test_tsp.py) and
the published TSPLIB optimal tour lengths of the fixture files (copied from /work/shared/data/tsplib; TSPLIB,
Reinelt 1991, optima from TSPLIB's solutions list): eil51 = 426, berlin52 = 7542.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from gnnbench.cli import main
from gnnbench.data.tsp_solver import held_karp, solve_instance
from gnnbench.data.tsplib import MAX_DISTANCE, euc2d_distances, read_tsplib, write_tsplib
from gnnbench.errors import ConfigError, DataError

DATA = Path(__file__).parent / "data" / "tsplib"
KNOWN_OPTIMA = {"eil51": 426, "berlin52": 7542}


def _nint_distance(a, b) -> int:
    dx, dy = float(a[0]) - float(b[0]), float(a[1]) - float(b[1])
    return int(math.sqrt(dx * dx + dy * dy) + 0.5)


def _loop_tour_length(coords, tour) -> int:
    total = 0
    for k in range(len(tour)):
        total += _nint_distance(coords[tour[k]], coords[tour[(k + 1) % len(tour)]])
    return total


def _raw_coords(path: Path) -> list[tuple[float, float]]:
    """Coordinates of a well-formed file by the simplest possible reading (lines between the section and EOF)."""
    lines = path.read_text().splitlines()
    start = lines.index("NODE_COORD_SECTION") + 1
    return [(float(x), float(y)) for _, x, y in (ln.split() for ln in lines[start:] if ln.strip() != "EOF")]


@pytest.mark.parametrize("name", sorted(KNOWN_OPTIMA))
def test_cli_solves_fixture_to_known_optimum(name, capsys):
    assert main(["tsp", "solve", str(DATA / f"{name}.tsp")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == str(KNOWN_OPTIMA[name])


@pytest.mark.parametrize("name", sorted(KNOWN_OPTIMA))
def test_parse_fixture_and_tour_length_matches_loop(name):
    inst = read_tsplib(DATA / f"{name}.tsp")
    raw = _raw_coords(DATA / f"{name}.tsp")
    assert inst.name == name and inst.dimension == len(raw)
    np.testing.assert_array_equal(inst.coords, np.array(raw))
    tour, length = solve_instance(inst, runs=1)
    assert sorted(tour.tolist()) == list(range(len(raw)))
    assert length == _loop_tour_length(raw, tour.tolist()) == KNOWN_OPTIMA[name]


def test_distances_are_tsplib_nint_not_bankers_rounding():
    # 2.5 → 3 and 0.5 → 1 under TSPLIB's int(x + 0.5); np.rint would give 2 and 0
    coords = np.array([[0.0, 0.0], [2.5, 0.0], [0.0, 0.5], [3.0, 4.0], [-1.2, 7.9]])
    d = euc2d_distances(coords)
    ref = [[_nint_distance(a, b) for b in coords] for a in coords]
    np.testing.assert_array_equal(d, np.array(ref))
    assert d[0, 1] == 3 and d[0, 2] == 1 and d[0, 3] == 5
    assert d.dtype == np.int64


def test_small_instance_optimum_equals_held_karp(tmp_path):
    rng = np.random.default_rng(5)
    coords = rng.integers(0, 100, size=(10, 2)).astype(float)
    write_tsplib(tmp_path / "r10.tsp", coords, "r10")
    _, length = solve_instance(read_tsplib(tmp_path / "r10.tsp"), runs=2)
    ref = np.array([[_nint_distance(a, b) for b in coords] for a in coords], dtype=np.int64)
    assert length == held_karp(ref)[0]


def test_writer_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    coords = np.concatenate([rng.uniform(-1e4, 1e4, size=(20, 2)), rng.random((5, 2)) * 1e-7, [[3.0, 4.0]]])
    path = tmp_path / "rt.tsp"
    write_tsplib(path, coords, "roundtrip", comment="written by the test")
    inst = read_tsplib(path)
    assert inst.name == "roundtrip" and inst.comment == "written by the test" and inst.dimension == len(coords)
    np.testing.assert_array_equal(inst.coords, coords)  # exact: repr(float) reads back bit for bit
    text = path.read_text().splitlines()
    assert "EDGE_WEIGHT_TYPE : EUC_2D" in text and "DIMENSION : 26" in text and text[-1] == "EOF"


def test_writer_round_trip_of_fixture_solves_to_same_optimum(tmp_path, capsys):
    inst = read_tsplib(DATA / "eil51.tsp")
    write_tsplib(tmp_path / "copy.tsp", inst.coords, "copy")
    assert main(["tsp", "solve", str(tmp_path / "copy.tsp")]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "426"


@pytest.mark.parametrize("coords, name", [(np.zeros((3, 3)), "x"), (np.zeros((0, 2)), "x"),
                                          (np.array([[0.0, np.nan]]), "x"), (np.zeros((3, 2)), "a\nb"),
                                          (np.zeros((3, 2)), "")])
def test_writer_rejects_bad_input(tmp_path, coords, name):
    with pytest.raises(ConfigError):
        write_tsplib(tmp_path / "bad.tsp", coords, name)


def test_parser_tolerates_format_variants(tmp_path):
    # "KEY:VALUE" without spaces, CRLF, blank lines, ids out of order, no EOF, extra COMMENT/DISPLAY_DATA_TYPE keys
    text = ("NAME:v3\r\nTYPE : TSP\r\nCOMMENT : x: y\r\nDIMENSION:3\r\n\r\nEDGE_WEIGHT_TYPE :EUC_2D\r\n"
            "DISPLAY_DATA_TYPE : COORD_DISPLAY\r\nNODE_COORD_SECTION\r\n3 6 8\r\n1 0 0\r\n2 1.5e1 -2\r\n")
    (tmp_path / "v.tsp").write_bytes(text.encode())
    inst = read_tsplib(tmp_path / "v.tsp")
    assert inst.name == "v3" and inst.comment == "x: y"
    np.testing.assert_array_equal(inst.coords, [[0, 0], [15, -2], [6, 8]])


HEADER = "NAME : t\nTYPE : TSP\nDIMENSION : {n}\nEDGE_WEIGHT_TYPE : {w}\nNODE_COORD_SECTION\n"
GOOD_NODES = "1 0 0\n2 3 4\n3 6 0\n"


@pytest.mark.parametrize("text, needle", [
    (HEADER.format(n="abc", w="EUC_2D") + GOOD_NODES + "EOF\n", "DIMENSION 'abc' is not an integer"),
    (HEADER.format(n="0", w="EUC_2D") + "EOF\n", "DIMENSION 0"),
    (HEADER.format(n="4", w="EUC_2D") + GOOD_NODES + "EOF\n", "has 3 coordinate lines, DIMENSION says 4"),
    (HEADER.format(n="4", w="EUC_2D") + GOOD_NODES, "has 3 coordinate lines, DIMENSION says 4"),
    (HEADER.format(n="2", w="EUC_2D") + GOOD_NODES + "EOF\n", "more coordinate lines than DIMENSION = 2"),
    (HEADER.format(n="3", w="EUC_2D") + "1 0 0\n2 three 4\n3 6 0\nEOF\n", "expected an integer id and two numbers"),
    (HEADER.format(n="3", w="EUC_2D") + "1 0 0\n2 3\n3 6 0\nEOF\n", "expected 'id x y'"),
    (HEADER.format(n="3", w="EUC_2D") + "1 0 0\n1 3 4\n3 6 0\nEOF\n", "node id 1 given twice"),
    (HEADER.format(n="3", w="EUC_2D") + "1 0 0\n2 3 4\n7 6 0\nEOF\n", "node id 7 outside 1..3"),
    (HEADER.format(n="3", w="EUC_2D") + "1 0 0\n2 nan 4\n3 6 0\nEOF\n", "must be finite"),
    (HEADER.format(n="3", w="EUC_2D") + GOOD_NODES + "garbage here\nEOF\n", "expected EOF after NODE_COORD"),
    (HEADER.format(n="3", w="GEO") + GOOD_NODES + "EOF\n",
     "EDGE_WEIGHT_TYPE 'GEO' is not supported (supported: EUC_2D)"),
    ("NAME : t\nTYPE : TSP\nDIMENSION : 3\nEDGE_WEIGHT_TYPE : EXPLICIT\nEDGE_WEIGHT_FORMAT : FULL_MATRIX\n"
     "EDGE_WEIGHT_SECTION\n0 1 2\n1 0 3\n2 3 0\nEOF\n", "EDGE_WEIGHT_TYPE 'EXPLICIT' is not supported"),
    (HEADER.replace("TSP", "ATSP").format(n="3", w="EUC_2D") + GOOD_NODES, "TYPE 'ATSP' is not supported"),
    ("NAME : t\nDIMENSION : 3\nNODE_COORD_SECTION\n" + GOOD_NODES, "EDGE_WEIGHT_TYPE is missing"),
    ("NAME : t\nEDGE_WEIGHT_TYPE : EUC_2D\nNODE_COORD_SECTION\n" + GOOD_NODES, "DIMENSION is missing"),
    ("NAME : t\nDIMENSION : 3\nEDGE_WEIGHT_TYPE : EUC_2D\nEOF\n", "has no NODE_COORD_SECTION"),
    ("", "EDGE_WEIGHT_TYPE is missing"),
])
def test_parser_rejects_malformed_file_with_clear_error(tmp_path, text, needle):
    path = tmp_path / "bad.tsp"
    path.write_text(text)
    with pytest.raises(DataError) as info:
        read_tsplib(path)
    message = str(info.value)
    assert needle in message and str(path) in message and "\n" not in message


def test_parser_rejects_missing_and_binary_files(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        read_tsplib(tmp_path / "nope.tsp")
    (tmp_path / "bin.tsp").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DataError, match="cannot be read"):
        read_tsplib(tmp_path / "bin.tsp")


def test_huge_distances_are_refused_not_solved_wrongly(tmp_path):
    coords = np.array([[0.0, 0.0], [MAX_DISTANCE + 10.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    write_tsplib(tmp_path / "big.tsp", coords, "big")
    with pytest.raises(DataError, match="exceeds"):
        solve_instance(read_tsplib(tmp_path / "big.tsp"))


@pytest.mark.parametrize("argv_tail, text", [
    (["missing.tsp"], None),
    (["bad.tsp"], HEADER.format(n="3", w="EUC_2D") + "1 0 0\n2 x 4\n3 6 0\nEOF\n"),
    (["bad.tsp"], HEADER.format(n="5", w="EUC_2D") + GOOD_NODES + "EOF\n"),
    (["bad.tsp"], HEADER.format(n="3", w="ATT") + GOOD_NODES + "EOF\n"),
    (["good.tsp", "--runs", "0"], HEADER.format(n="3", w="EUC_2D") + GOOD_NODES + "EOF\n"),
])
def test_cli_errors_are_one_line_exit_1(tmp_path, capsys, argv_tail, text):
    if text is not None:
        (tmp_path / argv_tail[0]).write_text(text)
    argv = ["tsp", "solve", str(tmp_path / argv_tail[0]), *argv_tail[1:]]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gnnbench: error: ")


def test_cli_tiny_instance(tmp_path, capsys):
    # 3-4-5 triangle: tour 0 → (3,4) → (6,0) → 0 has length 5 + 5 + 6 = 16
    (tmp_path / "tri.tsp").write_text(HEADER.format(n="3", w="EUC_2D") + GOOD_NODES + "EOF\n")
    assert main(["tsp", "solve", str(tmp_path / "tri.tsp")]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "16"
