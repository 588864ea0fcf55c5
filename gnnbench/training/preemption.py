"""Pre-emption safety: SIGTERM stops a training run cleanly, with its checkpoint on disk, and a non-zero exit.

SLURM sends SIGTERM when a job reaches its time limit, is pre-empted or is cancelled (``scancel``), and SIGKILL
``KillWait`` seconds (default 30) later. A training run must then leave a checkpoint it can resume from and exit
non-zero, so that Snakemake (``retries``) or SLURM (``--requeue``) starts it again and the new job resumes.

How: :class:`StopOnSignal` installs a handler that raises :class:`Preempted` at once, abandoning the epoch in
progress: its half-trained in-memory state is discarded and the checkpoint already on disk — written atomically
after every completed epoch, and before the first one — is the resume point. Abandoning instead of finishing the
epoch is deterministic (a resumed run repeats the abandoned epoch from the same saved RNG and optimizer state, so
its metrics equal an uninterrupted run's) and fits in ``KillWait`` however long an epoch takes. Checkpoint and
output writes run in :meth:`StopOnSignal.deferred` sections: a signal arriving there is acted on when the write
is complete, so a checkpoint is never half-replaced (the writes are atomic renames anyway).

The exit status of a pre-empted run is 128 + the signal number (143 for SIGTERM), the shell's convention for a
process ended by that signal. Handlers can only be installed from the main thread; elsewhere the guard does
nothing and signals keep their previous behaviour.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from gnnbench.errors import GnnbenchError

log = logging.getLogger(__name__)
STOP_SIGNALS = (signal.SIGTERM,)


class Preempted(GnnbenchError):
    """A stop signal ended the run; its message says which checkpoint a rerun resumes from."""

    def __init__(self, signum: int, message: str | None = None) -> None:
        self.signum = signum
        self.exit_code = 128 + signum
        super().__init__(message or f"stopped by {signal.Signals(signum).name}")


class StopOnSignal:
    """Context manager: while active, a stop signal raises :class:`Preempted` (deferred inside :meth:`deferred`)."""

    def __init__(self, signals: tuple[int, ...] = STOP_SIGNALS) -> None:
        self.signals = signals
        self.received: int | None = None
        self._deferring = 0
        self._previous: dict[int, object] = {}

    def __enter__(self) -> StopOnSignal:
        if threading.current_thread() is threading.main_thread():
            for signum in self.signals:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _handle(self, signum: int, frame: object) -> None:
        if self.received is None:
            log.warning("received %s: stopping", signal.Signals(signum).name)
        self.received = signum
        if not self._deferring:
            raise Preempted(signum)

    @contextmanager
    def deferred(self, raise_after: bool = True) -> Iterator[None]:
        """A section a stop signal does not interrupt; a signal received meanwhile raises :class:`Preempted`
        when the (outermost) section ends, unless ``raise_after`` is false."""
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
        if raise_after and self.received is not None and not self._deferring:
            raise Preempted(self.received)
