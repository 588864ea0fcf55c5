"""What the paper suite (config/suites/benchmarking-gnns.yaml) costs, from the paper's own timing columns.

    python benchmarks/paper_suite_cost.py [config/suites/benchmarking-gnns.yaml]

Every model of the suite is matched to the row of the paper's table for its dataset with the same parameter count
(counted by building the model on the dataset's description; where a count appears twice, the row of the model's
name), else the row of its printed name (model, -E, -PE) and depth L. Its GPU hours = the row's "Total" time × the
model's seeds. The paper's Total is one run; for the TU sets, CSL and WikiCS it covers all folds / splits of one
seed (epochs × s/epoch × folds ≈ Total), and the TU table gives it per seed. Models without a timed row (CYCLES
and GraphTheoryProp print no times, rows that diverged
or ran out of memory, configs the tables do not show) are listed and bounded by the suite's time cap instead
(max_time per run: 12 h or 24 h, per fold / split of TU and CSL a tenth, of WikiCS a twentieth).
Paper hardware: one Nvidia 1080Ti per run (PATTERN / CLUSTER: 2080Ti), 4 runs per server.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import yaml

from gnnbench.config.suite import load_suite
from gnnbench.data.catalog import describe_dataset
from gnnbench.models import build_model, count_parameters

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "gnnbench" / "reporting" / "published" / "dwivedi2020.yaml"
TABLE = {"SBM_PATTERN": "PATTERN", "SBM_CLUSTER": "CLUSTER"}


def table_rows(tables: dict, dataset: str) -> list[dict]:
    if dataset in ("ENZYMES", "DD", "PROTEINS_full"):
        key = {"PROTEINS_full": "PROTEINS"}.get(dataset, dataset)
        rows = tables["TU"]["datasets"]
        rows = rows.get(key) or rows.get(dataset) or []
        # per seed: the mean of the two printed seeds' totals
        out = []
        for row in rows:
            totals = [row[s]["total_h"] for s in ("seed1", "seed2") if isinstance(row.get(s), dict)
                      and row[s].get("total_h") is not None]
            out.append({**row, "total_h": sum(totals) / len(totals) if totals else None})
        return out
    if dataset.startswith("CYCLES"):
        return []
    return tables.get(TABLE.get(dataset, dataset), {}).get("rows", [])


def main(path: str) -> int:
    tables = yaml.safe_load(PUBLISHED.read_text())["tables"]
    suite = load_suite(yaml.safe_load(Path(path).read_text()))
    hours, runs, bound = defaultdict(float), defaultdict(int), defaultdict(float)
    unmatched, by_name = [], 0
    for name, benchmark in suite.benchmarks.items():
        catalog = "CYCLES" if name.startswith("CYCLES") else name
        meta = describe_dataset(catalog)
        folds = len(benchmark.folds)
        rows = table_rows(tables, name)
        for label, spec in benchmark.models.items():
            seeds = len(benchmark.model_seeds.get(label, benchmark.seeds))
            runs[name] += seeds * folds
            params = count_parameters(build_model(spec.config, meta))
            matches = [r for r in rows if r.get("params") == params and r.get("total_h") is not None]
            if len(matches) > 1:  # same count (e.g. "vanilla GCN" and "GCN"): prefer the name the label starts with
                model = spec.config["model"]
                matches = [r for r in matches if r["model"] == model] or matches[:1]
            if not matches:  # parameter counts differ between versions (GAT's bias): the row of its name and depth
                cfg = spec.config
                printed = cfg["model"] + ("-E" if cfg.get("edge_feat") else "") + ("-PE" if cfg.get("pos_enc") else "")
                matches = [r for r in rows if r.get("model") == printed and r.get("L") == cfg.get("L")
                           and r.get("total_h") is not None]
                by_name += bool(matches)
            if matches:
                hours[name] += matches[0]["total_h"] * seeds
            else:
                cap = spec.config["max_time"] / (20 if name == "WikiCS" else 10 if folds > 1 else 1)
                bound[name] += cap * seeds * folds
                unmatched.append(f"{name}/{label} ({params:,} parameters)")
    print(f"{'dataset':16} {'runs':>6} {'GPU-h (paper rows)':>19} {'≤ GPU-h (cap, unmatched)':>25}")
    for name in suite.benchmarks:
        print(f"{name:16} {runs[name]:6d} {hours[name]:19.1f} {bound[name]:25.1f}")
    print(f"{'total':16} {sum(runs.values()):6d} {sum(hours.values()):19.1f} {sum(bound.values()):25.1f}")
    print(f"\n{by_name} models matched by name and depth (their parameter count differs from the printed one)")
    print(f"{len(unmatched)} models without a timed row in the paper: {', '.join(unmatched)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "config" / "suites" / "benchmarking-gnns.yaml")))
