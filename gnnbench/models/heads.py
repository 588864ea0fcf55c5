"""Task heads: turn an architecture's :class:`~gnnbench.models.base.Representation` into predictions.

One head per task, shared by every model (Dwivedi et al., Appendix B.1.3 and B.2.3, Eqs. 23–27 and 37–46; the
released code's task nets, ``nets/<task>/*_net.py``). Each head has two styles, chosen
by the architecture (``head_style(task)``):

``mlp``        the benchmark's ``MLPReadout`` on the final node embeddings: per node (node classification),
               on the pooled graph (graph tasks), on [h_u ‖ h_v] for every edge u→v (TSP) or every queried
               pair (COLLAB link scores), and for multitask node + graph regression (GraphTheoryProp)
               ``MLPReadout(d, 3)`` per node plus ``MLPReadout(2d, 3)`` on ``Set2Set(d)``.
``per_layer``  GIN's and 3WLGNN's readout: one score per layer, summed — ``Linear(d_ℓ, c)`` per node or per
               pooled graph, ``Sequential(Linear(2d, d), ReLU, Linear(d, c))`` on [h^ℓ_u ‖ h^ℓ_v] per edge,
               and for multitask ``Linear(d, 3)`` per node plus ``Linear(2d, 3)`` on one shared Set2Set.

Edge/pair scores never materialise [h_u ‖ h_v]: the first linear map is split into its u and v halves,
applied per node and gathered per edge (same result, a fraction of the memory on TSP's 25-NN graphs).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.models.base import Architecture, Representation
from gnnbench.models.readout import MLPReadout, Set2Set, pool


def pair_scores(layers: list[nn.Linear], h: torch.Tensor, u: torch.Tensor, v: torch.Tensor,
                final: nn.Linear) -> torch.Tensor:
    """``final(ReLU(...ReLU(layers[0]([h_u ‖ h_v]))...))`` for every pair (u[i], v[i])."""
    first = layers[0]
    width = h.shape[1]
    from_u = F.linear(h, first.weight[:, :width])
    from_v = F.linear(h, first.weight[:, width:], first.bias)
    x = from_u.index_select(0, u) + from_v.index_select(0, v)
    for layer in layers[1:]:
        x = layer(torch.relu_(x))
    return final(torch.relu_(x))


class _PairMLP(nn.Module):
    """Sequential(Linear(2d, d), ReLU, Linear(d, c)) on [h_u ‖ h_v] (GIN's per-layer TSP edge score)."""

    def __init__(self, width: int, out: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(2 * width, width)
        self.out = nn.Linear(width, out)

    def forward(self, h: torch.Tensor, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return pair_scores([self.hidden], h, u, v, self.out)


def _mlp_pairs(mlp: MLPReadout, h: torch.Tensor, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return pair_scores(list(mlp.layers), h, u, v, mlp.out)


class NodeHead(nn.Module):
    """Node classification: ``MLPReadout`` per node, or the sum of one ``Linear`` per layer → (N, outputs)."""

    def __init__(self, arch: Architecture, style: str, outputs: int) -> None:
        super().__init__()
        self.style = style
        if style == "mlp":
            self.mlp = MLPReadout(arch.out_width, outputs)
        else:
            self.linears = nn.ModuleList(nn.Linear(w, outputs) for w in arch.layer_widths)

    def forward(self, rep: Representation, batch: GraphBatch) -> torch.Tensor:
        """Scores (N, outputs) of every node."""
        if self.style == "mlp":
            return self.mlp(rep.nodes)
        return sum(linear(h) for linear, h in zip(self.linears, rep.layers, strict=True))


class GraphHead(nn.Module):
    """Graph classification/regression → (B, outputs); single-target regression returns shape (B,)."""

    def __init__(self, arch: Architecture, style: str, outputs: int, readout: str, squeeze: bool) -> None:
        super().__init__()
        self.style, self.readout, self.squeeze = style, readout, squeeze
        if style == "mlp":
            self.mlp = MLPReadout(arch.out_width, outputs)
        else:
            widths = arch.graph_layer_widths or arch.layer_widths
            self.linears = nn.ModuleList(nn.Linear(w, outputs) for w in widths)

    def forward(self, rep: Representation, batch: GraphBatch) -> torch.Tensor:
        """``MLPReadout(pool(h))``, or Σ_ℓ Linear_ℓ(pool(h^ℓ)) (the architecture's own pooled layers where it has
        them, 3WLGNN's)."""
        if self.style == "mlp":
            out = self.mlp(pool(rep.nodes, batch.batch, batch.num_graphs, self.readout))
        else:
            pooled = rep.graph_layers or [pool(h, batch.batch, batch.num_graphs, self.readout) for h in rep.layers]
            out = sum(linear(g) for linear, g in zip(self.linears, pooled, strict=True))
        return out.squeeze(-1) if self.squeeze else out


class EdgeHead(nn.Module):
    """Edge classification (TSP): scores for every edge u→v of the batch from [h_u ‖ h_v] → (E, outputs)."""

    def __init__(self, arch: Architecture, style: str, outputs: int) -> None:
        super().__init__()
        self.style = style
        if style == "mlp":
            self.mlp = MLPReadout(2 * arch.out_width, outputs)
        else:
            self.pair_mlps = nn.ModuleList(_PairMLP(w, outputs) for w in arch.layer_widths)

    def forward(self, rep: Representation, batch: GraphBatch) -> torch.Tensor:
        """Scores (E, outputs): ``MLPReadout([h_u ‖ h_v])``, or Σ_ℓ of the per-layer pair MLPs."""
        src, dst = batch.edge_index
        if self.style == "mlp":
            return _mlp_pairs(self.mlp, rep.nodes, src, dst)
        return sum(m(h, src, dst) for m, h in zip(self.pair_mlps, rep.layers, strict=True))


class LinkHead(nn.Module):
    """Link prediction (COLLAB): one logit per queried pair ``batch.pairs`` (2, P) from [h_u ‖ h_v] → (P,).

    The benchmark's predictor is σ(MLPReadout(2d, 1)); the sigmoid belongs to the loss (``link_bce``)."""

    def __init__(self, arch: Architecture, style: str, outputs: int) -> None:
        super().__init__()
        if style != "mlp":
            raise ValueError("link prediction reads the final node embeddings only")
        self.mlp = MLPReadout(2 * arch.out_width, 1)

    def forward(self, rep: Representation, batch: GraphBatch) -> torch.Tensor:
        """Logits (P,) of the pairs ``batch.pairs``: ``MLPReadout(2d, 1)([h_u ‖ h_v])``."""
        u, v = batch.pairs
        return _mlp_pairs(self.mlp, rep.nodes, u, v).squeeze(-1)


class MultiTaskHead(nn.Module):
    """GraphTheoryProp: (node scores (N, node_outputs), graph scores (B, graph_outputs))."""

    def __init__(self, arch: Architecture, style: str, node_outputs: int, graph_outputs: int) -> None:
        super().__init__()
        self.style = style
        if style == "mlp":
            self.set2set = Set2Set(arch.out_width)
            self.node_mlp = MLPReadout(arch.out_width, node_outputs)
            self.graph_mlp = MLPReadout(2 * arch.out_width, graph_outputs)
        else:
            widths = arch.layer_widths
            if len(set(widths)) != 1:
                raise ValueError("a per-layer multitask readout shares one Set2Set: all layers need one width")
            self.set2set = Set2Set(widths[0])
            self.node_linears = nn.ModuleList(nn.Linear(w, node_outputs) for w in widths)
            self.graph_linears = nn.ModuleList(nn.Linear(2 * w, graph_outputs) for w in widths)

    def forward(self, rep: Representation, batch: GraphBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """(node scores, graph scores): per node ``MLPReadout(h)`` and per graph ``MLPReadout(Set2Set(h))``, or the
        per-layer sums of ``Linear(h^ℓ)`` and ``Linear(Set2Set(h^ℓ))``."""
        if self.style == "mlp":
            graph = self.set2set(rep.nodes, batch.batch, batch.num_graphs)
            return self.node_mlp(rep.nodes), self.graph_mlp(graph)
        node = sum(lin(h) for lin, h in zip(self.node_linears, rep.layers, strict=True))
        graph = sum(lin(self.set2set(h, batch.batch, batch.num_graphs))
                    for lin, h in zip(self.graph_linears, rep.layers, strict=True))
        return node, graph


def make_head(task: str, arch: Architecture, num_outputs: int, readout: str, num_graph_outputs: int = 0) -> nn.Module:
    """The head of ``task`` in the architecture's style (``arch.head_style(task)``); per-layer scorers Xavier-
    initialised where the architecture asks for it (3WLGNN, as the original)."""
    head = _make_head(task, arch, num_outputs, readout, num_graph_outputs)
    if arch.head_style(task) == "per_layer" and arch.per_layer_init == "xavier":
        for module in head.modules():  # the original 3WLGNN's per-block scorers
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)
    return head


def _make_head(task: str, arch: Architecture, num_outputs: int, readout: str, num_graph_outputs: int) -> nn.Module:
    style = arch.head_style(task)
    if task == "node_classification":
        return NodeHead(arch, style, num_outputs)
    if task in ("graph_classification", "graph_regression"):
        return GraphHead(arch, style, num_outputs, readout, squeeze=task == "graph_regression" and num_outputs == 1)
    if task == "edge_classification":
        return EdgeHead(arch, style, num_outputs)
    if task == "link_prediction":
        return LinkHead(arch, style, num_outputs)
    if task == "multitask_regression":
        return MultiTaskHead(arch, style, num_outputs, num_graph_outputs)
    raise ValueError(f"no head for task {task!r}")
