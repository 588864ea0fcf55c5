"""One registry of every network of the three zoos, and one model contract.

A network is registered as a *family* (``model`` in a config: GCN, GraphSAGE, GIN, ...) and a *variant*: which
paper's layer it is. One spelling per family across the zoos (the benchmark's ``GraphSage`` is ``GraphSAGE``).

- ``dwivedi2020``: Dwivedi et al., *Benchmarking Graph Neural Networks*: MLP GCN GraphSAGE GAT MoNet GIN GatedGCN
  RingGNN 3WLGNN MF — input encoders → L layers → task head (:class:`~gnnbench.models.net.GraphNet`), any task
  the architecture supports.
- ``shchur2018``: Shchur et al., *Pitfalls of Graph Neural Network Evaluation*: GCN GAT MoNet GraphSAGE MLP LogReg
  (two-layer node classifiers of one graph, with a *stacked* form that trains R initialisations at once) and
  LabelProp (no weights; runs only under protocol pitfalls).
- ``errica2020``: Errica et al., *A Fair Comparison of Graph Neural Networks for Graph Classification*: GIN
  GraphSAGE DGCNN DiffPool ECC MolecularFingerprint DeepMultisets — complete graph classifiers with their own
  readout.

A model from outside the package (a class named ``package.module:Class``, ``path/to/file.py:Class``, an entry point
of group ``gnnbench.models``, or PyTorch Geometric's models by class path) resolves to variant ``plugin``, kind
``backbone`` (composed with encoders and the task head like the benchmark's) or ``full``
(:mod:`gnnbench.models.plugins`; docs/model-contract.md).

Where two variants share a family their layers differ as :attr:`Variant.note` says (e.g. GCN: the benchmark's
DGL-style layer with batch norm and residuals vs Shchur's TF-style two-layer GCN).

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

Key ownership (which config keys come from where). Each variant declares its *architecture keys*
(:data:`ARCHITECTURE_KEYS`, one table per zoo); each protocol declares its *training keys* (``training_keys`` with
types, ``training_defaults`` for models of another paper) and its ``default_variant`` (its own paper's zoo). A run
config of protocol P for a model of variant V holds ``model``, ``variant`` (only where V is not P's default), V's
architecture keys and P's training keys. A preset of P's own protocol contributes everything it holds; a preset of
another protocol contributes only V's architecture keys, and the training keys come from P's
``training_defaults``, then the suite's ``set`` (:func:`gnnbench.config.presets.run_config`).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from gnnbench.data.meta import DatasetMeta
from gnnbench.errors import ConfigError
from gnnbench.papers import (
    ARCHITECTURE_KEYS,
    DWIVEDI2020,
    ERRICA2020,
    PLUGIN,
    SHCHUR2018,
)

DEFAULT_VARIANT = DWIVEDI2020  # the default protocol's (benchmarking-gnns) zoo

COMPOSED, STACKED, CLASSIFIER, PROPAGATION = "composed", "stacked", "classifier", "propagation"
NODE_ONLY = ("node_classification",)
GRAPH_CLASSIFICATION = ("graph_classification",)


@dataclass(frozen=True)
class Variant:
    """One registered network: ``family`` + ``variant``; ``target`` the class ("module:Class" under
    ``gnnbench.models``), ``stacked`` the class of its stacked form (None: none), ``kind`` how it is built
    (``composed``: encoders → architecture → task head; ``stacked``: a two-layer node classifier of one graph, single
    form = stacked with R = 1; ``classifier``: a complete graph classifier; ``propagation``: no weights),
    ``dense``: builds an n×n tensor per graph (refused on a dataset of one graph), ``note``: how its layer differs
    from the family's other variants."""

    family: str
    variant: str
    target: str
    kind: str
    stacked: str | None = None
    dense: bool = False
    note: str = ""

    @property
    def architecture_keys(self) -> dict[str, type | tuple]:
        """The config keys that belong to this variant's model, with their types (:data:`ARCHITECTURE_KEYS`)."""
        return ARCHITECTURE_KEYS[self.variant]

    @property
    def own_readout(self) -> bool:
        """True for a complete graph classifier (Errica et al.'s), which pools its own way."""
        return self.kind == CLASSIFIER

    def load(self) -> type:
        """The model's class, importing its module under ``gnnbench.models`` on first use."""
        module, cls = self.target.split(":")
        return getattr(importlib.import_module(f"gnnbench.models.{module}"), cls)

    @property
    def tasks(self) -> tuple[str, ...]:
        """The tasks the model does: a composed architecture's ``tasks``, graph classification for Errica et al.'s
        classifiers, node classification for Shchur et al.'s models."""
        if self.kind == COMPOSED:
            return tuple(self.load().tasks)
        return GRAPH_CLASSIFICATION if self.kind == CLASSIFIER else NODE_ONLY


def _zoo(variant: str, kind: str, entries: list[tuple]) -> list[Variant]:
    return [Variant(family, variant, target, kind, *rest) for family, target, *rest in entries]


_VARIANTS: list[Variant] = [
    *_zoo(DWIVEDI2020, COMPOSED, [
        ("MLP", "mlp:MLP", None, False, "L-layer MLP on node features, readout and task head of the benchmark"),
        ("GCN", "gcn:GCN", None, False, "DGL GraphConv (D^-1/2 (A+I) D^-1/2 on the directed graph) with batch "
                                        "norm, residual and dropout after each of L layers"),
        ("GraphSAGE", "graphsage:GraphSage", None, False, "the benchmark's GraphSageLayer: L layers, L2-normalised "
                                                          "output, batch norm, residual; aggregator sage_aggregator"),
        ("GAT", "gat:GAT", None, False, "L layers of n_heads heads with batch norm and residuals"),
        ("MoNet", "monet:MoNet", None, False, "L GMM layers on degree pseudo-coordinates, batch norm, residual"),
        ("GIN", "gin:GIN", None, False, "L GIN layers with n_mlp_GIN-layer MLPs, batch norm; per-layer readout"),
        ("GatedGCN", "gated_gcn:GatedGCN", None, False, "edge-gated residual layers (Bresson & Laurent)"),
        ("RingGNN", "ring_gnn:RingGNN", None, True, "dense equivariant Ring-GNN"),
        ("3WLGNN", "three_wl_gnn:ThreeWLGNN", None, True, "dense 3-WL GNN (Maron et al.)"),
        ("MF", "mf:MF", None, False, "matrix factorisation: one embedding per node id (link prediction)"),
    ]),
    *_zoo(SHCHUR2018, STACKED, [
        ("GCN", "gcn:StackedGCN", "gcn:StackedGCN", False, "the released TF two-layer GCN: symmetric "
         "normalisation without self loops (gcn_self_loops), dropout before each product, L2 on the first layer"),
        ("GAT", "gat:StackedGAT", "gat:StackedGAT", False, "two-layer GAT (num_heads per layer), input and "
         "coefficient dropout"),
        ("MoNet", "monet:StackedMoNet", "monet:StackedMoNet", False, "two-layer MoNet with num_kernels Gaussian "
         "kernels on r-dimensional pseudo-coordinates"),
        ("GraphSAGE", "graphsage:StackedGraphSage", "graphsage:StackedGraphSage", False, "two-layer GraphSAGE of "
         "the released code (mean, maxpool, meanpool aggregators; no L2 normalisation, no batch norm)"),
        ("MLP", "mlp:StackedMLP", "mlp:StackedMLP", False, "two-layer MLP on node features (no graph)"),
        ("LogReg", "mlp:StackedLogReg", "mlp:StackedLogReg", False, "logistic regression on node features"),
    ]),
    Variant("LabelProp", SHCHUR2018, "labelprop:LabelPropagation", PROPAGATION, None, False,
            "label propagation (prop_type vanilla or smoothed = LabelProp NL); no weights"),
    *_zoo(ERRICA2020, CLASSIFIER, [
        ("GIN", "graph_classifiers.gin:GIN", None, False, "Errica's GIN: sum of per-layer linear readouts, "
                                                          "hidden_units per layer"),
        ("GraphSAGE", "graph_classifiers.graphsage:GraphSAGE", None, False, "PyG SAGEConv layers (aggregation), "
                                                                            "global max pooling, MLP"),
        ("DGCNN", "graph_classifiers.dgcnn:DGCNN", None, False, "SortPooling (k from the dataset's graph sizes), "
                                                                "1-D convolutions"),
        ("DiffPool", "graph_classifiers.diffpool:DiffPool", None, False, "differentiable pooling; link and "
                                                                         "entropy losses as aux_loss"),
        ("ECC", "graph_classifiers.ecc:ECC", None, False, "edge-conditioned convolutions on a precomputed "
                                                          "coarsening hierarchy (prepare)"),
        ("MolecularFingerprint", "graph_classifiers.molecular_fingerprint:MolecularFingerprint", None, False,
         "structure-agnostic baseline: MLP on summed node features"),
        ("DeepMultisets", "graph_classifiers.deep_multisets:DeepMultisets", None, False,
         "structure-agnostic baseline: DeepSets over the nodes"),
    ]),
]
REGISTRY: dict[tuple[str, str], Variant] = {(v.family, v.variant): v for v in _VARIANTS}
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(v.family for v in _VARIANTS))


def variants(family: str | None = None) -> list[Variant]:
    """Every registered variant (of ``family``), in registry order."""
    return [v for v in _VARIANTS if family in (None, v.family)]


def families(variant: str) -> list[str]:
    """The families of one zoo, in registry order."""
    return [v.family for v in _VARIANTS if v.variant == variant]


def _plugins():
    """:mod:`gnnbench.models.plugins`, imported on first use (it imports the composition's modules)."""
    from gnnbench.models import plugins

    return plugins


def is_plugin(config: Mapping) -> bool:
    """Whether a config names a model from outside the package: ``variant: plugin``, a spelling with a colon or a
    dot, or a bare name that no zoo has but an installed entry point has (metadata only: nothing is imported)."""
    model = config.get("model")
    if config.get("variant") == PLUGIN or _plugins().is_plugin_spec(model):
        return True
    return (isinstance(model, str) and bool(model) and model not in FAMILIES
            and _plugins().entry_point(model) is not None)


def resolve(config: Mapping, default_variant: str = DEFAULT_VARIANT) -> Variant:
    """The registered network a config names: ``model`` (family) and ``variant`` (default: ``default_variant``
    where the family has it, else the family's only variant). A model from outside the package
    (:mod:`gnnbench.models.plugins`: ``package.module:Class``, ``path/to/file.py:Class``, an entry point) resolves
    to variant ``plugin``, kind ``backbone`` or ``full``; its class is imported here."""
    family, variant = config.get("model"), config.get("variant")
    if variant == PLUGIN or _plugins().is_plugin_spec(family):
        if variant == PLUGIN and family in FAMILIES:
            raise ConfigError(f"variant: model {family} is a network of the zoos, not a model of your own; drop "
                              f"variant {PLUGIN}")
        return _plugins().resolve_plugin(family, variant)
    if family not in FAMILIES:
        if isinstance(family, str) and family and _plugins().entry_point(family) is not None:
            return _plugins().resolve_plugin(family, variant)  # a bare name no zoo has: an installed entry point
        close = ([f for f in FAMILIES if f.lower() == str(family).lower()]
                 or difflib.get_close_matches(str(family), FAMILIES, n=1, cutoff=0.8))
        hint = f" (did you mean {close[0]}?)" if close else ""
        own = families(default_variant)
        others = [f for f in FAMILIES if f not in own]
        raise ConfigError(f"model: unknown model {family!r}{hint}; choose one of {', '.join(own)}"
                          + (f" (or, from another paper's zoo, {', '.join(others)})" if others else "")
                          + "; or a model of your own: package.module:Class, path/to/file.py:Class or an entry "
                          "point of group gnnbench.models (docs/model-contract.md)")
    candidates = [v.variant for v in variants(family)]
    if variant is None:
        variant = default_variant if default_variant in candidates else candidates[0]
        if len(candidates) > 1 and default_variant not in candidates:
            raise ConfigError(f"model {family} exists in several zoos ({', '.join(candidates)}); set variant "
                              "to one of them")
    if (family, variant) not in REGISTRY:
        raise ConfigError(f"variant: model {family} has variant(s) {', '.join(candidates)}, not {variant!r}; "
                          "set one of them (or leave variant out for the protocol's own)")
    return REGISTRY[(family, variant)]


@dataclass(frozen=True)
class ModelInfo:
    """What :func:`model_info` reports of a model: family, variant, kind, tasks, architecture keys, whether it has a
    stacked form, pools its own way, and builds dense n×n tensors."""

    family: str
    variant: str
    kind: str
    tasks: tuple[str, ...]
    architecture_keys: tuple[str, ...]
    has_stacked: bool
    own_readout: bool
    dense: bool


def model_info(config: Mapping, default_variant: str = DEFAULT_VARIANT) -> ModelInfo:
    """What the registry knows of the model a config names (no model is built)."""
    v = resolve(config, default_variant)
    return ModelInfo(v.family, v.variant, v.kind, v.tasks, tuple(v.architecture_keys), v.stacked is not None,
                     v.own_readout, v.dense)


# ---------------------------------------------------------------------------------------------------------
# Building


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
        return _plugins().build(v, config, data, default_variant)
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
    from gnnbench.models.stacked import build_stacked_model

    return build_stacked_model(dict(config), graph, seeds)


def node_graph(data: ModelData):
    """The NodeGraph of a one-graph dataset from its store (node features ``x``, sparse where stored sparse)."""
    from gnnbench.models.stacked import NodeGraph

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
            raise _plugins().PluginError(_plugins().cannot_do(v, meta))
        if config.get("pos_enc") and not positional_encodings:
            raise _plugins().PluginError("pos_enc needs positional encodings, which this protocol does not compute; "
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
    from gnnbench.models.stacked import NodeGraph

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
        from gnnbench.models.labelprop import LabelPropagation

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
    from gnnbench.models.encoders import EdgeEncoder, NodeEncoder
    from gnnbench.models.heads import make_head
    from gnnbench.models.net import GraphNet
    from gnnbench.models.readout import READOUTS

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


__all__ = ["DEFAULT_VARIANT", "FAMILIES", "REGISTRY", "ModelData", "ModelInfo", "SingleStacked", "Variant",
           "build_model", "build_stacked", "check_buildable", "check_fits", "count_parameters", "is_plugin",
           "model_info", "num_parameters", "resolve", "variants"]
