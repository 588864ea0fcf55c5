"""Label propagation, the structure-only baseline of "Pitfalls of GNN Evaluation" (Shchur et al., Table 1: LabelProp
and LabelProp NL; the released code's ``gnnbench/models/labelprop.py``).

No weights: the state is a label matrix Y (N, C), Y⁰ = one-hot labels on the training nodes and zeros elsewhere
(validation nodes are unlabelled). One "epoch" is one propagation step:

    vanilla  (LabelProp):     Y ← D⁻¹ A · Y, then the training rows are reset to their one-hot labels
    smoothed (LabelProp NL):  Y ← (1 − α) · D^-1/2 A D^-1/2 · Y + α · Y⁰          (no clamping)

A is the adjacency as stored (both directions of every edge). As in the released code, the vanilla variant uses
A as given (a stored self loop counts; standardised data have none) and the smoothed one removes self loops
first (``normalize_adj``). Decision: degree 0 is clamped to 1 in both (the original divides by zero in the vanilla
variant, which only unstandardised data with isolated nodes can reach; their rows stay 0 either way;
docs/protocols/pitfalls.md#where-gnnbench-departs). The rows of
Y are the logits: softmax cross-entropy of Y is the original's loss, argmax its prediction (an all-zero row →
class 0). ``alpha`` is ``return_prob`` of the original's config (0.05 for LabelProp NL; unused by vanilla).
"""

from __future__ import annotations

import warnings

import torch

from gnnbench.errors import ConfigError
from gnnbench.models.stacked import NodeGraph

VARIANTS = ("vanilla", "smoothed")


class LabelPropagation:
    r"""Label propagation on ``graph`` from the ``labels`` (N,) of ``train_nodes`` (no weights). One :meth:`step`:

        vanilla:   Y ← D⁻¹ A Y, then Y[train] ← Y⁰[train]
        smoothed:  Y ← (1 − α) D^-1/2 A D^-1/2 Y + α Y⁰           (self loops removed first; no clamping)

    A[i, j] = number of edges j→i, degrees = in-degrees clamped at 1; Y⁰ = one-hot labels on the training nodes.

    Args:
        graph: the transductive graph (its ``edge_index``, ``num_nodes``, ``num_classes``); see
            :meth:`from_edge_index` for a plain ``(edge_index, labels, train_nodes)`` call.
        labels: class of every node (N,); only the training nodes' are read.
        train_nodes: ids of the labelled nodes.
        variant: "vanilla" or "smoothed".
        alpha: the return probability α of "smoothed".

    Shapes:
        - state Y: (N, C); :meth:`logits` (1, M, C).
    """

    def __init__(self, graph: NodeGraph, labels: torch.Tensor, train_nodes: torch.Tensor, variant: str,
                 alpha: float) -> None:
        if variant not in VARIANTS:
            raise ConfigError(f"label propagation: unknown prop_type {variant!r}; choose one of {', '.join(VARIANTS)}")
        if not 0 <= alpha <= 1:
            raise ConfigError(f"label propagation: return_prob must lie in [0, 1], got {alpha!r}; fix the config")
        n, classes = graph.num_nodes, graph.num_classes
        train_nodes = train_nodes.reshape(-1).to(torch.int64).to(graph.edge_index.device)
        self.variant, self.alpha, self.train_nodes = variant, float(alpha), train_nodes
        device = graph.edge_index.device
        self.initial = torch.zeros(n, classes, device=device)
        self.initial[train_nodes, labels.reshape(-1).to(device)[train_nodes].to(torch.int64)] = 1.0
        src, dst = graph.edge_index
        if variant == "smoothed":  # normalize_adj removes self loops first
            keep = src != dst
            src, dst = src[keep], dst[keep]
        degree = torch.bincount(dst, minlength=n).clamp_(min=1).to(torch.float32)
        if variant == "vanilla":
            values = degree.reciprocal()[dst]  # row i of D⁻¹A averages the neighbours j of i
        else:
            scale = degree.rsqrt()
            values = scale[dst] * scale[src]
        order = torch.argsort(dst * n + src)
        crow = torch.zeros(n + 1, dtype=torch.int64, device=device)
        torch.cumsum(torch.bincount(dst, minlength=n), 0, out=crow[1:])
        with warnings.catch_warnings():  # "sparse CSR support is in beta": CSR @ dense is stable and tested here
            warnings.simplefilter("ignore", UserWarning)
            self.matrix = torch.sparse_csr_tensor(crow, src[order], values[order], (n, n))
        self.state = self.initial.clone()

    @classmethod
    def from_edge_index(cls, edge_index: torch.Tensor, labels: torch.Tensor, train_nodes: torch.Tensor,
                        variant: str = "vanilla", alpha: float = 0.0, num_nodes: int | None = None,
                        num_classes: int | None = None) -> LabelPropagation:
        """The plain call (PyG's ``LabelPropagation(y, edge_index, mask)`` inputs): N = ``labels.numel()`` and
        C = max label + 1 unless given."""
        n = int(labels.numel()) if num_nodes is None else int(num_nodes)
        classes = int(labels.max()) + 1 if num_classes is None else int(num_classes)
        graph = NodeGraph(n, edge_index, torch.empty(n, 0), classes)
        return cls(graph, labels, train_nodes, variant, alpha)

    def run(self, steps: int) -> torch.Tensor:
        """``steps`` propagation steps; the state Y (N, C)."""
        for _ in range(steps):
            self.step()
        return self.state

    def step(self) -> None:
        """One propagation step ("one epoch")."""
        propagated = self.matrix @ self.state
        if self.variant == "vanilla":
            propagated[self.train_nodes] = self.initial[self.train_nodes]
        else:
            propagated = propagated.mul_(1 - self.alpha).add_(self.initial, alpha=self.alpha)
        self.state = propagated

    def logits(self, nodes: torch.Tensor | None) -> torch.Tensor:
        """(1, M, C): the rows of Y at ``nodes`` (None = all), used as logits."""
        rows = self.state if nodes is None else self.state.index_select(0, nodes.reshape(-1).to(torch.int64))
        return rows.unsqueeze(0)
