"""GraphTheoryProp: the PNA multitask benchmark (Corso et al., NeurIPS 2020; docs/datasets.md#graphtheoryprop).

Graphs. Split ``s`` has ``{s}_graphs_per_size`` graphs for every node count in ``{s}_num_nodes`` (defaults:
train 512 × n = 15..24, val 128 × n = 15..19, test 256 × n = 15..19 → 5,120 / 640 / 1,280), stored in the
original order: train, val, test; inside a split, sizes ascending, the graphs of one size consecutively.
Each graph comes from PNA's ``generate_graph(n, RANDOM, seed)`` (lukecavabarrett/pna,
``multitask_benchmark/datasets_generation/``), reproduced draw for draw:

* one seed counter starts at the dataset ``seed`` (PNA: 1234) and is shared by all splits; it is incremented
  before every graph, and again before every regeneration: a graph with an isolated node is redrawn, with
  the type already drawn, until it has none;
* per attempt, Python's ``random`` and NumPy's legacy global state are seeded with the counter; the type is
  ``np.random.choice`` over ERDOS_RENYI .2, BARABASI_ALBERT .2, GRID .05, CAVEMAN .05, TREE .15, LADDER .05,
  LINE .05, STAR .05, CATERPILLAR .1, LOBSTER .1 (enum values 1, 2, 3, 5, ..., 11, stored in graph column
  ``type``; the accepted counter is stored in ``seed``);
* base graphs: Erdős–Rényi with p = U[0, 1) (networkx ``fast_gnp_random_graph``, which re-seeds its own
  ``random.Random(seed)``); Barabási–Albert with m = ⌊U·(n−1)⌋ + 1 under the **networkx ≤ 2.x rule** (start
  from m isolated nodes; networkx 3 starts from a star and drifts from the released data); m × n/m grid and
  caveman (m disjoint cliques) with m the largest divisor of n ≤ √n; power-law tree (``random_powerlaw_tree``,
  γ = 3, 10,000 tries); ladder (+ node n−1 joined to 0 when n is odd); path; star; caterpillar and lobster
  (NumPy re-seeded; uniform attachment to a random-length backbone);
* the node order is shuffled by Python ``random.shuffle``; node values U[0, 1) are drawn, then ``randomize``
  as the code does it (not as its docstring says): with e edges and r non-edges, ep = .9 and rp = .1·e/r if
  e ≤ r, else ep = .9 + .1·(e−r)/e and rp = .1; M = U + Uᵀ with U ~ U[0, .5)^{n×n}; an edge stays if
  M < ep, a non-edge appears if M < rp (so ~98 % of edges stay and non-edges appear with probability 2·rp²);
* the SSSP source is ``np.random.randint(0, n)``, continuing the NumPy state of the accepted attempt.

The networkx generators are re-implemented here with the same calls on ``random.Random`` / ``RandomState``
in the same order (networkx 2.4 source), so networkx is not needed and its version cannot change the data.
With ``seed`` = 1234 and the default sizes this reproduces the released ``multitask_dataset.pkl`` (train uses
counters 1235–7168, val 7169–7885, test 7886–9346, as PNA's code run with networkx 2.4). Generation is a
sequential per-attempt Python loop by necessity (every graph's RNG state depends on how many attempts came before);
all targets are then computed vectorised per node-count group.

Columns. Edges: both directions of every undirected edge, row-major per graph (as ``dgl.from_scipy(coo(A))``).
Node ``x`` (n, 2) float32 = [one-hot SSSP source, node value]. No edge features (the benchmark's constant 0
edge feature is replaced by ones inside the nets). Targets, raw values in ``y_raw``:

* node (n, 3): SSSP hop distance from the source, unreachable nodes **0** (as the source itself);
  eccentricity inside the node's own component (max finite distance); graph-Laplacian feature (L·x)_i =
  deg(i)·x_i − Σ_{j~i} x_j with x the node values (may be negative);
* graph (3,): ``is_connected`` as the original computes it — min(A^(2^(1+⌈log2 n⌉))) > 0, which is **1 iff
  the graph is connected and not bipartite** (computed here exactly, by BFS level parity); diameter = largest
  finite distance (largest component diameter); spectral radius = max |eigenvalue| of the 0/1 adjacency.

Normalisation. The original divides every target column by its maximum over the train split at load time
(node columns: over all train nodes; graph columns: over train graphs; no shift, signs kept), in float32.
gnnbench has no load-time hook for this, so it is done here: ``y`` holds the normalised targets the models
train on, ``y_raw`` the raw float32 values (the maxima are recoverable as the train maxima of ``y_raw``).
Decision: a column whose train maximum is ≤ 0 (possible only with tiny custom sizes) is left unscaled
instead of producing inf/NaN.
"""

from __future__ import annotations

import math
import random

import numpy as np

from gnnbench.data.generators.base import Generator
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns
from gnnbench.errors import ConfigError

SPLITS = ("train", "val", "test")
# (name, enum value, probability) in PNA's MIXTURE order; enum value 4 is unused by PNA.
GRAPH_TYPES = (("ERDOS_RENYI", 1, 0.2), ("BARABASI_ALBERT", 2, 0.2), ("GRID", 3, 0.05), ("CAVEMAN", 5, 0.05),
               ("TREE", 6, 0.15), ("LADDER", 7, 0.05), ("LINE", 8, 0.05), ("STAR", 9, 0.05),
               ("CATERPILLAR", 10, 0.1), ("LOBSTER", 11, 0.1))
TYPE_PROBS = [p for _, _, p in GRAPH_TYPES]
NODE_TARGETS = ("sssp", "eccentricity", "graph_laplacian_features")
GRAPH_TARGETS = ("is_connected", "diameter", "spectral_radius")
TREE_TRIES = 10000  # PNA: nx.random_powerlaw_tree(N, seed=seed, tries=10000)
SWAPS_KEPT = 256  # values kept from the end of the tree's swap list (more are recomputed when needed)
MIN_NODES = 2  # a 1-node graph always has an isolated node: regeneration would never end
_MAX_SEED = 2**32 - 1  # NumPy's legacy seed range


# ----------------------------------------------------------------------------------------- base graphs
# Each returns the undirected edges over labels 0..n-1, numbered so that label i is the i-th node of networkx 2.4's
# list(G) (the order random.shuffle permutes): grid nodes (i, j) row-major, tree nodes by rank.


def _path(nodes) -> list[tuple[int, int]]:
    return [(nodes[i], nodes[i + 1]) for i in range(len(nodes) - 1)]


def _erdos_renyi(n: int, p: float, seed: int) -> list[tuple[int, int]]:
    """networkx 2.4 ``fast_gnp_random_graph(n, p, seed)`` (undirected; fresh ``random.Random(seed)``)."""
    if p <= 0:  # falls back to gnp_random_graph: empty for p <= 0, complete for p >= 1
        return []
    if p >= 1:
        return [(u, v) for u in range(n) for v in range(u + 1, n)]
    rng = random.Random(seed)
    edges = []
    w, v = -1, 1
    lp = math.log(1.0 - p)
    while v < n:
        lr = math.log(1.0 - rng.random())
        w = w + 1 + int(lr / lp)
        while w >= v and v < n:
            w = w - v
            v = v + 1
        if v < n:
            edges.append((v, w))
    return edges


def _barabasi_albert(n: int, m: int, seed: int) -> list[tuple[int, int]]:
    """networkx ≤ 2.x ``barabasi_albert_graph``: m isolated seed nodes, node m joins all of them.

    ``_random_subset`` collects targets in a Python ``set`` and the set's iteration order feeds the
    repeated-node list; a real set is used so that the order (and so every later draw) is the same.
    """
    rng = random.Random(seed)
    edges = []
    targets = list(range(m))
    repeated: list[int] = []
    for source in range(m, n):
        edges.extend((source, t) for t in targets)
        repeated.extend(targets)
        repeated.extend([source] * m)
        chosen: set[int] = set()
        while len(chosen) < m:
            chosen.add(rng.choice(repeated))
        targets = chosen
    return edges


def _grid_side(n: int) -> int:
    m = 1
    for i in range(1, int(math.sqrt(n)) + 1):
        if n % i == 0:
            m = i
    return m


def _grid(n: int) -> list[tuple[int, int]]:
    """``grid_2d_graph(m, n // m)``: node (i, j) is listed row-major, i.e. as label i·k + j."""
    m = _grid_side(n)
    k = n // m
    edges = [(i * k + j, (i + 1) * k + j) for i in range(m - 1) for j in range(k)]
    edges += [(i * k + j, i * k + j + 1) for i in range(m) for j in range(k - 1)]
    return edges


def _caveman(n: int) -> list[tuple[int, int]]:
    """``caveman_graph(m, n // m)``: m disjoint cliques of consecutive labels (no links between them)."""
    m = _grid_side(n)
    k = n // m
    return [(s + a, s + b) for s in range(0, m * k, k) for a in range(k) for b in range(a + 1, k)]


def _uniform_doubles(rng: random.Random, count: int, last: int) -> np.ndarray:
    """The last ``last`` of the next ``count`` values of ``rng.random()``, in draw order, consuming exactly the
    generator state of ``count`` calls.

    CPython's ``random()`` is (a·2^26 + b) / 2^53 with a, b the top 27 / 26 bits of two consecutive 32-bit
    Mersenne Twister outputs; ``getrandbits(64·count)`` draws those 2·count outputs in one call, the first
    as the least significant word (the 10,000 tree tries would otherwise cost ~5 ms of Python per tree).
    """
    last = min(last, count)
    bits = rng.getrandbits(64 * count) >> (64 * (count - last))
    words = np.frombuffer(bits.to_bytes(8 * last, "little"), dtype="<u4")
    a = (words[0::2] >> 5).astype(np.float64)
    b = (words[1::2] >> 6).astype(np.float64)
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


def _tree(n: int, seed: int) -> list[tuple[int, int]]:
    """networkx 2.4 ``random_powerlaw_tree(n, gamma=3, seed, tries=10000)``.

    Sequence: n Pareto(2) draws rounded to [0, n]; then 10,000 more for swapping, of which the loop only
    pops from the end while iterating from the front (so at most 5,000 swaps). The tree is
    ``degree_sequence_tree``: a backbone path over the nodes of degree > 1 (sorted descending), leaves
    attached in order; list(G) is ascending by label, and node 0 is dropped if one node too many was made.
    """
    rng = random.Random(seed)

    def rounded(s: float) -> int:
        return min(n, max(int(round(s)), 0))

    zseq = [rounded(rng.paretovariate(2)) for _ in range(n)]  # powerlaw_sequence: paretovariate(gamma − 1)
    state = rng.getstate()
    swap_u = _uniform_doubles(rng, TREE_TRIES, SWAPS_KEPT)  # only the end of the swap list is ever popped
    remaining, t = TREE_TRIES, 0
    while t < remaining:  # `for deg in swap: ... swap.pop()`
        if 2 * n - sum(zseq) == 2:
            break
        if t == len(swap_u):  # rare: more pops than kept values; redo the draw keeping all of them
            after = rng.getstate()
            rng.setstate(state)
            swap_u = _uniform_doubles(rng, TREE_TRIES, TREE_TRIES)
            rng.setstate(after)
        index = rng.randint(0, n - 1)
        zseq[index] = rounded((1.0 - float(swap_u[-1 - t])) ** (-1.0 / 2))  # paretovariate(2) of swap.pop()
        remaining, t = remaining - 1, t + 1
    else:
        raise RuntimeError(f"no power-law tree sequence for n={n}, seed={seed} within {TREE_TRIES} tries "
                           "(networkx raises here too)")
    deg = sorted((s for s in zseq if s > 1), reverse=True)
    backbone = len(deg) + 2
    edges = _path(range(backbone))
    last = backbone
    for source in range(1, backbone - 1):
        extra = deg.pop() - 2
        edges += [(source, target) for target in range(last, last + extra)]
        last += extra
    if last > n:  # "in case we added one too many": node 0 removed, list(G) = 1..n
        edges = [(u - 1, v - 1) for u, v in edges if u != 0 and v != 0]
    return edges


def _ladder(n: int) -> list[tuple[int, int]]:
    half = n // 2
    edges = _path(range(half)) + _path(range(half, 2 * half)) + [(v, v + half) for v in range(half)]
    if n % 2:
        edges.append((0, n - 1))
    return edges


def _caterpillar(n: int, rs: np.random.RandomState) -> list[tuple[int, int]]:
    backbone = rs.randint(low=1, high=n)
    return _path(range(backbone)) + [(i, rs.randint(backbone)) for i in range(backbone, n)]


def _lobster(n: int, rs: np.random.RandomState) -> list[tuple[int, int]]:
    backbone = rs.randint(low=1, high=n)
    first_leaf = rs.randint(low=backbone + 1, high=n + 1)
    edges = _path(range(backbone)) + [(i, rs.randint(backbone)) for i in range(backbone, first_leaf)]
    return edges + [(i, rs.randint(low=backbone, high=first_leaf)) for i in range(first_leaf, n)]


def _randomize(a: np.ndarray, rs: np.random.RandomState) -> np.ndarray:
    """PNA ``randomize`` with its exact float operations (the comparisons decide edges); returns a bool matrix.

    ``A·[M < ep] + (1 − A)·(1 − I)·[M < rp]`` is computed as a select on A followed by clearing the diagonal.
    """
    n = a.shape[0]
    e = np.sum(a) / 2
    r = n * (n - 1) / 2 - e
    if e <= r:
        ep, rp = 0.9, (1 - 0.9) * e / r
    else:
        ep, rp = 0.9 + (1 - 0.9) * (e - r) / e, 1 - 0.9
    m = rs.uniform(size=(n, n), low=0.0, high=0.5)
    m = m + m.transpose()
    out = np.where(a > 0, m < ep, m < rp)
    np.fill_diagonal(out, False)
    return out


class _Generators:
    """Reusable Python and NumPy generators, re-seeded per attempt (constructing a seeded ``RandomState`` costs
    ~1 ms, re-seeding one ~10 µs; the resulting states are identical)."""

    def __init__(self) -> None:
        self.py = random.Random()  # stands for Python's global generator
        self.rs = np.random.RandomState()  # stands for NumPy's global legacy generator

    def seed(self, seed: int) -> tuple[random.Random, np.random.RandomState]:
        self.py.seed(seed)
        self.rs.seed(seed)
        return self.py, self.rs


_TYPE_CDF = np.cumsum(np.asarray(TYPE_PROBS, dtype=np.float64))
_TYPE_CDF /= _TYPE_CDF[-1]


def _draw_type(rs: np.random.RandomState) -> int:
    """``np.random.choice(types, 1, p=probs)[0]`` with the same draw (legacy ``choice``: cdf of p normalised by
    its last entry, one ``random_sample``, ``searchsorted(side="right")``) without its ~0.2 ms of checks."""
    return int(_TYPE_CDF.searchsorted(rs.random_sample((1,)), side="right")[0])


def generate_graph(n: int, seed: int, type_index: int | None = None,
                   generators: _Generators | None = None) -> tuple[np.ndarray, np.ndarray, int, np.random.RandomState]:
    """One attempt of PNA's ``generate_graph(n, type, seed)``.

    ``type_index`` indexes :data:`GRAPH_TYPES` (None: drawn, as for GraphType.RANDOM). Returns the bool
    adjacency, the node values, the type index and the NumPy generator (the caller continues it for the source).
    """
    py, rs = (generators or _Generators()).seed(seed)  # random.seed(seed); np.random.seed(seed)
    if type_index is None:
        type_index = _draw_type(rs)
    name = GRAPH_TYPES[type_index][0]
    if name == "ERDOS_RENYI":
        edges = _erdos_renyi(n, py.random() * n / n, seed)  # degree = U·N, p = degree / N
    elif name == "BARABASI_ALBERT":
        edges = _barabasi_albert(n, int(py.random() * (n - 1)) + 1, seed)
    elif name == "GRID":
        edges = _grid(n)
    elif name == "CAVEMAN":
        edges = _caveman(n)
    elif name == "TREE":
        edges = _tree(n, seed)
    elif name == "LADDER":
        edges = _ladder(n)
    elif name == "LINE":
        edges = _path(range(n))
    elif name == "STAR":
        edges = [(0, v) for v in range(1, n)]
    elif name == "CATERPILLAR":
        rs.seed(seed)  # caterpillar() re-seeds NumPy's global generator
        edges = _caterpillar(n, rs)
    else:
        rs.seed(seed)  # lobster() re-seeds NumPy's global generator
        edges = _lobster(n, rs)
    order = list(range(n))
    py.shuffle(order)  # nodes = list(G); random.shuffle(nodes); A = to_numpy_array(G, nodelist=nodes)
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)  # row of node `label` in A
    adj = np.zeros((n, n))
    if edges:
        u, v = position[np.asarray(edges, dtype=np.int64).T]
        adj[u, v] = adj[v, u] = 1.0
    values = rs.uniform(low=0, high=1, size=n)
    return _randomize(adj, rs), values, type_index, rs


def _sizes(params: dict, split: str) -> list[int]:
    low, high = params[f"{split}_num_nodes"]
    return [n for n in range(low, high + 1) for _ in range(params[f"{split}_graphs_per_size"])]


def _split_sizes(params: dict) -> dict[str, int]:
    return {s: len(_sizes(params, s)) for s in SPLITS}


def sample_graphs(params: dict, seed: int) -> dict[str, np.ndarray]:
    """All graphs in storage order, as padded arrays: ``adj`` (G, n_max, n_max) bool, ``values`` (G, n_max),
    ``num_nodes``, ``source``, ``type`` (enum value) and ``seed`` (accepted counter) per graph."""
    sizes = np.array([n for s in SPLITS for n in _sizes(params, s)], dtype=np.int64)
    n_max = int(sizes.max())
    num_graphs = len(sizes)
    if seed < 0 or seed + 64 * num_graphs > _MAX_SEED:  # regenerations are rare (≈ 15 %); 64× is ample
        raise ConfigError(f"graph_theory_prop: seed {seed} must be in [0, {_MAX_SEED - 64 * num_graphs}] (NumPy "
                          "seeds are 32-bit and the counter grows with every graph); PNA uses 1234")
    adj = np.zeros((num_graphs, n_max, n_max), dtype=bool)
    values = np.zeros((num_graphs, n_max))
    source = np.empty(num_graphs, dtype=np.int64)
    types = np.empty(num_graphs, dtype=np.int16)
    seeds = np.empty(num_graphs, dtype=np.int64)
    counter = seed
    generators = _Generators()
    for g, n in enumerate(sizes.tolist()):  # sequential by necessity: each graph's seed depends on the previous
        counter += 1
        a, x, type_index, rs = generate_graph(n, counter, None, generators)
        while not a.any(axis=0).all():  # isolated node: redraw with the same type and the next seed
            counter += 1
            a, x, _, rs = generate_graph(n, counter, type_index, generators)
        source[g] = rs.randint(0, n)
        adj[g, :n, :n] = a
        values[g, :n] = x
        types[g] = GRAPH_TYPES[type_index][1]
        seeds[g] = counter
    return {"adj": adj, "values": values, "num_nodes": sizes, "source": source, "type": types, "seed": seeds}


# ----------------------------------------------------------------------------------------------- targets


def hop_distances(adj: np.ndarray) -> np.ndarray:
    """All-pairs hop distances of a batch of graphs (B, n, n) bool, by level-synchronous BFS from every node
    at once (one batched matmul per level); unreachable pairs get −1."""
    b, n, _ = adj.shape
    a = adj.astype(np.float32)
    dist = np.full((b, n, n), -1, dtype=np.int16)
    reached = np.broadcast_to(np.eye(n, dtype=bool), (b, n, n)).copy()
    dist[reached] = 0
    frontier = reached.astype(np.float32)
    for level in range(1, n):
        new = (np.matmul(frontier, a) > 0) & ~reached
        if not new.any():
            break
        dist[new] = level
        reached |= new
        frontier = new.astype(np.float32)
    return dist


def compute_targets(adj: np.ndarray, values: np.ndarray, source: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Raw targets of graphs of one size: node (B, n, 3) and graph (B, 3), float64 (definitions: module doc)."""
    b, n, _ = adj.shape
    dist = hop_distances(adj)
    sssp = np.maximum(dist[np.arange(b), source], 0)  # unreachable → 0, like the source itself
    ecc = dist.max(axis=2)  # −1 (unreachable) never wins against the 0 on the diagonal
    a = adj.astype(np.float64)
    laplacian = np.diag(np.ones(n)) * a.sum(axis=1)[:, None, :] - a  # L = D − A
    lap_x = np.matmul(laplacian, values[:, :, None])[:, :, 0]
    connected = (dist >= 0).all(axis=(1, 2))
    # A connected graph is bipartite iff no edge joins two nodes at the same BFS level from node 0.
    level0 = dist[:, 0, :]
    odd_cycle = (adj & (level0[:, :, None] == level0[:, None, :])).any(axis=(1, 2))
    eig = np.linalg.eigvalsh(a)  # ascending; spectral radius = max(|λ_min|, |λ_max|)
    radius = np.maximum(np.abs(eig[:, 0]), np.abs(eig[:, -1]))
    node = np.stack([sssp, ecc, lap_x], axis=2).astype(np.float64)
    graph = np.stack([connected & odd_cycle, ecc.max(axis=1), radius], axis=1).astype(np.float64)
    return node, graph


def _normalise(raw: np.ndarray, train_rows: np.ndarray) -> np.ndarray:
    """Divide each column by its train maximum in float32 (as the original's torch division)."""
    top = raw[train_rows].max(axis=0) if train_rows.any() else np.ones(raw.shape[1], np.float32)
    top = np.where(top > 0, top, np.float32(1))  # decision: leave a column with no positive train value unscaled
    return (raw / top).astype(np.float32)


def _build(params: dict, seed: int) -> GraphColumns:
    graphs = sample_graphs(params, seed)
    adj, num_nodes = graphs["adj"], graphs["num_nodes"]
    num_graphs = len(num_nodes)
    node_ptr = np.zeros(num_graphs + 1, dtype=np.int64)
    np.cumsum(num_nodes, out=node_ptr[1:])
    node_y = np.zeros((int(node_ptr[-1]), 3), dtype=np.float32)
    graph_y = np.zeros((num_graphs, 3), dtype=np.float32)
    x = np.zeros((int(node_ptr[-1]), 2), dtype=np.float32)
    for n in np.unique(num_nodes).tolist():  # one vectorised pass per node count
        ids = np.flatnonzero(num_nodes == n)
        rows = (node_ptr[ids][:, None] + np.arange(n)).ravel()
        values = graphs["values"][ids, :n]
        node, graph = compute_targets(adj[ids, :n, :n], values, graphs["source"][ids])
        node_y[rows] = node.reshape(-1, 3)  # float32 as the original stores them
        graph_y[ids] = graph
        one_hot = np.arange(n) == graphs["source"][ids][:, None]
        x[rows] = np.stack([one_hot, values], axis=2).reshape(-1, 2)
    g, src, dst = np.nonzero(adj)  # row-major per graph; padding rows/columns are empty
    num_train = _split_sizes(params)["train"]
    train_graph = np.arange(num_graphs) < num_train
    return GraphColumns(
        num_nodes=num_nodes,
        num_edges=np.bincount(g, minlength=num_graphs).astype(np.int64),
        src=src.astype(np.int32),
        dst=dst.astype(np.int32),
        node={"x": x, "y": _normalise(node_y, np.repeat(train_graph, num_nodes)), "y_raw": node_y},
        graph={"y": _normalise(graph_y, train_graph), "y_raw": graph_y, "type": graphs["type"],
               "seed": graphs["seed"]},
    )


def _describe(name: str, params: dict, seed: int) -> DatasetMeta:
    sizes = _split_sizes(params)
    return DatasetMeta(
        name=name, task="multitask_regression", loss="multitask_mse", metric="log10_mse",
        num_outputs=len(NODE_TARGETS), num_graph_outputs=len(GRAPH_TARGETS), num_graphs=sum(sizes.values()),
        node_features=FeatureSpec("continuous", 2), edge_features=None, pe_usage="add", split_sizes=sizes,
        source={"generator": "graph_theory_prop", "params": params, "seed": seed,
                "node_features": ["sssp_source_one_hot", "node_value"], "node_targets": list(NODE_TARGETS),
                "graph_targets": list(GRAPH_TARGETS),
                "graph_types": {t: v for t, v, _ in GRAPH_TYPES},
                "normalisation": "y = y_raw / (train-split maximum of each column); y_raw = raw targets",
                "is_connected": "1 iff connected and not bipartite (the original's matrix-power test)"},
    )


def _check(params: dict, where: str) -> None:
    for split in SPLITS:
        if params[f"{split}_num_nodes"][0] < MIN_NODES:
            raise ConfigError(f"{where}.{split}_num_nodes: graphs need at least {MIN_NODES} nodes (a graph with an "
                              f"isolated node is redrawn forever); got {params[f'{split}_num_nodes']}")


GRAPH_THEORY_PROP = Generator(
    name="graph_theory_prop",
    description="GraphTheoryProp (PNA multitask): 3 node + 3 graph targets of classic graph properties",
    defaults={
        "train_graphs_per_size": 512, "val_graphs_per_size": 128, "test_graphs_per_size": 256,
        "train_num_nodes": [15, 24], "val_num_nodes": [15, 19], "test_num_nodes": [15, 19],
    },
    default_split={"scheme": "given"},
    describe=_describe,
    build=_build,
    check=_check,
)
