"""Reading the original CYCLES pickle: exact conversion of a fixture in the released structure, and every error."""

from __future__ import annotations

import pickle

import networkx as nx
import numpy as np
import pytest

from gnnbench.data.generators import cycles as C
from gnnbench.data.generators import cycles_release as R
from gnnbench.data.generators import generate
from gnnbench.data.meta import read_dataset
from gnnbench.errors import DataError
from gnnbench.io import sha256_file

NEG = "no-kcycle"  # the released negative string is undocumented; any single other string is accepted


def _graphs() -> list[tuple[nx.Graph, str]]:
    """Eight small graphs of known content, in sample order (train 4, val 2, test 2 below)."""
    hexagon = nx.cycle_graph(6)
    path = nx.path_graph(5)
    hexagon_tail = nx.cycle_graph(6)
    hexagon_tail.add_edges_from([(5, 6), (6, 7)])
    star = nx.star_graph(3)  # 4 nodes
    edgeless = nx.empty_graph(3)
    shuffled = nx.Graph()  # integer nodes 0..3 inserted out of order: ids are the labels
    shuffled.add_edges_from([(3, 1), (0, 2)])
    named = nx.Graph()  # non-integer nodes: numbered in node (insertion) order a=0, c=1, b=2
    named.add_edges_from([("a", "c"), ("c", "b")])
    big = nx.cycle_graph(6)
    big.add_edge(0, 3)
    return [(hexagon, R.POSITIVE_LABEL), (path, NEG), (hexagon_tail, R.POSITIVE_LABEL), (star, NEG),
            (edgeless, NEG), (shuffled, NEG), (named, NEG), (big, R.POSITIVE_LABEL)]


def _write(path, datasets_params, datasets) -> None:
    with open(path, "wb") as fh:
        pickle.dump((datasets_params, datasets), fh)


@pytest.fixture
def release(tmp_path):
    """A pickle in the released structure: settings n = 20 (decoy) and n = 56, samples (graph, y, label)."""
    samples = [(g, np.zeros(1), label) for g, label in _graphs()]
    decoy = [(nx.complete_graph(4), None, R.POSITIVE_LABEL)] * 8
    path = tmp_path / R.FILE_NAME
    _write(path, [{"n": 20, "k": 6}, {"n": 56, "k": 6}], [decoy, samples])
    return path


def _expected_edges(g: nx.Graph, relabel: dict | None = None) -> list[tuple[int, int]]:
    relabel = relabel or {v: v for v in g}
    return sorted({(relabel[u], relabel[v]) for a, b in g.edges for u, v in ((a, b), (b, a))})


def test_exact_conversion_and_split_by_position(release):
    cols = R.read_cycles_pickle(release, num_train=4, num_val=2, num_test=2)
    graphs = _graphs()
    assert cols.num_graphs == 8
    assert cols.num_nodes.tolist() == [6, 5, 8, 4, 3, 4, 3, 6]
    assert cols.graph["y"].tolist() == [1, 0, 1, 0, 0, 0, 0, 1] and cols.graph["y"].dtype == np.int16
    eptr = cols.edge_ptr
    for i, (g, _) in enumerate(graphs):
        relabel = {"a": 0, "c": 1, "b": 2} if i == 6 else None
        got = list(zip(cols.src[eptr[i]:eptr[i + 1]].tolist(), cols.dst[eptr[i]:eptr[i + 1]].tolist(), strict=True))
        assert got == _expected_edges(g, relabel), i  # both directions, row-major
    assert cols.num_edges.tolist() == [12, 8, 16, 6, 0, 4, 4, 14]
    assert cols.src.dtype == np.int32 and cols.dst.dtype == np.int32 and cols.num_nodes.dtype == np.int64
    assert cols.node["x"].shape == (39, 1) and cols.node["x"].dtype == np.float32 and (cols.node["x"] == 1).all()
    assert cols.edge["edge_attr"].shape == (64, 1) and cols.edge["edge_attr"].dtype == np.float32
    assert (cols.edge["edge_attr"] == 1).all()
    # Labels agree with an exact 6-cycle count; the generator's counter is independent of the reader.
    has = C.count_six_cycles(C.dense_adjacency(cols, np.arange(8))) > 0
    assert has.tolist() == [bool(v) for v in cols.graph["y"]]

    # Split by position: smaller sizes take prefixes; extra samples beyond the sizes are dropped from the end.
    small = R.read_cycles_pickle(release, num_train=2, num_val=1, num_test=3)
    assert small.num_nodes.tolist() == [6, 5, 8, 4, 3, 4]
    assert small.graph["y"].tolist() == [1, 0, 1, 0, 0, 0]


def test_same_layout_as_the_generator(release):
    """Same columns, dtypes and shapes as the CYCLES generator, so both go through the same loaders."""
    ours, meta = generate("cycles", "CYCLES", {"num_train": 4, "num_val": 2, "num_test": 2}, 0)
    released = R.read_cycles_pickle(release, num_train=4, num_val=2, num_test=2)
    for level in ("node", "edge", "graph"):
        a, b = getattr(ours, level), getattr(released, level)
        assert {k: (v.dtype, v.shape[1:]) for k, v in a.items()} == {k: (v.dtype, v.shape[1:]) for k, v in b.items()}
    for attr in ("num_nodes", "num_edges", "src", "dst"):
        assert getattr(ours, attr).dtype == getattr(released, attr).dtype
    # a generated graph written in the released format comes back identical
    eptr = ours.edge_ptr
    samples = []
    for i in range(ours.num_graphs):
        g = nx.empty_graph(int(ours.num_nodes[i]))
        g.add_edges_from(zip(ours.src[eptr[i]:eptr[i + 1]].tolist(), ours.dst[eptr[i]:eptr[i + 1]].tolist(),
                             strict=True))
        samples.append((g, None, R.POSITIVE_LABEL if ours.graph["y"][i] else NEG))
    path = release.parent / "roundtrip.pickle"
    _write(path, [{"n": 56}], [samples])
    back = R.read_cycles_pickle(path, num_train=4, num_val=2, num_test=2)
    for attr in ("num_nodes", "num_edges", "src", "dst"):
        assert np.array_equal(getattr(back, attr), getattr(ours, attr)), attr
    assert np.array_equal(back.graph["y"], ours.graph["y"])


def test_meta_matches_the_generator_and_records_the_source(release, tmp_path):
    _, gen_meta = generate("cycles", "CYCLES", {"num_train": 4, "num_val": 2, "num_test": 2}, 0)
    meta = R.describe_release("CYCLES_release", release, num_train=4, num_val=2, num_test=2)
    for key in ("task", "loss", "metric", "num_outputs", "node_features", "edge_features", "pe_usage",
                "split_sizes", "num_graphs"):
        assert getattr(meta, key) == getattr(gen_meta, key), key
    assert meta.source["release"] == "datasets_kcycle_k=6_nsamples=10000.pickle" and meta.source["file"] == R.FILE_NAME
    assert meta.source["url"] == R.URL and R.URL.startswith("https://www.dropbox.com/s/e1nd889j7vfunnh/")
    assert meta.source["sha256"] == sha256_file(release) and meta.source["md5"] is None and meta.source["n"] == 56
    out = tmp_path / "ds"
    R.convert_release(release, out, "CYCLES_release", num_train=4, num_val=2, num_test=2)
    written, cols = read_dataset(out)
    assert written.statistics["train"]["label_fraction"] == [0.5, 0.5]
    assert written.statistics["all"]["edges_per_graph"]["max"] == 16.0
    assert cols.num_nodes.tolist() == [6, 5, 8, 4, 3, 4, 3, 6]


def test_many_graphs_convert_exactly(tmp_path):
    """2,000 graphs of paper-like sizes through the vectorised path (the 20,000-graph timing is in the report)."""
    import time

    rng = np.random.default_rng(0)
    n = rng.integers(37, 66, 2000)
    samples = []
    for i, k in enumerate(n.tolist()):  # fixture building, not the code under test
        g = nx.gnm_random_graph(k, int(0.9 * k), seed=i)
        samples.append((g, None, R.POSITIVE_LABEL if i % 2 else NEG))
    path = tmp_path / R.FILE_NAME
    _write(path, [{"n": 56}], [samples])
    start = time.perf_counter()
    cols = R.read_cycles_pickle(path, num_train=900, num_val=100, num_test=1000)
    seconds = time.perf_counter() - start
    assert cols.num_graphs == 2000 and cols.num_nodes.tolist() == n.tolist()
    assert cols.num_edges.tolist() == [2 * int(0.9 * k) for k in n.tolist()]
    assert cols.graph["y"].sum() == 1000 and cols.graph["y"][1::2].all()
    for i in (0, 777, 1999):  # spot checks against networkx
        g = samples[i][0]
        eptr = cols.edge_ptr
        got = list(zip(cols.src[eptr[i]:eptr[i + 1]].tolist(), cols.dst[eptr[i]:eptr[i + 1]].tolist(), strict=True))
        assert got == _expected_edges(g)
    assert seconds < 10, seconds


# ------------------------------------------------------------------------------------------------- errors


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match=r"not found; download datasets_kcycle_k=6_nsamples=10000\.pickle from "
                                        r"https://www\.dropbox\.com/s/e1nd889j7vfunnh/"):
        R.read_cycles_pickle(tmp_path / "absent.pickle")


def test_not_a_pickle(tmp_path):
    path = tmp_path / "junk.pickle"
    path.write_bytes(b"<html>Dropbox: sign in</html>")
    with pytest.raises(DataError, match=r"junk\.pickle is not a readable pickle \(UnpicklingError: .*\); delete it "
                                        r"and download"):
        R.read_cycles_pickle(path)
    path.write_bytes(pickle.dumps((["x"], [[]]))[:-5])  # truncated
    with pytest.raises(DataError, match="is not a readable pickle"):
        R.read_cycles_pickle(path)


@pytest.mark.parametrize("data, message", [
    ({"n": 56}, r"does not hold a pair \(datasets_params, datasets\) of aligned lists \(got dict\)"),
    (([{"n": 56}], [[], []]), r"does not hold a pair \(datasets_params, datasets\)"),
    (([56], [[]]), r"every datasets_params entry must be a dict with key 'n'"),
    (([{"n": 56}], ["not a list"]), r"the n = 56 dataset is a str, expected a list of \(graph, y, label\) samples"),
    (([{"n": 56}], [[(nx.path_graph(3), None)] * 3]), r"sample 0 of the n = 56 dataset is not a \(networkx graph, "
                                                      r"y, label\) triple \(got tuple\)"),
    (([{"n": 56}], [[("graph", None, "has-kcycle")] * 3]), r"sample 0 .* is not a \(networkx graph"),
])
def test_wrong_structure(tmp_path, data, message):
    path = tmp_path / "bad.pickle"
    path.write_bytes(pickle.dumps(data))
    with pytest.raises(DataError, match=message):
        R.read_cycles_pickle(path, num_train=1, num_val=1, num_test=1)


def test_no_n56_entry_lists_the_available_settings(tmp_path):
    path = tmp_path / "k6.pickle"
    _write(path, [{"n": 20}, {"n": 31}, {"n": 42}], [[], [], []])
    with pytest.raises(DataError, match=r"has no setting with n = 56 \(available n: 20, 31, 42\)"):
        R.read_cycles_pickle(path)


def test_too_few_samples(release):
    with pytest.raises(DataError, match=r"the n = 56 dataset has 8 samples, fewer than the 9000 \+ 1000 \+ 10000 = "
                                        r"20000 requested for train, val and test; lower the split sizes"):
        R.read_cycles_pickle(release)


@pytest.mark.parametrize("labels, shown", [
    ([R.POSITIVE_LABEL, "no-kcycle", "maybe"], "'maybe', 'no-kcycle'"),
    ([R.POSITIVE_LABEL, 1, "no-kcycle"], "1, 'no-kcycle'"),
])
def test_unknown_labels(tmp_path, labels, shown):
    path = tmp_path / "labels.pickle"
    _write(path, [{"n": 56}], [[(nx.path_graph(3), None, label) for label in labels]])
    with pytest.raises(DataError, match=rf"unknown labels {shown} in the n = 56 dataset; expected 'has-kcycle' and "
                                        "one negative label string"):
        R.read_cycles_pickle(path, num_train=1, num_val=1, num_test=1)
