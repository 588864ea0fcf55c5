"""Model zoo: one architecture per module, composed with input encoders and a task head.

``build_model(config, meta)`` is the single entry point; ``ARCHITECTURES`` maps the benchmark's model
names to their classes.

Decision (input dropout): ``in_feat_dropout`` is applied after the input encoders by every model on every
dataset. The original ignores it for GatedGCN on SBM/superpixels/TU/TSP and for GIN/MoNet; all published
configs set it to 0, so results are unaffected and a user's explicit setting is honoured.
"""

from __future__ import annotations

from torch import nn

from gnnbench.data.meta import DatasetMeta
from gnnbench.errors import ConfigError
from gnnbench.models.encoders import EdgeEncoder, NodeEncoder
from gnnbench.models.gated_gcn import GatedGCN
from gnnbench.models.gcn import GCN
from gnnbench.models.heads import make_head
from gnnbench.models.mlp import MLP
from gnnbench.models.net import GraphNet, count_parameters
from gnnbench.models.readout import READOUTS

ARCHITECTURES: dict[str, type[nn.Module]] = {"MLP": MLP, "GCN": GCN, "GatedGCN": GatedGCN}

__all__ = ["ARCHITECTURES", "GraphNet", "build_model", "count_parameters"]


def build_model(cfg: dict, meta: DatasetMeta) -> GraphNet:
    """Build the network described by a resolved run config for a dataset with metadata ``meta``."""
    name = cfg.get("model")
    if name not in ARCHITECTURES:
        raise ConfigError(f"model: unknown model {name!r}; choose one of {', '.join(ARCHITECTURES)}")
    arch_cls = ARCHITECTURES[name]
    missing = [k for k in arch_cls.required if k not in cfg]
    if missing:
        raise ConfigError(f"model {name} needs config key(s) {', '.join(missing)}; add them (or use a preset)")
    architecture = arch_cls.from_config(cfg, meta)
    readout = architecture.readout or cfg.get("readout", "mean")
    if readout not in READOUTS:
        raise ConfigError(f"readout: unknown readout {readout!r} for model {name}; choose one of "
                          f"{', '.join(READOUTS)}")
    pe_dim = cfg.get("pos_enc_dim") if cfg.get("pos_enc") else None
    if cfg.get("pos_enc") and not pe_dim:
        raise ConfigError("pos_enc is true but pos_enc_dim is missing or 0; set pos_enc_dim (e.g. 20)")
    try:
        node_encoder = NodeEncoder(meta.node_features, architecture.input_width, pe_dim, meta.pe_usage,
                                   project_continuous=arch_cls.project_continuous)
        edge_encoder = None
        if arch_cls.uses_edges:
            edge_encoder = EdgeEncoder(meta.edge_features, bool(cfg.get("edge_feat", False)),
                                       architecture.input_width)
    except ValueError as exc:
        raise ConfigError(f"model {name} on dataset {meta.name}: {exc}; change the config") from None
    head = make_head(meta.task, architecture.out_width, meta.num_outputs, readout)
    return GraphNet(node_encoder, edge_encoder, architecture, head, cfg.get("in_feat_dropout", 0.0))
