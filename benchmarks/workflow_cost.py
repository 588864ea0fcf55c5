"""What the default workflow costs, job by job: CPU-seconds and wall time of every Python process it starts.

    python benchmarks/workflow_cost.py [--repo PATH] [--cores 2] [--keep DIR] [--json OUT.json]

Runs ``snakemake --cores N`` on the default suite of the checkout ``--repo`` (default: this one) in a fresh folder,
with a ``sitecustomize`` module on ``PYTHONPATH`` that makes every Python process (Snakemake itself and each job's
script) append its own CPU time (``resource.getrusage``: user + system), its wall time and its command line to a
file when it exits. The gnnbench package imported is the one of ``--repo`` (``PYTHONPATH``), so two checkouts (e.g.
a worktree of an earlier commit) can be compared on the same machine. Nothing in gnnbench is changed for this.

Prints per rule (the job script's name) the jobs, their CPU-seconds in all, the mean CPU-seconds of a job and how many
of its processes imported torch, then the workflow's wall time and the total job CPU-seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

SITECUSTOMIZE = r'''
import atexit, json, os, resource, sys, time
_start = time.time()
def _report():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    line = {"argv": sys.argv, "cpu": usage.ru_utime + usage.ru_stime, "wall": time.time() - _start,
            "torch": "torch" in sys.modules, "pid": os.getpid()}
    with open(os.environ["GNNBENCH_COST_LOG"], "a") as f:
        f.write(json.dumps(line) + "\n")
atexit.register(_report)
'''


def rule_of(argv: list[str]) -> str:
    """The job's script name (Snakemake runs a copy named ``tmp<random>.<script>.py``), or what the process was."""
    for arg in argv:
        match = re.search(r"tmp[^/.]*\.(\w+)\.py$", arg)
        if match:
            return match.group(1)
    return "snakemake (main process)" if any("snakemake" in a for a in argv[:2]) else " ".join(argv[:2])


def main() -> None:
    """Run the default workflow once and print its cost per rule."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]), help="gnnbench checkout")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--keep", help="run in this folder and keep it (default: a temporary folder, removed)")
    parser.add_argument("--json", help="also write the per-process lines here")
    args = parser.parse_args()
    repo = Path(args.repo).resolve()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gnnbench-cost-"))
    work.mkdir(parents=True, exist_ok=True)
    hook = work / "_cost_hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    log = work / "cost.jsonl"
    log.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{hook}{os.pathsep}{repo}", "GNNBENCH_COST_LOG": str(log)}
    start = time.time()
    subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(repo / "workflow" / "Snakefile"),
                    "--directory", str(work), "--cores", str(args.cores), "--quiet"], env=env, check=True)
    wall = time.time() - start
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    per_rule: dict[str, list[dict]] = defaultdict(list)
    for line in lines:
        per_rule[rule_of(line["argv"])].append(line)
    print(f"{'rule (script)':<28} {'jobs':>5} {'CPU s':>8} {'CPU s/job':>10} {'with torch':>10}")
    jobs_cpu = 0.0
    for rule, procs in sorted(per_rule.items(), key=lambda kv: -sum(p["cpu"] for p in kv[1])):
        cpu = sum(p["cpu"] for p in procs)
        jobs_cpu += cpu if not rule.startswith("snakemake") else 0.0
        print(f"{rule:<28} {len(procs):>5} {cpu:>8.1f} {cpu / len(procs):>10.2f} "
              f"{sum(p['torch'] for p in procs):>10}")
    total = sum(p["cpu"] for p in lines)
    print(f"\nworkflow wall time {wall:.0f} s with --cores {args.cores}; job CPU-seconds {jobs_cpu:.0f} "
          f"({sum(len(v) for k, v in per_rule.items() if not k.startswith('snakemake'))} job processes); "
          f"all processes {total:.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps(lines, indent=1))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
