"""3WLGNN: Provably Powerful Graph Networks (Maron et al., 2019) as the benchmark runs it, on padded dense
batches (Dwivedi et al., Appendix B.2.2, Eqs. 32–34, and B.2.3, Eqs. 39–40 and 43–46; the released code's
``layers/three_wl_gnn_layers.py`` and ``nets/*/three_wl_gnn_net.py``).

RegularBlock(depth_of_mlp, d_in, d_out, residual) on X (B × d_in × m × m); all convolutions are 1×1:

    M_1 = MLP_1(X),  M_2 = MLP_2(X)         MLP = depth_of_mlp × (Conv → ReLU), d_in → d_out → … → d_out
    mult = M_1 @ M_2                         matrix product over the node dims, per channel
    X' = Conv([X ‖ mult])  (+ Linear_res(X) per position if residual; no activation)

No normalisation and no dropout anywhere: the configs' ``layer_norm`` and ``dropout`` keys are ignored, as
in the original (so they are not required here). The residual is a Linear, applied even when d_in = d_out.
Convolutions (and the per-block graph scores of the head) are Xavier-uniform with zero bias. Module names
match the original (``reg_blocks.i.mlp1.convs.j``, ``skip.conv``, ``res_x``).

Readouts (``L`` blocks of width ``hidden``):

* graph tasks: per block, ``diag_offdiag_maxpool`` → (B, 2·hidden); ``Linear(2·hidden → n_out)`` scores
  summed over the blocks (head style ``per_layer`` on ``Representation.graph_layers``; the input tensor is
  not read). diag_offdiag_maxpool: max_diag = max_i X_ii; val = |max(max_diag) + max(−X)| (one scalar per
  graph, over all its channels); max_offdiag = max_{ij} (X − val·I); output [max_diag ‖ max_offdiag].
* node tasks: per block, column sums (Σ over dim 2) → per-node vectors → ``Linear(hidden → n_classes)``
  summed over blocks (``per_layer`` on ``Representation.layers``).
* TSP (edge task): column sums of [input, block_1..block_L] concatenated per node (C_in + L·hidden) →
  ``MLPReadout(2·Σ)`` on [h_u ‖ h_v] (head style ``mlp`` on ``Representation.nodes``).

Batching (the original runs one graph per forward pass): graphs are zero-padded to the largest one.
Padded rows/columns must stay 0 so that the matrix product's sum over k sees only real nodes: the pair
mask is carried as an extra input channel whose weights are the biases (see ``RegularBlock.forward``), so
no bias reaches a padded position. The max-pools skip padded entries (−inf fill) and compute ``val`` per
graph. A padded batch therefore gives the per-graph results.

Speed (every full-size pass over B × S × n × n counts on a CPU): 1×1 convolutions are batched matrix
products, ReLUs run in place, the residual Linear is folded into the skip convolution (both are linear in
X), and biases cost no extra pass.
"""

from __future__ import annotations

import torch
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.models.base import Architecture, Representation
from gnnbench.models.blocks import is_edge_index, reset_children
from gnnbench.models.dense import DENSE_TASKS, DENSE_UNSUPPORTED, DenseLayout, dense_input, to_dense


def _xavier_conv(d_in: int, d_out: int) -> nn.Conv2d:
    conv = nn.Conv2d(d_in, d_out, kernel_size=1, padding=0, bias=True)
    nn.init.xavier_uniform_(conv.weight)
    nn.init.zeros_(conv.bias)
    return conv


def _with_bias(weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """(S, D) weight and (S,) bias → (S, D + 1) weight for an input whose last channel is the pair mask."""
    return torch.cat([weight.reshape(weight.shape[0], -1), bias.view(-1, 1)], dim=1)


def _bmm(weight: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.bmm(weight.expand(x.shape[0], -1, -1), x)


def _reset_xavier_conv(conv: nn.Conv2d) -> None:
    """:func:`_xavier_conv`'s draws again: the Conv2d default (as its constructor), then Xavier-uniform, bias 0."""
    conv.reset_parameters()
    nn.init.xavier_uniform_(conv.weight)
    nn.init.zeros_(conv.bias)


class MlpBlock(nn.Module):
    """The original's ``MlpBlock``: ``depth_of_mlp`` × (1×1 Conv → ReLU), d_in → d_out → … → d_out."""

    def __init__(self, d_in: int, d_out: int, depth_of_mlp: int) -> None:
        super().__init__()
        self.convs = nn.ModuleList(_xavier_conv(d_in if i == 0 else d_out, d_out) for i in range(depth_of_mlp))

    def reset_parameters(self) -> None:
        """Every convolution Xavier-uniform with zero bias, as the original."""
        for conv in self.convs:
            _reset_xavier_conv(conv)

    def forward(self, inp: torch.Tensor) -> torch.Tensor:
        """(B, D + 1, P) input whose last channel is the pair mask → (B, S, P); the mask channel is carried
        through the hidden convolutions (a weight row that copies it; ReLU keeps 0/1)."""
        h = inp
        last = len(self.convs) - 1
        for i, conv in enumerate(self.convs):
            w = _with_bias(conv.weight, conv.bias)
            if i < last:
                carry = w.new_zeros(1, w.shape[1])
                carry[0, -1] = 1.0
                w = torch.cat([w, carry])
            h = torch.relu_(_bmm(w, h))
        return h


class SkipConnection(nn.Module):
    """The original's ``SkipConnection``: a 1×1 Conv of [X ‖ M₁ @ M₂] (d_in + d_out → d_out), no activation."""

    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.conv = _xavier_conv(d_in, d_out)

    def reset_parameters(self) -> None:
        """The convolution Xavier-uniform with zero bias, as the original."""
        _reset_xavier_conv(self.conv)


class RegularBlock(nn.Module):
    r"""The benchmark's 3WLGNN ``RegularBlock`` (Maron et al.'s provably powerful layer) on dense pair tensors:

        M₁ = MLP₁(X),  M₂ = MLP₂(X)                      (1×1 convolutions with ReLU, per position)
        X' = Conv_skip([X ‖ M₁ @ M₂]) [+ Linear_res(X)]   (matrix product per channel; res if residual)

    Parameters as in the original (1×1 convolutions Xavier-uniform with zero bias, ``res_x`` PyTorch's default);
    the forward pass fuses them (see :meth:`forward`).

    Args:
        depth_of_mlp: 1×1 convolutions per MLP.
        d_in: input channels (the network's first block: 1 + node channels).
        d_out: output channels.
        residual: add a Linear of the input per position.

    Shapes:
        - input: zero-padded X (B, d_in, n, n) and the pair mask (B, 1, n, n); or plain ``(x, edge_index)`` of one
          graph with node features x (N, d_in − 1), whose dense input [Â ‖ diag(x)] is built as the network builds
          it (:func:`~gnnbench.models.dense.dense_input`).
        - output: (B, d_out, n, n) zero-padded; (1, d_out, N, N) for the plain call.
    """

    def __init__(self, depth_of_mlp: int, d_in: int, d_out: int, residual: bool = False) -> None:
        super().__init__()
        self.mlp1 = MlpBlock(d_in, d_out, depth_of_mlp)
        self.mlp2 = MlpBlock(d_in, d_out, depth_of_mlp)
        self.skip = SkipConnection(d_in + d_out, d_out)
        self.res_x = nn.Linear(d_in, d_out) if residual else None  # PyTorch default init, as in the original

    def reset_parameters(self) -> None:
        """Reset both MLPs, the skip convolution and ``res_x`` to their initialisation."""
        reset_children(self)

    def forward(self, x: torch.Tensor, pair_mask: torch.Tensor) -> torch.Tensor:
        """x (B, d_in, n, n) zero-padded, pair_mask (B, 1, n, n) → (B, d_out, n, n) zero-padded.

        The pair mask rides along as an extra input channel and every bias becomes the weight of that
        channel, so biases reach real positions only and padded ones stay exactly 0 without masking
        passes. The residual Linear is linear in X like the skip convolution's X part: one product."""
        if is_edge_index(pair_mask):
            dense = dense_input(x, pair_mask)
            x, pair_mask = dense.x, dense.pair_mask()
        bsz, d, n, _ = x.shape
        s = self.skip.conv.out_channels
        inp = torch.cat([x, pair_mask], dim=1).view(bsz, d + 1, n * n)
        mult = torch.bmm(self.mlp1(inp).view(bsz * s, n, n), self.mlp2(inp).view(bsz * s, n, n))
        skip = self.skip.conv
        w_x, b = skip.weight[:, :d, 0, 0], skip.bias
        if self.res_x is not None:
            w_x, b = w_x + self.res_x.weight, b + self.res_x.bias
        w = torch.cat([w_x, b.view(-1, 1), skip.weight[:, d:, 0, 0]], dim=1)
        return _bmm(w, torch.cat([inp, mult.view(bsz, s, n * n)], dim=1)).view(bsz, s, n, n)


def diag_offdiag_maxpool(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, S, n, n) → (B, 2S): [max_i X_ii ‖ max_ij (X − val·I)] over each graph's real nodes."""
    n = x.shape[-1]
    neg_inf = float("-inf")
    node = mask.unsqueeze(1)  # (B, 1, n)
    pair = (node.unsqueeze(3) & node.unsqueeze(2))  # (B, 1, n, n)
    max_diag = x.diagonal(dim1=2, dim2=3).masked_fill(~node, neg_inf).max(dim=2).values  # (B, S)
    max_neg = (-x).masked_fill(~pair, neg_inf).amax(dim=(1, 2, 3))  # max(−X) per graph
    val = (max_diag.amax(dim=1) + max_neg).abs()  # one scalar per graph
    shifted = x - val.view(-1, 1, 1, 1) * torch.eye(n, dtype=x.dtype, device=x.device)
    max_offdiag = shifted.masked_fill(~pair, neg_inf).flatten(2).max(dim=2).values
    return torch.cat([max_diag, max_offdiag], dim=1)


class ThreeWLGNN(Architecture):
    """L RegularBlocks: C_in → hidden → … → hidden."""

    own_input = True
    readout = "sum"  # only the TSP/edge readout reads per-node vectors; graph tasks pool their own way
    per_layer_init = "xavier"  # the original per-block scorers (FullyConnected / Linear) are Xavier-uniform, bias 0
    tasks = DENSE_TASKS
    unsupported_reason = DENSE_UNSUPPORTED
    required = ("L", "hidden_dim", "depth_of_mlp", "residual")

    def __init__(self, layout: DenseLayout, hidden_dim: int, num_layers: int, depth_of_mlp: int, residual: bool,
                 task: str | None = None) -> None:
        super().__init__()
        self.layout, self.task = layout, task
        widths = [layout.channels] + [hidden_dim] * num_layers
        self.reg_blocks = nn.ModuleList(RegularBlock(depth_of_mlp, a, b, residual)
                                        for a, b in zip(widths[:-1], widths[1:], strict=True))
        self.input_width, self.out_width = layout.channels, sum(widths)
        self.layer_widths = [hidden_dim] * num_layers
        self.graph_layer_widths = [2 * hidden_dim] * num_layers

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta) -> ThreeWLGNN:
        """From ``hidden_dim``, ``L``, ``depth_of_mlp`` and ``residual``, with the dense layout of the config on the
        dataset (:class:`~gnnbench.models.dense.DenseLayout`)."""
        return cls(DenseLayout.from_config(cfg, meta), cfg["hidden_dim"], cfg["L"], cfg["depth_of_mlp"],
                   cfg["residual"], meta.task)

    def head_style(self, task: str) -> str:
        """``per_layer`` (per-block scores, summed), except ``mlp`` on the concatenated column sums for TSP."""
        return "mlp" if task == "edge_classification" else "per_layer"

    def forward(self, h: torch.Tensor | None, e: torch.Tensor | None, batch: GraphBatch) -> Representation:
        """The L blocks on the batch's padded dense tensor; the representation holds the per-node column sums of
        [input, block_1, …, block_L], each block's per-node sums and, for graph tasks, each block's
        ``diag_offdiag_maxpool``."""
        dense = to_dense(batch, self.layout, self.reg_blocks[0].skip.conv.weight.dtype)
        pair_mask = dense.pair_mask()
        graph_level = self.task is None or self.task.startswith("graph")  # compute only what the head reads
        x = dense.x
        column_sums, layers, graph_layers = [x.sum(2)], [], []
        for block in self.reg_blocks:
            x = block(x, pair_mask)
            column_sums.append(x.sum(2))
            layers.append(dense.per_node(column_sums[-1]))
            if graph_level:
                graph_layers.append(diag_offdiag_maxpool(x, dense.mask))
        return Representation(dense.per_node(torch.cat(column_sums, dim=1)), layers, graph_layers or None)
