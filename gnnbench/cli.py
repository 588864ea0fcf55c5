"""The ``gnnbench`` command: every workflow stage, usable without Snakemake.

    gnnbench generate sbm_pattern --name PATTERN --seed 0 --set num_train=1000 --out results/datasets/PATTERN
    gnnbench pe results/datasets/CSL --k 20 --out results/features/CSL/laplacian_pe_k20.parquet
    gnnbench splits results/datasets/CSL --scheme stratified_kfold --folds 5 --out results/splits/CSL/splits.json
    gnnbench splits results/datasets/Cora --scheme random_per_class --splits 100 --out results/splits/Cora/splits.json
    gnnbench splits results/datasets/ENZYMES --scheme published --published ENZYMES_splits.json --out ...
    gnnbench leakage results/datasets/CSL --split results/splits/CSL/splits.json
    gnnbench train benchmarking-gnns --dataset results/datasets/CSL --splits results/splits/CSL/splits.json \\
        --fold 0 --preset CSL_graph_classification_GCN_CSL_PE_100k --pe ... --seed 41 --out results/runs/...
    gnnbench train pitfalls --dataset results/datasets/Cora --splits results/splits/Cora/splits.json \\
        --fold 0 1 2 --inits 20 --preset pitfalls_GCN --out results/runs/Cora/GCN/chunk0
    gnnbench train fair-comparison --dataset results/datasets/ENZYMES --splits ... --fold 0 \\
        --preset fair_Baseline_ENZYMES --set epochs=100 --out results/runs/ENZYMES/Baseline/fold0
    gnnbench train pitfalls --help                      # the options of one protocol
    gnnbench aggregate benchmarking-gnns results/records/benchmarking-gnns/CSL/*/*.parquet --out results/tables/CSL
    gnnbench aggregate pitfalls results/records/pitfalls/Cora/*/*.parquet --out results/tables/Cora
    gnnbench params --preset molecules_graph_regression_GatedGCN_ZINC_100k --set edge_feat=true
    gnnbench fit-budget --dataset ZINC --model GAT --layers 4 --budget 100000
    gnnbench presets
    gnnbench tsp solve eil51.tsp --runs 1
    gnnbench run my_suite.yaml --cores 2                # the whole workflow on a suite, in the working directory
    gnnbench run pitfalls --profile slurm               # a paper suite on a SLURM cluster

``gnnbench run SUITE [snakemake options and targets]`` runs Snakemake on the workflow that ships inside the package
(``gnnbench/_workflow/Snakefile``, the checkout's ``workflow/``): results/ and resources/ are written in the working
directory, whatever folder that is. ``gnnbench train PROTOCOL`` takes the protocol's own options (``gnnbench train
PROTOCOL --help``); every job also writes its run records (:mod:`gnnbench.records`) under ``--records`` (default
``OUT/records``).

Errors a user can fix are printed as one line (``gnnbench: error: ...``) with exit status 1: bad values (seeds
outside [0, 2**32 − 1], hyper-parameters out of range, labels that cannot be folder names), ``--out`` where a file
stands in the way, a path that cannot be written. Ctrl-C prints ``gnnbench: interrupted ...`` and exits with 130;
what was finished is kept (files are written atomically) and a training run resumes from its checkpoint;
``gnnbench run`` first stops Snakemake and its jobs and waits for Snakemake to remove its lock (:func:`run_snakemake`).
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from pathlib import Path

import yaml

from gnnbench.allocator import keep_freed_memory
from gnnbench.config.keys import check_label, check_seed
from gnnbench.config.presets import all_presets, get_preset, preset_protocol, run_config
from gnnbench.data.catalog import describe_dataset
from gnnbench.data.generators import generator_names, get_generator
from gnnbench.data.leakage import DEFAULT_THRESHOLD
from gnnbench.data.tsp_solver import solve_instance
from gnnbench.data.tsplib import read_tsplib
from gnnbench.errors import INTERRUPTED, ConfigError, GnnbenchError
from gnnbench.io import os_error_message
from gnnbench.packaged import SUITE_SUFFIXES, paper_suite, paper_suites, profile_dir, snakefile, workflow_dir
from gnnbench.papers import DEFAULT_PROTOCOL
from gnnbench.pipeline import compute_pe, generate_dataset, leakage_text, make_split_file
from gnnbench.protocols.registry import get_protocol, protocol_names
from gnnbench.reporting.leakage import append_note
from gnnbench.splits import PUBLISHED_SOURCES, SCHEME_DEFAULTS, SCHEMES, resolve_split


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
    names = generator_names()
    width = max(map(len, names))
    lines = [f"  {name:<{width}}  {' '.join(get_generator(name).description.split())}" for name in names]
    return "generators (parameters and defaults: docs/datasets.md):\n" + "\n".join(lines)


def _run_epilog() -> str:
    """The paper suites and the profiles that ship with the workflow."""
    profiles = sorted(p.name for p in (workflow_dir() / "profiles").iterdir() if (p / "config.yaml").is_file())
    return (f"paper suites (by name, or `extends:` one of them in your suite): {', '.join(paper_suites())}\n"
            f"profiles (--profile NAME, when no folder NAME is here): {', '.join(profiles)}\n"
            "examples:\n  gnnbench run suite.yaml --cores 2\n"
            "  gnnbench run suite.yaml --cores 2 -n                      (what would run)\n"
            "  gnnbench run suite.yaml --report report.html              (after the run: its HTML report)\n"
            "  gnnbench run suite.yaml --cores 2 results/tables/CSL.csv  (one table and what it needs)")


def _train_parsers(train: argparse.ArgumentParser) -> None:
    """``gnnbench train PROTOCOL``: one subcommand per protocol, with the common options and the protocol's own
    (:meth:`gnnbench.protocols.base.Protocol.add_train_arguments`)."""
    sub = train.add_subparsers(dest="protocol", required=True, metavar="PROTOCOL")
    for name in protocol_names():
        protocol = get_protocol(name)
        p = sub.add_parser(name, help=protocol.title, description=f"One job of protocol {name}: {protocol.title}.")
        p.add_argument("--dataset", required=True, help="dataset folder")
        p.add_argument("--splits", required=True, help="split file")
        protocol.add_train_arguments(p)
        p.add_argument("--preset", help="published config to start from")
        p.add_argument("--set", action="append", metavar="KEY=VALUE", help="config override")
        p.add_argument("--seed", type=int, help="overrides the config's seed (or the protocol's job seed)")
        p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
        p.add_argument("--threads", type=int)
        p.add_argument("--label", help="model label recorded with the runs")
        p.add_argument("--out", required=True, help="job folder")
        p.add_argument("--records", help="folder of the job's run records (default: OUT/records)")


def _parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command's parser; the protocols' ``train`` options are added only for ``gnnbench train`` (building them
    imports the protocols, and with them torch)."""
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
    p.add_argument("--source", choices=PUBLISHED_SOURCES, help="scheme published: whose release, by paper "
                   f"key (default {SCHEME_DEFAULTS['published']['source']})")
    p.add_argument("--path", metavar="FILE", help="scheme file: your JSON list of folds (docs/datasets.md, "
                   "\"Your own dataset\")")
    p.add_argument("--out", required=True)
    p.add_argument("--leakage", metavar="FILE", help="also write the split's leakage report here (per fold, the "
                                                    "validation and test items with a duplicate in training; "
                                                    "docs/leakage.md)")

    p = sub.add_parser("leakage", help="print a dataset's duplicate nodes or graphs and, with --split, how many "
                                       "validation and test items of each fold have a duplicate in training")
    p.add_argument("dataset", help="dataset folder")
    p.add_argument("--split", metavar="FILE", help="a split file of the dataset (results/splits/NAME/splits.json)")

    p = sub.add_parser("train", help="train one job of a protocol: gnnbench train PROTOCOL ... (gnnbench train "
                                     "PROTOCOL --help: its options)")
    if _command(argv) == "train":
        _train_parsers(p)

    p = sub.add_parser("aggregate", help="the dataset table of a protocol's job outputs: the jobs' run records "
                                         "(OUT/records/*.parquet, or results/records/...)")
    p.add_argument("protocol", metavar="PROTOCOL", help="the protocol that trained the runs")
    p.add_argument("metrics", nargs="+", metavar="FILE")
    p.add_argument("--out", required=True, help="output prefix: writes PREFIX.csv, .md and .parquet (pitfalls: "
                                                "also the box plot PREFIX.png and .svg)")
    p.add_argument("--leakage", metavar="FILE", help="the split's leakage.json (results/splits/DATASET/leakage.json): "
                                                    "its note goes under the Markdown table, as in a suite's")
    p.add_argument("--leakage-threshold", type=float, default=DEFAULT_THRESHOLD, metavar="SHARE",
                   help=f"share of a test part with a duplicate in training above which the note warns (default "
                        f"{DEFAULT_THRESHOLD:g}, docs/leakage.md)")

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
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override of the base config; for a model of your own (--model my_gnn.py:MyGNN) its "
                        "constructor arguments, and width=ARG to name the argument fitted (default hidden_channels)")

    sub.add_parser("presets", help="list the published configs")

    p = sub.add_parser("run", help="run a suite through the Snakemake workflow in the working directory: gnnbench "
                                   "run SUITE.yaml --cores N [snakemake options and targets]",
                       description="Snakemake on gnnbench's workflow with SUITE as its --configfile, in the working "
                                   "directory (results/, resources/ and .snakemake/ are written there). Every "
                                   "argument after SUITE goes to snakemake.",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog_factory=_run_epilog)
    p.add_argument("suite", help="suite file, or the name of a paper suite (listed below)")
    p.add_argument("snakemake_args", nargs=argparse.REMAINDER, metavar="...",
                   help="snakemake options and targets: --cores N, -n, --profile slurm, --report report.html, ...")

    p = sub.add_parser("tsp", help="travelling-salesman tools")
    tsp_sub = p.add_subparsers(dest="tsp_command", required=True)
    q = tsp_sub.add_parser("solve", help="print the name, dimension and LKH-3 tour length of a TSPLIB EUC_2D file")
    q.add_argument("file", help="TSPLIB file (.tsp, EDGE_WEIGHT_TYPE EUC_2D)")
    q.add_argument("--runs", type=int, default=1, help="LKH runs (more: surer of the optimum, slower)")
    return parser


def _command(argv: list[str] | None) -> str | None:
    """The subcommand named in ``argv`` (default: this process's arguments), or None."""
    args = sys.argv[1:] if argv is None else argv
    return next((a for a in args if not a.startswith("-")), None)


OUT_KINDS = {"generate": "folder", "train": "folder", "pe": "file", "splits": "file", "aggregate": "prefix"}


def _check_args(args: argparse.Namespace) -> None:
    """What argparse cannot check, refused before anything runs: seeds, counts that must be positive (``--layers``,
    ``--threads``), the model label (it may become a folder name), ``--out`` (a folder where a folder is written, a
    file where a file is; nothing in the way) and ``--records`` (a folder)."""
    if getattr(args, "seed", None) is not None:
        check_seed(args.seed, "--seed")
    for option, what, default in (("layers", "layers L", "the base config's L"),
                                  ("threads", "CPU threads", "torch's default")):
        value = getattr(args, option, None)
        if value is not None and value < 1:
            raise ConfigError(f"--{option}: the number of {what} must be at least 1, got {value}; give 1 or more "
                              f"(or leave --{option} out: {default})")
    if getattr(args, "label", None) is not None:
        check_label(args.label, "--label")
    kind = OUT_KINDS.get(args.command)
    if kind == "prefix":  # aggregate writes PREFIX.csv, .md, .parquet (pitfalls: also .png, .svg)
        for ext in ("csv", "md", "parquet", "png", "svg"):
            _check_out(args.command, args.out, f"{args.out}.{ext}", "file")
    elif kind is not None:
        _check_out(args.command, args.out, args.out, kind)
    if hasattr(args, "records"):  # train: a folder, by default OUT/records
        records = args.records or str(Path(args.out) / "records")
        _check_out(args.command, records, records, "folder", "--records")


def _check_out(command: str, out: str, target: str, kind: str, option: str = "--out") -> None:
    """``target`` (``out``, the value of ``option``, or a file named from it) can be written as a ``kind`` (folder or
    file)."""
    from pathlib import Path

    path = Path(target)
    where = f"{option} {out}: {target}" if target != out else f"{option} {out}"
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise ConfigError(f"{option} {out}: {parent} is a file, not a folder; move it away or choose another "
                              f"{option}")
    if kind == "folder" and path.exists() and not path.is_dir():
        raise ConfigError(f"{where} is a file, but {command} writes a folder there; give a new or existing folder "
                          "(the file was left as it is)")
    if kind == "file" and path.is_dir():
        raise ConfigError(f"{where} is a folder, but {command} writes a file there; give a file name (the folder "
                          "was left as it is)")


# snakemake options gnnbench run sets itself
RUN_OWN_OPTIONS = ("--configfile", "--configfiles", "-s", "--snakefile", "-d", "--directory")


def run_workflow(suite: str, snakemake_args: list[str]) -> int:
    """Snakemake on the packaged workflow with ``suite`` (a file, or a paper suite's name) in the working directory;
    a bare ``--profile NAME`` names the workflow's profile NAME when no folder NAME is here. Snakemake's exit
    status."""
    import os


    path = Path(suite)
    if not path.is_file():
        if path.suffix in SUITE_SUFFIXES or os.sep in suite:
            raise ConfigError(f"run: suite file {suite} does not exist (a path is read from the working directory "
                              f"{Path.cwd()}); give an existing file or a paper suite's name")
        path = paper_suite(suite, "run")
    args = list(snakemake_args)
    for i, arg in enumerate(args):
        option = arg.split("=", 1)[0]
        if option in RUN_OWN_OPTIONS:
            raise ConfigError(f"run: {option}: gnnbench run sets it (the suite is the first argument; the working "
                              "directory is where results/ goes: cd there); drop it")
        if option == "--profile":
            value = arg.split("=", 1)[1] if "=" in arg else (args[i + 1] if i + 1 < len(args) else "")
            packaged = profile_dir(value) if value and not Path(value).exists() else None
            if packaged is not None:
                args[i:i + (1 if "=" in arg else 2)] = ["--profile", str(packaged)]
    # Snakemake leaves the jobs it was running when interrupted marked incomplete, whatever they had written: their
    # rerun is what the user wants (outputs are written atomically and training resumes from its checkpoint)
    rerun = [] if {"--rerun-incomplete", "--ri"} & set(args) else ["--rerun-incomplete"]
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile()), "--configfile",
               str(path.absolute()), *rerun, *args]
    return run_snakemake(command)


# how long gnnbench run waits after Ctrl-C for Snakemake to stop its jobs and remove its lock before killing them:
# SLURM's default KillWait, the time a training job is given to stop after SIGTERM
STOP_SECONDS = 30.0


def run_snakemake(command: list[str]) -> int:
    """Run ``command`` (Snakemake in the working directory) to its end; its exit status.

    Snakemake runs in a session of its own, with its jobs: gnnbench alone passes signals on, so that they get each
    signal once, whether Ctrl-C reached the terminal's whole foreground group or only gnnbench (``kill -INT PID``).
    SIGINT (or SIGHUP, the terminal gone) sends SIGINT to Snakemake and its jobs: the jobs end (training keeps its
    checkpoint), Snakemake removes its lock, and KeyboardInterrupt is raised here. A second SIGINT, or a Snakemake
    not done after ``STOP_SECONDS``, kills them all, and the lock files this Snakemake wrote are removed. SIGTERM is
    passed on (training jobs save their checkpoint and exit 143, Snakemake waits for them); Ctrl-Z (SIGTSTP) stops
    Snakemake and its jobs with gnnbench, SIGCONT continues them.
    """
    import os
    import signal
    import subprocess
    import time

    received: list[int] = []  # acted on below, not in the handler: one thread, no race with the start of Snakemake

    def record(signum: int, frame: object) -> None:
        received.append(signum)

    relayed = (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGTSTP, signal.SIGCONT)
    previous = {s: signal.signal(s, record) for s in relayed if signal.getsignal(s) is not signal.SIG_IGN}
    held = _lock_files()  # other Snakemake instances' (on other outputs): left alone
    try:
        snakemake = subprocess.Popen(command, start_new_session=True)

        def to_group(signum: int) -> None:
            try:
                os.killpg(snakemake.pid, signum)
            except ProcessLookupError:  # all gone already
                pass

        interrupts, deadline, killed = 0, math.inf, False
        while True:
            while received:
                signum = received.pop(0)
                if signum in (signal.SIGINT, signal.SIGHUP):
                    interrupts += 1
                    if interrupts == 1:
                        to_group(signal.SIGINT)
                        deadline = time.monotonic() + STOP_SECONDS
                elif signum == signal.SIGTSTP:  # SIGSTOP: a SIGTSTP to a group with no parent in its session is void
                    to_group(signal.SIGSTOP)
                    os.kill(os.getpid(), signal.SIGSTOP)
                else:
                    to_group(signum)
            if snakemake.poll() is not None:
                break
            if not killed and (interrupts > 1 or time.monotonic() > deadline):
                to_group(signal.SIGKILL)
                killed = True
            time.sleep(0.1)  # the handler only records a signal: it is acted on within 0.1 s
        if interrupts:
            to_group(signal.SIGKILL)  # a job Snakemake left behind (none, when it stopped them itself)
            if killed:
                for lock, _ in _lock_files() - held:
                    lock.unlink(missing_ok=True)
            raise KeyboardInterrupt
        return snakemake.returncode
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _lock_files() -> set[tuple[Path, int]]:
    """Snakemake's lock files in the working directory, with their modification times (a lock file removed and made
    again under the same name is another)."""
    found = set()
    for path in Path(".snakemake", "locks").glob("*.lock"):
        try:
            found.add((path, path.stat().st_mtime_ns))
        except FileNotFoundError:  # removed meanwhile
            pass
    return found


def _run(args: argparse.Namespace) -> int | None:
    _check_args(args)
    if args.command == "run":
        return run_workflow(args.suite, args.snakemake_args)
    if args.command == "generate":
        generate_dataset(args.generator, args.name, _key_values(args.set), args.seed, args.out)
    elif args.command == "pe":
        compute_pe(args.dataset, args.k, args.out)
    elif args.command == "splits":
        given = {k: v for k, v in vars(args).items()
                 if k in ("folds", "val_fraction", "splits", "train_per_class", "val_per_class", "val_size",
                          "test_size", "seed", "source", "path") and v is not None}
        split = resolve_split({"scheme": args.scheme, **given}, "splits")
        make_split_file(args.dataset, split.pop("scheme"), split, args.out, args.published, leakage=args.leakage)
    elif args.command == "leakage":
        print(leakage_text(args.dataset, args.split))
    elif args.command == "train":
        args.records = args.records or str(Path(args.out) / "records")
        print(get_protocol(args.protocol).train_command(args, _key_values(args.set)))
    elif args.command == "aggregate":
        if not 0 <= args.leakage_threshold <= 1:
            raise ConfigError(f"--leakage-threshold {args.leakage_threshold:g}: give a share between 0 and 1")
        if args.leakage is not None and not Path(args.leakage).is_file():
            raise ConfigError(f"--leakage {args.leakage}: no such file; give the split's leakage.json "
                              "(results/splits/DATASET/leakage.json, or `gnnbench splits ... --leakage FILE`)")
        get_protocol(args.protocol, "aggregate").aggregate_command(args.metrics, args.out)
        if args.leakage is not None:
            append_note(f"{args.out}.md", args.leakage, args.leakage_threshold)
    elif args.command == "params":
        preset = get_preset(args.preset, where="--preset") if args.preset else None
        dataset = args.dataset or (preset["dataset"] if preset else None)
        if dataset is None:
            raise ConfigError("params: give --preset, or --dataset with --set model=... and the model's keys")
        config = run_config(args.preset, _key_values(args.set), where="--set", preset_where="--preset")
        from gnnbench.models.build import num_parameters

        protocol = get_protocol(preset_protocol(preset) if preset is not None else DEFAULT_PROTOCOL)
        # one initialisation of a stacked model; graph sizes of a stand-in where the count depends on them
        print(num_parameters(config, describe_dataset(dataset), default_variant=protocol.default_variant))
    elif args.command == "fit-budget":
        from gnnbench.config.budget import fit_preset

        fit = fit_preset(args.dataset, args.model, args.budget, args.layers, describe_dataset(args.dataset),
                         args.preset, _key_values(args.set))
        tuned = fit.out_dim is not None and fit.out_dim != fit.config.get("n_heads", 1) * fit.hidden_dim
        print(f"{fit.hidden_dim} {fit.total_params}" + (f" out_dim={fit.out_dim}" if tuned else ""))
    elif args.command == "presets":
        for name, preset in all_presets().items():
            grid = preset.get("grid")  # fair-comparison presets: a grid, for any dataset
            size = f"\t{math.prod(len(v) for v in grid.values())} configurations" if grid else ""
            print(f"{name}\t{preset_protocol(preset)}\t{preset['model']}\t{preset.get('dataset', 'any')}\t"
                  f"{preset.get('total_params', '')}{size}")
    elif args.command == "tsp" and args.tsp_command == "solve":
        instance = read_tsplib(args.file)
        _, length = solve_instance(instance, args.runs)
        print(f"{instance.name} {instance.dimension}")
        print(length)  # last line: the tour length alone, in TSPLIB integer units


def main(argv: list[str] | None = None) -> int:
    """The ``gnnbench`` command; ``argv`` None means this process is the command (then malloc keeps freed memory for
    reuse, :mod:`gnnbench.allocator`; a caller passing ``argv`` keeps its own settings)."""
    if argv is None:
        keep_freed_memory()
    args = _parser(argv).parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        status = _run(args)
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
    return status or 0  # gnnbench run: snakemake's exit status


if __name__ == "__main__":
    sys.exit(main())
