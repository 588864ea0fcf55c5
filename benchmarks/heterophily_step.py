"""Seconds per full-batch step (train + evaluation) of one split for the platonov2023 zoo at the paper's width.

    python benchmarks/heterophily_step.py [--file PATH/tolokers.npz] [--threads 2] [--steps 4]

Reads a released ``.npz`` file (default: tolokers from ../shared/data/real/heterophily), doubles its edges as the
released code does, and times ResNet, GCN, SAGE and GAT-sep (``--layers``, hidden 512) on split 0: one AdamW step on
the training nodes, then one forward pass in eval mode — what the protocol does per step for one member of its stack.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from gnnbench.models.heterophily.gat import GATSep
from gnnbench.models.heterophily.gcn import GCN
from gnnbench.models.heterophily.resnet import ResNet
from gnnbench.models.heterophily.sage import SAGE

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "real" / "heterophily" / "tolokers.npz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=DEFAULT)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--layers", type=int, nargs="+", default=[2, 5])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    data = np.load(args.file, allow_pickle=False)
    x = torch.tensor(data["node_features"], dtype=torch.float32)
    y = torch.tensor(data["node_labels"])
    edges = torch.tensor(data["edges"].T, dtype=torch.long)
    edge_index = torch.cat([edges, edges.flip(0)], 1)
    train = torch.tensor(data["train_masks"][0])
    classes = int(y.max()) + 1
    outputs = 1 if classes == 2 else classes
    print(f"{args.file.name}: {x.shape[0]} nodes, {edge_index.shape[1]} directed edges, {args.threads} threads")
    for cls, layers in ((cls, layers) for layers in args.layers for cls in (ResNet, GCN, SAGE, GATSep)):
        torch.manual_seed(0)
        model = cls(x.shape[1], outputs, num_layers=layers)
        optimiser = torch.optim.AdamW(model.parameters(), lr=3e-5)
        seconds = []
        for _ in range(args.steps):
            start = time.perf_counter()
            model.train()
            out = model(x, edge_index)
            if outputs == 1:
                loss = F.binary_cross_entropy_with_logits(out[train, 0], y[train].float())
            else:
                loss = F.cross_entropy(out[train], y[train])
            loss.backward()
            optimiser.step()
            optimiser.zero_grad()
            model.eval()
            with torch.no_grad():
                model(x, edge_index)
            seconds.append(time.perf_counter() - start)
        print(f"{cls.__name__} L={layers}: {np.median(seconds):.2f} s per step (median of {args.steps})")


if __name__ == "__main__":
    main()
