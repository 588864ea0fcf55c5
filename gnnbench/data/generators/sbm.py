"""SBM node-classification datasets PATTERN and CLUSTER (Dwivedi et al.; docs/datasets.md#sbm-pattern-and-cluster).

Both are stochastic block models: node pairs are joined independently with probability ``p`` inside a
community and ``q`` between communities, and the node order is then permuted uniformly at random.

PATTERN: 100 pattern instances, each an Erdős–Rényi graph on 5–34 nodes (edge probability
``p_pattern``) with fixed node features from {0, 1, 2}. Every graph has 5 communities of 5–34 nodes
(p = 0.5, q = 0.35, i.i.d. features from {0, 1, 2}) plus a copy of its instance's pattern, whose nodes
are joined to each SBM node with probability ``q_pattern`` = 0.5. Labels: 1 on pattern nodes, 0
elsewhere. Each instance contributes the same share of each split (100 / 20 / 20 graphs at full size),
graphs grouped by instance as in the original.

CLUSTER: 6 communities of 5–34 nodes (p = 0.55, q = 0.25); in each community one node chosen uniformly
at random carries feature r + 1 (r = community index), all other nodes feature 0. Labels: community index.

Vectorisation and seeding. Graphs are made 128 at a time as padded dense adjacency tensors: the
permutation is drawn first and edges are sampled directly between permuted positions from the block
labels at those positions — the same distribution as sampling and then permuting. Pattern–pattern
pairs get probability 0 or 1 from the instance's adjacency. Because the permutation is uniform and
independent of the edges, the "uniformly chosen" feature node of a CLUSTER community can be taken as the
community's first node in generation order. Chunk ``c`` of split ``s`` draws from
``SeedSequence(seed, spawn_key=(s, c))``: a split's graphs do not depend on the sizes of the other splits.

Decision (docs/datasets.md#sbm-pattern-and-cluster): the original notebooks
(``data/SBMs/generate_SBM_*.ipynb``) set no seed and are not reproducible; gnnbench generates the same distribution
with explicit seeds. The exact released graphs: generator ``released``. Edge features are not stored: the
benchmark's SBM edge feature is the constant 1.0 (``data/SBMs.py``), which models that use edges recreate.
"""

from __future__ import annotations

import numpy as np

from gnnbench.data.generators.base import Generator
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.data.store import GraphColumns
from gnnbench.errors import ConfigError

CHUNK = 128  # graphs sampled together; part of the seeding scheme (changing it changes the data)
SPLITS = ("train", "val", "test")


def _rng(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _sample_sbm_chunk(rng: np.random.Generator, block_sizes: np.ndarray, edge_probs) -> dict:
    """Sample B graphs whose nodes come in blocks of ``block_sizes`` (B, num_blocks), then permute them.

    ``edge_probs(block, local)`` gets, per permuted position, the block id (-1 = padding) and the index
    of the node inside its block, and returns (B, n, n) float32 edge probabilities.
    Returns the permuted ``block``/``local``/``valid`` arrays, node counts and row-major edge lists.
    """
    num_graphs, num_blocks = block_sizes.shape
    n = block_sizes.sum(1)
    n_max = int(n.max())
    valid = np.arange(n_max) < n[:, None]

    # Block id and index-inside-block of every node in generation order, padded to n_max.
    sizes = block_sizes.ravel()
    block_flat = np.repeat(np.tile(np.arange(num_blocks), num_graphs), sizes)
    block_start = np.repeat(np.cumsum(block_sizes, 1).ravel() - sizes, sizes)
    graph_start = np.repeat(np.cumsum(n) - n, n)
    local_flat = np.arange(n.sum()) - graph_start - block_start
    block0 = np.full((num_graphs, n_max), -1, dtype=np.int64)
    local0 = np.zeros((num_graphs, n_max), dtype=np.int64)
    block0[valid], local0[valid] = block_flat, local_flat

    # Uniform permutation of the valid positions (padding keys sort last).
    keys = rng.random((num_graphs, n_max))
    keys[~valid] = 2.0
    perm = np.argsort(keys, axis=1, kind="stable")
    block = np.take_along_axis(block0, perm, 1)
    local = np.take_along_axis(local0, perm, 1)

    probs = edge_probs(block, local)
    uniform = rng.random((num_graphs, n_max, n_max), dtype=np.float32)
    adj = uniform < probs
    adj &= np.triu(np.ones((n_max, n_max), dtype=bool), 1)
    adj &= valid[:, :, None] & valid[:, None, :]
    adj |= adj.transpose(0, 2, 1)
    g, src, dst = np.nonzero(adj)  # C order: row-major within each graph
    return {
        "block": block,
        "local": local,
        "valid": valid,
        "num_nodes": n.astype(np.int64),
        "num_edges": np.bincount(g, minlength=num_graphs).astype(np.int64),
        "src": src.astype(np.int32),
        "dst": dst.astype(np.int32),
    }


def _community_probs(block: np.ndarray, p: float, q: float) -> np.ndarray:
    same = block[:, :, None] == block[:, None, :]
    return np.where(same, np.float32(p), np.float32(q))


def _chunks(n_graphs: int):
    for c, start in enumerate(range(0, n_graphs, CHUNK)):
        yield c, np.arange(start, min(start + CHUNK, n_graphs))


def _split_sizes(params: dict) -> dict[str, int]:
    return {s: params[f"num_{s}"] for s in SPLITS}


# ----------------------------------------------------------------------------------------------- PATTERN


def _pattern_instances(params: dict, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sizes (P,), padded adjacency (P, s_max, s_max) float32 and padded features (P, s_max) of the patterns."""
    rng = _rng(seed, 0)
    low, high = params["pattern_size"]
    sizes = np.empty(params["num_patterns"], dtype=np.int64)
    adjs, feats = [], []
    for i in range(params["num_patterns"]):  # 100 small draws, not a per-graph loop
        s = int(rng.integers(low, high + 1))
        upper = np.triu(rng.random((s, s)) < params["p_pattern"], 1)
        sizes[i] = s
        adjs.append(upper | upper.T)
        feats.append(rng.integers(0, params["vocab_size"], s))
    s_max = int(sizes.max())
    adj = np.zeros((len(sizes), s_max, s_max), dtype=np.float32)
    feat = np.zeros((len(sizes), s_max), dtype=np.int64)
    for i, (a, f) in enumerate(zip(adjs, feats, strict=True)):
        adj[i, : len(f), : len(f)] = a
        feat[i, : len(f)] = f
    return sizes, adj, feat


def _describe_pattern(name: str, params: dict, seed: int) -> DatasetMeta:
    return DatasetMeta(
        name=name, task="node_classification", loss="weighted_cross_entropy", metric="weighted_accuracy",
        num_outputs=2, num_graphs=sum(_split_sizes(params).values()),
        node_features=FeatureSpec("categorical", params["vocab_size"]), edge_features=None,
        pe_usage="add", split_sizes=_split_sizes(params),
        source={"generator": "sbm_pattern", "params": params, "seed": seed},
    )


def _build_pattern(params: dict, seed: int) -> GraphColumns:
    num_comm, vocab = params["num_communities"], params["vocab_size"]
    low, high = params["community_size"]
    pattern_sizes, pattern_adj, pattern_feat = _pattern_instances(params, seed)
    num_patterns = len(pattern_sizes)
    parts = []
    for split_code, split in enumerate(SPLITS, start=1):
        n_split = params[f"num_{split}"]
        for c, graph_ids in _chunks(n_split):
            rng = _rng(seed, split_code, c)
            instance = graph_ids * num_patterns // n_split  # graphs grouped by pattern instance
            communities = rng.integers(low, high + 1, (len(graph_ids), num_comm))
            blocks = np.concatenate([communities, pattern_sizes[instance][:, None]], axis=1)

            def edge_probs(block, local, instance=instance):
                probs = _community_probs(block, params["p"], params["q"])
                in_pattern = block == num_comm
                probs[in_pattern[:, :, None] ^ in_pattern[:, None, :]] = params["q_pattern"]
                both = in_pattern[:, :, None] & in_pattern[:, None, :]
                k = np.where(in_pattern, local, 0)
                fixed = pattern_adj[instance[:, None, None], k[:, :, None], k[:, None, :]]
                probs[both] = fixed[both]  # probability 0 or 1: the instance's own edges
                return probs

            out = _sample_sbm_chunk(rng, blocks, edge_probs)
            in_pattern = out["block"] == num_comm
            k = np.where(in_pattern, out["local"], 0)
            sbm_feat = rng.integers(0, vocab, in_pattern.shape)
            feat = np.where(in_pattern, pattern_feat[instance[:, None], k], sbm_feat)
            valid = out["valid"]
            parts.append(GraphColumns(
                num_nodes=out["num_nodes"], num_edges=out["num_edges"], src=out["src"], dst=out["dst"],
                node={"x": feat[valid].astype(np.int16), "y": in_pattern[valid].astype(np.int16)},
            ))
    return GraphColumns.concat(parts)


def _check_pattern(params: dict, where: str) -> None:
    for split in SPLITS:
        if params[f"num_{split}"] < params["num_patterns"]:
            raise ConfigError(f"{where}.num_{split}: {params[f'num_{split}']} graphs cannot hold one graph of each of "
                              f"the {params['num_patterns']} pattern instances; raise it or lower num_patterns")


PATTERN = Generator(
    name="sbm_pattern",
    description="SBM PATTERN: find a fixed pattern subgraph planted in an SBM graph (node classification)",
    defaults={
        "num_train": 10000, "num_val": 2000, "num_test": 2000, "num_patterns": 100,
        "num_communities": 5, "community_size": [5, 34], "p": 0.5, "q": 0.35,
        "pattern_size": [5, 34], "p_pattern": 0.5, "q_pattern": 0.5, "vocab_size": 3,
    },
    default_split={"scheme": "given"},
    describe=_describe_pattern,
    build=_build_pattern,
    check=_check_pattern,
)


# ----------------------------------------------------------------------------------------------- CLUSTER


def _describe_cluster(name: str, params: dict, seed: int) -> DatasetMeta:
    num_comm = params["num_communities"]
    return DatasetMeta(
        name=name, task="node_classification", loss="weighted_cross_entropy", metric="weighted_accuracy",
        num_outputs=num_comm, num_graphs=sum(_split_sizes(params).values()),
        node_features=FeatureSpec("categorical", num_comm + 1), edge_features=None, pe_usage="add",
        split_sizes=_split_sizes(params), source={"generator": "sbm_cluster", "params": params, "seed": seed},
    )


def _build_cluster(params: dict, seed: int) -> GraphColumns:
    num_comm = params["num_communities"]
    low, high = params["community_size"]
    parts = []
    for split_code, split in enumerate(SPLITS, start=1):
        for c, graph_ids in _chunks(params[f"num_{split}"]):
            rng = _rng(seed, split_code, c)
            blocks = rng.integers(low, high + 1, (len(graph_ids), num_comm))
            out = _sample_sbm_chunk(rng, blocks, lambda block, local: _community_probs(
                block, params["p"], params["q"]))
            valid, block = out["valid"], out["block"]
            feat = np.where(out["local"] == 0, block + 1, 0)  # one seed node per community, uniform
            parts.append(GraphColumns(
                num_nodes=out["num_nodes"], num_edges=out["num_edges"], src=out["src"], dst=out["dst"],
                node={"x": feat[valid].astype(np.int16), "y": block[valid].astype(np.int16)},
            ))
    return GraphColumns.concat(parts)


CLUSTER = Generator(
    name="sbm_cluster",
    description="SBM CLUSTER: recover communities from one labelled node each (node classification)",
    defaults={
        "num_train": 10000, "num_val": 1000, "num_test": 1000, "num_communities": 6,
        "community_size": [5, 34], "p": 0.55, "q": 0.25,
    },
    default_split={"scheme": "given"},
    describe=_describe_cluster,
    build=_build_cluster,
)
