"""Losses of the benchmark (Dwivedi et al., Appendix B.1.3 and C; the released code's ``nets/<task>/*_net.py``
``loss`` methods; docs/protocols/benchmarking-gnns.md#metrics-and-losses), by the name ``meta.json`` gives.

Every loss is called as ``loss(scores, batch)``: most read ``batch.y`` only; the multitask loss also needs the
batch's node-to-graph map. ``get_loss(name, config)`` binds the run config where a loss depends on it
(GraphTheoryProp's node-loss normaliser uses the configured batch size).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F

from gnnbench.data.batching import GraphBatch
from gnnbench.errors import ConfigError
from gnnbench.models.sparse import scatter_sum

Loss = Callable[[torch.Tensor, GraphBatch], torch.Tensor]


def weighted_cross_entropy(scores: torch.Tensor, batch: GraphBatch) -> torch.Tensor:
    """SBM loss: cross-entropy with per-batch class weights w_c = (V − n_c) / V, 0 for absent classes.

    V = nodes in the batch, n_c = nodes of class c. The weighted mean is Σ_i w_{y_i} nll_i / Σ_i w_{y_i}.
    Decision (docs/protocols/benchmarking-gnns.md#weighted-cross-entropy-on-a-one-class-batch): a batch whose nodes
    all share one class has all-zero weights (the original returns NaN); gnnbench falls back to the unweighted loss
    there.
    """
    y = batch.y
    num = y.numel()
    counts = torch.bincount(y, minlength=scores.shape[1]).to(scores.dtype)
    weight = (num - counts) / num
    if not bool((weight * (counts > 0)).any()):
        return F.cross_entropy(scores, y)
    return F.cross_entropy(scores, y, weight=weight)


def cross_entropy(scores: torch.Tensor, batch: GraphBatch) -> torch.Tensor:
    """Mean cross-entropy of the class scores against ``batch.y``."""
    return F.cross_entropy(scores, batch.y)


def binary_cross_entropy(scores: torch.Tensor, batch: GraphBatch) -> torch.Tensor:
    """Mean loss of a binary task (Platonov et al.'s minesweeper, tolokers, questions): binary cross-entropy with
    logits on one output column, as the released code trains its one-logit models; a model with two output
    columns (another zoo's) gets the cross-entropy of its two logits, the same loss of their difference."""
    if scores.shape[-1] == 2:
        return F.cross_entropy(scores, batch.y)
    return F.binary_cross_entropy_with_logits(scores.reshape(-1), batch.y.to(scores.dtype).reshape(-1))


def l1(scores: torch.Tensor, batch: GraphBatch) -> torch.Tensor:
    """Mean absolute error against ``batch.y`` (ZINC, AQSOL)."""
    return F.l1_loss(scores, batch.y)


def link_bce(scores: torch.Tensor, batch: GraphBatch) -> torch.Tensor:
    """COLLAB: −mean log(σ(s_pos) + 1e-15) − mean log(1 − σ(s_neg) + 1e-15); ``batch.y`` is 1 for positive
    pairs, 0 for negative ones."""
    prob = torch.sigmoid(scores)
    positive = batch.y.bool()
    return -torch.log(prob[positive] + 1e-15).mean() - torch.log(1 - prob[~positive] + 1e-15).mean()


def multitask_parts(scores: tuple[torch.Tensor, torch.Tensor], batch: GraphBatch, batch_size: int) -> torch.Tensor:
    """GraphTheoryProp's six loss values (3 node tasks, then 3 graph tasks).

    Node task t: squared errors summed per graph, divided by avg_nodes = (#nodes in batch) / ``batch_size``
    (the configured batch size, not the number of graphs — the original's normaliser, reproduced), then
    averaged over the graphs. Graph task t: mean squared error.
    """
    node_scores, graph_scores = scores
    avg_nodes = batch.num_nodes / batch_size
    per_graph = scatter_sum((node_scores - batch.y) ** 2, batch.batch, batch.num_graphs) / avg_nodes
    node_part = per_graph.mean(dim=0)
    graph_part = ((graph_scores - batch.y_graph) ** 2).mean(dim=0)
    return torch.cat([node_part, graph_part])


def multitask_mse(scores: tuple[torch.Tensor, torch.Tensor], batch: GraphBatch, batch_size: int) -> torch.Tensor:
    """Mean of the six values of :func:`multitask_parts`."""
    return multitask_parts(scores, batch, batch_size).mean()


LOSSES: dict[str, Callable] = {
    "weighted_cross_entropy": weighted_cross_entropy,
    "cross_entropy": cross_entropy,
    "binary_cross_entropy": binary_cross_entropy,
    "l1": l1,
    "link_bce": link_bce,
    "multitask_mse": multitask_mse,
}


def get_loss(name: str, config: dict | None = None) -> Loss:
    """The loss called ``name``, bound to the run ``config`` where it depends on it (the multitask loss's batch
    size)."""
    if name not in LOSSES:
        raise ConfigError(f"dataset metadata names unknown loss {name!r}; known: {', '.join(LOSSES)}")
    if name == "multitask_mse":
        return partial(multitask_mse, batch_size=(config or {}).get("batch_size", 1))
    return LOSSES[name]
