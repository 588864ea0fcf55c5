"""Ring-GNN (Chen et al., 2019) as the benchmark runs it, on padded dense batches (Dwivedi et al., Appendix B.2.2,
Eqs. 35–36, and B.2.3, Eqs. 37–38 and 41–42; the released code's ``layers/ring_gnn_equiv_layer.py`` and
``nets/*/ring_gnn_net.py``).

Equivariant layer ``RingGNNEquivLayer(d_in, d_out, radius=2)`` on X (B × d_in × m × m), m = the graph's node
count; the 15 linear-equivariant basis operations (``inf`` normalisation; row sum = Σ over the last index,
column sum = Σ over the second-to-last one):

    op1 diag(diag X)            op2 diag ← tr X / m          op3 diag ← row sums / m     op4 diag ← col sums / m
    op5 diag ← ΣX / m²          op6 [i,j] = colsum_i / m     op7 [i,j] = rowsum_i / m    op8 [i,j] = colsum_j / m
    op9 [i,j] = rowsum_j / m    op10 X                       op11 Xᵀ                     op12 [i,j] = X_ii
    op13 [i,j] = X_jj           op14 tr X / m everywhere     op15 ΣX / m² everywhere

    Y_k[s] = Σ_{d,b} c_k[d, s, b] · op_b[d]                                  (k = 00, 10, 11)
    out0 = Y_00 + I·diag_bias_0,   out1 = Y_11 @ (Y_10 + I·diag_bias_1)   (matrix product per channel)
    X' = Dropout(ReLU(switch_0·out0 + switch_1·out1 + all_bias) [+ Linear_res(X) per position])

Quirks reproduced: ``diag_bias_2`` (radius 2) is created but never used, and counted; the learnable
``switch`` starts at [1, k2_init = 0.5/avg_node_num]; the residual is a Linear (applied even when d_in =
d_out); the optional LayerNorm (never used by a config) normalises each channel over all m×m positions
(biased variance, eps 1e-6). Parameter names match the original (``coeffs_list``, ``diag_bias_list``,
``all_bias``, ``switch``, ``ln_x``, ``res_x``). Coefficients are randn·√(2/(d_in + d_out)), biases 0.

``avg_node_num`` = ⌈mean number of nodes of the training graphs⌉ in the original. Decision
(docs/protocols/benchmarking-gnns.md#ringgnns-initial-switch): the dataset
metadata carries no such field, so it is taken from ``meta.statistics["train"]["nodes_per_graph"]["mean"]``,
else ``meta.statistics["all"]``, else 1.0. It only sets the initial value of ``switch[1]``.

Batching (the original runs one graph per forward pass): graphs are zero-padded to the largest one; m is
each graph's TRUE node count, and every operation that could write into padded rows/columns (the
broadcast ops 2, 5–9, 12–15, the diagonal biases, ``all_bias``, the LayerNorm, the residual's bias) is
masked, so the matrix product and the sums see only real nodes and a padded batch gives the per-graph
results. Speed: the 15 ops are never materialised (see ``RingGNNEquivLayer.forward``); per coefficient tensor,
one batched product mixes the channels of [X ‖ Xᵀ], the broadcast ops form a rank-2 matrix added by one
``baddbmm`` (which also leaves padding at 0 for free), the diagonal ops add a vector to the diagonal; the
switch is folded into the coefficients and level 1's product is accumulated onto level 0 by one ``baddbmm``.
``radius`` 1 is supported as in the original's loop; larger radii would index past the two-entry switch
there, so they are refused.

Readout: per-node vectors = column sums (Σ over dim 2, real nodes only) of each of [input, out_1..out_L],
concatenated (width Σ depth) → ``Representation.nodes``; graph tasks sum-pool them (= Σ over both node dims,
the original's readout) into ``MLPReadout(Σ depth)``, node tasks apply ``MLPReadout`` per node, TSP scores
[h_u ‖ h_v] with ``MLPReadout(2 Σ depth)``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.models.base import Architecture, Representation
from gnnbench.models.blocks import is_edge_index
from gnnbench.models.dense import DENSE_TASKS, DENSE_UNSUPPORTED, DenseLayout, dense_input, to_dense

BASIS = 15
# op index (0-based) of each basis op, by the part of the output it fills:
_DIAG_VECTOR = (0, 2, 3)  # diag ← [diag X, row sums/m, col sums/m]
_ROW_VECTOR = (11, 6, 5)  # [i, j] ← f_i for f = [diag X, row sums/m, col sums/m]
_COL_VECTOR = (12, 8, 7)  # [i, j] ← f_j
_DIAG_SCALAR = (1, 4)  # diag ← [tr X/m, ΣX/m²]
_ALL_SCALAR = (13, 14)  # everywhere ← [tr X/m, ΣX/m²]


def _sizes(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return mask.sum(1).to(x.dtype).view(-1, 1, 1)  # (B, 1, 1) true node counts m


def ring_basis_ops(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The 15 basis operations, materialised: (B, D, m, m) → (B, D, 15, m, m), zero on padded rows/columns.

    Reference form (tests, documentation); the layer computes the same contraction without it."""
    m = _sizes(x, mask)
    fm = mask.to(x.dtype).unsqueeze(1)  # (B, 1, n)
    row_mask, col_mask = fm.unsqueeze(3), fm.unsqueeze(2)  # (B, 1, n, 1), (B, 1, 1, n)
    n = x.shape[-1]
    diag = x.diagonal(dim1=2, dim2=3)
    trace = diag.sum(2, keepdim=True) / m  # (B, D, 1)
    rows, cols = x.sum(3), x.sum(2)
    total = rows.sum(2, keepdim=True) / m**2
    ops = [
        torch.diag_embed(diag),
        torch.diag_embed(trace.expand(-1, -1, n) * fm),
        torch.diag_embed(rows / m),
        torch.diag_embed(cols / m),
        torch.diag_embed(total.expand(-1, -1, n) * fm),
        (cols / m).unsqueeze(3) * col_mask,
        (rows / m).unsqueeze(3) * col_mask,
        (cols / m).unsqueeze(2) * row_mask,
        (rows / m).unsqueeze(2) * row_mask,
        x,
        x.transpose(2, 3),
        diag.unsqueeze(3) * col_mask,
        diag.unsqueeze(2) * row_mask,
        trace.unsqueeze(3) * row_mask * col_mask,
        total.unsqueeze(3) * row_mask * col_mask,
    ]
    return torch.stack(ops, dim=2)


class _LayerNorm(nn.Module):
    """The original's LayerNorm: per channel over all m×m positions of a graph, biased variance, eps 1e-6."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.a = nn.Parameter(torch.ones(1, 1, dim))
        self.b = nn.Parameter(torch.zeros(1, 1, dim))

    def forward(self, x: torch.Tensor, pair_mask: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        count = (m**2).view(-1, 1, 1, 1)
        mean = x.sum((2, 3), keepdim=True) / count  # padded entries are 0
        var = (((x - mean) * pair_mask) ** 2).sum((2, 3), keepdim=True) / count
        a, b = self.a.view(1, -1, 1, 1), self.b.view(1, -1, 1, 1)
        return (a * (x - mean) / torch.sqrt(var + 1e-6) + b) * pair_mask


def _bmm(weight: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Per-position channel mixing as one batched product: (S, D) weight, (B, D, P) input → (B, S, P)."""
    return torch.bmm(weight.expand(x.shape[0], -1, -1), x)


class RingGNNEquivLayer(nn.Module):
    r"""The benchmark's ``RingGNNEquivLayer`` on dense pair tensors (the 15 linear-equivariant basis ops of the
    module docstring, ``inf`` normalisation by the true node count m):

        Y_k = Σ_{d,b} c_k[d, ·, b] · op_b(X)[d]                              (k = 00, 10, 11)
        out = s_0 (Y_00 + I b_0) + s_1 Y_11 @ (Y_10 + I b_1) + all_bias        (matrix product per channel)
        X'  = Dropout(ReLU(LN(out)) [+ Linear_res(X) per position])           (LN if layer_norm, res if residual)

    Coefficients randn·√(2/(d_in + d_out)), biases 0, switch [1, k2_init]; ``diag_bias_list[2]`` exists unused.

    Args:
        d_in: input channels (the network's first layer: 1 + node channels).
        d_out: output channels.
        layer_norm: apply the original's per-channel LayerNorm.
        residual: add a Linear of the input per position.
        dropout: dropout probability on the output.
        radius: 1 or 2 (factors per output).
        k2_init: initial ``switch[1]``.

    Shapes:
        - input: zero-padded X (B, d_in, n, n) and the node mask (B, n); or plain ``(x, edge_index)`` of one graph
          with node features x (N, d_in − 1), whose dense input [Â ‖ diag(x)] is built as the network builds it
          (:func:`~gnnbench.models.dense.dense_input`).
        - output: (B, d_out, n, n) zero-padded; (1, d_out, N, N) for the plain call.
    """

    def __init__(self, d_in: int, d_out: int, layer_norm: bool, residual: bool, dropout: float, radius: int = 2,
                 k2_init: float = 0.1) -> None:
        super().__init__()
        if radius not in (1, 2):
            raise ValueError(f"radius must be 1 or 2 (the learnable switch has two entries), got {radius}")
        self.radius, self.dropout, self.d_out = radius, dropout, d_out
        self.k2_init, self.coeff_scale = float(k2_init), math.sqrt(2.0 / (d_in + d_out))
        levels = radius * (radius + 1) // 2
        self.diag_bias_list = nn.ParameterList(nn.Parameter(torch.zeros(1, d_out, 1, 1)) for _ in range(levels))
        self.all_bias = nn.Parameter(torch.zeros(1, d_out, 1, 1))
        scale = math.sqrt(2.0 / (d_in + d_out))
        self.coeffs_list = nn.ParameterList(nn.Parameter(torch.randn(d_in, d_out, BASIS) * scale)
                                            for _ in range(levels))
        self.switch = nn.ParameterList([nn.Parameter(torch.tensor([1.0])), nn.Parameter(torch.tensor([k2_init]))])
        self.ln_x = _LayerNorm(d_out) if layer_norm else None
        self.res_x = nn.Linear(d_in, d_out) if residual else None

    def reset_parameters(self) -> None:
        """The constructor's initialisation, in its order of random draws (coefficients, then the residual)."""
        with torch.no_grad():
            for bias in (*self.diag_bias_list, self.all_bias):
                bias.zero_()
            for coeffs in self.coeffs_list:
                coeffs.normal_().mul_(self.coeff_scale)
            self.switch[0].fill_(1.0)
            self.switch[1].fill_(self.k2_init)
            if self.ln_x is not None:
                self.ln_x.a.fill_(1.0)
                self.ln_x.b.zero_()
        if self.res_x is not None:
            self.res_x.reset_parameters()

    def _factors(self) -> list[tuple[int, int, torch.Tensor, torch.Tensor | None]]:
        """(level i, position j, coefficients (D, S, 15), diagonal bias (S,) or None) of every factor, with the
        level's switch folded into its outermost (last) factor: s_i·(Y_ii @ … @ (Y_i0 + I b)) is linear in it."""
        factors = []
        for i in range(self.radius):
            for j in range(i + 1):
                k = i * (i + 1) // 2 + j
                coeffs = self.coeffs_list[k]
                bias = self.diag_bias_list[k].view(-1) if j == 0 else None  # j > 0: bias unused (original)
                if j == i:
                    coeffs = coeffs * self.switch[i]
                    bias = None if bias is None else bias * self.switch[i]
                factors.append((i, j, coeffs, bias))
        return factors

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x (B, d_in, n, n) zero-padded, mask (B, n) → (B, d_out, n, n) zero-padded; or the plain
        ``(x, edge_index)`` (class docstring).

        Each factor Y = Σ_b c[·, ·, b] op_b(X) is assembled without materialising the 15 ops: one product mixes
        the channels of [X ‖ Xᵀ] (ops 10, 11); the diagonal ops (1–5) add a vector on the diagonal; the row,
        column and constant broadcasts (6–9, 12–15) form the rank-2 matrix r_i·1_j + 1_i·c_j over real nodes,
        added by the same ``baddbmm``."""
        if is_edge_index(mask):
            dense = dense_input(x, mask)
            x, mask = dense.x, dense.mask
        bsz, d, n, _ = x.shape
        s = self.d_out
        fm = mask.to(x.dtype)  # (B, n)
        m = fm.sum(1).view(-1, 1, 1)
        diag = x.diagonal(dim1=2, dim2=3)
        rows, cols = x.sum(3) / m, x.sum(2) / m
        vectors = torch.cat([diag, rows, cols], dim=1)  # (B, 3D, n), feature-major
        scalars = torch.cat([diag.sum(2), rows.sum(2)], dim=1) / m.view(-1, 1)  # (B, 2D): tr X/m, ΣX/m²
        both = torch.cat([x, x.transpose(2, 3)], dim=1).view(bsz, 2 * d, n * n)
        ones = fm.unsqueeze(1).expand(bsz, s, n)

        def weights(coeffs: torch.Tensor, ops: tuple[int, ...]) -> torch.Tensor:  # (S, len(ops)·D), (f, d)
            return coeffs[..., list(ops)].permute(1, 2, 0).reshape(s, -1)

        output = inner = None
        for i, j, coeffs, bias in self._factors():
            full = _bmm(weights(coeffs, (9, 10)), both).view(bsz * s, n, n)
            on_diag, on_rows, on_cols = _bmm(torch.cat([weights(coeffs, _DIAG_VECTOR), weights(coeffs, _ROW_VECTOR),
                                                        weights(coeffs, _COL_VECTOR)]), vectors).split(s, dim=1)
            diag_scalar, everywhere = (scalars @ torch.cat([weights(coeffs, _DIAG_SCALAR),
                                                             weights(coeffs, _ALL_SCALAR)]).t()).split(s, dim=1)
            if bias is not None:
                diag_scalar = diag_scalar + bias
            if i == 0:  # all_bias belongs to the output, which level 0 starts
                everywhere = everywhere + self.all_bias.view(1, -1)
            half = everywhere.unsqueeze(2) / 2
            left = torch.stack([(on_rows + half) * ones, ones], dim=3)  # (B, S, n, 2)
            right = torch.stack([ones, (on_cols + half) * ones], dim=2)  # (B, S, 2, n)
            y = torch.baddbmm(full, left.view(bsz * s, n, 2), right.view(bsz * s, 2, n))
            y.diagonal(dim1=1, dim2=2).add_(((on_diag + diag_scalar.unsqueeze(2)) * ones).view(bsz * s, n))
            if i == 0:  # level 0 is the single factor s_0·(Y_00 + I b_0) (+ all_bias)
                output = y
            elif j == 0:
                inner = y  # Y_10 + I b_1
            else:  # output += s_1·Y_11 @ (Y_10 + I b_1), in one kernel
                output = torch.baddbmm(output, y, inner)
        output = output.view(bsz, s, n, n)
        if self.ln_x is not None:
            pair_mask = (fm.unsqueeze(2) * fm.unsqueeze(1)).unsqueeze(1)
            output = torch.relu(self.ln_x(output, pair_mask, m.view(-1)))
        else:
            output = torch.relu_(output)
        if self.res_x is not None:  # Linear per position; its bias reaches real positions only (mask channel)
            pair_mask = (fm.unsqueeze(2) * fm.unsqueeze(1)).view(bsz, 1, n * n)
            res_in = torch.cat([x.view(bsz, d, n * n), pair_mask], dim=1)
            res_w = torch.cat([self.res_x.weight, self.res_x.bias.view(-1, 1)], dim=1)
            output = torch.baddbmm(output.view(bsz, s, n * n), res_w.expand(bsz, -1, -1), res_in).view(bsz, s, n, n)
        return F.dropout(output, self.dropout, self.training) if self.dropout > 0 else output


def average_node_count(meta: DatasetMeta) -> float:
    """⌈mean nodes per training graph⌉ from the dataset statistics (else all graphs; else 1.0)."""
    for part in ("train", "all"):
        mean = meta.statistics.get(part, {}).get("nodes_per_graph", {}).get("mean")
        if mean:
            return float(math.ceil(mean))
    return 1.0


class RingGNN(Architecture):
    """L equivariant layers: C_in → hidden → … → hidden; per-node column sums of every layer's tensor."""

    own_input = True
    readout = "sum"  # Σ over both node dims = sum-pooling of the per-node column sums
    tasks = DENSE_TASKS
    unsupported_reason = DENSE_UNSUPPORTED
    required = ("L", "hidden_dim", "radius", "residual", "layer_norm", "dropout")

    def __init__(self, layout: DenseLayout, hidden_dim: int, num_layers: int, radius: int, residual: bool,
                 layer_norm: bool, dropout: float, avg_node_num: float = 1.0) -> None:
        super().__init__()
        self.layout = layout
        self.depth = [layout.channels] + [hidden_dim] * num_layers
        self.equi_modulelist = nn.ModuleList(
            RingGNNEquivLayer(a, b, layer_norm, residual, dropout, radius, k2_init=0.5 / avg_node_num)
            for a, b in zip(self.depth[:-1], self.depth[1:], strict=True))
        self.input_width, self.out_width = layout.channels, sum(self.depth)

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta) -> RingGNN:
        """From ``hidden_dim``, ``L``, ``radius``, ``residual``, ``layer_norm`` and ``dropout``, with the dense layout
        of the config on the dataset and its mean node count (module docstring)."""
        return cls(DenseLayout.from_config(cfg, meta), cfg["hidden_dim"], cfg["L"], cfg["radius"], cfg["residual"],
                   cfg["layer_norm"], cfg["dropout"], average_node_count(meta))

    def forward(self, h: torch.Tensor | None, e: torch.Tensor | None, batch: GraphBatch) -> Representation:
        """The L layers on the batch's padded dense tensor; node embeddings = the column sums of [input, out_1, …,
        out_L], concatenated (N, Σ depth)."""
        dense = to_dense(batch, self.layout, self.equi_modulelist[0].all_bias.dtype)
        x = dense.x
        column_sums = [x.sum(2)]
        for layer in self.equi_modulelist:
            x = layer(x, dense.mask)
            column_sums.append(x.sum(2))
        return Representation(dense.per_node(torch.cat(column_sums, dim=1)))
