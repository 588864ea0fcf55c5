"""Keep freed memory in the process for the next step: glibc malloc settings for a process that trains.

Why: torch's CPU allocator calls ``malloc``/``free`` for every tensor. glibc serves a block above its mmap threshold
(128 KiB, adapting up to 32 MiB) with a fresh ``mmap`` and unmaps it on ``free``, and trims the top of the heap
above 128 KiB, so the large temporaries of every batch or step (dropout masks, per-edge arrays, products) are
zero-filled again by the kernel, one page fault per 4 KiB, several times slower than writing memory the process
already holds. :func:`keep_freed_memory` sets ``M_MMAP_MAX = 0`` (every block from the heap) and the largest
``M_TRIM_THRESHOLD`` (freed memory stays in the heap), so a step's temporaries reuse the pages of the step before.
Both settings are needed: an explicit trim threshold alone switches off glibc's adaptive mmap threshold and makes
every large block a fresh mapping. No result changes.

Scope: the settings are process-wide by nature, so gnnbench applies them only where it owns the process — the
``gnnbench`` command, the workflow's job scripts (:func:`gnnbench.script_job.job`), the pitfalls job runner and the
benchmarks — never on import; code that imports gnnbench as a library may call :func:`keep_freed_memory` itself.
The cost is that the resident size does not shrink after a large batch (memory is kept for the next one), and that
the heap holds holes: torch allocates with ``posix_memalign(64, n)``, which glibc (before 2.38) serves only from a
free block of at least n + 96 bytes, so a tensor the exact size of one just freed fits that hole only once its
neighbours are free too. The heap grows over the first batches and then stays put (tests/test_allocator.py checks
the steady state of a training-like loop). ``GNNBENCH_MALLOC=system`` keeps the C library's defaults. Elsewhere than
glibc (macOS, musl, Windows) nothing changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # mallopt parameters, <malloc.h>
_TRIM_MAX = 2**31 - 1  # mallopt takes an int
_applied: bool | None = None


def _glibc():
    """The C library if it is glibc (has ``mallopt`` and ``gnu_get_libc_version``), else None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    if not (hasattr(libc, "mallopt") and hasattr(libc, "gnu_get_libc_version")):
        return None
    return libc


def keep_freed_memory() -> bool:
    """Set glibc malloc to keep freed blocks for reuse (module docstring); True when the settings are in force.

    Idempotent; never raises. Does nothing (False) off glibc or with ``GNNBENCH_MALLOC=system``."""
    global _applied
    if _applied is None:
        libc = None if os.environ.get("GNNBENCH_MALLOC", "") == "system" else _glibc()
        _applied = bool(libc and libc.mallopt(M_MMAP_MAX, 0) == 1 and libc.mallopt(M_TRIM_THRESHOLD, _TRIM_MAX) == 1)
    return _applied


__all__ = ["keep_freed_memory"]
