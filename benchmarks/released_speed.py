"""Conversion speed of generator ``released`` on a synthetic MNIST-sized release in PyG's format.

    python benchmarks/released_speed.py [--graphs 70000] [--dir /tmp/released_speed] [--json out.json]

PyG's ``MNIST_v2.zip`` cannot be downloaded here, so a stand-in of the same size and layout is written: a zip with
one member ``MNIST_v2.pt`` holding ``[train, val, test]`` (55,000 / 5,000 / 10,000 graphs at the default size) lists
of dicts, one per graph, with separately stored tensors as PyG's would have — ``x`` (n, 1) and ``pos`` (n, 2)
float16, ``edge_index`` (2, 8n) int64, ``edge_attr`` (8n,) float16, ``y`` (1,) int64 — n drawn around the paper's
70.57 nodes per graph (40..75), 8 out-edges per node (564.5 edges per graph on average, as published).

Reported: file size, the time to copy the member out of the zip and ``torch.load(weights_only=True)`` it, the time to
convert the loaded dicts into graph columns (:func:`gnnbench.data.generators.released.convert_part` over the three
parts), and both together through :func:`read_pyg_release` (what ``generate`` runs), plus peak resident memory.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
import zipfile
from pathlib import Path

import numpy as np
import torch

from gnnbench.data.generators import released as R

PARTS = (55000, 5000, 10000)


def write_release(path: Path, graphs: int, seed: int = 0) -> dict:
    """Write an MNIST-sized stand-in release of ``graphs`` graphs to the zip ``path``; returns the part sizes and the
    mean nodes and edges per graph."""
    rng = np.random.default_rng(seed)
    counts = [round(graphs * p / sum(PARTS)) for p in PARTS]
    n = np.clip(np.rint(rng.normal(70.57, 6.84, sum(counts))), 40, 75).astype(np.int64)
    parts, start = [], 0
    for count in counts:
        part = []
        for k in n[start:start + count]:  # the stand-in's own construction, not the code being measured
            k = int(k)
            dst = np.argsort(rng.random((k, k)), axis=1)[:, :8]
            src = np.repeat(np.arange(k), 8)
            part.append({"x": torch.from_numpy(rng.random((k, 1), dtype=np.float32)).half(),
                         "pos": torch.from_numpy(rng.random((k, 2), dtype=np.float32)).half(),
                         "edge_index": torch.from_numpy(np.stack([src, dst.ravel()])),
                         "edge_attr": torch.from_numpy(rng.random(8 * k, dtype=np.float32)).half(),
                         "y": torch.tensor([int(rng.integers(0, 10))])})
        parts.append(part)
        start += count
    pt = path.with_suffix(".pt")
    torch.save(parts, pt)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.write(pt, "MNIST_v2.pt")
    pt.unlink()
    return {"counts": counts, "nodes_per_graph": float(n.mean()), "edges_per_graph": float(8 * n.mean())}


def main() -> None:
    """Write the stand-in, time its loading and conversion, and print (or save as JSON) the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", type=int, default=70000)
    parser.add_argument("--dir", default="/tmp/released_speed")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "MNIST_v2.zip"
    start = time.perf_counter()
    info = write_release(path, args.graphs)
    written = time.perf_counter() - start
    params = {"name": "MNIST", "num_train": info["counts"][0], "num_val": info["counts"][1],
              "num_test": info["counts"][2]}

    start = time.perf_counter()
    data = R.read_pyg_zip(path, "MNIST")
    loaded = time.perf_counter() - start
    start = time.perf_counter()
    for split, graphs in zip(R.SPLITS, data, strict=True):
        R.convert_part(graphs, "MNIST", split)
    converted = time.perf_counter() - start
    del data

    start = time.perf_counter()
    columns = R.read_pyg_release(path, params)
    total = time.perf_counter() - start
    result = {"graphs": columns.num_graphs, "nodes": int(columns.num_nodes.sum()),
              "edges": int(columns.num_edges.sum()), "zip_mb": round(path.stat().st_size / 2**20, 1),
              "write_s": round(written, 1), "extract_and_load_s": round(loaded, 2),
              "convert_s": round(converted, 2), "read_pyg_release_s": round(total, 2),
              "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024), **info}
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    path.unlink()


if __name__ == "__main__":
    main()
