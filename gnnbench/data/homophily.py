"""Edge homophily and adjusted homophily of a labelled graph (Platonov et al., ICLR 2023, §4 and Table 1).

Both are measured on the undirected simple graph: every node pair {u, v}, u ≠ v, joined by an edge in either
direction counts once, and only pairs whose two nodes carry a label (≥ 0) take part.

* edge homophily h_edge = |{ {u, v} ∈ E : y_u = y_v }| / |E|;
* adjusted homophily h_adj = (h_edge − Σ_k D_k² / (2|E|)²) / (1 − Σ_k D_k² / (2|E|)²), with D_k the sum of the
  degrees of the nodes of class k — h_edge corrected for the agreement expected from the class degree shares alone
  (0 for a graph wired at random with the same degrees, negative when edges avoid the own class).
"""

from __future__ import annotations

import numpy as np


def undirected_pairs(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The undirected node pairs (lo, hi), lo < hi, of the edges ``src → dst``, each once, sorted; self loops
    dropped."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    keep = src != dst
    lo, hi = np.minimum(src[keep], dst[keep]), np.maximum(src[keep], dst[keep])
    n = int(max(lo.max(initial=-1), hi.max(initial=-1))) + 1
    pairs = np.unique(lo * n + hi)
    return pairs // max(n, 1), pairs % max(n, 1)


def homophily(src: np.ndarray, dst: np.ndarray, labels: np.ndarray) -> dict[str, float | None]:
    """``{"edge_homophily": h_edge, "adjusted_homophily": h_adj}`` (module docstring) of the graph with edges
    ``src → dst`` and node ``labels`` (−1: unlabelled); None where the graph has no edge between labelled nodes
    (h_adj also when every degree falls in one class)."""
    labels = np.asarray(labels, dtype=np.int64)
    lo, hi = undirected_pairs(src, dst)
    labelled = (labels[lo] >= 0) & (labels[hi] >= 0)
    a, b = labels[lo[labelled]], labels[hi[labelled]]
    if a.size == 0:
        return {"edge_homophily": None, "adjusted_homophily": None}
    h_edge = float(np.mean(a == b))
    degree_sums = np.bincount(np.concatenate([a, b]))  # D_k: both ends of every edge, by class
    expected = float(np.sum((degree_sums / (2.0 * a.size)) ** 2))
    h_adj = None if expected >= 1.0 else (h_edge - expected) / (1.0 - expected)
    return {"edge_homophily": h_edge, "adjusted_homophily": h_adj}
