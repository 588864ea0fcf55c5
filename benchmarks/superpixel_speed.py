"""Superpixel graph throughput (SLIC loop + features + 8-NN graph) and extrapolated full-dataset times.

    python benchmarks/superpixel_speed.py [--images 400] [--workers 2] [--seed 0] [--json out.json]

Real MNIST / CIFAR-10 cannot be downloaded here, so the inputs are stand-ins of the right size and type:

* MNIST-sized (28×28 gray): scikit-learn's digits upsampled to 28×28 (``raw_images.load_digits_28``), cycled;
* CIFAR-sized (32×32 RGB): smooth synthetic colour images — bilinear-upsampled 8×8×3 uniform noise plus an
  upsampled digit in a random colour and Gaussian pixel noise of σ = 8 grey levels (pure pixel noise would be
  unrepresentative: SLIC's connectivity step fragments it and the "≤ n_sp" loop runs down to a few segments).

Each set goes through :func:`gnnbench.data.generators.superpixels.build_superpixel_graphs` with the generators'
settings (MNIST: n_sp 75, compactness 0.25, q from 95; CIFAR: n_sp 150, compactness 10, q from 200) with 1 worker
and with ``--workers`` worker processes (pool start-up included). Reported: images per second, mean nodes and
directed edges per graph (paper: MNIST 70.57 / 564.53, CIFAR10 117.63 / 941.07 — the stand-ins segment
differently, so only E/N = 8 is expected to match), and the extrapolated seconds for the full 70,000 MNIST /
60,000 CIFAR-10 images at the ``--workers`` rate, and from the single-worker CPU time (images per CPU-second ÷
``--workers``: what idle cores would take, robust to other load on a shared machine). Real images may need more
or fewer SLIC calls per image, so the extrapolation is an estimate.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import numpy as np

PAPER = {"MNIST": (70.57, 564.53, 70000), "CIFAR10": (117.63, 941.07, 60000)}


def mnist_like(count: int) -> np.ndarray:
    """``count`` 28×28 grey images: scikit-learn's digits upsampled, cycled."""
    from gnnbench.data.raw_images import load_digits_28

    tr, _, te, _ = load_digits_28()
    pool = np.concatenate([tr, te])
    return pool[np.arange(count) % len(pool)]


def cifar_like(count: int, seed: int) -> np.ndarray:
    """``count`` smooth synthetic 32×32 RGB images (upsampled colour noise, a coloured digit, pixel noise)."""
    from skimage.transform import resize

    rng = np.random.default_rng(seed)
    digits = mnist_like(count).astype(np.float64) / 255
    base = resize(rng.random((count, 8, 8, 3)), (count, 32, 32, 3), order=1, anti_aliasing=False)
    shape = resize(digits, (count, 32, 32), order=1, anti_aliasing=False)[..., None]
    colour = rng.random((count, 1, 1, 3))
    img = base * (1 - shape) + colour * shape + rng.normal(0, 8 / 255, (count, 32, 32, 3))
    return np.clip(np.rint(img * 255), 0, 255).astype(np.uint8)


def _cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children (pool workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def measure(name: str, images: np.ndarray, workers: int, seed: int) -> dict:
    """Build the superpixel graphs of ``images`` with ``workers`` processes; returns the throughput (per second and per
    CPU-second) and the mean graph size."""
    from gnnbench.data.generators.superpixels import build_superpixel_graphs

    n_sp, compactness, extra = (75, 0.25, 20) if name == "MNIST" else (150, 10.0, 50)
    labels = np.zeros(len(images), dtype=np.int64)
    start, cpu = time.perf_counter(), _cpu_seconds()
    cols = build_superpixel_graphs(images, labels, 0, 0, seed, n_sp, compactness, n_sp + extra, workers=workers,
                                   what=f"{name}-sized")
    seconds, cpu = time.perf_counter() - start, _cpu_seconds() - cpu
    return {"images": len(images), "workers": workers, "seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3),
            "images_per_s": round(len(images) / seconds, 1), "images_per_cpu_s": round(len(images) / cpu, 1),
            "mean_nodes": round(float(cols.num_nodes.mean()), 2),
            "mean_edges": round(float(cols.num_edges.mean()), 2),
            "edges_per_node": round(float(cols.num_edges.sum() / cols.num_nodes.sum()), 3)}


def main() -> None:
    """Measure both image kinds with 1 and ``--workers`` workers and print (or save as JSON) the rates and the
    full-dataset estimates."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=400)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    results = {"cpu_count": os.cpu_count()}
    for name, images in (("MNIST", mnist_like(args.images)), ("CIFAR10", cifar_like(args.images, args.seed))):
        single = measure(name, images, 1, args.seed)
        multi = measure(name, images, args.workers, args.seed)
        paper_nodes, paper_edges, total = PAPER[name]
        cpu_estimate = total / single["images_per_cpu_s"] / args.workers
        results[name] = {"1_worker": single, f"{args.workers}_workers": multi,
                         "paper_mean_nodes": paper_nodes, "paper_mean_edges": paper_edges,
                         f"full_{total}_images_seconds_on_{args.workers}_cores": round(total / multi["images_per_s"]),
                         f"full_{total}_images_seconds_on_{args.workers}_idle_cores_from_cpu_time": round(cpu_estimate),
                         "load_average_1min": os.getloadavg()[0]}
        print(f"{name}-sized: {single['images_per_s']} img/s (1 worker; {single['images_per_cpu_s']} per CPU-s), "
              f"{multi['images_per_s']} img/s ({args.workers} workers); nodes {multi['mean_nodes']} "
              f"(paper {paper_nodes}), edges {multi['mean_edges']} (paper {paper_edges}), E/N "
              f"{multi['edges_per_node']}; full {total} images ≈ {total / multi['images_per_s']:.0f} s measured on "
              f"{args.workers} workers, ≈ {cpu_estimate:.0f} s on {args.workers} idle cores (CPU time); load "
              f"{os.getloadavg()[0]:.1f}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
