"""Runs per hour of the fair-comparison protocol's model selection: Errica's GIN grid (preset fair_GIN, 128
configurations) on the real ENZYMES, outer fold 0 (486 inner-training, 54 hold-out graphs), one thread, three ways:

(a) one run per process — every configuration a fresh Python process running ``run_inner`` on it (imports, data
    loading, model building and training: what a job of one configuration pays); sampled every ``--stride-a``-th
    configuration;
(b) one run at a time in one process — ``train_holdout`` on every configuration after another (what
    ``run_inner`` does without ``stack``);
(c) stacked — the configurations of one shape (``gnnbench.protocols.fair_comparison.grid.stack_groups``: fair_GIN's 128
    points are 16 shapes × 8 members differing in dropout, stopping rule and train_eps) trained as one wide stack
    each (``gnnbench.training.best_epoch_stack.HoldoutStack``; ``run_inner(stack=True)`` without shared
    trajectories);
(d) stacked + shared trajectories — what ``run_inner(stack=True)`` does: the configurations of one shape that differ
    only in the stopping settings (``trajectories``: fair_GIN's accuracy / loss rule) are one trajectory, a member
    of the shape's stack observed by each configuration's rules; runs are counted as configurations evaluated.

Every run trains ``--epochs`` epochs (patience off), so the measurement is short; the rates are then normalised to
runs of ``--run-epochs`` epochs (default 500, the patience: a run that never improves after its first epochs stops
there; fair_GIN's cap is 1,000): runs/hour = 3600 / (seconds per epoch of one run × run epochs + its fixed cost),
where the fixed cost is (a) a process's start-up, data loading and building, (b) building the model, (c) building
the stack and its float64 check, shared by its members. Real runs stop at different epochs and a stack then shrinks;
the fixed-length runs here compare the three ways at equal work. Seconds are the process's CPU seconds (children's
for (a)), not wall time, so that a machine shared with other work does not skew the comparison (with one thread CPU
time equals wall time on an idle machine); (b) and (c) alternate shape by shape, and the wall time is printed too.
``--preset`` times another fair-comparison grid (e.g. fair_Baseline_ENZYMES, whose 72 points are 4 shapes).

The epoch cap and (d): with every run capped at ``--epochs`` both observers of a trajectory stop at the cap, so (d)
trains half the members of (c) for the same number of configurations — its best case. Real observers stop at
different epochs and a trajectory trains until the later one stops, so its saving over (c) is Σ(stop epochs of its
configurations) / max(stop epochs) ∈ [1, 2] per pair, not 2. ``--short-patience P --short-epochs E`` therefore also
runs (c) and (d) uncapped-short on the timed shapes: real early stopping with patience P up to E epochs, the same
seeds (the observer-free ones) in both, and reports (d)/(c) in CPU seconds per configuration evaluated, beside the
epoch-work ratio Σ stop / Σ max derived from the stop epochs. The realistic factor of (d) over (b) is then (c)/(b)
from the capped runs × (d)/(c) from the short ones.

    python benchmarks/fair_comparison_grid_speed.py --epochs 3            # ENZYMES from ../shared/data/real/tu
    python benchmarks/fair_comparison_grid_speed.py --zip ENZYMES.zip --epochs 5 --stride-a 16
    python benchmarks/fair_comparison_grid_speed.py --epochs 2 --stride 4 --skip a --short-patience 3 --short-epochs 30

Skips (exit 0, with the reason) when ENZYMES.zip is absent.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from gnnbench.protocols.fair_comparison import grid as fc_grid
from gnnbench.protocols.fair_comparison import plan as fc_plan
from gnnbench.protocols.fair_comparison import train as fc_train
from gnnbench.training.best_epoch_stack import fit_stack

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ZIP = ROOT.parent / "shared" / "data" / "real" / "tu" / "ENZYMES.zip"

CHILD = """
import sys, json
import torch
torch.set_num_threads(1)
from gnnbench.protocols.fair_comparison.train import run_inner
config = json.loads(sys.argv[1])
run_inner(dataset_dir=sys.argv[2], splits_path=sys.argv[3], fold=0, configs=[config], positions=[0], seed=0,
          out=sys.argv[4], device="cpu", threads=1)
"""


def prepare(zip_path: Path, work: Path, preset: str = "fair_GIN"):
    """Convert the ENZYMES zip and make its 10-fold split under ``work``; returns the expanded grid of ``preset``."""
    from gnnbench.pipeline import generate_dataset, make_split_file
    from gnnbench.suite import load_suite

    raw = work / "raw" / "tu"
    raw.mkdir(parents=True)
    shutil.copy(zip_path, raw / "ENZYMES.zip")
    generate_dataset("tu", "ENZYMES", {"name": "ENZYMES"}, 0, work / "ds", raw_dir=work / "raw")
    make_split_file(work / "ds", "stratified_kfold", {"folds": 10, "val_fraction": 0.1, "seed": 0},
                    work / "splits.json")
    suite = load_suite({"datasets": {"ENZYMES": {"generator": "tu", "params": {"name": "ENZYMES"}}},
                        "benchmarks": {"ENZYMES": {"protocol": "fair-comparison", "models": {"M": preset}}}})
    return suite.benchmarks["ENZYMES"].grids["M"]


def shared_stack(group, cfgs, grid, model_data, data, parts, cpu, HoldoutStack, build_model, variant,
                 overrides=None):
    """(d): one HoldoutStack of the shape's trajectories, member t observed by its configurations' stopping rules, the
    observer-free seeds (what run_inner(stack=True) builds); ``overrides``: stopping settings for every observer."""
    by_position = dict(zip(group, cfgs, strict=True))
    paths = [[group[j] for j in t] for t in fc_grid.trajectories([grid[i] for i in group])]
    members = [by_position[t[0]] for t in paths]
    built = [fc_grid.member_build(c) for c in members]
    builds = [lambda c=b: build_model(c, model_data, default_variant=variant) for b, _ in built]
    seeds = [fc_grid.run_seed(0, 0, fc_grid.seed_key(fc_grid.trajectory_config(grid[t[0]]))) for t in paths]
    observers = [[{**fc_grid.observer_settings(by_position[i]), **(overrides or {})} for i in t] for t in paths]
    stack = HoldoutStack(builds, seeds, members, data.store, parts, device=cpu, frozen=[set(f) for _, f in built],
                         observers=observers)
    return stack, [i for t in paths for i in t]


def short_runs(args, groups, grid, model_data, data, parts, cpu, HoldoutStack, build_model, variant, coerce_all,
               protocol_types) -> float:
    """(c) and (d) with real early stopping (``--short-patience`` up to ``--short-epochs``) on the timed shapes, the
    observer-free seeds in both; prints and returns (d)/(c) in configurations per CPU second."""
    stopping = {"patience": args.short_patience, "epochs": args.short_epochs}
    cpu_s = {"c": 0.0, "d": 0.0}
    stops, longest, configs = [], [], 0
    for group in groups:
        cfgs = [{**coerce_all(grid[i], "config", protocol_types(fc_plan.FairComparison, grid[i])), **stopping}
                for i in group]
        start = time.process_time()  # (c): every configuration its own member
        built = [fc_grid.member_build(c) for c in cfgs]
        builds = [lambda c=b: build_model(c, model_data, default_variant=variant) for b, _ in built]
        seeds = [fc_grid.run_seed(0, 0, fc_grid.seed_key(fc_grid.trajectory_config(grid[i]))) for i in group]
        fit_stack(HoldoutStack(builds, seeds, cfgs, data.store, parts, device=cpu, frozen=[set(f) for _, f in built]))
        cpu_s["c"] += time.process_time() - start
        start = time.process_time()  # (d): one member per trajectory
        stack, order = shared_stack(group, cfgs, grid, model_data, data, parts, cpu, HoldoutStack, build_model,
                                    variant, stopping)
        results = fit_stack(stack)
        cpu_s["d"] += time.process_time() - start
        configs += len(group)
        for block in range(len(stack.cfgs)):  # each trajectory's observers' stop epochs
            epochs = [r["epochs"] for r, b in zip(results, stack.block_of, strict=True) if b == block]
            stops += epochs
            longest.append(max(epochs))
    factor = cpu_s["c"] / cpu_s["d"]
    print(f"short runs (patience {args.short_patience}, cap {args.short_epochs}): {configs} configurations, "
          f"mean stop epoch {sum(stops) / len(stops):.1f} ({sum(e == args.short_epochs for e in stops)} at the cap), "
          f"{len(longest)} trajectories of mean {sum(longest) / len(longest):.1f} epochs; epoch work "
          f"Σ stop / Σ max = {sum(stops) / sum(longest):.2f}; CPU (c) {cpu_s['c']:.1f} s, (d) {cpu_s['d']:.1f} s "
          f"-> (d)/(c) {factor:.2f}x configurations per CPU second", flush=True)
    return factor


def main() -> int:
    """Time the modes (module docstring) and print their rates."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zip", type=Path, default=DEFAULT_ZIP, help="ENZYMES.zip (the TU file)")
    parser.add_argument("--preset", default="fair_GIN", help="the fair-comparison preset whose grid is timed")
    parser.add_argument("--epochs", type=int, default=3, help="epochs every run trains (the cap of this measurement)")
    parser.add_argument("--run-epochs", type=int, default=500, help="epochs of the runs the rates are given for")
    parser.add_argument("--stride-a", type=int, default=32, help="(a): time every stride-th configuration")
    parser.add_argument("--stride", type=int, default=1, help="(b), (c): every stride-th shape's configurations")
    parser.add_argument("--skip", default="", help="modes to leave out, e.g. 'a'")
    parser.add_argument("--short-patience", type=int, default=0,
                        help="also (c) and (d) with real early stopping at this patience (0: not run)")
    parser.add_argument("--short-epochs", type=int, default=30, help="the epoch cap of those short runs")
    args = parser.parse_args()
    if not args.zip.is_file():
        print(f"skipped: {args.zip} is absent (the real ENZYMES zip; give its path with --zip)")
        return 0
    torch.set_num_threads(1)
    from gnnbench.config.keys import coerce_all, protocol_types
    from gnnbench.models.build import ModelData, build_model
    from gnnbench.papers import ERRICA2020
    from gnnbench.training.best_epoch import train_holdout
    from gnnbench.training.best_epoch_stack import HoldoutStack

    work = Path(tempfile.mkdtemp())
    try:
        grid = prepare(args.zip, work, args.preset)
        grid = [{**c, "epochs": args.epochs, "patience": 10**6} for c in grid]
        groups = fc_grid.stack_groups(grid)[::args.stride]
        chosen = sorted(i for g in groups for i in g)
        data = fc_train._load(work / "ds", work / "splits.json")
        fold = data.splits.fold(0)
        parts = {"train": torch.from_numpy(fold["train"]), "val": torch.from_numpy(fold["val"])}
        model_data = ModelData(data.meta, data.sizes, data.store, train_graphs=parts["train"])
        seeds = [fc_grid.run_seed(0, 0, fc_grid.seed_key(c)) for c in grid]
        cpu = torch.device("cpu")
        print(f"{args.preset} on ENZYMES fold 0 ({len(fold['train'])} train / {len(fold['val'])} val graphs): "
              f"{len(grid)} configurations in {len(fc_grid.stack_groups(grid))} shapes; timing {len(chosen)} "
              f"configurations ({len(groups)} shapes), {args.epochs} epochs each, 1 thread", flush=True)
        # per mode: fixed s, training s, wall s, runs (configurations evaluated)
        cost = {m: [0.0, 0.0, 0.0, 0] for m in "bcd"}
        for group in groups:  # (b) and (c) alternate shape by shape: a drift of the machine's speed hits both
            cfgs = [coerce_all(grid[i], "config", protocol_types(fc_plan.FairComparison, grid[i])) for i in group]
            for i, cfg in zip(group, cfgs, strict=True):  # (b) one at a time in one process
                if "b" in args.skip:
                    break
                wall, start = time.perf_counter(), time.process_time()
                torch.manual_seed(seeds[i])
                model = build_model(cfg, model_data, default_variant=ERRICA2020)
                built = time.process_time()
                train_holdout(model, data.store, parts, cfg, device=cpu)
                done = time.process_time()
                cost["b"] = [cost["b"][0] + built - start, cost["b"][1] + done - built,
                             cost["b"][2] + time.perf_counter() - wall, cost["b"][3] + 1]
            if "c" not in args.skip:  # (c) the shape's configurations as one wide stack
                built = [fc_grid.member_build(c) for c in cfgs]
                builds = [lambda c=b: build_model(c, model_data, default_variant=ERRICA2020) for b, _ in built]
                wall, start = time.perf_counter(), time.process_time()
                stack = HoldoutStack(builds, [seeds[i] for i in group], cfgs, data.store, parts, device=cpu,
                                     frozen=[set(f) for _, f in built])
                ready = time.process_time()
                results = fit_stack(stack)
                done = time.process_time()
                assert all(r["epochs"] == args.epochs for r in results)
                cost["c"] = [cost["c"][0] + ready - start, cost["c"][1] + done - ready,
                             cost["c"][2] + time.perf_counter() - wall, cost["c"][3] + len(group)]
            if "d" not in args.skip:  # (d) one wide stack of the shape's trajectories, each observed by its configs
                wall, start = time.perf_counter(), time.process_time()
                stack, order = shared_stack(group, cfgs, grid, model_data, data, parts, cpu, HoldoutStack,
                                            build_model, ERRICA2020)
                ready = time.process_time()
                results = fit_stack(stack)
                done = time.process_time()
                assert len(results) == len(group) and all(r["epochs"] == args.epochs for r in results)
                cost["d"] = [cost["d"][0] + ready - start, cost["d"][1] + done - ready,
                             cost["d"][2] + time.perf_counter() - wall, cost["d"][3] + len(group)]
            first = grid[group[0]]
            print(f"  shape {fc_grid.shape_key(first)[:8]} ({len(group)} configurations; batch {first['batch_size']}, "
                  f"{first.get('hidden_units')}, {first.get('aggregation', '')}): done", flush=True)
        rates = {}
        for mode, label in (("b", "one at a time in one process"), ("c", "stacked, one wide stack per shape"),
                            ("d", "stacked + shared trajectories (capped: both observers stop at the cap)")):
            fixed, train, wall, runs = cost[mode]
            if not runs:
                continue
            per_epoch, setup = train / (runs * args.epochs), fixed / runs  # per configuration evaluated
            rates[mode] = 3600 / (per_epoch * args.run_epochs + setup)
            print(f"({mode}) {label}: {per_epoch * 1000:.1f} ms CPU per epoch of a run, {setup * 1000:.0f} ms CPU "
                  f"set-up per run -> {rates[mode]:.1f} runs/hour of {args.run_epochs} epochs "
                  f"(wall {wall / runs / args.epochs * 1000:.1f} ms per epoch of a run, set-up included)", flush=True)

        if "a" not in args.skip and "b" in rates:  # (a) one run per process
            import json
            import resource

            sample = chosen[::args.stride_a]
            env = {**os.environ, "OMP_NUM_THREADS": "1"}
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            for n, i in enumerate(sample):
                subprocess.run([sys.executable, "-c", CHILD, json.dumps(grid[i]), str(work / "ds"),
                                str(work / "splits.json"), str(work / "a" / f"{n}" / "inner.parquet")], env=env,
                               check=True, capture_output=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            process = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / len(sample)
            # a process's fixed cost: its CPU time less the epochs it trained, at (b)'s CPU time per epoch
            epoch_b = cost["b"][1] / (cost["b"][3] * args.epochs)
            fixed = process - epoch_b * args.epochs
            rates["a"] = 3600 / (epoch_b * args.run_epochs + fixed)
            print(f"(a) one run per process: {process:.2f} s CPU per process of {args.epochs} epochs ({len(sample)} "
                  f"sampled), {fixed:.2f} s of it start-up, data and building -> {rates['a']:.1f} runs/hour of "
                  f"{args.run_epochs} epochs", flush=True)

        if "b" in rates and "c" in rates:
            line = f"\nstacked / one at a time: {rates['c'] / rates['b']:.2f}x"
            if "a" in rates:
                line += f"; stacked / one run per process: {rates['c'] / rates['a']:.2f}x"
            if args.preset == "fair_GIN":
                line += (f"; stacked vs 84 runs/hour per process (benchmarks/fair_comparison_speed.py): "
                         f"{rates['c'] / 84:.2f}x")
            print(line)
        if "b" in rates and "d" in rates:
            print(f"stacked + shared / one at a time (capped, best case): {rates['d'] / rates['b']:.2f}x; "
                  f"stacked + shared / stacked (capped): {rates['d'] / rates['c']:.2f}x" if "c" in rates else "")
        if args.short_patience:
            short = short_runs(args, groups, grid, model_data, data, parts, cpu, HoldoutStack, build_model,
                               ERRICA2020, coerce_all, protocol_types)
            if "b" in rates and "c" in rates:
                print(f"realistic stacked + shared / one at a time: (c)/(b) capped {rates['c'] / rates['b']:.2f}x "
                      f"x (d)/(c) short {short:.2f}x = {rates['c'] / rates['b'] * short:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
