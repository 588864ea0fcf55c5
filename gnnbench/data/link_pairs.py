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
  folder with a ``meta.json`` has both files) and records its SHA-256 in ``meta.extra_files``;
  :func:`gnnbench.data.meta.read_pairs` checks it against that record.

The split file of such a dataset (scheme ``given``, level ``pair``) lists the rows of each part
(:mod:`gnnbench.splits`); the training loop is :mod:`gnnbench.training.link_prediction`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gnnbench.data.store import SPLIT_CODES, GraphColumns
from gnnbench.io import atomic_path, sha256_file

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
