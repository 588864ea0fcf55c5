"""Grouped products of R members laid side by side in the feature dimension (the wide stacks of
:mod:`gnnbench.training.wide`): the one tensor operation their wide forms need, beside the layers whose wide forms use
it (``GCNLayer``, the GatedGCN layers: their ``WIDE_FORM``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


class _GroupedLinear(torch.autograd.Function):
    """y[:, r·out:(r+1)·out] = x[:, r·in:(r+1)·in] W_rᵀ + b_r for every member r, forward and backward as batched
    products whose operands and results are strided views of the (M, R·in) and (M, R·out) tensors (BLAS reads and
    writes them in place): no transposed copies, unlike autograd's bmm of transposed views (three (M, R·C) copies per
    call, ~25 % of the layer's time on ENZYMES/ZINC-sized batches). Same products, so the same values."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        members, out_width, in_width = weight.shape
        rows = x.shape[0]
        grouped = x.view(rows, members, in_width).transpose(0, 1)  # (R, M, in)
        y = x.new_empty(rows, members * out_width)
        y_grouped = y.view(rows, members, out_width).transpose(0, 1)
        if bias is None:
            torch.bmm(grouped, weight.transpose(1, 2), out=y_grouped)
        else:
            torch.baddbmm(bias.unsqueeze(1), grouped, weight.transpose(1, 2), out=y_grouped)
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        return y

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        x, weight = ctx.saved_tensors
        members, out_width, in_width = weight.shape
        rows = x.shape[0]
        grad = grad.contiguous()
        grad_grouped = grad.view(rows, members, out_width).transpose(0, 1)  # (R, M, out)
        grad_x = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_x = grad.new_empty(rows, members * in_width)
            torch.bmm(grad_grouped, weight, out=grad_x.view(rows, members, in_width).transpose(0, 1))
        if ctx.needs_input_grad[1]:
            grad_weight = torch.bmm(grad_grouped.transpose(1, 2), x.view(rows, members, in_width).transpose(0, 1))
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = grad.view(rows, members, out_width).sum(0)
        return grad_x, grad_weight, grad_bias


def wide_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``nn.Linear`` of every member at once: ``weight`` (R, out, in), ``bias`` (R, out) or None; ``x`` (..., in)
    shared by the members or (..., R·in) wide. Returns (..., R, out) (member-major; ``flatten(-2)`` gives the wide
    (..., R·out))."""
    members, out_width, in_width = weight.shape
    lead = x.shape[:-1]
    if x.shape[-1] == in_width:  # shared input: one product to R·out
        flat_bias = bias.reshape(-1) if bias is not None else None
        return F.linear(x, weight.reshape(members * out_width, in_width), flat_bias).unflatten(-1, (members,
                                                                                                    out_width))
    if x.shape[-1] != members * in_width:
        raise RuntimeError(f"wide Linear: input width {x.shape[-1]} is neither {in_width} (shared) nor "
                           f"{members}·{in_width} (wide)")
    out = _GroupedLinear.apply(x.reshape(-1, members * in_width).contiguous(), weight, bias)
    return out.view(*lead, members, out_width)


def wide_matmul(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``x @ W_r`` for every member: ``weight`` (R, in, out), ``x`` (M, R·in) (or (M, in) shared) → (M, R·out)."""
    return wide_linear(x, weight.transpose(1, 2), None).flatten(-2)
