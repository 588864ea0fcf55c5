"""Hostile downloads: a pickle or ``.pt`` whose unpickling would run code, served where every reader expects its file.

Each generator that reads a pickle or a ``.pt`` (cycles_release, planetoid, zinc, aqsol, released PyG zips and CSL,
superpixels_cifar10, ogbl_collab) is run through the command (``gnnbench.cli.main(["generate", ...])``) with
``mirror`` pointing at a local HTTP server that serves the payload in the real file's place. The payload's
``__reduce__`` names a callable that would create a marker file (``os.system("touch ...")`` or ``open(..., "w")``).
Every run must end with exit status 1, exactly one line ``gnnbench: error: ...`` on stderr, no marker and no
dataset folder. Where a pinned checksum refuses the file at download (CSL, CIFAR-10, Cora), the payload bytes are
also fed to the reader directly, so that the allow-list itself is exercised. The CYCLES reader's networkx
allow-list (holders of the pickled state, never live networkx objects) is tested at the end.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pickle
import re
import subprocess
import sys
import tarfile
import textwrap
import types
from pathlib import Path

import networkx as nx
import pytest
import torch
from test_collab import collab_files
from test_collab import zip_bytes as collab_zip
from test_download import LocalServer, cifar_fixture, closed_port_url
from test_planetoid import pubmed_fixture, real_files
from test_released import fixture_parts, pt_bytes, zip_bytes

from gnnbench.cli import main
from gnnbench.data import download, raw_images
from gnnbench.data.generators import cycles_release, molecules, ogbl_collab, planetoid, released
from gnnbench.data.safe_pickle import NETWORKX_GRAPHS, PickledGraph, safe_load
from gnnbench.errors import DataError

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real"
needs_cora = pytest.mark.skipif(not (REAL / "planetoid" / "cora").is_dir(),
                                reason="real Planetoid files not available (../shared/data/real is absent)")
KINDS = ("os.system", "open")


class Payload:
    """Unpickling this calls ``os.system("touch marker")`` or ``open(marker, "w")``: either creates ``marker``."""

    def __init__(self, marker: Path, kind: str) -> None:
        self.marker, self.kind = marker, kind

    def __reduce__(self):
        if self.kind == "os.system":
            return os.system, (f"touch {self.marker}",)
        return open, (str(self.marker), "w")


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """Canonical URLs point at a closed local port and retries do not sleep: tests never leave 127.0.0.1."""
    dead = closed_port_url().rsplit("/", 1)[0]
    monkeypatch.setattr(cycles_release, "URL", dead + "/" + cycles_release.FILE_NAME)
    monkeypatch.setattr(planetoid, "URL", dead + "/ind.{name}.{ext}")
    monkeypatch.setattr(molecules, "ZINC_URL", dead + "/molecules.zip")
    monkeypatch.setattr(molecules, "ZINC_INDEX_URL", dead + "/{split}.index")
    monkeypatch.setattr(molecules, "AQSOL_URL", dead + "/aqsol_graph_raw.zip")
    monkeypatch.setattr(released, "PYG_URL", dead + "/{name}_v2.zip")
    monkeypatch.setattr(released, "CSL_URL", dead + "/CSL.zip")
    monkeypatch.setattr(ogbl_collab, "URL", dead + "/collab.zip")
    for name, raw in raw_images.CIFAR10_FILES.items():  # the registry's MD5 stays the real, published one
        moved = dataclasses.replace(raw, urls=(f"{dead}/{name}",))
        monkeypatch.setitem(raw_images.CIFAR10_FILES, name, moved)
        monkeypatch.setitem(raw_images.RAW_FILES, moved.relative_path, moved)
    monkeypatch.setattr(download, "time", types.SimpleNamespace(sleep=lambda seconds: None))


@pytest.fixture
def marker(tmp_path) -> Path:
    path = tmp_path / "MARKER"
    assert not path.exists()
    return path


def generate(server, monkeypatch, capsys, tmp_path: Path, files: dict[str, bytes], generator: str,
             **params) -> tuple[int, str]:
    """Serve ``files`` under ``/m/`` and run ``gnnbench generate`` in ``tmp_path`` (raw files go to
    ``tmp_path/resources/raw``); returns the exit status and the single stderr line (asserted to be one)."""
    for name, data in files.items():
        server.routes[f"/m/{name}"] = data
    monkeypatch.chdir(tmp_path)
    argv = ["generate", generator, "--name", "X", "--out", "ds", "--set", f"mirror={server.url}/m"]
    for key, value in params.items():
        argv += ["--set", f"{key}={value}"]
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gnnbench: error: "), err
    return code, err[0]


def assert_refused(code: int, line: str, marker: Path, tmp_path: Path, *, at_download: bool = False) -> None:
    assert code == 1
    assert not marker.exists()  # nothing ran
    assert not (tmp_path / "ds").exists()  # no dataset written
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".part")]  # no temporary copy left
    if at_download:
        assert "checksum mismatch" in line and "expected" in line
    else:
        assert ("not on gnnbench's allow-list" in line or "weights_only=True) refuses" in line
                or "cannot be loaded safely" in line), line


# --------------------------------------------------------------------------------- through the command, per reader
@pytest.mark.parametrize("kind", KINDS)
def test_cycles_release(server, monkeypatch, capsys, tmp_path, marker, kind):
    """The issue's case: the CYCLES pickle from a mirror, a payload where a networkx graph belongs."""
    data = pickle.dumps(([{"n": 56}], [[(Payload(marker, kind), None, "has-kcycle")] * 3]), protocol=4)
    code, line = generate(server, monkeypatch, capsys, tmp_path, {cycles_release.FILE_NAME: data}, "cycles_release",
                          num_train=1, num_val=1, num_test=1)
    assert_refused(code, line, marker, tmp_path)
    assert f"wants to load {'posix.system' if kind == 'os.system' else 'io.open'}" in line
    assert line.endswith(f"download {cycles_release.FILE_NAME} again from {cycles_release.URL}")


@pytest.mark.parametrize("ext", ("x", "y", "tx", "ty", "allx", "ally", "graph"))
@pytest.mark.parametrize("kind", KINDS)
def test_planetoid_pubmed(server, monkeypatch, capsys, tmp_path, marker, ext, kind):
    """PubMed's files are not pinned (recorded at download): each of the seven pickles in turn holds the payload."""
    files = pubmed_fixture()
    files[f"ind.pubmed.{ext}"] = pickle.dumps(Payload(marker, kind), protocol=2)
    code, line = generate(server, monkeypatch, capsys, tmp_path, files, "planetoid", name="pubmed")
    assert_refused(code, line, marker, tmp_path)
    assert f"ind.pubmed.{ext} wants to load" in line


@needs_cora
def test_planetoid_cora_is_refused_at_download_and_its_reader_refuses_the_payload(server, monkeypatch, capsys,
                                                                                  tmp_path, marker):
    files = real_files("cora")
    evil = pickle.dumps(Payload(marker, "os.system"), protocol=2)
    code, line = generate(server, monkeypatch, capsys, tmp_path, {**files, "ind.cora.x": evil}, "planetoid",
                          name="cora")
    assert_refused(code, line, marker, tmp_path, at_download=True)
    assert "ind.cora.x: checksum mismatch" in line
    with pytest.raises(DataError, match="wants to load posix.system, which is not on gnnbench's allow-list"):
        safe_load(evil, "Planetoid file", "ind.cora.x")  # the reader's unpickler, fed the payload directly
    assert not marker.exists()


@pytest.mark.parametrize("split", ("train", "val", "test"))
@pytest.mark.parametrize("kind", KINDS)
def test_zinc(server, monkeypatch, capsys, tmp_path, marker, split, kind):
    members = {f"molecules/{s}.pickle": pickle.dumps([], protocol=4) for s in ("train", "val", "test")}
    members[f"molecules/{split}.pickle"] = pickle.dumps([{"num_atom": Payload(marker, kind)}], protocol=4)
    code, line = generate(server, monkeypatch, capsys, tmp_path, {"molecules.zip": zip_bytes(members)}, "zinc",
                          subset="false")
    assert_refused(code, line, marker, tmp_path)
    assert f"member molecules/{split}.pickle wants to load" in line


@pytest.mark.parametrize("split", ("train", "val", "test"))
@pytest.mark.parametrize("kind", KINDS)
def test_aqsol(server, monkeypatch, capsys, tmp_path, marker, split, kind):
    members = {f"asqol_graph_raw/{s}.pickle": pickle.dumps([], protocol=4) for s in ("train", "val", "test")}
    members[f"asqol_graph_raw/{split}.pickle"] = pickle.dumps([(Payload(marker, kind),)], protocol=2)
    code, line = generate(server, monkeypatch, capsys, tmp_path, {"aqsol_graph_raw.zip": zip_bytes(members)},
                          "aqsol")
    assert_refused(code, line, marker, tmp_path)
    assert f"member asqol_graph_raw/{split}.pickle wants to load" in line


@pytest.mark.parametrize("name", ("PATTERN", "CLUSTER", "MNIST", "CIFAR10", "TSP"))
@pytest.mark.parametrize("kind", KINDS)
def test_released_pyg_zip(server, monkeypatch, capsys, tmp_path, marker, name, kind):
    """``{NAME}_v2.pt`` inside PyG's zip: a torch.save file whose pickle names the payload's callable."""
    parts = fixture_parts(name)
    parts[1][0] = {"x": Payload(marker, kind)}  # one graph of the val part
    code, line = generate(server, monkeypatch, capsys, tmp_path, {f"{name}_v2.zip": zip_bytes(
        {f"{name}_v2.pt": pt_bytes(parts)})}, "released", name=name, num_train=5, num_val=3, num_test=4)
    assert_refused(code, line, marker, tmp_path)
    assert f"member {name}_v2.pt holds an object that torch.load(weights_only=True) refuses" in line


def csl_zip(graphs: bytes, labels: bytes) -> bytes:
    return zip_bytes({released.CSL_GRAPHS: graphs, released.CSL_LABELS: labels})


@pytest.mark.parametrize("kind", KINDS)
def test_csl_is_refused_at_download_and_its_reader_refuses_the_payload(server, monkeypatch, capsys, tmp_path,
                                                                        marker, kind):
    """CSL.zip's SHA-256 is pinned: a hostile copy is refused at download; read directly, both members (.pkl and
    .pt) are refused before anything runs."""
    evil_pkl = csl_zip(pickle.dumps([Payload(marker, kind)], protocol=2), pt_bytes(torch.zeros(150).long()))
    code, line = generate(server, monkeypatch, capsys, tmp_path, {"CSL.zip": evil_pkl}, "released", name="CSL")
    assert_refused(code, line, marker, tmp_path, at_download=True)
    path = tmp_path / "CSL.zip"
    path.write_bytes(evil_pkl)
    with pytest.raises(DataError, match=f"CSL pickle {path} member {released.CSL_GRAPHS} wants to load .*not on "
                                        "gnnbench's allow-list") as info:
        released.read_csl_zip(path)
    assert "\n" not in str(info.value) and not marker.exists()
    path.write_bytes(csl_zip(pickle.dumps([], protocol=2), pt_bytes(Payload(marker, kind))))
    with pytest.raises(DataError, match=f"member {released.CSL_LABELS} holds an object that "
                                        r"torch.load\(weights_only=True\) refuses") as info:
        released.read_csl_zip(path)
    assert "\n" not in str(info.value) and not marker.exists()


def cifar_tarball(evil: object, batch: str) -> bytes:
    """The fixture tarball with ``batch`` replaced by a pickle of ``evil``."""
    real, _ = cifar_fixture(per_batch=2)
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(real), mode="r:gz") as source, tarfile.open(fileobj=out, mode="w:gz") as tar:
        for member in source.getmembers():
            data = source.extractfile(member).read()
            if member.name.endswith("/" + batch):
                data = pickle.dumps(evil, protocol=2)
                member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    return out.getvalue()


@pytest.mark.parametrize("kind", KINDS)
def test_cifar10_is_refused_at_download_and_its_reader_refuses_the_payload(server, monkeypatch, capsys, tmp_path,
                                                                            marker, kind):
    """The tarball's MD5 is published (pinned): a hostile copy is refused at download; read directly, every batch
    goes through the allow-list."""
    evil = {"data": Payload(marker, kind), "labels": [0]}
    code, line = generate(server, monkeypatch, capsys, tmp_path, {"cifar-10-python.tar.gz": cifar_tarball(
        evil, "data_batch_1")}, "superpixels_cifar10", num_train=2, num_val=2, num_test=2)
    assert_refused(code, line, marker, tmp_path, at_download=True)
    for batch in ("data_batch_1", "data_batch_4", "test_batch"):
        path = tmp_path / f"{batch}.tar.gz"
        path.write_bytes(cifar_tarball(evil, batch))
        with pytest.raises(DataError, match=f"member cifar-10-batches-py/{batch} is not a valid batch \\(refusing "
                                            "to load .*, which is not on gnnbench's allow-list\\)") as info:
            raw_images.load_cifar10(path)
        assert "\n" not in str(info.value) and not marker.exists()


@pytest.mark.parametrize("part", ("train", "valid", "test"))
@pytest.mark.parametrize("kind", KINDS)
def test_ogbl_collab(server, monkeypatch, capsys, tmp_path, marker, part, kind):
    files = collab_files()
    files[f"split/time/{part}.pt"] = pt_bytes({"edge": Payload(marker, kind)})
    code, line = generate(server, monkeypatch, capsys, tmp_path, {"collab.zip": collab_zip(files)}, "ogbl_collab")
    assert_refused(code, line, marker, tmp_path)
    assert f"member collab/split/time/{part}.pt cannot be loaded safely" in line


def test_every_pickle_or_pt_reader_is_covered():
    """The readers above are all there are: every module of gnnbench that unpickles (safe_load, restricted_loads,
    torch.load, pickle.load(s), an Unpickler) is one this file drives with a payload (checkpoints are gnnbench's own
    output, loaded with weights_only=True)."""
    root = Path(__file__).resolve().parents[1] / "gnnbench"
    unpickles = re.compile(r"(?<!yaml\.)\bsafe_load\(|restricted_loads\(|torch\.load\(|pickle\.loads?\(|Unpickler")
    readers = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py") if unpickles.search(p.read_text()))
    covered = {"data/generators/cycles_release.py", "data/generators/planetoid.py", "data/generators/molecules.py",
               "data/generators/released.py", "data/raw_images.py", "data/generators/ogbl_collab.py",
               "data/safe_pickle.py",
               "data/graph_import.py",  # a user's .pt graph file: its payloads are in tests/test_user_datasets.py
               "data/generators/pyg.py"}  # PyG's classes: their payloads are in tests/test_pyg_raw_files.py
    own_files = {"training/checkpoint.py", "training/last_epoch.py"}  # torch.load(weights_only=True) of our checkpoints
    assert set(readers) - own_files == covered, readers


def test_the_issue_command_in_a_fresh_process(tmp_path):
    """``gnnbench generate cycles_release --name C --set mirror=http://127.0.0.1:PORT/ --out ds`` as a user runs it:
    exit 1, the last stderr line is the one error line (the others, if any, are log records), no marker."""
    marker = tmp_path / "MARKER"
    data = pickle.dumps(([{"n": 56}], [[(Payload(marker, "os.system"), None, "has-kcycle")] * 3]), protocol=2)
    server = LocalServer()
    try:
        server.routes[f"/{cycles_release.FILE_NAME}"] = data
        done = subprocess.run([sys.executable, "-m", "gnnbench.cli", "generate", "cycles_release", "--name", "C",
                               "--set", f"mirror={server.url}/", "--set", "num_train=1", "--set", "num_val=1",
                               "--set", "num_test=1", "--out", "ds"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
    finally:
        server.stop()
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert lines[-1].startswith("gnnbench: error: CYCLES release ") and "posix.system" in lines[-1]
    assert sum(line.startswith("gnnbench: error:") for line in lines) == 1
    assert all(" INFO " in line or " WARNING " in line for line in lines[:-1]), lines
    assert not marker.exists() and not (tmp_path / "ds").exists()


# ------------------------------------------------------------------------- the CYCLES reader's networkx allow-list
def cycles_file(tmp_path: Path, graphs: list, protocol: int = 4, labels=None) -> Path:
    labels = labels or [cycles_release.POSITIVE_LABEL] * len(graphs)
    path = tmp_path / "cycles.pickle"
    path.write_bytes(pickle.dumps(([{"n": 56}], [[(g, None, y) for g, y in zip(graphs, labels, strict=True)]]),
                                  protocol=protocol))
    return path


def edges_of(columns, i: int) -> list[tuple[int, int]]:
    lo, hi = columns.edge_ptr[i], columns.edge_ptr[i + 1]
    return list(zip(columns.src[lo:hi].tolist(), columns.dst[lo:hi].tolist(), strict=True))


@pytest.mark.parametrize("protocol", (0, 1, 2, 4, 5))
def test_networkx_graphs_read_as_holders_at_every_protocol(tmp_path, protocol):
    """Protocols 0/1 rebuild objects with copyreg._reconstructor, 2+ with NEWOBJ; graphs whose views were
    cached (networkx 2.x caches ``nodes``, 3.x every view) carry NodeView/AdjacencyView/... in their state."""
    cached = nx.cycle_graph(6)
    cached.nodes, cached.adj, cached.edges, cached.degree  # noqa: B018 - cache the views in __dict__
    assert {"nodes", "adj", "edges", "degree"} <= set(cached.__dict__)
    named = nx.Graph([("a", "c"), ("c", "b")])
    columns = cycles_release.read_cycles_pickle(cycles_file(tmp_path, [cached, nx.path_graph(3), named], protocol),
                                                num_train=1, num_val=1, num_test=1)
    assert columns.num_nodes.tolist() == [6, 3, 3]
    assert edges_of(columns, 0) == sorted({(u, v) for a, b in cached.edges for u, v in ((a, b), (b, a))})
    assert edges_of(columns, 1) == [(0, 1), (1, 0), (1, 2), (2, 1)]
    assert edges_of(columns, 2) == [(0, 1), (1, 0), (1, 2), (2, 1)]  # a=0, c=1, b=2 in node order


def test_networkx_1x_state_names(tmp_path):
    """networkx 1.x pickled ``node``/``adj``/``edge`` (no underscore): the same graph reads the same."""
    graph = nx.path_graph(4)
    old = nx.Graph()
    old.__dict__ = {"graph": {}, "node": {v: {} for v in graph}, "adj": graph._adj, "edge": graph._adj}
    columns = cycles_release.read_cycles_pickle(cycles_file(tmp_path, [old, graph, graph], 2), 56, 1, 1, 1)
    assert edges_of(columns, 0) == edges_of(columns, 1) == [(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2)]


def test_networkx_is_allowed_for_the_cycles_reader_only(tmp_path):
    data = pickle.dumps(nx.path_graph(3))
    with pytest.raises(DataError, match="wants to load networkx.classes.graph.Graph, which is not on gnnbench's "
                                        "allow-list"):
        safe_load(data, "Planetoid file")
    assert isinstance(safe_load(data, "CYCLES release", extra=NETWORKX_GRAPHS), PickledGraph)
    with pytest.raises(DataError, match="wants to load networkx.classes.digraph.DiGraph, which is not on gnnbench's "
                                        "allow-list"):
        cycles_release.read_cycles_pickle(cycles_file(tmp_path, [nx.DiGraph([(0, 1)])] * 3), 56, 1, 1, 1)


@pytest.mark.parametrize("data, message", [
    (b"ccopy_reg\n_reconstructor\n(cbuiltins\nobject\ncbuiltins\nobject\nNtR.", "allowed only to rebuild"),
    (b"ccopy_reg\n_reconstructor\n(cnetworkx.classes.graph\nGraph\ncbuiltins\nobject\nI5\ntR.",
     "allowed only to rebuild"),
    (b"ccopy_reg\n_reconstructor\n(cnetworkx.classes.graph\nGraph\ncbuiltins\nint\nNtR.", "allowed only to rebuild"),
    (b"\x80\x02cnetworkx.classes.graph\nGraph\nK\x05\x85\x81.", "TypeError"),  # NEWOBJ with arguments
])
def test_the_networkx_table_admits_nothing_else(data, message):
    with pytest.raises(DataError, match=message):
        safe_load(data, "CYCLES release", extra=NETWORKX_GRAPHS)


def holder(state) -> PickledGraph:
    graph = PickledGraph()
    graph.state = state
    return graph


@pytest.mark.parametrize("state, message", [
    ({"_node": {0: {}, 1: {}}, "_adj": {0: {1: {}}, 1: {0: {}, 5: {}}}}, "a neighbour is not one of its nodes"),
    ({"_node": {0: {}, 1: {}}, "_adj": {1: {0: {}}, 0: {1: {}}}}, "does not list its nodes in node order"),
    ({"_node": {"a": {}, "b": {}}, "_adj": {"a": {"z": {}}, "b": {}}}, "is not a dict of neighbour dicts"),
    ({"_node": {0: {}, 1: {}}, "_adj": {0: 7, 1: {}}}, "is not a dict of neighbour dicts"),
    ({"_node": {0: {}, 1: {}}, "_adj": {0: {0.5: {}}, 1: {}}}, "a neighbour id is not an integer"),
])
def test_malformed_graph_states_are_one_line_errors(tmp_path, monkeypatch, state, message):
    """The pickled dicts come from the file: whatever they hold is checked, never trusted to be a networkx graph."""
    path = tmp_path / "c.pickle"
    path.write_bytes(b"")
    fake = ([{"n": 56}], [[(holder(state), None, "has-kcycle")] * 3])
    monkeypatch.setattr(cycles_release, "_load", lambda p: fake)
    with pytest.raises(DataError, match="sample 0|a networkx graph") as info:
        cycles_release.read_cycles_pickle(path, 56, 1, 1, 1)
    assert message in str(info.value) and "\n" not in str(info.value)
    for bad in ("not a dict", {"_node": [0, 1], "_adj": {}}):
        fake[1][0][0] = (holder(bad), None, "has-kcycle")
        with pytest.raises(DataError, match=r"sample 0 of the n = 56 dataset is not a \(networkx graph"):
            cycles_release.read_cycles_pickle(path, 56, 1, 1, 1)


def test_reading_never_imports_networkx(tmp_path):
    path = cycles_file(tmp_path, [nx.cycle_graph(6), nx.path_graph(3), nx.star_graph(3)])
    script = textwrap.dedent(f"""
        import sys
        from gnnbench.data.generators import cycles_release
        columns = cycles_release.read_cycles_pickle({str(path)!r}, 56, 1, 1, 1)
        print(columns.num_nodes.tolist(), "networkx" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[6,", "3,", "4]", "False"]
