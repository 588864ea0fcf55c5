"""What a training job pays before its first epoch: a fresh Python process that imports torch and builds and steps
an optimiser, with gnnbench's run optimiser (:mod:`gnnbench.training.eager_optim`, through ``make_optimizer``) and
with ``torch.optim.Adam`` itself, which imports torch's compiler (``torch._dynamo``) on first use.

    python benchmarks/job_startup.py [--repeats 5]

Each variant runs ``--repeats`` times, alternating, in fresh processes; the script prints the median wall time of
each, their difference and whether ``torch._dynamo`` was imported.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

BODY = """
import sys, torch
model = torch.nn.Linear(8, 4)
{make}
model(torch.randn(16, 8)).sum().backward()
optimizer.step()
optimizer.zero_grad()
print("torch._dynamo" in sys.modules)
"""
VARIANTS = {
    "gnnbench make_optimizer": "from gnnbench.training.engine import make_optimizer\n"
                               "optimizer = make_optimizer(model, 1e-3, 0.0)",
    "torch.optim.Adam": "optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)",
}


def main() -> None:
    """Run each variant ``--repeats`` times in fresh processes, alternating, and print the median, minimum and maximum
    wall time of each and whether it imported ``torch._dynamo``."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    dynamo: dict[str, str] = {}
    for _ in range(args.repeats):
        for name, make in VARIANTS.items():
            start = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", BODY.format(make=make)], capture_output=True, text=True,
                                 check=True)
            times[name].append(time.perf_counter() - start)
            dynamo[name] = out.stdout.strip()
    for name, values in times.items():
        print(f"{name:26s} median {statistics.median(values):.2f} s  (min {min(values):.2f}, max {max(values):.2f}); "
              f"torch._dynamo imported: {dynamo[name]}")
    a, b = (statistics.median(v) for v in times.values())
    print(f"difference per job process: {b - a:.2f} s")


if __name__ == "__main__":
    main()
