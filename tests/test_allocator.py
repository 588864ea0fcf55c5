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

# Allocate and free a 256 MB tensor, then count the page faults of allocating and filling the same size again.
PROBE = """
import json, resource, sys
from gnnbench.allocator import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "apply" else False
import torch
torch.empty(64 * 2**20).fill_(1.0)  # 256 MB, freed at once
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
torch.empty(64 * 2**20).fill_(2.0)
print(json.dumps({"applied": applied, "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before}))
"""


def probe(mode: str, **env) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], check=True, capture_output=True, text=True,
                         env={**os.environ, **env})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_kept_memory_is_reused_without_page_faults():
    pages = 256 * 2**20 // os.sysconf("SC_PAGE_SIZE")
    default = probe("default", GNNBENCH_MALLOC="")
    kept = probe("apply", GNNBENCH_MALLOC="")
    assert not default["applied"] and default["faults"] > pages // 2  # glibc unmaps and maps again: a fault per page
    assert kept["applied"] and kept["faults"] < pages // 50  # the freed block is reused as it is


def test_system_malloc_opts_out():
    pages = 256 * 2**20 // os.sysconf("SC_PAGE_SIZE")
    opted_out = probe("apply", GNNBENCH_MALLOC="system")
    assert not opted_out["applied"] and opted_out["faults"] > pages // 2


def test_importing_gnnbench_or_calling_main_with_arguments_changes_nothing():
    """The settings are process-wide: only the `gnnbench` command itself (argv None) and the workflow's training jobs
    apply them, never an import or a caller that passes its own arguments (tests, other programs)."""
    code = ("import json, gnnbench.allocator as a, gnnbench.cli as cli\n"
            "try:\n    cli.main(['generate', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(a._applied))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) is None
