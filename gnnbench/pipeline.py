"""One function per workflow stage, each reading and writing files; the CLI and the Snakemake scripts
both call these (the scripts are thin adapters)."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from gnnbench.data.generators import generate
from gnnbench.data.meta import GRAPHS_FILE, DatasetMeta, read_meta, write_dataset
from gnnbench.data.store import read_graph_columns
from gnnbench.errors import DataError
from gnnbench.features.laplacian_pe import laplacian_pe
from gnnbench.features.pe_file import write_pe
from gnnbench.io import sha256_file
from gnnbench.reporting.aggregate import aggregate, load_runs, write_tables
from gnnbench.splits import make_splits, write_splits

log = logging.getLogger(__name__)


def generate_dataset(generator: str, name: str, params: dict | None, seed: int,
                     out_dir: str | os.PathLike) -> DatasetMeta:
    """Generate a dataset into ``out_dir`` (graphs.parquet + meta.json)."""
    start = time.perf_counter()
    columns, meta = generate(generator, name, params, seed)
    meta = write_dataset(out_dir, columns, meta)
    log.info("generated %s: %d graphs in %.1fs", name, meta.num_graphs, time.perf_counter() - start)
    return meta


def _load_checked(dataset_dir: Path):
    meta = read_meta(dataset_dir)
    graphs = dataset_dir / GRAPHS_FILE
    columns = read_graph_columns(graphs)
    if sha256_file(graphs) != meta.checksum:
        raise DataError(f"{graphs} does not match the checksum in its meta.json; delete {dataset_dir} and rerun "
                        "snakemake to regenerate the dataset")
    return meta, columns


def compute_pe(dataset_dir: str | os.PathLike, k: int, out: str | os.PathLike) -> None:
    """Laplacian positional encodings (k per node) of every graph of a dataset."""
    start = time.perf_counter()
    meta, columns = _load_checked(Path(dataset_dir))
    pe = laplacian_pe(columns, k)
    write_pe(out, pe, columns.num_nodes, meta.checksum)
    log.info("Laplacian PE (k=%d) of %s: %d graphs in %.1fs", k, meta.name, meta.num_graphs,
             time.perf_counter() - start)


def make_split_file(dataset_dir: str | os.PathLike, protocol: str, params: dict, out: str | os.PathLike) -> None:
    meta, columns = _load_checked(Path(dataset_dir))
    labels = columns.graph.get("y")
    write_splits(out, make_splits(meta, labels, protocol, params))


def aggregate_tables(metrics_files: list[str | os.PathLike], csv: str | os.PathLike, markdown: str | os.PathLike,
                     parquet: str | os.PathLike) -> None:
    write_tables(aggregate(load_runs(metrics_files)), csv, markdown, parquet)
