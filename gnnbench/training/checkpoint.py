"""Per-epoch checkpoints: everything needed to continue a run exactly where it stopped.

A checkpoint holds the model, optimizer and scheduler states, the torch RNG states (global CPU, CUDA, and
the shuffling generator), the history so far, the elapsed training time and a key identifying the run
(config, dataset, split, fold, positional encodings). It is written atomically after every epoch; a
restarted run with the same key resumes from it and ends with the same metrics as an uninterrupted run.
A checkpoint of a finished run is kept (final weights) but never resumed: rerunning trains afresh.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import torch

from gnnbench.io import atomic_path

log = logging.getLogger(__name__)
CHECKPOINT_FILE = "checkpoint.pt"


def save_checkpoint(path: str | os.PathLike, state: dict) -> None:
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def load_resumable(path: str | os.PathLike, key: str) -> dict | None:
    """The checkpoint at ``path`` if it belongs to this run (same key) and the run did not finish."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # any unreadable checkpoint is discarded: the run restarts from scratch
        log.warning("ignoring unreadable checkpoint %s (%s); training from scratch", path, exc)
        return None
    if state.get("key") != key:
        log.info("checkpoint %s belongs to another config or data version; training from scratch", path)
        return None
    if state.get("finished"):
        log.info("checkpoint %s is of a finished run; training afresh", path)
        return None
    return state


def rng_state(shuffle: torch.Generator) -> dict:
    state = {"cpu": torch.get_rng_state(), "shuffle": shuffle.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict, shuffle: torch.Generator) -> None:
    torch.set_rng_state(state["cpu"])
    shuffle.set_state(state["shuffle"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
