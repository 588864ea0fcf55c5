"""R models of one architecture trained at once as one *wide* model: the members side by side in the feature
dimension, without ``torch.func``/vmap.

Every activation of the wide model is (..., R·C): member r owns the columns [r·C, (r+1)·C). Message passing,
pooling, element-wise operations, activations and any module without parameters act on each column separately, so
they run unchanged and are exactly per member. Only the layers that mix channels get a wide form (the template — a
deep copy of the first member — keeps its code; its leaf modules change class and their tensors become the members'
tensors stacked on a new dim 0):

==================  =====================================================================================
``nn.Linear``       weight (R, out, in), bias (R, out). Decided at every call from the input's width: ``in``
                    (an input shared by all members, e.g. the raw node features) → one product in → R·out;
                    R·in (wide) → one grouped product, ``baddbmm`` over (R, M, in) × (R, in, out) on strided
                    views (no copies, also in the backward). Code that reads ``.weight`` directly sees the
                    equivalent block-diagonal (R·out, R·in) matrix (exact, but R times the arithmetic);
                    ``in_features``/``out_features`` are R·in and R·out.
``nn.BatchNorm1d``  R·C channels: weight/bias (R, C), running statistics (R, C) per member, ``num_batches_tracked``
                    (R,); members must agree on ``momentum``, ``eps``, ``affine``, ``track_running_stats``.
``nn.LayerNorm``    normalised per member group of C (``normalized_shape`` (C,) only).
``nn.Embedding``    a table (K, R·C) built from (R, K, C) at each call (one row lookup gives every member's row).
``nn.Dropout``      per-member rates (R,), i.e. per-channel rates of the wide input (module's training flag).
scalar tensors      a parameter or buffer of shape (1,) held directly by a module (GIN's ε) becomes (R, 1); the
                    module reads it expanded over its member's C channels, (R·C,), C = the member width of the
                    first widened layer below that module (GIN: its MLP's input width).
==================  =====================================================================================

Hand-written forms (:func:`register_wide_form`) replace methods of classes whose code reads weight matrices
directly: the benchmark's ``GCNLayer`` (its own ``weight``/``bias``), the GatedGCN layers' fused A/B/D/E projection
(one grouped product instead of the block-diagonal matrix), the standard GatedGCN layer's forward (its fused edge
function would multiply every edge by C's block-diagonal matrix; the wide form is the same formula in autograd
operations — float rounding apart — at the price of the memory that function saves) and the isotropic layer's.
Anything else — a leaf module of another type holding tensors, a tensor of another shape held directly by a module,
members that differ in structure (modules, tensor names, shapes, dtypes, trainability) or in any non-tensor
attribute other than a Dropout's ``p`` — raises :class:`NotWidenable` with a one-line reason naming the module; code
that mixes the members' channels (e.g. ``x.view(-1, heads, C)`` as GAT does) is caught by :func:`check_widened`, a
float64 dry run that compares every member's own forward and gradients with its block of the wide model's.

What it saves on a CPU is what R models pay per operation (Python, dispatch, the optimiser's per-tensor work); the
arithmetic stays, and the wide tensors are R times larger (they leave the caches sooner) and the grouped products
are slower per flop than R plain ones, so the gain shrinks as batches grow (``benchmarks/wide_stack_speed.py``).

Random draws: a Dropout (module or ``F.dropout`` in the model's code) draws one mask of the *wide* shape per call
from the global generator; member r's mask is its block. So the members' masks are independent of each other, but
no member sees the masks its separate run would draw (not even member 0: its block is not the first elements of the
draw); with dropout > 0, members equal separate runs in distribution, not in values. Equal rates in all members use
``F.dropout`` on the wide tensor (torch's Bernoulli draw); different rates draw ``torch.rand`` of the wide shape and
keep an entry iff its draw ≥ its member's rate, scaling kept entries by 1/(1 − rate).

Every parameter and buffer of a :class:`WideStack` holds the member on dim 0 (shape (R, *the member's shape*)), so
``member_state_dict(r)`` is row r of every tensor, :meth:`WideStack.keep` selects rows, and :class:`WideOptimizer`
(torch's Adam with coupled L2, or SGD with momentum) broadcasts per-member learning rates and weight decays (R,)
over each tensor's rows with ``torch._foreach_*`` ops over all parameters at once; :func:`clip_members` is
``clip_grad_norm_`` per member.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from unittest import mock

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.models.blocks import cached_structure, post_aggregation
from gnnbench.models.gated_gcn import GatedGCNLayer, GatedGCNLayerIsotropic, _call_order, _LayerBase
from gnnbench.models.gcn import GCNLayer, gcn_adjacency
from gnnbench.models.sparse import scatter_sum, unit_adjacency

_CLIP_EPS = 1e-6  # torch.nn.utils.clip_grad_norm_'s


class NotWidenable(Exception):
    """The models cannot be trained as one wide stack (the message says why, in one line)."""


# ---------------------------------------------------------------------------------------------- grouped products


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


# ---------------------------------------------------------------------------------------------- wide leaf modules


def _block_diagonal(weight: torch.Tensor) -> torch.Tensor:
    return torch.block_diag(*weight.unbind(0))


class WideLinear(nn.Linear):
    """R ``nn.Linear`` (module docstring). ``_parameters``: weight (R, out, in), bias (R, out)."""

    members: int

    @property
    def weight(self) -> torch.Tensor:
        """The members' weights as one block-diagonal (R·out, R·in) matrix: what code reading ``linear.weight``
        directly gets (exact, but R times the arithmetic of the grouped product)."""
        return _block_diagonal(self._parameters["weight"])

    @property
    def bias(self) -> torch.Tensor | None:
        """The members' biases concatenated, (R·out,), or None."""
        bias = self._parameters["bias"]
        return None if bias is None else bias.reshape(-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., in) shared or (..., R·in) wide input → (..., R·out): member r's ``x_r W_rᵀ + b_r`` in block r."""
        return wide_linear(x, self._parameters["weight"], self._parameters["bias"]).flatten(-2)


class WideBatchNorm1d(nn.BatchNorm1d):
    """R ``nn.BatchNorm1d`` of C channels as one of R·C channels; the (R, C) tensors are read as (R·C,) views, so
    running-statistics updates land in the members' rows."""

    members: int

    def _flat(self, name: str, store: str = "_parameters") -> torch.Tensor | None:
        t = getattr(self, store)[name]
        return None if t is None else t.view(-1)

    weight = property(lambda self: self._flat("weight"))
    bias = property(lambda self: self._flat("bias"))
    running_mean = property(lambda self: self._flat("running_mean", "_buffers"))
    running_var = property(lambda self: self._flat("running_var", "_buffers"))
    num_batches_tracked = property(lambda self: self._buffers["num_batches_tracked"])  # (R,), += 1 works in place

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``nn.BatchNorm1d``'s forward over the R·C channels, counting steps in the (R,) ``num_batches_tracked``."""
        self._check_input_dim(x)
        factor = 0.0 if self.momentum is None else self.momentum
        tracked = self._buffers.get("num_batches_tracked")
        if self.training and self.track_running_stats and tracked is not None:
            tracked.add_(1)
            factor = 1.0 / float(tracked[0]) if self.momentum is None else self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(x, self.running_mean if use_stats else None, self.running_var if use_stats else None,
                            self.weight, self.bias, bn_training, factor, self.eps)


class WideLayerNorm(nn.LayerNorm):
    """R ``nn.LayerNorm((C,))``: each member's C channels normalised on their own, then its own affine map."""

    members: int

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., R·C) → (..., R·C): each member's block normalised over its C channels, then its own scale and shift."""
        grouped = x.unflatten(-1, (self.members, -1))
        out = F.layer_norm(grouped, grouped.shape[-1:], None, None, self.eps)
        weight, bias = self._parameters.get("weight"), self._parameters.get("bias")
        if weight is not None:
            out = out * weight
        if bias is not None:
            out = out + bias
        return out.flatten(-2)


class WideEmbedding(nn.Embedding):
    """R ``nn.Embedding(K, C)`` as one (K, R·C) table (``weight`` reads it; the parameter is (R, K, C))."""

    members: int

    @property
    def weight(self) -> torch.Tensor:
        """The (K, R·C) table: row k holds every member's embedding of k side by side."""
        table = self._parameters["weight"]
        return table.transpose(0, 1).reshape(table.shape[1], -1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Indices (...) → (..., R·C): one row lookup gives every member's embedding."""
        return F.embedding(x, self.weight, self.padding_idx, None, self.norm_type, self.scale_grad_by_freq,
                           self.sparse)


class WideDropout(nn.Dropout):
    """R ``nn.Dropout`` with rates ``rates`` (R,) (a buffer outside the state dict); acts in the module's training
    mode, like ``nn.Dropout`` (random draws: module docstring)."""

    members: int

    @property
    def p(self) -> torch.Tensor:
        """The members' dropout rates, (R,)."""
        return self._buffers["rates"]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """In training mode, zero each entry of member r's block with probability ``rates[r]`` and scale the rest by
        1/(1 − ``rates[r]``); the identity in evaluation mode."""
        rates = self._buffers["rates"]
        if not self.training:
            return x
        if bool((rates == rates[0]).all()):
            rate = float(rates[0])
            return F.dropout(x, rate, True, self.inplace) if rate > 0 else x
        channel = rates.to(x.dtype).repeat_interleave(x.shape[-1] // rates.numel())
        scale = torch.where(channel < 1, 1 / (1 - channel), torch.zeros_like(channel))
        return x * (torch.rand_like(x) >= channel) * scale


_LEAVES: dict[type, type] = {nn.Linear: WideLinear, nn.BatchNorm1d: WideBatchNorm1d, nn.LayerNorm: WideLayerNorm,
                             nn.Embedding: WideEmbedding, nn.Dropout: WideDropout}


# ---------------------------------------------------------------------------------------------- hand-written forms

_FORMS: list[tuple[type, tuple[str, ...], dict[str, Callable]]] = []
_forms_loaded = False


def register_wide_form(cls: type, tensors: Sequence[str] = (), **methods: Callable) -> None:
    """Widen instances of ``cls`` (and its subclasses without a form of their own) with ``methods`` replacing
    theirs; ``tensors`` names the module's own parameters/buffers those methods read as stacked (R, ...) tensors from
    ``self._parameters`` / ``self._buffers`` (the stack stacks them and exposes nothing else for them)."""
    _FORMS.append((cls, tuple(tensors), methods))


def _gcn_forward(self, h: torch.Tensor, adjacency) -> torch.Tensor:
    """The benchmark's ``GCNLayer.forward`` with a grouped product for W: (R, in, out)."""
    if isinstance(adjacency, torch.Tensor):
        edge_index, num_nodes = adjacency, h.shape[0]
        adjacency = cached_structure(self, edge_index, (num_nodes,), lambda: gcn_adjacency(edge_index, num_nodes))
    weight, bias = self._parameters["weight"], self._parameters["bias"].reshape(-1)
    if weight.shape[1] > weight.shape[2]:  # multiply first when it shrinks the features
        x = adjacency.propagate(wide_matmul(h, weight)) + bias
    else:
        x = wide_matmul(adjacency.propagate(h), weight) + bias
    return post_aggregation(x, h, self.batchnorm_h, batch_norm=self.batch_norm, residual=self.residual,
                            dropout=self.dropout, training=self.training, activation=self.activation)


def _project_abde(self, h: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """GatedGCN's A h, B h, D h, E h, each (N, R·out) (its own form concatenates the weights, which would be the
    block-diagonal matrices here)."""
    return tuple(m(h) for m in (self.A, self.B, self.D, self.E))  # four grouped products, no copies


def _gated_gcn_forward(self, h: torch.Tensor, e: torch.Tensor, edge_index: torch.Tensor, edge_output: bool = True,
                       adjacency=None):
    """The benchmark's standard GatedGCN layer (``GatedGCNLayer``) in autograd operations with grouped products:
    its fused edge function would read C's weight as the block-diagonal matrix (R times the arithmetic on every
    edge). Same formula and tail; sums in another order (rounding), more memory for the backward."""
    e, edge_index = _call_order(e, edge_index)
    src, dst = edge_index
    Ah, Bh, Dh, Eh = self._project_abde(h)
    constant = e.stride(0) == 0  # the same input on every edge: transform it once
    Ce = self.C(e[:1]) if constant else self.C(e)
    e_hat = Dh.index_select(0, src) + Ce + Eh.index_select(0, dst)
    sigma = torch.sigmoid(e_hat)
    num_nodes = h.shape[0]
    numerator = scatter_sum(sigma * Bh.index_select(0, src), dst, num_nodes)
    denominator = scatter_sum(sigma, dst, num_nodes)
    h_new = post_aggregation(Ah + numerator / (denominator + 1e-6), h, self.bn_node_h, **self._tail())
    if not edge_output:
        return h_new, None
    return h_new, post_aggregation(e_hat, e, self.bn_node_e, **self._tail())


def _isotropic_forward(self, h: torch.Tensor, e, edge_index=None, edge_output: bool = True, adjacency=None):
    """``GatedGCNLayerIsotropic.forward`` with its A and B as grouped products (not the block-diagonal matrices)."""
    e, edge_index = _call_order(e, edge_index)
    if adjacency is None:
        num_nodes, dtype = h.shape[0], h.dtype
        adjacency = cached_structure(self, edge_index, (num_nodes, dtype),
                                     lambda: unit_adjacency(edge_index, num_nodes, dtype))
    h_new = post_aggregation(self.A(h) + adjacency.propagate(self.B(h)), h, self.bn_node_h, **self._tail())
    return h_new, e


def _load_forms() -> None:
    global _forms_loaded
    if _forms_loaded:
        return
    _forms_loaded = True

    register_wide_form(GCNLayer, ("weight", "bias"), forward=_gcn_forward)
    register_wide_form(_LayerBase, (), _project_abde=_project_abde)
    register_wide_form(GatedGCNLayer, (), _project_abde=_project_abde, forward=_gated_gcn_forward)
    register_wide_form(GatedGCNLayerIsotropic, (), forward=_isotropic_forward)


# ---------------------------------------------------------------------------------------------- building

_SUBCLASSES: dict[tuple, type] = {}


def _wide_class(base: type, scalars: tuple[str, ...], methods: dict[str, Callable]) -> type:
    key = (base, scalars, tuple(sorted(methods.items(), key=lambda kv: kv[0])))
    if key not in _SUBCLASSES:
        namespace = dict(methods)
        for name in scalars:
            namespace[name] = property(lambda self, n=name: _expanded_scalar(self, n))
        namespace["_wide_form"] = True
        _SUBCLASSES[key] = type(f"Wide{base.__name__}", (base,), namespace)
    return _SUBCLASSES[key]


def _expanded_scalar(module: nn.Module, name: str) -> torch.Tensor:
    t = module._parameters[name] if name in module._parameters else module._buffers[name]
    return t.expand(t.shape[0], module._wide_channels).reshape(-1)


def _member_width(module: nn.Module) -> int | None:
    """The member width of the first widened layer in ``module``'s subtree (channels a scalar is broadcast over)."""
    for sub in module.modules():
        if isinstance(sub, WideLinear):
            return sub.in_member
        if isinstance(sub, WideBatchNorm1d):
            return sub.num_features // sub.members
        if isinstance(sub, (WideLayerNorm, WideEmbedding)):
            return sub.member_width
    return None


def _own_tensors(module: nn.Module) -> list[tuple[str, str]]:
    return ([("_parameters", n) for n, t in module._parameters.items() if t is not None]
            + [("_buffers", n) for n, t in module._buffers.items() if t is not None])


def _stack_into(module: nn.Module, copies: list[nn.Module], names: list[tuple[str, str]]) -> None:
    """Replace ``module``'s own tensors ``names`` by the members' tensors stacked on dim 0."""
    for store, name in names:
        rows = torch.stack([getattr(m, store)[name].detach() for m in copies])
        original = getattr(module, store)[name]
        if store == "_parameters":
            getattr(module, store)[name] = nn.Parameter(rows, requires_grad=original.requires_grad)
        else:
            getattr(module, store)[name] = rows


def _widen_leaf(module: nn.Module, copies: list[nn.Module], path: str) -> None:
    members = len(copies)
    cls = type(module)
    _stack_into(module, copies, _own_tensors(module))
    if cls is nn.Linear:
        module.in_member, module.out_member = module.in_features, module.out_features
        module.in_features, module.out_features = members * module.in_features, members * module.out_features
    elif cls is nn.BatchNorm1d:
        if module.momentum is None and module.track_running_stats:
            counts = {int(m.num_batches_tracked) for m in copies}
            if len(counts) > 1:
                raise NotWidenable(f"{path}: BatchNorm1d with momentum=None and different num_batches_tracked")
        module.num_features = members * module.num_features
    elif cls is nn.LayerNorm:
        if len(module.normalized_shape) != 1:
            raise NotWidenable(f"{path}: LayerNorm over {module.normalized_shape} (only one dimension is widened)")
        module.member_width = module.normalized_shape[0]
        module.normalized_shape = (members * module.member_width,)
    elif cls is nn.Embedding:
        if module.max_norm is not None or module.sparse:
            raise NotWidenable(f"{path}: Embedding with max_norm or sparse gradients")
        module.member_width = module.embedding_dim
        module.embedding_dim = members * module.embedding_dim
    elif cls is nn.Dropout:
        rates = torch.tensor([float(m.p) for m in copies], dtype=torch.float64)
        del module.p
        module.register_buffer("rates", rates, persistent=False)
    module.members = members
    module.__class__ = _LEAVES[cls]


def _rescale_widths(module: nn.Module, old: int, new: int) -> None:
    """After :meth:`WideStack.keep`: the wide widths a model's code may read (``in_features``, ``num_features``, …)
    follow the number of members (e.g. an encoder building ``ones(1, layer.in_features)``)."""
    for name in ("in_features", "out_features", "num_features", "embedding_dim"):
        if isinstance(getattr(module, name, None), int):
            setattr(module, name, getattr(module, name) // old * new)
    if isinstance(module, nn.LayerNorm):
        module.normalized_shape = (module.normalized_shape[0] // old * new,)


def _form_of(cls: type) -> tuple[tuple[str, ...], dict[str, Callable]] | None:
    """The registered form of the most specific class in ``cls``'s method resolution order (the last registration
    of that class wins)."""
    for base in cls.__mro__:
        for registered, tensors, methods in reversed(_FORMS):
            if registered is base:
                return tensors, methods
    return None


def _plan(module: nn.Module, where: str) -> tuple[tuple[str, ...], dict[str, Callable]] | None:
    """How a module that is not a known leaf widens: (its scalar tensors, the methods of its registered form), or
    None when it holds no tensors and has no form; :class:`NotWidenable` for a tensor without a wide form."""
    form = _form_of(type(module))
    handled, methods = form if form is not None else ((), {})
    own = _own_tensors(module)
    scalars = []
    for store, name in own:
        if name in handled:
            continue
        shape = tuple(getattr(module, store)[name].shape)
        if shape != (1,):
            kind = "parameter" if store == "_parameters" else "buffer"
            raise NotWidenable(f"{where}: {type(module).__name__} holds a {kind} {name!r} of shape {shape} with no "
                               "wide form (only nn.Linear/BatchNorm1d/LayerNorm/Embedding/Dropout, registered forms "
                               "and (1,) scalars are widened)")
        scalars.append(name)
    if not own and form is None:
        return None
    return tuple(scalars), methods


def _widen(model: nn.Module, members_models: list[nn.Module]) -> None:
    """Widen every module of ``model`` (a deep copy of the first member) from the members' tensors: checked top
    down (the first module that cannot be widened is named), then widened bottom up (a scalar's channel width comes
    from the widened layers below it)."""
    _load_forms()
    modules = dict(model.named_modules())
    plans = {path: None if type(module) in _LEAVES else _plan(module, path or "the model")
             for path, module in modules.items()}
    for path in reversed(list(modules)):
        module = modules[path]
        where = path or "the model"
        copies = [m.get_submodule(path) for m in members_models]
        if type(module) in _LEAVES:
            _widen_leaf(module, copies, where)
            continue
        if plans[path] is None:
            continue
        scalars, methods = plans[path]
        if scalars:
            width = _member_width(module)
            if width is None:
                raise NotWidenable(f"{where}: scalar tensor(s) {list(scalars)} but no widened layer below to give "
                                   "their channel width")
            module._wide_channels = width
        _stack_into(module, copies, _own_tensors(module))
        module.members = len(copies)
        module.__class__ = _wide_class(type(module), scalars, methods)


# ---------------------------------------------------------------------------------------------- member checks

_MODULE_INTERNALS = {"training"}


def _same(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                and a.dtype == b.dtype and bool(torch.equal(a, b)))
    try:
        equal = a == b
        return equal if isinstance(equal, bool) else bool(equal)
    except Exception:
        return False


def _describe(t: torch.Tensor | None) -> str:
    if t is None:
        return "None"
    grad = ", trainable" if t.requires_grad else ""
    return f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')} on {t.device}{grad}"


def _check_members(models: list[nn.Module]) -> None:
    """Raise :class:`NotWidenable` unless the models have the same structure and attributes (module docstring)."""
    first = dict(models[0].named_modules())
    for r, model in enumerate(models[1:], start=1):
        modules = dict(model.named_modules())
        if list(modules) != list(first):
            missing = sorted(set(first) ^ set(modules))
            raise NotWidenable(f"member {r} has other modules than member 0 ({', '.join(missing[:3]) or 'order'})")
        for path, module in modules.items():
            where = path or "the model"
            ref = first[path]
            if type(module) is not type(ref):
                raise NotWidenable(f"{where}: member {r} is a {type(module).__name__}, member 0 a {type(ref).__name__}")
            for store in ("_parameters", "_buffers"):
                mine, theirs = getattr(module, store), getattr(ref, store)
                if list(mine) != list(theirs):
                    raise NotWidenable(f"{where}: member {r} has {store[1:]} {list(mine)}, member 0 {list(theirs)}")
                for name, t in mine.items():
                    u = theirs[name]
                    if _describe(t) != _describe(u):
                        full = f"{path}.{name}" if path else name
                        raise NotWidenable(f"{full}: member {r}'s tensor is {_describe(t)}, member 0's {_describe(u)}")
            attrs = {k for k in (*vars(module), *vars(ref)) if not k.startswith("_") and k not in _MODULE_INTERNALS}
            for name in sorted(attrs):
                if name == "p" and isinstance(module, nn.Dropout):
                    continue
                if not _same(vars(module).get(name), vars(ref).get(name)):
                    raise NotWidenable(f"{where}: attribute {name!r} differs between member {r} and member 0 "
                                       f"({vars(module).get(name)!r} vs {vars(ref).get(name)!r})")


# ---------------------------------------------------------------------------------------------- the stack


class WideStack(nn.Module):
    """R models of one architecture as one wide model (module docstring). ``models[r]`` is member r: its tensors
    are copied in (the models are not modified). Raises :class:`NotWidenable` (nothing built) when they cannot be
    widened; call :func:`check_widened` on an example input to prove the wide forward is per member."""

    def __init__(self, models: Sequence[nn.Module]) -> None:
        super().__init__()
        models = list(models)
        if not models:
            raise ValueError("a wide stack needs at least one model")
        _check_members(models)
        model = copy.deepcopy(models[0])
        _widen(model, models)
        model.train(models[0].training)
        self.model = model
        self.members = len(models)

    def forward(self, *args, **kwargs):
        """The template model's forward on the wide model: outputs (..., R·C), member-major blocks."""
        return self.model(*args, **kwargs)

    def split(self, out: torch.Tensor) -> torch.Tensor:
        """(..., R·C) wide output → (R, ..., C): member r's output at [r]."""
        return out.unflatten(-1, (self.members, -1)).movedim(-2, 0)

    @torch.no_grad()
    def keep(self, idx: torch.Tensor | Sequence[int]) -> None:
        """Keep the members ``idx`` (in that order) in every parameter (and its gradient) and buffer. Parameters are
        new ``nn.Parameter`` objects (a parameter whose shape changes in place would confuse autograd graphs still
        alive): a :class:`WideOptimizer` follows them (drop its rows with its own ``keep``); other references to the
        old parameters are stale."""
        idx = torch.as_tensor(idx, dtype=torch.long).cpu()
        for module in self.model.modules():
            for name, p in module._parameters.items():
                if p is None:
                    continue
                rows = idx.to(p.device)
                kept = nn.Parameter(p.detach().index_select(0, rows), requires_grad=p.requires_grad)
                if p.grad is not None:
                    kept.grad = p.grad.index_select(0, rows)
                module._parameters[name] = kept
            for name, b in module._buffers.items():
                if b is not None:
                    module._buffers[name] = b.index_select(0, idx.to(b.device))
            if hasattr(module, "members"):
                _rescale_widths(module, module.members, idx.numel())
                module.members = idx.numel()
        self.members = idx.numel()

    def member_state_dict(self, r: int) -> dict[str, torch.Tensor]:
        """Member r's state dict: the keys and shapes of its own model's ``state_dict()`` (copies)."""
        return {name: t[r].detach().clone() for name, t in self.model.state_dict().items()}

    def load_member_state_dict(self, r: int, state: dict[str, torch.Tensor]) -> None:
        """Write a model's state dict (keys and shapes of a member's) into member r."""
        own = self.model.state_dict()
        if set(own) != set(state):
            raise KeyError(f"state dict keys differ: {sorted(set(own) ^ set(state))[:5]}")
        with torch.no_grad():
            for name, t in own.items():
                t[r].copy_(state[name])


# ---------------------------------------------------------------------------------------------- the dry-run check


def _to_double(obj):
    if isinstance(obj, torch.Tensor):
        return obj.double() if obj.is_floating_point() else obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_double(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _to_double(v) for k, v in obj.items()}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(obj, **{f.name: _to_double(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                                           if f.init and isinstance(getattr(obj, f.name), torch.Tensor)})
    return obj


def _tensors_of(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _tensors_of(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _tensors_of(o)]
    return []


def _no_dropout(module: nn.Module) -> None:
    for sub in module.modules():
        if isinstance(sub, WideDropout):
            sub._buffers["rates"].zero_()
        elif isinstance(sub, nn.Dropout):
            sub.p = 0.0


def check_widened(stack: WideStack, models: Sequence[nn.Module], example_args: tuple, example_kwargs=None, *,
                  rtol: float = 1e-7, atol: float = 1e-9) -> None:
    """Raise :class:`NotWidenable` unless, on float64 copies without dropout (Dropout modules at rate 0 and
    ``torch.nn.functional.dropout`` the identity while it runs, so models that drop out with a float attribute are
    checked too), every member's own model gives the wide stack's block r: the outputs in eval mode, and the outputs
    and every parameter's gradient (of a fixed random linear function of the outputs) in training mode. Catches
    code that mixes the members' channels (e.g. ``x.view(-1, heads, C)``) and weights read in ways the wide forms do
    not cover. A model that does not run in float64 (e.g. float32 structures built in its forward) is checked in its
    own dtype, with ``rtol`` 1e-4. Tolerances are relative to each tensor's largest magnitude. The global random
    state is left as it was."""
    devices = sorted({t.device.index for t in stack.parameters() if t.device.type == "cuda"} - {None})
    with torch.random.fork_rng(devices=devices), mock.patch.object(F, "dropout", _no_drop):
        if _runs_in_double(models[0], example_args, example_kwargs):
            _check(stack, models, _to_double(tuple(example_args)), _to_double(example_kwargs or {}), torch.float64,
                   rtol, atol)
        else:
            _check(stack, models, tuple(example_args), example_kwargs or {}, None, max(rtol, 1e-4), max(atol, 1e-6))


def _no_drop(x: torch.Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> torch.Tensor:
    return x


def _runs_in_double(model: nn.Module, args, kwargs) -> bool:
    try:
        with torch.no_grad():
            copy.deepcopy(model).double().eval()(*_to_double(tuple(args)), **_to_double(kwargs or {}))
    except Exception:
        return False
    return True


def _close(a: torch.Tensor, b: torch.Tensor, rtol: float, atol: float) -> bool:
    scale = float(b.detach().abs().max()) if b.numel() else 0.0
    return a.shape == b.shape and bool(torch.allclose(a, b, rtol=rtol, atol=atol + rtol * scale))


def _check(stack: WideStack, models, args, kwargs, dtype, rtol: float, atol: float) -> None:
    wide = copy.deepcopy(stack)
    own = [copy.deepcopy(m) for m in models]
    for m in [wide, *own]:
        if dtype is not None:
            m.to(dtype)
        _no_dropout(m)
    try:
        for training in (False, True):
            mode = "training" if training else "eval"
            wide.train(training)
            wide.zero_grad(set_to_none=True)
            outs = _tensors_of(wide(*args, **kwargs))
            generator = torch.Generator().manual_seed(0)
            probes = [torch.randn(o.shape, generator=generator, dtype=o.dtype).to(o.device) for o in outs]
            if training:
                sum((o * p).sum() for o, p in zip(outs, probes, strict=True)).backward()
            for r, model in enumerate(own):
                model.train(training)
                model.zero_grad(set_to_none=True)
                mine = _tensors_of(model(*args, **kwargs))
                if len(mine) != len(outs):
                    raise NotWidenable(f"member {r}'s model returns {len(mine)} tensors, the wide stack {len(outs)}")
                blocks = [_block(wide, o, m_out, r) for o, m_out in zip(outs, mine, strict=True)]
                for block, m_out in zip(blocks, mine, strict=True):
                    if block is None or not _close(block, m_out, rtol, atol):
                        raise NotWidenable(f"member {r}'s own forward ({mode} mode) differs from its block of the "
                                           "wide output (code that mixes the members' channels?)")
                if training:
                    probe_blocks = [_block(wide, p, m_out, r) for p, m_out in zip(probes, mine, strict=True)]
                    sum((m_out * p).sum() for m_out, p in zip(mine, probe_blocks, strict=True)).backward()
                    _compare_gradients(wide, model, r, rtol, atol)
    except NotWidenable:
        raise
    except Exception as exc:
        message = str(exc).strip().splitlines()
        raise NotWidenable(f"the wide forward fails: {type(exc).__name__}: {message[0][:160] if message else ''}"
                           ) from exc


def _block(wide: WideStack, out: torch.Tensor, own: torch.Tensor, r: int) -> torch.Tensor | None:
    """Member r's block of a wide output ``out`` in the shape of its own output ``own`` (a head that squeezes a last
    dim of 1 returns (..., R) wide and (...) alone), or None if the shapes do not correspond."""
    if out.shape[-1] == wide.members * own.shape[-1] and out.shape[:-1] == own.shape[:-1]:
        return wide.split(out)[r]
    if out.shape[-1] == wide.members and out.shape[:-1] == own.shape:
        return out[..., r]
    return None


def _compare_gradients(wide: WideStack, model: nn.Module, r: int, rtol: float, atol: float) -> None:
    """Member r's gradients against its own model's, each at the scale of the member's largest gradient: a gradient
    far below it is a sum with heavy cancellation (e.g. the bias before a training-mode batch norm, zero in exact
    arithmetic), whose rounding is large relative to itself but not relative to the model's gradients."""
    wide_params = dict(wide.model.named_parameters())
    grads = {name: p.grad if p.grad is not None else torch.zeros_like(p) for name, p in model.named_parameters()}
    largest = max((float(g.detach().abs().max()) for g in grads.values() if g.numel()), default=0.0)
    for name, mine in grads.items():
        q = wide_params[name]
        theirs = q.grad[r] if q.grad is not None else torch.zeros_like(mine)
        if not _close(theirs, mine, rtol, atol + rtol * largest):
            raise NotWidenable(f"{name}: member {r}'s gradient differs from its own model's (the wide forward mixes "
                               "members or reads this weight in a way its wide form does not cover)")


# ---------------------------------------------------------------------------------------------- optimiser


def _rows_of(values: torch.Tensor, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """(R,) values as (R, 1, ..., 1) views in each tensor's dtype and device, to broadcast over its rows (converted
    once per device and dtype)."""
    converted: dict[tuple, torch.Tensor] = {}
    out = []
    for t in tensors:
        key = (t.device, t.dtype)
        if key not in converted:
            converted[key] = values.to(t.device, t.dtype)
        out.append(converted[key].view(-1, *([1] * (t.dim() - 1))))
    return out


def _per_member(value, members: int, what: str) -> torch.Tensor:
    t = torch.as_tensor(value, dtype=torch.float64).detach().clone()
    if t.dim() == 0:
        t = t.expand(members).clone()
    if t.shape != (members,):
        raise ValueError(f"{what} must be a number or a tensor of shape ({members},), got {tuple(t.shape)}")
    return t


class WideOptimizer:
    """One optimiser for every member of a :class:`WideStack`: ``kind`` "adam" (``torch.optim.Adam`` with coupled
    L2 weight decay: grad + wd·θ) or "sgd" (``torch.optim.SGD``: momentum, dampening, nesterov), each member with
    its own learning rate and weight decay: ``lr`` and ``weight_decay`` are float64 tensors (R,), writable (a
    schedule sets ``opt.lr[r]``). Adam's step count is per member. Vectorised over all parameters with
    ``torch._foreach_*`` ops; the per-member values broadcast over each parameter's rows."""

    def __init__(self, stack: WideStack, kind: str = "adam", lr=1e-3, weight_decay=0.0, *,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, momentum: float = 0.0,
                 dampening: float = 0.0, nesterov: bool = False) -> None:
        kind = kind.lower()
        if kind not in ("adam", "sgd"):
            raise ValueError(f"WideOptimizer kind must be 'adam' or 'sgd', got {kind!r}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        self.kind, self.betas, self.eps = kind, tuple(betas), eps
        self.momentum, self.dampening, self.nesterov = momentum, dampening, nesterov
        self.stack = stack
        self.members = stack.members
        self.lr = _per_member(lr, self.members, "lr")
        self.weight_decay = _per_member(weight_decay, self.members, "weight_decay")
        self.steps = torch.zeros(self.members, dtype=torch.float64)
        self.state: dict[str, list[torch.Tensor | None]] = {}
        if kind == "adam":
            self.state["exp_avg"] = [torch.zeros_like(p) for p in self.params]
            self.state["exp_avg_sq"] = [torch.zeros_like(p) for p in self.params]
        elif momentum:
            self.state["momentum_buffer"] = [None for _ in self.params]

    @property
    def params(self) -> list[nn.Parameter]:
        """The stack's trainable parameters, in its order (read at every use: :meth:`WideStack.keep` replaces
        them)."""
        return [p for p in self.stack.parameters() if p.requires_grad]

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the parameters' gradients (set them to None, or zero them in place), as ``torch.optim`` does."""
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    def _check(self) -> None:
        for name in ("lr", "weight_decay"):
            value = getattr(self, name)
            if not isinstance(value, torch.Tensor) or value.shape != (self.members,):
                setattr(self, name, _per_member(value, self.members, name))

    @torch.no_grad()
    def step(self) -> None:
        """One update of every member that has gradients: coupled L2 decay, then Adam's or SGD's rule with that
        member's learning rate."""
        self._check()
        every = self.params
        active = [i for i, p in enumerate(every) if p.grad is not None]
        if not active:
            return
        params = [every[i] for i in active]
        grads = [p.grad for p in params]
        if bool((self.weight_decay != 0).any()):
            grads = torch._foreach_add(grads, torch._foreach_mul(params, _rows_of(self.weight_decay, params)))
        self.steps += 1
        if self.kind == "adam":
            self._adam(active, params, grads)
        else:
            self._sgd(active, params, grads)

    def _adam(self, active, params, grads) -> None:
        beta1, beta2 = self.betas
        exp_avg = [self.state["exp_avg"][i] for i in active]
        exp_avg_sq = [self.state["exp_avg_sq"][i] for i in active]
        torch._foreach_lerp_(exp_avg, grads, 1 - beta1)
        torch._foreach_mul_(exp_avg_sq, beta2)
        torch._foreach_addcmul_(exp_avg_sq, grads, grads, 1 - beta2)
        step_size = -self.lr / (1 - beta1 ** self.steps)
        correction2 = (1 - beta2 ** self.steps).sqrt()
        denom = torch._foreach_sqrt(exp_avg_sq)
        torch._foreach_div_(denom, _rows_of(correction2, params))
        torch._foreach_add_(denom, self.eps)
        update = torch._foreach_div(exp_avg, denom)
        torch._foreach_mul_(update, _rows_of(step_size, params))
        torch._foreach_add_(params, update)

    def _sgd(self, active, params, grads) -> None:
        if self.momentum:
            buffers = self.state["momentum_buffer"]
            fresh = [i for i in active if buffers[i] is None]
            for i, g in zip(active, grads, strict=True):
                if buffers[i] is None:
                    buffers[i] = torch.clone(g).detach()
            old = [buffers[i] for i in active if i not in fresh]
            if old:
                torch._foreach_mul_(old, self.momentum)
                torch._foreach_add_(old, [g for i, g in zip(active, grads, strict=True) if i not in fresh],
                                    alpha=1 - self.dampening)
            bufs = [buffers[i] for i in active]
            grads = torch._foreach_add(grads, bufs, alpha=self.momentum) if self.nesterov else bufs
        torch._foreach_add_(params, torch._foreach_mul(grads, _rows_of(-self.lr, params)))

    @torch.no_grad()
    def keep(self, idx: torch.Tensor | Sequence[int]) -> None:
        """Keep the members ``idx`` (in that order): rows of every state tensor, lr, weight decay, step counts."""
        self._check()
        idx = torch.as_tensor(idx, dtype=torch.long).cpu()
        self.lr, self.weight_decay, self.steps = (t.index_select(0, idx) for t in (self.lr, self.weight_decay,
                                                                                  self.steps))
        for values in self.state.values():
            for i, t in enumerate(values):
                if t is not None:
                    values[i] = t.index_select(0, idx.to(t.device))
        self.members = idx.numel()

    def state_dict(self) -> dict:
        """A copy of the optimiser's state (per-member lr, weight decay, step counts, moment buffers, settings)."""
        self._check()
        return {"kind": self.kind, "lr": self.lr.clone(), "weight_decay": self.weight_decay.clone(),
                "steps": self.steps.clone(), "state": {k: [None if t is None else t.clone() for t in v]
                                                       for k, v in self.state.items()},
                "hyper": {"betas": self.betas, "eps": self.eps, "momentum": self.momentum,
                          "dampening": self.dampening, "nesterov": self.nesterov}}

    def load_state_dict(self, state: dict) -> None:
        """Restore a :meth:`state_dict` of an optimiser of the same kind, for the stack's current parameters."""
        if state["kind"] != self.kind:
            raise ValueError(f"a {state['kind']} optimiser's state cannot be loaded into a {self.kind} one")
        self.lr, self.weight_decay = state["lr"].clone(), state["weight_decay"].clone()
        self.steps = state["steps"].clone()
        self.members = self.lr.numel()
        for key, values in state["state"].items():
            self.state[key] = [None if t is None else t.clone().to(p.device)
                               for t, p in zip(values, self.params, strict=True)]
        hyper = state["hyper"]
        self.betas, self.eps = tuple(hyper["betas"]), hyper["eps"]
        self.momentum, self.dampening, self.nesterov = hyper["momentum"], hyper["dampening"], hyper["nesterov"]


@torch.no_grad()
def clip_members(stack: WideStack, max_norm: float) -> torch.Tensor:
    """``torch.nn.utils.clip_grad_norm_(member's parameters, max_norm)`` for every member: the 2-norm over that
    member's rows of every gradient, then its rows scaled by min(1, max_norm / (norm + 1e-6)). Returns the members'
    norms before clipping, (R,)."""
    grads = [p.grad for p in stack.parameters() if p.grad is not None]
    if not grads:
        return torch.zeros(stack.members)
    norms = torch.stack([torch.linalg.vector_norm(g.reshape(g.shape[0], -1), dim=1) for g in grads])
    total = torch.linalg.vector_norm(norms, dim=0)
    coef = (max_norm / (total + _CLIP_EPS)).clamp(max=1.0)
    torch._foreach_mul_(grads, _rows_of(coef, grads))
    return total


__all__ = ["NotWidenable", "WideOptimizer", "WideStack", "check_widened", "clip_members", "register_wide_form",
           "wide_linear", "wide_matmul"]
