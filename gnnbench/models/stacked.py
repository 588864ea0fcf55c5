"""R random initialisations of one node-classification network trained at once ("stacked" models), for the
"Pitfalls of GNN Evaluation" protocol (Shchur et al.; the networks of the released code, shchur/gnn-benchmark
``gnnbench/models/``; docs/protocols/pitfalls.md): every parameter has a leading dimension R, and one forward pass
computes the logits of all R initialisations with the same sparse products.

Contract (the trainer relies on exactly this):

* :class:`NodeGraph` — the one graph of a transductive dataset.
* :class:`StackedModel` — ``forward(nodes, training)`` → logits (R, M, C) at ``nodes`` (M,) (None = all N nodes),
  dropout only when ``training``; ``l2_penalty()`` → (R,) = Σ λ/2·‖w‖² over exactly the tensors the released code
  regularises in that model; ``inits`` = R.
* :func:`build_stacked_model` (config keys as in the original's configs), :func:`count_stacked_parameters`
  (trainable weights of one initialisation).

Rules every stacked model follows:

* All per-initialisation state is a parameter whose dim 0 is R, so a trainer drops finished initialisations
  with ``p.data = p.data.index_select(0, keep)`` (and the same on the optimizer state) — at a moment when no
  autograd graph holds the parameters (autograd keeps each leaf's shape while a graph referring to it lives).
  Cached structures depend on the graph (and on the node set asked for) only; where a cached index structure
  also depends on the number of blocks it is keyed by that number and rebuilt when R changes.
* Parameters and cached structures live on the device of ``graph.edge_index`` (initialised on the CPU, then
  moved, so the weights are the same on every device).
* Initialisation r draws its weights from its own ``torch.Generator`` seeded with ``seeds[r]``, so it has the
  same weights whether built alone or with others. Weights Glorot-uniform (TF's ``glorot_uniform_initializer``:
  U(±√(6/(fan_in + fan_out))) for a matrix (fan_in, fan_out)), biases zero, except MoNet's μ and σ.
* Dropout draws from the global torch RNG (the trainer seeds it), independently for every initialisation (and
  for every GAT head). On sparse input features it drops stored nonzeros, which equals dense dropout on binary
  features (as the released code's ``dropout_supporting_sparse_tensors`` does); on dense features (generated
  datasets) it is ordinary dropout.
* Receptive fields: a 2-layer model's logits at nodes T need the first layer at S1 = N⁺(T) (the columns of
  T's rows of the propagation matrix) and the input at S2 = N⁺(S1). :class:`Hops` computes these sets and the
  renumbered blocks of the propagation matrix once per node set (cached), so a training step computes the
  input product at S2 only and everything after it at S1 and T only. Logits are identical to a full forward.
* Speed (one CPU core, a CORA-sized graph, R = 20; ``benchmarks/stacked_models.py``): sparse products are
  ``embedding_bag`` calls on block-diagonal index structures (:mod:`gnnbench.models.sparse`), dense
  per-initialisation products are batched matrix products (narrow outputs computed transposed), dropout masks
  compare random bits with the keep rate (geometric gaps between the rarer outcomes where those are rare), the
  L2 term has a one-pass backward, and the input dropout on sparse features uses a plan of the kept entries at
  low keep rates and a mask over all entries otherwise (:class:`DroppedInput`). A training process should keep
  freed memory (:func:`gnnbench.allocator.keep_freed_memory`): a step's temporaries then reuse the pages
  of the step before, which saves time on models with large temporaries such as GAT (models whose temporaries stay
  below glibc's adaptive mmap threshold gain nothing; figures in docs/performance.md).
"""

from __future__ import annotations

import importlib
import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from gnnbench.errors import ConfigError
from gnnbench.models.sparse import BagPlan, CSRPattern, MaskedPlan, bag_mm, bernoulli_mask, dropout_mask


@dataclass
class NodeGraph:
    """The one graph of a transductive dataset as stacked models read it."""

    num_nodes: int
    edge_index: torch.Tensor  # (2, E) int64: both directions of every undirected edge, no duplicates;
    #                           self loops only in unstandardised data (then at most one per node)
    features: torch.Tensor  # (N, F) float32: torch sparse CSR (bag of words, binary or TF-IDF) or dense strided
    num_classes: int

    @property
    def num_features(self) -> int:
        """F, the width of the node features."""
        return int(self.features.shape[1])


# ---------------------------------------------------------------------------------------------------------
# Graph structures


def adjacency_pattern(graph: NodeGraph, self_loops: bool) -> CSRPattern:
    """A (or A with the diagonal set to 1: a loop added to every node without one), rows = targets, unweighted."""
    src, dst = graph.edge_index
    if self_loops:
        has_loop = torch.zeros(graph.num_nodes, dtype=torch.bool, device=src.device)
        has_loop[src[src == dst]] = True
        missing = torch.nonzero(~has_loop).view(-1)
        src, dst = torch.cat([src, missing]), torch.cat([dst, missing])
    return CSRPattern.from_coo(dst, src, None, graph.num_nodes, graph.num_nodes)


def with_values(pattern: CSRPattern, value: torch.Tensor) -> CSRPattern:
    """The same pattern weighted by ``value`` (one per stored entry, CSR order)."""
    return CSRPattern(pattern.crow, pattern.col, value.to(torch.float32), pattern.num_cols)


def row_degrees(pattern: CSRPattern) -> torch.Tensor:
    """Stored entries per row (float32)."""
    return (pattern.crow[1:] - pattern.crow[:-1]).to(torch.float32)


class Hops:
    """The node sets a ``depth``-layer model reads for logits at ``nodes``, and the blocks of the propagation matrix
    between them: ``sets[0]`` = the targets (in the caller's order), ``sets[k+1]`` = the sorted columns of the rows
    ``sets[k]``; ``blocks[k]`` = rows ``sets[k]`` with columns renumbered into ``sets[k+1]``. With ``nodes`` None
    every set is all N nodes (``sets[k]`` None) and every block is the whole matrix. ``extras`` holds what a model
    caches for this node set (attention graphs, max plans, ...)."""

    def __init__(self, pattern: CSRPattern, nodes: torch.Tensor | None, depth: int) -> None:
        self.num_nodes, self.device = pattern.num_rows, pattern.col.device
        self.sets: list[torch.Tensor | None] = [nodes]
        self.blocks: list[CSRPattern] = []
        self._maps: dict[int, torch.Tensor] = {}
        self.extras: dict[Any, Any] = {}
        for _ in range(depth):
            if nodes is None:
                self.sets.append(None)
                self.blocks.append(pattern)
                continue
            rows = pattern.select(nodes)
            nodes = torch.unique(rows.col)
            column_map = self._map(len(self.sets), nodes)
            self.blocks.append(CSRPattern(rows.crow, column_map.index_select(0, rows.col), rows.value, nodes.numel()))
            self.sets.append(nodes)

    def _map(self, level: int, nodes: torch.Tensor) -> torch.Tensor:
        column_map = torch.full((self.num_nodes,), -1, dtype=torch.int64, device=nodes.device)
        column_map[nodes] = torch.arange(nodes.numel(), device=nodes.device)
        self._maps[level] = column_map
        return column_map

    def size(self, level: int) -> int:
        """The number of nodes in ``sets[level]`` (N where that set is all nodes)."""
        nodes = self.sets[level]
        return self.num_nodes if nodes is None else nodes.numel()

    def positions(self, level: int) -> torch.Tensor | None:
        """Where the nodes of ``sets[level]`` sit in ``sets[level + 1]`` (None: the same, all nodes). Only for
        matrices with self loops, where every set contains the previous one."""
        nodes = self.sets[level]
        if nodes is None:
            return None
        found = self._maps[level + 1].index_select(0, nodes)
        if bool((found < 0).any()):
            raise ValueError("positions() needs a propagation matrix with self loops")
        return found

    def global_ids(self, level: int) -> torch.Tensor:
        """The node ids of ``sets[level]`` (0 .. N − 1 where that set is all nodes)."""
        nodes = self.sets[level]
        return torch.arange(self.num_nodes, device=self.device) if nodes is None else nodes


class HopsCache:
    """:class:`Hops` per node set, the few most recent ones (a trainer asks for its train and validation nodes in
    turn); keys compare the node ids themselves."""

    def __init__(self, pattern: CSRPattern, depth: int, size: int = 6) -> None:
        self.pattern, self.depth, self.size = pattern, depth, size
        self._cache: OrderedDict[Any, Hops] = OrderedDict()

    def get(self, nodes: torch.Tensor | None) -> Hops:
        """The :class:`Hops` of ``nodes`` (None = all nodes), built on first use; IndexError for ids outside the
        graph."""
        if nodes is not None:
            nodes = nodes.reshape(-1).to(torch.int64)
        key = None if nodes is None else (nodes.numel(), nodes.cpu().numpy().tobytes())
        hops = self._cache.get(key)
        if hops is None:
            n = self.pattern.num_rows
            if nodes is not None and nodes.numel() and (int(nodes.min()) < 0 or int(nodes.max()) >= n):
                raise IndexError(f"node ids must lie in [0, {self.pattern.num_rows})")
            hops = Hops(self.pattern, nodes, self.depth)
            self._cache[key] = hops
            if len(self._cache) > self.size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return hops


class NodeRows(HopsCache):
    """For models without a graph (MLP, LogReg): :class:`Hops` of depth 0, ``sets[0]`` = the nodes asked for."""

    def __init__(self, num_nodes: int, device: torch.device, size: int = 6) -> None:
        empty = torch.zeros(num_nodes + 1, dtype=torch.int64, device=device)
        super().__init__(CSRPattern(empty, empty[:0], None, num_nodes), depth=0, size=size)


# ---------------------------------------------------------------------------------------------------------
# Input features


class InputFeatures:
    """The node features, sparse (CSR; binary bag of words or TF-IDF) or dense, and their products with stacked
    weights at a set of rows, with dropout drawn independently for every block (initialisation or head)."""

    def __init__(self, features: torch.Tensor) -> None:
        self.num_features = int(features.shape[1])
        if features.layout in (torch.sparse_csr, torch.sparse_coo):
            pattern = CSRPattern.from_sparse(features.to(torch.float32))
            if bool((pattern.value == 1).all()):
                pattern.value = None  # binary: unweighted bags (faster)
            self.pattern, self.dense = pattern, None
        elif features.layout == torch.strided:
            self.pattern, self.dense = None, features.to(torch.float32)
        else:
            raise ValueError(f"features must be a sparse CSR/COO or dense tensor, got layout {features.layout}")

    def rows(self, hops: Hops, level: int) -> CSRPattern | torch.Tensor:
        """The feature rows of the nodes ``hops.sets[level]``: a :class:`CSRPattern` or a dense (M, F) tensor;
        cached with ``hops``."""
        key = ("features", level)
        if key not in hops.extras:
            nodes = hops.sets[level]
            if self.pattern is not None:
                hops.extras[key] = self.pattern if nodes is None else self.pattern.select(nodes)
            else:
                hops.extras[key] = self.dense if nodes is None else self.dense.index_select(0, nodes)
        return hops.extras[key]

    def subset(self, hops: Hops, level: int) -> CSRPattern | torch.Tensor | None:
        """The rows of ``hops.sets[level]`` taken from the rows of ``hops.sets[level + 1]`` (which contain them),
        for :meth:`DroppedInput.matmul` at a subset of its rows (None: the same rows); cached with ``hops``."""
        key = ("feature subset", level)
        if key not in hops.extras:
            rows, positions = self.rows(hops, level + 1), hops.positions(level)
            if positions is None:
                hops.extras[key] = None
            elif isinstance(rows, CSRPattern):
                hops.extras[key] = rows.select(positions)
            else:
                hops.extras[key] = positions
        return hops.extras[key]


class DroppedInput:
    """Feature rows X (M × F) with one dropout draw per block; ``matmul(W)`` (B, F, D) → (B, M, D) = X_b·W_b, where
    X_b is block b's dropped-out copy. Several products may share the draw (GraphSAGE's pooled and self terms).

    Sparse features, two equivalent ways to apply the draw (whichever is faster on a CPU core): at keep
    rates 1 − p ≤ ``KEPT_ONLY_BELOW`` a bag plan of the kept entries only (:meth:`CSRPattern.dropout_plan`; the
    backward needs one sort of them), otherwise the replicated plan of all entries with the mask as entry weights
    (:class:`~gnnbench.models.sparse.MaskedPlan`: a :func:`~gnnbench.models.sparse.bernoulli_mask` per entry; no
    sort, the mask is gathered into column-major order). ``weights`` is that mask as floats (None otherwise)."""

    KEPT_ONLY_BELOW = 0.25

    def __init__(self, rows: CSRPattern | torch.Tensor, blocks: int, p: float | torch.Tensor) -> None:
        self.blocks, self.weights, self.rows, self.kept_only = blocks, None, rows, False
        self.kept: torch.Tensor | None = None
        if isinstance(p, torch.Tensor):  # a rate per member (:func:`member_keep`): a mask over every entry
            keep = member_keep(p, blocks)
            if isinstance(rows, CSRPattern):
                self.num_rows, self.dense = rows.num_rows, None
                draw = torch.rand(blocks, rows.nnz, device=rows.col.device)
                self.kept = (draw < keep.to(torch.float32).unsqueeze(1)).flatten()
                self.scale = (1.0 / keep).to(torch.float32).repeat_interleave(rows.nnz)
                self.plan = MaskedPlan(rows.replicate(blocks), self.kept, self.scale)
                self.weights = self.plan.weights
            else:
                self.num_rows, self.plan = rows.shape[0], None
                self.dense = rows * member_mask((blocks, *rows.shape), keep)
            return
        self.scale = 1.0 / (1.0 - p)
        if isinstance(rows, CSRPattern):
            self.num_rows, self.dense = rows.num_rows, None
            if p <= 0:
                self.plan: BagPlan | None = rows.replicate(blocks)
            elif 1 - p <= self.KEPT_ONLY_BELOW:
                self.plan, self.kept_only = rows.dropout_plan(blocks, p), True
            else:
                self.kept = bernoulli_mask((blocks * rows.nnz,), 1.0 - p, rows.col.device)
                self.plan = MaskedPlan(rows.replicate(blocks), self.kept, self.scale)
                self.weights = self.plan.weights
        else:
            self.num_rows, self.plan = rows.shape[0], None
            self.dense = rows * dropout_mask((blocks, *rows.shape), p, rows.device) if p > 0 else rows

    def matmul(self, weight: torch.Tensor, subset: CSRPattern | torch.Tensor | None = None) -> torch.Tensor:
        """X_b·W_b for every block; with ``subset`` (:meth:`InputFeatures.subset`) only at those rows, with the same
        draw (the subset's entries with their part of the mask; the kept-entries plan computes all rows and
        selects)."""
        blocks, features, width = weight.shape
        if blocks != self.blocks:
            raise ValueError(f"drawn for {self.blocks} blocks, got weights for {blocks}")
        if self.plan is None:  # dense features; a subset comes as row positions
            dense = self.dense if subset is None else self.dense.index_select(-2, subset)
            return torch.matmul(dense, weight)
        table = weight.reshape(blocks * features, width)
        if subset is None:
            return bag_mm(self.plan, table).view(blocks, self.num_rows, width)
        if self.kept_only:
            out = bag_mm(self.plan, table).view(blocks, self.num_rows, width)
            return out.index_select(1, subset.parent_rows)
        plan = subset.replicate(blocks)  # the subset's entries, with their part of the mask
        if self.kept is not None:
            entries = subset.replicated_parent_entries(blocks, self.kept.numel() // blocks)
            scale = self.scale.index_select(0, entries) if isinstance(self.scale, torch.Tensor) else self.scale
            plan = MaskedPlan(plan, self.kept.index_select(0, entries), scale)
        return bag_mm(plan, table).view(blocks, subset.num_rows, width)


# ---------------------------------------------------------------------------------------------------------
# Dense helpers


def stacked_linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x_b · W_b for every block: x (B, M, H), W (B, H, C) → (B, M, C). Narrow outputs are computed transposed,
    (W_bᵀ x_bᵀ)ᵀ, which MKL runs much faster for C ≪ H (e.g. 64 → 7 class logits; docs/performance.md)."""
    if 4 * weight.shape[2] <= weight.shape[1]:
        return torch.bmm(weight.transpose(1, 2), x.transpose(1, 2)).transpose(1, 2)
    return torch.bmm(x, weight)


def dropout(x: torch.Tensor, p: float | torch.Tensor, training: bool) -> torch.Tensor:
    """Inverted dropout with an independent mask per element (so per initialisation), from the global RNG; ``p`` a
    rate, or one rate per member (R,) (:func:`member_keep`)."""
    if isinstance(p, torch.Tensor):
        return x * member_mask(tuple(x.shape), member_keep(p, x.shape[0])) if training else x
    if not training or p <= 0:
        return x
    return x * dropout_mask(tuple(x.shape), p, x.device)


def member_keep(p: torch.Tensor, blocks: int) -> torch.Tensor:
    """The keep rates (float64) of ``blocks`` blocks from the dropout rates ``p`` (R,) of R members, each member's
    rate repeated over its blocks (its heads)."""
    keep = 1.0 - p.to(torch.float64)
    return keep if blocks == keep.numel() else keep.repeat_interleave(blocks // keep.numel())


def member_mask(shape: tuple[int, ...], keep: torch.Tensor) -> torch.Tensor:
    """Inverted-dropout mask (float32) of ``shape`` (blocks first) with block b's keep rate ``keep[b]``: 1/keep
    (rounded once, as the single rate's mask) with probability keep (a uniform float32 draw below it, so a rate 0
    keeps every element), else 0."""
    view = keep.view(-1, *([1] * (len(shape) - 1)))
    kept = torch.rand(shape, device=keep.device) < view.to(torch.float32)
    return kept.to(torch.float32).mul_((1.0 / view).to(torch.float32))


def propagate(block: CSRPattern, x: torch.Tensor) -> torch.Tensor:
    """M · x_b for every block b: the (weighted) sparse block M (rows × cols) times x (B, cols, D) → (B, rows, D);
    one ``embedding_bag`` over the block-diagonal replica of M."""
    blocks, rows, width = x.shape
    out = bag_mm(block.replicate(blocks), x.reshape(blocks * rows, width))
    return out.view(blocks, block.num_rows, width)


def gather_rows(x: torch.Tensor, positions: torch.Tensor | None) -> torch.Tensor:
    """x[:, positions] for x (B, N, D) (positions None = all rows)."""
    return x if positions is None else x.index_select(1, positions)


def glorot_(weight: torch.Tensor, generator: torch.Generator) -> None:
    """TF ``glorot_uniform_initializer`` for one matrix (fan_in, fan_out) = weight's last two dimensions; leading
    dimensions (heads, kernels) are independent matrices of that shape. In place, from ``generator``."""
    fan_in, fan_out = weight.shape[-2], weight.shape[-1]
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    with torch.no_grad():
        weight.uniform_(-bound, bound, generator=generator)


def stacked_parameter(inits: int, *shape: int) -> nn.Parameter:
    """A zero parameter (R, *shape)."""
    return nn.Parameter(torch.zeros(inits, *shape))


# ---------------------------------------------------------------------------------------------------------
# The model contract


class StackedModel(nn.Module):
    """R independent initialisations of one network; every parameter has a leading dimension R (dim 0).

    Subclasses set ``l2_parameters`` (names of the parameters the L2 term covers, the released code's choice per
    model; docs/protocols/pitfalls.md#models-table-4), create their
    parameters with :func:`stacked_parameter` and fill initialisation r in :meth:`init_weights` from the
    generator of ``seeds[r]``.

    ``member_keys``: the config keys whose values the members of one stack may each have their own of (tuning trials
    stacked: :meth:`vary`); each is an attribute of the model, a number or an (R,) tensor. The weight decay is one of
    every model; a dropout rate where the model draws its dropout through :func:`dropout` and :class:`DroppedInput`."""

    l2_parameters: tuple[str, ...] = ()
    member_keys: tuple[str, ...] = ("weight_decay",)

    def __init__(self, graph: NodeGraph, weight_decay: float) -> None:
        super().__init__()
        self.num_nodes, self.num_classes = graph.num_nodes, graph.num_classes
        self.weight_decay = float(weight_decay)
        self.device = graph.edge_index.device

    def reset_parameters(self, seeds: list[int]) -> None:
        """Initialisation r from ``torch.Generator().manual_seed(seeds[r])``, one after the other, on the CPU (the
        same numbers on every device); then the parameters move to the graph's device."""
        for r, seed in enumerate(seeds):
            self.init_weights(r, torch.Generator().manual_seed(int(seed)))
        self.to(self.device)

    def init_weights(self, r: int, generator: torch.Generator) -> None:
        """Fill initialisation r of every parameter from ``generator`` (each subclass implements it)."""
        raise NotImplementedError

    def forward(self, nodes: torch.Tensor | None, training: bool) -> torch.Tensor:
        """logits (R, M, C) at ``nodes`` (M,) int64 (None = all N nodes); dropout only when training."""
        raise NotImplementedError

    def vary(self, key: str, values: list[float]) -> None:
        """Give the members their own values of ``key`` (one of :attr:`member_keys`; ``values`` in member order): an
        (R,) float64 tensor on the model's device, or the number itself where every member has the same."""
        if key not in self.member_keys:
            raise ValueError(f"{type(self).__name__}: the members of a stack cannot differ in {key!r}")
        if len(values) != self.inits:
            raise ValueError(f"{key}: {len(values)} values for {self.inits} members")
        same = all(v == values[0] for v in values)
        setattr(self, key, float(values[0]) if same else torch.tensor(values, dtype=torch.float64, device=self.device))

    def l2_penalty(self) -> torch.Tensor:
        """(R,): Σ λ/2·‖w‖² over the tensors in ``l2_parameters`` (TF's ``l2_regularizer(λ)`` per tensor; λ a number
        or one per member)."""
        total = None
        for name in self.l2_parameters:
            term = _SquaredNorms.apply(getattr(self, name))
            total = term if total is None else total + term
        if total is None:
            return next(self.parameters()).new_zeros(self.inits)
        half = self.weight_decay / 2
        # one λ/2 per member: rounded to the weights' dtype once, as a number is (the same products)
        return total * (half.to(total.dtype) if isinstance(half, torch.Tensor) else half)

    @property
    def inits(self) -> int:
        """R, the number of initialisations in the stack."""
        return next(self.parameters()).shape[0]


class _SquaredNorms(torch.autograd.Function):
    """‖w_r‖² for every r of w (R, …): one pass forward (``vector_norm``) and one backward (2·g_r·w_r), much faster
    than autograd's square → sum on a large weight (docs/performance.md)."""

    @staticmethod
    def forward(ctx, weight: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(weight)
        return torch.linalg.vector_norm(weight.reshape(weight.shape[0], -1), dim=1).square()

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (weight,) = ctx.saved_tensors
        return weight * (2 * grad).view(-1, *([1] * (weight.dim() - 1)))


def count_stacked_parameters(model: nn.Module) -> int:
    """Trainable weights of ONE initialisation (every parameter's size without its leading R)."""
    return sum(p[0].numel() for p in model.parameters() if p.requires_grad)


# ---------------------------------------------------------------------------------------------------------
# Building from a config

# config "model" → (module in gnnbench.models, class)
STACKED_MODELS = {
    "GCN": ("gcn", "StackedGCN"),
    "GAT": ("gat", "StackedGAT"),
    "MoNet": ("monet", "StackedMoNet"),
    "GraphSAGE": ("graphsage", "StackedGraphSage"),
    "MLP": ("mlp", "StackedMLP"),
    "LogReg": ("mlp", "StackedLogReg"),
}


class ModelConfig:
    """Reads a model's config keys with one-line errors naming the key."""

    def __init__(self, config: dict) -> None:
        self.config, self.model = config, config.get("model")

    def get(self, key: str, default: Any = ...) -> Any:
        """The value of ``key``; ``default`` if it is missing or null, a ConfigError if there is no default."""
        if key not in self.config or self.config[key] is None:
            if default is ...:
                raise ConfigError(f"model {self.model}: config key {key!r} is missing; add it (the presets in "
                                  f"gnnbench/config/presets/pitfalls.yaml give the published values)")
            return default
        return self.config[key]

    def positive_int(self, key: str, default: Any = ...) -> int:
        """``key`` as an integer ≥ 1."""
        value = self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"model {self.model}: {key} must be a positive integer, got {value!r}; fix the config")
        return value

    def probability(self, key: str, default: Any = ...) -> float:
        """``key`` as a number in [0, 1) (a dropout rate)."""
        value = self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
            raise ConfigError(f"model {self.model}: {key} must be a number in [0, 1), got {value!r}; fix the config")
        return float(value)

    def nonnegative(self, key: str, default: Any = ...) -> float:
        """``key`` as a number ≥ 0."""
        value = self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigError(f"model {self.model}: {key} must be a number ≥ 0, got {value!r}; fix the config")
        return float(value)

    def flag(self, key: str, default: Any = ...) -> bool:
        """``key`` as true or false."""
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise ConfigError(f"model {self.model}: {key} must be true or false, got {value!r}; fix the config")
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: Any = ...) -> str:
        """``key`` as one of ``choices``."""
        value = self.get(key, default)
        if value not in choices:
            raise ConfigError(f"model {self.model}: unknown {key} {value!r}; choose one of {', '.join(choices)}")
        return value


def build_stacked_model(config: dict, graph: NodeGraph, seeds: list[int]) -> StackedModel:
    """The stacked network of ``config["model"]`` for ``graph``, initialisation r seeded with ``seeds[r]``."""
    name = config.get("model")
    if config.get("variant", "shchur2018") != "shchur2018":
        raise ConfigError(f"model {name} of variant {config['variant']} has no stacked form (only Shchur et al.'s "
                          "networks, variant shchur2018, have one); train its initialisations one after another")
    if name not in STACKED_MODELS:
        raise ConfigError(f"model: unknown model {name!r} for the pitfalls protocol; choose one of "
                          f"{', '.join(STACKED_MODELS)}")
    if not seeds:
        raise ConfigError(f"model {name}: no initialisation seeds given; give at least one")
    module, cls = STACKED_MODELS[name]
    model_cls: Callable[..., StackedModel] = getattr(importlib.import_module(f"gnnbench.models.{module}"), cls)
    return model_cls.from_config(ModelConfig(config), graph, [int(s) for s in seeds])


def stacked_member_keys(config: dict) -> tuple[str, ...]:
    """The :attr:`StackedModel.member_keys` of the stacked network of ``config["model"]`` (none is built)."""
    module, cls = STACKED_MODELS[config["model"]]
    return getattr(importlib.import_module(f"gnnbench.models.{module}"), cls).member_keys


__all__ = ["NodeGraph", "StackedModel", "build_stacked_model", "count_stacked_parameters"]
