"""Matrix factorisation (MF), the benchmark's non-GNN COLLAB baseline (Dwivedi et al., Appendix C.3, Table 5; the
released code's ``nets/COLLAB_edge_classification/matrix_factorization.py``).

Every node of the one fixed graph owns a learned embedding, and a link u–v is scored from the pair:

    h_v   = Emb[v]                                  Embedding(num_embs, hidden_dim), N(0, 1) init
    s_uv  = MLPReadout(2·hidden)([h_u ‖ h_v])        (σ is applied by the link loss)

No graph structure and no node features are read (``own_input``: no input encoders). The original returns the
whole table, one row per node of OGBL-COLLAB (235,868); here row v is the embedding of node v of the batch,
so **MF needs the whole graph in one batch with its nodes in their fixed order** — which is how COLLAB is
trained (full graph, batches of query pairs). A batch with more nodes than ``num_embs`` is refused.
Only link prediction makes sense (``tasks``): per-node ids carry no meaning across graphs.
"""

from __future__ import annotations

import torch
from torch import nn

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta
from gnnbench.models.base import Architecture, Representation


class MF(Architecture):
    """One learned ``hidden_dim``-wide embedding per node id of the one fixed graph (``num_embs`` of them); the link
    head scores pairs from them."""

    own_input = True
    tasks = ("link_prediction",)
    unsupported_reason = ("MF learns one embedding per node id of a single fixed graph, so it can only score "
                          "node pairs of that graph (link prediction)")
    required = ("hidden_dim", "num_embs")

    def __init__(self, num_embs: int, hidden_dim: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(num_embs, hidden_dim)
        self.input_width = self.out_width = hidden_dim

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta) -> MF:
        """From ``num_embs`` and ``hidden_dim``."""
        return cls(cfg["num_embs"], cfg["hidden_dim"])

    def forward(self, h: torch.Tensor | None, e: torch.Tensor | None, batch: GraphBatch) -> Representation:
        """Rows 0..N−1 of the table as the batch's node embeddings (the whole graph, nodes in their fixed order)."""
        num_nodes = batch.num_nodes
        if num_nodes > self.emb.num_embeddings:
            raise ValueError(f"MF has {self.emb.num_embeddings} node embeddings (num_embs) but the batch has "
                             f"{num_nodes} nodes; set num_embs to the graph's number of nodes")
        # node ids = arange over the batch's nodes (the full graph in one batch); a slice of the table is the
        # same lookup as emb(arange(N)) without materialising the ids
        return Representation(self.emb.weight[:num_nodes])
