"""ResNet of Platonov et al. (released model.py ``MODULES['ResNet'] = [FeedForwardModule]``): the graph-agnostic
baseline, ``num_layers`` residual feed-forward blocks on the node inputs,

    h ← h + dropout(W₂ GELU(dropout(W₁ norm(h) + b₁)) + b₂).

ResNet+SGC and ResNet+adj of the paper are this model with ``input_features: [original, sgc]`` and
``[original, adjacency]`` (:mod:`.inputs`)."""

from __future__ import annotations

from gnnbench.models.heterophily.network import FeedForward, ResidualNetwork


class ResNet(ResidualNetwork):
    """Residual feed-forward blocks on the node inputs (module docstring); arguments of
    :class:`~gnnbench.models.heterophily.network.ResidualNetwork`."""

    blocks = (FeedForward,)
