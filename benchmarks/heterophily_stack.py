"""Seconds per optimisation step of protocol heterophily: the ten splits of one configuration as one vmapped stack
(gnnbench.training.split_stack) against the same ten splits one at a time, on the real chameleon and tolokers files,
at the paper's width; and the compute of the paper suite from the measured rates.

    python benchmarks/heterophily_stack.py [--data ../shared/data/real/heterophily] [--datasets chameleon tolokers]
        [--steps 5] [--threads 2]
        [--model torch_geometric.nn.models.GCN] [--hidden 512] [--layers 2] [--device cpu]

Each dataset is made by generator heterophily from its released file (placed in a temporary raw folder), then:

* **stack**: one :class:`~gnnbench.training.split_stack.SplitStackStep` of the ten splits, ``--steps`` steps
  after one untimed step (a step: every member's training forward, backward and AdamW update, then every member's
  evaluation on train / val / test);
* **one at a time**: ten steps of one member each (a stack of one split, no vmap: exactly the released procedure's
  work per split), ``--steps`` rounds after one untimed round.

The model is ``--model`` (default PyG's GCN, ``--hidden`` channels, ``--layers`` layers: a model of the contract
that vmaps; the zoo's platonov2023 GCN when that zoo is installed: ``--model GCN``). Reported per dataset: seconds
per step of the ten splits each way and their ratio, and the paper suite's compute: 9 datasets × 9 models × 5
layer counts = 405 configurations × 1,000 steps of the ten splits, at the mean measured rate of the two datasets
(a rough figure: the real models and the other datasets cost differently).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import torch

from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.protocols.heterophily.train import dropout_seed, split_seed, stack_inputs
from gnnbench.training.engine import Run
from gnnbench.training.split_stack import SplitStackStep

DATASETS = ("chameleon", "tolokers")
PAPER_CONFIGS, PAPER_STEPS = 9 * 9 * 5, 1000


def step_seconds(step: SplitStackStep, run: Run, steps: int) -> float:
    """Mean wall seconds of ``steps`` steps after one untimed step."""
    step.epoch(run, list(run.active))
    start = time.perf_counter()
    for _ in range(steps):
        step.epoch(run, list(run.active))
    return (time.perf_counter() - start) / steps


def measure(dataset_dir: Path, splits: Path, config: dict, steps: int, device: torch.device) -> dict[str, float]:
    """Seconds per step of the ten splits: as one stack and one split at a time."""
    meta, _, build, batch, labels, masks, ids = stack_inputs(dataset_dir, splits, None, device)

    def stack(rows: list[int]) -> tuple[SplitStackStep, Run]:
        member_masks = {part: m[rows] for part, m in masks.items()}
        step = SplitStackStep(lambda: build(config), batch, labels, member_masks, metric=meta.metric, lr=3e-5,
                              weight_decay=0.0, warmup=0, seeds=[split_seed(0, k) for k in rows],
                              dropout_seed=dropout_seed(0), name=config["model"])
        return step, Run(len(rows))

    together = step_seconds(*stack(ids), steps)
    alone = sum(step_seconds(*stack([k]), steps) for k in ids)
    return {"stack": together, "one_at_a_time": alone}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/real/heterophily"))
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", default="torch_geometric.nn.models.GCN")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.model.startswith("torch_geometric"):
        config = {"model": args.model, "hidden_channels": args.hidden, "num_layers": args.layers}
    else:  # a zoo model: the paper's keys
        config = {"model": args.model, "hidden_dim": args.hidden, "num_layers": args.layers}
    rates = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "raw" / "heterophily").mkdir(parents=True)
        for name in args.datasets:
            shutil.copy(Path(args.data) / f"{name}.npz", root / "raw" / "heterophily" / f"{name}.npz")
            generate_dataset("heterophily", name, {"name": name}, 0, root / name, raw_dir=root / "raw")
            make_split_file(root / name, "given", {}, root / f"{name}.json")
            seconds = measure(root / name, root / f"{name}.json", config, args.steps, torch.device(args.device))
            rates.append(seconds["stack"])
            print(f"{name}: ten splits as one stack {seconds['stack']:.3f} s/step, one at a time "
                  f"{seconds['one_at_a_time']:.3f} s/step ({seconds['one_at_a_time'] / seconds['stack']:.2f}x)")
    mean = sum(rates) / len(rates)
    hours = PAPER_CONFIGS * PAPER_STEPS * mean / 3600
    print(f"paper suite: {PAPER_CONFIGS} configurations x {PAPER_STEPS} steps x {mean:.3f} s/step (stack, mean of "
          f"{', '.join(args.datasets)}) = {hours:.1f} hours on this device ({args.model}, hidden {args.hidden}, "
          f"{args.layers} layers, {args.threads} threads)")


if __name__ == "__main__":
    main()
