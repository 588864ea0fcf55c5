"""The ``gnnbench`` command: every workflow stage, usable without Snakemake.

    gnnbench generate sbm_pattern --name PATTERN --seed 0 --set num_train=1000 --out results/datasets/PATTERN
    gnnbench pe results/datasets/CSL --k 20 --out results/features/CSL/laplacian_pe_k20.parquet
    gnnbench splits results/datasets/CSL --scheme stratified_kfold --folds 5 --out results/splits/CSL/splits.json
    gnnbench splits results/datasets/Cora --scheme random_per_class --splits 100 --out results/splits/Cora/splits.json
    gnnbench splits results/datasets/ENZYMES --scheme published --published ENZYMES_splits.json --out ...
    gnnbench train --dataset results/datasets/CSL --splits results/splits/CSL/splits.json --fold 0 \\
        --preset CSL_graph_classification_GCN_CSL_PE_100k --pe ... --seed 41 --out results/runs/...
    gnnbench train --protocol pitfalls --dataset results/datasets/Cora --splits results/splits/Cora/splits.json \\
        --fold 0 1 2 --inits 20 --preset pitfalls_GCN --out results/runs/Cora/GCN/chunk0
    gnnbench train --protocol fair-comparison --dataset results/datasets/ENZYMES --splits ... --fold 0 \\
        --preset fair_Baseline_ENZYMES --set epochs=100 --out results/runs/ENZYMES/Baseline/fold0
    gnnbench aggregate results/runs/CSL/*/*/*/metrics.json --out results/tables/CSL
    gnnbench aggregate --protocol pitfalls results/runs/Cora/*/*/runs.parquet --out results/tables/Cora
    gnnbench params --preset molecules_graph_regression_GatedGCN_ZINC_100k --set edge_feat=true
    gnnbench fit-budget --dataset ZINC --model GAT --layers 4 --budget 100000
    gnnbench presets
    gnnbench tsp solve eil51.tsp --runs 1

Errors a user can fix are printed as one line (``gnnbench: error: ...``) with exit status 1: bad values (seeds
outside [0, 2**32 − 1], hyper-parameters out of range, labels that cannot be folder names), ``--out`` where a file
stands in the way, a path that cannot be written. Ctrl-C prints ``gnnbench: interrupted ...`` and exits with 130;
what was finished is kept (files are written atomically) and a training run resumes from its checkpoint.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys

import yaml

from gnnbench.allocator import keep_freed_memory
from gnnbench.errors import INTERRUPTED, ConfigError, GnnbenchError, os_error_message
from gnnbench.splits import PUBLISHED_SOURCES, SCHEMES


def _key_values(pairs: list[str] | None) -> dict:
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ConfigError(f"--set {pair!r}: expected KEY=VALUE, e.g. --set hidden_dim=64")
        key, value = pair.split("=", 1)
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            out[key.strip()] = value
    return out


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose epilog can be made when the help is shown (``epilog_factory``), so that e.g. the
    generator registry is imported only for ``gnnbench generate --help``."""

    def __init__(self, *args, epilog_factory=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.epilog_factory = epilog_factory

    def format_help(self) -> str:
        if self.epilog_factory is not None:
            self.epilog = self.epilog_factory()
        return super().format_help()


def _generators_epilog() -> str:
    """Every registered generator with its one-line description."""
    from gnnbench.data.generators import generator_names, get_generator

    names = generator_names()
    width = max(map(len, names))
    lines = [f"  {name:<{width}}  {' '.join(get_generator(name).description.split())}" for name in names]
    return "generators (parameters and defaults: README, \"Changing the suite\"):\n" + "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gnnbench", description="Reproducible GNN benchmarking.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("generate", help="generate a dataset (graphs.parquet + meta.json)",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog_factory=_generators_epilog)
    p.add_argument("generator", help="generator name (listed below)")
    p.add_argument("--name", required=True, help="dataset name recorded in meta.json")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="generator parameter")
    p.add_argument("--out", required=True, help="output folder")

    p = sub.add_parser("pe", help="Laplacian positional encodings of a dataset")
    p.add_argument("dataset", help="dataset folder")
    p.add_argument("--k", type=int, required=True)
    p.add_argument("--out", required=True)

    p = sub.add_parser("splits", help="make a split file")
    p.add_argument("dataset", help="dataset folder")
    p.add_argument("--scheme", "--protocol", dest="scheme", choices=SCHEMES, required=True,
                   help="split scheme (--protocol: its older name)")
    for name, kind in (("folds", int), ("val-fraction", float), ("splits", int), ("train-per-class", int),
                       ("val-per-class", int), ("val-size", int), ("test-size", int), ("seed", int)):
        p.add_argument(f"--{name}", type=kind, help="scheme parameter (default: the scheme's)")
    p.add_argument("--published", metavar="FILE", nargs="+", help="scheme published: the released split file(s) to "
                   "import (Errica et al.'s ENZYMES_splits.json; the benchmark's ENZYMES_train.index "
                   "ENZYMES_val.index ENZYMES_test.index, in this order)")
    p.add_argument("--source", choices=PUBLISHED_SOURCES, help="scheme published: whose release (default "
                   "fair-comparison)")
    p.add_argument("--out", required=True)

    p = sub.add_parser("train", help="train one run (model × seed × fold), or with --protocol pitfalls every "
                                     "initialisation of the given splits")
    p.add_argument("--protocol", default="benchmarking-gnns",
                   help="benchmarking-gnns (default), pitfalls, or fair-comparison (one outer fold: grid search, "
                        "selection, final runs)")
    p.add_argument("--dataset", required=True, help="dataset folder")
    p.add_argument("--splits", required=True, help="split file")
    p.add_argument("--fold", type=int, nargs="+", default=[0], help="fold (pitfalls: one or more splits)")
    p.add_argument("--inits", type=int, default=20, help="pitfalls: initialisations per split")
    p.add_argument("--init-ids", type=int, nargs="+", help="pitfalls: train only these initialisations")
    p.add_argument("--final-runs", type=int, default=3, help="fair-comparison: final runs of the chosen config")
    p.add_argument("--final-holdout", default="fresh", choices=["fresh", "selection"],
                   help="fair-comparison: early-stopping hold-out of the final runs")
    p.add_argument("--pe", help="positional-encoding file (needed when pos_enc is true)")
    p.add_argument("--preset", help="published config to start from")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="config override")
    p.add_argument("--seed", type=int, help="overrides the config's seed (pitfalls: seed of the initialisations)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--threads", type=int)
    p.add_argument("--label", help="model label recorded in metrics.json")
    p.add_argument("--out", required=True, help="run folder")

    p = sub.add_parser("aggregate", help="summary tables from runs' metrics.json (pitfalls: runs.parquet) files")
    p.add_argument("metrics", nargs="+")
    p.add_argument("--protocol", default="benchmarking-gnns", help="benchmarking-gnns (default) or pitfalls")
    p.add_argument("--out", required=True, help="output prefix: writes PREFIX.csv, .md and .parquet (pitfalls: "
                                                "also the box plot PREFIX.png and .svg)")

    p = sub.add_parser("params", help="print the trainable-parameter count of a config")
    p.add_argument("--preset", help="published config name")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="config override")
    p.add_argument("--dataset", help="dataset whose input sizes to use (default: the preset's)")

    p = sub.add_parser("fit-budget", help="print the hidden width closest to a parameter budget, and its count")
    p.add_argument("--dataset", required=True, help="dataset whose input sizes to use (e.g. ZINC, SBM_PATTERN)")
    p.add_argument("--model", required=True)
    p.add_argument("--layers", type=int, help="number of layers L (default: the base config's)")
    p.add_argument("--budget", type=int, required=True, help="target number of trainable parameters")
    p.add_argument("--preset", help="base config (default: the model's published config for the dataset)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override of the base config")

    sub.add_parser("presets", help="list the published configs")

    p = sub.add_parser("tsp", help="travelling-salesman tools")
    tsp_sub = p.add_subparsers(dest="tsp_command", required=True)
    q = tsp_sub.add_parser("solve", help="print the name, dimension and LKH-3 tour length of a TSPLIB EUC_2D file")
    q.add_argument("file", help="TSPLIB file (.tsp, EDGE_WEIGHT_TYPE EUC_2D)")
    q.add_argument("--runs", type=int, default=1, help="LKH runs (more: surer of the optimum, slower)")
    return parser


OUT_KINDS = {"generate": "folder", "train": "folder", "pe": "file", "splits": "file", "aggregate": "prefix"}


def _check_args(args: argparse.Namespace) -> None:
    """What argparse cannot check, refused before anything runs: seeds, the model label (it may become a folder
    name), and ``--out`` (a folder where a folder is written, a file where a file is; nothing in the way)."""
    from gnnbench.config.keys import check_label, check_seed

    if getattr(args, "seed", None) is not None:
        check_seed(args.seed, "--seed")
    if getattr(args, "label", None) is not None:
        check_label(args.label, "--label")
    kind = OUT_KINDS.get(args.command)
    if kind == "prefix":  # aggregate writes PREFIX.csv, .md, .parquet (pitfalls: also .png, .svg)
        for ext in ("csv", "md", "parquet", "png", "svg"):
            _check_out(args.command, args.out, f"{args.out}.{ext}", "file")
    elif kind is not None:
        _check_out(args.command, args.out, args.out, kind)


def _check_out(command: str, out: str, target: str, kind: str) -> None:
    """``target`` (``out`` or a file named from it) can be written as a ``kind`` (folder or file)."""
    from pathlib import Path

    path = Path(target)
    where = f"--out {out}: {target}" if target != out else f"--out {out}"
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise ConfigError(f"--out {out}: {parent} is a file, not a folder; move it away or choose another --out")
    if kind == "folder" and path.exists() and not path.is_dir():
        raise ConfigError(f"{where} is a file, but {command} writes a folder there; give a new or existing folder "
                          "(the file was left as it is)")
    if kind == "file" and path.is_dir():
        raise ConfigError(f"{where} is a folder, but {command} writes a file there; give a file name (the folder "
                          "was left as it is)")


def _run(args: argparse.Namespace) -> None:
    _check_args(args)
    if args.command == "generate":
        from gnnbench.pipeline import generate_dataset

        generate_dataset(args.generator, args.name, _key_values(args.set), args.seed, args.out)
    elif args.command == "pe":
        from gnnbench.pipeline import compute_pe

        compute_pe(args.dataset, args.k, args.out)
    elif args.command == "splits":
        from gnnbench.pipeline import make_split_file
        from gnnbench.splits import resolve_split

        given = {k: v for k, v in vars(args).items()
                 if k in ("folds", "val_fraction", "splits", "train_per_class", "val_per_class", "val_size",
                          "test_size", "seed", "source") and v is not None}
        split = resolve_split({"scheme": args.scheme, **given}, "splits")
        make_split_file(args.dataset, split.pop("scheme"), split, args.out, args.published)
    elif args.command == "train":
        _train(args)
    elif args.command == "aggregate":
        from gnnbench.protocols import get_protocol

        out = args.out
        if get_protocol(args.protocol, "--protocol").name == "pitfalls":
            from gnnbench.protocols.pitfalls import dataset_report

            dataset_report(args.metrics, f"{out}.csv", f"{out}.md", f"{out}.parquet", f"{out}.png", f"{out}.svg")
        else:
            from gnnbench.protocols.benchmarking_gnns import aggregate_tables

            aggregate_tables(args.metrics, f"{out}.csv", f"{out}.md", f"{out}.parquet")
    elif args.command == "params":
        from gnnbench.config.presets import get_preset, preset_protocol, run_config
        from gnnbench.data.catalog import describe_dataset

        preset = get_preset(args.preset, where="--preset") if args.preset else None
        dataset = args.dataset or (preset["dataset"] if preset else None)
        if dataset is None:
            raise ConfigError("params: give --preset, or --dataset with --set model=... and the model's keys")
        config = run_config(args.preset, _key_values(args.set), where="--set", preset_where="--preset")
        meta = describe_dataset(dataset)
        if preset is not None and preset_protocol(preset) == "pitfalls":
            from gnnbench.protocols.pitfalls import num_parameters, stand_in_graph

            print(num_parameters(config, stand_in_graph(meta)))
        else:
            from gnnbench.models import build_model, count_parameters

            print(count_parameters(build_model(config, meta)))
    elif args.command == "fit-budget":
        from gnnbench.config.budget import fit_preset
        from gnnbench.data.catalog import describe_dataset

        fit = fit_preset(args.dataset, args.model, args.budget, args.layers, describe_dataset(args.dataset),
                         args.preset, _key_values(args.set))
        tuned = fit.out_dim is not None and fit.out_dim != fit.config.get("n_heads", 1) * fit.hidden_dim
        print(f"{fit.hidden_dim} {fit.total_params}" + (f" out_dim={fit.out_dim}" if tuned else ""))
    elif args.command == "presets":
        from gnnbench.config.presets import all_presets, preset_protocol

        for name, preset in all_presets().items():
            grid = preset.get("grid")  # fair-comparison presets: a grid, for any dataset
            size = f"\t{math.prod(len(v) for v in grid.values())} configurations" if grid else ""
            print(f"{name}\t{preset_protocol(preset)}\t{preset['model']}\t{preset.get('dataset', 'any')}\t"
                  f"{preset.get('total_params', '')}{size}")
    elif args.command == "tsp" and args.tsp_command == "solve":
        from gnnbench.data.tsplib import read_tsplib, solve_instance

        instance = read_tsplib(args.file)
        _, length = solve_instance(instance, args.runs)
        print(f"{instance.name} {instance.dimension}")
        print(length)  # last line: the tour length alone, in TSPLIB integer units


def _train(args: argparse.Namespace) -> None:
    from gnnbench.config.presets import run_config
    from gnnbench.protocols import get_protocol

    protocol = get_protocol(args.protocol, "--protocol").name
    overrides = _key_values(args.set)
    if protocol == "pitfalls":
        from gnnbench.protocols.pitfalls import run_chunk

        config = run_config(args.preset, overrides, where="--set", preset_where="--preset", protocol=protocol)
        metrics = run_chunk(dataset_dir=args.dataset, splits_path=args.splits, splits=args.fold, config=config,
                            inits=args.inits, seed=args.seed or 0, out_dir=args.out, device=args.device,
                            threads=args.threads, label=args.label, init_ids=args.init_ids)
        mean, diverged = metrics["test_accuracy_mean"], metrics.get("diverged", 0)
        print(f"{metrics['runs']} runs" + (f" ({diverged} diverged: NaN or infinite loss)" if diverged else "")
              + ", mean test accuracy: " + ("none (every run diverged)" if mean is None else f"{mean:.2f}"))
        return
    if protocol == "fair-comparison":
        _fair_comparison(args, overrides)
        return
    from gnnbench.protocols.benchmarking_gnns import train

    if len(args.fold) != 1:
        raise ConfigError(f"--fold: protocol {protocol} trains one fold per run, got {len(args.fold)}")
    if args.seed is not None:
        overrides["seed"] = args.seed
    config = run_config(args.preset, overrides, where="--set", preset_where="--preset", protocol=protocol)
    results = train(dataset_dir=args.dataset, splits_path=args.splits, fold=args.fold[0], config=config,
                    out_dir=args.out, pe_path=args.pe, device=args.device, threads=args.threads, label=args.label)
    if results.get("status") == "diverged":
        print(f"diverged at epoch {results['diverged_epoch']} (NaN or infinite loss): no test {results['metric']}")
    else:
        print(f"test {results['metric']}: {results['test']['metric']:.4f}")


def _fair_comparison(args: argparse.Namespace, overrides: dict) -> None:
    """One outer fold of the nested cross-validation: every grid point of the preset (``--set`` fixes values and
    removes their dimensions), the selection, the final runs — the workflow's files, under ``--out``."""
    from pathlib import Path

    from gnnbench.protocols import fair_comparison as fc

    if len(args.fold) != 1:
        raise ConfigError(f"--fold: protocol fair-comparison runs one outer fold per command, got {len(args.fold)}")
    if not args.preset:
        raise ConfigError("--preset: protocol fair-comparison starts from a grid; name a fair_* preset "
                          "(`gnnbench presets`)")
    base, grid = fc.model_grid({"preset": args.preset}, overrides, "--preset")
    configs = fc.expand_grid(base, grid)
    out, fold, seed = Path(args.out), args.fold[0], args.seed or 0
    common = {"dataset_dir": args.dataset, "splits_path": args.splits, "fold": fold, "seed": seed,
              "device": args.device, "threads": args.threads}
    fc.run_inner(configs=configs, positions=list(range(len(configs))), out=out / "inner" / "part0.parquet",
                 **common)
    chosen = fc.select([out / "inner" / "part0.parquet"], out / "selection.json", dataset=Path(args.dataset).name,
                       model=args.label or base["model"], fold=fold)["chosen"]
    fc.run_final(selection_path=out / "selection.json", runs=args.final_runs, holdout=args.final_holdout,
                 out=out / "final.parquet", history_out=out / "final_history.parquet", **common)
    import pyarrow.parquet as pq

    test = pq.read_table(out / "final.parquet").column("test_accuracy").to_pylist()
    print(f"fold {fold}: {len(configs)} configurations, chosen validation accuracy {chosen['val_accuracy']:.2f}, "
          f"test accuracy {sum(test) / len(test):.2f} (mean of {len(test)} final runs)")


def main(argv: list[str] | None = None) -> int:
    """The ``gnnbench`` command; ``argv`` None means this process is the command (then malloc keeps freed memory for
    reuse, :mod:`gnnbench.allocator`; a caller passing ``argv`` keeps its own settings)."""
    if argv is None:
        keep_freed_memory()
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        _run(args)
    except GnnbenchError as exc:
        print(f"gnnbench: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)  # training stopped by SIGTERM: 143
    except BrokenPipeError:  # output piped into e.g. `head`
        sys.stderr.close()
    except KeyboardInterrupt:  # Ctrl-C: outputs are written atomically, a training run resumes from its checkpoint
        print(f"gnnbench: {INTERRUPTED}", file=sys.stderr)
        return 130  # 128 + SIGINT, the shell's status for a process ended by Ctrl-C
    except OSError as exc:  # a named path the user can fix: permission denied, a file in the way, disk full
        message = os_error_message(exc)
        if message is None:
            raise
        print(f"gnnbench: error: {message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
