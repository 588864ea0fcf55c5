"""Check what the README's first command left in a fresh clone (argument: the clone), then use the `gnnbench`
command it installed from another directory. Run with the fresh environment's Python; exits non-zero on a miss."""

import base64
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

clone = Path(sys.argv[1])
problems = []

suite = yaml.safe_load((clone / "config" / "config.yaml").read_text())
for dataset, benchmark in suite["benchmarks"].items():
    table = clone / "results" / "tables" / f"{dataset}.md"
    text = table.read_text() if table.is_file() else ""
    missing = [label for label in benchmark["models"] if f"| {label} " not in text]
    if not text or missing or not re.search(r"\d+\.\d", text):
        problems.append(f"{table}: missing, or without scores for {missing or 'any model'}")

report = clone / "report.html"
html = report.read_text() if report.is_file() else ""
match = re.search(r'<script id="results">\s*var results = (.*?);\s*</script>', html, flags=re.S)
embedded = json.loads(match.group(1)) if match else {}
figures = sorted((clone / "results" / "plots").glob("*.svg"))
if not figures:
    problems.append("results/plots holds no figure")
for figure in figures:
    entry = embedded.get(f"results/plots/{figure.name}")
    data = base64.b64decode(entry["data_uri"].split("base64,", 1)[1]) if entry else b""
    if data != figure.read_bytes():
        problems.append(f"{report}: figure results/plots/{figure.name} is not embedded")

elsewhere = Path(tempfile.mkdtemp())  # the installed command, used away from the checkout


def gnnbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "gnnbench"), *args], cwd=elsewhere, capture_output=True,
                          text=True)


usage = gnnbench("--help")
commands = re.search(r"\{([\w,-]+)\}", usage.stdout)
if usage.returncode or not commands:
    problems.append(f"gnnbench --help failed: {usage.stderr.strip()[-300:]}")
for command in commands.group(1).split(",") if commands else []:
    shown = gnnbench(command, "--help")
    if shown.returncode or "usage: gnnbench" not in shown.stdout:
        problems.append(f"gnnbench {command} --help failed: {shown.stderr.strip()[-300:]}")
presets = gnnbench("presets")
if presets.returncode or len(presets.stdout.splitlines()) < 100:
    problems.append(f"gnnbench presets failed: {presets.stderr.strip()[-300:]}")
params = gnnbench("params", "--preset", "CSL_graph_classification_GCN_CSL_100k")
if params.stdout.strip() != "100927":  # the benchmark's published count for this config
    problems.append(f"gnnbench params printed {params.stdout.strip()!r}, not 100927: {params.stderr.strip()[-300:]}")

for problem in problems:
    print(f"first command: {problem}", file=sys.stderr)
print(f"first command: {len(suite['benchmarks'])} tables, {len(figures)} figures in report.html, "
      f"{len(commands.group(1).split(',')) if commands else 0} subcommands: "
      f"{'FAILED' if problems else 'ok'}")
sys.exit(1 if problems else 0)
