"""Before/after check of the published-data results: Pitfalls on real CORA and CiteSeer (10 splits x 2
initialisations) and fair-comparison on real ENZYMES (two outer folds of the official splits), run through
Snakemake from a given checkout against a 127.0.0.1 mirror of the real files in ``../shared/data/real``.

    python benchmarks/real_data_check.py --repo /path/to/checkout --work /tmp/rdc-before

Prints each table's scores; run it on two checkouts to show that a refactor keeps the numbers (the runs are
seeded, so equal code gives equal tables on the same machine).
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import subprocess
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import yaml

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def mirror(root: Path) -> None:
    """The real files under the paths the suite below names."""
    for name in ("cora", "citeseer"):
        shutil.copytree(REAL / "planetoid" / name / "raw", root / name)
    (root / "tu").mkdir()
    shutil.copy(REAL / "tu" / "ENZYMES.zip", root / "tu" / "ENZYMES.zip")
    (root / "s").mkdir()
    shutil.copy(REAL / "splits" / "errica" / "CHEMICAL" / "ENZYMES_splits.json", root / "s")


def suite(url: str) -> dict:
    """The check's suite: pitfalls on CORA and CiteSeer (10 splits × 2 initialisations), fair-comparison on ENZYMES (two
    outer folds), downloading from the local mirror at ``url``."""
    splits = {"scheme": "random_per_class", "splits": 10, "seed": 2018}
    pitfalls_models = {"GCN": "pitfalls_GCN", "MLP": "pitfalls_MLP", "LogReg": "pitfalls_LogReg",
                       "LabelProp": "pitfalls_LabelProp"}
    datasets = {name: {"generator": "planetoid", "params": {"name": source, "mirror": f"{url}/{source}"},
                       "split": splits} for name, source in (("CORA", "cora"), ("CiteSeer", "citeseer"))}
    datasets["ENZYMES"] = {"generator": "tu", "params": {"name": "ENZYMES", "mirror": f"{url}/tu"},
                           "split": {"scheme": "published", "mirror": f"{url}/s"}}
    benchmarks = {name: {"protocol": "pitfalls", "inits": 2, "splits_per_job": 10, "models": pitfalls_models}
                  for name in ("CORA", "CiteSeer")}
    benchmarks["ENZYMES"] = {
        "protocol": "fair-comparison", "folds": [0, 1], "final_runs": 1, "set": {"epochs": 60, "patience": 30},
        "models": {
            "Baseline": {"preset": "fair_Baseline_ENZYMES",
                         "grid": {"learning_rate": [0.001], "hidden_units": [32], "l2": [0.0001]}},
            "GIN": {"preset": "fair_GIN", "grid": {"batch_size": [32], "hidden_units": [[32, 32]],
                                                   "train_eps": [False], "aggregation": ["sum"], "dropout": [0.0]}}}}
    return {"datasets": datasets, "benchmarks": benchmarks}


def main() -> None:
    """Serve the real files on 127.0.0.1, run the suite through Snakemake from ``--repo`` in ``--work`` and print every
    table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args()
    repo, work = args.repo.resolve(), args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    (work / "mirror").mkdir(parents=True)
    mirror(work / "mirror")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(work / "mirror")))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    (work / "suite.yaml").write_text(yaml.safe_dump(suite(url), sort_keys=False))
    env = {**os.environ, "PYTHONPATH": str(repo)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(repo / "workflow/Snakefile"), "--directory",
                           str(work), "--configfile", str(work / "suite.yaml"), "--cores", "2", "-q"], env=env,
                          capture_output=True, text=True)
    httpd.shutdown()
    if proc.returncode != 0:
        sys.exit(proc.stderr[-3000:])
    print(f"# {repo} ({time.perf_counter() - start:.0f} s)")
    for name in ("CORA", "CiteSeer", "ENZYMES"):
        table = pd.read_csv(work / "results" / "tables" / f"{name}.csv")
        columns = [c for c in table.columns if c in ("model", "test_mean", "test_std", "val_mean", "runs", "folds")]
        print(f"\n## {name}\n{table[columns].to_string(index=False)}")


if __name__ == "__main__":
    main()
