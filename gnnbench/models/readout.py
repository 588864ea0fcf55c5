"""Graph pooling and the benchmark's MLP readout (Dwivedi et al., Appendix B.1.3, Eqs. 23–27; the released code's
``layers/mlp_readout_layer.py``)."""

from __future__ import annotations

import torch
from torch import nn

from gnnbench.models.sparse import scatter_max, scatter_mean, scatter_sum, segment_softmax

READOUTS = ("sum", "mean", "max")


class MLPReadout(nn.Module):
    """Linear(d → ⌊d/2⌋) → ReLU → Linear(⌊d/2⌋ → ⌊d/4⌋) → ReLU → Linear(⌊d/4⌋ → out), all with bias."""

    def __init__(self, in_dim: int, out_dim: int, num_hidden: int = 2) -> None:
        super().__init__()
        widths = [in_dim // 2**i for i in range(num_hidden + 1)]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:], strict=True))
        self.out = nn.Linear(widths[-1], out_dim)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """(…, d) → (…, out)."""
        for layer in self.layers:
            h = torch.relu(layer(h))
        return self.out(h)


def pool(h: torch.Tensor, batch: torch.Tensor, num_graphs: int, readout: str) -> torch.Tensor:
    """Graph embeddings: sum, mean or max of each graph's node embeddings."""
    if readout == "sum":
        return scatter_sum(h, batch, num_graphs)
    if readout == "mean":
        return scatter_mean(h, batch, num_graphs)
    if readout == "max":
        return scatter_max(h, batch, num_graphs)
    raise ValueError(f"unknown readout {readout!r}")


class Set2Set(nn.Module):
    """Set2Set(d, processing_steps=1) (Vinyals et al.; the benchmark's GraphTheoryProp graph readout, same
    algorithm as PyG's): q = LSTM(q* = 0); α = softmax over each graph's nodes of ⟨h_v, q⟩; r = Σ α h;
    output [q ‖ r] (2d)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.lstm = nn.LSTM(2 * dim, dim)

    def forward(self, h: torch.Tensor, batch: torch.Tensor, num_graphs: int) -> torch.Tensor:
        """Node embeddings (N, d) and each node's graph ``batch`` (N,) → (num_graphs, 2d)."""
        q_star = h.new_zeros(1, num_graphs, 2 * self.dim)
        q, _ = self.lstm(q_star)  # zero initial state
        q = q.squeeze(0)
        scores = (h * q.index_select(0, batch)).sum(dim=-1)
        alpha = segment_softmax(scores, batch, num_graphs)
        r = scatter_sum(alpha.unsqueeze(-1) * h, batch, num_graphs)
        return torch.cat([q, r], dim=-1)
