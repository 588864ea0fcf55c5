"""No download runs code, PyG's included: what generator ``pyg`` lets a PyTorch Geometric class read.

Payloads are pickles whose unpickling would create a marker file (``open(marker, "w")`` via ``__reduce__``, or
``builtins.exec`` for ``.pt`` files, which torch's allow-list refuses with advice that makes PyG retry unrestricted).
Each refusal is checked through ``gnnbench generate pyg`` (in this process: exit status 1, one ``gnnbench: error:``
line) and through :func:`gnnbench.suite.load_suite` (what ``snakemake -n`` runs), and the marker must not
exist. Controls show each payload is live: PyG itself, or ``trust_raw: true``, runs it.
"""

from __future__ import annotations

import builtins
import importlib
import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from test_hostile_downloads import Payload
from torch_geometric.data import Data, Dataset, InMemoryDataset
from torch_geometric.datasets import ZINC, Planetoid, TUDataset
from torch_geometric.io import fs

from gnnbench.cli import main
from gnnbench.data import pyg_raw
from gnnbench.data.generators import generate
from gnnbench.data.generators import planetoid as planetoid_generator
from gnnbench.data.generators import pyg as pyg_generator
from gnnbench.data.generators.pyg import process_owner, qualified
from gnnbench.errors import ConfigError, DataError
from gnnbench.io import sha256_file
from gnnbench.suite import load_suite

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real" / "planetoid"
needs_cora = pytest.mark.skipif(not (REAL / "cora" / "raw").is_dir(),
                                reason="real Planetoid files not available (../shared/data/real is absent)")
# The example the Datasets page gave for a class with parts (PyG's ZINC).
ZINC_EXAMPLE = {"class": "torch_geometric.datasets.ZINC", "args": {"subset": True},
                "splits": {"train": {"split": "train"}, "val": {"split": "val"}, "test": {"split": "test"}},
                "task": "graph_regression"}
CORA = {"class": "Planetoid", "args": {"name": "Cora"}}
PLANETOID_FILES = [f"ind.cora.{ext}" for ext in ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")]


@pytest.fixture(autouse=True)
def fresh_summaries(monkeypatch):
    """No summary kept from another test: describing a dataset constructs its class here (module doc of pyg)."""
    monkeypatch.setattr(pyg_generator, "_SUMMARIES", {})
    monkeypatch.setattr(pyg_generator, "_LAST", {})


@pytest.fixture
def marker(tmp_path) -> Path:
    path = tmp_path / "MARKER"
    assert not path.exists()
    return path


@pytest.fixture
def raw(tmp_path, monkeypatch) -> Path:
    """``resources/raw`` of a fresh working directory (the default raw folder of the command and the suite)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path / "resources" / "raw"


def command(capsys, name: str, params: dict, out: Path) -> tuple[int, str]:
    """``gnnbench generate pyg --name NAME --set key=value ... --out OUT`` in this process: (status, stderr)."""
    capsys.readouterr()
    args = ["generate", "pyg", "--name", name, "--out", str(out)]
    for key, value in params.items():
        args += ["--set", f"{key}={value if isinstance(value, str) else json.dumps(value)}"]  # JSON is YAML
    status = main(args)
    return status, capsys.readouterr().err


def suite(name: str, params: dict) -> None:
    models = {"GCN": {"model": "GCN", "budget": 100000, "layers": 4}}
    load_suite({"datasets": {name: {"generator": "pyg", "params": params}},
                "benchmarks": {name: {"models": models, "seeds": [1]}}})


def one_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gnnbench: error: "), err
    return lines[0].removeprefix("gnnbench: error: ")


def write_payloads(folder: Path, names: list[str], marker: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(pickle.dumps(Payload(marker, "open"), protocol=2))


class ExecPayload:
    """Unpickling this runs ``builtins.exec``, which creates ``marker``; torch's weights_only refusal names
    ``add_safe_globals``, and PyG 2.8 then loads the file again without restriction."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return builtins.exec, (f"open({str(self.marker)!r}, 'w').close()",)


# ------------------------------------------------------------------------------------------ PyG's ZINC (not audited)
ZINC_REFUSAL = ("datasets.ZINC-PyG.params.class: torch_geometric.datasets.ZINC is refused: its process "
                "(torch_geometric.datasets.zinc.ZINC) reads the raw files PyG downloads into resources/raw/pyg/ZINC, "
                "and gnnbench neither knows it to read them without running code (it may unpickle them) nor pins "
                "their checksums; use generator zinc, which reads the same molecules.zip through gnnbench's "
                "allow-list, or set datasets.ZINC-PyG.params.trust_raw: true if you trust the files there")


def zinc_payloads(raw: Path, marker: Path) -> Path:
    folder = raw / "pyg" / "ZINC" / "raw"
    write_payloads(folder, ["train.pickle", "val.pickle", "test.pickle"], marker)
    for split in ("train", "val", "test"):
        (folder / f"{split}.index").write_text("0,1\n")
    return folder


def test_the_zinc_example_with_tampered_pickles_is_refused_by_the_command(raw, marker, capsys, tmp_path):
    folder = zinc_payloads(raw, marker)
    status, err = command(capsys, "ZINC-PyG", ZINC_EXAMPLE, tmp_path / "out")
    assert status == 1 and one_error(err) == ZINC_REFUSAL
    assert not marker.exists() and not (tmp_path / "out").exists()
    assert not (folder.parent / "subset").exists()  # PyG never started: no processed folder


def test_the_zinc_example_with_tampered_pickles_is_refused_at_suite_load(raw, marker):
    zinc_payloads(raw, marker)
    with pytest.raises(ConfigError) as info:
        suite("ZINC-PyG", ZINC_EXAMPLE)
    assert str(info.value) == ZINC_REFUSAL
    assert not marker.exists()


def test_trust_raw_lets_zinc_read_its_files_so_the_payload_is_live(raw, marker):
    """The control: with the user's trust, PyG's ZINC unpickles the tampered file (and then fails on its data)."""
    zinc_payloads(raw, marker)
    with pytest.raises(DataError, match=r"^PyG dataset torch_geometric\.datasets\.ZINC\(subset=True, train part "):
        suite("ZINC-PyG", {**ZINC_EXAMPLE, "trust_raw": True})
    assert marker.exists()


class MyZinc(ZINC):
    """A user's subclass that keeps ZINC's process: ZINC's process decides."""


def test_the_class_whose_process_is_used_decides_and_unaudited_pyg_classes_are_refused():
    assert process_owner(MyZinc).__qualname__ == "ZINC"
    with pytest.raises(ConfigError) as info:
        suite("Mine", {**ZINC_EXAMPLE, "class": "test_pyg_raw_files:MyZinc"})
    assert str(info.value).startswith("datasets.Mine.params.class: test_pyg_raw_files:MyZinc is refused: its process "
                                      "(torch_geometric.datasets.zinc.ZINC) reads the raw files PyG downloads into "
                                      "resources/raw/pyg/MyZinc")
    with pytest.raises(ConfigError) as info:  # an unaudited class without a gnnbench alternative
        suite("L", {"class": "LRGBDataset", "args": {"name": "PascalVOC-SP"}})
    assert str(info.value).endswith("(it may unpickle them) nor pins their checksums; set datasets.L.params.trust_raw: "
                                    "true if you trust the files there")


# ---------------------------------------------------------------------------------- Planetoid (pinned checksums)
def test_a_tampered_planetoid_file_is_refused_before_pyg_reads_it(raw, marker, capsys, tmp_path):
    folder = raw / "pyg" / "Planetoid" / "Cora" / "raw"
    write_payloads(folder, PLANETOID_FILES, marker)
    got = sha256_file(folder / "ind.cora.x")
    expected = ("PyG dataset Planetoid(name='Cora'): raw file resources/raw/pyg/Planetoid/Cora/raw/ind.cora.x has "
                f"SHA-256 {got}, expected the pinned {pyg_raw.PINNED[qualified(Planetoid)]['ind.cora.x']}; it is not "
                "the published file, and torch_geometric.datasets.planetoid.Planetoid would unpickle it (which can "
                "run code): delete it so that PyG downloads it again, or set params.trust_raw: true if you trust it")
    status, err = command(capsys, "Cora-PyG", CORA, tmp_path / "out")
    assert status == 1 and one_error(err) == expected
    with pytest.raises(DataError) as info:
        suite("Cora-PyG", CORA)
    assert str(info.value) == expected
    assert not marker.exists() and not (tmp_path / "out").exists()
    assert not (folder.parent / "processed" / "data.pt").exists()


def test_planetoid_without_pins_is_refused_before_anything_is_downloaded(raw, capsys, tmp_path):
    status, err = command(capsys, "P", {"class": "Planetoid", "args": {"name": "PubMed"}}, tmp_path / "out")
    assert status == 1 and one_error(err).startswith(
        "PyG dataset Planetoid(name='PubMed'): refused: torch_geometric.datasets.planetoid.Planetoid unpickles its raw "
        "files and gnnbench pins no SHA-256 for ind.pubmed.x, ind.pubmed.tx, ")
    assert one_error(err).endswith("; use generator planetoid (standardize: false), which reads the same ind.* files "
                                   "through gnnbench's allow-list, or set params.trust_raw: true if you trust the "
                                   "files in resources/raw/pyg/Planetoid/PubMed/raw")
    assert not any(p.is_file() for p in (raw / "pyg").rglob("*"))  # refused before PyG's download


@needs_cora
def test_the_real_cora_files_still_convert_offline_and_again_from_processed(raw, marker, capsys, tmp_path):
    shutil.copytree(REAL / "cora" / "raw", raw / "pyg" / "Planetoid" / "Cora" / "raw")
    for run in ("first", "again"):  # again: PyG loads processed/data.pt (weights_only) and reads no raw file
        columns, meta = generate("pyg", "Cora-PyG", CORA, 0)
        assert columns.num_nodes.tolist() == [2708] and columns.num_edges.tolist() == [10556], run
        assert meta.split_sizes == {"train": 140, "val": 500, "test": 1000}
    processed = raw / "pyg" / "Planetoid" / "Cora" / "processed"
    torch.save(ExecPayload(marker), processed / "pre_transform.pt")  # PyG reads this one unrestricted
    status, err = command(capsys, "Cora-PyG", CORA, tmp_path / "out")
    assert status == 1 and one_error(err).startswith(
        "PyG dataset Planetoid(name='Cora'): refused a file under resources/raw/pyg/Planetoid: "
        "torch.load(weights_only=True) cannot read it (UnpicklingError: Unsupported global: GLOBAL exec was not an "
        "allowed global by default.")
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_pyg_downloads_then_gnnbench_verifies_then_pyg_processes(raw, marker, server, monkeypatch):
    """Planetoid's URL points at a local server: every file is downloaded by PyG, then refused by its checksum
    (one tampered file) before process reads it; served the genuine files (when available), it converts."""
    monkeypatch.setattr(Planetoid, "url", f"{server.url}/data")
    folder = raw / "pyg" / "Planetoid" / "Cora" / "raw"
    genuine = {name: (REAL / "cora" / "raw" / name).read_bytes() if (REAL / "cora" / "raw").is_dir() else b"x"
               for name in PLANETOID_FILES}
    tampered = pickle.dumps(Payload(marker, "open"), protocol=2)
    server.routes.update({f"/data/{name}": data for name, data in genuine.items()})
    server.routes["/data/ind.cora.graph"] = tampered
    with pytest.raises(DataError, match=r"raw file .*/ind\.cora\.(x|graph) has SHA-256 "):
        generate("pyg", "Cora-PyG", CORA, 0)
    assert set(server.requests) == {f"/data/{name}" for name in PLANETOID_FILES}  # all downloaded first
    assert (folder / "ind.cora.graph").read_bytes() == tampered
    assert not marker.exists() and not (folder.parent / "processed" / "data.pt").exists()
    if not (REAL / "cora" / "raw").is_dir():
        pytest.skip("real Planetoid files not available (../shared/data/real is absent): the genuine download")
    shutil.rmtree(folder)
    server.routes["/data/ind.cora.graph"] = genuine["ind.cora.graph"]
    columns, _ = generate("pyg", "Cora-PyG", CORA, 0)
    assert columns.num_nodes.tolist() == [2708]
    pins = pyg_raw.PINNED[qualified(Planetoid)]
    assert all(sha256_file(folder / name) == pins[name] for name in PLANETOID_FILES)


# ------------------------------------------------------------------------------- TUDataset (audited: text files)
def tu_files(folder: Path) -> None:
    """Two graphs (3 and 2 nodes) of a TU dataset TOY, in the TU text format."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "TOY_A.txt").write_text("1, 2\n2, 1\n2, 3\n3, 2\n4, 5\n5, 4\n")
    (folder / "TOY_graph_indicator.txt").write_text("1\n1\n1\n2\n2\n")
    (folder / "TOY_graph_labels.txt").write_text("1\n-1\n")


def test_an_audited_class_reads_its_text_files_and_a_tampered_processed_file_is_refused(raw, marker, capsys,
                                                                                          tmp_path):
    tu_files(raw / "pyg" / "TUDataset" / "TOY" / "raw")
    params = {"class": "TUDataset", "args": {"name": "TOY"}}
    columns, meta = generate("pyg", "TOY", params, 0)
    assert columns.num_nodes.tolist() == [3, 2] and columns.graph["y"].tolist() == [1, 0]
    processed = raw / "pyg" / "TUDataset" / "TOY" / "processed" / "data.pt"
    torch.save(ExecPayload(marker), processed)
    status, err = command(capsys, "TOY", params, tmp_path / "out")
    assert status == 1
    message = one_error(err)
    assert message.startswith("PyG dataset TUDataset(name='TOY'): refused a file under resources/raw/pyg/TUDataset: "
                              "torch.load(weights_only=True) cannot read it (UnpicklingError: Unsupported global: "
                              "GLOBAL exec ")
    assert message.endswith("and PyG would load it without that restriction, which can run code the file holds; "
                            "delete the folder's processed/ files (and any raw file you do not trust) so that PyG "
                            "makes or downloads them again, or set params.trust_raw: true if you trust the files in "
                            "resources/raw/pyg/TUDataset")
    assert not marker.exists() and not (tmp_path / "out").exists()
    with pytest.raises(RuntimeError):  # the control: PyG's own load falls back to unrestricted, runs it, fails
        TUDataset(str(raw / "pyg" / "TUDataset"), "TOY")
    assert marker.exists()


# ---------------------------------------------------------------------------------------- a user's own process
class PickledGraphs(InMemoryDataset):
    """A user's class whose own process unpickles its raw file ``graphs.pickle`` (a list of edge lists), and whose
    download would write it (and a ``downloaded`` note beside the raw folder)."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.load(self.processed_paths[0])

    @property
    def raw_file_names(self) -> list[str]:
        return ["graphs.pickle"]

    @property
    def processed_file_names(self) -> list[str]:
        return ["data.pt"]

    def download(self) -> None:
        Path(self.root, "downloaded").write_text("yes")
        Path(self.raw_paths[0]).write_bytes(pickle.dumps([[(0, 1), (1, 0)], [(0, 1), (1, 2), (2, 0)]]))

    def process(self) -> None:
        with open(self.raw_paths[0], "rb") as f:
            edges = pickle.load(f)  # noqa: S301 — the user's own reader, run only with trust_raw
        graphs = [Data(edge_index=torch.tensor(e).t().contiguous(), num_nodes=3, y=torch.tensor([i]))
                  for i, e in enumerate(edges)]
        self.save(graphs, self.processed_paths[0])


USER = {"class": "test_pyg_raw_files:PickledGraphs"}


def test_a_users_process_over_raw_files_is_refused_before_download_and_before_reading(raw, marker, capsys, tmp_path):
    root = raw / "pyg" / "PickledGraphs"
    expected = ("PyG dataset test_pyg_raw_files:PickledGraphs(): refused: its process "
                "(test_pyg_raw_files.PickledGraphs) reads raw files in resources/raw/pyg/PickledGraphs/raw that "
                "gnnbench can neither "
                "verify nor knows to be read without running code; set params.trust_raw: true if you trust the files "
                "there")
    status, err = command(capsys, "U", USER, tmp_path / "out")  # no raw file yet: refused before the download
    assert status == 1 and one_error(err) == expected and not (root / "downloaded").exists()
    write_payloads(root / "raw", ["graphs.pickle"], marker)  # a tampered file already there: refused before process
    with pytest.raises(DataError) as info:
        suite("U", USER)
    assert str(info.value) == expected and not marker.exists()


def test_trust_raw_lets_a_trusted_folder_through(raw, tmp_path):
    columns, meta = generate("pyg", "U", {**USER, "trust_raw": True}, 0)
    assert (raw / "pyg" / "PickledGraphs" / "downloaded").exists()  # its own download ran
    assert columns.num_edges.tolist() == [2, 3] and columns.graph["y"].tolist() == [0, 1]
    assert meta.source["params"]["trust_raw"] is True
    with pytest.raises(ConfigError, match=r"^datasets\.U\.params\.trust_raw: "):
        suite("U", {**USER, "trust_raw": "yes"})


class NoRawFiles(InMemoryDataset):
    """A user's class with its own process and no raw files: nothing to verify, no trust needed."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.load(self.processed_paths[0])

    @property
    def raw_file_names(self) -> list[str]:
        return []

    @property
    def processed_file_names(self) -> list[str]:
        return ["data.pt"]

    def process(self) -> None:
        self.save([Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=2, y=torch.tensor([i + 0.5]))
                   for i in range(3)], self.processed_paths[0])


def test_a_users_process_without_raw_files_needs_no_trust(raw):
    columns, meta = generate("pyg", "N", {"class": "test_pyg_raw_files:NoRawFiles"}, 0)
    assert meta.task == "graph_regression" and np.allclose(columns.graph["y"], [0.5, 1.5, 2.5])


class GraphFiles(Dataset):
    """A user's dataset that is not in memory: process writes one file per graph, get loads it (PyG's fs.torch_load,
    which falls back to an unrestricted load) while gnnbench converts the dataset graph by graph."""

    def __init__(self, root: str) -> None:
        super().__init__(root)

    @property
    def raw_file_names(self) -> list[str]:
        return []

    @property
    def processed_file_names(self) -> list[str]:
        return ["graph_0.pt", "graph_1.pt"]

    def process(self) -> None:
        for i, path in enumerate(self.processed_paths):
            torch.save(Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=2, y=torch.tensor([i])), path)

    def len(self) -> int:
        return 2

    def get(self, idx: int) -> Data:
        return fs.torch_load(self.processed_paths[idx])


def test_graphs_loaded_while_converting_are_loaded_weights_only(raw, marker, capsys, tmp_path):
    params = {"class": "test_pyg_raw_files:GraphFiles"}
    columns, _ = generate("pyg", "G", params, 0)
    assert columns.graph["y"].tolist() == [0, 1]
    processed = raw / "pyg" / "GraphFiles" / "processed" / "graph_1.pt"
    torch.save(ExecPayload(marker), processed)
    status, err = command(capsys, "G", params, tmp_path / "out")
    assert status == 1 and one_error(err).startswith(
        "PyG dataset test_pyg_raw_files:GraphFiles(): refused a file under resources/raw/pyg/GraphFiles: "
        "torch.load(weights_only=True) cannot read it (UnpicklingError: Unsupported global: GLOBAL exec ")
    assert not marker.exists() and not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------------ the table
def test_the_table_names_pyg_classes_that_define_process_and_its_pins_are_the_real_files():
    for name in [*pyg_raw.AUDITED, *pyg_raw.PINNED, *pyg_raw.ALTERNATIVES]:
        module, _, attr = name.rpartition(".")
        cls = getattr(importlib.import_module(module), attr)
        assert process_owner(cls) is cls, name  # keys are the classes that define process
    assert not set(pyg_raw.AUDITED) & set(pyg_raw.PINNED)
    pins = pyg_raw.PINNED[qualified(Planetoid)]
    assert pins == {f"ind.{name}.{ext}": sha for name, table in planetoid_generator.PINNED_SHA256.items()
                    for ext, sha in table.items()}  # the same bytes generator planetoid pins
    if REAL.is_dir():
        assert pins == {path.name: sha256_file(path) for path in REAL.glob("*/raw/ind.*")}
