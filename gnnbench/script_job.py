"""Glue for the Snakemake scripts: logging into the rule's log file, one-line user errors, Ctrl-C at any point.

A script imports this module first and does everything else, its imports included, inside :func:`job`::

    from gnnbench.script_job import job

    with job(snakemake):
        from gnnbench.pipeline import compute_pe

        compute_pe(...)

so that Ctrl-C while the script is still importing torch ends the job as quietly as Ctrl-C during training.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from gnnbench.allocator import keep_freed_memory
from gnnbench.errors import INTERRUPTED, GnnbenchError
from gnnbench.io import os_error_message

log = logging.getLogger("gnnbench")


@contextmanager
def job(smk, torch_threads: bool = True) -> Iterator[None]:
    """The body of the job of the rule behind the ``snakemake`` object ``smk``, its imports included.

    Logs go to stderr and to the rule's ``log`` file. A user-fixable error is written there as one line and the job
    exits with status 1 (Snakemake then removes the job's incomplete outputs); so is an operating-system error on a
    named path (permission denied, a file where a folder belongs, disk full). A training run stopped by SIGTERM
    exits with 143 after saving its checkpoint, and the retried job resumes from it; Ctrl-C (SIGINT), also while the
    script imports, ends the job with one line and status 130, its checkpoint intact. Any other exception — from a
    plugin model's code, say — is logged with its traceback, so that the log file Snakemake points to holds it, and
    the job exits with status 1. With ``torch_threads`` (steps that train) torch's thread count is set to the job's
    threads and malloc keeps freed memory for reuse (:mod:`gnnbench.allocator`; the job's process is gnnbench's own);
    steps that only read tables and draw pass False and never import torch.
    """
    try:
        handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
        if smk.log:
            handlers.append(logging.FileHandler(smk.log[0], mode="w"))
        logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        if torch_threads:
            keep_freed_memory()  # this job's process trains: keep freed memory for the next batch (gnnbench.allocator)
            if smk.threads:
                import torch

                torch.set_num_threads(smk.threads)
        yield
    except GnnbenchError as exc:
        log.error("%s", exc)
        sys.exit(getattr(exc, "exit_code", 1))
    except KeyboardInterrupt:  # Ctrl-C: outputs are written atomically, a training run resumes from its checkpoint
        log.error("%s", INTERRUPTED)
        sys.exit(130)  # 128 + SIGINT
    except Exception as exc:
        message = os_error_message(exc) if isinstance(exc, OSError) else None
        if message is not None:  # a named path the user can fix: permission denied, a file in the way, disk full
            log.error("%s", message)
        else:  # not gnnbench's to explain in a line (a plugin's bug, or gnnbench's): the traceback, in the log too
            log.exception("the job failed: %s: %s", type(exc).__name__, exc)
        sys.exit(1)
