"""DiffPool (Ying et al., NeurIPS 2018) as run by Errica et al. (released code: ``models/graph_classifiers/
DiffPool.py`` and ``models/modules.py`` of diningphil/gnn-comparison, on PyTorch Geometric 1.4's ``DenseSAGEConv`` /
``dense_diff_pool``).

What it computes, for a mini-batch of B graphs:

1. Densify: node features → X (B, n, F) zero-padded to the largest graph of the batch ``n`` with the node mask
   M (B, n) (PyG ``to_dense_batch``); edges → A (B, n, n), A[b, i, j] = 1 per edge i→j (``to_dense_adj``).
   Both are one vectorised scatter (:func:`gnnbench.models.sparse.to_dense_batch` / ``to_dense_adjacency``).
2. ``num_layers`` DiffPool layers. Layer k on (X, A, mask) — the mask only at the first layer, ``None`` later,
   as the original (after the first layer every graph has exactly C_k cluster rows, so there is no padding):

   * ``SAGEConvolutions(in, h, out)``: x1 = BN(ReLU(conv1(X))), x2 = BN(ReLU(conv2(x1))), x3 = conv3(x2);
     output concat[x1, x2, x3] (2h + out wide), followed by Linear(2h + out → out) in the assignment block.
     Each conv is PyG-1.4 ``DenseSAGEConv(add_loop=False, normalize=False)``:
     out = (A·X) / max(rowsum(A), 1) · W + b, then out ← out · M (padded rows zeroed) when a mask is given —
     neighbour mean only, no self term, one weight matrix (PyG ≥ 1.5 adds a root weight; not used here).
     ``BatchNorm1d`` runs over all B·n rows, padded rows included (the original reshapes (B, n, C) → (B·n, C)).
   * S = SAGEConvolutions(in, h, C_k) with the final Linear (assignment logits);
     Z = SAGEConvolutions(in, h, d) without it (embeddings, 2h + d wide).
   * :func:`dense_diff_pool` (PyG's): S ← softmax(S) over clusters; with a mask Z ← Z·M, S ← S·M;
     X' = SᵀZ (B, C_k, 2h + d), A' = SᵀAS; link loss = ‖A − SSᵀ‖_F / numel(A) (Frobenius norm over the whole
     padded (B, n, n) tensor, divided by B·n²); entropy loss = mean over all B·n rows (padded rows: 0) of
     −Σ_c S log(S + 1e-15).
   * readout max over the C_k cluster rows of X'.
3. After the last layer one more ``SAGEConvolutions(2h + d, h, d)`` (no Linear, no mask) on (X', A'), max readout.
4. concat of the ``num_layers + 1`` readouts → Linear(→ ``dim_embedding_MLP``) → ReLU → Linear(→ #classes).

``aux_loss`` (a scalar tensor of the last forward) = Σ over DiffPool layers of (link loss + entropy loss),
unweighted; the trainer adds it to the cross entropy (the original's ``DiffPoolMulticlassClassificationLoss``).

Cluster counts (:func:`cluster_counts`): coarse factor 0.1 with one DiffPool layer, 0.25 with more ("reproduce
paper choice"); C_1 = ⌈factor · max_nodes⌉, C_{k+1} = ⌈C_k · factor⌉ — the same floating-point expression as the
original, so its rounding is reproduced exactly (e.g. 0.1 · 111 = 11.100…01 → 12). ``max_nodes`` is
``sizes.max()``, the largest graph of the dataset (data, not a table of dataset names). The released code's
per-dataset "max nodes" constants (``datasets/manager.py``: DD 5748, PROTEINS 620, NCI1 111, ENZYMES 126,
IMDB-B 136, IMDB-M 89, REDDIT-B 3782, REDDIT-5K 3648, COLLAB 492) are exactly these maxima — its own ``_process``
computes the maximum from the data too — so the cluster counts equal the released code's: two layers ENZYMES
(32, 8), DD (1437, 360), NCI1 (28, 7), …; one layer ENZYMES 13, DD 575, NCI1 12.

Decisions (docs/protocols/fair-comparison.md#networks):

* Weights: PyG 1.4's ``DenseSAGEConv`` draws W (in, out) and b from U(±1/√in); here W is an ``nn.Linear`` whose
  PyTorch default initialisation is the same distribution (kaiming_uniform with a = √5 gives bound 1/√in; bias
  bound 1/√in). Every other layer is a PyTorch default layer, as in the original.
* The mean normalisation (A / max(rowsum(A), 1)) is computed once per level and shared by the six convolutions
  of that level; (A/d)·X equals (A·X)/d up to rounding.
* Padding: in **eval** mode a graph's logits do not depend on the other graphs of its batch. Every first-level
  convolution zeroes the padded rows, so real rows never see them (A has zero rows/columns there); padded rows do
  become nonzero after BN (in eval mode an affine map per row), but ``dense_diff_pool`` multiplies Z and S by the
  mask, so X' and A' are those of the graph alone; after that there is no padding. In **train** mode BN's batch
  statistics include the padded rows (as in the original), so the logits depend on the batch composition and on
  its padded size n. The auxiliary losses depend on the batch in both modes: the link loss divides by B·n² and
  the entropy loss averages over B·n rows, padded ones included. tests/test_diffpool_ecc.py checks the eval-mode
  independence, the padded rows in BN's running statistics and both loss normalisations.
* Padded size = the largest graph of the batch (the original's ``to_dense_batch``/``to_dense_adj`` without
  ``max_num_nodes``), not the dataset maximum.
"""

from __future__ import annotations

from math import ceil

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.meta import DatasetMeta
from gnnbench.models.blocks import cached_structure, is_edge_index, reset_children
from gnnbench.models.graph_classifiers.base import GraphClassifier
from gnnbench.models.sparse import to_dense_adjacency, to_dense_batch

NUM_SAGE_LAYERS = 3
ENTROPY_EPS = 1e-15  # PyG's dense_diff_pool


def cluster_counts(max_nodes: int, num_layers: int) -> list[int]:
    """Number of clusters of each DiffPool layer (the original's expression, float rounding included)."""
    factor = 0.1 if num_layers == 1 else 0.25
    counts, clusters = [], ceil(factor * max_nodes)
    for _ in range(num_layers):
        counts.append(clusters)
        clusters = ceil(clusters * factor)
    return counts


def mean_adjacency(adj: torch.Tensor) -> torch.Tensor:
    """A / max(rowsum(A), 1): the neighbour-mean operator of PyG-1.4 ``DenseSAGEConv`` without self loops."""
    return adj / adj.sum(dim=-1, keepdim=True).clamp(min=1)


def _dense_single(module: nn.Module, x: torch.Tensor, edge_index: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """A plain ``(x, edge_index)`` call on one graph as the batch path's one-graph batch: x (1, N, F), the adjacency
    A (1, N, N) with A[0, i, j] = number of edges i→j (:func:`to_dense_adjacency`) and its :func:`mean_adjacency`,
    the two built once and cached for that edge_index tensor."""
    num_nodes = x.shape[0]

    def build() -> tuple[torch.Tensor, torch.Tensor]:
        batch = torch.zeros(num_nodes, dtype=torch.int64, device=x.device)
        ptr = torch.tensor([0, num_nodes], device=x.device)
        adj = to_dense_adjacency(edge_index, batch, ptr, num_nodes).to(x.dtype)
        return adj, mean_adjacency(adj)

    adj, mean_adj = cached_structure(module, edge_index, (num_nodes, x.dtype, x.device), build)
    return x.unsqueeze(0), adj, mean_adj


class DenseSAGEConv(nn.Module):
    r"""PyG-1.4 ``DenseSAGEConv(in, out)`` called with ``add_loop=False`` (normalize=False): the mean over the
    out-neighbours (row i of A lists the edges i→j; PyG's dense orientation), no self term, one weight matrix:

        X' = (A / max(rowsum(A), 1)) X Wᵀ + b          (padded rows zeroed when ``mask`` is given)

    W and b are one ``nn.Linear`` (PyTorch's default, PyG 1.4's U(±1/√in) law).

    Args:
        in_channels: input width F.
        out_channels: output width F'.

    Shapes:
        - input: dense batch X (B, n, F), ``mean_adj`` = :func:`mean_adjacency` of the (B, n, n) adjacency and
          the node mask (B, n) or None; or plain ``(x, edge_index)`` of one graph with x (N, F) (the dense
          adjacency is built once and cached for that edge_index tensor).
        - output: (B, n, F'), or (N, F') for the plain call.
    """

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels)

    def reset_parameters(self) -> None:
        """Redraw W and b (``nn.Linear``'s default initialisation)."""
        self.lin.reset_parameters()

    def forward(self, x: torch.Tensor, mean_adj: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """X' = mean_adj · X · Wᵀ + b, padded rows zeroed with ``mask`` (class docstring for the plain call)."""
        if is_edge_index(mean_adj):
            x, _, mean_adj = _dense_single(self, x, mean_adj)
            return self.forward(x, mean_adj).squeeze(0)
        out = self.lin(torch.matmul(mean_adj, x))
        if mask is not None:
            out = out * mask.unsqueeze(-1).to(out.dtype)
        return out


class SAGEConvolutions(nn.Module):
    r"""The original's ``SAGEConvolutions``: three :class:`DenseSAGEConv`, BN(ReLU(·)) after the first two, outputs
    concatenated, optionally followed by a Linear (BN over all B·n rows, padded ones included):

        X₁ = BN₁(ReLU(conv₁(X))),  X₂ = BN₂(ReLU(conv₂(X₁))),  X₃ = conv₃(X₂)
        out = [X₁ ‖ X₂ ‖ X₃]   or   Linear([X₁ ‖ X₂ ‖ X₃])  (with ``lin``)

    Args:
        in_channels: input width F.
        hidden_channels: width h of the first two convolutions.
        out_channels: width of the third convolution (and of the Linear).
        lin: end with Linear(2h + out → out).

    Shapes:
        - input: as :class:`DenseSAGEConv` (dense batch, or plain ``(x, edge_index)`` of one graph).
        - output: (B, n, out) with ``lin``, else (B, n, 2h + out); (N, ·) for the plain call.
    """

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int, lin: bool = True) -> None:
        super().__init__()
        self.conv1 = DenseSAGEConv(in_channels, hidden_channels)
        self.bn1 = nn.BatchNorm1d(hidden_channels)
        self.conv2 = DenseSAGEConv(hidden_channels, hidden_channels)
        self.bn2 = nn.BatchNorm1d(hidden_channels)
        self.conv3 = DenseSAGEConv(hidden_channels, out_channels)
        width = (NUM_SAGE_LAYERS - 1) * hidden_channels + out_channels
        self.lin = nn.Linear(width, out_channels) if lin else None

    def reset_parameters(self) -> None:
        """Reset the three convolutions, the batch norms and the Linear."""
        reset_children(self)

    @staticmethod
    def _bn(bn: nn.BatchNorm1d, x: torch.Tensor) -> torch.Tensor:
        """BatchNorm over all B·n rows, padded ones included."""
        return bn(x.reshape(-1, x.shape[-1])).view(x.shape)

    def forward(self, x: torch.Tensor, mean_adj: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """[X₁ ‖ X₂ ‖ X₃], or its Linear map with ``lin`` (class docstring)."""
        if is_edge_index(mean_adj):
            x, _, mean_adj = _dense_single(self, x, mean_adj)
            return self.forward(x, mean_adj).squeeze(0)
        x1 = self._bn(self.bn1, F.relu(self.conv1(x, mean_adj, mask)))
        x2 = self._bn(self.bn2, F.relu(self.conv2(x1, mean_adj, mask)))
        x3 = self.conv3(x2, mean_adj, mask)
        out = torch.cat([x1, x2, x3], dim=-1)
        return self.lin(out) if self.lin is not None else out


def dense_diff_pool(x: torch.Tensor, adj: torch.Tensor, s: torch.Tensor, mask: torch.Tensor | None = None,
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """PyG's ``dense_diff_pool`` (same in 1.4 and 2.x): X' = SᵀX, A' = SᵀAS with S = softmax(s) (masked rows
    zeroed), link loss ‖A − SSᵀ‖_F / numel(A), entropy loss = mean over all B·n rows of the row entropy of S."""
    s = torch.softmax(s, dim=-1)
    if mask is not None:
        m = mask.unsqueeze(-1).to(x.dtype)
        x, s = x * m, s * m
    st = s.transpose(1, 2)
    out = torch.matmul(st, x)
    out_adj = torch.matmul(torch.matmul(st, adj), s)
    link_loss = torch.linalg.vector_norm(adj - torch.matmul(s, st)) / adj.numel()
    entropy_loss = (-s * torch.log(s + ENTROPY_EPS)).sum(dim=-1).mean()
    return out, out_adj, link_loss, entropy_loss


class DiffPoolLayer(nn.Module):
    r"""One DiffPool level: the assignment block (with Linear) and the embedding block (without) on the same
    graph, then :func:`dense_diff_pool`:

        S = SAGEConvolutions_pool(X, A),   Z = SAGEConvolutions_embed(X, A),   S ← softmax(S) (masked rows 0)
        X' = Sᵀ Z,   A' = Sᵀ A S,   link = ‖A − S Sᵀ‖_F / numel(A),   entropy = mean_rows(−Σ_c S log(S + 1e-15))

    Args:
        in_channels: input width F.
        hidden_channels: width h of the SAGE blocks.
        dim_embedding: width d of the embedding block's last convolution (Z is 2h + d wide).
        num_clusters: number of clusters C.

    Shapes:
        - input: dense batch X (B, n, F), adjacency (B, n, n), node mask (B, n) or None; or plain
          ``(x, edge_index)`` of one graph with x (N, F) (its dense adjacency built once and cached).
        - output: (X' (B, C, 2h + d), A' (B, C, C), link loss, entropy loss); B = 1 for the plain call.
    """

    def __init__(self, in_channels: int, hidden_channels: int, dim_embedding: int, num_clusters: int) -> None:
        super().__init__()
        self.gnn_pool = SAGEConvolutions(in_channels, hidden_channels, num_clusters)
        self.gnn_embed = SAGEConvolutions(in_channels, hidden_channels, dim_embedding, lin=False)

    def reset_parameters(self) -> None:
        """Reset the assignment and the embedding blocks."""
        reset_children(self)

    def forward(self, x: torch.Tensor, adj: torch.Tensor, mask: torch.Tensor | None = None):
        """(X', A', link loss, entropy loss) of one pooling level (class docstring)."""
        if is_edge_index(adj):
            x, adj, _ = _dense_single(self, x, adj)
        mean_adj = mean_adjacency(adj)
        s = self.gnn_pool(x, mean_adj, mask)
        z = self.gnn_embed(x, mean_adj, mask)
        return dense_diff_pool(z, adj, s, mask)


class DiffPool(GraphClassifier):
    """DiffPool of the fair comparison (module docstring: computation, original file, decisions)."""

    required = ("num_layers", "gnn_dim_hidden", "dim_embedding", "dim_embedding_MLP")

    def __init__(self, dim_features: int, dim_target: int, max_num_nodes: int, num_layers: int, gnn_dim_hidden: int,
                 dim_embedding: int, dim_embedding_MLP: int) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"num_layers must be at least 1 (DiffPool layers), got {num_layers}")
        if max_num_nodes < 1:
            raise ValueError(f"max_num_nodes must be positive, got {max_num_nodes}")
        self.max_num_nodes = int(max_num_nodes)
        self.clusters = cluster_counts(self.max_num_nodes, num_layers)
        embed_width = (NUM_SAGE_LAYERS - 1) * gnn_dim_hidden + dim_embedding
        layers, width = [], dim_features
        for clusters in self.clusters:
            layers.append(DiffPoolLayer(width, gnn_dim_hidden, dim_embedding, clusters))
            width = embed_width
        self.diffpool_layers = nn.ModuleList(layers)
        self.final_embed = SAGEConvolutions(embed_width, gnn_dim_hidden, dim_embedding, lin=False)
        self.lin1 = nn.Linear(embed_width * (num_layers + 1), dim_embedding_MLP)
        self.lin2 = nn.Linear(dim_embedding_MLP, dim_target)

    @classmethod
    def from_config(cls, cfg: dict, meta: DatasetMeta, sizes: np.ndarray) -> DiffPool:
        """DiffPool with the config's ``num_layers``, ``gnn_dim_hidden``, ``dim_embedding`` and
        ``dim_embedding_MLP``, its cluster counts from the largest graph in ``sizes``."""
        if meta.node_features is None:
            raise ValueError("DiffPool needs node features")
        if np.asarray(sizes).size == 0:
            raise ValueError("DiffPool needs the node counts of the dataset's graphs (sizes is empty)")
        return cls(meta.node_features.size, meta.num_outputs, int(np.max(sizes)), int(cfg["num_layers"]),
                   int(cfg["gnn_dim_hidden"]), int(cfg["dim_embedding"]), int(cfg["dim_embedding_MLP"]))

    def forward(self, batch) -> torch.Tensor:
        """Logits (B, C) of the batch's graphs; sets ``aux_loss`` to the summed link and entropy losses."""
        x, mask = to_dense_batch(batch.x, batch.batch, batch.ptr)
        adj = to_dense_adjacency(batch.edge_index, batch.batch, batch.ptr, x.shape[1]).to(x.dtype)
        readouts, aux = [], x.new_zeros(())
        for i, layer in enumerate(self.diffpool_layers):
            x, adj, link_loss, entropy_loss = layer(x, adj, mask if i == 0 else None)
            readouts.append(x.max(dim=1).values)
            aux = aux + link_loss + entropy_loss
        x = self.final_embed(x, mean_adjacency(adj))
        readouts.append(x.max(dim=1).values)
        self.aux_loss = aux
        return self.lin2(F.relu(self.lin1(torch.cat(readouts, dim=-1))))
