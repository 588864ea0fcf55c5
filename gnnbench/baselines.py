"""Non-learnt baselines reported next to the models (the benchmarking-gnns protocol, Dwivedi et al.). A generator
names the ones its datasets are reported with (:class:`gnnbench.data.generators.base.Baseline`: a method of
:data:`METHODS` and its parameters); the workflow scores each once per dataset.

TSP k-nearest-neighbour heuristic (Dwivedi et al.'s TSP results: test F1 0.693 for k = 2): predict an edge i → j
to be a tour edge iff j is among the k nearest neighbours of i (by the edge feature, the Euclidean distance; ties by
stored order).
It is scored exactly like a model — :class:`~gnnbench.training.metrics.F1` over the same evaluation loader
(split order, the benchmark's batch size), so its number is comparable with the models' rows — and written as
a run's ``metrics.json`` (0 parameters, 0 epochs, no loss) and as its run record (:mod:`gnnbench.records`), which
the dataset's table reads like the models' records.
"""

from __future__ import annotations

import os
import time

import torch

from gnnbench.data.batching import GraphBatch, GraphLoader, model_dtypes
from gnnbench.data.meta import read_dataset
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.io import write_json
from gnnbench.protocols.benchmarking_gnns.train import run_records
from gnnbench.records import write_records
from gnnbench.splits import read_splits
from gnnbench.training.metrics import F1

KNN_LABEL = "k-NN heuristic (k={k})"


def knn_scores(batch: GraphBatch, k: int) -> torch.Tensor:
    """Two-class scores (E, 2) that predict class 1 for the k shortest out-edges of every node."""
    src = batch.edge_index[0]
    dist = batch.edge_attr.reshape(-1)
    order = torch.argsort(dist, stable=True)
    order = order[torch.argsort(src[order], stable=True)]  # by source node, then distance, then stored order
    sorted_src = src[order]
    first = torch.searchsorted(sorted_src, sorted_src)  # start of each node's group
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel()) - first
    predicted = (rank < k).long()
    return torch.nn.functional.one_hot(predicted, 2).float()


def knn_baseline(dataset_dir: str | os.PathLike, splits_path: str | os.PathLike, batch_size: int,
                 k: int = 2) -> dict:
    """F1 of the k-NN heuristic on train, val and test of fold 0, as a metrics record."""
    start = time.perf_counter()
    meta, columns = read_dataset(dataset_dir)
    if meta.task != "edge_classification" or meta.metric != "f1":
        raise ConfigError(f"the k-NN tour heuristic needs a TSP-like dataset (edge classification scored by F1), "
                          f"not {meta.name} ({meta.task})")
    store = model_dtypes(GraphStore.from_columns(columns))
    splits = read_splits(splits_path, meta)
    scores = {}
    for part, index in splits.fold(0).items():
        metric = F1()
        for batch in GraphLoader(store, torch.from_numpy(index), batch_size):
            metric.update(knn_scores(batch, k), batch)
        scores[part] = metric.compute()
    seconds = time.perf_counter() - start
    return {
        "dataset": meta.name, "label": KNN_LABEL.format(k=k), "model": "k-NN heuristic", "seed": 0, "fold": 0,
        "task": meta.task, "metric": "f1", "higher_is_better": True,
        **{part: {"metric": scores[part], "loss": None} for part in ("train", "val", "test")},
        "num_params": 0, "epochs": 0, "seconds_per_epoch": 0.0, "total_seconds": seconds,
        "total_hours": seconds / 3600, "stop_reason": "baseline (not trained)", "status": "completed",
        "device": "cpu", "data": {"split_scheme": splits.scheme, "dataset_checksum": meta.checksum},
        "config": {"k": k, "batch_size": batch_size},
    }


# method name -> f(dataset_dir, splits_path, batch_size, **params) -> a run's metrics record
METHODS = {"knn_tour": knn_baseline}


def write_baseline(dataset_dir: str | os.PathLike, splits_path: str | os.PathLike, batch_size: int, method: str,
                   params: dict, out: str | os.PathLike, record_out: str | os.PathLike | None = None) -> dict:
    """A baseline's scores as ``out`` (a run's ``metrics.json`` format) and, with ``record_out``, its run record
    (stage "run" of protocol benchmarking-gnns, the baseline's label as model label) and its history record (no
    rows: it trains no epoch)."""
    if method not in METHODS:
        raise ConfigError(f"baseline method {method!r} is unknown; choose one of {', '.join(sorted(METHODS))}")
    record = METHODS[method](dataset_dir, splits_path, batch_size, **params)
    write_json(out, record)
    if record_out is not None:
        write_records(record_out, run_records(record), history=[])
    return record
