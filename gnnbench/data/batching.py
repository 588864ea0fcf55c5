"""Mini-batches built by vectorised gathers over a :class:`~gnnbench.data.store.GraphStore`.

A batch of graph ids ``g`` becomes one disjoint-union graph: node rows are the concatenated ranges
``node_ptr[g_i] : node_ptr[g_i + 1]``, edge rows likewise, and local edge indices are shifted by each
graph's offset in the batch. All of it is a handful of tensor operations whatever the batch size; no
per-graph Python objects are created.

The result, :class:`GraphBatch`, carries the attribute names of ``torch_geometric.data.Batch`` (``x``,
``edge_index``, ``edge_attr``, ``y``, ``batch``, ``ptr``, ``num_graphs``) plus ``pe`` (positional
encodings), so PyG operators accept it as they are; :meth:`GraphBatch.to_pyg` makes a real ``Batch``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields, replace

import torch

from gnnbench.data.store import GraphStore


def gather_ranges(starts: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Concatenation of ``arange(s, s + c)`` for every (s, c) pair, without a Python loop.

    Built as the cumulative sum of unit steps with a jump at the start of every range (one pass over the
    output; faster than arange + repeat_interleave for large batches: ``docs/performance.md``).
    """
    nonempty = counts > 0
    starts, counts = starts[nonempty], counts[nonempty]
    total = int(counts.sum())
    steps = torch.ones(total, dtype=torch.int64, device=starts.device)
    if total:
        jumps = starts.clone()
        jumps[1:] -= starts[:-1] + counts[:-1] - 1  # from the last index of one range to the first of the next
        steps[torch.cumsum(counts, 0) - counts] = jumps
    return torch.cumsum(steps, 0)


@dataclass
class GraphBatch:
    """A mini-batch of graphs as one disjoint union (``torch_geometric.data.Batch`` attribute names)."""

    edge_index: torch.Tensor  # (2, E) int64, batch-global node indices
    batch: torch.Tensor  # (N,) graph index of every node
    ptr: torch.Tensor  # (B + 1,) node offsets of the graphs
    num_graphs: int
    x: torch.Tensor | None = None
    edge_attr: torch.Tensor | None = None
    y: torch.Tensor | None = None
    pe: torch.Tensor | None = None  # (N, k) positional encodings
    y_graph: torch.Tensor | None = None  # graph-level targets of a multitask dataset (``y`` is node-level)
    pairs: torch.Tensor | None = None  # (2, P) node pairs to score (link prediction)
    graph_ids: torch.Tensor | None = None  # (B,) the store's ids of the batch's graphs (per-graph precomputed data)
    targets: torch.Tensor | None = None  # (M,) the nodes scored (one graph with node splits); y holds their labels

    @property
    def num_nodes(self) -> int:
        """Nodes of the batch, over all its graphs."""
        return self.batch.numel()

    @property
    def num_edges(self) -> int:
        """Edges of the batch, over all its graphs."""
        return self.edge_index.shape[1]

    def to(self, device: torch.device | str, non_blocking: bool = False) -> GraphBatch:
        """A copy of the batch with every tensor moved to ``device`` (``num_graphs`` and absent fields as they
        are)."""
        moved = {
            f.name: getattr(self, f.name).to(device, non_blocking=non_blocking)
            for f in fields(self)
            if isinstance(getattr(self, f.name), torch.Tensor)
        }
        return replace(self, **moved)

    def to_pyg(self):
        """The same batch as a ``torch_geometric.data.Batch`` (PyG is imported only here).

        It carries the tensors and ``num_graphs``, which is all PyG operators use; it has no per-graph slice
        bookkeeping, so ``to_data_list()`` and ``batch[i]`` are not available on it.
        """
        from torch_geometric.data import Batch

        attrs = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "num_graphs"}
        out = Batch(**{k: v for k, v in attrs.items() if v is not None})
        out._num_graphs = self.num_graphs
        return out


def model_dtypes(store: GraphStore) -> GraphStore:
    """Store whose feature/label tensors have the dtypes models expect: integers → int64, floats → float32.

    Done once per run rather than per batch; ``edge_index`` stays int32 (it is the largest array and is
    widened per batch).
    """

    def convert(t: torch.Tensor) -> torch.Tensor:
        if t.is_floating_point():
            return t.to(torch.float32)
        return t.to(torch.int64)

    return replace(
        store,
        node={k: convert(v) for k, v in store.node.items()},
        edge={k: convert(v) for k, v in store.edge.items()},
        graph={k: convert(v) for k, v in store.graph.items()},
    )


class GraphLoader:
    """Iterates mini-batches over ``indices`` of a store; shuffling draws from ``generator``.

    Store columns ``x`` (node), ``edge_attr`` (edge) and ``y`` (node-, edge- or graph-level) become the batch's
    attributes of the same name (a dataset with both node and graph ``y`` — multitask — also gets
    ``y_graph``); ``pe`` is an optional (num_nodes_total, k) tensor aligned with the store.
    The last batch may be smaller (``drop_last=False``, as in the benchmark).
    """

    def __init__(
        self,
        store: GraphStore,
        indices: torch.Tensor,
        batch_size: int,
        *,
        shuffle: bool = False,
        generator: torch.Generator | None = None,
        pe: torch.Tensor | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        if shuffle and generator is None:
            raise ValueError("shuffling needs an explicit torch.Generator (seeded) for reproducibility")
        self.store = store
        self.indices = torch.as_tensor(indices, dtype=torch.int64)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.generator = generator
        self.pe = pe
        self._num_nodes = store.num_nodes
        self._num_edges = store.num_edges
        self._node_y = "y" in store.node

    def __len__(self) -> int:
        """Batches per epoch (the last one may be smaller)."""
        return -(-self.indices.numel() // self.batch_size)

    def __iter__(self) -> Iterator[GraphBatch]:
        """The batches of one epoch, in ``indices`` order or, with ``shuffle``, a fresh permutation."""
        order = self.indices
        if self.shuffle:
            order = order[torch.randperm(order.numel(), generator=self.generator)]
        for start in range(0, order.numel(), self.batch_size):
            yield self.collate(order[start : start + self.batch_size])

    def collate(self, graph_ids: torch.Tensor) -> GraphBatch:
        """One batch made of the graphs ``graph_ids`` (in that order)."""
        store = self.store
        node_counts = self._num_nodes[graph_ids]
        edge_counts = self._num_edges[graph_ids]
        node_idx = gather_ranges(store.node_ptr[graph_ids], node_counts)
        edge_idx = gather_ranges(store.edge_ptr[graph_ids], edge_counts)
        num_graphs = graph_ids.numel()
        ptr = torch.zeros(num_graphs + 1, dtype=torch.int64)
        torch.cumsum(node_counts, 0, out=ptr[1:])
        offsets = torch.repeat_interleave(ptr[:-1], edge_counts, output_size=edge_idx.numel())
        # 1-D index_select on each row: much faster than advanced indexing of the (2, E) tensor
        edge_index = torch.stack([store.edge_index[0].index_select(0, edge_idx),
                                  store.edge_index[1].index_select(0, edge_idx)]).to(torch.int64)
        edge_index += offsets
        batch = torch.repeat_interleave(torch.arange(num_graphs), node_counts, output_size=node_idx.numel())

        x = store.node.get("x")
        edge_attr = store.edge.get("edge_attr")
        graph_y = store.graph["y"].index_select(0, graph_ids) if "y" in store.graph else None
        y_graph = None
        if self._node_y:
            y, y_graph = store.node["y"].index_select(0, node_idx), graph_y
        elif "y" in store.edge:
            y = store.edge["y"].index_select(0, edge_idx)
        else:
            y = graph_y
        return GraphBatch(
            edge_index=edge_index,
            batch=batch,
            ptr=ptr,
            num_graphs=num_graphs,
            x=None if x is None else x.index_select(0, node_idx),
            edge_attr=None if edge_attr is None else edge_attr.index_select(0, edge_idx),
            y=y,
            pe=None if self.pe is None else self.pe.index_select(0, node_idx),
            y_graph=y_graph,
            graph_ids=graph_ids,
        )


def node_set_batches(store: GraphStore, parts: dict[str, torch.Tensor],
                     pe: torch.Tensor | None = None) -> dict[str, list[GraphBatch]]:
    """Full-graph "batches" of a single-graph dataset, one per node set (train / val / test): the whole graph, with
    ``targets`` = the set's nodes and ``y`` = their labels. An epoch over ``[batch]`` is one full-batch step."""
    whole = GraphLoader(store, torch.zeros(1, dtype=torch.int64), 1, pe=pe).collate(torch.zeros(1, dtype=torch.int64))
    return {part: [replace(whole, targets=nodes, y=whole.y.index_select(0, nodes))] for part, nodes in parts.items()}
