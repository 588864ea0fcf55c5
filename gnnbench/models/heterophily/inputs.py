"""The input layer of Platonov et al.'s baselines: one Linear on the concatenation of the inputs a config's
``input_features`` names (released code: ``Dataset.augment_node_features`` of datasets.py, which builds that
concatenation as the node features, and ``Model.input_linear``):

==============  ================================================================================================
``original``    the dataset's node features X (N, F)
``sgc``         SGC features S⁵X (Wu et al. 2019), S = D^-1/2 (A + I) D^-1/2 on the graph with its self loops
                replaced by one per node, D the out-degrees of A + I: five propagations, as
                ``compute_sgc_features`` (num_props = 5)
``identity``    the rows of the N×N identity (one learned vector per node)
``adjacency``   the rows of the adjacency matrix without self loops, A[i, j] = 1 for an edge i → j (N columns)
==============  ================================================================================================

concatenated in that order (the released one, whatever order the config lists them in), so the Linear's weight
(hidden, F·[original] + F·[sgc] + N·[identity] + N·[adjacency]) is the released one, initialised as
``nn.Linear`` initialises it (fan-in: the whole width).

Where they are computed (docs/models.md#the-heterophily-zoo-platonov2023): in the model, never as an N-wide
tensor. The Linear of an identity row is a column of the weight; of an adjacency row, a sum of columns over the
node's out-neighbours (a sparse product over the edges, O(E·hidden) per step instead of the O(N²·hidden) dense product).
SGC features are computed once per graph, on the first forward pass, and cached (not a buffer: a function of the
graph, not saved in checkpoints; every member of a stack shares them).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.models.blocks import cached_structure
from gnnbench.models.heterophily.propagation import gcn_adjacency
from gnnbench.models.sparse import SparseAdjacency, unit_adjacency

INPUT_FEATURES = ("original", "sgc", "identity", "adjacency")  # the released concatenation order
NODE_WIDE = ("identity", "adjacency")  # one input column per node
SGC_PROPAGATIONS = 5  # datasets.py compute_sgc_features(num_props=5)


def input_features(value: Sequence[str] | str | None) -> tuple[str, ...]:
    """``input_features`` of a config in the released concatenation order; a ValueError (one line) for an empty,
    repeated or unknown name."""
    names = [value] if isinstance(value, str) else list(value if value is not None else ["original"])
    unknown = [n for n in names if n not in INPUT_FEATURES]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(f"input_features must name each of {', '.join(INPUT_FEATURES)} at most once (at least "
                         f"one), got {value!r}")
    return tuple(n for n in INPUT_FEATURES if n in names)


def sgc_features(x: torch.Tensor, edge_index: torch.Tensor, steps: int = SGC_PROPAGATIONS) -> torch.Tensor:
    """S^steps X with S = D^-1/2 (A + I) D^-1/2: the graph's self loops removed, then one added to every node,
    D its out-degrees (``compute_sgc_features`` of the released datasets.py)."""
    num_nodes = x.shape[0]
    src, dst = edge_index
    keep = src != dst
    loops = torch.arange(num_nodes, device=x.device)
    src, dst = torch.cat([src[keep], loops]), torch.cat([dst[keep], loops])
    adjacency = gcn_adjacency(torch.stack([src, dst]), num_nodes, x.dtype)
    for _ in range(steps):
        x = adjacency.propagate(x)
    return x


def out_neighbours(edge_index: torch.Tensor, num_nodes: int, dtype: torch.dtype) -> SparseAdjacency:
    """M with (M @ y)_i = Σ_{j: i→j, j≠i} y_j: the adjacency rows without self loops (parallel edges counted)."""
    src, dst = edge_index
    keep = src != dst
    return unit_adjacency(torch.stack([dst[keep], src[keep]]), num_nodes, dtype)


def _graph_key(x: torch.Tensor, edge_index: torch.Tensor) -> tuple | None:
    """What identifies a graph's cached inputs: the tensors' storage, version and shape (None where a tensor has no
    storage of its own, e.g. under vmap over the inputs: then nothing is cached)."""
    try:
        return tuple((t.data_ptr(), t._version, tuple(t.shape), t.device) for t in (x, edge_index))
    except RuntimeError:
        return None


class InputLinear(nn.Linear):
    """The released ``input_linear`` on the inputs ``features`` (module docstring):

        h_i = W [x_i ‖ (S⁵X)_i ‖ e_i ‖ a_i] + b,   e_i row i of the identity, a_i row i of the adjacency matrix

    computed as W_x x_i + W_s (S⁵X)_i + W_e[:, i] + Σ_{j: i→j, j≠i} W_a[:, j] + b. ``in_features``: F, the width of
    X; ``num_nodes``: N, needed for identity and adjacency inputs (the graph the model is bound to)."""

    def __init__(self, in_features: int, out_features: int, features: Sequence[str] = ("original",),
                 num_nodes: int | None = None) -> None:
        self.features = input_features(features)
        if any(f in NODE_WIDE for f in self.features) and not num_nodes:
            raise ValueError(f"input_features {', '.join(self.features)} need the node count of the graph")
        self.num_features = in_features
        self.num_nodes = num_nodes if any(f in NODE_WIDE for f in self.features) else None
        widths = {"original": in_features, "sgc": in_features, "identity": num_nodes, "adjacency": num_nodes}
        self.widths = [widths[f] for f in self.features]
        super().__init__(sum(self.widths), out_features)
        self._cache: tuple[tuple | None, torch.Tensor | None] = (None, None)

    def _sgc(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        key = _graph_key(x, edge_index)
        if key is None or key != self._cache[0]:
            features = sgc_features(x, edge_index)
            if key is None:
                return features
            self._cache = (key, features)
        return self._cache[1]

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """(N, out_features) from node features ``x`` (N, F) of the graph ``edge_index``."""
        num_nodes = x.shape[0]
        if self.num_nodes is not None and num_nodes != self.num_nodes:
            raise ValueError(f"this model reads {', '.join(f for f in self.features if f in NODE_WIDE)} inputs of "
                             f"a graph of {self.num_nodes} nodes; got {num_nodes}")
        weights = dict(zip(self.features, self.weight.split(self.widths, dim=1), strict=True))
        out = self.bias.expand(num_nodes, -1)
        if "original" in weights:
            out = out + F.linear(x, weights["original"])
        if "sgc" in weights:
            out = out + F.linear(self._sgc(x, edge_index), weights["sgc"])
        if "identity" in weights:
            out = out + weights["identity"].t()
        if "adjacency" in weights:
            out = out + cached_structure(self, edge_index, (num_nodes, out.dtype),
                                         lambda: out_neighbours(edge_index, num_nodes, out.dtype)
                                         ).propagate(weights["adjacency"].t())
        return out

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, features={'+'.join(self.features)}"
