"""Glue for the Snakemake scripts: logging into the rule's log file and one-line user errors."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from gnnbench.allocator import keep_freed_memory
from gnnbench.errors import INTERRUPTED, GnnbenchError
from gnnbench.io import os_error_message


def run_step(smk, step: Callable[[], object], torch_threads: bool = True) -> None:
    """Run ``step`` for the rule behind the ``snakemake`` object ``smk``.

    Logs go to stderr and to the rule's ``log`` file; a user-fixable error is written there as one line and
    the job exits with status 1 (Snakemake then removes the job's incomplete outputs); so is an operating-system
    error on a named path (permission denied, a file where a folder belongs, disk full). A training run stopped by
    SIGTERM exits with 143 after saving its checkpoint, and the retried job resumes from it; Ctrl-C (SIGINT) ends
    the job with one line and status 130, its checkpoint intact. With
    ``torch_threads`` (steps that train) torch's thread count is set to the job's threads and malloc keeps freed
    memory for reuse (:mod:`gnnbench.allocator`; the job's process is gnnbench's own); steps that only read tables
    and draw pass False and never import torch.
    """
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if smk.log:
        handlers.append(logging.FileHandler(smk.log[0], mode="w"))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if torch_threads:
            keep_freed_memory()  # this job's process trains: keep freed memory for the next batch (gnnbench.allocator)
        if torch_threads and smk.threads:
            import torch

            torch.set_num_threads(smk.threads)
        step()
    except GnnbenchError as exc:
        logging.getLogger("gnnbench").error("%s", exc)
        sys.exit(getattr(exc, "exit_code", 1))
    except KeyboardInterrupt:  # Ctrl-C: outputs are written atomically, a training run resumes from its checkpoint
        logging.getLogger("gnnbench").error("%s", INTERRUPTED)
        sys.exit(130)  # 128 + SIGINT
    except OSError as exc:  # a named path the user can fix: permission denied, a file in the way, disk full
        message = os_error_message(exc)
        if message is None:
            raise
        logging.getLogger("gnnbench").error("%s", message)
        sys.exit(1)
