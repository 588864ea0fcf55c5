"""Superpixel graphs of MNIST / CIFAR-10 images (Knyazev et al., NeurIPS 2019, as Dwivedi et al. use them;
docs/datasets.md#superpixels-mnist-cifar-10-and-digits).

Per image (a ``multiprocessing`` pool of ``workers`` processes — "fork" start method where available, else "spawn" —
over chunks of :data:`CHUNK` images; the data do not depend on ``workers`` or chunking):

1. SLIC "≤ n_sp" loop: image / 255 (float, [0, 1]); ``q`` starts at n_sp + 20 (grayscale: MNIST, digits) or
   n_sp + 50 (RGB: CIFAR-10) and decreases by 1 while SLIC returns more than n_sp segments. SLIC arguments are the
   scikit-image 0.15 ones the original ran with: compactness 0.25 (MNIST) / 10 (CIFAR), ``max_num_iter=10``,
   ``sigma=0``, ``spacing=None``, ``enforce_connectivity=True``, ``min_size_factor=0.5``, ``max_size_factor=3``,
   ``slic_zero=False``, ``start_label=0``; CIFAR is segmented in CIELAB (MNIST in raw intensity).
   Reproducing 0.15 on scikit-image ≥ 0.19 (0.26 here):

   * 0.19+ rescales the image to [0, 1] by its min/max before segmenting, which scales the colour distance by
     1/(max − min)²; gnnbench passes ``compactness / (max − min)`` instead, which undoes that exactly (the colour
     term is ``(Δcolour / compactness)²`` in both versions). For CIFAR the Lab conversion is done here
     (``rgb2lab`` of the [0, 1] RGB image, as 0.15 did) and SLIC gets ``convert2lab=False`` so the rescale acts on
     Lab values, again undone by the compactness correction.
   * Images are segmented in float64 (0.15's Cython kernel worked in double).
   * Since 0.17 the connectivity step's segment size (min size 0.5×, max size 3×) is H·W / number of grid seeds;
     0.15 used H·W / ``n_segments``. gnnbench runs SLIC with ``enforce_connectivity=False`` and applies
     scikit-image's own connectivity routine (private ``skimage.segmentation._slic._enforce_label_connectivity_cython``)
     with 0.15's size H·W / q; if a future scikit-image drops that private function, it falls back to slic's built-in
     step with a warning. Exact equality with the released pickles cannot be checked here (no network).
   * Speed (exact): without the connectivity step SLIC depends on ``q`` only through the seed grid, and many
     consecutive ``q`` give the same grid (28×28: 9×9 seeds for q = 65..95), so SLIC runs once per distinct grid
     and the connectivity step only when its integer min/max sizes change — identical labels, ~10× fewer calls.
   * Labels 0..n−1 are asserted as in the original (start_label=0 gives them).

2. Node order: a random permutation of the n superpixel labels per image, drawn from
   ``default_rng(SeedSequence(seed, spawn_key=(source, index)))`` with source 0 = official training images,
   1 = official test images and ``index`` the image's position there — independent of chunking, workers and of the
   split sizes (the original draws all permutations from one ``np.random.seed(111)`` stream, which cannot be
   parallelised; its exact order is not reproduced).
3. Node feature ``x`` (float32) = [mean intensity per channel in [0, 1] (RGB for CIFAR, not Lab), centre-of-mass
   row / size, column / size] (size 28 or 32): 3 columns (MNIST) or 5 (CIFAR), as the catalog says. The means are
   computed with float64 ``bincount`` sums (the original averages float32 values; differences ~1e-7). **Kept as
   float32**: the original stores float16 (≈ 3 significant digits) and converts back to float32; gnnbench does
   not round — a deliberate precision improvement, documented here.

Graph construction (vectorised over all graphs with the same node count; the released code's
``data/superpixels.py``): D = Euclidean distances of the stored (float32, normalised) coordinates in float64;
σ_i = (sum of the 9 smallest D_ij in row i, self included)/8 + 1e-8 for n ≥ 9, and 1 + 1e-8 for n < 9 (the
original's fallback); W_ij = exp(−(D_ij/σ_i)²), W ← (W + Wᵀ)/2, diag 0. For n > 9 every node i gets 8 directed out-edges
i → j to its **8 most similar other nodes** (largest W_ij, ties by smaller j), most similar first — the documented
intention. The original keeps 8 of the 9 most similar with the dropped one depending on numpy's selection internals (the
most similar one under numpy 2.x's SIMD selection, an arbitrary one under numpy 1.x); gnnbench does not emulate that
(the maintainers' intention, benchmarking-gnns issues #17 and #60;
docs/datasets.md#superpixels-mnist-cifar-10-and-digits). For n ≤ 9: the complete directed graph without self-loops,
targets in index order. Edge feature ``edge_attr`` = W_ij float32 (E, 1); graph label ``y`` int16. Nodes are numbered in
the permuted order of step 2.

Splits (``default_split`` scheme "given"; graphs stored train, val, test): val = the first ``num_val`` official
training images, train = the next ``num_train``, test = the first ``num_test`` test images (defaults MNIST
55,000/5,000/10,000, CIFAR-10 45,000/5,000/10,000, the benchmark's splits). The digits variant (offline) uses
:func:`gnnbench.data.raw_images.load_digits_28` (1,500 "training" / 297 "test" images) the same way.

Parameters: ``compactness`` is a float in (0, 1] for the grayscale generators (default 0.25; the shared type check
reads float defaults as probabilities) and a positive **integer** for CIFAR-10 (default 10; the original's CLI
declares it ``type=int`` too). ``mirror`` (string, "" = canonical URLs) is tried first for downloads. ``workers``
(worker processes, default 1) changes neither ``graphs.parquet`` nor ``meta.json`` (mirror and workers are left
out of the recorded parameters; the raw files' MD5s are recorded instead).
"""

from __future__ import annotations

import functools
import logging
import multiprocessing
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import numpy as np

from gnnbench.data import raw_images
from gnnbench.data.download import RawFile
from gnnbench.data.generators.base import Generator
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns
from gnnbench.errors import ConfigError
from gnnbench.progress import Progress

log = logging.getLogger(__name__)

CHUNK = 50  # images per worker task (not part of the data)
KNN = 8
SPLITS = ("train", "val", "test")
SOURCE_TRAIN, SOURCE_TEST = 0, 1
GROUP_ELEMENTS = 1 << 22  # distance-matrix entries per vectorised batch (memory bound, not part of the data)


# ----------------------------------------------------------------------------------------------------------- SLIC
def slic_segments(image: np.ndarray, n_sp: int, compactness: float, first_q: int) -> np.ndarray:
    """SLIC label map (H, W) int64 with labels 0..n−1, n ≤ ``n_sp``: the original's decreasing-``q`` loop.

    ``image``: (H, W) grayscale or (H, W, 3) RGB, float in [0, 1]. SLIC proper runs without connectivity
    enforcement and only when the seed grid changes (its result depends on ``q`` only through the grid); the
    connectivity step then runs for every ``q`` with scikit-image 0.15's segment size H·W/q.
    """
    from skimage.color import rgb2lab
    from skimage.segmentation import slic

    image = np.asarray(image, dtype=np.float64)
    rgb = image.ndim == 3
    work = rgb2lab(image) if rgb else image
    span = float(work.max() - work.min())
    effective = compactness / span if span > 0 else compactness  # undo the [0, 1] rescale of skimage ≥ 0.19
    options = dict(compactness=effective, max_num_iter=10, sigma=0, spacing=None, convert2lab=False,
                   min_size_factor=0.5, max_size_factor=3, slic_zero=False, start_label=0,
                   channel_axis=-1 if rgb else None)
    enforce = _connectivity_function()
    q, previous, raw, last = first_q, None, None, None
    h, w = work.shape[:2]
    while True:
        if enforce is None:  # private helper gone: slic's own connectivity step (segment size from the grid)
            labels = slic(work, n_segments=q, enforce_connectivity=True, **options)
        else:
            grid = _grid_key((h, w), q)
            key = (grid, int(0.5 * h * w / q), int(3 * h * w / q))
            if key == last and q > 1:  # same raw labels and sizes ⇒ same (still too many) segments
                q -= 1
                continue
            if grid != previous:
                raw = slic(work, n_segments=q, enforce_connectivity=False, **options)
                previous = grid
            labels, last = enforce_connectivity(raw, h * w / q), key
        n = int(labels.max()) + 1
        if n <= n_sp or q <= 1:
            break
        q -= 1
    present = np.bincount(labels.ravel(), minlength=n)
    if n > n_sp or labels.min() != 0 or not present.all():
        raise RuntimeError(f"SLIC returned labels {labels.min()}..{labels.max()} ({np.count_nonzero(present)} "
                           f"distinct) for n_sp={n_sp}; expected 0..n-1 with n ≤ n_sp")
    return labels.astype(np.int64)


@functools.lru_cache(maxsize=1)
def _connectivity_function():
    try:
        from skimage.segmentation._slic import _enforce_label_connectivity_cython
    except ImportError:  # pragma: no cover - depends on scikit-image internals
        log.warning("scikit-image has no _enforce_label_connectivity_cython; superpixels use slic's own "
                    "connectivity step (segment size from the seed grid, not scikit-image 0.15's H·W/n_segments)")
        return None
    return _enforce_label_connectivity_cython


def enforce_connectivity(raw: np.ndarray, segment_size: float) -> np.ndarray:
    """scikit-image's SLIC connectivity step on a label map (H, W) with the given segment size (labels from 0)."""
    fn = _connectivity_function()
    segments = np.ascontiguousarray(raw[None], dtype=np.intp)
    return fn(segments, int(0.5 * segment_size), int(3 * segment_size), start_label=0)[0]


@functools.lru_cache(maxsize=4096)
def _grid_key(shape: tuple[int, int], q: int) -> tuple:
    """The SLIC seed grid for ``n_segments=q``: without the connectivity step the only way ``n_segments`` affects
    SLIC's result (seed positions and step derive from it), so equal keys give equal raw labels."""
    from skimage.util import regular_grid

    return tuple((s.start, s.stop, s.step) for s in regular_grid((1, *shape), q))


def superpixel_features(image: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per label 0..n−1: mean intensity per channel (n, C) and centre of mass (row, col) in pixels (n, 2), float64."""
    image = np.asarray(image, dtype=np.float64)
    if image.ndim == 2:
        image = image[..., None]
    h, w, c = image.shape
    flat = labels.ravel()
    n = int(flat.max()) + 1
    count = np.bincount(flat, minlength=n).astype(np.float64)
    means = np.stack([np.bincount(flat, image[..., k].ravel(), n) for k in range(c)], 1) / count[:, None]
    rows, cols = np.divmod(np.arange(h * w), w)
    coords = np.stack([np.bincount(flat, rows, n), np.bincount(flat, cols, n)], 1) / count[:, None]
    return means, coords


def _node_features(images: np.ndarray, first: int, source: int, seed: int, n_sp: int, compactness: float,
                   first_q: int) -> tuple[np.ndarray, np.ndarray]:
    """Node counts (B,) and node features (Σn, C+2) float32 of consecutive images ``first, first+1, ...``."""
    size = images.shape[1]
    counts, feats = [], []
    for offset, img in enumerate(images):
        img01 = img.astype(np.float32) / np.float32(255.0)  # the original's preprocessing
        labels = slic_segments(img01, n_sp, compactness, first_q)
        means, coords = superpixel_features(img01, labels)
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(source, first + offset)))
        order = rng.permutation(len(means))
        feats.append(np.concatenate([means[order], coords[order] / size], 1).astype(np.float32))
        counts.append(len(order))
    return np.asarray(counts, dtype=np.int64), np.concatenate(feats)


# ----------------------------------------------------------------------------------------------- graph construction
def affinity(coords: np.ndarray) -> np.ndarray:
    """W of a batch of same-size graphs: coords (B, n, 2) → (B, n, n) float64, symmetric, zero diagonal."""
    p = coords.astype(np.float64)
    diff = p[:, :, None, :] - p[:, None, :, :]
    d = np.sqrt((diff * diff).sum(-1))
    n = p.shape[1]
    if n >= KNN + 1:
        sigma = np.partition(d, KNN, axis=-1)[..., :KNN + 1].sum(-1) / KNN + 1e-8
    else:
        sigma = np.full(d.shape[:2], 1.0 + 1e-8)
    w = np.exp(-((d / sigma[..., None]) ** 2))
    w = (w + w.transpose(0, 2, 1)) / 2
    idx = np.arange(n)
    w[:, idx, idx] = 0.0
    return w


def knn_graph(num_nodes: np.ndarray, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Edges of every graph: ``num_edges`` (G,), local ``src``/``dst`` int32 and weight W_ij float64, graph by graph.

    ``coords`` (Σn, 2) are the normalised (row, col) of all nodes. Graphs are processed in groups of equal node
    count (no padding; grouping does not change the result).
    """
    num_nodes = np.asarray(num_nodes, dtype=np.int64)
    node_ptr = np.concatenate([[0], np.cumsum(num_nodes)])
    per_node = np.where(num_nodes > KNN + 1, KNN, num_nodes - 1)
    num_edges = num_nodes * per_node
    edge_ptr = np.concatenate([[0], np.cumsum(num_edges)])
    src = np.empty(edge_ptr[-1], dtype=np.int32)
    dst = np.empty(edge_ptr[-1], dtype=np.int32)
    weight = np.empty(edge_ptr[-1], dtype=np.float64)
    for n in np.unique(num_nodes):
        n = int(n)
        graphs_all = np.flatnonzero(num_nodes == n)
        k = KNN if n > KNN + 1 else n - 1
        if k <= 0:
            continue
        step = max(1, GROUP_ELEMENTS // (n * n))
        for start in range(0, len(graphs_all), step):
            graphs = graphs_all[start:start + step]
            c = coords[node_ptr[graphs][:, None] + np.arange(n)]  # (B, n, 2)
            w = affinity(c)
            if n > KNN + 1:
                key = -w
                key[:, np.arange(n), np.arange(n)] = np.inf  # never self
                nbr = np.argsort(key, axis=-1, kind="stable")[..., :k]  # most similar first, ties by index
            else:
                full = np.broadcast_to(np.arange(n), (n, n))
                nbr = np.broadcast_to(full[~np.eye(n, dtype=bool)].reshape(n, k), (len(graphs), n, k))
            vals = np.take_along_axis(w, nbr, -1)
            pos = edge_ptr[graphs][:, None] + np.arange(n * k)
            src[pos] = np.repeat(np.arange(n, dtype=np.int32), k)[None, :]
            dst[pos] = nbr.reshape(len(graphs), n * k)
            weight[pos] = vals.reshape(len(graphs), n * k)
    return num_edges, src, dst, weight


def _chunk_graphs(args: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    images, first, source, seed, n_sp, compactness, first_q = args
    counts, x = _node_features(images, first, source, seed, n_sp, compactness, first_q)
    num_edges, src, dst, weight = knn_graph(counts, x[:, -2:])
    return counts, x, num_edges, src, dst, weight.astype(np.float32)


def build_superpixel_graphs(images: np.ndarray, labels: np.ndarray, first: int, source: int, seed: int, n_sp: int,
                            compactness: float, first_q: int, workers: int = 1,
                            what: str = "superpixels") -> GraphColumns:
    """Graphs of ``images`` (uint8 (B, H, W) or (B, H, W, 3)), the first being image ``first`` of ``source``."""
    tasks = [(images[s:s + CHUNK], first + s, source, seed, n_sp, compactness, first_q)
             for s in range(0, len(images), CHUNK)]
    progress = Progress(len(images), what)
    parts = []
    if workers > 1 and len(tasks) > 1:
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        with multiprocessing.get_context(method).Pool(min(workers, len(tasks))) as pool:
            for part in pool.imap(_chunk_graphs, tasks):
                parts.append(part)
                progress.update(len(part[0]))
    else:
        for task in tasks:
            parts.append(_chunk_graphs(task))
            progress.update(len(parts[-1][0]))
    if not parts:
        return GraphColumns(num_nodes=np.zeros(0, np.int64), num_edges=np.zeros(0, np.int64),
                            src=np.zeros(0, np.int32), dst=np.zeros(0, np.int32),
                            node={"x": np.zeros((0, images.shape[-1] + 2 if images.ndim == 4 else 3), np.float32)},
                            edge={"edge_attr": np.zeros((0, 1), np.float32)}, graph={"y": np.zeros(0, np.int16)})
    counts, x, num_edges, src, dst, weight = (np.concatenate([p[i] for p in parts]) for i in range(6))
    return GraphColumns(num_nodes=counts, num_edges=num_edges, src=src, dst=dst, node={"x": x},
                        edge={"edge_attr": weight[:, None]}, graph={"y": labels.astype(np.int16)})


# ------------------------------------------------------------------------------------------------------ generators
def _split_sizes(params: dict) -> dict[str, int]:
    return {s: params[f"num_{s}"] for s in SPLITS}


def _build_from_images(train_images: np.ndarray, train_labels: np.ndarray, test_images: np.ndarray,
                       test_labels: np.ndarray, params: dict, seed: int, first_q: int, what: str) -> GraphColumns:
    n_val, n_train, n_test = params["num_val"], params["num_train"], params["num_test"]
    common = dict(seed=seed, n_sp=params["n_sp"], compactness=float(params["compactness"]), first_q=first_q,
                  workers=params["workers"])
    parts = [
        build_superpixel_graphs(train_images[n_val:n_val + n_train], train_labels[n_val:n_val + n_train], n_val,
                                SOURCE_TRAIN, what=f"{what} train", **common),
        build_superpixel_graphs(train_images[:n_val], train_labels[:n_val], 0, SOURCE_TRAIN, what=f"{what} val",
                                **common),
        build_superpixel_graphs(test_images[:n_test], test_labels[:n_test], 0, SOURCE_TEST, what=f"{what} test",
                                **common),
    ]
    return GraphColumns.concat(parts)


def _check_counts(params: dict, where: str, train_pool: int, test_pool: int, source: str) -> None:
    if params["num_val"] + params["num_train"] > train_pool:
        raise ConfigError(f"{where}.num_train: num_val + num_train = {params['num_val'] + params['num_train']} but "
                          f"{source} has {train_pool} training images; lower num_train or num_val")
    if params["num_test"] > test_pool:
        raise ConfigError(f"{where}.num_test: {params['num_test']} but {source} has {test_pool} test images; "
                          "lower num_test")


def _check_sp(params: dict, where: str, pixels: int) -> None:
    if not 1 <= params["n_sp"] <= pixels:
        raise ConfigError(f"{where}.n_sp: {params['n_sp']} must lie in 1..{pixels} (pixels per image)")
    if params["compactness"] <= 0:
        raise ConfigError(f"{where}.compactness: must be > 0, got {params['compactness']}")


def _check_mnist(params: dict, where: str) -> None:
    _check_counts(params, where, 60000, 10000, "MNIST")
    _check_sp(params, where, 28 * 28)


def _check_cifar(params: dict, where: str) -> None:
    _check_counts(params, where, 50000, 10000, "CIFAR-10")
    _check_sp(params, where, 32 * 32)


def _check_digits(params: dict, where: str) -> None:
    _check_counts(params, where, raw_images.DIGITS_TRAIN, 1797 - raw_images.DIGITS_TRAIN, "the digits set")
    _check_sp(params, where, 28 * 28)


def mnist_raw_files(params: dict) -> list[RawFile]:
    """The four MNIST IDX files (published MD5s)."""
    return list(raw_images.MNIST_FILES.values())


def cifar10_raw_files(params: dict) -> list[RawFile]:
    """The CIFAR-10 python tarball (published MD5)."""
    return list(raw_images.CIFAR10_FILES.values())


def _build_mnist(params: dict, seed: int, raw_dir: Path) -> GraphColumns:
    return _build_from_images(*raw_images.load_mnist(raw_dir), params, seed, params["n_sp"] + 20, "MNIST superpixels")


def _build_cifar10(params: dict, seed: int, raw_dir: Path) -> GraphColumns:
    tarball = Path(raw_dir) / raw_images.CIFAR10_FILES["cifar-10-python.tar.gz"].relative_path
    return _build_from_images(*raw_images.load_cifar10(tarball), params, seed, params["n_sp"] + 50,
                              "CIFAR10 superpixels")


def _build_digits(params: dict, seed: int) -> GraphColumns:
    return _build_from_images(*raw_images.load_digits_28(), params, seed, params["n_sp"] + 20, "digits superpixels")


def _skimage_version() -> str:
    try:
        return metadata.version("scikit-image")
    except metadata.PackageNotFoundError:  # pragma: no cover
        return "unknown"


def _describer(generator: str, channels: int, raw: Callable[[dict], list[RawFile]] | None, first_q_extra: int):
    def describe(name: str, params: dict, seed: int) -> DatasetMeta:
        sizes = _split_sizes(params)
        source = {"generator": generator, "seed": seed, "scikit_image": _skimage_version(),
                  "params": {k: v for k, v in params.items() if k not in ("workers", "mirror")},
                  "slic_first_n_segments": params["n_sp"] + first_q_extra}
        if raw is not None:
            source["raw_files"] = {f.relative_path: f.md5 for f in raw(params)}
        return DatasetMeta(
            name=name, task="graph_classification", loss="cross_entropy", metric="accuracy", num_outputs=10,
            num_graphs=sum(sizes.values()), node_features=FeatureSpec("continuous", channels + 2),
            edge_features=FeatureSpec("continuous", 1), pe_usage="add", split_sizes=sizes, source=source)
    return describe


SUPERPIXELS_MNIST = Generator(
    name="superpixels_mnist",
    description="MNIST superpixel graphs (SLIC ≤ 75 segments, 8-NN, downloads the raw IDX files; graph classification)",
    defaults={"num_train": 55000, "num_val": 5000, "num_test": 10000, "n_sp": 75, "compactness": 0.25, "mirror": "",
              "workers": 1},
    default_split={"scheme": "given"},
    describe=_describer("superpixels_mnist", 1, mnist_raw_files, 20),
    build=_build_mnist,
    check=_check_mnist,
    raw_files=mnist_raw_files,
)

SUPERPIXELS_CIFAR10 = Generator(
    name="superpixels_cifar10",
    description="CIFAR-10 superpixel graphs (SLIC ≤ 150 segments in Lab, 8-NN, downloads the python tarball; "
                "graph classification)",
    defaults={"num_train": 45000, "num_val": 5000, "num_test": 10000, "n_sp": 150, "compactness": 10, "mirror": "",
              "workers": 1},
    default_split={"scheme": "given"},
    describe=_describer("superpixels_cifar10", 3, cifar10_raw_files, 50),
    build=_build_cifar10,
    check=_check_cifar,
    raw_files=cifar10_raw_files,
)

SUPERPIXELS_DIGITS = Generator(
    name="superpixels_digits",
    description="Offline MNIST-style superpixel graphs from scikit-learn's bundled 8×8 digits upsampled to 28×28",
    defaults={"num_train": 1350, "num_val": 150, "num_test": 297, "n_sp": 75, "compactness": 0.25, "workers": 1},
    default_split={"scheme": "given"},
    describe=_describer("superpixels_digits", 1, None, 20),
    build=_build_digits,
    check=_check_digits,
)

