"""One function per workflow stage, each reading and writing files; the CLI and the Snakemake scripts
both call these (the scripts are thin adapters)."""

from __future__ import annotations

import logging
import os
import time

from gnnbench.data.generators import generate, get_generator, resolve_params
from gnnbench.data.meta import DatasetMeta, read_dataset, read_pairs, write_dataset
from gnnbench.errors import ConfigError
from gnnbench.splits import make_splits, write_splits

log = logging.getLogger(__name__)


def generate_dataset(generator: str, name: str, params: dict | None, seed: int,
                     out_dir: str | os.PathLike, raw_dir: str | os.PathLike | None = None) -> DatasetMeta:
    """Generate a dataset into ``out_dir`` (graphs.parquet + meta.json); raw files are fetched into ``raw_dir``
    (default ``resources/raw``) for generators that need them."""
    start = time.perf_counter()
    columns, meta = generate(generator, name, params, seed, raw_dir=raw_dir)
    meta = write_dataset(out_dir, columns, meta)
    log.info("generated %s: %d graphs in %.1fs", name, meta.num_graphs, time.perf_counter() - start)
    return meta


def compute_pe(dataset_dir: str | os.PathLike, k: int, out: str | os.PathLike) -> None:
    """Laplacian positional encodings (k per node) of every graph of a dataset."""
    from gnnbench.features import laplacian_pe, pe_file  # torch: only this stage's job loads it

    start = time.perf_counter()
    meta, columns = read_dataset(dataset_dir)
    pe = laplacian_pe.laplacian_pe(columns, k, solver=meta.pe_solver)
    pe_file.write_pe(out, pe, columns.num_nodes, meta.checksum)
    log.info("Laplacian PE (k=%d) of %s: %d graphs in %.1fs", k, meta.name, meta.num_graphs,
             time.perf_counter() - start)


def make_split_file(dataset_dir: str | os.PathLike, scheme: str, params: dict, out: str | os.PathLike,
                    published=None) -> None:
    """Split file of a dataset: graph splits from the graph labels, or node splits of a single-graph dataset from
    its node labels (and its node column ``split`` when it comes with one), or the pair parts of a link-prediction
    dataset; scheme ``published`` imports the released file(s) ``published`` (a path or a list) and checks the fold
    count the dataset's generator states."""
    meta, columns = read_dataset(dataset_dir)
    if meta.task == "link_prediction":
        labels, given = None, read_pairs(dataset_dir, meta).part
    elif meta.transductive:
        labels, given = columns.node.get("y"), columns.node.get("split")
    else:
        labels, given = columns.graph.get("y"), None
    expected = None
    if scheme == "published" and "generator" in meta.source:
        generator = get_generator(meta.source["generator"])
        release = generator.published_splits and generator.published_splits(
            resolve_params(generator, meta.source.get("params"), "dataset params"), params["source"])
        expected = release.folds if release else None
    write_splits(out, make_splits(meta, labels, scheme, params, given, published, expected))


def _sharding(generator: str):
    sharding = get_generator(generator).sharding
    if sharding is None:
        raise ConfigError(f"generator {generator!r} makes its datasets in one job, not in shards; generate it whole")
    return sharding


def label_shard(generator: str, name: str, params: dict | None, seed: int, shard: int, out: str | os.PathLike,
                workers: int = 1) -> None:
    """Make shard ``shard`` of dataset ``name`` of a sharded generator (TSP: solve its instances) into ``out``."""
    sharding = _sharding(generator)
    sharding.label(resolve_params(get_generator(generator), params, f"datasets.{name}.params"), seed, shard, out,
                   workers)


def merge_shards(generator: str, name: str, params: dict | None, seed: int, shard_files: list[str | os.PathLike],
                 out_dir: str | os.PathLike) -> DatasetMeta:
    """Write dataset ``name`` of a sharded generator, built from its shards' files."""
    start = time.perf_counter()
    gen = get_generator(generator)
    resolved = resolve_params(gen, params, f"datasets.{name}.params")
    columns = _sharding(generator).merge(resolved, seed, shard_files)
    meta = write_dataset(out_dir, columns, gen.describe(name, resolved, seed))
    log.info("merged %d shards of %s: %d graphs in %.1fs", len(shard_files), name, meta.num_graphs,
             time.perf_counter() - start)
    return meta


def score_baseline(dataset_dir: str | os.PathLike, splits_path: str | os.PathLike, batch_size: int, method: str,
                   params: dict, out: str | os.PathLike, record_out: str | os.PathLike | None = None) -> None:
    """Score a non-learnt baseline (:data:`gnnbench.baselines.METHODS`) on a dataset's split like a run: its scores
    to ``out`` (the runs' metrics format) and its run record to ``record_out``."""
    from gnnbench.baselines import write_baseline

    record = write_baseline(dataset_dir, splits_path, batch_size, method, params, out, record_out)
    log.info("%s on %s: test %s %.4f", record["label"], record["dataset"], record["metric"],
             record["test"]["metric"])
