"""Duplicates and train/test leakage on every dataset gnnbench can build offline (docs/leakage.md): the default suite's
datasets (config/config.yaml), the real Planetoid CORA / CiteSeer and TU ENZYMES / PROTEINS / PROTEINS_full /
IMDB-BINARY, the released CSL, and the heterophily files of Platonov et al. (chameleon, squirrel, their filtered
versions, tolokers), the real files served from ``../shared/data/real`` on 127.0.0.1.

    python benchmarks/leakage_survey.py [--work /tmp/leakage-survey] [--release DIR]

Prints one Markdown table: per dataset the duplicate groups (gnnbench.data.leakage), the share of each fold's test
part with a duplicate in training (min–max over folds; with the same label), and the seconds of the duplicate check.
``--release``: a folder with the release's ``chameleon_directed.npz`` / ``squirrel_directed.npz`` (yandex-research/
heterophilous-graphs, ``data/``): also counts the nodes :func:`gnnbench.data.leakage.released_filter` keeps.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from gnnbench.data import leakage
from gnnbench.data.meta import read_dataset
from gnnbench.papers import DWIVEDI2020, ERRICA2020
from gnnbench.pipeline import generate_dataset
from gnnbench.splits import make_splits
from gnnbench.suite import load_suite_file

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "data" / "real"
SPLITS = REAL / "splits"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def serve(folder: Path) -> tuple[str, ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}", httpd


def mirror(root: Path) -> None:
    """The real files under the paths the generators' ``mirror`` parameter names."""
    for name in ("cora", "citeseer"):
        shutil.copytree(REAL / "planetoid" / name / "raw", root / name)
    shutil.copytree(REAL / "tu", root / "tu")
    shutil.copytree(REAL / "csl", root / "csl")


def row(name: str, level: str, items: int, summary: dict, folds: list[dict], seconds: float) -> dict:
    shares = [f["test_leaked"] / f["test"] for f in folds if f["test"]]
    same = [f["test_leaked_same_label"] / f["test"] for f in folds if f["test"]]
    return {"dataset": name, "level": level, "items": items, "groups": summary["groups"],
            "removable": summary["removable"], "conflicts": summary.get("label_conflicts", "-"),
            "folds": len(folds), "test leaked %": _span(shares), "same label %": _span(same),
            "seconds": f"{seconds:.2f}"}


def _span(values: list[float]) -> str:
    if not values:
        return "-"
    low, high = 100 * min(values), 100 * max(values)
    return f"{low:.1f}" if abs(high - low) < 0.05 else f"{low:.1f}–{high:.1f}"


def stored(name: str, folder: Path, scheme: str, params: dict, published=None) -> dict:
    """Check a dataset written by gnnbench against its split."""
    meta, columns = read_dataset(folder)
    start = time.perf_counter()
    found = leakage.dataset_duplicates(columns, meta)
    seconds = time.perf_counter() - start
    labels = leakage.dataset_labels(columns, meta)
    transductive = meta.transductive
    split_labels = columns.node.get("y") if transductive else columns.graph.get("y")
    given = columns.node.get("split") if transductive else None
    splits = make_splits(meta, split_labels, scheme, params, given, published)
    items = int(columns.num_nodes[0]) if transductive else columns.num_graphs
    folds = leakage.split_leakage(found, labels, splits.folds)
    return row(name, found.level, items, found.summary(labels), folds, seconds)


def heterophily(name: str) -> dict:
    """Check one file of Platonov et al. (undirected edges stored once: doubled) on its ten fixed splits."""
    data = np.load(REAL / "heterophily" / f"{name}.npz")
    edges, labels = data["edges"], data["node_labels"]
    start = time.perf_counter()
    src, dst = np.concatenate([edges[:, 0], edges[:, 1]]), np.concatenate([edges[:, 1], edges[:, 0]])
    found = leakage.node_duplicates(len(labels), src, dst, leakage.feature_ids({"x": data["node_features"]}))
    seconds = time.perf_counter() - start
    folds = [{part: np.flatnonzero(data[f"{part}_masks"][i]) for part in ("train", "val", "test")}
             for i in range(len(data["train_masks"]))]
    return row(name, "node", len(labels), found.summary(labels), leakage.split_leakage(found, labels, folds), seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=None, help="folder for the datasets (default: a temporary one)")
    parser.add_argument("--release", type=Path, default=None, help="folder with the release's *_directed.npz")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="leakage-survey-"))
    rows = []
    suite = load_suite_file(ROOT / "config" / "config.yaml")
    for name, spec in suite.datasets.items():
        generate_dataset(spec.generator, name, spec.params, spec.seed, work / name)
        split = dict(spec.split)
        rows.append(stored(name, work / name, split.pop("scheme"), split))
    if REAL.is_dir():
        (work / "mirror").mkdir(parents=True, exist_ok=True)
        mirror(work / "mirror")
        url, httpd = serve(work / "mirror")
        pitfalls = {"splits": 100, "train_per_class": 20, "val_per_class": 30, "seed": 2018}
        for name, source in (("CORA", "cora"), ("CiteSeer", "citeseer")):
            generate_dataset("planetoid", name, {"name": source, "mirror": f"{url}/{source}"}, 0, work / name)
            rows.append(stored(f"{name} (100 random splits)", work / name, "random_per_class", pitfalls))
        for name, group in (("ENZYMES", "CHEMICAL"), ("PROTEINS_full", "CHEMICAL"),
                            ("IMDB-BINARY", "COLLABORATIVE_1"), ("PROTEINS", None)):
            features = {"features": "degree"} if name == "IMDB-BINARY" else {}  # Errica et al.'s degree variant
            generate_dataset("tu", name, {"name": name, "mirror": f"{url}/tu", **features}, 0, work / name)
            if group is None:
                rows.append(stored(f"{name} (10-fold)", work / name, "stratified_kfold",
                                   {"folds": 10, "val_fraction": 0.1, "seed": 0}))
            else:
                rows.append(stored(f"{name} ({ERRICA2020} folds)", work / name, "published",
                                   {"source": ERRICA2020}, [SPLITS / "errica" / group / f"{name}_splits.json"]))
        generate_dataset("released", "CSL-released", {"name": "CSL", "mirror": f"{url}/csl"}, 0, work / "CSL-released")
        rows.append(stored(f"CSL-released ({DWIVEDI2020} folds)", work / "CSL-released", "published",
                           {"source": DWIVEDI2020},
                           [SPLITS / "benchmarking-gnns" / f"CSL_{part}.index" for part in ("train", "val", "test")]))
        httpd.shutdown()
        for name in ("chameleon", "squirrel", "chameleon_filtered", "squirrel_filtered", "tolokers"):
            rows.append(heterophily(name))
    columns = list(rows[0])
    print("| " + " | ".join(columns) + " |")
    print("|" + "|".join("---" for _ in columns) + "|")
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in columns) + " |")
    if args.release is not None:
        for name in ("chameleon", "squirrel"):
            data = np.load(args.release / f"{name}_directed.npz")
            dropped = leakage.released_filter(len(data["node_labels"]), data["edges"][:, 0], data["edges"][:, 1],
                                      data["node_labels"])
            print(f"released filter, {name}: {len(dropped):,} -> {int((~dropped).sum()):,} nodes")


if __name__ == "__main__":
    main()
