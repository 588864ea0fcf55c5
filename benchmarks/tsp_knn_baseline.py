"""F1 of the k-NN tour heuristic (k = 2) on paper-distributed TSP instances, against the paper's 0.693.

    python benchmarks/tsp_knn_baseline.py [--graphs 64] [--workers 2] [--seed 5]

Instances as the default generator makes them (n ~ U{50..500}, 25-NN graphs), labelled by LKH; the heuristic is
scored with the models' F1 (mean over batches of 64). Solving dominates (~1 s per instance per core).
"""

from __future__ import annotations

import argparse
import time

import torch

from gnnbench.baselines import knn_scores
from gnnbench.data.batching import GraphLoader, model_dtypes
from gnnbench.data.generators import get_generator, resolve_params, tsp
from gnnbench.data.store import GraphStore
from gnnbench.training.metrics import F1

PAPER_F1 = 0.693


def main() -> None:
    """Generate and label ``--graphs`` TSP instances, score the k = 2 nearest-neighbour heuristic and print its F1
    beside the paper's."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    params = resolve_params(get_generator("tsp"), {"num_train": 1, "num_val": 1, "num_test": args.graphs}, "p")
    start = time.perf_counter()
    columns = tsp.build_tsp(params, args.seed, workers=args.workers)
    seconds = time.perf_counter() - start
    store = model_dtypes(GraphStore.from_columns(columns))
    metric = F1()
    for batch in GraphLoader(store, torch.arange(2, columns.num_graphs), 64):
        metric.update(knn_scores(batch, 2), batch)
    print(f"{args.graphs} instances labelled in {seconds:.1f}s; k-NN (k=2) F1 {metric.compute():.4f} "
          f"(paper {PAPER_F1})")


if __name__ == "__main__":
    main()
