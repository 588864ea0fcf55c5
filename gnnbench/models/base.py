"""The contract every architecture of the benchmark's zoo implements, so that one implementation serves every task
head.

An architecture turns encoded inputs into a :class:`Representation`:

- ``forward(h, e, batch)``: ``h`` (N, input_width) encoded node input, ``e`` (E, edge_input_width) encoded edge
  input or None, ``batch`` the :class:`~gnnbench.data.batching.GraphBatch` (edge_index, batch, ptr, raw
  features). Architectures with ``own_input`` (dense WL-GNNs, MF) get ``h = e = None`` and read the batch.
- ``Representation.nodes`` (N, out_width): what heads of style ``"mlp"`` read (MLPReadout on nodes, on pooled
  graphs, on [h_u ‖ h_v] for edges and links, Set2Set for multitask graphs).
- ``Representation.layers``: per-layer node states of widths ``layer_widths``, read by heads of style
  ``"per_layer"`` (GIN's Σ_ℓ Linear_ℓ(h^ℓ), 3WLGNN's per-block node scores); ``Representation.graph_layers``:
  per-layer graph vectors of widths ``graph_layer_widths`` where a model pools its own way (3WLGNN's
  diagonal/off-diagonal max); otherwise heads pool ``layers``.

Class (or, where the config decides, instance) attributes: ``required`` (config keys the model reads),
``uses_edges`` (build an edge encoder), ``project_continuous`` (encode continuous node features with a Linear;
False = raw features reach the model), ``own_input``, ``readout`` (a fixed graph readout, or None to follow the
config), ``tasks`` (the tasks the model supports; others are refused with ``unsupported_reason``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from gnnbench.data.meta import TASKS, DatasetMeta


@dataclass
class Representation:
    """What an architecture returns: final node states ``nodes`` (N, out_width), and optionally per-layer node
    states ``layers`` and per-layer graph vectors ``graph_layers`` for per-layer heads (module docstring)."""

    nodes: torch.Tensor
    layers: list[torch.Tensor] | None = None
    graph_layers: list[torch.Tensor] | None = None


class Architecture(nn.Module):
    """Base class of the benchmark's architectures (module docstring): ``forward(h, e, batch)`` →
    :class:`Representation`; the class attributes tell the composition which encoders and head to build."""

    required: tuple[str, ...] = ()
    uses_edges = False
    project_continuous = True
    own_input = False
    readout: str | None = None
    tasks: tuple[str, ...] = TASKS
    unsupported_reason = ""  # why the tasks outside ``tasks`` make no sense for this model
    per_layer_init: str | None = None  # "xavier": per-layer head linears Xavier-uniform, bias 0 (3WLGNN)

    input_width: int
    out_width: int
    edge_input_width: int | None = None  # defaults to input_width
    layer_widths: list[int] | None = None
    graph_layer_widths: list[int] | None = None

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta) -> Architecture:
        """The architecture a run config (the benchmark's ``net_params`` keys) describes for dataset ``meta``."""
        raise NotImplementedError

    def head_style(self, task: str) -> str:
        """``"mlp"`` (MLPReadout on the final representation) or ``"per_layer"`` (sum of per-layer scores)."""
        return "mlp"
