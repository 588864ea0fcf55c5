"""What a paper suite costs, from the paper's own timing columns — and what one more model adds to it.

    python benchmarks/paper_suite_cost.py [SUITE]        # default: config/suites/benchmarking-gnns.yaml
    python benchmarks/paper_suite_cost.py my_suite.yaml  # a suite that extends a paper suite: its added models too
    python benchmarks/paper_suite_cost.py pitfalls       # a paper suite by name: its trainings per model

Every model of a benchmarking-gnns suite is matched to the row of the paper's table for its dataset with the same
parameter count (counted by building the model on the dataset's description; where a count appears twice, the row of
the model's name), else the row of its printed name (model, -E, -PE) and depth L. Its GPU hours = the row's "Total"
time × the model's seeds. The paper's Total is one run; for the TU sets, CSL and WikiCS it covers all folds / splits
of one seed (epochs × s/epoch × folds ≈ Total), and the TU table gives it per seed. Models without a timed row (CYCLES
and GraphTheoryProp print no times, rows that diverged or ran out of memory, configs the tables do not show) are
listed and bounded by the suite's time cap instead (max_time per run: 12 h or 24 h, per fold / split of TU and CSL a
tenth, of WikiCS a twentieth).
Paper hardware: one Nvidia 1080Ti per run (PATTERN / CLUSTER: 2080Ti), 4 runs per server.

A model from outside the package (variant plugin: no paper row) is estimated at the median hours per training of the
timed baselines of its dataset ("est."). "+1 model" is what one more model costs on each dataset: its trainings
(benchmarking-gnns: the seeds most baselines use × folds; pitfalls: splits × initialisations; fair-comparison: outer
folds × (grid + final runs), for a grid the size of the largest baseline's) and, for benchmarking-gnns, the median
baseline's GPU hours per training times those. Pitfalls and fair-comparison papers print no per-run times: their
trainings are counted only (docs/performance.md gives measured rates).

Fair-comparison, measured rates (docs/protocols/fair-comparison.md#reproducing-the-papers-tables): ``--epoch-ms
LABEL=MS`` (a model's measured milliseconds per epoch of one run, ``benchmarks/fair_comparison_speed.py``) prints
each benchmark's worker-hours for runs of 500 epochs (the patience) up to each model's ``epochs`` cap; ``--stacked
LABEL=FACTOR`` divides that model's cost by the speed-up its wide stacks measured
(``benchmarks/fair_comparison_grid_speed.py``: stacked runs/hour over one at a time), for the "after" estimate. One
rate per model serves every benchmark: rates measured on ENZYMES price every dataset at ENZYMES' size.

    python benchmarks/paper_suite_cost.py fair-comparison --epoch-ms GIN=86 Baseline=24 DGCNN=85 DiffPool=475 \
        ECC=590 GraphSAGE=71 --stacked GIN=1.56 Baseline=1.86

``--shared LABEL=FACTOR`` (stacks with shared trajectories: configurations differing only in their stopping settings
train once) divides the cost of that model's grid runs (not its final runs) further by FACTOR: configurations per
CPU second with shared trajectories over without them. Its upper bound, the grid's configurations per trajectory
(every observer stopping at the same epoch: the number of stopping-rule values, 2 in the paper's grids), is printed
per model; a realistic FACTOR is measured on short uncapped runs (``fair_comparison_grid_speed.py
--short-patience``) or derived from real stop epochs (Σ stop epochs / Σ longest stop per trajectory).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import yaml

from gnnbench.data.catalog import describe_dataset
from gnnbench.models.build import build_model, count_parameters
from gnnbench.suite import load_suite_file

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "gnnbench" / "reporting" / "published" / "dwivedi2020.yaml"
TABLE = {"SBM_PATTERN": "PATTERN", "SBM_CLUSTER": "CLUSTER"}


def table_rows(tables: dict, dataset: str) -> list[dict]:
    """The timed rows of the benchmarking-gnns table of ``dataset`` (TU sets: the mean of the two seeds' totals);
    none for CYCLES."""
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


def _pairs(values: list[str] | None, what: str) -> dict[str, float]:
    out = {}
    for value in values or []:
        label, _, number = value.partition("=")
        try:
            out[label] = float(number)
        except ValueError:
            raise SystemExit(f"{what}: expected LABEL=NUMBER, got {value!r}") from None
    return out


def fair_comparison_hours(suite, epoch_ms: dict[str, float], stacked: dict[str, float],
                          shared: dict[str, float] | None = None) -> None:
    """Worker-hours of a fair-comparison suite's trainings from measured ms per epoch (module docstring)."""
    from gnnbench.protocols.fair_comparison.grid import trajectories

    shared = shared or {}
    bounds = {}
    for benchmark in suite.benchmarks.values():
        for label, grid in getattr(benchmark, "grids", {}).items():
            bounds.setdefault(label, len(grid) / len(trajectories(grid)))
    if shared:
        print("\nconfigurations per trajectory (the shared factor's bound): "
              + ", ".join(f"{label} {bound:.2f}" for label, bound in bounds.items()))
    print(f"\n{'dataset':24} {'worker-h (500 ep.)':>18} {'(cap)':>9} {'stacked (500)':>14} {'(cap)':>9}"
          + (f" {'+shared (500)':>14} {'(cap)':>9}" if shared else ""))
    totals = [0.0] * 6
    for name, benchmark in suite.benchmarks.items():
        if benchmark.protocol != "fair-comparison":
            continue
        row = [0.0] * 6
        for label, grid in benchmark.grids.items():
            if label not in epoch_ms:
                continue
            grid_runs, final_runs = len(benchmark.folds) * len(grid), len(benchmark.folds) * benchmark.final_runs
            cap = max(c.get("epochs", 500) for c in grid)
            for i, epochs in enumerate((min(500, cap), cap)):
                hours = (grid_runs + final_runs) * epoch_ms[label] * epochs / 3.6e6
                row[i] += hours
                row[2 + i] += hours / stacked.get(label, 1.0)
                per_run = epoch_ms[label] * epochs / 3.6e6 / stacked.get(label, 1.0)
                row[4 + i] += per_run * (grid_runs / shared.get(label, 1.0) + final_runs)
        totals = [t + r for t, r in zip(totals, row, strict=True)]
        print(f"{name:24} {row[0]:18.1f} {row[1]:9.1f} {row[2]:14.1f} {row[3]:9.1f}"
              + (f" {row[4]:14.1f} {row[5]:9.1f}" if shared else ""))
    print(f"{'total':24} {totals[0]:18.1f} {totals[1]:9.1f} {totals[2]:14.1f} {totals[3]:9.1f}"
          + (f" {totals[4]:14.1f} {totals[5]:9.1f}" if shared else ""))
    missing = sorted({label for b in suite.benchmarks.values() for label in getattr(b, "grids", {})} - set(epoch_ms))
    if missing:
        print(f"no --epoch-ms for {', '.join(missing)}: not counted")


def other_protocol(suite, epoch_ms: dict[str, float] | None = None, stacked: dict[str, float] | None = None,
                   shared: dict[str, float] | None = None) -> int:
    """Trainings per dataset of a pitfalls or fair-comparison suite, and of one more model."""
    print(f"{'dataset':24} {'protocol':16} {'trainings':>9} {'+1 model':>9}")
    total = 0
    for name, benchmark in suite.benchmarks.items():
        if benchmark.protocol == "pitfalls":
            per_model = {label: benchmark.num_splits * benchmark.model_inits(label) for label in benchmark.models}
            one_more = benchmark.num_splits * max(benchmark.model_inits(label) for label in benchmark.models)
        else:
            per_model = {label: len(benchmark.folds) * (len(grid) + benchmark.final_runs)
                         for label, grid in benchmark.grids.items()}
            one_more = len(benchmark.folds) * (max(map(len, benchmark.grids.values())) + benchmark.final_runs)
        total += sum(per_model.values())
        print(f"{name:24} {benchmark.protocol:16} {sum(per_model.values()):9d} {one_more:9d}")
    print(f"{'total':24} {'':16} {total:9d}")
    if epoch_ms:
        fair_comparison_hours(suite, epoch_ms, stacked or {}, shared)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Print the cost table of the suite named on the command line (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("suite", nargs="?", default=str(ROOT / "config" / "suites" / "benchmarking-gnns.yaml"),
                        help="a suite file (one that extends a paper suite too) or a paper suite's name")
    parser.add_argument("--epoch-ms", nargs="*", metavar="LABEL=MS",
                        help="fair-comparison: measured ms per epoch of a model's run (worker-hours estimate)")
    parser.add_argument("--stacked", nargs="*", metavar="LABEL=FACTOR",
                        help="fair-comparison: a model's measured speed-up when its grid points train as wide stacks")
    parser.add_argument("--shared", nargs="*", metavar="LABEL=FACTOR",
                        help="fair-comparison: a model's further speed-up of its grid runs from shared trajectories")
    args = parser.parse_args(argv)
    from gnnbench.packaged import paper_suite

    path = Path(args.suite) if Path(args.suite).is_file() else paper_suite(args.suite, "suite")
    suite = load_suite_file(path)
    if any(b.protocol != "benchmarking-gnns" for b in suite.benchmarks.values()):
        return other_protocol(suite, _pairs(args.epoch_ms, "--epoch-ms"), _pairs(args.stacked, "--stacked"),
                              _pairs(args.shared, "--shared"))
    tables = yaml.safe_load(PUBLISHED.read_text())["tables"]
    hours, runs, bound = defaultdict(float), defaultdict(int), defaultdict(float)
    unmatched, by_name = [], 0
    estimated, plugin_runs, per_run, one_more = defaultdict(float), defaultdict(int), defaultdict(list), {}
    for name, benchmark in suite.benchmarks.items():
        catalog = "CYCLES" if name.startswith("CYCLES") else name
        meta = describe_dataset(catalog)
        folds = len(benchmark.folds)
        rows = table_rows(tables, name)
        seed_lists = [benchmark.model_seeds.get(label, benchmark.seeds) for label in benchmark.models]
        one_more[name] = len(max(seed_lists, key=seed_lists.count)) * folds
        plugins = [label for label, entry in benchmark.models.items() if entry.config.get("variant") == "plugin"]
        for label, entry in benchmark.models.items():
            seeds = len(benchmark.model_seeds.get(label, benchmark.seeds))
            if label in plugins:
                plugin_runs[name] += seeds * folds
                continue
            runs[name] += seeds * folds
            params = count_parameters(build_model(entry.config, meta))
            matches = [r for r in rows if r.get("params") == params and r.get("total_h") is not None]
            if len(matches) > 1:  # same count (e.g. "vanilla GCN" and "GCN"): prefer the name the label starts with
                model = entry.config["model"]
                matches = [r for r in matches if r["model"] == model] or matches[:1]
            if not matches:  # parameter counts differ between versions (GAT's bias): the row of its name and depth
                cfg = entry.config
                printed = cfg["model"] + ("-E" if cfg.get("edge_feat") else "") + ("-PE" if cfg.get("pos_enc") else "")
                matches = [r for r in rows if r.get("model") == printed and r.get("L") == cfg.get("L")
                           and r.get("total_h") is not None]
                by_name += bool(matches)
            if matches:
                hours[name] += matches[0]["total_h"] * seeds
                per_run[name].append(matches[0]["total_h"])  # one seed: all folds of it
            else:
                cap = entry.config["max_time"] / (20 if name == "WikiCS" else 10 if folds > 1 else 1)
                bound[name] += cap * seeds * folds
                unmatched.append(f"{name}/{label} ({params:,} parameters)")
    # hours per training of the dataset's median timed baseline (a TU / CSL / WikiCS row covers one seed's folds)
    median = {name: statistics.median(per_run[name]) / max(len(b.folds), 1) if per_run[name] else None
              for name, b in suite.benchmarks.items()}
    for name in suite.benchmarks:
        if plugin_runs[name] and median[name] is not None:
            estimated[name] = median[name] * plugin_runs[name]
    added = f" {'added runs':>10} {'est. GPU-h':>10}" if any(plugin_runs.values()) else ""
    print(f"{'dataset':16} {'runs':>6} {'GPU-h (paper rows)':>19} {'≤ GPU-h (cap, unmatched)':>25}{added} "
          f"{'+1 model: runs':>14} {'GPU-h':>7}")
    for name in suite.benchmarks:
        extra = f" {plugin_runs[name]:10d} {estimated[name]:10.1f}" if added else ""
        cost = "–" if median[name] is None else f"{median[name] * one_more[name]:.1f}"
        print(f"{name:16} {runs[name]:6d} {hours[name]:19.1f} {bound[name]:25.1f}{extra} {one_more[name]:14d} "
              f"{cost:>7}")
    extra = f" {sum(plugin_runs.values()):10d} {sum(estimated.values()):10.1f}" if added else ""
    cost = sum(median[n] * one_more[n] for n in suite.benchmarks if median[n] is not None)
    print(f"{'total':16} {sum(runs.values()):6d} {sum(hours.values()):19.1f} {sum(bound.values()):25.1f}{extra} "
          f"{sum(one_more.values()):14d} {cost:7.1f}")
    print(f"\n{by_name} models matched by name and depth (their parameter count differs from the printed one)")
    print(f"{len(unmatched)} models without a timed row in the paper: {', '.join(unmatched)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
