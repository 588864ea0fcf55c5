"""A model from outside the package behind the model contract (:mod:`gnnbench.models.plugins` names and reads it):
a backbone composed with the dataset's encoders and the benchmark's task head (:class:`Backbone` inside
:class:`~gnnbench.models.net.GraphNet`), a full model wrapped as it is (:class:`FullModel`). Every build runs the
model once on a stand-in batch of the dataset's feature sizes (:func:`stand_in_batch`, :func:`dry`), which finds a
backbone's output width and refuses a wrong signature or output shape in one line before any job runs."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping

import torch
from torch import nn

from gnnbench.data.batching import GraphBatch, gather_ranges
from gnnbench.data.meta import DatasetMeta
from gnnbench.errors import ConfigError
from gnnbench.models.base import Architecture, Representation
from gnnbench.models.encoders import EdgeEncoder, NodeEncoder
from gnnbench.models.heads import make_head
from gnnbench.models.net import GraphNet
from gnnbench.models.plugins import (
    BACKBONE,
    PluginError,
    _one_line,
    cannot_do,
    constructor_arguments,
    describe_arguments,
)
from gnnbench.models.readout import READOUTS

STAND_IN_NODES = (3, 4)  # the stand-in batch: two graphs (unequal sizes: N, E, B and P all differ)
STAND_IN_PAIRS = 5


def construct(v, kwargs: dict, meta: DatasetMeta) -> nn.Module:
    """``cls(**kwargs)``; a missing argument or any error of the constructor is a one-line PluginError."""
    missing = [a for a in v.sig.required if a not in kwargs]
    if missing:
        raise PluginError(f"{describe_arguments(v)} needs {', '.join(missing)}; set "
                          f"{'them' if len(missing) > 1 else 'it'} (suite: the model's set; command line: --set "
                          f"{missing[0]}=...)")
    try:
        return v.cls(**kwargs)
    except ConfigError:
        raise
    except Exception as exc:  # the user's constructor: any error it raises
        shown = ", ".join(f"{k}={_short(val)}" for k, val in kwargs.items())
        raise PluginError(f"{v.cls.__name__}({shown}) failed for dataset {meta.name}: {_one_line(exc)}; fix the "
                          "model's arguments") from None


def _short(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor{tuple(value.shape)}"
    if isinstance(value, DatasetMeta):
        return "meta"
    text = repr(value)
    return text if len(text) <= 30 else text[:27] + "..."


def in_degree_histogram(store, graphs: torch.Tensor | None = None) -> torch.Tensor:
    """``deg[k]``: how many nodes have in-degree k, over ``graphs`` of the store (default all of them) — what PNA's
    degree scalers are normalised by."""
    node_ptr = store.node_ptr.to(torch.int64)
    dst = store.edge_index[1].to(torch.int64) + torch.repeat_interleave(node_ptr[:-1], store.num_edges)
    degree = torch.bincount(dst, minlength=int(node_ptr[-1]))
    if graphs is not None:
        graphs = torch.as_tensor(graphs, dtype=torch.int64)
        degree = degree.index_select(0, gather_ranges(node_ptr[graphs], store.num_nodes[graphs]))
    return torch.bincount(degree)


def stand_in_batch(meta: DatasetMeta, pe_dim: int | None = None):
    """Two small graphs (rings of 3 and 4 nodes, both directions) with inputs of the dataset's kinds and sizes, pairs
    to score (link prediction) and positional encodings of ``pe_dim`` dimensions; values from a fixed generator
    (torch's global one is not drawn from)."""
    generator = torch.Generator().manual_seed(0)
    counts = torch.tensor(STAND_IN_NODES)
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])
    src, dst = [], []
    for start, n in zip(ptr[:-1].tolist(), STAND_IN_NODES, strict=True):  # two graphs: a constant, not data
        ring = torch.arange(n) + start
        nxt = torch.roll(ring, -1)
        src += [ring, nxt]
        dst += [nxt, ring]
    edge_index = torch.stack([torch.cat(src), torch.cat(dst)])
    num_nodes, num_edges = int(ptr[-1]), edge_index.shape[1]

    def features(feature, rows: int):
        if feature is None:
            return None
        if feature.kind == "categorical":
            return torch.randint(0, feature.size, (rows,), generator=generator)
        return torch.rand(rows, feature.size, generator=generator)

    pairs = torch.randint(0, num_nodes, (2, STAND_IN_PAIRS), generator=generator)
    return GraphBatch(edge_index=edge_index, batch=torch.repeat_interleave(torch.arange(len(STAND_IN_NODES)), counts),
                      ptr=ptr, num_graphs=len(STAND_IN_NODES), x=features(meta.node_features, num_nodes),
                      edge_attr=features(meta.edge_features, num_edges),
                      pe=None if pe_dim is None else torch.rand(num_nodes, pe_dim, generator=generator),
                      pairs=pairs if meta.task == "link_prediction" else None)


@contextlib.contextmanager
def dry(module: nn.Module):
    """The module to run a dry forward with, in eval mode and without gradients: the module itself where it has lazy
    parameters (the dry forward materialises them), else a copy (so that nothing a forward caches — e.g. a layer's
    normalised stand-in graph — stays in the model)."""
    lazy = any(isinstance(p, nn.parameter.UninitializedParameter) for p in module.parameters())
    target = module
    if not lazy:
        with contextlib.suppress(Exception):  # a module that cannot be copied runs itself
            target = copy.deepcopy(module)
    training = target.training
    target.eval()
    try:
        with torch.no_grad():
            yield target
    finally:
        target.train(training)


def _run(v, call, meta: DatasetMeta):
    try:
        return call()
    except ConfigError:
        raise
    except Exception as exc:  # the user's forward: any error on the stand-in batch
        raise PluginError(f"{v.cls.__name__}.forward failed on a stand-in batch of dataset {meta.name}'s feature "
                          f"sizes: {_one_line(exc)}; fix the model (or its arguments)") from None


class Backbone(Architecture):
    """A user's backbone inside gnnbench's composition: called with the batch's tensors by name (``arguments``, the
    forward's), returns the node representations; ``raw_edges``: continuous edge features reach ``edge_attr``
    unencoded; ``edge_weight``: the one continuous edge feature reaches ``edge_weight``."""

    def __init__(self, module: nn.Module, arguments: tuple[str, ...], *, input_width: int,
                 edge_input_width: int | None, uses_edges: bool, raw_edges: bool, edge_weight: bool,
                 project_continuous: bool, tasks: tuple[str, ...]) -> None:
        super().__init__()
        self.module = module
        self.arguments = arguments
        self.input_width, self.edge_input_width = input_width, edge_input_width
        self.uses_edges, self.raw_edges, self.edge_weight = uses_edges, raw_edges, edge_weight
        self.project_continuous = project_continuous
        self.tasks = tasks
        self.out_width = 0  # set from the dry forward

    def call(self, module: nn.Module, h: torch.Tensor, e: torch.Tensor | None, batch) -> torch.Tensor:
        """``module`` (this backbone's, or its dry-forward copy) on the batch's tensors, passed by name."""
        kwargs = {}
        for name in self.arguments:
            if name == "x":
                kwargs["x"] = h
            elif name == "edge_index":
                kwargs["edge_index"] = batch.edge_index
            elif name == "edge_attr":
                if e is None and self.raw_edges:
                    e = batch.edge_attr if batch.edge_attr.dim() == 2 else batch.edge_attr.unsqueeze(-1)
                if e is not None:
                    kwargs["edge_attr"] = e
            elif name == "edge_weight":
                if self.edge_weight:
                    kwargs["edge_weight"] = batch.edge_attr.reshape(-1)
            elif name == "batch":
                kwargs["batch"] = batch.batch
            elif name == "ptr":
                kwargs["ptr"] = batch.ptr
        return module(**kwargs)

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, batch) -> Representation:
        """The user's module on the encoded inputs ``h``, ``e`` and the batch: its node representations."""
        return Representation(self.call(self.module, h, e, batch))


class FullModel(nn.Module):
    """A user's full model behind the model contract: ``forward(batch)`` → its outputs (a (B, 1) or (P, 1) output of
    a one-target task squeezed to (B,) / (P,)); ``aux_loss`` is the model's own, else 0.0; other attributes (e.g.
    ``l2_penalty``) are the model's."""

    own_readout = True

    def __init__(self, module: nn.Module, squeeze: bool = False) -> None:
        super().__init__()
        self.module = module
        self.squeeze = squeeze

    def forward(self, batch):
        """The user's model on the ``GraphBatch``; a one-target (B, 1) or (P, 1) output squeezed."""
        out = self.module(batch)
        return out.squeeze(-1) if self.squeeze else out

    @property
    def aux_loss(self):
        """The model's own ``aux_loss`` after its last forward (added to the training loss), else 0.0."""
        return getattr(self.module, "aux_loss", 0.0)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "module":
                raise
            return getattr(self.module, name)


def build(v, config: Mapping, data, default_variant: str | None) -> nn.Module:
    """The plugin ``v`` built for ``data`` (a :class:`~gnnbench.models.build.ModelData`) from its run config."""
    cfg = dict(config)
    meta = data.meta
    if meta.task not in v.tasks:
        raise PluginError(cannot_do(v, meta))
    pe_dim = cfg.get("pos_enc_dim") if cfg.get("pos_enc") else None
    if cfg.get("pos_enc") and not pe_dim:
        raise PluginError("pos_enc is true but pos_enc_dim is missing or 0; set pos_enc_dim (e.g. 20)", "pos_enc_dim")
    deg = None
    if {"deg"} & (set(v.sig.arguments) | set(v.sig.layer_arguments)) and "deg" not in cfg:
        if data.store is not None:
            deg = in_degree_histogram(data.store, getattr(data, "train_graphs", None))
        else:  # no data yet (a check, a parameter count): the stand-in batch's histogram
            stand_in = stand_in_batch(meta)
            deg = torch.bincount(torch.bincount(stand_in.edge_index[1], minlength=stand_in.num_nodes))
    model = (_build_backbone if v.kind == BACKBONE else _build_full)(v, cfg, meta, pe_dim, deg, default_variant)
    prepare = getattr(model.architecture.module if v.kind == BACKBONE else model.module, "prepare", None)
    if callable(prepare) and data.store is not None:
        prepare(data.store)
    return model


def _value(cfg: Mapping, v, key: str):
    """A key's value from the config, else the constructor's default."""
    return cfg.get(key, v.sig.defaults.get(key))


def _build_backbone(v, cfg: dict, meta: DatasetMeta, pe_dim: int | None, deg, default_variant: str | None):
    readout = cfg.get("readout", "mean")
    if readout not in READOUTS:
        raise PluginError(f"unknown readout {readout!r}; choose one of {', '.join(READOUTS)}", "readout")
    feature = meta.node_features
    explicit = cfg.get("in_channels")
    if explicit is not None:
        width, project = int(explicit), True
    elif feature is not None and feature.kind == "continuous" and pe_dim is None:
        width, project = feature.size, False
    else:
        hidden = _value(cfg, v, "hidden_channels")
        if not isinstance(hidden, int) or isinstance(hidden, bool):
            what = "positional encodings" if pe_dim is not None or feature is None else "categorical node features"
            raise PluginError(f"dataset {meta.name} has {what}, which gnnbench encodes into in_channels features for "
                              f"{v.family}; set in_channels (or hidden_channels)", "in_channels")
        width, project = hidden, True

    # edges: encoded edge features where the forward takes edge_attr; the one continuous feature as edge_weight
    edges = meta.edge_features if cfg.get("edge_feat", True) else None
    takes_attr, takes_weight = "edge_attr" in v.sig.forward, "edge_weight" in v.sig.forward
    attr_required = "edge_attr" in v.sig.forward_required
    edge_width = raw_edges = None
    edge_encoder = None
    if takes_attr and (edges is not None or attr_required):
        explicit_edges = cfg.get("edge_dim")
        if edges is not None and edges.kind == "continuous" and explicit_edges is None:
            edge_width, raw_edges = edges.size, True
        else:
            edge_width = int(explicit_edges) if explicit_edges is not None else width
    edge_weight = takes_weight and edges is not None and edges.kind == "continuous" and edges.size == 1

    injected = {"in_channels": width, "edge_dim": edge_width, "deg": deg}
    module = construct(v, constructor_arguments(v, cfg, default_variant, injected), meta)
    try:
        node_encoder = NodeEncoder(feature, width, pe_dim, meta.pe_usage, project_continuous=project)
        if edge_width is not None and not raw_edges:
            edge_encoder = EdgeEncoder(edges, edges is not None, edge_width)
    except ValueError as exc:
        raise PluginError(f"{v.family} on dataset {meta.name}: {exc}; change the config") from None
    arch = Backbone(module, v.sig.forward, input_width=width, edge_input_width=edge_width,
                            uses_edges=edge_encoder is not None, raw_edges=bool(raw_edges), edge_weight=edge_weight,
                            project_continuous=project, tasks=v.tasks)
    batch = stand_in_batch(meta, pe_dim)
    with dry(module) as target:
        h = node_encoder(batch.x, batch.pe)
        e = edge_encoder(batch.edge_attr, batch.num_edges) if edge_encoder is not None else None
        out = _run(v, lambda: arch.call(target, h, e, batch), meta)
    _check_nodes(v, out, batch)
    arch.out_width = int(out.shape[1])
    try:
        head = make_head(meta.task, arch, meta.num_outputs, readout, meta.num_graph_outputs)
    except ValueError as exc:
        raise PluginError(f"{v.family} on dataset {meta.name}: {exc}; change the config") from None
    net = GraphNet(node_encoder, edge_encoder, arch, head, 0.0)
    net.aux_loss, net.own_readout = 0.0, False
    return net


def _check_nodes(v, out, batch) -> None:
    n = batch.num_nodes
    name = f"{v.cls.__name__}.forward"
    if not isinstance(out, torch.Tensor):
        raise PluginError(f"{name} returned {type(out).__name__}, not a tensor; a backbone returns the node "
                          f"representations (N, H) (or make it a full model: forward(batch) → the task's outputs)")
    if out.dim() != 2 or out.shape[0] != n:
        what = ("a 1-D tensor: keep the feature dimension (e.g. out.unsqueeze(-1))" if out.dim() == 1 and
                out.shape[0] == n else "not one row per node: a backbone returns (N, H) node representations and "
                "gnnbench's head pools them (or make it a full model)")
        raise PluginError(f"{name} returned shape {tuple(out.shape)} on a stand-in batch of {n} nodes, {what}")
    if not out.is_floating_point():
        raise PluginError(f"{name} returned a {out.dtype} tensor; node representations are floating point")
    if out.shape[1] == 0:  # the head would read nothing: a chance-level model that trains without an error
        raise PluginError(f"{name} returned shape {tuple(out.shape)} on a stand-in batch of {n} nodes: node "
                          "representations without features; give the model a width of at least 1 (e.g. "
                          "hidden_channels)")


def _build_full(v, cfg: dict, meta: DatasetMeta, pe_dim: int | None, deg, default_variant: str | None):
    feature, edges = meta.node_features, meta.edge_features
    injected = {"meta": meta, "in_channels": None if feature is None else feature.size,
                "edge_dim": None if edges is None else edges.size, "out_channels": meta.num_outputs,
                "num_classes": meta.num_outputs, "deg": deg}
    module = construct(v, constructor_arguments(v, cfg, default_variant, injected), meta)
    batch = stand_in_batch(meta, pe_dim)
    with dry(module) as target:
        out = _run(v, lambda: target(batch), meta)
    squeeze = _check_outputs(v, out, batch, meta)
    return FullModel(module, squeeze)


def expected_outputs(meta: DatasetMeta, batch) -> tuple[tuple[int, ...], ...]:
    """The output shapes the task asks for on ``batch`` (one per output; multitask: node, then graph)."""
    n, c = batch.num_nodes, meta.num_outputs
    task = meta.task
    if task == "node_classification":
        return ((n, c),)
    if task == "graph_classification":
        return ((batch.num_graphs, c),)
    if task == "graph_regression":
        return ((batch.num_graphs,) if c == 1 else (batch.num_graphs, c),)
    if task == "edge_classification":
        return ((batch.num_edges, c),)
    if task == "link_prediction":
        return ((batch.pairs.shape[1],),)
    return ((n, c), (batch.num_graphs, meta.num_graph_outputs))


def _check_outputs(v, out, batch, meta: DatasetMeta) -> bool:
    """Whether the full model's output fits the task (True: squeeze a (B, 1) / (P, 1) output); else a PluginError
    naming the expected shape."""
    expected = expected_outputs(meta, batch)
    got = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    shapes = tuple(tuple(o.shape) if isinstance(o, torch.Tensor) else type(o).__name__ for o in got)
    squeeze = len(expected) == 1 and len(expected[0]) == 1 and shapes == ((*expected[0], 1),)
    if shapes == expected or squeeze:
        return squeeze
    where = (f"a stand-in batch of {batch.num_graphs} graphs, {batch.num_nodes} nodes, {batch.num_edges} edges"
             + (f", {batch.pairs.shape[1]} pairs" if batch.pairs is not None else ""))
    want = " and ".join(str(s) for s in expected)
    raise PluginError(f"{v.cls.__name__}.forward returned shape {', '.join(map(str, shapes))} on {where}; "
                      f"{meta.task} on dataset {meta.name} needs {want}"
                      + (" (a tuple: node outputs, graph outputs)" if len(expected) > 1 else "")
                      + "; fix the model's output")


__all__ = ["Backbone", "FullModel", "build", "expected_outputs", "in_degree_histogram", "stand_in_batch"]
