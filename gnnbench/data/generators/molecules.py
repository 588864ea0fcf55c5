"""ZINC (12k subset or ZINC-full) and AQSOL molecular graph regression (docs/datasets.md#zinc, #aqsol).

Both read the raw files the benchmark's preparation notebooks (and PyTorch Geometric's ``ZINC`` / ``AQSOL``)
download; archives are read in memory with :mod:`zipfile` (nothing is extracted; members through
:func:`gnnbench.data.archive.read_member`, which refuses a zip bomb unread) and every pickle goes through the
allow-list unpickler :mod:`gnnbench.data.safe_pickle`. ``mirror`` (a folder URL holding the files under their own
names) is tried before the canonical URLs and is not recorded; ``meta.source.raw_sha256`` holds the SHA-256 of
every file read. ``seed`` is not used (the conversion is deterministic).

**ZINC** (generator ``zinc``; PyG's ``ZINC(subset=...)``):

* raw files: ``molecules.zip`` (:data:`ZINC_URL`, into ``raw_dir/zinc/``; no checksum is published, so its
  SHA-256 is recorded at first download and verified on every reuse) with members ``molecules/train.pickle``,
  ``val.pickle``, ``test.pickle`` — ZINC-full, 220,011 / 24,445 / 5,000 molecules — and, with ``subset: true``
  (default), the index files ``{train,val,test}.index`` of the benchmark's repository (:data:`ZINC_INDEX_URL`;
  SHA-256 pinned in :data:`ZINC_INDEX_SHA256`);
* a pickle is a list of molecule dicts: ``num_atom`` (int N), ``atom_type`` (LongTensor N), ``bond_type``
  (LongTensor N×N, 0 = no bond) and ``logP_SA_cycle_normalized`` (one-element float tensor). The tensors are
  pickled the classic way (``torch._utils._rebuild_tensor_v2`` over ``torch.storage._load_from_bytes``); the
  allow-list keeps them as plain data and reads each storage with ``torch.load(weights_only=True)``, and only the
  molecules the dataset keeps are decoded (the subset: 12,000 of 249,456);
* an index file is one CSV line of positions into its split's pickle (the original reads the first row with
  ``csv.reader``; PyG splits the text at commas); the order of the positions is the dataset's order. A position
  outside the pickle is a one-line :class:`DataError` (the original and PyG would wrap negative positions around);
* graph: node ``x`` = atom type id (categorical, vocabulary 28, int16), edges = the nonzero entries of ``bond_type`` in
  row-major order (the original's ``(adj != 0).nonzero()`` and PyG's ``adj.nonzero()``: both directions, as the matrix
  is symmetric), edge ``edge_attr`` = the bond type at that entry (1 single, 2 double, 3 triple; categorical, vocabulary
  4, int16), graph ``y`` = ``logP_SA_cycle_normalized`` as float32, not normalised (as the released code's
  ``data/molecules.py``). ``num_atom`` must equal the number of atom types (the original builds its graphs with
  ``num_atom`` nodes, PyG with ``len(atom_type)``; they agree on the published data, and a file where they differ is
  refused);
* ``subset: false`` gives ZINC-full (every molecule, pickle order).

**AQSOL** (generator ``aqsol``; PyG's ``AQSOL`` plus the benchmark's second filter):

* raw file: ``aqsol_graph_raw.zip`` (:data:`AQSOL_URL`, into ``raw_dir/aqsol/``; SHA-256 recorded at first
  download) with members ``asqol_graph_raw/{train,val,test}.pickle`` (the folder really is spelled ``asqol``);
* a pickle is a list of tuples (atom type ids int64[N], bond type ids int64[E], edge_index int64[2, E],
  solubility float) with both directions of every bond already listed; stored as they come (edge order kept);
* the benchmark's filter (``MoleculeAqSolDGL``): a molecule is dropped when it has no edge, **and** when the
  graph built from its edge list has another node count than it has atoms — ``max(edge_index) + 1 ≠ N``, i.e. its
  highest-index atom(s) are isolated (DGL infers the node count from the edges). That leaves 7,831 / 996 / 996
  of 7,985 / 998 / 999 molecules. **Decision**: both filters are applied, as in the benchmark whose numbers
  gnnbench reproduces; PyG's ``AQSOL`` applies only the first (9,833 graphs instead of 9,823);
* node ``x`` = atom type id (vocabulary 65), edge ``edge_attr`` = bond type id (vocabulary 5: NONE 0, SINGLE 1,
  DOUBLE 2, AROMATIC 3, TRIPLE 4), both int16; graph ``y`` = log solubility as float32, not normalised (as the released
  code).

Both: graphs are stored train, then val, then test, so the split scheme ``given`` is the published split; the
int8 graph column ``split`` (0/1/2) records each graph's part and ``meta.json``'s ``split_sizes`` is counted from
it (:func:`gnnbench.data.meta.graph_split_sizes`; AQSOL's sizes depend on the filter, ZINC-full's on the file).
Type ids outside the vocabulary, malformed molecules, a missing member, an unreadable archive or a pickle that
wants a global outside the allow-list are one-line :class:`DataError`\\ s naming the file (and member) and the fix;
nothing is written.

Speed (``python benchmarks/molecules_speed.py --pyg``; figures: docs/performance.md): converting the kept molecules
is vectorised — per molecule only the pickled arrays are collected; nonzero bonds, local indices, vocabulary checks
and the AQSOL filter run on concatenated arrays, in chunks of :data:`CHUNK` molecules to bound memory. Decoding the
tensor storages with ``torch.load(weights_only=True)`` (PyTorch's Python unpickler, three storages per molecule)
dominates, and only the molecules kept are decoded: the 12k subset decodes 36,000 storages, ZINC-full about
750,000 (PyG's unrestricted ``pickle.load`` of the same file decodes all of them even for the subset).
"""

from __future__ import annotations

import logging
import operator
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gnnbench.data.archive import read_member
from gnnbench.data.download import RawFile
from gnnbench.data.generators.base import Generator
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.safe_pickle import PickledTensor, safe_load, to_numpy
from gnnbench.data.store import SPLIT_CODES, GraphColumns
from gnnbench.errors import DataError

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")
CHUNK = 8192  # molecules converted at once (bounds memory; not part of the data)

ZINC_URL = "https://www.dropbox.com/s/feo9qle74kg48gy/molecules.zip?dl=1"
ZINC_INDEX_URL = "https://raw.githubusercontent.com/graphdeeplearning/benchmarking-gnns/master/data/molecules/{split}.index"
ZINC_INDEX_SHA256 = {  # graphdeeplearning/benchmarking-gnns@b6c40771 (the files PyG downloads)
    "train": "575d6acd72ac207a95947e2bdd16411ef6fc3faa88c2f55a2c496ea43022a6d8",
    "val": "fe48c38157f0d38e7fc441903a143392eda080511a79e8fb8f60f5c1b0a9c164",
    "test": "6aa50d98976044fb36089afef5b4c991b429ca1c8e009d33a0319e42a2d9b525",
}
ZINC_MEMBER = "molecules/{split}.pickle"
ZINC_ATOM_TYPES, ZINC_BOND_TYPES = 28, 4
ZINC_SIZES = {"subset": {"train": 10000, "val": 1000, "test": 1000},
              "full": {"train": 220011, "val": 24445, "test": 5000}}
ZINC_KEYS = ("num_atom", "atom_type", "bond_type", "logP_SA_cycle_normalized")

AQSOL_URL = "https://www.dropbox.com/s/lzu9lmukwov12kt/aqsol_graph_raw.zip?dl=1"
AQSOL_MEMBER = "asqol_graph_raw/{split}.pickle"  # sic: the published folder name
AQSOL_ATOM_TYPES, AQSOL_BOND_TYPES = 65, 5
AQSOL_SIZES = {"train": 7831, "val": 996, "test": 996}  # after the benchmark's filter (raw: 7,985 / 998 / 999)


@dataclass
class _Part:
    """Converted graphs of one split (or chunk) in columnar form."""

    num_nodes: np.ndarray  # (G,) int64
    num_edges: np.ndarray  # (G,) int64
    src: np.ndarray  # (E,) int64, local
    dst: np.ndarray  # (E,) int64, local
    x: np.ndarray  # (N,) atom type ids
    edge_attr: np.ndarray  # (E,) bond type ids
    y: np.ndarray  # (G,) float

    @staticmethod
    def concat(parts: list[_Part]) -> _Part:
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return _Part(empty, empty, empty, empty, empty, empty, np.zeros(0, dtype=np.float32))
        return _Part(*(np.concatenate([getattr(p, f) for p in parts]) for f in
                       ("num_nodes", "num_edges", "src", "dst", "x", "edge_attr", "y")))


# -------------------------------------------------------------------------------------------------------- reading
def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:160] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def read_members(path: Path, members: list[str], what: str) -> dict[str, bytes]:
    """The bytes of archive members (exact names), read in memory; any failure is a one-line DataError."""
    fix = "delete it (and its .sha256 record) and download it again"
    if not path.is_file():
        raise DataError(f"{what} {path} does not exist; download it first (or place it there by hand)")
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            for member in members:
                if member not in names:
                    raise DataError(f"{what} {path} lacks member {member} (expected {', '.join(members)}); it is not "
                                    f"the published archive or is damaged — {fix}")
            out = {}
            for member in members:
                try:
                    out[member] = read_member(archive, member, f"{what} {path}")
                except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
                    raise DataError(f"{what} {path}: member {member} cannot be read ({_reason(exc)}); the archive is "
                                    f"damaged — {fix}") from None
            return out
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise DataError(f"{what} {path} is not a readable zip archive ({_reason(exc)}); {fix}") from None


def read_index(path: Path) -> np.ndarray:
    """Positions of a ZINC subset index file: the first line, comma separated (int64, file order)."""
    fix = "delete it and download it again"
    if not path.is_file():
        raise DataError(f"ZINC index file {path} does not exist; download it first")
    try:
        lines = [line for line in path.read_bytes().decode("ascii").splitlines() if line.strip()]
        if not lines:
            raise ValueError("the file is empty")
        return np.array([int(word) for word in lines[0].split(",")], dtype=np.int64)
    except (UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"ZINC index file {path} is not one line of comma-separated integers ({_reason(exc)}); "
                        f"{fix}") from None


def _list(obj: object, what: str, where: str, content: str) -> list:
    if not isinstance(obj, list):
        raise DataError(f"{what} {where} holds a {type(obj).__name__}, expected a list of {content}; it is not the "
                        "published file — delete the archive and download it again")
    return obj


def _vocabulary(values: np.ndarray, size: int, low: int, what: str, where: str, kind: str) -> None:
    if values.size and (values.min() < low or values.max() >= size):
        bad = values[(values < low) | (values >= size)][0]
        raise DataError(f"{what} {where} has {kind} {int(bad)}, outside {low}..{size - 1} (the published vocabulary); "
                        "it is not the published file — delete the archive and download it again")


# ----------------------------------------------------------------------------------------------------------- ZINC
def _is_count(value: object, expected: int) -> bool:
    try:
        return operator.index(value) == expected
    except TypeError:
        return False


def zinc_part(molecules: list, positions: np.ndarray | None, what: str, where: str) -> _Part:
    """The graphs of ZINC molecules ``positions`` (None: all) of one split's pickle (module doc: conversion)."""
    molecules = _list(molecules, what, where, "molecule dicts")
    if positions is None:
        positions = np.arange(len(molecules), dtype=np.int64)
    outside = (positions < 0) | (positions >= len(molecules))
    if outside.any():
        raise DataError(f"{what} {where} holds {len(molecules)} molecules but its index file names position "
                        f"{int(positions[outside][0])}; the index file does not belong to this molecules.zip — "
                        "delete both and download them again")
    return _Part.concat([_zinc_chunk(molecules, positions[i:i + CHUNK], what, where)
                         for i in range(0, positions.size, CHUNK)])


def _zinc_chunk(molecules: list, positions: np.ndarray, what: str, where: str) -> _Part:
    decoded: dict[int, np.ndarray] = {}  # id(holder) → array: a tensor pickled once (memoised) is decoded once

    def array(holder: object, position: int, key: str) -> np.ndarray:
        got = decoded.get(id(holder))
        if got is None:
            got = decoded[id(holder)] = to_numpy(holder, what, f"{where} (molecule {position}, {key})")
        return got

    atoms, bonds, targets, counts = [], [], [], []
    for position in positions.tolist():  # collecting the pickled arrays; everything else is vectorised below
        mol = molecules[position]
        if not (isinstance(mol, dict) and all(key in mol for key in ZINC_KEYS)):
            raise DataError(f"{what} {where}: molecule {position} is not a dict with keys {', '.join(ZINC_KEYS)}; it "
                            "is not the published file — delete the archive and download it again")
        atoms.append(array(mol["atom_type"], position, "atom_type"))
        bonds.append(array(mol["bond_type"], position, "bond_type"))
        targets.append(array(mol["logP_SA_cycle_normalized"], position, "logP_SA_cycle_normalized"))
        count = mol["num_atom"]
        if isinstance(count, PickledTensor):  # an int in the published files; a one-element tensor is accepted
            count = array(count, position, "num_atom")
            count = count.item() if count.size == 1 else None
        counts.append(count)

    n = np.array([a.size for a in atoms], dtype=np.int64)
    ok = [a.ndim == 1 and b.shape == (k, k) and t.size == 1 and _is_count(c, k)
          for a, b, t, c, k in zip(atoms, bonds, targets, counts, n.tolist(), strict=True)]
    if not all(ok):
        position = int(positions[ok.index(False)])
        raise DataError(f"{what} {where}: molecule {position} is malformed (num_atom, atom_type of N ids, bond_type "
                        "N×N and a one-element target expected); it is not the published file — delete the archive "
                        "and download it again")
    x = np.concatenate(atoms) if atoms else np.zeros(0, dtype=np.int64)
    flat = np.concatenate([b.ravel() for b in bonds]) if bonds else np.zeros(0, dtype=np.int64)
    y = np.concatenate([t.ravel() for t in targets]) if targets else np.zeros(0, dtype=np.float32)
    if x.dtype.kind not in "iu" or flat.dtype.kind not in "iu" or y.dtype.kind != "f" or not np.isfinite(y).all():
        raise DataError(f"{what} {where}: atom/bond types must be integers and targets finite floats (got "
                        f"{x.dtype}, {flat.dtype}, {y.dtype}); it is not the published file — delete the archive and "
                        "download it again")
    _vocabulary(x, ZINC_ATOM_TYPES, 0, what, where, "atom type")
    # nonzero bond entries, row-major per molecule: (molecule, entry) → local (row, column)
    squares = n * n
    entry_graph = np.repeat(np.arange(n.size), squares)
    local = np.arange(flat.size) - np.repeat(np.cumsum(squares) - squares, squares)
    nonzero = np.flatnonzero(flat)
    graph_of, local, attr = entry_graph[nonzero], local[nonzero], flat[nonzero]
    _vocabulary(attr, ZINC_BOND_TYPES, 1, what, where, "bond type")
    src, dst = np.divmod(local, n[graph_of])
    return _Part(n, np.bincount(graph_of, minlength=n.size).astype(np.int64), src, dst, x, attr, y)


def read_zinc(zip_path: str | Path, index_paths: dict[str, Path] | None = None) -> GraphColumns:
    """ZINC graphs from ``molecules.zip``: the subset named by ``index_paths`` (split → index file), or ZINC-full."""
    zip_path = Path(zip_path)
    members = {split: ZINC_MEMBER.format(split=split) for split in SPLITS}
    data = read_members(zip_path, list(members.values()), "ZINC archive")
    parts = {}
    for split, member in members.items():
        positions = None if index_paths is None else read_index(Path(index_paths[split]))
        where = f"{zip_path} member {member}"
        molecules = safe_load(data.pop(member), "ZINC pickle", where)
        parts[split] = zinc_part(molecules, positions, "ZINC pickle", where)
        del molecules
    return _columns(parts)


# ---------------------------------------------------------------------------------------------------------- AQSOL
def aqsol_part(raw: list, what: str, where: str) -> tuple[_Part, dict[str, int]]:
    """The kept AQSOL graphs of one split's raw tuples and the numbers dropped by the two filters."""
    raw = _list(raw, what, where, "(atoms, bonds, edge_index, solubility) tuples")
    atoms, bonds, edges, targets = [], [], [], []
    for i, mol in enumerate(raw):  # collecting the pickled arrays; everything else is vectorised below
        ok = isinstance(mol, (tuple, list)) and len(mol) == 4 and all(isinstance(a, np.ndarray) for a in mol[:3])
        if ok:
            x, attr, index = mol[0], mol[1], mol[2].reshape(2, -1) if mol[2].size == 0 else mol[2]
            ok = (x.ndim == 1 and attr.ndim == 1 and index.ndim == 2 and index.shape == (2, attr.size)
                  and all(a.dtype.kind in "iu" for a in (x, attr, index)) and isinstance(mol[3], (float, np.floating)))
        if not ok:
            raise DataError(f"{what} {where}: molecule {i} is not (atom ids[N], bond ids[E], edge_index[2, E], "
                            "solubility); it is not the published file — delete the archive and download it again")
        atoms.append(x)
        bonds.append(attr)
        edges.append(index)
        targets.append(float(mol[3]))
    num_nodes = np.array([a.size for a in atoms], dtype=np.int64)
    num_edges = np.array([b.size for b in bonds], dtype=np.int64)
    x = np.concatenate(atoms) if atoms else np.zeros(0, dtype=np.int64)
    attr = np.concatenate(bonds) if bonds else np.zeros(0, dtype=np.int64)
    index = np.concatenate(edges, axis=1) if edges else np.zeros((2, 0), dtype=np.int64)
    y = np.array(targets, dtype=np.float64)
    if index.size and index.min() < 0:
        raise DataError(f"{what} {where}: an edge_index holds a negative atom index; it is not the published file — "
                        "delete the archive and download it again")
    if not np.isfinite(y).all():
        raise DataError(f"{what} {where}: a solubility is not a finite number; it is not the published file — delete "
                        "the archive and download it again")
    _vocabulary(x, AQSOL_ATOM_TYPES, 0, what, where, "atom type")
    _vocabulary(attr, AQSOL_BOND_TYPES, 0, what, where, "bond type")
    # the node count DGL infers from the edge list: largest index + 1 (0 without edges)
    starts = np.cumsum(num_edges) - num_edges
    has_edges = num_edges > 0
    inferred = np.zeros(num_nodes.size, dtype=np.int64)
    if index.size:
        inferred[has_edges] = np.maximum.reduceat(index.max(axis=0), starts[has_edges]) + 1
    keep = has_edges & (inferred == num_nodes)
    dropped = {"no_edges": int(np.count_nonzero(~has_edges)),
               "isolated_last_atoms": int(np.count_nonzero(has_edges & (inferred != num_nodes)))}
    node_keep, edge_keep = np.repeat(keep, num_nodes), np.repeat(keep, num_edges)
    part = _Part(num_nodes[keep], num_edges[keep], index[0][edge_keep], index[1][edge_keep], x[node_keep],
                 attr[edge_keep], y[keep])
    return part, dropped


def read_aqsol(zip_path: str | Path) -> tuple[GraphColumns, dict[str, dict[str, int]]]:
    """AQSOL graphs from ``aqsol_graph_raw.zip`` (filtered as the benchmark does) and the dropped counts per split."""
    zip_path = Path(zip_path)
    members = {split: AQSOL_MEMBER.format(split=split) for split in SPLITS}
    data = read_members(zip_path, list(members.values()), "AQSOL archive")
    parts, dropped = {}, {}
    for split, member in members.items():
        where = f"{zip_path} member {member}"
        parts[split], dropped[split] = aqsol_part(safe_load(data.pop(member), "AQSOL pickle", where),
                                                  "AQSOL pickle", where)
    return _columns(parts), dropped


# ----------------------------------------------------------------------------------------------------- generators
def _columns(parts: dict[str, _Part]) -> GraphColumns:
    """Graph columns of the three splits, stored train, val, test, with the graph column ``split``."""
    both = _Part.concat([parts[split] for split in SPLITS])
    codes = np.repeat(np.array([SPLIT_CODES[s] for s in SPLITS], dtype=np.int8),
                      [parts[s].num_nodes.size for s in SPLITS])
    columns = GraphColumns(num_nodes=both.num_nodes, num_edges=both.num_edges, src=both.src.astype(np.int32),
                           dst=both.dst.astype(np.int32), node={"x": both.x.astype(np.int16)},
                           edge={"edge_attr": both.edge_attr.astype(np.int16)},
                           graph={"y": both.y.astype(np.float32), "split": codes})
    columns.validate()
    return columns


def zinc_raw_files(params: dict) -> list[RawFile]:
    """``molecules.zip`` and, for the 12k subset, the benchmark's three index files (SHA-256 pinned)."""
    files = [RawFile("zinc/molecules.zip", None, (ZINC_URL,))]
    if params["subset"]:
        files += [RawFile(f"zinc/{split}.index", None, (ZINC_INDEX_URL.format(split=split),),
                          sha256=ZINC_INDEX_SHA256[split]) for split in SPLITS]
    return files


def aqsol_raw_files(params: dict) -> list[RawFile]:
    """The raw files AQSOL needs: ``aqsol_graph_raw.zip``."""
    return [RawFile("aqsol/aqsol_graph_raw.zip", None, (AQSOL_URL,))]


def _build_zinc(params: dict, seed: int, raw_dir: Path) -> GraphColumns:
    raw_dir = Path(raw_dir)
    index = {split: raw_dir / "zinc" / f"{split}.index" for split in SPLITS} if params["subset"] else None
    return read_zinc(raw_dir / "zinc" / "molecules.zip", index)


def _build_aqsol(params: dict, seed: int, raw_dir: Path) -> GraphColumns:
    columns, dropped = read_aqsol(Path(raw_dir) / "aqsol" / "aqsol_graph_raw.zip")
    log.info("AQSOL: molecules dropped by the benchmark's filter (no edges / isolated last atoms): %s", dropped)
    return columns


def _meta(name: str, atoms: int, bonds: int, sizes: dict[str, int], source: dict) -> DatasetMeta:
    return DatasetMeta(name=name, task="graph_regression", loss="l1", metric="mae", num_outputs=1,
                       num_graphs=sum(sizes.values()), node_features=FeatureSpec("categorical", atoms),
                       edge_features=FeatureSpec("categorical", bonds), pe_usage="add", split_sizes=dict(sizes),
                       source=source)


def describe_zinc(name: str, params: dict, seed: int) -> DatasetMeta:
    """ZINC's description: 28 atom and 4 bond types, L1 regression; subset or ZINC-full split sizes."""
    subset = params["subset"]
    source = {"generator": "zinc", "seed": seed, "params": {k: v for k, v in params.items() if k != "mirror"},
              "url": ZINC_URL, "preprocessing": [
                  "12k subset: molecules at the positions of {train,val,test}.index, in index order" if subset
                  else "ZINC-full: every molecule, pickle order",
                  "x = atom_type (28 types); edges = nonzero bond_type entries, row-major (both directions)",
                  "edge_attr = bond type (1..3, vocabulary 4); y = logP_SA_cycle_normalized, not normalised"],
              "raw_files": {f.relative_path: f.sha256 for f in zinc_raw_files(params)}}
    return _meta(name, ZINC_ATOM_TYPES, ZINC_BOND_TYPES, ZINC_SIZES["subset" if subset else "full"], source)


def describe_aqsol(name: str, params: dict, seed: int) -> DatasetMeta:
    """AQSOL's description: 65 atom and 5 bond types, L1 regression, the filtered split sizes."""
    source = {"generator": "aqsol", "seed": seed, "params": {k: v for k, v in params.items() if k != "mirror"},
              "url": AQSOL_URL, "preprocessing": [
                  "dropped: molecules without edges, and molecules with max(edge_index) + 1 != atoms (the "
                  "benchmark's filter; PyG's AQSOL keeps the latter)",
                  "x = atom type (65 types); edges and edge_attr = the raw edge_index and bond types (vocabulary 5)",
                  "y = solubility (log mol/L), not normalised"],
              "raw_files": {f.relative_path: f.sha256 for f in aqsol_raw_files(params)}}
    return _meta(name, AQSOL_ATOM_TYPES, AQSOL_BOND_TYPES, AQSOL_SIZES, source)


ZINC = Generator(
    name="zinc",
    description="ZINC molecules (benchmark 12k subset, or ZINC-full with subset: false) from molecules.zip and the "
                "benchmark's index files: constrained solubility regression",
    defaults={"subset": True, "mirror": ""},
    default_split={"scheme": "given"},
    describe=describe_zinc,
    build=_build_zinc,
    raw_files=zinc_raw_files,
)

AQSOL = Generator(
    name="aqsol",
    description="AQSOL molecules (AqSolDB, scaffold split) from aqsol_graph_raw.zip, filtered as the benchmark "
                "does: aqueous solubility regression",
    defaults={"mirror": ""},
    default_split={"scheme": "given"},
    describe=describe_aqsol,
    build=_build_aqsol,
    raw_files=aqsol_raw_files,
)
