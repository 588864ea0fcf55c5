"""Laplacian positional encodings (Dwivedi et al., Appendix E.1;
docs/protocols/benchmarking-gnns.md#laplacian-positional-encodings), their random sign flip and the PE file format.

Every check compares gnnbench's batched implementation with an independent per-graph NumPy reference built
here from the definition: A[src, dst] = 1 (parallel edges add up), d = in-degree (column sums of A) clipped
at 1, L = I − D^{-1/2} A D^{-1/2}, eigenvalues ascending, column 0 dropped, the next k kept.

Eigenvectors are only defined up to sign (and up to a basis inside a degenerate eigenspace), so the tests
compare eigenspaces: the projector V Vᵀ of the kept columns against the reference projector, asserting
first that the spectral gaps at the cut (eigenvalue 0 | 1 and eigenvalue k | k + 1) make that projector
well defined.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

import gnnbench.features.laplacian_pe as lpe
from gnnbench.data.generators.csl import SKIP_LENGTHS, circulant_adjacency
from gnnbench.data.meta import GRAPHS_FILE, read_meta
from gnnbench.data.store import GraphColumns, read_graph_columns
from gnnbench.errors import DataError
from gnnbench.features.laplacian_pe import laplacian_pe, random_sign_flip
from gnnbench.features.pe_file import read_pe, write_pe
from gnnbench.io import sha256_file
from gnnbench.pipeline import compute_pe, generate_dataset

GAP = 1e-2  # minimum spectral gap at the cut for the projector comparison to be meaningful
ATOL = 1e-5  # float32 output, float64 reference

# ----------------------------------------------------------------------------------------------- helpers


def make_columns(graphs: list[tuple[int, np.ndarray, np.ndarray]]) -> GraphColumns:
    """GraphColumns from (num_nodes, src, dst) triples with local node indices, in the given order."""
    columns = GraphColumns(
        num_nodes=np.array([n for n, _, _ in graphs], dtype=np.int64),
        num_edges=np.array([len(s) for _, s, _ in graphs], dtype=np.int64),
        src=np.concatenate([np.asarray(s, dtype=np.int32) for _, s, _ in graphs]),
        dst=np.concatenate([np.asarray(d, dtype=np.int32) for _, _, d in graphs]),
    )
    columns.validate()
    return columns


def row_blocks(pe: np.ndarray, graphs: list) -> list[np.ndarray]:
    """Split the (total nodes, k) output into per-graph blocks using the graphs' own sizes."""
    bounds = np.cumsum([0] + [n for n, _, _ in graphs])
    assert pe.shape[0] == bounds[-1]
    return [pe[bounds[i] : bounds[i + 1]] for i in range(len(graphs))]


def ref_laplacian(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    adj = np.zeros((n, n))
    np.add.at(adj, (np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)), 1.0)
    d = np.clip(adj.sum(axis=0), 1.0, None)  # in-degree of v = number of edges u→v
    s = d**-0.5
    return np.eye(n) - s[:, None] * adj * s[None, :]


def undirected(edges: list[tuple[int, int]] | np.ndarray, rng: np.random.Generator | None = None):
    """src, dst with every edge in both directions, optionally in shuffled order."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    src = np.concatenate([edges[:, 0], edges[:, 1]])
    dst = np.concatenate([edges[:, 1], edges[:, 0]])
    if rng is not None:
        order = rng.permutation(len(src))
        src, dst = src[order], dst[order]
    return src, dst


def random_connected_graph(n: int, rng: np.random.Generator, p: float = 0.25):
    """Random spanning tree plus random extra edges, a duplicated (parallel) edge and a self loop."""
    parent = (rng.random(n - 1) * np.arange(1, n)).astype(np.int64)
    edges = list(zip(range(1, n), parent.tolist(), strict=True))
    iu, ju = np.triu_indices(n, 1)
    extra = rng.random(len(iu)) < p
    edges += list(zip(iu[extra].tolist(), ju[extra].tolist(), strict=True))
    if n >= 3:
        edges.append(edges[int(rng.integers(len(edges)))])  # parallel edge: weight 2 in A
        v = int(rng.integers(n))
        edges.append((v, v))  # self loop: A[v, v] = 2 once both "directions" are added
    return undirected(edges, rng)


def check_against_reference(block: np.ndarray, lap: np.ndarray, k: int) -> None:
    """Kept columns span the reference eigenspace of eigenvalues 1..k, are orthonormal eigenvectors with
    the reference eigenvalues, and any columns beyond n − 1 are exactly zero."""
    n = lap.shape[0]
    assert block.shape == (n, k)
    values, vectors = np.linalg.eigh(lap)
    keep = min(k, n - 1)
    assert values[1] - values[0] > GAP, "test graph has a degenerate smallest eigenvalue"
    if keep < n - 1:
        assert values[keep + 1] - values[keep] > GAP, "test graph splits an eigenspace at the cut"
    v = block[:, :keep].astype(np.float64)
    ref = vectors[:, 1 : keep + 1]
    np.testing.assert_allclose(v @ v.T, ref @ ref.T, atol=ATOL)
    np.testing.assert_allclose(v.T @ v, np.eye(keep), atol=ATOL)
    np.testing.assert_allclose(lap @ v, v * values[1 : keep + 1], atol=ATOL)
    assert np.all(block[:, keep:] == 0)


# --------------------------------------------------------------------------------- batched vs reference


def _mixed_random_graphs(seed: int, k: int):
    """Random connected undirected graphs, 4 per size, sizes 5..40 in scrambled order, all with clear gaps."""
    rng = np.random.default_rng(seed)
    sizes = rng.permutation(np.repeat([5, 9, 17, 23, 31, 40], 4))
    graphs = []
    for n in sizes:
        while True:  # redraw (deterministically) until the eigenspace cut is well separated
            src, dst = random_connected_graph(int(n), rng)
            w = np.linalg.eigvalsh(ref_laplacian(int(n), src, dst))
            keep = min(k, n - 1)
            if w[1] - w[0] > GAP and (keep == n - 1 or w[keep + 1] - w[keep] > GAP):
                break
        graphs.append((int(n), src, dst))
    return graphs


@pytest.mark.parametrize("k", [3, 8])
@pytest.mark.parametrize("max_entries", [None, 1, 300])
def test_batched_matches_per_graph_reference(k, max_entries, monkeypatch):
    # max_entries shrinks the stacked groups: 1 → one graph per eigh call; 300 → several chunks per size
    if max_entries is not None:
        monkeypatch.setattr(lpe, "MAX_BATCH_ENTRIES", max_entries)
    graphs = _mixed_random_graphs(seed=100 + k, k=k)
    pe = laplacian_pe(make_columns(graphs), k)
    assert pe.dtype == np.float32 and pe.shape == (sum(n for n, _, _ in graphs), k)
    for (n, src, dst), block in zip(graphs, row_blocks(pe, graphs), strict=True):
        check_against_reference(block, ref_laplacian(n, src, dst), k)


def test_csl_degenerate_pairs_match_reference_and_are_permutation_equivariant():
    k, n = 20, 41
    rng = np.random.default_rng(5)
    graphs, perms = [], []
    for skip in SKIP_LENGTHS:
        adj = circulant_adjacency(n, skip)
        pi = rng.permutation(n)
        while np.array_equal(pi[pi], np.arange(n)):  # not an involution, so the direction matters
            pi = rng.permutation(n)
        relabelled = adj[pi][:, pi]  # node i of the copy is node pi[i] of the original
        for a in (adj, relabelled):
            src, dst = np.nonzero(a)
            order = rng.permutation(len(src))
            graphs.append((n, src[order], dst[order]))
        perms.append(pi)
    pe = laplacian_pe(make_columns(graphs), k)
    blocks = row_blocks(pe, graphs)
    for (_, src, dst), block in zip(graphs, blocks, strict=True):
        lap = ref_laplacian(n, src, dst)
        w = np.linalg.eigvalsh(lap)
        # columns 1..20 form complete degenerate eigenspaces (pairs; quadruples for skip 9)
        np.testing.assert_allclose(w[1:21:2], w[2:21:2], atol=1e-9)
        check_against_reference(block, lap, k)
    for i, pi in enumerate(perms):
        p = blocks[2 * i].astype(np.float64) @ blocks[2 * i].T.astype(np.float64)
        p_relabelled = blocks[2 * i + 1].astype(np.float64) @ blocks[2 * i + 1].T.astype(np.float64)
        np.testing.assert_allclose(p_relabelled, p[pi][:, pi], atol=ATOL)
        inv = np.argsort(pi)
        assert np.abs(p_relabelled - p[inv][:, inv]).max() > 1e-2  # the check above is direction-sensitive


def test_small_graphs_are_zero_padded_and_rows_keep_store_order():
    k = 6
    rng = np.random.default_rng(11)
    sizes = [7, 1, 3, 12, 2, 5, 3, 1, 7, 4, 9]
    graphs = []
    for i, n in enumerate(sizes):
        if n == 1:
            # one single node with a self loop, one without: neither has a non-trivial eigenvector
            src = dst = np.array([0] if i == 1 else [], dtype=np.int64)
            graphs.append((1, src, dst))
            continue
        while True:
            src, dst = random_connected_graph(n, rng, p=0.4)
            w = np.linalg.eigvalsh(ref_laplacian(n, src, dst))
            keep = min(k, n - 1)
            if w[1] - w[0] > GAP and (keep == n - 1 or w[keep + 1] - w[keep] > GAP):
                break
        graphs.append((n, src, dst))
    pe = laplacian_pe(make_columns(graphs), k)
    assert pe.shape == (sum(sizes), k) and pe.dtype == np.float32
    for (n, src, dst), block in zip(graphs, row_blocks(pe, graphs), strict=True):
        if n == 1:
            assert np.all(block == 0)
            continue
        check_against_reference(block, ref_laplacian(n, src, dst), k)  # n ≤ k: n − 1 columns, then zeros
        assert np.count_nonzero(np.abs(block).sum(axis=0)) == min(k, n - 1)


def test_single_node_graphs_only_give_zeros():
    graphs = [(1, np.array([], dtype=np.int64), np.array([], dtype=np.int64))] * 3
    pe = laplacian_pe(make_columns(graphs), 4)
    assert pe.shape == (3, 4) and pe.dtype == np.float32 and np.all(pe == 0)


def test_rejects_non_positive_k():
    graphs = [(3, *undirected([(0, 1), (1, 2)]))]
    with pytest.raises(ValueError):
        laplacian_pe(make_columns(graphs), 0)


def test_isolated_nodes_use_degree_clipped_at_one():
    # path 0-2-3-5-6-7 with nodes 1 and 4 isolated: eigenvalues 0, .19, .69, 1, 1, 1.31, 1.81, 2
    n, k = 8, 4
    path = [(0, 2), (2, 3), (3, 5), (5, 6), (6, 7)]
    iso_graph = (n, *undirected(path, np.random.default_rng(0)))
    rng = np.random.default_rng(3)
    other = (6, *random_connected_graph(6, rng))
    graphs = [other, iso_graph, other]
    pe = laplacian_pe(make_columns(graphs), k)
    assert np.isfinite(pe).all()
    block = row_blocks(pe, graphs)[1]
    check_against_reference(block, ref_laplacian(n, *iso_graph[1:]), k)
    # both isolated-node indicators lie in the kept eigenvalue-1 eigenspace
    proj = block.astype(np.float64) @ block.T.astype(np.float64)
    for v in (1, 4):
        np.testing.assert_allclose(proj[:, v], np.eye(n)[v], atol=ATOL)


# ----------------------------------------------------------------------------------------- directed graphs


def _edges(pairs):
    pairs = np.asarray(pairs, dtype=np.int64)
    return pairs[:, 0], pairs[:, 1]


def _source_node_graph():
    """Undirected 7-node graph plus a source node 7 (out-edges 7→0, 7→3, in-degree 0) and a one-way edge
    5→2: L is not symmetric, its eigenvalues are real and simple, and in- and out-degrees differ."""
    base = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (1, 4), (0, 6), (2, 6)]
    src, dst = undirected(base)
    return 8, np.concatenate([src, [7, 7, 5]]), np.concatenate([dst, [0, 3, 2]])


def _directed_cycle():
    """Directed 5-cycle: L = I − P, eigenvalues 1 − exp(2πij/5), i.e. 0 and two complex-conjugate pairs."""
    return 5, np.arange(5), (np.arange(5) + 1) % 5


def _mixed_spectrum_graph():
    """Eigenvalues 0, 0.648 ± 0.908i, 1, 1.332, 1.686 ± 0.570i: ordering by real part differs from ordering
    by modulus (|0.648 ± 0.908i| > 1)."""
    pairs = [(0, 2), (2, 4), (3, 6), (4, 3), (5, 0), (5, 1), (5, 2), (6, 0), (6, 1), (6, 5)]
    return 7, *_edges(pairs)


def check_directed_against_reference(block: np.ndarray, lap: np.ndarray, k: int) -> None:
    """Against the original dense variant (np.linalg.eig, sorted ascending, real parts): a column for a
    simple real eigenvalue is the reference eigenvector up to sign; a column for a complex eigenvalue
    a ± ib is the real part of its eigenvector, which lies in the pair's real invariant subspace
    ((L − a)² + b²) x = 0 (its scale depends on LAPACK's phase normalisation, so only that is checked)."""
    n = lap.shape[0]
    values, vectors = np.linalg.eig(lap)
    order = values.argsort()
    values, vectors = values[order], np.real(vectors[:, order])
    for i in range(n - 1):  # guard: the ordering by real part is unambiguous, the spectrum is simple
        conjugates = abs(values[i] - np.conj(values[i + 1])) < 1e-9 and abs(values[i].imag) > 1e-3
        assert conjugates or values[i + 1].real - values[i].real > 0.05
    keep = min(k, n - 1)
    v = block.astype(np.float64)
    for j in range(keep):
        lam, x = values[j + 1], v[:, j]
        if abs(lam.imag) < 1e-12:
            ref = vectors[:, j + 1]
            np.testing.assert_allclose(np.outer(x, x), np.outer(ref, ref), atol=ATOL)
            np.testing.assert_allclose(np.linalg.norm(x), 1.0, atol=ATOL)
            np.testing.assert_allclose(lap @ x, lam.real * x, atol=ATOL)
        else:
            assert np.linalg.norm(x) > 0.1
            shifted = lap - lam.real * np.eye(n)
            np.testing.assert_allclose(shifted @ (shifted @ x) + lam.imag**2 * x, 0, atol=ATOL)
            partner = j + 1 if j + 2 < n and abs(values[j + 2] - np.conj(lam)) < 1e-9 else j - 1
            if 0 <= partner < keep:  # conjugate eigenvectors have the same real part
                np.testing.assert_allclose(v[:, partner], x, atol=ATOL)
    assert np.all(block[:, keep:] == 0)


@pytest.mark.parametrize("make_graph", [_source_node_graph, _directed_cycle, _mixed_spectrum_graph])
@pytest.mark.parametrize("k", [2, 3, 10])
def test_directed_graphs_use_general_eig(make_graph, k):
    n, src, dst = make_graph()
    lap = ref_laplacian(n, src, dst)
    assert not np.allclose(lap, lap.T)
    # an undirected graph of the same size shares the directed graph's size group, one of another size does
    # not; the directed graph sits between them in store order
    rng = np.random.default_rng(8)
    same_size = (n, *random_connected_graph(n, rng))
    other_size = (11, *random_connected_graph(11, rng))
    graphs = [same_size, (n, src, dst), other_size]
    pe = laplacian_pe(make_columns(graphs), k)
    assert pe.shape == (n + n + 11, k) and pe.dtype == np.float32
    blocks = row_blocks(pe, graphs)
    check_directed_against_reference(blocks[1], lap, k)
    same_lap = ref_laplacian(n, *same_size[1:])
    assert np.diff(np.linalg.eigvalsh(same_lap)).min() > GAP  # simple spectrum: eig's vectors are orthonormal
    check_against_reference(blocks[0], same_lap, k)
    check_against_reference(blocks[2], ref_laplacian(11, *other_size[1:]), k)


def test_undirected_graph_result_does_not_depend_on_a_directed_graph_of_the_same_size():
    n, k = 41, 20
    src, dst = np.nonzero(circulant_adjacency(n, 2))  # degenerate pairs: eig returns a non-orthogonal basis
    csl = (n, src, dst)
    cycle = (n, np.arange(n), (np.arange(n) + 1) % n)
    alone = laplacian_pe(make_columns([csl]), k)
    beside_directed = row_blocks(laplacian_pe(make_columns([csl, cycle]), k), [csl, cycle])[0]
    check_against_reference(beside_directed, ref_laplacian(n, src, dst), k)
    np.testing.assert_array_equal(beside_directed, alone)


# ----------------------------------------------------------------------------------------- random sign flip


def _pe(rows=13, k=6):
    return torch.randn(rows, k, generator=torch.Generator().manual_seed(0)) + 0.1


def test_sign_flip_multiplies_each_column_by_plus_or_minus_one():
    pe = _pe()
    before = pe.clone()
    out = random_sign_flip(pe, torch.Generator().manual_seed(1))
    assert torch.equal(pe, before)  # input untouched
    assert out.dtype == pe.dtype and out.shape == pe.shape
    assert torch.equal(out.abs(), pe.abs())
    ratio = out / pe
    assert torch.equal(ratio, ratio[:1].expand_as(ratio))  # one sign per column, shared by every row
    assert set(ratio[0].tolist()) <= {1.0, -1.0}


def test_sign_flip_follows_the_benchmark_rule_and_is_reproducible():
    pe = _pe(k=9)
    out = random_sign_flip(pe, torch.Generator().manual_seed(42))
    again = random_sign_flip(pe, torch.Generator().manual_seed(42))
    draws = torch.rand(9, generator=torch.Generator().manual_seed(42))
    expected = pe * torch.where(draws >= 0.5, 1.0, -1.0)  # s = rand(k); s ≥ 0.5 → +1 else −1
    assert torch.equal(out, expected) and torch.equal(again, expected)

    torch.manual_seed(7)
    global_a = random_sign_flip(pe)
    torch.manual_seed(7)
    global_b = random_sign_flip(pe)
    torch.manual_seed(7)
    global_draws = torch.rand(9)
    assert torch.equal(global_a, global_b)
    assert torch.equal(global_a, pe * torch.where(global_draws >= 0.5, 1.0, -1.0))


def test_sign_flip_signs_are_fair_and_independent():
    k, draws = 8, 4000
    pe = torch.ones(3, k)
    gen = torch.Generator().manual_seed(123)
    signs = torch.stack([random_sign_flip(pe, gen)[0] for _ in range(draws)])  # (draws, k)
    positive = (signs > 0).double().mean(dim=0)
    assert ((positive > 0.45) & (positive < 0.55)).all(), positive
    corr = torch.corrcoef(signs.T.double())
    off_diagonal = corr[~torch.eye(k, dtype=torch.bool)]
    assert off_diagonal.abs().max() < 0.1  # columns flip independently


def test_sign_flip_keeps_zero_padding_zero():
    pe = torch.zeros(4, 5)
    pe[:, :2] = torch.tensor([[1.0, -2.0]])
    out = random_sign_flip(pe, torch.Generator().manual_seed(0))
    assert torch.equal(out[:, 2:], torch.zeros(4, 3))


# ----------------------------------------------------------------------------------------------- PE files


def test_pe_file_round_trip_is_exact(tmp_path):
    num_nodes = np.array([3, 1, 5, 2, 4], dtype=np.int64)
    rng = np.random.default_rng(0)
    pe = rng.standard_normal((int(num_nodes.sum()), 7)).astype(np.float32)
    pe[3] = np.array([np.float32(1e-38), -0.0, 3.4e38, 1 / 3, -1 / 7, 0.1, 1e-7], dtype=np.float32)
    path = tmp_path / "pe" / "laplacian_7.parquet"
    write_pe(path, pe, num_nodes, "abc123")
    out = read_pe(path, torch.from_numpy(num_nodes), "abc123")
    assert out.dtype == torch.float32 and tuple(out.shape) == pe.shape
    assert np.array_equal(out.numpy().view(np.uint32), pe.view(np.uint32))  # bit-exact
    info = json.loads(pq.read_schema(path).metadata[b"gnnbench_pe"])
    assert info["k"] == 7 and info["dataset_checksum"] == "abc123" and info["kind"] == "laplacian"


def test_read_pe_rejects_foreign_or_mismatched_files(tmp_path):
    num_nodes = np.array([3, 1, 5], dtype=np.int64)
    pe = np.arange(9 * 2, dtype=np.float32).reshape(9, 2)
    path = tmp_path / "pe.parquet"
    write_pe(path, pe, num_nodes, "checksum-a")
    with pytest.raises(DataError, match="different dataset"):
        read_pe(path, torch.from_numpy(num_nodes), "checksum-b")
    for wrong in ([3, 2, 4], [4, 1, 5], [3, 1, 5, 0], [3, 6]):  # same or different total, count of graphs
        with pytest.raises(DataError, match="node counts"):
            read_pe(path, torch.tensor(wrong, dtype=torch.int64), "checksum-a")
    with pytest.raises(DataError, match="does not exist"):
        read_pe(tmp_path / "missing.parquet", torch.from_numpy(num_nodes), "checksum-a")
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(path.read_bytes()[:40])
    with pytest.raises(DataError):
        read_pe(corrupt, torch.from_numpy(num_nodes), "checksum-a")


# -------------------------------------------------------------------------------------------- end to end


def test_compute_pe_on_generated_csl(tmp_path):
    dataset = tmp_path / "CSL"
    generate_dataset("csl", "CSL", {}, 0, dataset)
    out = tmp_path / "CSL_pe20.parquet"
    compute_pe(dataset, 20, out)
    meta = read_meta(dataset)
    assert meta.checksum == sha256_file(dataset / GRAPHS_FILE)
    columns = read_graph_columns(dataset / GRAPHS_FILE)
    stored = read_pe(out, torch.from_numpy(columns.num_nodes), meta.checksum).numpy()
    assert stored.shape == (150 * 41, 20)
    assert np.array_equal(stored, laplacian_pe(columns, 20))
    # and those values are the reference eigenspaces (spot-check one graph per class)
    for g in range(0, columns.num_graphs, 15):
        graph = columns.graph_at(g)
        block = stored[columns.node_ptr[g] : columns.node_ptr[g + 1]]
        check_against_reference(block, ref_laplacian(41, graph["src"], graph["dst"]), 20)
    with pytest.raises(DataError):
        read_pe(out, torch.from_numpy(columns.num_nodes), "0" * 64)
