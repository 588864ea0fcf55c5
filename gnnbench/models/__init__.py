"""Model zoo: one architecture per module, composed with input encoders and a task head.

``build_model(config, meta)`` is the single entry point; ``ARCHITECTURES`` maps the benchmark's model
names to their classes (imported on first use, so a run loads only its own model's module).
The contract an architecture implements is in :mod:`gnnbench.models.base`.

Decision (input dropout): ``in_feat_dropout`` is applied after the input encoders by every model on every
dataset. The original ignores it for GatedGCN on SBM/superpixels/TU/TSP and for GIN/MoNet; all published
configs set it to 0, so results are unaffected and a user's explicit setting is honoured.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from gnnbench.data.meta import DatasetMeta
from gnnbench.errors import ConfigError
from gnnbench.models.base import Architecture
from gnnbench.models.encoders import EdgeEncoder, NodeEncoder
from gnnbench.models.heads import make_head
from gnnbench.models.net import GraphNet, count_parameters
from gnnbench.models.readout import READOUTS

_MODULES = {
    "MLP": "mlp", "GCN": "gcn", "GraphSage": "graphsage", "GAT": "gat", "MoNet": "monet", "GIN": "gin",
    "GatedGCN": "gated_gcn", "RingGNN": "ring_gnn", "3WLGNN": "three_wl_gnn", "MF": "mf",
}
_CLASSES = {"3WLGNN": "ThreeWLGNN"}


class _Registry(Mapping):
    """Model name → architecture class, importing ``gnnbench.models.<module>`` lazily."""

    def __getitem__(self, name: str) -> type[Architecture]:
        module = importlib.import_module(f"gnnbench.models.{_MODULES[name]}")
        return getattr(module, _CLASSES.get(name, name))

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


ARCHITECTURES: Mapping[str, type[Architecture]] = _Registry()

__all__ = ["ARCHITECTURES", "GraphNet", "build_model", "count_parameters"]


def build_model(cfg: dict, meta: DatasetMeta) -> GraphNet:
    """Build the network described by a resolved run config for a dataset with metadata ``meta``."""
    name = cfg.get("model")
    if name not in _MODULES:
        raise ConfigError(f"model: unknown model {name!r}; choose one of {', '.join(_MODULES)}")
    arch_cls = ARCHITECTURES[name]
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
