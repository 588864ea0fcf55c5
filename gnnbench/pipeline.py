"""One function per workflow stage, each reading and writing files; the CLI and the Snakemake scripts
both call these (the scripts are thin adapters)."""

from __future__ import annotations

import logging
import os
import time

import numpy as np

from gnnbench.data.generators import generate, get_generator, resolve_params
from gnnbench.data.leakage import dataset_duplicates, dataset_labels, split_leakage, split_report
from gnnbench.data.meta import DatasetMeta, read_dataset, read_pairs, write_dataset
from gnnbench.errors import ConfigError
from gnnbench.io import write_json
from gnnbench.splits import make_splits, read_splits, write_splits

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
                    published=None, leakage: str | os.PathLike | None = None) -> None:
    """Split file of a dataset: graph splits from the graph labels, or node splits of a single-graph dataset from
    its node labels (and its node column ``split`` when it comes with one), or the pair parts of a link-prediction
    dataset; scheme ``published`` imports the released file(s) ``published`` (a path or a list) and checks the fold
    count the dataset's generator states. With ``leakage`` also the split's leakage file there
    (:func:`gnnbench.data.leakage.split_report`: per fold, validation and test items with a duplicate in training)."""
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
    splits = make_splits(meta, labels, scheme, params, given, published, expected)
    write_splits(out, splits)
    if leakage is not None:
        duplicates = dataset_duplicates(columns, meta)
        report = split_report(meta, duplicates, dataset_labels(columns, meta) if duplicates else None,
                              splits.folds, splits.to_json()["checksum"])
        write_json(leakage, report)
        if report["folds"]:
            log.info("%s: up to %.1f%% of a test part has a duplicate in training (%s)", meta.name,
                     100 * report["worst_test_fraction"], leakage)


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


def leakage_text(dataset_dir: str | os.PathLike, split: str | os.PathLike | None = None, shown: int = 20) -> str:
    """``gnnbench leakage``'s report: the duplicate groups of the dataset in ``dataset_dir`` (the first ``shown``,
    with their labels) and, with a ``split`` file, per fold the validation and test items with a duplicate in
    training (docs/leakage.md)."""
    meta, columns = read_dataset(dataset_dir)
    duplicates = dataset_duplicates(columns, meta)
    if duplicates is None:
        return f"{meta.name}: no duplicates are checked for task {meta.task} (its pairs, not its nodes, are split)"
    labels = dataset_labels(columns, meta)
    summary = duplicates.summary(labels)
    unit = "nodes" if duplicates.level == "node" else "graphs"
    lines = [f"{meta.name}: {summary['groups']} groups of duplicate {unit} ({summary['members']} {unit}, "
             f"{summary['removable']} removable copies, {summary.get('label_conflicts', 0)} groups with differing "
             f"labels); rule: {summary['rule']}"]
    for i, members in enumerate(duplicates.groups()[:shown]):
        listed = " ".join(map(str, members[:12].tolist())) + (" ..." if members.size > 12 else "")
        tags = "" if labels is None or np.asarray(labels).ndim != 1 else \
            f"  labels {sorted(set(np.asarray(labels)[members].tolist()))}"
        lines.append(f"  group {i}: {members.size} {unit}: {listed}{tags}")
    if summary["groups"] > shown:
        lines.append(f"  ... {summary['groups'] - shown} more groups")
    if split is not None:
        splits = read_splits(split, meta)
        lines.append(f"split {split}: {unit} with a duplicate in the fold's training part (same label)")
        lines.append(f"  {'fold':>4}  {'val':>7}  {'leaked':>7}  {'same':>7}  {'test':>7}  {'leaked':>7}  {'same':>7}  "
                     "test %")
        for i, row in enumerate(split_leakage(duplicates, labels, splits.folds)):
            share = 100 * row["test_leaked"] / row["test"] if row["test"] else 0.0
            lines.append(f"  {i:>4}  {row['val']:>7}  {row['val_leaked']:>7}  {row['val_leaked_same_label']:>7}  "
                         f"{row['test']:>7}  {row['test_leaked']:>7}  {row['test_leaked_same_label']:>7}  "
                         f"{share:6.2f}")
    return "\n".join(lines)
