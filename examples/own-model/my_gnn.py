"""MixJK: GIN layers whose output is a learned mix of every layer's node representations.

Jumping knowledge (Xu et al., 2018) reads node representations from all layers instead of the last one only; here the
readout is a softmax-weighted sum with one learnable weight per layer, so the network itself decides how much of the
shallow (local) and deep (wide-receptive-field) representations to keep. A backbone in gnnbench's sense
(docs/model-contract.md): ``forward(x, edge_index)`` returns node representations; gnnbench adds the dataset's input
encoders and the benchmark's task head (node scores, or a pooled graph score).
"""

import torch
from torch import nn
from torch_geometric.nn import GINConv


class MixJK(nn.Module):
    def __init__(self, in_channels: int, hidden_channels: int = 64, num_layers: int = 3, dropout: float = 0.0):
        super().__init__()
        self.input = nn.Linear(in_channels, hidden_channels)
        self.convs = nn.ModuleList(
            GINConv(nn.Sequential(nn.Linear(hidden_channels, hidden_channels), nn.ReLU(),
                                  nn.Linear(hidden_channels, hidden_channels)), train_eps=True)
            for _ in range(num_layers))
        self.norms = nn.ModuleList(nn.BatchNorm1d(hidden_channels) for _ in range(num_layers))
        self.mix = nn.Parameter(torch.zeros(num_layers + 1))  # the twist: one logit per layer (and the input)
        self.dropout = dropout

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        h = self.input(x)
        layers = [h]
        for conv, norm in zip(self.convs, self.norms, strict=True):
            h = h + torch.relu(norm(conv(h, edge_index)))  # residual GIN layer
            h = nn.functional.dropout(h, self.dropout, self.training)
            layers.append(h)
        weights = torch.softmax(self.mix, dim=0)
        return torch.einsum("l,lnh->nh", weights, torch.stack(layers))
