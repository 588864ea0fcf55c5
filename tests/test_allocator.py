"""gnnbench.allocator: a process that trains keeps freed memory, so a large temporary allocated again is not
zero-filled page by page by the kernel; applied only where gnnbench owns the process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gnnbench.allocator import _glibc

pytestmark = pytest.mark.skipif(_glibc() is None, reason="the malloc settings exist only under glibc")

# A training-like loop: every round allocates four ~32 MB tensors whose sizes vary by a few per cent from round to
# round (like the edge tensors of successive batches), fills them and frees them; the page faults of each round.
PROBE = """
import json, resource, sys
from gnnbench.allocator import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "apply" else False
import torch
faults, pages = [], []
for r in range(8):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    sizes = [(8 << 20) + ((r * 7 + i) % 5) * (1 << 18) for i in range(4)]
    live = [torch.empty(n).fill_(1.0) for n in sizes]
    del live
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    pages.append(sum(sizes) * 4 // resource.getpagesize())
print(json.dumps({"applied": applied, "faults": faults, "pages": pages}))
"""


def probe(mode: str, **env) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], check=True, capture_output=True, text=True,
                         env={**os.environ, **env})
    return json.loads(out.stdout.strip().splitlines()[-1])


def steady_fault_share(run: dict) -> float:
    """Page faults per page allocated over the last four rounds (after the first rounds have grown the heap)."""
    return sum(run["faults"][4:]) / sum(run["pages"][4:])


def test_kept_memory_is_reused_without_page_faults():
    default = probe("default", GNNBENCH_MALLOC="")
    kept = probe("apply", GNNBENCH_MALLOC="")
    assert not default["applied"] and steady_fault_share(default) > 0.9  # glibc unmaps and maps again every round
    # the freed blocks are reused as they are (an occasional round that does not fit a hole faults once)
    assert kept["applied"] and steady_fault_share(kept) < 0.25
    assert kept["faults"][0] > 0.9 * kept["pages"][0]  # the first round does fault: the probe measures real pages


def test_system_malloc_opts_out():
    opted_out = probe("apply", GNNBENCH_MALLOC="system")
    assert not opted_out["applied"] and steady_fault_share(opted_out) > 0.9


def test_importing_gnnbench_or_calling_main_with_arguments_changes_nothing():
    """The settings are process-wide: only the `gnnbench` command itself (argv None) and the workflow's training jobs
    apply them, never an import or a caller that passes its own arguments (tests, other programs)."""
    code = ("import json, gnnbench.allocator as a, gnnbench.cli as cli\n"
            "try:\n    cli.main(['generate', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(a._applied))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) is None
