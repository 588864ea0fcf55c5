"""Dense input of the WL-GNNs (RingGNN, 3WLGNN): a padded batch of C×n×n tensors built from a GraphBatch
(Dwivedi et al., Appendix B.2.1, Eqs. 28–31; the released code's ``collate_dense_gnn`` in ``data/*.py``).

The original builds one tensor per graph in each dataset's ``collate_dense_gnn`` and runs one graph per
forward pass. Here the graphs of a batch are scattered, in one vectorised pass, into a zero tensor
``x`` of shape (B, C, n_max, n_max) (each node's graph index and local index give its row/column), with
``mask`` (B, n_max) marking real nodes. The models keep every padded row and column at zero, so a graph's
result does not depend on the other graphs of its batch.

Channels (per graph, n = its number of nodes):

* channel 0: Â = D^{-1/2} A D^{-1/2}, A[src, dst] = 1 per edge (DGL 0.6.1 ``adjacency_matrix()`` is the
  transpose of the usual convention), D = column sums = in-degrees, 1/√0 → 0. Parallel edges add up, as
  in the coalesced sparse matrix of the original.
* node channels, on the diagonal: one-hot of a categorical feature (SBM 3 / 7, ZINC 28 / AQSOL 65 atom
  types), the raw values of a continuous one (superpixels, TU, TSP coordinates, CYCLES). A categorical
  feature of vocabulary 1 is written as its raw value (always 0), like the original does for CSL without
  PE (C = 2 with an all-zero channel 1). With PE that *replaces* the node input (CSL, CYCLES), the
  ``pos_enc_dim`` PE values take the place of the node features (CSL: C = 1 + 20). During training they carry the
  random sign flip of every training loop, which the original's dense loops do not apply
  (docs/protocols/benchmarking-gnns.md#positional-encodings-for-dense-wl-gnns).
* edge channels, when ``edge_feat`` is true, at the off-diagonal entries [src, dst]: a categorical feature
  sets channel ``bond_type`` of its block to 1 (molecules: one channel per bond type, the bond-type-0
  channel exists but ZINC never uses it), a continuous one writes its values (TSP: the distance). Two
  parallel edges writing the same entry: one of them wins (the original keeps the last one; neither
  benchmark dataset has parallel edges).
* Decision (PE added to the node input, e.g. SBM/ZINC with ``pos_enc``; the original never feeds PE to
  the WL-GNNs there): the PE values are appended as ``pos_enc_dim`` further diagonal channels after all
  the others (docs/protocols/benchmarking-gnns.md#positional-encodings-for-dense-wl-gnns).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gnnbench.data.batching import GraphBatch
from gnnbench.data.meta import DatasetMeta, FeatureSpec


def _channels(feature: FeatureSpec | None) -> int:
    if feature is None:
        return 0
    return 1 if feature.kind == "categorical" and feature.size == 1 else feature.size


@dataclass(frozen=True)
class DenseLayout:
    """Which inputs go into which channels of the dense tensor."""

    node: FeatureSpec | None  # node features on the diagonal (None when PE replaces them)
    edge: FeatureSpec | None  # edge features off the diagonal (None unless edge_feat)
    pe_dim: int = 0  # PE channels (0: no PE)
    pe_replaces: bool = False  # PE takes the place of the node features (else appended at the end)

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta) -> DenseLayout:
        """The layout of a run config (``pos_enc``, ``pos_enc_dim``, ``edge_feat``) on a dataset (its node and edge
        features and whether PE replaces or is added to the node input)."""
        pe_dim = int(cfg.get("pos_enc_dim") or 0) if cfg.get("pos_enc") else 0
        replaces = pe_dim > 0 and meta.pe_usage == "replace"
        node = None if replaces else meta.node_features
        if node is None and not replaces:
            raise ValueError("a dataset without node features needs positional encodings that replace them")
        edge = None
        if cfg.get("edge_feat", False):
            if meta.edge_features is None:
                raise ValueError("edge_feat is true but the dataset has no edge features")
            edge = meta.edge_features
        return cls(node, edge, pe_dim, replaces)

    @property
    def node_channels(self) -> int:
        """Diagonal channels of the node input: the PE dimensions when PE replaces it, else the node features'."""
        return self.pe_dim if self.pe_replaces else _channels(self.node)

    @property
    def edge_channels(self) -> int:
        """Off-diagonal channels of the edge features (0 without ``edge_feat``)."""
        return _channels(self.edge)

    @property
    def channels(self) -> int:
        """C: the adjacency channel, the node channels, the edge channels and added PE channels."""
        extra_pe = 0 if self.pe_replaces else self.pe_dim
        return 1 + self.node_channels + self.edge_channels + extra_pe


@dataclass
class DenseBatch:
    """A batch of graphs as one zero-padded dense tensor, with what maps it back to the batch's nodes."""

    x: torch.Tensor  # (B, C, n, n), zero outside each graph's n_b × n_b block
    mask: torch.Tensor  # (B, n) bool, True for real nodes
    num_nodes: torch.Tensor  # (B,) node counts (int64)
    graph: torch.Tensor  # (N,) graph of every batch node
    local: torch.Tensor  # (N,) index of every batch node inside its graph

    def pair_mask(self) -> torch.Tensor:
        """(B, 1, n, n) float: 1 where both the row and the column are real nodes."""
        m = self.mask.to(self.x.dtype)
        return (m.unsqueeze(2) * m.unsqueeze(1)).unsqueeze(1)

    def per_node(self, t: torch.Tensor) -> torch.Tensor:
        """(B, F, n) per-node vectors → (N, F) rows in batch node order."""
        return t.transpose(1, 2)[self.graph, self.local]


def _column(values: torch.Tensor) -> torch.Tensor:
    return values.unsqueeze(-1) if values.dim() == 1 else values


def _ids(values: torch.Tensor) -> torch.Tensor:
    return values.reshape(-1).long() if values.dim() == 2 and values.shape[1] == 1 else values.long()


def to_dense(batch: GraphBatch, layout: DenseLayout, dtype: torch.dtype = torch.float32) -> DenseBatch:
    """Scatter the graphs of ``batch`` into one zero-padded (B, C, n_max, n_max) tensor (no per-graph loop)."""
    if layout.pe_dim and batch.pe is None:
        raise ValueError("pos_enc is true but the batch carries no positional encodings (batch.pe)")
    ptr = batch.ptr
    counts = ptr[1:] - ptr[:-1]
    num_graphs = counts.numel()
    n = int(counts.max()) if num_graphs else 0
    device = ptr.device
    graph = batch.batch
    local = torch.arange(graph.numel(), device=device) - ptr[graph]
    x = torch.zeros(num_graphs, layout.channels, n, n, dtype=dtype, device=device)

    src, dst = batch.edge_index
    g_edge, l_src, l_dst = graph[src], local[src], local[dst]
    deg = torch.bincount(dst, minlength=graph.numel()).to(dtype)  # column sums of A[src, dst]
    inv_sqrt = torch.where(deg > 0, deg.clamp(min=1).rsqrt(), torch.zeros_like(deg))
    zero = torch.zeros_like(g_edge)
    x.index_put_((g_edge, zero, l_src, l_dst), inv_sqrt[src] * inv_sqrt[dst], accumulate=True)

    g_col, l_col = graph.unsqueeze(1), local.unsqueeze(1)
    start = 1
    if layout.pe_replaces:
        x[g_col, start + torch.arange(layout.pe_dim, device=device), l_col, l_col] = batch.pe.to(dtype)
    elif layout.node.kind == "categorical" and layout.node.size > 1:
        x[graph, start + _ids(batch.x), local, local] = 1.0
    else:  # continuous values, or the raw id of a vocabulary-1 feature (always 0: the original's CSL input)
        values = _column(batch.x).to(dtype)
        x[g_col, start + torch.arange(values.shape[1], device=device), l_col, l_col] = values
    start += layout.node_channels

    if layout.edge is not None:
        if layout.edge.kind == "categorical" and layout.edge.size > 1:
            x[g_edge, start + _ids(batch.edge_attr), l_src, l_dst] = 1.0
        else:
            values = _column(batch.edge_attr).to(dtype)
            x[g_edge.unsqueeze(1), start + torch.arange(values.shape[1], device=device),
              l_src.unsqueeze(1), l_dst.unsqueeze(1)] = values
        start += layout.edge_channels

    if layout.pe_dim and not layout.pe_replaces:
        x[g_col, start + torch.arange(layout.pe_dim, device=device), l_col, l_col] = batch.pe.to(dtype)

    mask = torch.arange(n, device=device) < counts.unsqueeze(1)
    return DenseBatch(x, mask, counts, graph, local)


def dense_input(x: torch.Tensor, edge_index: torch.Tensor) -> DenseBatch:
    """The dense input of one graph for a plain ``(x, edge_index)`` call of a WL-GNN layer: channel 0 = Â as
    :func:`to_dense` builds it, then the F columns of x (N, F) as continuous values on the diagonal →
    x (1, 1 + F, N, N). Rebuilt on every call: it holds x itself."""
    n = x.shape[0]
    batch = GraphBatch(edge_index=edge_index, batch=torch.zeros(n, dtype=torch.int64, device=x.device),
                       ptr=torch.tensor([0, n], device=x.device), num_graphs=1, x=x)
    return to_dense(batch, DenseLayout(FeatureSpec("continuous", x.shape[1]), None), x.dtype)


DENSE_TASKS = ("node_classification", "graph_classification", "graph_regression", "edge_classification")
DENSE_UNSUPPORTED = ("link prediction would need the dense n×n tensor of COLLAB's one 235k-node graph (infeasible) "
                     "and the benchmark never ran dense WL-GNNs on link prediction or multitask regression")
