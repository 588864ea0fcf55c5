"""What a user can get wrong on the command line and in the workflow's jobs ends in one line (``gnnbench: error:``,
exit status 1; Ctrl-C: ``gnnbench: interrupted``, 130), without a traceback and without losing what was produced:
seeds outside 32 bits, labels that cannot be folder names, hyper-parameters out of range, ``--out`` naming a file
where a folder belongs (or the reverse), unwritable outputs, Ctrl-C during training, a suite with a bad seed or a
key given twice (Snakemake)."""

from __future__ import annotations

import errno
import inspect
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT, TINY

from gnnbench.errors import INTERRUPTED
from gnnbench.io import os_error_message
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.training.last_epoch import checkpoint_epochs

MLP = "CSL_graph_classification_MLP_CSL_100k"
SEED_RANGE = "a seed must be an integer from 0 to 4294967295 (2**32 - 1), got {}; pick a seed in that range"


@pytest.fixture(scope="module")
def csl(tmp_path_factory):
    """A small CSL (50 graphs) with a 5-fold split file."""
    root = tmp_path_factory.mktemp("csl")
    generate_dataset("csl", "CSL", {"copies_per_class": 5}, 0, root / "CSL")
    make_split_file(root / "CSL", "stratified_kfold", {"folds": 5, "val_fraction": 0.25, "seed": 0},
                    root / "splits.json")
    return root / "CSL", root / "splits.json"


def gnnbench(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gnnbench.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def gnnbench_here(capsys, *args) -> subprocess.CompletedProcess:
    """The command run in this process (``gnnbench.cli.main``), for errors found before any work starts."""
    from gnnbench.cli import main

    capsys.readouterr()
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, status, out, err)


def assert_one_line(result: subprocess.CompletedProcess, message: str, status: int = 1) -> None:
    """The command failed with ``status`` and printed exactly ``gnnbench: error: <message>`` (nothing else)."""
    assert result.returncode == status, result.stderr[-3000:]
    assert result.stderr.splitlines() == [f"gnnbench: error: {message}"], result.stderr[-3000:]
    assert result.stdout == ""


def train_args(csl, out, *extra) -> list:
    dataset, splits = csl
    return ["train", "benchmarking-gnns", "--dataset", dataset, "--splits", splits, "--preset", MLP, "--set",
            "epochs=1", *extra, "--out", out]


# ------------------------------------------------------------------------------------------------------- seeds


@pytest.mark.parametrize(("command", "seed"), [("generate", 2**32), ("splits", -1), ("train", 99999999999999999999),
                                               ("train-pitfalls", 2**32)])
def test_cli_seed_outside_32_bits_is_refused_before_anything_runs(csl, tmp_path, command, seed):
    out = tmp_path / "out"
    args = {"generate": ["generate", "csl", "--name", "CSL", "--seed", seed, "--out", out],
            "splits": ["splits", csl[0], "--scheme", "stratified_kfold", "--seed", seed, "--out", out],
            "train": train_args(csl, out, "--seed", seed),
            "train-pitfalls": ["train", "pitfalls", "--dataset", csl[0], "--splits", csl[1],
                               "--preset", "pitfalls_GCN", "--seed", seed, "--out", out]}[command]
    assert_one_line(gnnbench(*args), f"--seed: {SEED_RANGE.format(seed)}")
    assert not out.exists()


def test_cli_largest_32_bit_seed_trains(csl, tmp_path):
    result = gnnbench(*train_args(csl, tmp_path / "run", "--seed", 2**32 - 1))
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["config"]["seed"] == 2**32 - 1


# ------------------------------------------------------------------------------------ labels, hyper-parameters


def test_cli_label_that_cannot_be_a_folder_name_is_refused(csl, tmp_path, capsys):
    long = "GCN" + "x" * 297
    assert_one_line(gnnbench_here(capsys, *train_args(csl, tmp_path / "run", "--label", long)),
                    "--label: model label 'GCNxxxxxxxxxxxxxxxxx'... is 300 characters long; it becomes a folder or "
                    "file name: use at most 100 characters")
    assert_one_line(gnnbench_here(capsys, *train_args(csl, tmp_path / "run", "--label", "my/model")),
                    "--label: model label 'my/model' may only hold letters, digits and _ . + - (not first), as it "
                    "becomes a folder or file name; rename it")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("setting", "message"), [
    ("init_lr=.nan", "init_lr must be a finite number, got nan"),
    ("init_lr=inf", "init_lr must be a finite number, got inf"),
    ("init_lr=0", "init_lr must be positive, got 0.0"),
    ("lr_reduce_factor=2", "lr_reduce_factor must be in (0, 1), got 2.0"),
    ("lr_schedule_patience=-1", "lr_schedule_patience must not be negative, got -1"),
])
def test_cli_hyperparameter_out_of_range_is_refused(csl, tmp_path, capsys, setting, message):
    key = setting.split("=")[0]
    assert_one_line(gnnbench_here(capsys, *train_args(csl, tmp_path / "run", "--set", setting)),
                    f"--set.{key}: {message}; fix the value")
    assert not (tmp_path / "run").exists()


# --------------------------------------------------------------------------------------------------- --out


def test_out_naming_a_file_where_a_folder_is_written_leaves_the_file_alone(csl, tmp_path, capsys):
    precious = tmp_path / "notes.txt"
    precious.write_text("my notes\n")
    cases = [
        (["generate", "csl", "--name", "CSL", "--out", precious],
         f"--out {precious} is a file, but generate writes a folder there; give a new or existing folder (the file "
         "was left as it is)"),
        (train_args(csl, precious),
         f"--out {precious} is a file, but train writes a folder there; give a new or existing folder (the file "
         "was left as it is)"),
        (["pe", csl[0], "--k", "3", "--out", precious / "pe.parquet"],
         f"--out {precious / 'pe.parquet'}: {precious} is a file, not a folder; move it away or choose another "
         "--out"),
        (["splits", csl[0], "--scheme", "stratified_kfold", "--out", precious / "splits.json"],
         f"--out {precious / 'splits.json'}: {precious} is a file, not a folder; move it away or choose another "
         "--out"),
        (["aggregate", "benchmarking-gnns", tmp_path / "metrics.json", "--out", precious / "CSL"],
         f"--out {precious / 'CSL'}: {precious} is a file, not a folder; move it away or choose another --out"),
        (["pe", csl[0], "--k", "3", "--out", csl[0]],
         f"--out {csl[0]} is a folder, but pe writes a file there; give a file name (the folder was left as it is)"),
    ]
    before = sorted(p.name for p in csl[0].iterdir())
    for args, message in cases:
        assert_one_line(gnnbench_here(capsys, *args), message)
        assert precious.read_text() == "my notes\n"
    assert sorted(p.name for p in csl[0].iterdir()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_aggregate_prefix_whose_table_is_a_folder_is_refused(tmp_path, capsys):
    (tmp_path / "CSL.md").mkdir()
    assert_one_line(gnnbench_here(capsys, "aggregate", "benchmarking-gnns", tmp_path / "metrics.json", "--out",
                                  tmp_path / "CSL"),
                    f"--out {tmp_path / 'CSL'}: {tmp_path / 'CSL.md'} is a folder, but aggregate writes a file there; "
                    "give a file name (the folder was left as it is)")


# ------------------------------------------------------------------------------------------ unwritable outputs


def test_a_run_folder_whose_checkpoint_cannot_be_written_fails_in_one_line(csl, tmp_path):
    """Fails even for root: a folder stands where the checkpoint file goes (the run folder itself is fine)."""
    run = tmp_path / "run"
    (run / "checkpoint.pt" / "mine").mkdir(parents=True)
    result = gnnbench(*train_args(csl, run))
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.splitlines()[-1] == (f"gnnbench: error: {run / 'checkpoint.pt'}: Is a directory; a folder "
                                              "stands where a file is expected: move it away or choose another "
                                              "location")
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in run.iterdir()) == ["checkpoint.pt"] and (run / "checkpoint.pt" / "mine").is_dir()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder: the permission is not checked")
def test_a_read_only_run_folder_fails_in_one_line_naming_the_file(csl, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    run.chmod(0o555)
    try:
        result = gnnbench(*train_args(csl, run))
    finally:
        run.chmod(0o755)
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.splitlines()[-1] == (f"gnnbench: error: {run / 'checkpoint.pt'}: Permission denied; give "
                                              "yourself access to it (or its folder), or choose another location")
    assert "Traceback" not in result.stderr and list(run.iterdir()) == []


def test_os_errors_name_the_target_not_its_temporary_file_and_unnamed_ones_are_not_masked():
    denied = PermissionError(errno.EACCES, "Permission denied", "/r/tables/.CSL.csv.tmp-host-123")
    assert os_error_message(denied) == ("/r/tables/CSL.csv: Permission denied; give yourself access to it (or its "
                                        "folder), or choose another location")
    full = OSError(errno.ENOSPC, "No space left on device", "/r/.checkpoint.pt.tmp-9", None, "/r/checkpoint.pt")
    assert os_error_message(full) == "/r/checkpoint.pt: No space left on device; free some disk space and rerun"
    assert os_error_message(OSError("a bug, not a path")) is None
    assert os_error_message(OSError(errno.EIO, "Input/output error")) is None


def test_cli_does_not_mask_an_os_error_without_a_file_name(monkeypatch):
    from gnnbench import cli

    def broken(args):
        raise OSError("a bug, not a path")

    monkeypatch.setattr(cli, "_run", broken)
    with pytest.raises(OSError, match="a bug, not a path"):
        cli.main(["presets"])


# ---------------------------------------------------------------------------------- workflow scripts (run_step)


class _Names(dict):
    """Snakemake's named lists: items by name as attributes, ``get``, and positions for ``output[0]``."""

    def __init__(self, *positional, **named):
        super().__init__(named)
        self.positional = list(positional) or list(named.values())

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, key):
        return self.positional[key] if isinstance(key, int) else super().__getitem__(key)

    def __iter__(self):
        return iter(self.positional)


def run_script(script: str, smk: dict, hook: str = "", cwd=None) -> subprocess.CompletedProcess:
    """Run ``workflow/scripts/<script>`` as Snakemake would, with a stand-in ``snakemake`` object built from ``smk``
    (input, output, params, wildcards: dicts; log: list; threads), after the Python statements ``hook``."""
    code = "\n".join([
        "import json, runpy, sys",
        inspect.getsource(_Names),
        hook,
        "smk = json.loads(sys.argv[1])",
        "names = {k: _Names(**smk[k]) for k in ('input', 'output', 'params', 'wildcards')}",
        "snakemake = type('Snakemake', (), {**names, 'log': smk['log'], 'threads': smk['threads']})()",
        f"runpy.run_path({str(REPO_ROOT / 'workflow' / 'scripts' / script)!r}, "
        "init_globals={'snakemake': snakemake}, run_name='__main__')",
    ])
    return subprocess.run([sys.executable, "-c", code, json.dumps(smk)], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_workflow_job_with_an_output_folder_that_is_a_file_fails_in_one_logged_line(csl, tmp_path):
    """The splits job's output folder is a file (as when results/splits cannot be written): one line, status 1."""
    blocker = tmp_path / "splits"
    blocker.write_text("in the way\n")
    log = tmp_path / "splits.log"
    result = run_script("make_splits.py", {
        "input": {"meta": str(csl[0] / "meta.json")}, "output": {"splits": str(blocker / "CSL" / "splits.json"),
                                                                   "leakage": str(blocker / "CSL" / "leakage.json")},
        "params": {"split": {"scheme": "stratified_kfold", "folds": 5, "val_fraction": 0.25, "seed": 0}},
        "wildcards": {}, "log": [str(log)], "threads": 1})
    assert result.returncode == 1, result.stderr[-3000:]
    line = (f"ERROR gnnbench: {blocker} is a file, but a folder is expected there (to hold {blocker / 'CSL'}); move "
            "it away or choose another location")
    assert [x.split(" ", 2)[2] for x in result.stderr.splitlines()] == [line], result.stderr[-3000:]
    assert [x.split(" ", 2)[2] for x in log.read_text().splitlines()] == [line]
    assert blocker.read_text() == "in the way\n"


def test_workflow_job_logs_an_os_error_without_a_file_name_with_its_traceback(tmp_path):
    """Not a path the user can fix, so not one line: the traceback, in the job's log file too."""
    from gnnbench.script_job import job

    log = tmp_path / "job.log"
    with pytest.raises(SystemExit) as exit_, job(types.SimpleNamespace(log=[str(log)], threads=1), torch_threads=False):
        raise OSError("a bug, not a path")
    assert exit_.value.code == 1
    lines = log.read_text().splitlines()
    assert lines[0].split(" ", 2)[2] == "ERROR gnnbench: the job failed: OSError: a bug, not a path"
    assert lines[1] == "Traceback (most recent call last):" and lines[-1] == "OSError: a bug, not a path"


# ------------------------------------------------------------------------------------------------------ Ctrl-C

# SIGINT sent to the process itself when the third training epoch starts (two epochs done and checkpointed):
# deterministic, no clock. The signal's default handler raises KeyboardInterrupt in the main thread.
SIGINT_AT_EPOCH_3 = """
import os, signal
signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own Ctrl-C, even where the test runner's
# process was started in the background (a shell then makes its children ignore SIGINT)
from gnnbench.training import last_epoch as run
_real, _epochs = run.train_epoch, [0]
def _epoch(*args, **kwargs):
    _epochs[0] += 1
    if _epochs[0] == 3:
        os.kill(os.getpid(), signal.SIGINT)
    return _real(*args, **kwargs)
run.train_epoch = _epoch
"""


def test_ctrl_c_during_training_prints_one_line_exits_130_and_keeps_the_checkpoint(csl, tmp_path):
    run = tmp_path / "run"
    args = [str(a) for a in train_args(csl, run)]
    args[args.index("epochs=1")] = "epochs=4"
    code = SIGINT_AT_EPOCH_3 + "import runpy, sys\nsys.argv = ['gnnbench', *sys.argv[1:]]\n" \
        "runpy.run_module('gnnbench.cli', run_name='__main__', alter_sys=True)\n"
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
    assert result.returncode == 130, result.stderr[-3000:]
    assert result.stderr.splitlines()[-1] == f"gnnbench: {INTERRUPTED}"
    assert "Traceback" not in result.stderr and "KeyboardInterrupt" not in result.stderr
    assert checkpoint_epochs(run / "checkpoint.pt") == 2
    assert sorted(p.name for p in run.iterdir()) == ["checkpoint.pt"]  # no metrics yet, no temporary file

    resumed = gnnbench(*args)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming from {run / 'checkpoint.pt'} after epoch 2" in resumed.stderr
    assert json.loads((run / "metrics.json").read_text())["epochs"] == 4


def test_ctrl_c_in_a_workflow_training_job_logs_one_line_and_exits_130(csl, tmp_path):
    run = tmp_path / "runs" / "CSL" / "MLP" / "seed1" / "fold0"
    from gnnbench.config.presets import run_config

    config = run_config(MLP, {"epochs": 4, "seed": 1})
    result = run_script("train.py", {
        "input": {"meta": str(csl[0] / "meta.json"), "splits": str(csl[1])},
        "output": {"metrics": str(run / "metrics.json"), "history": str(run / "history.parquet"),
                   "records": str(tmp_path / "records" / "run.parquet")},
        "params": {"config": config, "device": "cpu"}, "wildcards": {"fold": "0", "model": "MLP"},
        "log": [], "threads": 1}, hook=SIGINT_AT_EPOCH_3)
    assert result.returncode == 130, result.stderr[-3000:]
    assert result.stderr.splitlines()[-1].split(" ", 2)[2] == f"ERROR gnnbench: {INTERRUPTED}"
    assert "Traceback" not in result.stderr
    assert checkpoint_epochs(run / "checkpoint.pt") == 2 and not (run / "metrics.json").exists()


# --------------------------------------------------------------------------------------- Snakemake start-up


def snakemake_with(workdir: Path, suite_text: str, *args) -> subprocess.CompletedProcess:
    (workdir / "suite.yaml").write_text(suite_text)
    return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO_ROOT / "workflow/Snakefile"),
                           "--directory", str(workdir), "--configfile", str(workdir / "suite.yaml"), "--cores", "1",
                           *args], capture_output=True, text=True, timeout=300)


def test_snakemake_refuses_a_seed_outside_32_bits_and_keeps_the_previous_table(tmp_path):
    table = tmp_path / "results" / "tables" / "CSL.csv"
    table.parent.mkdir(parents=True)
    table.write_text("previous table\n")
    suite = json.loads(json.dumps(TINY))
    suite["benchmarks"]["CSL"]["seeds"] = [99999999999999999999]
    result = snakemake_with(tmp_path, yaml.safe_dump(suite))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"gnnbench: error: benchmarks.CSL.seeds.0: {SEED_RANGE.format(99999999999999999999).split(';')[0]}; fix it "
        "(schema: workflow/schemas/config.schema.yaml)"]
    assert table.read_text() == "previous table\n"
    made = [p for p in tmp_path.rglob("*") if p.is_file() and ".snakemake" not in p.parts]
    assert sorted(str(p.relative_to(tmp_path)) for p in made) == ["results/tables/CSL.csv", "suite.yaml"]


def test_snakemake_refuses_a_suite_key_given_twice(tmp_path):
    once = "    seeds:\n    - 1\n"
    text = yaml.safe_dump(TINY, sort_keys=False).replace(once, once + "    seeds: [3]\n", 1)
    lines = text.splitlines()
    first = lines.index("    seeds:") + 1
    assert lines[first + 1] == "    seeds: [3]"
    result = snakemake_with(tmp_path, text, "-n")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"gnnbench: error: config file {tmp_path / 'suite.yaml'}: key 'seeds' is given twice in one mapping (lines "
        f"{first} and {first + 2}), and YAML would silently keep only the last; remove or merge one"]
