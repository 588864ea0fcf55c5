"""The network every baseline of Platonov et al. shares (released ``Model`` of model.py, ``ResidualModuleWrapper``
and ``FeedForwardModule`` of modules.py):

    h⁽⁰⁾ = GELU(dropout(W_in [inputs] + b_in))                                    input layer (:mod:`.inputs`)
    h ← h + M(norm(h))     for every residual module M, ``num_layers`` times the family's modules
    out = W_out norm(h) + b_out                                                  (N, C); C = 1 for two classes

The family's modules per layer (:attr:`ResidualNetwork.blocks`): ResNet [FeedForward], GCN [GCNModule], SAGE
[SAGEModule], GAT [GATModule], GAT-sep [GATSepModule], GT [TransformerAttentionModule, FeedForward], GT-sep
[TransformerAttentionSepModule, FeedForward]; every module but the transformer attention ends in the feed-forward
block

    FeedForward(x) = dropout(W₂ GELU(dropout(W₁ x + b₁)) + b₂),   W₁: (m·d, k·d), W₂: (d, m·d)

(m = ``hidden_dim_multiplier``, k = 2 where a module feeds it [x ‖ message], else 1). ``norm`` is
``normalization``: None (identity), LayerNorm or BatchNorm (BatchNorm1d), a separate one per module and one before
the output. Module, parameter and buffer names and the order in which parameters are created are the released ones,
so a released ``state_dict`` loads and the same seed gives the same initial weights.

Graph: GCN, GAT and GT read the graph with a self loop added to every node (the released ``Dataset`` calls
``dgl.add_self_loop`` for them), the others the graph as given; binary classification has one output (the
released ``num_targets``), trained with a binary cross-entropy on it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from gnnbench.models.heterophily.inputs import InputLinear
from gnnbench.models.sparse import add_self_loops

NORMALIZATIONS = {"None": nn.Identity, "LayerNorm": nn.LayerNorm, "BatchNorm": nn.BatchNorm1d}


def normalization_class(name: str | None) -> type[nn.Module]:
    """The normalisation class called ``name`` (None | LayerNorm | BatchNorm; Python None is "None")."""
    name = "None" if name is None else name
    if name not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {', '.join(NORMALIZATIONS)}, got {name!r}")
    return NORMALIZATIONS[name]


class FeedForward(nn.Module):
    """The released ``FeedForwardModule``: x ↦ dropout(W₂ GELU(dropout(W₁ x + b₁)) + b₂) with W₁ (⌊m·d⌋,
    ⌊k·d⌋), W₂ (d, ⌊m·d⌋) (k = ``input_dim_multiplier``, m = ``hidden_dim_multiplier``). The residual block of
    ResNet and GT's second module; runs on (x, edge_index) like the graph modules (the graph unused)."""

    def __init__(self, dim: int, hidden_dim_multiplier: float = 1.0, dropout: float = 0.0,
                 input_dim_multiplier: int = 1) -> None:
        super().__init__()
        hidden = int(dim * hidden_dim_multiplier)
        if hidden < 1:
            raise ValueError(f"hidden_dim_multiplier {hidden_dim_multiplier} leaves the feed-forward block "
                             f"{hidden} units wide")
        self.linear_1 = nn.Linear(int(dim * input_dim_multiplier), hidden)
        self.dropout_1 = nn.Dropout(dropout)
        self.act = nn.GELU()
        self.linear_2 = nn.Linear(hidden, dim)
        self.dropout_2 = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor | None = None) -> torch.Tensor:
        """(N, dim) from (N, k·dim)."""
        return self.dropout_2(self.linear_2(self.act(self.dropout_1(self.linear_1(x)))))


class Residual(nn.Module):
    """The released ``ResidualModuleWrapper``: x ↦ x + module(norm(x), edge_index)."""

    def __init__(self, module: nn.Module, norm: nn.Module) -> None:
        super().__init__()
        self.normalization = norm  # created first, as the released wrapper does
        self.module = module

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return x + self.module(self.normalization(x), edge_index)


class ResidualNetwork(nn.Module):
    """The released ``Model`` (module docstring) with the residual modules :attr:`blocks` of one family.
    ``in_features``: F, the width of the node features; ``num_outputs``: classes (2 → one output); ``num_nodes``:
    the node count of the graph, needed by identity and adjacency inputs. The other arguments are the released
    train.py's, with its defaults. ``forward(batch)`` → (N, C) scores at every node of the batch; the network also
    runs on a plain ``(x, edge_index)``."""

    blocks: tuple[type[nn.Module], ...] = ()  # the residual modules of one layer (the released MODULES[name])
    self_loops = False  # the released Dataset adds a self loop to every node for GCN, GAT and GT
    attention = False  # splits hidden_dim into num_heads heads
    tasks = ("node_classification",)
    own_readout = False

    def __init__(self, in_features: int, num_outputs: int, *, num_layers: int = 5, hidden_dim: int = 512,
                 hidden_dim_multiplier: float = 1.0, num_heads: int = 8, normalization: str | None = "LayerNorm",
                 dropout: float = 0.2, input_features: Sequence[str] = ("original",),
                 num_nodes: int | None = None) -> None:
        super().__init__()
        norm = normalization_class(normalization)
        if num_layers < 1 or hidden_dim < 1:
            raise ValueError(f"num_layers and hidden_dim must be at least 1, got {num_layers} and {hidden_dim}")
        if self.attention and num_heads < 1:
            raise ValueError(f"num_heads must be at least 1, got {num_heads}")
        if self.attention and hidden_dim % num_heads:
            raise ValueError(f"hidden_dim ({hidden_dim}) must be a multiple of num_heads ({num_heads})")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.input_linear = InputLinear(in_features, hidden_dim, input_features, num_nodes)
        self.dropout = nn.Dropout(dropout)
        self.act = nn.GELU()
        settings = dict(dim=hidden_dim, hidden_dim_multiplier=hidden_dim_multiplier, num_heads=num_heads,
                        dropout=dropout)
        self.residual_modules = nn.ModuleList(self._residual(block, norm, settings)
                                              for _ in range(num_layers) for block in self.blocks)
        self.output_normalization = norm(hidden_dim)
        self.output_linear = nn.Linear(hidden_dim, 1 if num_outputs == 2 else num_outputs)
        self.aux_loss: torch.Tensor | float = 0.0
        self._loops: tuple[tuple | None, torch.Tensor | None] = (None, None)

    @staticmethod
    def _residual(block: type[nn.Module], norm: type[nn.Module], settings: dict) -> Residual:
        normalisation = norm(settings["dim"])  # before the module: the released creation order
        if block is FeedForward:
            module = FeedForward(settings["dim"], settings["hidden_dim_multiplier"], settings["dropout"])
        else:
            module = block(**settings)
        return Residual(module, normalisation)

    def graph(self, edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
        """The edges the modules read: ``edge_index`` with one self loop appended per node for GCN, GAT and GT
        (computed once per graph)."""
        if not self.self_loops:
            return edge_index
        key = (edge_index.data_ptr(), edge_index._version, tuple(edge_index.shape), num_nodes)
        if key != self._loops[0]:
            self._loops = (key, add_self_loops(edge_index, num_nodes))
        return self._loops[1]

    def forward(self, batch, edge_index: torch.Tensor | None = None) -> torch.Tensor:
        """(N, C) scores from a batch (its ``x`` and ``edge_index``), or from node features ``x`` and
        ``edge_index`` given as ``forward(x, edge_index)``."""
        if edge_index is None:
            x, edge_index = batch.x, batch.edge_index
            if x is None:  # identity or adjacency inputs only (the model checks that these are all it reads)
                x = torch.zeros(batch.num_nodes, 0, device=edge_index.device)
        else:
            x = batch
        x = x.float() if not x.is_floating_point() else x
        num_nodes = x.shape[0]
        h = self.act(self.dropout(self.input_linear(x, edge_index)))
        graph = self.graph(edge_index, num_nodes)
        for module in self.residual_modules:
            h = module(h, graph)
        return self.output_linear(self.output_normalization(h))
