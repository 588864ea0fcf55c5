"""Building the networks of the registry (:mod:`gnnbench.models.registry`): :func:`build_model`, the one entry point,
for a run config and the dataset's description; the checks that a model fits a dataset and builds
(:func:`check_fits`, :func:`check_buildable`) before any job runs; parameter counts.

Contract of every model :func:`build_model` returns:

* ``forward(batch: GraphBatch)`` → the task's outputs: node scores (N, C), edge scores, graph scores (B, C) or
  link scores, as the dataset's task asks;
* ``aux_loss``: extra loss terms of the last forward pass (a scalar tensor for DiffPool, else 0.0), added to the
  trainer's loss;
* ``own_readout``: True for models that pool their own way (Errica's classifiers, DGCNN's SortPooling, DiffPool);
* optional ``prepare(store)``: per-dataset precomputation (ECC's coarsening hierarchy), called by :func:`build_model`
  when :class:`ModelData` carries the store.

A family variant may also have a stacked form, :func:`build_stacked` (``StackedModel``: R initialisations with a
leading dimension R, what protocol pitfalls trains); its single form from :func:`build_model` is that stacked model
with R = 1 behind the contract (forward(batch) → (N, C) logits at every node of its one graph).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from gnnbench.data.meta import DatasetMeta
from gnnbench.errors import ConfigError
from gnnbench.models import adapters
from gnnbench.models.encoders import EdgeEncoder, NodeEncoder
from gnnbench.models.heads import make_head
from gnnbench.models.heterophily.inputs import NODE_WIDE, input_features
from gnnbench.models.labelprop import LabelPropagation
from gnnbench.models.net import GraphNet
from gnnbench.models.plugins import PluginError, cannot_do
from gnnbench.models.readout import READOUTS
from gnnbench.models.registry import (
    CLASSIFIER,
    COMPOSED,
    DEFAULT_VARIANT,
    NODE_CLASSIFIER,
    PROPAGATION,
    STACKED,
    Variant,
    resolve,
    variants,
)
from gnnbench.models.stacked import NodeGraph, build_stacked_model
from gnnbench.papers import DWIVEDI2020, PLUGIN, SHCHUR2018


@dataclass
class ModelData:
    """What a model is built for: the dataset's ``meta``; ``sizes`` the node count of every graph (np.int64; DGCNN's
    k and DiffPool's node count are computed from it); ``store`` the whole dataset (passed to ``prepare``);
    ``graph`` the one graph of a transductive dataset (:class:`~gnnbench.models.stacked.NodeGraph`: what Shchur's
    models are bound to); ``train_graphs`` the ids of the store's training graphs where a model's statistics must
    come from them alone (a plugin's PNA degree histogram; default: every graph)."""

    meta: DatasetMeta
    sizes: np.ndarray | None = None
    store: object | None = None
    graph: object | None = None
    train_graphs: torch.Tensor | None = None


class SingleStacked(nn.Module):
    """A stacked model of R = 1 behind the model contract: ``forward(batch)`` → (N, C) logits at every node of the
    one graph the model is bound to (the batch must be that graph; a trainer picks its target nodes). The model's
    own L2 terms (Shchur's, on the tensors each model lists) are ``l2_penalty()``, λ = ``weight_decay`` of the
    config (0 where the running protocol has no such key); ``aux_loss`` stays 0.0."""

    own_readout = False

    def __init__(self, stacked: nn.Module) -> None:
        super().__init__()
        self.stacked = stacked
        self.aux_loss: torch.Tensor | float = 0.0

    def forward(self, batch) -> torch.Tensor:
        """(N, C) logits at every node of the bound graph; ``batch`` must be that graph (or None)."""
        if batch is not None and batch.num_nodes != self.stacked.num_nodes:
            raise ValueError(f"this model is bound to a graph of {self.stacked.num_nodes} nodes; got a batch of "
                             f"{batch.num_nodes}")
        return self.stacked(None, self.training)[0]

    def l2_penalty(self) -> torch.Tensor:
        """The model's own L2 term, λ/2 · Σ ‖w‖² over the tensors the model lists (λ = ``weight_decay``)."""
        return self.stacked.l2_penalty()[0]


def build_model(config: Mapping, data: ModelData | DatasetMeta, *, default_variant: str = DEFAULT_VARIANT,
                seed: int | None = None) -> nn.Module:
    """The network a resolved run config names, built for ``data`` (a :class:`ModelData`; a bare
    :class:`DatasetMeta` is ``ModelData(meta)``). ``default_variant``: the running protocol's. ``seed``: weights of a
    stacked model's single form (default: drawn from torch's global generator, which the trainer seeds); the other
    models draw from the global generator. A missing key or an impossible value is a one-line ConfigError."""
    if isinstance(data, DatasetMeta):
        data = ModelData(data)
    v = resolve(config, default_variant)
    if v.variant == PLUGIN:
        return adapters.build(v, config, data, default_variant)
    if v.kind == COMPOSED:
        model = _build_composed(dict(config), data.meta, v)
        model.aux_loss, model.own_readout = 0.0, False
        return model
    if v.kind == CLASSIFIER:
        sizes = data.sizes
        if sizes is None and data.store is not None:
            sizes = data.store.num_nodes.numpy()
        if sizes is None:
            raise ConfigError(f"model {v.family} ({v.variant}) needs the node count of every graph of the dataset "
                              "(ModelData.sizes)")
        model = _build_classifier(dict(config), data.meta, np.asarray(sizes, dtype=np.int64), v)
        model.own_readout = True
        if data.store is not None:
            model.prepare(data.store)
        return model
    if v.kind == NODE_CLASSIFIER:
        return _build_node_classifier(dict(config), data, v)
    if v.kind == STACKED:
        graph = data.graph if data.graph is not None else node_graph(data)
        if seed is None:
            seed = int(torch.randint(0, 2**31 - 1, (), dtype=torch.int64))
        return SingleStacked(build_stacked(config, graph, [seed], default_variant=default_variant))
    raise ConfigError(f"model {v.family} has no weights: it runs only under protocol pitfalls (one propagation per "
                      "split); pick a trainable model")


def build_stacked(config: Mapping, graph, seeds: list[int], *, default_variant: str = SHCHUR2018):
    """The stacked (batched) form of a variant that has one: R = len(seeds) initialisations of Shchur's network on
    ``graph``, initialisation r seeded with ``seeds[r]``."""
    v = resolve(config, default_variant)
    if v.stacked is None:
        raise ConfigError(f"model {v.family} ({v.variant}) has no stacked form; train its initialisations one "
                          "after another")
    return build_stacked_model(dict(config), graph, seeds)


def node_graph(data: ModelData):
    """The NodeGraph of a one-graph dataset from its store (node features ``x``, sparse where stored sparse)."""
    store, meta = data.store, data.meta
    if store is None or store.num_graphs != 1:
        raise ConfigError(f"Shchur's models are bound to one graph with node labels; dataset {meta.name} has "
                          f"{meta.num_graphs} graphs ({meta.task}): use one of the other zoos' models")
    features = store.sparse["x"].to_torch() if "x" in getattr(store, "sparse", {}) else store.node["x"].float()
    return NodeGraph(int(store.num_nodes[0]), store.edge_index.to(torch.int64), features, max(meta.num_outputs, 1))


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters (buffers excluded), as the benchmark's ``view_model_param``; a single stacked form
    counts one initialisation."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def num_parameters(config: Mapping, data: ModelData | DatasetMeta, *, default_variant: str = DEFAULT_VARIANT) -> int:
    """Trainable weights of the model a config names, on stand-in data of the dataset's sizes where the data itself
    is not given (0 for a model without weights)."""
    if isinstance(data, DatasetMeta):
        data = ModelData(data)
    v = resolve(config, default_variant)
    if v.kind == PROPAGATION:
        return 0
    # a plugin's count is taken after its dry forward (lazy parameters resolved)
    data = stand_in(data) if v.kind in (STACKED, CLASSIFIER) else data
    return count_parameters(build_model(config, data, default_variant=default_variant, seed=0))


# ---------------------------------------------------------------------------------------------------------
# Does a model fit a dataset? (checked before any job runs)


def check_fits(config: Mapping, meta: DatasetMeta, *, default_variant: str = DEFAULT_VARIANT,
               positional_encodings: bool = True) -> Variant:
    """Refuse, in one line, a model that cannot run on a dataset: a task the model does not do, Shchur's
    one-graph models on a dataset of many graphs, a dense WL-GNN on a dataset of one graph, Errica's classifiers
    without continuous node features, positional encodings under a protocol that computes none
    (``positional_encodings`` False)."""
    v = resolve(config, default_variant)
    if v.variant == PLUGIN:
        if meta.task not in v.tasks:
            raise PluginError(cannot_do(v, meta))
        if config.get("pos_enc") and not positional_encodings:
            raise PluginError("pos_enc needs positional encodings, which this protocol does not compute; "
                                         "set pos_enc: false", "pos_enc")
        return v
    name = f"model {v.family}" + (f" ({v.variant})" if len(variants(v.family)) > 1 else "")
    if meta.task not in v.tasks:
        reason = ""
        if v.kind == COMPOSED and v.load().unsupported_reason:
            reason = f": {v.load().unsupported_reason}"
        raise ConfigError(f"{name} cannot do {meta.task} (dataset {meta.name}){reason}; it "
                          f"supports {', '.join(v.tasks)}")
    if v.kind in (STACKED, PROPAGATION) and not meta.transductive:
        raise ConfigError(f"{name} is bound to one graph with node labels, but dataset {meta.name} has "
                          f"{meta.num_graphs} graphs; use the {DWIVEDI2020} variant or another model")
    if v.dense and meta.num_graphs == 1:
        nodes = meta.statistics.get("num_nodes") if isinstance(meta.statistics, dict) else None
        size = f" ({nodes:,} nodes)" if isinstance(nodes, int) else ""
        raise ConfigError(f"{name} builds a dense n×n tensor per graph; dataset {meta.name} is one graph{size}, so "
                          "the tensor would span every node; pick a message-passing model")
    if v.kind == NODE_CLASSIFIER:
        _check_node_classifier(config, meta, name)
    if v.kind == CLASSIFIER and (meta.node_features is None or meta.node_features.kind != "continuous"):
        kind = meta.node_features.kind if meta.node_features else "none"
        raise ConfigError(f"{name} reads continuous node features, but dataset {meta.name} has {kind}; pick a "
                          f"{DWIVEDI2020} model (its encoders embed categorical features)")
    if config.get("pos_enc") and not positional_encodings:
        raise ConfigError(f"{name}: pos_enc needs positional encodings, which this protocol does not compute; set "
                          "pos_enc: false")
    return v


def stand_in(data: ModelData) -> ModelData:
    """``data`` with stand-ins for what is not known before the data exists: node counts (ten graphs of 64 nodes)
    and, for a one-graph dataset, a two-node graph with the dataset's feature width and classes."""
    meta = data.meta
    sizes = data.sizes if data.sizes is not None else np.full(10, 64, dtype=np.int64)
    graph = data.graph
    if graph is None and data.store is None:
        width = meta.node_features.size if meta.node_features is not None else 1
        graph = NodeGraph(2, torch.tensor([[0, 1], [1, 0]]), torch.zeros(2, width), max(meta.num_outputs, 1))
    return ModelData(meta, sizes, data.store, graph)


def check_buildable(config: Mapping, meta: DatasetMeta, *, default_variant: str = DEFAULT_VARIANT,
                    positional_encodings: bool = True) -> Variant:
    """:func:`check_fits`, then build the model once on stand-in data of the dataset's sizes (unknown keys, missing
    keys and impossible values fail here, before any job runs; a plugin's dry forward checks its signature and output
    shape, :mod:`gnnbench.models.plugins`). A trainable model without trainable parameters is refused: an optimiser
    over nothing trains nothing (label propagation, which has no weights, is not trained by one)."""
    v = check_fits(config, meta, default_variant=default_variant, positional_encodings=positional_encodings)
    if v.kind == PROPAGATION:
        if default_variant != v.variant:
            raise ConfigError(f"model {v.family} has no weights: it runs only under its own paper's protocol (one "
                              "propagation per split); pick a trainable model")
        graph = stand_in(ModelData(meta)).graph
        LabelPropagation(graph, torch.zeros(2, dtype=torch.long), torch.zeros(1, dtype=torch.long),
                         config.get("prop_type", "vanilla"), config.get("return_prob", 0.0))
        return v
    if v.variant == PLUGIN:
        model = build_model(config, ModelData(meta), default_variant=default_variant)
    else:
        model = build_model(config, stand_in(ModelData(meta)), default_variant=default_variant, seed=0)
    if count_parameters(model) == 0:
        raise ConfigError(f"model {v.family} has no trainable parameters (none with requires_grad), so training "
                          "would change nothing and report its initial scores; give it weights (e.g. an nn.Linear)")
    return v


# ---------------------------------------------------------------------------------------------------------
# The zoos' own builders


def _build_composed(cfg: dict, meta: DatasetMeta, v: Variant):
    """encoders → architecture → head for a dwivedi2020 model (the benchmark's composition)."""
    name = v.family
    arch_cls = v.load()
    if meta.task not in arch_cls.tasks:
        raise ConfigError(f"model {name} cannot do {meta.task} (dataset {meta.name}): {arch_cls.unsupported_reason}; "
                          f"it supports {', '.join(arch_cls.tasks)}")
    missing = [k for k in arch_cls.required if k not in cfg]
    if missing:
        raise ConfigError(f"model {name} needs config key(s) {', '.join(missing)}; add them (or use a preset)")
    pe_dim = cfg.get("pos_enc_dim") if cfg.get("pos_enc") else None
    if cfg.get("pos_enc") and not pe_dim:
        raise ConfigError("pos_enc is true but pos_enc_dim is missing or 0; set pos_enc_dim (e.g. 20)")
    try:
        architecture = arch_cls.from_config(cfg, meta)
        readout = architecture.readout or cfg.get("readout", "mean")
        if readout not in READOUTS:
            raise ConfigError(f"readout: unknown readout {readout!r} for model {name}; choose one of "
                              f"{', '.join(READOUTS)}")
        node_encoder = edge_encoder = None
        if not architecture.own_input:
            node_encoder = NodeEncoder(meta.node_features, architecture.input_width, pe_dim, meta.pe_usage,
                                       project_continuous=architecture.project_continuous)
            if architecture.uses_edges:
                ones_width = (meta.node_features.size if "edge_ones_node_width" in meta.net_conventions
                              and meta.node_features is not None else None)
                edge_encoder = EdgeEncoder(meta.edge_features, bool(cfg.get("edge_feat", False)),
                                           architecture.edge_input_width or architecture.input_width, ones_width)
        head = make_head(meta.task, architecture, meta.num_outputs, readout, meta.num_graph_outputs)
    except ValueError as exc:
        raise ConfigError(f"model {name} on dataset {meta.name}: {exc}; change the config") from None
    return GraphNet(node_encoder, edge_encoder, architecture, head, cfg.get("in_feat_dropout", 0.0))


# the released train.py's defaults of the platonov2023 architecture keys
NODE_CLASSIFIER_DEFAULTS = {"num_layers": 5, "hidden_dim": 512, "hidden_dim_multiplier": 1.0, "num_heads": 8,
                            "normalization": "LayerNorm", "dropout": 0.2, "input_features": ["original"]}
CROSS_ENTROPY_LOSSES = ("cross_entropy", "weighted_cross_entropy")


def _graph_nodes(data: ModelData) -> int | None:
    """The node count of a one-graph dataset: from its store, its statistics, else its (stand-in) graph."""
    if data.store is not None:
        return int(data.store.num_nodes[0]) if data.store.num_graphs == 1 else None
    statistics = data.meta.statistics if isinstance(data.meta.statistics, dict) else {}
    nodes = (statistics.get("all") or {}).get("nodes") if isinstance(statistics.get("all"), dict) else None
    if isinstance(nodes, int):
        return nodes
    return data.graph.num_nodes if data.graph is not None else None


def _input_features(config: Mapping) -> tuple[str, ...]:
    """A platonov2023 config's ``input_features`` in the released order; a one-line ConfigError for a bad list."""
    try:
        return input_features(config.get("input_features", NODE_CLASSIFIER_DEFAULTS["input_features"]))
    except ValueError as exc:
        raise ConfigError(f"{exc}; e.g. [original] or [original, sgc]") from None


def _check_node_classifier(config: Mapping, meta: DatasetMeta, name: str) -> None:
    """What a platonov2023 node classifier needs of a dataset (:func:`check_fits`)."""
    features = _input_features(config)
    if any(f in ("original", "sgc") for f in features) and (meta.node_features is None
                                                           or meta.node_features.kind != "continuous"):
        kind = meta.node_features.kind if meta.node_features else "none"
        raise ConfigError(f"input_features: {name} reads continuous node features (original, sgc), but dataset "
                          f"{meta.name} has {kind}; set input_features: [identity] or [adjacency]")
    wide = [f for f in features if f in NODE_WIDE]
    if wide and not meta.transductive:
        raise ConfigError(f"input_features: {', '.join(wide)} give one input per node of one graph, but dataset "
                          f"{meta.name} has {meta.num_graphs} graphs; use original or sgc")
    if meta.num_outputs == 2 and meta.loss in CROSS_ENTROPY_LOSSES:
        raise ConfigError(f"{name} gives two classes one logit (binary cross-entropy, as released), but dataset "
                          f"{meta.name} is trained with {meta.loss}; run it under protocol heterophily")


def _build_node_classifier(cfg: dict, data: ModelData, v: Variant) -> nn.Module:
    """A platonov2023 node classifier (its own input layer, residual blocks and output layer)."""
    meta = data.meta
    settings = {**NODE_CLASSIFIER_DEFAULTS, **{k: cfg[k] for k in NODE_CLASSIFIER_DEFAULTS if k in cfg}}
    width = meta.node_features.size if meta.node_features is not None else 0
    nodes = _graph_nodes(data)
    wide = [f for f in _input_features(settings) if f in NODE_WIDE]
    if wide and nodes is None:
        raise ConfigError(f"input_features: {', '.join(wide)} give one input per node, but the node count of dataset "
                          f"{meta.name} is unknown before it is built (its meta.json statistics all.nodes); build "
                          "the dataset first, or use original or sgc")
    try:
        return v.load()(width, meta.num_outputs, num_nodes=nodes, **settings)
    except ValueError as exc:
        raise ConfigError(f"model {v.family} ({v.variant}) on dataset {meta.name}: {exc}; change the config") from None


def _build_classifier(cfg: dict, meta: DatasetMeta, sizes: np.ndarray, v: Variant):
    """An errica2020 graph classifier (its own input layer, message passing, pooling and output MLP)."""
    cls = v.load()
    missing = [k for k in cls.required if k not in cfg]
    if missing:
        raise ConfigError(f"model {v.family} needs config key(s) {', '.join(missing)}; add them (or use a preset)")
    if meta.node_features is None:
        raise ConfigError(f"model {v.family} ({v.variant}) needs node features; dataset {meta.name} has none")
    try:
        return cls.from_config(cfg, meta, sizes)
    except ValueError as exc:
        raise ConfigError(f"model {v.family} on dataset {meta.name}: {exc}; change the config") from None


__all__ = ["ModelData", "SingleStacked", "build_model", "build_stacked", "check_buildable", "check_fits",
           "count_parameters", "node_graph", "num_parameters", "stand_in"]
