"""Seconds to convert ZINC-sized molecule pickles into graph columns (gnnbench.data.generators.molecules).

    python benchmarks/molecules_speed.py [--molecules 250000] [--distinct 5000] [--pyg] [--seed 0]

A synthetic ``train.pickle`` in the released format (a list of dicts of classically pickled torch tensors:
``num_atom``, ``atom_type`` (N), ``bond_type`` (N×N), ``logP_SA_cycle_normalized`` (1)) holds ``--molecules``
molecules, ``--distinct`` of them distinct and the rest repeated by reference (so that a 250k file is built in
seconds; ``--distinct`` = ``--molecules`` gives a fully realistic file, about 1.2 GB for 250k). Molecules are
ZINC-like: 9–38 atoms (mean ≈ 23), a random tree plus ring bonds (≈ 50 directed edges), 28 atom and 3 bond types.

Reported, separately:

* ``safe_load`` of the pickle (allow-list unpickling; tensors stay undecoded ``PickledTensor`` holders — with
  repeats the memo makes this cheaper than for a real file);
* decoding one storage (``to_numpy``: ``torch.load(weights_only=True)`` + rebuild), per storage, over the distinct
  molecules' three tensors, and extrapolated to every molecule of the file (three storages each);
* the conversion proper (:func:`~gnnbench.data.generators.molecules.zinc_part` on every molecule, ZINC-full style)
  with decoding replaced by a lookup of the already decoded arrays: collecting the arrays per molecule and the
  vectorised nonzero-bond extraction, checks and concatenation;
* with ``--pyg``: PyTorch Geometric's ``ZINC(subset=False)`` processing the same file (its per-molecule loop; its
  unrestricted ``pickle.load`` decodes each distinct storage once), for comparison.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # gnnbench from the repository root, even when not installed

import numpy as np  # noqa: E402
import torch  # noqa: E402

from gnnbench.data.generators import molecules  # noqa: E402
from gnnbench.data.safe_pickle import PickledTensor, safe_load, to_numpy  # noqa: E402


def synthetic_molecules(count: int, seed: int) -> list[dict]:
    """``count`` random ZINC-like molecules as the released pickle's dicts (``num_atom``, ``atom_type``, ``bond_type``,
    a target)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):  # fixture construction, not the measured path
        n = int(np.clip(np.rint(rng.normal(23.2, 4.5)), 9, 38))
        bond = np.zeros((n, n), dtype=np.int64)
        parent = (rng.random(n - 1) * np.arange(1, n)).astype(np.int64)
        types = rng.integers(1, 4, n - 1)
        bond[np.arange(1, n), parent] = types
        bond[parent, np.arange(1, n)] = types
        for _ in range(int(rng.poisson(1.5))):
            u, v = rng.choice(n, 2, replace=False)
            bond[u, v] = bond[v, u] = rng.integers(1, 4)
        out.append({"num_atom": n, "atom_type": torch.from_numpy(rng.integers(0, 28, n)),
                    "bond_type": torch.from_numpy(bond),
                    "logP_SA_cycle_normalized": torch.tensor([float(rng.normal(-0.14, 2.0))])})
    return out


def main() -> None:
    """Write the synthetic pickle, then time loading it, decoding the tensors and converting the molecules (and, with
    ``--pyg``, PyG's processing of the same file)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--molecules", type=int, default=250_000)
    parser.add_argument("--distinct", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pyg", action="store_true", help="also time PyG's ZINC(subset=False) processing")
    args = parser.parse_args()
    distinct = synthetic_molecules(min(args.distinct, args.molecules), args.seed)
    start = time.perf_counter()
    data = pickle.dumps([distinct[i % len(distinct)] for i in range(args.molecules)], protocol=4)
    print(f"pickle: {args.molecules:,} molecules ({len(distinct):,} distinct), {len(data) / 2**20:.1f} MiB, "
          f"written in {time.perf_counter() - start:.1f}s")

    start = time.perf_counter()
    mols = safe_load(data, "ZINC pickle")
    print(f"safe_load (allow-list, tensors undecoded): {time.perf_counter() - start:.2f}s")

    holders = [v for mol in mols[:len(distinct)] for v in mol.values() if isinstance(v, PickledTensor)]
    start = time.perf_counter()
    decoded = {id(h): to_numpy(h, "ZINC pickle", "-") for h in holders}
    per_storage = (time.perf_counter() - start) / len(holders)
    print(f"decode: {per_storage * 1e6:.0f} µs per storage (torch.load weights_only=True); "
          f"{3 * args.molecules:,} storages of the file: {3 * args.molecules * per_storage:.1f}s")

    real_decode = molecules.to_numpy
    molecules.to_numpy = lambda holder, what, where: decoded[id(holder)]  # time the conversion proper only
    try:
        start = time.perf_counter()
        part = molecules.zinc_part(mols, None, "ZINC pickle", "-")
        seconds = time.perf_counter() - start
    finally:
        molecules.to_numpy = real_decode
    print(f"conversion (vectorised, decoding excluded): {seconds:.2f}s for {part.num_nodes.size:,} graphs, "
          f"{int(part.num_nodes.sum()):,} nodes, {int(part.num_edges.sum()):,} edges "
          f"({seconds / args.molecules * 1e6:.1f} µs per molecule)")

    if args.pyg:
        from torch_geometric.datasets import ZINC

        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp) / "raw"
            raw.mkdir()
            (raw / "train.pickle").write_bytes(data)
            for split in ("val", "test"):
                (raw / f"{split}.pickle").write_bytes(pickle.dumps(distinct[:10], protocol=4))
                (raw / f"{split}.index").write_text("0\n")
            (raw / "train.index").write_text("0\n")
            start = time.perf_counter()
            ZINC(tmp, subset=False)
            print(f"PyG ZINC(subset=False) processing (per-molecule loop): {time.perf_counter() - start:.1f}s")


if __name__ == "__main__":
    main()
