"""Duplicates in a dataset, and what they leak across a split (docs/leakage.md).

Two nodes or graphs are *duplicates* when a model cannot tell them apart because they are the same data point:

Node level (the one graph of a transductive dataset)
    two nodes with byte-identical feature rows (every node column but the label ``y`` and the split column; a sparse
    ``x`` compared row by row) and the same neighbourhood, where the neighbourhood of ``v`` is the set of nodes with an
    edge into ``v`` (the messages it receives; an undirected graph is stored in both directions). Two adjacent nodes
    count when their closed neighbourhoods agree (N(u) ∪ {u} = N(v) ∪ {v}): they too receive the same messages at
    every layer. Both are exact: rows are hashed (two independent 64-bit hashes of each sorted CSR row) and every row
    of a bucket is then compared with the bucket's first row. Groups are the equivalence classes of the two relations
    together. Not counted: nodes whose neighbours differ but are themselves duplicates (a duplicated subgraph) — that
    would be colour refinement, which also merges every node of a regular graph with constant features, none of them
    copies of another.
Graph level (every other task but link prediction)
    two graphs with the same nodes, edges, node features and edge features up to renumbering the nodes. Graphs are
    bucketed by a Weisfeiler–Lehman hash that uses node and edge features (in- and out-messages, refined until the
    number of colours stops growing) and, graphs of at most 2,000 nodes, by the sorted eigenvalues of their
    symmetrised adjacency matrix (equal within 1e-6). Equal WL colours are necessary for isomorphism, not sufficient
    (CSL's graphs, all 4-regular on 41 nodes, share one WL colour); so within a bucket every graph of at most
    ``confirm_nodes`` nodes is confirmed isomorphic (nodes matched by WL colour, edges by features; VF2 of networkx)
    to a graph of its group. Buckets of larger graphs stay unconfirmed
    (``DuplicateGroups.confirmed`` is False and the rule says so).

Labels are not part of the comparison: a group whose members carry different labels is input noise, one whose
labels agree lets a model that memorised the training copy score the test copy (:func:`split_leakage` counts both).

:func:`released_filter` is the rule that reproduces the filtered chameleon and squirrel of Platonov et al. (ICLR
2023) from the directed graphs of their release — a different rule from the one above (docs/leakage.md).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

NODE_RULE = "identical feature rows and identical (open or closed) neighbourhoods"
GRAPH_RULE = "isomorphic with node and edge features (WL hash + spectrum, confirmed by VF2)"
GRAPH_RULE_UNCONFIRMED = "same WL hash and spectrum (some buckets not confirmed isomorphic: graphs too large)"
NOT_FEATURES = ("y", "split")  # node/edge columns that are targets or bookkeeping, not a model's input
CONFIRM_NODES = 200  # graphs up to this size are confirmed isomorphic within a bucket (VF2)
SPECTRUM_NODES = 2000  # graphs up to this size are told apart by their spectrum within a bucket (dense eigvalsh)
DEFAULT_THRESHOLD = 0.01  # fraction of a test part with a duplicate in training above which reports warn

_SALTS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD1B54A32D192ED03))


@dataclass
class DuplicateGroups:
    """Duplicate groups of a dataset: ``group[i]`` is the group of node or graph ``i`` (-1: it has no duplicate);
    groups are numbered 0, 1, ... in the order of their lowest member."""

    level: str  # "node" or "graph"
    group: np.ndarray  # (N,) int64
    rule: str
    confirmed: bool = True

    @property
    def num_groups(self) -> int:
        """The number of groups (of two or more members)."""
        return int(self.group.max()) + 1 if self.group.size else 0

    def groups(self) -> list[np.ndarray]:
        """The members of each group, ascending, in group order."""
        members = np.flatnonzero(self.group >= 0)
        order = members[np.argsort(self.group[members], kind="stable")]
        return np.split(order, np.flatnonzero(np.diff(self.group[order])) + 1) if order.size else []

    def removable(self) -> np.ndarray:
        """Whether each item is a copy: in a group and not its lowest member (dropping these leaves one of each)."""
        out = self.group >= 0
        out[_first_member(self.group)] = False
        return out

    def summary(self, labels: np.ndarray | None = None) -> dict:
        """What ``meta.json`` records (:attr:`gnnbench.data.meta.DatasetMeta.duplicates`): level, rule, groups,
        members, removable copies, the largest group, groups whose labels disagree (``labels``: one per item, -1
        unlabelled, or rows of several targets) and whether every group was confirmed exactly."""
        sizes = np.bincount(self.group[self.group >= 0], minlength=self.num_groups)
        out = {"level": self.level, "rule": self.rule, "groups": self.num_groups, "members": int(sizes.sum()),
               "removable": int(sizes.sum() - self.num_groups), "largest": int(sizes.max()) if sizes.size else 0,
               "confirmed": self.confirmed}
        if labels is not None:
            out["label_conflicts"] = int(self.conflicts(labels).sum())
        return out

    def conflicts(self, labels: np.ndarray) -> np.ndarray:
        """(groups,) bool: whether the members of each group carry different labels."""
        label_id = _row_ids(np.asarray(labels))
        members = np.flatnonzero(self.group >= 0)
        pairs = np.unique(np.stack([self.group[members], label_id[members]], axis=1), axis=0)
        return np.bincount(pairs[:, 0], minlength=self.num_groups) > 1


def _first_member(group: np.ndarray) -> np.ndarray:
    """The lowest member of each group (groups numbered by their lowest member, so the first occurrence)."""
    members = np.flatnonzero(group >= 0)
    _, first = np.unique(group[members], return_index=True)
    return members[first]


# ------------------------------------------------------------------------------------------------------- hashing


def _mix(values: np.ndarray, salt: np.uint64) -> np.ndarray:
    """splitmix64's finaliser of ``values ^ salt``: a well-spread 64-bit hash of each value (uint64 wraps)."""
    z = values.astype(np.uint64) ^ salt
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _segment_sum(values: np.ndarray, indptr: np.ndarray) -> np.ndarray:
    """Per-row wrap-around sums of uint64 ``values`` over the CSR rows ``indptr`` (empty rows: 0)."""
    out = np.zeros(len(indptr) - 1, dtype=np.uint64)
    lengths = np.diff(indptr)
    full = np.flatnonzero(lengths > 0)
    if full.size:
        out[full] = np.add.reduceat(values, indptr[:-1][full])
    return out


def _row_ids(rows: np.ndarray) -> np.ndarray:
    """Dense ids (0, 1, ...) of the distinct rows of a 1-d or 2-d array, exactly (bytes; -0.0 counts as 0.0)."""
    rows = np.asarray(rows)
    if rows.dtype.kind == "f":
        rows = rows + 0.0  # -0.0 -> 0.0: the same value for a model
    if rows.ndim == 1:
        return np.unique(rows, return_inverse=True)[1].reshape(-1).astype(np.int64)
    flat = np.ascontiguousarray(rows.reshape(len(rows), -1))
    keys = flat.view(np.dtype((np.void, flat.dtype.itemsize * flat.shape[1]))).reshape(-1)
    return np.unique(keys, return_inverse=True)[1].reshape(-1).astype(np.int64)


def csr_row_ids(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray | None = None) -> np.ndarray:
    """Dense ids of the distinct rows of a CSR matrix whose rows hold sorted, unique column indices (and ``values``):
    rows are bucketed by (length, two 64-bit hashes) and then compared entry by entry with their bucket's first row;
    a row that differs (a hash collision) gets an id of its own, so equal ids mean equal rows."""
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    entries = indices.astype(np.uint64)
    if values is not None:
        value_ids = _row_ids(np.asarray(values)).astype(np.uint64)
        entries = entries * np.uint64(0x100000001B3) + _mix(value_ids, _SALTS[1])
    lengths = np.diff(indptr)
    keys = np.stack([lengths.astype(np.uint64)] + [_segment_sum(_mix(entries, s), indptr) for s in _SALTS], axis=1)
    _, first, ids = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    ids = ids.reshape(-1).astype(np.int64)
    rep = first[ids]  # the first row of each row's bucket
    check = np.flatnonzero((rep != np.arange(len(ids))) & (lengths > 0))
    if check.size:  # compare every entry of a row with the same entry of its bucket's first row
        counts = lengths[check]
        offset = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        mine, theirs = np.repeat(indptr[check], counts) + offset, np.repeat(indptr[rep[check]], counts) + offset
        same = indices[mine] == indices[theirs]
        if values is not None:
            same &= value_ids[mine] == value_ids[theirs]
        bad = check[np.add.reduceat(~same, np.cumsum(counts) - counts) > 0]
        if bad.size:  # a 128-bit collision: give each colliding row its own id (never seen in practice)
            log.warning("%d hash collisions among CSR rows; compared exactly", bad.size)
            ids[bad] = ids.max() + 1 + np.arange(bad.size)
    return _row_ids(ids)


def _combine(*ids: np.ndarray) -> np.ndarray:
    """Dense ids of the distinct tuples of several id arrays."""
    return _row_ids(np.stack(ids, axis=1))


# ----------------------------------------------------------------------------------------------------- node level


def feature_ids(columns: dict[str, np.ndarray], sparse: dict | None = None, num_rows: int | None = None,
                skip: tuple[str, ...] = NOT_FEATURES) -> np.ndarray:
    """Dense ids of the distinct input rows of nodes (or edges): every column of ``columns`` and every
    :class:`~gnnbench.data.store.SparseRows` of ``sparse`` but those named in ``skip``; all 0 without any."""
    parts = [_row_ids(values) for name, values in sorted(columns.items()) if name not in skip]
    parts += [csr_row_ids(rows.indptr, rows.indices, rows.values) for name, rows in sorted((sparse or {}).items())
              if name not in skip]
    if not parts:
        return np.zeros(num_rows or 0, dtype=np.int64)
    return parts[0] if len(parts) == 1 else _combine(*parts)


def _groups_from_ids(ids: np.ndarray) -> np.ndarray:
    """-1 for ids held once, else groups numbered by their lowest member."""
    counts = np.bincount(ids)
    shared = counts[ids] > 1
    group = np.full(len(ids), -1, dtype=np.int64)
    if shared.any():
        group[shared] = _row_ids(ids[shared])
        order = np.unique(group[shared], return_index=True)[1]  # first occurrence of each group, in group order
        rank = np.empty(len(order), dtype=np.int64)
        rank[np.argsort(np.flatnonzero(shared)[order], kind="stable")] = np.arange(len(order))
        group[shared] = rank[group[shared]]
    return group


def node_duplicates(num_nodes: int, src: np.ndarray, dst: np.ndarray, features: np.ndarray) -> DuplicateGroups:
    """Duplicate nodes of one graph (module docstring): equal ``features`` ids (:func:`feature_ids`) and equal sets of
    in-neighbours (``src`` of the edges into a node), or equal closed sets for adjacent nodes. Vectorised: two sparse
    matrices, hashed rows, one connected-components pass."""
    import scipy.sparse as sp  # here: meta.json's writer imports this module, most jobs never call it
    from scipy.sparse.csgraph import connected_components
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    adjacency = sp.csr_matrix((np.ones(src.size, dtype=np.int8), (dst, src)), shape=(num_nodes, num_nodes))
    adjacency.sum_duplicates()
    adjacency.sort_indices()
    closed = (adjacency + sp.identity(num_nodes, dtype=np.int8, format="csr")).tocsr()
    closed.sum_duplicates()
    closed.sort_indices()
    features = np.asarray(features, dtype=np.int64)
    open_ids = _combine(features, csr_row_ids(adjacency.indptr, adjacency.indices))
    closed_ids = _combine(features, csr_row_ids(closed.indptr, closed.indices))
    # a node joins the classes of both relations; the groups are the components of that bipartite graph
    n_open = int(open_ids.max()) + 1 if num_nodes else 0
    n_closed = int(closed_ids.max()) + 1 if num_nodes else 0
    size = num_nodes + n_open + n_closed
    nodes = np.arange(num_nodes)
    link = sp.csr_matrix((np.ones(2 * num_nodes, dtype=np.int8),
                          (np.concatenate([nodes, nodes]),
                           np.concatenate([num_nodes + open_ids, num_nodes + n_open + closed_ids]))),
                         shape=(size, size))
    _, component = connected_components(link, directed=False)
    return DuplicateGroups("node", _groups_from_ids(_row_ids(component[:num_nodes])), NODE_RULE)


def released_filter(num_nodes: int, src: np.ndarray, dst: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Nodes the filtered chameleon and squirrel of Platonov et al. (ICLR 2023) leave out, from the directed graph of
    their release (``data/*_directed.npz``): a node without incoming edges whose set of out-neighbours and label
    equal those of a node with incoming edges (in a Wikipedia link graph: a page no page links to, linking to exactly
    the pages another page of the same class links to). Features are not compared. Returns a bool mask; it
    reproduces 2,277 → 890 and 5,201 → 2,223 nodes exactly (docs/leakage.md)."""
    import scipy.sparse as sp
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    out = sp.csr_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(num_nodes, num_nodes))
    out.sum_duplicates()
    out.sort_indices()
    key = _combine(csr_row_ids(out.indptr, out.indices), _row_ids(np.asarray(labels)))
    linked = np.bincount(dst, minlength=num_nodes) > 0
    has_linked_twin = np.bincount(key[linked], minlength=int(key.max()) + 1 if num_nodes else 0) > 0
    return ~linked & has_linked_twin[key]


# ---------------------------------------------------------------------------------------------------- graph level


def wl_colours(src: np.ndarray, dst: np.ndarray, node_ids: np.ndarray, edge_ids: np.ndarray,
               max_rounds: int = 10) -> np.ndarray:
    """Weisfeiler–Lehman colours of the nodes of many graphs at once (``src``/``dst``: global node indices): start
    from ``node_ids``; each round a node's colour becomes its colour with the multisets of (edge id, colour) over its
    in-edges and over its out-edges, until the number of colours stops growing (at most ``max_rounds`` rounds)."""
    colour = _row_ids(np.asarray(node_ids))
    edge_ids = np.asarray(edge_ids, dtype=np.uint64) * np.uint64(0x100000001B3)
    for _ in range(max_rounds):
        c = colour.astype(np.uint64)
        incoming = np.zeros(len(c), dtype=np.uint64)
        outgoing = np.zeros(len(c), dtype=np.uint64)
        np.add.at(incoming, dst, _mix(edge_ids + c[src], _SALTS[0]))
        np.add.at(outgoing, src, _mix(edge_ids + c[dst], _SALTS[1]))
        new = _row_ids(np.stack([c, incoming, outgoing], axis=1))
        if new.max(initial=-1) == colour.max(initial=-1):
            break
        colour = new
    return colour


def _spectrum(adjacency: np.ndarray) -> np.ndarray:
    """Ascending eigenvalues of the symmetrised adjacency matrix: an isomorphism invariant that tells apart graphs WL
    cannot (regular graphs of one degree)."""
    return np.linalg.eigvalsh(((adjacency + adjacency.T) > 0).astype(np.float64))


def graph_duplicates(num_nodes: np.ndarray, num_edges: np.ndarray, src: np.ndarray, dst: np.ndarray,
                     node_ids: np.ndarray, edge_ids: np.ndarray, confirm_nodes: int = CONFIRM_NODES,
                     ) -> DuplicateGroups:
    """Duplicate graphs of a multi-graph dataset (module docstring): ``src``/``dst`` local to each graph as in the
    store, ``node_ids`` / ``edge_ids`` the ids of the node and edge input rows (:func:`feature_ids`). Buckets by
    (nodes, edges, multiset of WL colours), splits a bucket by spectrum and confirms isomorphism (VF2) for graphs of
    at most ``confirm_nodes`` nodes; larger graphs are grouped by bucket and spectrum alone (``confirmed`` False)."""
    num_nodes, num_edges = np.asarray(num_nodes, dtype=np.int64), np.asarray(num_edges, dtype=np.int64)
    node_ptr = np.concatenate([[0], np.cumsum(num_nodes)])
    edge_graph = np.repeat(np.arange(len(num_nodes)), num_edges)
    gsrc = np.asarray(src, dtype=np.int64) + node_ptr[edge_graph]
    gdst = np.asarray(dst, dtype=np.int64) + node_ptr[edge_graph]
    colour = wl_colours(gsrc, gdst, node_ids, edge_ids)
    hashes = [_segment_sum(_mix(colour.astype(np.uint64), salt), node_ptr) for salt in _SALTS]
    bucket = _combine(num_nodes, num_edges, hashes[0].view(np.int64), hashes[1].view(np.int64))
    key = bucket.copy()
    shared = np.flatnonzero(np.bincount(bucket)[bucket] > 1)
    confirmed = bool((num_nodes[shared] <= confirm_nodes).all())
    if shared.size:
        edge_ptr = np.concatenate([[0], np.cumsum(num_edges)])
        refined = {}
        for b in np.unique(bucket[shared]):
            members = shared[bucket[shared] == b]
            confirm = bool(num_nodes[members[0]] <= confirm_nodes)  # one bucket, one size
            # nodes matched by their stable WL colour (an invariant that includes the features): far fewer
            # candidate mappings for VF2 than the features alone on symmetric graphs (IMDB-BINARY's ego networks)
            for cls in _isomorphism_classes(members, node_ptr, edge_ptr, src, dst, colour, edge_ids, confirm):
                refined.update({int(g): int(cls[0]) for g in cls})
        graphs = np.fromiter(refined, dtype=np.int64)
        key[graphs] = key.max() + 1 + np.fromiter(refined.values(), dtype=np.int64)
    rule = GRAPH_RULE if confirmed else GRAPH_RULE_UNCONFIRMED
    return DuplicateGroups("graph", _groups_from_ids(_row_ids(key)), rule, confirmed)


def _isomorphism_classes(members, node_ptr, edge_ptr, src, dst, node_ids, edge_ids, confirm: bool,
                         ) -> list[list[int]]:
    """Split graphs of one WL bucket into classes: by spectrum (graphs of at most :data:`SPECTRUM_NODES` nodes) and,
    with ``confirm``, by VF2 (node colours and edge ids matched) against the first graph of each class."""
    import networkx as nx
    from networkx.algorithms.isomorphism import DiGraphMatcher

    def graph(g: int):
        n = int(node_ptr[g + 1] - node_ptr[g])
        e0, e1 = int(edge_ptr[g]), int(edge_ptr[g + 1])
        spectrum = None
        if n <= SPECTRUM_NODES:
            adjacency = np.zeros((n, n))
            adjacency[src[e0:e1], dst[e0:e1]] = 1
            spectrum = _spectrum(adjacency)
        if not confirm:
            return spectrum, None
        out = nx.DiGraph()
        out.add_nodes_from((i, {"c": int(c)}) for i, c in enumerate(node_ids[node_ptr[g]:node_ptr[g + 1]]))
        out.add_edges_from((int(u), int(v), {"c": int(c)}) for u, v, c in zip(src[e0:e1], dst[e0:e1],
                                                                              edge_ids[e0:e1], strict=True))
        return spectrum, out

    # isomorphic graphs have the same spectrum up to rounding: a class admits a graph whose spectrum is within 1e-6
    # of its first graph's and, with confirm, that VF2 maps onto it
    classes: list[tuple[np.ndarray | None, object, list[int]]] = []
    for g in members:
        spectrum, nxg = graph(int(g))
        for rep_spectrum, rep, cls in classes:
            if spectrum is not None and not np.allclose(spectrum, rep_spectrum, rtol=0, atol=1e-6):
                continue
            if confirm and not DiGraphMatcher(rep, nxg, node_match=_same_c, edge_match=_same_c).is_isomorphic():
                continue
            cls.append(int(g))
            break
        else:
            classes.append((spectrum, nxg, [int(g)]))
    return [cls for _, _, cls in classes]


def _same_c(a: dict, b: dict) -> bool:
    return a["c"] == b["c"]


# ------------------------------------------------------------------------------------------------ datasets, splits


def dataset_duplicates(columns, meta) -> DuplicateGroups | None:
    """The duplicate groups of a dataset (its :class:`~gnnbench.data.store.GraphColumns` and
    :class:`~gnnbench.data.meta.DatasetMeta`): nodes of a transductive dataset, graphs otherwise; None for link
    prediction (its pairs, not its nodes, are split)."""
    if meta.task == "link_prediction":
        return None
    nodes = feature_ids(columns.node, columns.sparse, int(columns.num_nodes.sum()))
    if meta.transductive:
        return node_duplicates(int(columns.num_nodes[0]), columns.src, columns.dst, nodes)
    edges = feature_ids(columns.edge, None, int(columns.num_edges.sum()))
    return graph_duplicates(columns.num_nodes, columns.num_edges, columns.src, columns.dst, nodes, edges)


def dataset_labels(columns, meta) -> np.ndarray | None:
    """The labels duplicates are compared on: node ``y`` of a transductive dataset; graph ``y`` otherwise, or, for
    node- and edge-level tasks on many graphs, the multiset of each graph's node or edge labels (hashed; the labels
    of two isomorphic copies may differ node by node even where the multisets agree)."""
    if meta.transductive:
        return columns.node.get("y")
    if "y" in columns.graph:
        return columns.graph["y"]
    level = {"node": (columns.node, columns.num_nodes), "edge": (columns.edge, columns.num_edges)}.get(
        meta.label_level)
    if level is None or "y" not in level[0]:
        return None
    ids = _row_ids(level[0]["y"]).astype(np.uint64)
    ptr = np.concatenate([[0], np.cumsum(level[1])])
    return _combine(*[_segment_sum(_mix(ids, salt), ptr).view(np.int64) for salt in _SALTS])


def split_leakage(duplicates: DuplicateGroups, labels: np.ndarray | None, folds: list[dict]) -> list[dict]:
    """Per fold, how many validation and test items have a duplicate in that fold's training part, and how many of
    those share the label of such a duplicate: ``{"val": n, "val_leaked": k, "val_leaked_same_label": k',
    "test": ..., "test_leaked": ..., "test_leaked_same_label": ...}``."""
    group = duplicates.group
    label_id = _row_ids(np.asarray(labels)) if labels is not None else np.zeros(len(group), dtype=np.int64)
    width = int(label_id.max()) + 1 if label_id.size else 1
    out = []
    for fold in folds:
        train = np.asarray(fold["train"], dtype=np.int64)
        train = train[group[train] >= 0]
        in_train = np.zeros(duplicates.num_groups, dtype=bool)
        in_train[group[train]] = True
        pairs = np.unique(group[train] * width + label_id[train])
        row = {}
        for part in ("val", "test"):
            ids = np.asarray(fold[part], dtype=np.int64)
            grouped = ids[group[ids] >= 0]
            leaked = grouped[in_train[group[grouped]]]
            same = np.isin(group[leaked] * width + label_id[leaked], pairs)
            row.update({part: int(ids.size), f"{part}_leaked": int(leaked.size),
                        f"{part}_leaked_same_label": int(same.sum())})
        out.append(row)
    return out


LEAKAGE_FORMAT = 1


def split_report(meta, duplicates: DuplicateGroups | None, labels: np.ndarray | None, folds: list[dict],
                 split_checksum: str) -> dict:
    """The content of a split's ``leakage.json`` (docs/leakage.md): the dataset (name, checksum), the split it
    describes (``split_checksum``, the split file's checksum of its folds), the dataset's duplicates (the summary
    of ``meta.json``) and :func:`split_leakage` per fold; ``worst_test_fraction`` the largest share of a test part
    with a duplicate in training. Link prediction (no duplicates checked): no folds, fraction 0."""
    rows = [] if duplicates is None else split_leakage(duplicates, labels, folds)
    worst = max((r["test_leaked"] / r["test"] for r in rows if r["test"]), default=0.0)
    return {"format": LEAKAGE_FORMAT, "dataset": meta.name, "dataset_checksum": meta.checksum,
            "split_checksum": split_checksum,
            "duplicates": {} if duplicates is None else duplicates.summary(labels),
            "folds": rows, "worst_test_fraction": round(worst, 6)}
