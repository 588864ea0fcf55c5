"""TSP: which k-nearest-neighbour edges belong to an optimal tour (Dwivedi et al.; docs/datasets.md#tsp).

Instance: n ~ U{num_nodes[0] .. num_nodes[1]} (50..500), n points uniform in [0, 1)², drawn directly as float32
(the stored coordinates are exactly the points everything below is computed from).

Graph: directed k-NN graph, k = 25: every node i has exactly k out-edges i → j to its k nearest other nodes
(Euclidean distance in float64, ties by smaller index), stored node by node (i ascending), nearest first.
The graph is not symmetric (j may be among i's k nearest but not i among j's), E = k·n. Node feature ``x`` =
(x, y) float32; edge feature ``edge_attr`` = distance, float32 (E, 1); edge label ``y`` = 1 iff {i, j} are
consecutive in the tour (cyclically), else 0 — so a node has at most 2 out-edges labelled 1, and i → j and
j → i carry the same label when both exist. Tour edges outside the k-NN graph are not represented (as in the
original).

Labels: a tour computed by LKH-3 through elkai on the integer matrix round(distance × 10⁶) (see
:mod:`gnnbench.data.tsp_solver`: scaling, integer limits, determinism, checked against Held–Karp), with
``lkh_runs`` LKH runs. Default 1 (elkai's default is 10): one run almost always finds the tour the best of 10 runs
finds (otherwise one longer by a fraction of a percent) at a fraction of the CPU time (figures:
docs/performance.md).

Decisions against the original (released code ``data/TSP/generate_TSP.py``, ``data/TSP.py``;
docs/datasets.md#tsp):

* Solver. The original solves with Concorde via pyconcorde with ``norm="GEO"``: TSPLIB's geographic distance reads each
  coordinate as degrees.minutes (DDD.MM) of latitude/longitude — a coordinate in [0, 1) becomes 5/3 of it in degrees —
  and returns great-circle distances in whole kilometres (at most ~260 km here, a few km between neighbours, so rounding
  changes them by tens of percent). Its tours are optimal for that distorted, coarsely rounded metric, not for the
  Euclidean distance the graphs and features use (this reading follows from Concorde's definition of ``GEO``). gnnbench
  labels with a Euclidean-optimal tour instead; the quirk is not reproduced. Concorde proves optimality, LKH does not
  (see tsp_solver).
* Splits. The released pickle holds [train, val, test] but the original loader reads test = f[1], val = f[2].
  Both are i.i.d. samples of 1,000 graphs from the same distribution, so the swap only renames them; gnnbench
  stores train, val, test in that order and uses them as named.
* Seeds. The original's val/test generation seeds are not in the repository; gnnbench draws chunk ``c`` of
  split ``s`` from ``SeedSequence(seed, spawn_key=(s, c))`` (s = 1, 2, 3), so a split's graphs do not depend
  on the sizes of the other splits.
* Edge order inside a node: the original's order comes from ``argpartition`` (implementation dependent);
  gnnbench sorts by distance. The edge set is the same.

Graph column ``tour_length``: the Euclidean length (float64) of the labelling tour, whose distribution is
reported in ``meta.json`` (statistics).

Solver (``solver``): ``lkh`` (default) or ``concorde`` (the executable must be on PATH; see tsp_solver).

Sharded labelling. Labelling is the expensive step (hours at paper size), so the workflow splits it: the
instances of all splits, in stored order (train, val, test), are cut into shards of ``instances_per_shard``;
:func:`label_shard` solves one shard (one Snakemake job each, so a cluster spreads them) into a small Parquet
file of tours, with progress in its log; :func:`build_from_shards` regenerates the (cheap, seeded) instances
and labels them from the shards' tours, checking that the shards belong to these parameters and cover every
instance once. The data do not depend on the shard size or on ``workers``. Outside the workflow
(:func:`build_tsp`, the CLI) everything is solved in one process pool.

Everything but the solver is vectorised over chunks of graphs; solving is one solver call per instance.
"""

from __future__ import annotations

import json
import os
from importlib import metadata
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gnnbench.data import tsp_solver
from gnnbench.data.generators.base import Baseline, Generator, Sharding
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns
from gnnbench.errors import ConfigError, DataError, GnnbenchError
from gnnbench.io import atomic_path, sha256_json
from gnnbench.progress import Progress

CHUNK = 128  # graphs sampled together; part of the seeding scheme (changing it changes the data)
SPLITS = ("train", "val", "test")
KNN_ELEMENTS = 1 << 22  # distance-matrix entries per vectorised k-NN batch (memory bound, not part of the data)
SHARD_METADATA = b"gnnbench_tsp_shard"


def _rng(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _split_sizes(params: dict) -> dict[str, int]:
    return {s: params[f"num_{s}"] for s in SPLITS}


def sample_instances(rng: np.random.Generator, count: int, num_nodes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Node counts (count,) int64 and concatenated points (Σn, 2) float32, uniform in [0, 1)²."""
    low, high = num_nodes
    n = rng.integers(low, high + 1, count).astype(np.int64)
    points = rng.random((int(n.sum()), 2), dtype=np.float32)
    return n, points


def knn_edges(n: np.ndarray, points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Directed k-NN edges of every instance: local ``src``, ``dst`` (int32) and distance (float64), graph by graph.

    Instances are processed in batches of similar size (batching does not change the result): every node's
    row of distances to its graph's nodes, padded to the batch's largest graph; padding and the node itself
    get distance +inf (never among the k nearest since k < n).
    """
    ptr = np.concatenate([[0], np.cumsum(n)])
    local = np.arange(ptr[-1]) - np.repeat(ptr[:-1], n)
    nbr_all = np.empty((ptr[-1], k), dtype=np.int64)
    dist_all = np.empty((ptr[-1], k))
    by_size = np.argsort(n, kind="stable")  # similar sizes together: little padding
    start = 0
    while start < len(n):
        stop, rows = start + 1, int(n[by_size[start]])
        while stop < len(n) and (rows + n[by_size[stop]]) * n[by_size[stop]] <= KNN_ELEMENTS:
            rows += int(n[by_size[stop]])
            stop += 1
        graphs = by_size[start:stop]
        counts, n_max = n[graphs], int(n[graphs].max())
        first = np.cumsum(counts) - counts  # node ids of this batch's graphs, graph by graph
        node_ids = np.arange(int(counts.sum())) + np.repeat(ptr[graphs] - first, counts)
        valid = np.arange(n_max) < counts[:, None]  # (B, n_max)
        padded = np.zeros((len(graphs), n_max, 2))
        padded[valid] = points[node_ids]
        row_graph = np.repeat(np.arange(len(graphs)), counts)
        p = points[node_ids].astype(np.float64)
        dx = p[:, None, 0] - padded[row_graph, :, 0]
        dy = p[:, None, 1] - padded[row_graph, :, 1]
        d = np.sqrt(dx * dx + dy * dy)  # (rows, n_max) float64
        d[~valid[row_graph]] = np.inf
        d[np.arange(len(node_ids)), local[node_ids]] = np.inf
        nbr = _k_smallest(d, k)
        nbr_all[node_ids] = nbr
        dist_all[node_ids] = np.take_along_axis(d, nbr, 1)
        start = stop
    return np.repeat(local, k).astype(np.int32), nbr_all.ravel().astype(np.int32), dist_all.ravel()


def _k_smallest(d: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k smallest entries of every row of ``d`` (rows, m), ascending, ties by smaller index.

    Same result as ``argsort(d, kind="stable")[:, :k]`` in O(m) per row plus a sort of k: the entries up to the
    k-th smallest value; in the rare rows where that value is tied beyond k entries, the lowest-index ones.
    """
    kth = np.partition(d, k - 1, axis=1)[:, k - 1:k]
    take = d <= kth
    excess = np.flatnonzero(take.sum(1) > k)
    if excess.size:
        sub = d[excess]
        tied = sub == kth[excess]
        below = sub < kth[excess]
        take[excess] = below | (tied & (np.cumsum(tied, axis=1) <= k - below.sum(1, keepdims=True)))
    idx = np.nonzero(take)[1].reshape(len(d), k)  # exactly k per row, in index order
    order = np.argsort(np.take_along_axis(d, idx, 1), axis=1, kind="stable")
    return np.take_along_axis(idx, order, 1)


def tour_labels(n: np.ndarray, tours: list[np.ndarray], src: np.ndarray, dst: np.ndarray,
                num_edges: np.ndarray) -> np.ndarray:
    """1 where edge src → dst joins consecutive tour nodes (cyclically), else 0; int16 (E,)."""
    offset = np.repeat(np.concatenate([[0], np.cumsum(n)[:-1]]), n)  # node offset of each tour position
    flat = np.concatenate(tours).astype(np.int64)  # local node at each tour position
    pos = np.arange(flat.size) - offset
    nxt = np.where(pos + 1 == np.repeat(n, n), 0, pos + 1) + offset
    prv = np.where(pos == 0, np.repeat(n, n) - 1, pos - 1) + offset
    succ = np.empty_like(flat)
    pred = np.empty_like(flat)
    succ[offset + flat] = flat[nxt]  # by global node id: its successor / predecessor (local ids)
    pred[offset + flat] = flat[prv]
    edge_offset = np.repeat(np.concatenate([[0], np.cumsum(n)[:-1]]), num_edges)
    u = src.astype(np.int64) + edge_offset
    return ((succ[u] == dst) | (pred[u] == dst)).astype(np.int16)


def tour_lengths(n: np.ndarray, tours: list[np.ndarray], points: np.ndarray) -> np.ndarray:
    """Euclidean length (float64) of every closed tour; ``points`` concatenated (Σn, 2), tours of local ids."""
    offset = np.repeat(np.concatenate([[0], np.cumsum(n)[:-1]]), n)
    flat = np.concatenate(tours).astype(np.int64) + offset  # global node at each tour position
    pos = np.arange(flat.size) - offset
    nxt = flat[np.where(pos + 1 == np.repeat(n, n), 0, pos + 1) + offset]
    p = points.astype(np.float64)
    step = np.sqrt(((p[flat] - p[nxt]) ** 2).sum(1))
    return np.add.reduceat(step, np.concatenate([[0], np.cumsum(n)[:-1]])) if len(n) else np.zeros(0)


def _graphs_of_chunk(rng: np.random.Generator, count: int, params: dict) -> GraphColumns:
    """One chunk of graphs without labels."""
    n, points = sample_instances(rng, count, params["num_nodes"])
    src, dst, dist = knn_edges(n, points, params["k"])
    return GraphColumns(num_nodes=n, num_edges=n * params["k"], src=src, dst=dst, node={"x": points},
                        edge={"edge_attr": dist.astype(np.float32)[:, None]})


def _chunk_plan(params: dict) -> list[tuple[int, int, int, int]]:
    """(split code, chunk index, first global instance, count) of every chunk, in stored order."""
    plan, first = [], 0
    for split_code, split in enumerate(SPLITS, start=1):
        n_split = params[f"num_{split}"]
        for c, start in enumerate(range(0, n_split, CHUNK)):
            count = min(CHUNK, n_split - start)
            plan.append((split_code, c, first, count))
            first += count
    return plan


def _chunks(params: dict, seed: int) -> list[GraphColumns]:
    return [_graphs_of_chunk(_rng(seed, code, c), count, params) for code, c, _, count in _chunk_plan(params)]


def _point_sets(columns: GraphColumns) -> list[np.ndarray]:
    return np.split(columns.node["x"], columns.node_ptr[1:-1])


def sample_graphs(params: dict, seed: int) -> tuple[GraphColumns, list[np.ndarray]]:
    """All graphs (train, val, test) without labels, and the point set of every graph."""
    columns = GraphColumns.concat(_chunks(params, seed))
    return columns, _point_sets(columns)


def _label(parts: list[GraphColumns], tours: list[np.ndarray]) -> GraphColumns:
    first = 0
    for part in parts:  # label chunk by chunk: the temporaries stay small
        part_tours, first = tours[first:first + part.num_graphs], first + part.num_graphs
        part.edge["y"] = tour_labels(part.num_nodes, part_tours, part.src, part.dst, part.num_edges)
        part.graph["tour_length"] = tour_lengths(part.num_nodes, part_tours, part.node["x"])
    return GraphColumns.concat(parts)


def _solve(point_sets: list[np.ndarray], params: dict, workers: int, what: str) -> list[np.ndarray]:
    progress = Progress(len(point_sets), what)
    try:
        return tsp_solver.solve_tours(point_sets, params["lkh_runs"], workers, params["solver"], progress.update)
    except ImportError:
        raise GnnbenchError("generator 'tsp' needs the elkai package (LKH-3): pip install elkai") from None


def build_tsp(params: dict, seed: int, workers: int | None = None) -> GraphColumns:
    """The dataset, solved in one go; ``workers`` solver processes at once (default: all cores; the result
    does not depend on it)."""
    parts = _chunks(params, seed)
    point_sets = [p for part in parts for p in _point_sets(part)]
    workers = workers or (1 if len(point_sets) <= tsp_solver.WORKER_BATCH else os.cpu_count() or 1)
    return _label(parts, _solve(point_sets, params, workers, "TSP labelling"))


def _build(params: dict, seed: int) -> GraphColumns:
    return build_tsp(params, seed)


# ------------------------------------------------------------------------------------------ sharded labelling


def num_instances(params: dict) -> int:
    """Number of TSP instances over all splits (train + val + test)."""
    return sum(_split_sizes(params).values())


def num_shards(params: dict) -> int:
    """Number of labelling shards of ``instances_per_shard`` instances (the last may be smaller)."""
    return -(-num_instances(params) // params["instances_per_shard"])


def shard_range(params: dict, shard: int) -> range:
    """Indices (over all splits, stored order) of the instances in labelling shard ``shard``."""
    size = params["instances_per_shard"]
    return range(shard * size, min((shard + 1) * size, num_instances(params)))


def _shard_key(params: dict, seed: int) -> str:
    return sha256_json({"params": params, "seed": seed})


def shard_point_sets(params: dict, seed: int, shard: int) -> list[np.ndarray]:
    """Point sets of the instances of ``shard``: only the chunks it overlaps are sampled (no k-NN needed)."""
    wanted = shard_range(params, shard)
    point_sets = []
    for code, c, first, count in _chunk_plan(params):
        if first + count <= wanted.start or first >= wanted.stop:
            continue
        n, points = sample_instances(_rng(seed, code, c), count, params["num_nodes"])
        sets = np.split(points, np.cumsum(n)[:-1])
        point_sets += sets[max(wanted.start - first, 0):wanted.stop - first]
    return point_sets


def label_shard(params: dict, seed: int, shard: int, out: str | os.PathLike, workers: int = 1) -> None:
    """Solve the instances of ``shard`` and write their tours to the Parquet file ``out`` (atomically)."""
    if not 0 <= shard < num_shards(params):
        raise ConfigError(f"TSP shard {shard} does not exist: {num_instances(params)} instances in shards of "
                          f"{params['instances_per_shard']} make shards 0..{num_shards(params) - 1}")
    indices = shard_range(params, shard)
    point_sets = shard_point_sets(params, seed, shard)
    tours = _solve(point_sets, params, workers, f"TSP shard {shard + 1}/{num_shards(params)}")
    table = pa.table({
        "index": pa.array(np.arange(indices.start, indices.stop, dtype=np.int64)),
        "tour": pa.array([t.astype(np.int32) for t in tours], type=pa.list_(pa.int32())),
    }).replace_schema_metadata({SHARD_METADATA: json.dumps(
        {"shard": shard, "num_shards": num_shards(params), "key": _shard_key(params, seed)}).encode()})
    with atomic_path(out) as tmp:
        pq.write_table(table, tmp)


def _read_shard(path: Path, params: dict, seed: int) -> tuple[int, np.ndarray, list[np.ndarray]]:
    fix = f"delete {path} and rerun snakemake to relabel that shard"
    try:
        table = pq.read_table(path)
        info = json.loads((table.schema.metadata or {})[SHARD_METADATA])
    except FileNotFoundError:
        raise DataError(f"TSP label shard {path} does not exist; rerun snakemake to label it") from None
    except (OSError, KeyError, ValueError, pa.ArrowException) as exc:
        raise DataError(f"TSP label shard {path} is not a readable shard file ({exc}); {fix}") from None
    if info.get("key") != _shard_key(params, seed):
        raise DataError(f"TSP label shard {path} was made with other parameters or seed than datasets' current "
                        f"ones; {fix}")
    index = table.column("index").to_numpy()
    tours = [np.asarray(t, dtype=np.int64) for t in table.column("tour").to_pylist()]
    return int(info["shard"]), index, tours


def build_from_shards(params: dict, seed: int, shard_files: list[str | os.PathLike]) -> GraphColumns:
    """The dataset, labelled from the tours of every shard (in any order; each shard exactly once)."""
    shards = sorted((_read_shard(Path(f), params, seed) for f in shard_files), key=lambda s: s[0])
    found = [s[0] for s in shards]
    if found != list(range(num_shards(params))):
        raise DataError(f"TSP label shards: expected shards 0..{num_shards(params) - 1} once each, got {found}; "
                        "rerun snakemake to label the missing shards")
    index = np.concatenate([s[1] for s in shards])
    tours = [t for s in shards for t in s[2]]
    parts = _chunks(params, seed)
    n = np.concatenate([p.num_nodes for p in parts])
    if not np.array_equal(index, np.arange(num_instances(params))) or \
            not np.array_equal(np.array([len(t) for t in tours]), n):
        raise DataError("TSP label shards do not match the instances (indices or tour sizes differ); delete the "
                        "dataset's label_shards folder and rerun snakemake")
    return _label(parts, tours)


def _solver_version(solver: str = "lkh") -> str:
    if solver == "concorde":
        return "Concorde (executable on PATH)"
    try:
        return f"LKH-3 via elkai {metadata.version('elkai')}"
    except metadata.PackageNotFoundError:
        return "LKH-3 via elkai (not installed)"


def _describe(name: str, params: dict, seed: int) -> DatasetMeta:
    sizes = _split_sizes(params)
    return DatasetMeta(
        name=name, task="edge_classification", loss="cross_entropy", metric="f1", num_outputs=2,
        num_graphs=sum(sizes.values()), node_features=FeatureSpec("continuous", 2),
        edge_features=FeatureSpec("continuous", 1), pe_usage="add", split_sizes=sizes,
        source={"generator": "tsp", "params": params, "seed": seed, "solver": _solver_version(params["solver"]),
                "distance_scale": tsp_solver.SCALE},
    )


def _check(params: dict, where: str) -> None:
    if params["solver"] not in tsp_solver.SOLVERS:
        raise ConfigError(f"{where}.solver: unknown TSP solver {params['solver']!r}; choose one of "
                          f"{', '.join(tsp_solver.SOLVERS)}")
    low = params["num_nodes"][0]
    if params["k"] > low - 1:
        raise ConfigError(f"{where}.k: {params['k']} nearest neighbours need graphs of at least {params['k'] + 1} "
                          f"nodes, but num_nodes starts at {low}; lower k or raise num_nodes")


TSP = Generator(
    name="tsp",
    description="TSP: classify k-nearest-neighbour edges as in or out of an optimal tour (edge classification)",
    defaults={"num_train": 10000, "num_val": 1000, "num_test": 1000, "num_nodes": [50, 500], "k": 25,
              "lkh_runs": 1, "solver": "lkh", "instances_per_shard": 500},
    default_split={"scheme": "given"},
    describe=_describe,
    build=_build,
    check=_check,
    sharding=Sharding(count=num_shards, label=label_shard, merge=build_from_shards),
    baselines=(Baseline("knn_k2", "knn_tour", {"k": 2}),),  # the paper's k-NN heuristic (test F1 0.693)
)
