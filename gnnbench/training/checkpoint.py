"""Per-epoch checkpoints: everything needed to continue a run exactly where it stopped.

A checkpoint holds the model, optimizer and scheduler states, the torch RNG states (global CPU, CUDA, and
the shuffling generator), the history so far, the elapsed training time and a key identifying the run
(config, dataset, split, fold, positional encodings). It is written atomically after every epoch; a
restarted run with the same key resumes from it and ends with the same metrics as an uninterrupted run.
A checkpoint of a finished run is kept (final weights) but never resumed: rerunning trains afresh.

Checkpoints are read with ``torch.load(weights_only=True)``, which unpickles tensors and plain Python containers
and scalars only. NumPy arrays and scalars in a state (the pitfalls protocol keeps its finished splits' histories
as arrays) are therefore stored as tensors, tagged, and turned back into the same arrays on reading
(:func:`save_checkpoint`, :func:`read_checkpoint`). Any other object in a state would make the checkpoint
unreadable — discarded with a warning, the run trained from scratch — so the tests read back every state each
protocol writes (``tests/test_resume_after_kill.py``).
"""

from __future__ import annotations

import copy
import logging
import os
from pathlib import Path

import numpy as np
import torch

from gnnbench.io import atomic_path

log = logging.getLogger(__name__)
CHECKPOINT_FILE = "checkpoint.pt"


_NUMPY = "__numpy__"  # key of the dict that stands for a NumPy array ("array") or scalar ("scalar") in a file


def _encode(obj):
    """``obj`` with every NumPy array and scalar replaced by ``{_NUMPY: kind, "data": tensor}`` (containers are
    copied only where something inside changed, so e.g. a state dict's ``_metadata`` is kept)."""
    if isinstance(obj, np.ndarray | np.generic):
        array = np.asarray(obj)
        if array.dtype.kind not in "biufc":
            raise TypeError(f"a checkpoint cannot hold a NumPy array of dtype {array.dtype}; store numbers only")
        data = torch.from_numpy(array.astype(array.dtype.newbyteorder("="), order="C", copy=True))
        return {_NUMPY: "array" if isinstance(obj, np.ndarray) else "scalar", "data": data}
    return _map(obj, _encode)


def _decode(obj):
    """Inverse of :func:`_encode`."""
    if isinstance(obj, dict) and obj.get(_NUMPY) in ("array", "scalar") and torch.is_tensor(obj.get("data")):
        array = obj["data"].numpy()
        return array if obj[_NUMPY] == "array" else array[()]
    return _map(obj, _decode)


def _map(obj, fn):
    """``fn`` applied to the items of a dict, list or tuple; ``obj`` itself if no item changed."""
    if isinstance(obj, dict):
        changed = {k: new for k, v in obj.items() if (new := fn(v)) is not v}
        if not changed:
            return obj
        out = copy.copy(obj)  # same type and attributes (a state dict's _metadata)
        out.update(changed)
        return out
    if isinstance(obj, list | tuple):
        items = [fn(v) for v in obj]
        if all(a is b for a, b in zip(items, obj, strict=True)):
            return obj
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)  # named tuples take fields
    return obj


def save_checkpoint(path: str | os.PathLike, state: dict) -> None:
    """Write ``state`` atomically; NumPy arrays and scalars in it are stored as tensors (module docstring)."""
    state = _encode(state)
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def read_checkpoint(path: str | os.PathLike) -> dict:
    """The state saved at ``path`` by :func:`save_checkpoint`, read with ``weights_only=True`` (raises if the file
    is missing, corrupt or holds objects other than tensors, NumPy values and plain Python data)."""
    return _decode(torch.load(path, map_location="cpu", weights_only=True))


def load_resumable(path: str | os.PathLike, key: str) -> dict | None:
    """The checkpoint at ``path`` if it belongs to this run (same key) and the run did not finish."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        state = read_checkpoint(path)
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
    """The global CPU (and CUDA) RNG states and the shuffling generator's, for a checkpoint."""
    state = {"cpu": torch.get_rng_state(), "shuffle": shuffle.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict, shuffle: torch.Generator) -> None:
    """Set the generators back to a checkpoint's :func:`rng_state` (CUDA's where a GPU is present)."""
    torch.set_rng_state(state["cpu"])
    shuffle.set_state(state["shuffle"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
