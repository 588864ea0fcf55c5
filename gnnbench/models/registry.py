"""One registry of every network of the papers' zoos and of a user's own classes: what a config's ``model`` names.

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
- ``platonov2023``: Platonov et al., *A Critical Look at the Evaluation of GNNs under Heterophily*: ResNet GCN SAGE
  GAT GAT-sep GT GT-sep — complete node classifiers (input Linear → residual blocks with normalisation → output
  Linear, :mod:`gnnbench.models.heterophily`) whose inputs (``input_features``) may be computed from the graph.

A model from outside the package (a class named ``package.module:Class``, ``path/to/file.py:Class``, an entry point
of group ``gnnbench.models``, or PyTorch Geometric's models by class path) resolves to variant ``plugin``, kind
``backbone`` (composed with encoders and the task head like the benchmark's) or ``full``
(:mod:`gnnbench.models.plugins`; docs/model-contract.md).

The registry knows the networks by name and imports a class only when asked for it (:meth:`Variant.load`; a
plugin's when a config names it): resolving a config needs no torch. Building is :mod:`gnnbench.models.build`.

Where two variants share a family their layers differ as :attr:`Variant.note` says (e.g. GCN: the benchmark's
DGL-style layer with batch norm and residuals vs Shchur's TF-style two-layer GCN).

Key ownership (which config keys come from where). Each variant declares its *architecture keys*
(:data:`~gnnbench.papers.ARCHITECTURE_KEYS`, one table per zoo); each protocol declares its *training keys*
(``training_keys`` with types, ``training_defaults`` for models of another paper: :mod:`gnnbench.papers`) and its
``default_variant`` (its own paper's zoo). A run config of protocol P for a model of variant V holds ``model``,
``variant`` (only where V is not P's default), V's architecture keys and P's training keys. A preset of P's own
protocol contributes everything it holds; a preset of another protocol contributes only V's architecture keys, and
the training keys come from P's ``training_defaults``, then the suite's ``set``
(:func:`gnnbench.config.presets.run_config`).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gnnbench.data.meta import TASKS
from gnnbench.errors import ConfigError
from gnnbench.models.plugins import (
    BACKBONE,
    FULL,
    PluginError,
    Signature,
    architecture_keys,
    entry_point,
    is_plugin_spec,
    load_class,
    signature,
)
from gnnbench.papers import (
    ARCHITECTURE_KEYS,
    DWIVEDI2020,
    ERRICA2020,
    PLATONOV2023,
    PLUGIN,
    SHCHUR2018,
)

DEFAULT_VARIANT = DWIVEDI2020  # the default protocol's (benchmarking-gnns) zoo

COMPOSED, STACKED, CLASSIFIER, PROPAGATION = "composed", "stacked", "classifier", "propagation"
NODE_CLASSIFIER = "node_classifier"
NODE_ONLY = ("node_classification",)
GRAPH_CLASSIFICATION = ("graph_classification",)


@dataclass(frozen=True)
class Variant:
    """One registered network: ``family`` + ``variant``; ``target`` the class ("module:Class" under
    ``gnnbench.models``), ``stacked`` the class of its stacked form (None: none), ``kind`` how it is built
    (``composed``: encoders → architecture → task head; ``stacked``: a two-layer node classifier of one graph, single
    form = stacked with R = 1; ``classifier``: a complete graph classifier; ``node_classifier``: a complete node
    classifier; ``propagation``: no weights),
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
    *_zoo(PLATONOV2023, NODE_CLASSIFIER, [
        ("ResNet", "heterophily.resnet:ResNet", None, False, "residual feed-forward blocks on the node inputs "
                                                             "(input_features [original, sgc]: ResNet+SGC, "
                                                             "[original, adjacency]: ResNet+adj)"),
        ("GCN", "heterophily.gcn:GCN", None, False, "residual blocks FeedForward(D^-1/2 (A+I) D^-1/2 norm(x)): "
                                                    "no weight before the propagation, GELU feed-forward after"),
        ("SAGE", "heterophily.sage:SAGE", None, False, "residual blocks FeedForward([x ‖ mean of neighbours])"),
        ("GAT", "heterophily.gat:GAT", None, False, "residual blocks FeedForward(attention over A+I), num_heads "
                                                    "heads of hidden_dim/num_heads"),
        ("GAT-sep", "heterophily.gat:GATSep", None, False, "residual blocks FeedForward([z ‖ attention over the "
                                                           "neighbours])"),
        ("GT", "heterophily.transformer:GT", None, False, "dot-product attention over A+I and a feed-forward "
                                                          "block, each residual"),
        ("GT-sep", "heterophily.transformer:GTSep", None, False, "dot-product attention over the neighbours, the "
                                                                 "ego kept apart, and a feed-forward block"),
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


class _Architectures(Mapping):
    """Family → architecture class of the benchmark's zoo, importing ``gnnbench.models.<module>`` lazily."""

    def __getitem__(self, name: str) -> type:
        if (name, DWIVEDI2020) not in REGISTRY:
            raise KeyError(name)
        return REGISTRY[(name, DWIVEDI2020)].load()

    def __iter__(self) -> Iterator[str]:
        return iter(families(DWIVEDI2020))

    def __len__(self) -> int:
        return len(families(DWIVEDI2020))


ARCHITECTURES: Mapping[str, type] = _Architectures()


@dataclass(frozen=True)
class PluginVariant(Variant):
    """A model from outside the package, registered under variant ``plugin`` (``family`` and ``target``: the model
    name as the config spells it; ``kind``: backbone or full)."""

    cls: type | None = None
    sig: Signature | None = None
    plugin_tasks: tuple[str, ...] = TASKS

    def load(self) -> type:
        """The plugin's class (already imported by :func:`resolve_plugin`)."""
        return self.cls

    @property
    def tasks(self) -> tuple[str, ...]:
        """The tasks the class offers: its ``tasks`` attribute, else every task."""
        return self.plugin_tasks

    @property
    def own_readout(self) -> bool:
        """True for a full model (it returns the task's outputs itself); a backbone gets gnnbench's head."""
        return self.kind == FULL

    @property
    def architecture_keys(self) -> dict[str, Any]:
        """The config keys that belong to the model: its constructor's arguments and gnnbench's own keys."""
        return architecture_keys(self)


def plugin_variant(name: str, cls: type, sig: Signature, tasks: tuple[str, ...]) -> PluginVariant:
    """The :class:`PluginVariant` of class ``cls`` named ``name``, with its read signature and tasks."""
    note = f"{'backbone: encoders and the task head added' if sig.kind == BACKBONE else 'full model'} ({name})"
    return PluginVariant(name, PLUGIN, name, sig.kind, None, False, note, cls, sig, tasks)


def resolve_plugin(name: str, variant: str | None = None):
    """The :class:`PluginVariant` (variant ``plugin``, kind ``backbone`` or ``full``) of a
    plugin's model name; its class is imported here."""
    if variant not in (None, PLUGIN):
        raise PluginError(f"{name} is a model of your own (variant {PLUGIN}), not of variant {variant!r}; drop "
                          "variant", "variant")
    cls = load_class(name)
    sig = signature(cls, name)
    tasks = getattr(cls, "tasks", TASKS)
    if isinstance(tasks, str) or not all(t in TASKS for t in tasks):
        raise PluginError(f"{name}.tasks is {tasks!r}; it must be a tuple of task names from {', '.join(TASKS)}")
    return plugin_variant(name, cls, sig, tuple(tasks))


def is_plugin(config: Mapping) -> bool:
    """Whether a config names a model from outside the package: ``variant: plugin``, a spelling with a colon or a
    dot, or a bare name that no zoo has but an installed entry point has (metadata only: nothing is imported)."""
    model = config.get("model")
    if config.get("variant") == PLUGIN or is_plugin_spec(model):
        return True
    return isinstance(model, str) and bool(model) and model not in FAMILIES and entry_point(model) is not None


def resolve(config: Mapping, default_variant: str = DEFAULT_VARIANT) -> Variant:
    """The registered network a config names: ``model`` (family) and ``variant`` (default: ``default_variant``
    where the family has it, else the family's only variant). A model from outside the package
    (:mod:`gnnbench.models.plugins`: ``package.module:Class``, ``path/to/file.py:Class``, an entry point) resolves
    to variant ``plugin``, kind ``backbone`` or ``full``; its class is imported here."""
    family, variant = config.get("model"), config.get("variant")
    if variant == PLUGIN or is_plugin_spec(family):
        if variant == PLUGIN and family in FAMILIES:
            raise ConfigError(f"variant: model {family} is a network of the zoos, not a model of your own; drop "
                              f"variant {PLUGIN}")
        return resolve_plugin(family, variant)
    if family not in FAMILIES:
        if isinstance(family, str) and family and entry_point(family) is not None:
            return resolve_plugin(family, variant)  # a bare name no zoo has: an installed entry point
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


__all__ = ["ARCHITECTURES", "DEFAULT_VARIANT", "FAMILIES", "NODE_CLASSIFIER", "REGISTRY", "ModelInfo", "PluginVariant",
           "Variant", "families", "is_plugin", "model_info", "resolve", "resolve_plugin", "variants"]
