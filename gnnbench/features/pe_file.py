"""Positional-encoding files: one Parquet row per graph, ``pe`` = list<fixed_size_list<float32, k>>.

The schema metadata records k and the SHA-256 of the dataset's ``graphs.parquet`` the encodings were
computed from, so a stale file is refused instead of silently misaligned.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from gnnbench.data.store import arrow_lists, list_column, read_parquet
from gnnbench.errors import DataError
from gnnbench.io import atomic_path

_KEY = b"gnnbench_pe"


def write_pe(path: str | os.PathLike, pe: np.ndarray, num_nodes: np.ndarray, dataset_checksum: str,
             kind: str = "laplacian") -> None:
    """Write ``pe`` (total nodes, k) of the graphs with ``num_nodes`` nodes each to ``path`` (atomically), tagged
    with ``kind``, k and ``dataset_checksum``."""
    ptr = np.zeros(len(num_nodes) + 1, dtype=np.int64)
    np.cumsum(num_nodes, out=ptr[1:])
    table = pa.table({"num_nodes": pa.array(num_nodes.astype(np.int64)), "pe": arrow_lists(pe, ptr)})
    info = {"format": 1, "kind": kind, "k": int(pe.shape[1]), "dataset_checksum": dataset_checksum}
    table = table.replace_schema_metadata({_KEY: json.dumps(info).encode()})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", use_dictionary=False, write_page_checksum=True)


def read_pe(path: str | os.PathLike, num_nodes: torch.Tensor, dataset_checksum: str) -> torch.Tensor:
    """(total nodes, k) float32 tensor; checks it belongs to the dataset with ``dataset_checksum``."""
    path = Path(path)
    table = read_parquet(path, "positional-encoding file")
    try:
        info = json.loads((table.schema.metadata or {}).get(_KEY, b"{}"))
    except (ValueError, UnicodeDecodeError):
        info = {}
    if info.get("dataset_checksum") != dataset_checksum:
        raise DataError(f"positional-encoding file {path} was computed from a different dataset file; "
                        "delete it and rerun snakemake to recompute it")
    values, ptr = list_column(table, "pe")
    if not np.array_equal(np.diff(ptr), num_nodes.numpy()):
        raise DataError(f"positional-encoding file {path} does not match the dataset's node counts; "
                        "delete it and rerun snakemake to recompute it")
    return torch.from_numpy(values)
