"""OGBL-COLLAB, the benchmark's link-prediction dataset, from OGB's own zip (Hu et al., NeurIPS 2020;
docs/datasets.md#ogbl-collab).

Raw file: ``http://snap.stanford.edu/ogb/data/linkproppred/collab.zip`` — the file ``ogb`` 1.3.6 downloads for
``ogbl-collab`` (``ogb/linkproppred/master.csv``) — fetched into ``raw_dir/ogb/collab.zip`` by gnnbench's downloader
(``ogb`` never downloads anything). No checksum is published: the SHA-256 is recorded at first download and verified
on every reuse (:mod:`gnnbench.data.download`); ``meta.source.raw_sha256`` holds the value of the file read.
``mirror`` (a folder URL holding ``collab.zip``) is tried first and not recorded.

Reading (:func:`read_collab_zip`): the zip is read in memory (nothing is extracted; members and the gzip streams in
them are bounded by :mod:`gnnbench.data.archive`, so a zip or gzip bomb is refused). Members are found by their path
under the dataset folder, wherever that folder sits (OGB's zip stores ``collab/raw/...``, ``collab/split/time/...``):

* ``raw/edge.csv.gz`` (one undirected collaboration ``u,v`` per line, the training edges), ``raw/node-feat.csv.gz``
  (128 floats per author), ``raw/edge_weight.csv.gz`` and ``raw/edge_year.csv.gz`` (one integer per edge),
  ``raw/num-node-list.csv.gz`` and ``raw/num-edge-list.csv.gz`` (one graph: one line each). Every file is parsed by
  the call OGB's reader (``ogb/io/read_graph_raw.py``) makes — ``pandas.read_csv(compression="gzip", header=None)`` —
  so the values are bit-identical to OGB's (features float64 → float32 as OGB casts them);
* ``split/time/{train,valid,test}.pt``: dicts of ``edge`` (P, 2), ``weight``, ``year`` and, for valid/test,
  ``edge_neg`` (Q, 2), read with ``torch.load(weights_only=True)``. Values may be tensors or NumPy arrays (OGB's
  loader converts either): NumPy arrays are admitted through an allow-list of NumPy's array-reconstruction globals
  only, so a ``.pt`` naming anything else is refused before anything runs.

Conversion (what ``PygLinkPropPredDataset('ogbl-collab')`` / ``DglLinkPropPredDataset`` give, which the original
benchmark trains on):

* one graph of ``num-node-list`` nodes, node column ``x`` = node-feat (float32, (N, 128));
* edges = the training edges **in both directions**, in OGB's order (``add_inverse_edge`` in ``master.csv``): edge i
  of the file becomes rows 2i (u→v) and 2i+1 (v→u). Pairs listed more than once (the same authors in several years)
  stay several edges, as in OGB (a multigraph);
* edge column ``edge_attr`` = [weight, year] (float32, (E, 2)), raw and unnormalised, repeated for both directions —
  the original's ``cat([edge_weight, edge_year])``;
* evaluation pairs (:mod:`gnnbench.data.link_pairs`, ``pairs.parquet``): train positives = ``train.pt`` ``edge``;
  val = ``valid.pt`` ``edge`` (positives) and ``edge_neg`` (negatives); test likewise, each in file order. All
  negatives are stored: the original scores only the first |pos| of them, which the training loop applies
  (:mod:`gnnbench.training.link_prediction`).

``meta.pe_solver`` is ``sparse``: Laplacian PE by ARPACK ``eigs`` (tol 1e-2), the original COLLAB loader's choice
(:mod:`gnnbench.features.laplacian_pe`). Counts are not checked against the published ones (235,868 nodes,
1,179,052 training edges; valid 60,084 + 100,000; test 46,329 + 100,000) — they are logged, and the recorded SHA-256
identifies the file. Bad input — not a zip, a damaged member, a missing member, a malformed table, counts that do not
fit, a node id outside the graph, a ``.pt`` with a forbidden object — is a one-line :class:`DataError` naming the
file (and member) and the fix; nothing is written. ``seed`` is not used.
"""

from __future__ import annotations

import gzip
import io
import logging
import pickle
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gnnbench.data.archive import check_zip, read_gzip, read_member
from gnnbench.data.download import RawFile
from gnnbench.data.generators.base import Generator
from gnnbench.data.link_pairs import LinkColumns, LinkPairs
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.errors import DataError

log = logging.getLogger(__name__)

URL = "http://snap.stanford.edu/ogb/data/linkproppred/collab.zip"
RELATIVE_PATH = "ogb/collab.zip"
WHAT = "OGBL-COLLAB zip"
NODE_FEATURES = 128
RAW_MEMBERS = ("edge", "node-feat", "edge_weight", "edge_year", "num-node-list", "num-edge-list")  # raw/*.csv.gz
SPLIT_DIR = "split/time"  # master.csv: split "time"
SPLIT_PARTS = {"train": "train", "valid": "val", "test": "test"}  # OGB's file name → gnnbench part
PUBLISHED = {"nodes": 235_868, "edges": 1_179_052, "valid": (60_084, 100_000), "test": (46_329, 100_000)}
# pair rows of each part (positives + negatives) of the published files: the split sizes before conversion
PUBLISHED_SPLIT = {"train": 1_179_052, "val": 160_084, "test": 146_329}


def raw_files(params: dict) -> list[RawFile]:
    """The raw files the dataset needs: OGB's ``collab.zip``."""
    return [RawFile(RELATIVE_PATH, None, (URL,))]


@dataclass
class CollabRaw:
    """The zip's contents as read: the graph's training edges with weight and year, features, the split dicts."""

    num_nodes: int
    edge: np.ndarray  # (E, 2) int64, as listed (one direction)
    weight: np.ndarray  # (E,) int64
    year: np.ndarray  # (E,) int64
    node_feat: np.ndarray  # (N, 128) float32
    split: dict[str, dict[str, np.ndarray]]  # OGB part name (train/valid/test) → {"edge", "edge_neg", ...}


# ---------------------------------------------------------------------------------------------------------- reading
def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:160] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _fix() -> str:
    return "delete it (and its .sha256 record) and download it again"


def _members(archive: zipfile.ZipFile, path: Path) -> dict[str, zipfile.ZipInfo]:
    """Members by their path under the dataset folder (``raw/edge.csv.gz``, ``split/time/train.pt``, ...)."""
    wanted = [f"raw/{name}.csv.gz" for name in RAW_MEMBERS] + [f"{SPLIT_DIR}/{p}.pt" for p in SPLIT_PARTS]
    found: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        name = info.filename
        for key in wanted:
            if not info.is_dir() and (name == key or name.endswith("/" + key)):
                if key in found:
                    raise DataError(f"{WHAT} {path} holds {key} twice ({found[key].filename}, {name}); it is not "
                                    f"OGB's collab.zip — {_fix()}")
                found[key] = info
    missing = [key for key in wanted if key not in found]
    if missing:
        raise DataError(f"{WHAT} {path} lacks {missing[0]} (OGB layout: collab/raw/*.csv.gz, collab/{SPLIT_DIR}/"
                        f"{{train,valid,test}}.pt); it is not ogbl-collab or is damaged — {_fix()}")
    return found


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path) -> bytes:
    try:
        return read_member(archive, info, f"{WHAT} {path}")
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise DataError(f"{WHAT} {path}: member {info.filename} cannot be read ({_reason(exc)}); the zip is damaged "
                        f"— {_fix()}") from None


def _csv(data: bytes, info: zipfile.ZipInfo, path: Path) -> np.ndarray:
    """A gzipped headerless CSV member as OGB's reader parses it (a 2-d array, one row per line)."""
    import pandas as pd  # only this reader needs it: the generator registry stays without pandas

    try:
        text = read_gzip(data, f"{WHAT} {path}: member {info.filename}")  # bounded: a gzip bomb is refused
        values = pd.read_csv(io.BytesIO(text), header=None).values
    except (gzip.BadGzipFile, zlib.error, EOFError, OSError, ValueError, pd.errors.ParserError,
            pd.errors.EmptyDataError) as exc:
        raise DataError(f"{WHAT} {path}: member {info.filename} is not a gzipped table of numbers ({_reason(exc)}); "
                        f"{_fix()}") from None
    if not (np.issubdtype(values.dtype, np.integer) or np.issubdtype(values.dtype, np.floating)):
        raise DataError(f"{WHAT} {path}: member {info.filename} holds non-numeric values; {_fix()}")
    return values


def _numpy_globals() -> list:
    """What ``torch.load(weights_only=True)`` needs to rebuild plain NumPy arrays (and nothing else): NumPy's array
    reconstruction under its NumPy 2 and NumPy 1 names, ``ndarray``, ``dtype`` and the numeric dtype classes."""
    try:
        from numpy._core import multiarray
    except ImportError:  # NumPy 1
        from numpy.core import multiarray
    dtypes = [type(np.dtype(t)) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                          "uint64", "float16", "float32", "float64")]
    return [multiarray._reconstruct, (multiarray._reconstruct, "numpy.core.multiarray._reconstruct"),
            (multiarray._reconstruct, "numpy._core.multiarray._reconstruct"), np.ndarray, np.dtype, *dtypes]


def _split_dict(data: bytes, info: zipfile.ZipInfo, path: Path) -> dict[str, np.ndarray]:
    """A split ``.pt``: a dict of tensors or NumPy arrays, loaded without running code from the file."""
    import torch  # only this reader needs it: the generator registry stays without torch

    try:
        source = io.BytesIO(data)
        check_zip(source, f"{WHAT} {path}: member {info.filename} (a torch.save zip)")  # records bounded first
        with torch.serialization.safe_globals(_numpy_globals()):
            obj = torch.load(source, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError, KeyError, AttributeError,
            TypeError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        named = re.search(r"GLOBAL (\S+)|but got (<[^>]+>)", str(exc))
        reason = (f"it names {named.group(1) or named.group(2)}, which is not allowed: only tensors and NumPy arrays"
                  if isinstance(exc, pickle.UnpicklingError) and named else _reason(exc))
        raise DataError(f"{WHAT} {path}: member {info.filename} cannot be loaded safely ({reason}); it is not OGB's "
                        f"split file — {_fix()}") from None
    if not isinstance(obj, dict):
        raise DataError(f"{WHAT} {path}: member {info.filename} holds {type(obj).__name__}, expected a dict of "
                        f"arrays; {_fix()}")
    out = {}
    for key, value in obj.items():
        if isinstance(value, torch.Tensor):
            value = value.numpy()
        if not isinstance(value, np.ndarray):
            raise DataError(f"{WHAT} {path}: member {info.filename} key {key!r} holds {type(value).__name__}, "
                            f"expected an array; {_fix()}")
        out[str(key)] = value
    return out


def read_collab_zip(path: str | Path) -> CollabRaw:
    """The contents of OGB's ``collab.zip`` (module doc: members, formats, checks)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{WHAT} {path} does not exist; download it first (or place collab.zip there)")
    try:
        with zipfile.ZipFile(path) as archive:
            members = _members(archive, path)
            data = {key: _read_member(archive, info, path) for key, info in members.items()}
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise DataError(f"{WHAT} {path} is not a readable zip archive ({_reason(exc)}); {_fix()}") from None
    tables = {name: _csv(data[f"raw/{name}.csv.gz"], members[f"raw/{name}.csv.gz"], path) for name in RAW_MEMBERS}
    split = {part: _split_dict(data[f"{SPLIT_DIR}/{part}.pt"], members[f"{SPLIT_DIR}/{part}.pt"], path)
             for part in SPLIT_PARTS}

    def bad(key: str, message: str) -> DataError:
        return DataError(f"{WHAT} {path}: {members[key].filename} {message}; the zip is damaged or not ogbl-collab "
                         f"— {_fix()}")

    def integers(key: str, values: np.ndarray, columns: int) -> np.ndarray:
        if not np.issubdtype(values.dtype, np.integer) or values.ndim != 2 or values.shape[1] != columns:
            raise bad(key, f"holds {values.dtype} values of shape {values.shape}, expected integers with {columns} "
                      f"column(s)")
        return values.astype(np.int64)

    counts = {}
    for name in ("num-node-list", "num-edge-list"):
        key = f"raw/{name}.csv.gz"
        values = integers(key, tables[name], 1)
        if values.shape[0] != 1 or values[0, 0] < 0:
            raise bad(key, f"lists {values.shape[0]} graphs, expected one (a single graph)")
        counts[name] = int(values[0, 0])
    num_nodes, num_edges = counts["num-node-list"], counts["num-edge-list"]
    edge = integers("raw/edge.csv.gz", tables["edge"], 2)
    if edge.shape[0] != num_edges:
        raise bad("raw/edge.csv.gz", f"has {edge.shape[0]} edges but num-edge-list.csv.gz says {num_edges}")
    node_feat = tables["node-feat"]
    if node_feat.ndim != 2 or node_feat.shape != (num_nodes, NODE_FEATURES):
        raise bad("raw/node-feat.csv.gz", f"has shape {node_feat.shape}, expected ({num_nodes}, {NODE_FEATURES}) "
                  "(num-node-list × 128 features)")
    per_edge = {}
    for name in ("edge_weight", "edge_year"):
        key = f"raw/{name}.csv.gz"
        values = integers(key, tables[name], 1)
        if values.shape[0] != num_edges:
            raise bad(key, f"has {values.shape[0]} lines for the {num_edges} edges of edge.csv.gz")
        per_edge[name] = values[:, 0]
    _check_nodes(edge, num_nodes, lambda message: bad("raw/edge.csv.gz", message))
    for part, arrays in split.items():
        key = f"{SPLIT_DIR}/{part}.pt"
        for name in ("edge",) if part == "train" else ("edge", "edge_neg"):
            values = arrays.get(name)
            if values is None:
                raise bad(key, f"has no {name!r} entry (keys: {', '.join(sorted(arrays)) or 'none'})")
            if not np.issubdtype(values.dtype, np.integer) or values.ndim != 2 or values.shape[1] != 2:
                raise bad(key, f"{name!r} holds {values.dtype} values of shape {values.shape}, expected (P, 2) "
                          "node ids")
            arrays[name] = values.astype(np.int64)
            _check_nodes(arrays[name], num_nodes, lambda message, k=key, n=name: bad(k, f"{n!r}: {message}"))
    return CollabRaw(num_nodes=num_nodes, edge=edge, weight=per_edge["edge_weight"], year=per_edge["edge_year"],
                     node_feat=node_feat.astype(np.float32), split=split)


def _check_nodes(pairs: np.ndarray, num_nodes: int, bad) -> None:
    outside = (pairs < 0) | (pairs >= num_nodes)
    if outside.any():
        row = int(np.flatnonzero(outside.any(axis=1))[0])
        raise bad(f"row {row} names node {int(pairs[row][outside[row]][0])}, outside 0..{num_nodes - 1}")


# -------------------------------------------------------------------------------------------------------- converting
def to_link_columns(raw: CollabRaw) -> LinkColumns:
    """The graph (training edges both ways, OGB's interleaved order), its features and the evaluation pairs."""
    num_edges = raw.edge.shape[0]
    src = np.empty(2 * num_edges, dtype=np.int32)
    dst = np.empty(2 * num_edges, dtype=np.int32)
    src[0::2], dst[0::2] = raw.edge[:, 0], raw.edge[:, 1]  # edge i → rows 2i (u→v) and 2i+1 (v→u)
    src[1::2], dst[1::2] = raw.edge[:, 1], raw.edge[:, 0]
    edge_attr = np.repeat(np.stack([raw.weight, raw.year], axis=1).astype(np.float32), 2, axis=0)
    pairs = LinkPairs.from_parts({SPLIT_PARTS[part]: (arrays["edge"], arrays.get("edge_neg"))
                                  for part, arrays in raw.split.items()})
    columns = LinkColumns(num_nodes=np.array([raw.num_nodes], dtype=np.int64),
                          num_edges=np.array([2 * num_edges], dtype=np.int64), src=src, dst=dst,
                          node={"x": raw.node_feat}, edge={"edge_attr": edge_attr}, pairs=pairs)
    columns.validate()
    pairs.validate(raw.num_nodes)
    return columns


def _build(params: dict, seed: int, raw_dir: Path) -> LinkColumns:
    path = Path(raw_dir) / RELATIVE_PATH
    raw = read_collab_zip(path)
    got = {"nodes": raw.num_nodes, "edges": raw.edge.shape[0],
           **{part: (raw.split[part]["edge"].shape[0], raw.split[part]["edge_neg"].shape[0])
              for part in ("valid", "test")}}
    if got != PUBLISHED:
        log.info("%s: %s differ from the published ogbl-collab counts %s", path, got, PUBLISHED)
    return to_link_columns(raw)


def describe(name: str, params: dict, seed: int) -> DatasetMeta:
    """The dataset's description: one graph, 128 node features, [weight, year] edge features, link
    prediction scored by Hits@50, the published pair counts as split sizes."""
    source = {"generator": "ogbl_collab", "seed": seed, "params": {k: v for k, v in params.items() if k != "mirror"},
              "url": URL,
              "preprocessing": ["one graph: the training edges of raw/edge.csv.gz in both directions, OGB's order "
                                "(edge i -> rows 2i, 2i+1), repeated pairs kept",
                                "node x = raw/node-feat.csv.gz (128 floats); edge_attr = [weight, year], raw",
                                "pairs.parquet: train positives, val/test positives and all negatives of "
                                f"{SPLIT_DIR}/*.pt, in file order"],
              "raw_files": {RELATIVE_PATH: None}}
    return DatasetMeta(name=name, task="link_prediction", loss="link_bce", metric="hits@50", num_outputs=1,
                       num_graphs=1, node_features=FeatureSpec("continuous", NODE_FEATURES),
                       edge_features=FeatureSpec("continuous", 2), pe_usage="add", split_sizes=dict(PUBLISHED_SPLIT),
                       source=source, pe_solver="sparse")


OGBL_COLLAB = Generator(
    name="ogbl_collab",
    description="OGBL-COLLAB link prediction (OGB's collab.zip): one co-authorship graph of the training edges, "
                "128 node features, [weight, year] edge features, OGB's time split of evaluation pairs",
    defaults={"mirror": ""},
    default_split={"scheme": "given"},
    describe=describe,
    build=_build,
    raw_files=raw_files,
)
