"""Run the ``gnnbench`` command and stop it at a chosen point, from inside (tests only; no clock involved).

    python tests/stop_at.py [--signal KILL|TERM] [--after-save N | --inside-save N | --inside-epoch N]
                            [--checkpoint-seconds S] -- ARGS...

runs ``gnnbench ARGS...`` in this process and sends itself the signal

- ``--after-save N``: right after the N-th checkpoint is in place (``save_checkpoint`` returned);
- ``--inside-save N``: while the N-th checkpoint is being written (its temporary file holds half the bytes; use
  KILL: a TERM would wait for the write);
- ``--inside-epoch N``: after the first batch of the N-th benchmarking-gnns training epoch.

``--checkpoint-seconds S`` makes the pitfalls and fair-comparison jobs checkpoint after every epoch (S = 0), as they
do at most every 30 s. Every completed checkpoint save is reported on stderr as ``stop_at: checkpoint N saved``, so
a test can count the work a process did.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="stop_at.py")
    parser.add_argument("--signal", default="KILL", choices=["KILL", "TERM"])
    parser.add_argument("--after-save", type=int)
    parser.add_argument("--inside-save", type=int)
    parser.add_argument("--inside-epoch", type=int)
    parser.add_argument("--checkpoint-seconds", type=float)
    opts = parser.parse_args(argv[:split])
    signum = getattr(signal, f"SIG{opts.signal}")

    import torch

    from gnnbench.protocols.fair_comparison import train as fair_comparison_train
    from gnnbench.protocols.pitfalls import train as pitfalls_train
    from gnnbench.training import checkpoint
    from gnnbench.training import last_epoch as run

    if opts.checkpoint_seconds is not None:
        pitfalls_train.CHECKPOINT_SECONDS = fair_comparison_train.CHECKPOINT_SECONDS = opts.checkpoint_seconds

    real_save, real_torch_save, saves = checkpoint.save_checkpoint, torch.save, [0]

    def half_written(obj, f, *args, **kwargs):  # the write is cut short: half the file is on disk
        real_torch_save(obj, f, *args, **kwargs)
        size = Path(f).stat().st_size
        os.truncate(f, size // 2)
        os.kill(os.getpid(), signum)

    def save(path, state):
        saves[0] += 1
        if saves[0] == opts.inside_save:
            torch.save = half_written
        real_save(path, state)
        print(f"stop_at: checkpoint {saves[0]} saved", file=sys.stderr, flush=True)
        if saves[0] == opts.after_save:
            os.kill(os.getpid(), signum)

    checkpoint.save_checkpoint = save  # the protocols that import it when they run
    for name, module in list(sys.modules.items()):  # the modules that imported it already (training.run)
        if name.startswith("gnnbench") and getattr(module, "save_checkpoint", None) is real_save:
            module.save_checkpoint = save

    real_epoch, epochs = run.train_epoch, [0]

    def epoch(model, loader, *rest, **kwargs):
        epochs[0] += 1
        if epochs[0] == opts.inside_epoch:
            real_epoch(model, [next(iter(loader))], *rest, **kwargs)  # the first batch only, then the signal
            os.kill(os.getpid(), signum)
        return real_epoch(model, loader, *rest, **kwargs)

    run.train_epoch = epoch

    from gnnbench.cli import main as gnnbench

    return gnnbench(argv[split + 1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
