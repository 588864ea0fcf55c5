"""Progress of long loops (TSP labelling, superpixel extraction): a bar on a terminal, log lines otherwise.

On a terminal (stderr is a TTY) a one-line bar is redrawn in place; in a log file (Snakemake rule logs, SLURM
output) a line ``what: done/total (pct), rate/s, ETA`` is logged at most every ``interval`` seconds and at the
end, so logs stay short.
"""

from __future__ import annotations

import logging
import sys
import time

log = logging.getLogger("gnnbench.progress")


class Progress:
    """Progress of a loop of ``total`` steps called ``what``: a bar on a terminal, a log line at most every
    ``interval`` seconds (and at the end) otherwise."""

    def __init__(self, total: int, what: str, interval: float = 10.0) -> None:
        self.total, self.what, self.interval = total, what, interval
        self.done = 0
        self._start = self._last = time.perf_counter()
        self._tty = sys.stderr.isatty()

    def update(self, count: int = 1) -> None:
        """Count ``count`` more steps done and redraw the bar (or log, when due)."""
        self.done += count
        now = time.perf_counter()
        finished = self.done >= self.total
        if self._tty:
            end = "\n" if finished else ""
            sys.stderr.write(f"\r{self._line(now)}{end}")
            sys.stderr.flush()
        elif finished or now - self._last >= self.interval:
            log.info("%s", self._line(now))
            self._last = now

    def _line(self, now: float) -> str:
        elapsed = max(now - self._start, 1e-9)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        pct = 100.0 * self.done / max(self.total, 1)
        width = 30
        bar = "#" * int(width * self.done / max(self.total, 1))
        eta = f"ETA {left:.0f}s" if self.done < self.total else f"in {elapsed:.1f}s"
        prefix = f"[{bar:<{width}}] " if self._tty else ""
        return f"{prefix}{self.what}: {self.done}/{self.total} ({pct:.0f}%), {rate:.2f}/s, {eta}"
