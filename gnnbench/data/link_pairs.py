"""The node pairs a link-prediction dataset is evaluated on (``pairs.parquet``, beside ``graphs.parquet``).

A link-prediction dataset (OGBL-COLLAB) is one graph — the message-passing graph, made of the training edges — plus
sets of node pairs: the training positives, and the validation and test positives and negatives. The pairs are data
of the dataset, written with it and checksummed like it:

* in memory a :class:`LinkPairs` (one row per pair: ``src``, ``dst``, ``part`` — 0 train, 1 val, 2 test, the codes of
  :data:`gnnbench.data.store.SPLIT_CODES` — and ``label`` — 1 positive, 0 negative); a generator returns it with the
  graph as :class:`LinkColumns`;
* on disk ``pairs.parquet``, columns ``src``, ``dst`` (int32), ``part``, ``label`` (int8), rows in the source's order
  (train positives, val positives, val negatives, test positives, test negatives). :func:`gnnbench.data.meta.
  write_dataset` writes it before ``graphs.parquet`` and ``meta.json`` (each atomically; ``meta.json`` last, so a
  folder with a ``meta.json`` has both files) and records its SHA-256 in ``meta.extra_files``; :func:`read_pairs`
  checks it against that record.

The split file of such a dataset (scheme ``given``, level ``pair``) lists the rows of each part
(:mod:`gnnbench.splits`); the training loop is :mod:`gnnbench.training.link_prediction`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gnnbench.data.store import SPLIT_CODES, GraphColumns, read_parquet
from gnnbench.errors import DataError
from gnnbench.io import atomic_path, sha256_file

if TYPE_CHECKING:  # annotations only: gnnbench.data.meta writes this module's pairs
    from gnnbench.data.meta import DatasetMeta

PAIRS_FILE = "pairs.parquet"
PARTS = tuple(SPLIT_CODES)  # train, val, test


@dataclass
class LinkPairs:
    """Evaluation pairs, one row each: ``src``/``dst`` node ids, ``part`` code, ``label`` (1 edge, 0 non-edge)."""

    src: np.ndarray  # (P,) int64
    dst: np.ndarray  # (P,) int64
    part: np.ndarray  # (P,) int8, SPLIT_CODES
    label: np.ndarray  # (P,) int8

    @classmethod
    def from_parts(cls, parts: dict[str, tuple[np.ndarray, np.ndarray | None]]) -> LinkPairs:
        """From ``{part: (positives (P, 2), negatives (Q, 2) or None)}``; rows part by part, positives first."""
        blocks = [(pairs, SPLIT_CODES[part], label) for part in PARTS if part in parts
                  for pairs, label in zip(parts[part], (1, 0), strict=True) if pairs is not None]
        pairs = np.concatenate([np.asarray(p, dtype=np.int64).reshape(-1, 2) for p, _, _ in blocks])
        return cls(src=pairs[:, 0], dst=pairs[:, 1],
                   part=np.concatenate([np.full(len(p), code, np.int8) for p, code, _ in blocks]),
                   label=np.concatenate([np.full(len(p), label, np.int8) for p, _, label in blocks]))

    @property
    def num_pairs(self) -> int:
        """Number of node pairs over all parts."""
        return int(self.src.shape[0])

    def counts(self) -> dict[str, dict[str, int]]:
        """Positive and negative pairs of every part."""
        return {part: {"positive_pairs": int(np.count_nonzero((self.part == code) & (self.label == 1))),
                       "negative_pairs": int(np.count_nonzero((self.part == code) & (self.label == 0)))}
                for part, code in SPLIT_CODES.items()}

    def validate(self, num_nodes: int) -> None:
        """Shapes, codes and node ranges; ValueError on inconsistency (a programming error)."""
        n = self.num_pairs
        if any(a.shape != (n,) for a in (self.dst, self.part, self.label)):
            raise ValueError("src, dst, part and label must have one entry per pair")
        if not np.isin(self.part, list(SPLIT_CODES.values())).all() or not np.isin(self.label, (0, 1)).all():
            raise ValueError("part must be 0/1/2 and label 0/1")
        if n and (min(self.src.min(), self.dst.min()) < 0 or max(self.src.max(), self.dst.max()) >= num_nodes):
            raise ValueError(f"a pair names a node outside 0..{num_nodes - 1}")


@dataclass
class LinkColumns(GraphColumns):
    """One graph (the message-passing graph) and its evaluation pairs, as a link-prediction generator returns them."""

    pairs: LinkPairs | None = None


def write_pairs(path: str | os.PathLike, pairs: LinkPairs, num_nodes: int) -> str:
    """Write ``pairs.parquet`` atomically; returns its SHA-256."""
    pairs.validate(num_nodes)
    table = pa.table({"src": pa.array(pairs.src.astype(np.int32)), "dst": pa.array(pairs.dst.astype(np.int32)),
                      "part": pa.array(pairs.part.astype(np.int8)), "label": pa.array(pairs.label.astype(np.int8))})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", use_dictionary=False, write_page_checksum=True)
    return sha256_file(path)


def read_pairs(dataset_dir: str | os.PathLike, meta: DatasetMeta) -> LinkPairs:
    """The evaluation pairs of a link-prediction dataset, checked against the SHA-256 in its ``meta.json``."""
    dataset_dir = Path(dataset_dir)
    path = dataset_dir / PAIRS_FILE
    expected = meta.extra_files.get(PAIRS_FILE)
    if expected is None:
        raise DataError(f"dataset metadata {dataset_dir / 'meta.json'} records no {PAIRS_FILE}; {meta.name} is not "
                        f"a link-prediction dataset written by gnnbench — delete {dataset_dir} and rerun snakemake")
    table = read_parquet(path, "link-prediction pair file")
    if sha256_file(path) != expected:
        raise DataError(f"{path} does not match the checksum in its meta.json; delete {dataset_dir} and rerun "
                        "snakemake to regenerate the dataset")
    try:
        columns = {name: table.column(name).to_numpy() for name in ("src", "dst", "part", "label")}
    except KeyError as exc:
        raise DataError(f"{path} lacks column {exc}; delete {dataset_dir} and rerun snakemake") from None
    pairs = LinkPairs(src=columns["src"].astype(np.int64), dst=columns["dst"].astype(np.int64),
                      part=columns["part"].astype(np.int8), label=columns["label"].astype(np.int8))
    try:
        pairs.validate(int(meta.statistics.get("all", {}).get("nodes", 0)))
    except ValueError as exc:
        raise DataError(f"{path} is inconsistent ({exc}); delete {dataset_dir} and rerun snakemake") from None
    return pairs


def link_statistics(columns: GraphColumns, pairs: LinkPairs) -> dict:
    """Statistics of a link-prediction dataset: ``all`` — ``nodes``, (directed) ``edges``, ``isolated_nodes`` (no
    edge to another node), ``pairs`` (rows of the pair file); per part its positive and negative pair counts."""
    n = int(columns.num_nodes.sum())
    touched = np.zeros(n, dtype=bool)
    off_loop = columns.src != columns.dst
    touched[columns.src[off_loop]] = touched[columns.dst[off_loop]] = True
    stats = {"all": {"nodes": n, "edges": int(columns.num_edges.sum()), "isolated_nodes": int(n - touched.sum()),
                     "pairs": pairs.num_pairs}}
    stats.update(pairs.counts())
    return stats
