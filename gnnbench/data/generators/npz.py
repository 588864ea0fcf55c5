"""Shchur et al.'s gnn-benchmark graphs from their ``.npz`` files (docs/datasets.md#gnn-benchmark-npz-graphs).

Raw file: ``data/npz/{file}`` of shchur/gnn-benchmark (the URL PyG's ``Amazon`` and ``Coauthor`` download), fetched
into ``raw_dir/gnn-benchmark/``. No checksum is published: the SHA-256 is recorded at first download and verified
on every reuse, and ``meta.source.raw_sha256`` holds the value of the file that was read.

=================  =====================================
``name``           file
=================  =====================================
cora               cora.npz
citeseer           citeseer.npz
pubmed             pubmed.npz
cora_full          cora_full.npz
coauthor_cs        ms_academic_cs.npz
coauthor_physics   ms_academic_phy.npz
amazon_computers   amazon_electronics_computers.npz
amazon_photo       amazon_electronics_photo.npz
=================  =====================================

Reading (``np.load(allow_pickle=False)``, so no object arrays and no code; every member first checked by
:func:`gnnbench.data.archive.check_member`, so a zip bomb is refused unread): only the keys the released code's
reader (shchur/gnn-benchmark, ``gnnbench/data/io.py``) uses are read — the CSR adjacency
``adj_data/adj_indices/adj_indptr/adj_shape``; the features as CSR ``attr_data/attr_indices/attr_indptr/attr_shape``
or dense ``attr_matrix``; the integer ``labels`` (one per node). Names and metadata are
ignored. A missing key, multi-label ``labels_*`` or inconsistent arrays are a one-line :class:`DataError` naming the
key and the file.

``standardize: true`` = Shchur et al.'s preprocessing (:func:`gnnbench.data.transductive.standardize`);
``drop_classes_up_to`` = m > 0 additionally drops every class with ≤ m nodes in the largest component and repeats steps
1–4 once (step 5; the suite sets 50 for CORA-Full; the generator has no dataset-name branch). ``standardize: false``
stores the graph as read (adjacency made symmetric and unweighted, self loops kept once; features as stored; labels as
stored, which must be non-negative) — for inspection, not used by the paper. Features are stored as the sparse node
column ``x``. ``seed`` is not used; ``mirror`` is tried before the canonical URL and is not recorded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from gnnbench.data.archive import open_npz
from gnnbench.data.download import RawFile
from gnnbench.data.generators.base import Generator
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns
from gnnbench.data.transductive import (
    RawGraph,
    csr_from_parts,
    node_classification_meta,
    standardize,
    symmetric_unweighted,
    to_graph_columns,
)
from gnnbench.errors import ConfigError, DataError

URL = "https://github.com/shchur/gnn-benchmark/raw/master/data/npz/{file}"
FILES = {"cora": "cora.npz", "citeseer": "citeseer.npz", "pubmed": "pubmed.npz", "cora_full": "cora_full.npz",
         "coauthor_cs": "ms_academic_cs.npz", "coauthor_physics": "ms_academic_phy.npz",
         "amazon_computers": "amazon_electronics_computers.npz", "amazon_photo": "amazon_electronics_photo.npz"}
# (features, classes) of the raw files (paper Table 3; CORA-Full: 70 classes before the class filter). The written
# meta.json takes both from the data (gnnbench.data.meta.write_dataset).
PUBLISHED = {"cora": (1433, 7), "citeseer": (3703, 6), "pubmed": (500, 3), "cora_full": (8710, 70),
             "coauthor_cs": (6805, 15), "coauthor_physics": (8415, 5), "amazon_computers": (767, 10),
             "amazon_photo": (745, 8)}
WHAT = "gnn-benchmark npz file"


def raw_file(name: str) -> RawFile:
    """The npz file of dataset ``name`` (a key of :data:`FILES`), to be fetched into ``raw_dir/gnn-benchmark/``."""
    file = FILES[name]
    return RawFile(f"gnn-benchmark/{file}", None, (URL.format(file=file),))


def raw_files(params: dict) -> list[RawFile]:
    """The raw files the dataset needs: its one npz file."""
    return [raw_file(params["name"])]


def read_npz(path: str | Path) -> RawGraph:
    """The graph of a gnn-benchmark npz file as stored (no preprocessing); labels int64."""
    path = Path(path)
    with open_npz(path, WHAT, "delete it and download it again") as archive:
        keys = set(archive.files)

        def get(key: str) -> np.ndarray:
            if key not in keys:
                raise DataError(f"{WHAT} {path} lacks the key {key!r} (gnn-benchmark's npz format: adj_*, "
                                "attr_*, labels); the file is not a gnn-benchmark graph or is damaged — delete it "
                                "and download it again")
            return archive[key]

        adjacency = _csr(get, "adj", path)
        if "attr_data" in keys or "attr_matrix" not in keys:
            features = _csr(get, "attr", path)
        else:
            features = sp.csr_matrix(np.asarray(get("attr_matrix"), dtype=np.float32))
        if "labels" not in keys and "labels_data" in keys:
            raise DataError(f"{WHAT} {path} has multi-label labels (labels_data, ...); gnnbench reads single "
                            "labels (the key 'labels') only")
        labels = get("labels")
    n = adjacency.shape[0]
    if adjacency.shape != (n, n):
        raise DataError(f"{WHAT} {path}: adj_shape {adjacency.shape} is not square; delete it and download it again")
    if features.shape[0] != n:
        raise DataError(f"{WHAT} {path}: the features have {features.shape[0]} rows for {n} nodes; delete it and "
                        "download it again")
    if labels.shape != (n,) or not np.issubdtype(labels.dtype, np.integer):
        raise DataError(f"{WHAT} {path}: 'labels' must be {n} integers (one per node), got {labels.dtype} "
                        f"{labels.shape}; delete it and download it again")
    labels = labels.astype(np.int64)
    if labels.size and labels.min() < 0:
        raise DataError(f"{WHAT} {path}: 'labels' holds negative classes; delete it and download it again")
    classes = int(labels.max(initial=-1)) + 1
    return RawGraph(adjacency, features.astype(np.float32), labels, np.arange(n, dtype=np.int64),
                     np.arange(classes, dtype=np.int64))


def _csr(get, prefix: str, path: Path) -> sp.csr_matrix:
    parts = [get(f"{prefix}_{part}") for part in ("data", "indices", "indptr", "shape")]
    try:
        return csr_from_parts(*parts, name=f"{prefix}_*")
    except ValueError as exc:
        raise DataError(f"{WHAT} {path}: {exc}; delete it and download it again") from None


def _build(params: dict, seed: int, raw_dir: Path) -> GraphColumns:
    graph = read_npz(Path(raw_dir) / raw_file(params["name"]).relative_path)
    if params["standardize"]:
        graph = standardize(graph, params["drop_classes_up_to"])
    else:
        graph.adjacency = symmetric_unweighted(graph.adjacency)
    return to_graph_columns(graph.adjacency, graph.features, graph.labels)


def describe(name: str, params: dict, seed: int) -> DatasetMeta:
    """The dataset's description before conversion (feature width and classes of the raw file; the written
    ``meta.json`` takes both from the converted data)."""
    width, classes = PUBLISHED[params["name"]]
    steps = []
    if params["standardize"]:
        steps = ["unweighted", "undirected", "remove self loops",
                 "largest connected component (nodes in ascending original order)"]
        if params["drop_classes_up_to"] > 0:
            steps += [f"drop classes with <= {params['drop_classes_up_to']} nodes, then repeat the four steps above"]
        steps += ["labels re-indexed over the classes present", "binary features (every stored nonzero = 1)"]
    else:
        steps = ["symmetric unweighted adjacency (self loops kept once)", "features as stored"]
    source = {"generator": "npz", "seed": seed, "params": {k: v for k, v in params.items() if k != "mirror"},
              "preprocessing": steps, "raw_files": {raw_file(params["name"]).relative_path: None}}
    return node_classification_meta(name, classes, FeatureSpec("continuous", width, sparse=True), source)


def _check(params: dict, where: str) -> None:
    if params["name"] not in FILES:
        raise ConfigError(f"{where}.name: {params['name']!r} is not a gnn-benchmark npz dataset; choose one of "
                          f"{', '.join(FILES)}")
    if params["drop_classes_up_to"] and not params["standardize"]:
        raise ConfigError(f"{where}.drop_classes_up_to: the class filter is part of the standardisation; set "
                          "standardize: true or drop_classes_up_to: 0")


NPZ = Generator(
    name="npz",
    description="Shchur et al.'s gnn-benchmark graphs (Cora, CiteSeer, PubMed, Cora-Full, Coauthor CS/Physics, "
                "Amazon Computers/Photo) from their npz files, standardised as in the paper (node classification)",
    defaults={"name": "cora", "standardize": True, "drop_classes_up_to": 0, "mirror": ""},
    default_split={"scheme": "random_per_class", "train_per_class": 20, "val_per_class": 30},
    describe=describe,
    build=_build,
    check=_check,
    raw_files=raw_files,
)
