"""Ctrl-C of ``gnnbench run`` and of the workflow's jobs (docs/reliability.md, "Ctrl-C").

- ``gnnbench run`` passes signals on to Snakemake and its jobs, which run in a session of their own: one SIGINT
  each, whether Ctrl-C reached the terminal's whole foreground group or ``gnnbench`` alone; a second one, or a
  Snakemake that does not stop in time, kills them and removes the lock they left. Checked against a stand-in
  Snakemake that records the signals it and its job get.
- A real run, interrupted while its training job waits at a chosen point (inside the model's forward: no race
  with a clock), leaves no Snakemake lock and no process; the same command then resumes from the checkpoint and
  ends with the results of an uninterrupted run.
- A job script interrupted while it imports ends with one line and status 130; a job whose code raises an
  exception of its own writes the traceback into the log file Snakemake points to.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO_ROOT
from test_user_errors import run_script

from gnnbench.errors import INTERRUPTED
from gnnbench.training.last_epoch import checkpoint_epochs

ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
# A terminal's signals: Python's own Ctrl-C handling and hang-ups not ignored, even where the test runner was started
# in the background (a shell then makes its children ignore SIGINT) or under nohup (SIGHUP ignored): gnnbench leaves
# an ignored signal ignored
TERMINAL_SIGNALS = ("import signal, sys\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
                    "signal.signal(signal.SIGHUP, signal.SIG_DFL)\n")


def wait_for(condition: Callable[[], bool], proc: subprocess.Popen, what: str) -> None:
    """Until ``condition`` holds (an event the processes cause, not a time); fails if ``proc`` ends first."""
    deadline = time.monotonic() + 120
    while not condition():
        assert proc.poll() is None, f"the process ended (status {proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} after 120 s"
        time.sleep(0.01)


def processes_naming(folder: Path) -> dict[int, str]:
    """The running processes whose command line names ``folder``: their command lines by pid."""
    found = {}
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile
            continue
        if str(folder) in text:
            found[int(cmdline.parent.name)] = text
    return found


@pytest.fixture(autouse=True)
def nothing_left_running(tmp_path):
    """After each test, a failed one too: what it started in its folder is killed, so that no job waits forever."""
    yield
    for pid in processes_naming(tmp_path):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def state(pid: int) -> str:
    """The process's state letter (T: stopped), from /proc/PID/stat."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


# ------------------------------------------------------------------------- run_snakemake, with a stand-in Snakemake

FAKE_SNAKEMAKE = '''
"""Stand-in for Snakemake: takes a lock, starts one job and waits; both append every SIGINT and SIGTERM they get to
ROLE.signals. On one, the job exits, and the stand-in waits for it, removes its lock and exits with 1, as Snakemake
does; "deaf" ignores them (a Snakemake that does not stop)."""
import os, signal, subprocess, sys, time
from pathlib import Path

role, mode = sys.argv[1], sys.argv[2]
stop = []

def note(signum, frame):
    with open(f"{role}.signals", "a") as f:
        f.write(signal.Signals(signum).name + "\\n")
    if not (role == "snakemake" and mode == "deaf"):
        stop.append(signum)

for signum in (signal.SIGINT, signal.SIGTERM):
    signal.signal(signum, note)
lock = Path(".snakemake/locks/0.input.lock")
if role == "snakemake":
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("results/x\\n")
    job = subprocess.Popen([sys.executable, __file__, "job", mode])
    while not Path("job.ready").exists():
        time.sleep(0.01)
Path(f"{role}.ready.part").write_text(str(os.getpid()))
os.replace(f"{role}.ready.part", f"{role}.ready")  # whole or absent: the test reads it the moment it appears
while not stop:
    time.sleep(0.01)
if role == "snakemake":
    job.wait()
    lock.unlink()
sys.exit(1 if role == "snakemake" else 128 + stop[0])
'''

RUN_SNAKEMAKE = TERMINAL_SIGNALS + """from gnnbench import cli
cli.STOP_SECONDS = float(sys.argv[1])
try:
    sys.exit(cli.run_snakemake(sys.argv[2:]))
except KeyboardInterrupt:
    sys.exit(130)
"""


def start_fake(folder: Path, mode: str = "obeys", stop_seconds: float = 30) -> tuple[subprocess.Popen, int, int]:
    """``run_snakemake`` on the stand-in in ``folder``, in a process group of its own (as a shell starts a command),
    once the stand-in and its job are ready: (gnnbench's process, the stand-in's pid, its job's pid)."""
    (folder / "fake_snakemake.py").write_text(FAKE_SNAKEMAKE)
    proc = subprocess.Popen([sys.executable, "-c", RUN_SNAKEMAKE, str(stop_seconds), sys.executable,
                             str(folder / "fake_snakemake.py"), "snakemake", mode], cwd=folder, env=ENV,
                            start_new_session=True)
    wait_for(lambda: (folder / "snakemake.ready").exists(), proc, "the stand-in's start")
    return proc, int((folder / "snakemake.ready").read_text()), int((folder / "job.ready").read_text())


def received(folder: Path, role: str) -> list[str]:
    path = folder / f"{role}.signals"
    return path.read_text().split() if path.exists() else []


def gone(pid: int) -> bool:
    """The process ended (a zombie has ended: its parent, gone, did not collect it)."""
    try:
        return state(pid) == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("to", ["the foreground group", "gnnbench alone"])
def test_ctrl_c_reaches_snakemake_and_its_job_once_and_gnnbench_waits_for_them(tmp_path, to):
    proc, snakemake, job = start_fake(tmp_path)
    if to == "the foreground group":  # what a terminal's Ctrl-C does
        os.killpg(proc.pid, signal.SIGINT)
    else:  # kill -INT PID
        os.kill(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert received(tmp_path, "snakemake") == ["SIGINT"] and received(tmp_path, "job") == ["SIGINT"]
    assert gone(snakemake) and gone(job)
    assert not (tmp_path / ".snakemake" / "locks" / "0.input.lock").exists()  # removed by the stand-in itself


@pytest.mark.parametrize("sent, relayed, status", [(signal.SIGHUP, "SIGINT", 130), (signal.SIGTERM, "SIGTERM", 1)])
def test_a_hang_up_stops_the_run_as_ctrl_c_does_and_sigterm_is_passed_on(tmp_path, sent, relayed, status):
    proc, snakemake, job = start_fake(tmp_path)
    os.kill(proc.pid, sent)
    assert proc.wait(timeout=60) == status  # SIGTERM: Snakemake's status
    assert received(tmp_path, "snakemake") == [relayed] and received(tmp_path, "job") == [relayed]
    assert gone(snakemake) and gone(job)


@pytest.mark.parametrize("then", ["a second Ctrl-C", "the time limit"])
def test_a_snakemake_that_does_not_stop_is_killed_with_its_job_and_only_its_lock_removed(tmp_path, then):
    other = tmp_path / ".snakemake" / "locks" / "7.output.lock"  # another Snakemake's, on other files
    other.parent.mkdir(parents=True)
    other.write_text("elsewhere/y\n")
    proc, snakemake, job = start_fake(tmp_path, "deaf", stop_seconds=1 if then == "the time limit" else 600)
    os.killpg(proc.pid, signal.SIGINT)
    if then == "a second Ctrl-C":
        wait_for(lambda: received(tmp_path, "snakemake") == ["SIGINT"], proc, "the first SIGINT's arrival")
        os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert received(tmp_path, "snakemake") == ["SIGINT"]  # one SIGINT, then SIGKILL
    assert gone(snakemake) and gone(job)
    assert [p.name for p in other.parent.iterdir()] == ["7.output.lock"]


def test_ctrl_z_stops_snakemake_and_its_job_with_gnnbench_and_fg_continues_them(tmp_path):
    proc, snakemake, job = start_fake(tmp_path)
    os.killpg(proc.pid, signal.SIGTSTP)  # Ctrl-Z
    wait_for(lambda: [state(p) for p in (proc.pid, snakemake, job)] == ["T", "T", "T"], proc, "all three stopped")
    os.killpg(proc.pid, signal.SIGCONT)  # fg or bg
    wait_for(lambda: "T" not in [state(p) for p in (proc.pid, snakemake, job)], proc, "all three continued")
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert received(tmp_path, "snakemake") == ["SIGINT"] and received(tmp_path, "job") == ["SIGINT"]


# ------------------------------------------------------------------------------------------- a real gnnbench run

MODEL = '''
"""One linear layer, which a test can stop inside a training job: with PAUSE_FILE set (and absent), the third
training forward — two epochs done and checkpointed, one batch an epoch — creates PAUSE_FILE and waits there for
the test's signal, ignoring SIGINT with PAUSE_DEAF set; with FAIL set, a training forward raises ValueError."""
import os
import signal
import time
from pathlib import Path

import torch
from torch import nn

forwards = 0


class Mine(nn.Module):
    def __init__(self, in_channels: int, hidden_channels: int):
        super().__init__()
        self.lin = nn.Linear(in_channels, hidden_channels)

    def forward(self, x, edge_index):
        if self.training:  # in the job (the check at suite load runs in eval mode)
            training_forward()
        return torch.relu(self.lin(x))


def training_forward():
    global forwards
    forwards += 1
    if os.environ.get("FAIL"):
        raise ValueError("the model's own bug")
    pause = os.environ.get("PAUSE_FILE")
    if forwards == 3 and pause and not Path(pause).exists():
        Path(pause).write_text(str(os.getpid()))
        if os.environ.get("PAUSE_DEAF"):
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        while True:
            time.sleep(0.01)
'''
SUITE = {"threads_per_run": 1,
         "datasets": {"CSL": {"generator": "csl", "seed": 2, "params": {"copies_per_class": 5}}},
         "benchmarks": {"CSL": {"seeds": [1], "folds": [0], "set": {"epochs": 5, "batch_size": 64},
                                "models": {"Mine": {"model": "mine.py:Mine", "set": {"hidden_channels": 8}}}}}}
RUN = Path("results/runs/CSL/Mine/seed1/fold0")
JOB_LOG = Path("results/logs/train/CSL/Mine/seed1/fold0.log")
GNNBENCH_RUN = TERMINAL_SIGNALS + "from gnnbench.cli import main\nsys.exit(main())\n"


def project(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "suite.yaml").write_text(yaml.safe_dump(SUITE))
    (folder / "mine.py").write_text(MODEL)
    return folder


def gnnbench_run(folder: Path, **env: str) -> subprocess.Popen:
    """``gnnbench run suite.yaml --cores 2`` (the training run and what it needs) in ``folder``, in a process group of
    its own, as a shell starts a command; its output goes to ``folder``/output.txt."""
    return subprocess.Popen([sys.executable, "-c", GNNBENCH_RUN, "run", "suite.yaml", "--cores", "2",
                             str(RUN / "metrics.json")], cwd=folder, env={**ENV, **env}, start_new_session=True,
                            stdout=(folder / "output.txt").open("w"), stderr=subprocess.STDOUT)


def outcome(proc: subprocess.Popen, folder: Path) -> tuple[int, str]:
    """The run's exit status and output."""
    return proc.wait(timeout=300), (folder / "output.txt").read_text()


def scores(folder: Path) -> dict:
    metrics = json.loads((folder / RUN / "metrics.json").read_text())
    return {k: metrics[k] for k in ("train", "val", "test", "epochs", "stop_reason")}


def history(folder: Path) -> pd.DataFrame:
    frame = pd.read_parquet(folder / RUN / "history.parquet")
    return frame.drop(columns=[c for c in frame.columns if c == "seconds"])


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    folder = project(tmp_path_factory.mktemp("uninterrupted"))
    status, output = outcome(gnnbench_run(folder), folder)
    assert status == 0, output[-3000:]
    return folder


def interrupted_then_rerun(folder: Path, interrupt: Callable[[subprocess.Popen], None], **env: str) -> str:
    """Runs the suite, ``interrupt``s it once its training job waits after two epochs, checks that nothing is left
    running or locked, and runs the same command again, which resumes the training run: the interrupted job's log."""
    env = {"PAUSE_FILE": str(folder / "paused"), **env}
    proc = gnnbench_run(folder, **env)
    wait_for(lambda: (folder / "paused").exists(), proc, "the training job's pause")
    interrupt(proc)
    status, output = outcome(proc, folder)
    assert status == 130, output[-3000:]
    assert output.splitlines()[-1] == f"gnnbench: {INTERRUPTED}"
    assert not list((folder / ".snakemake" / "locks").glob("*")), "Snakemake's lock is left"
    assert processes_naming(folder) == {}  # no job (or Snakemake) left running
    assert checkpoint_epochs(folder / RUN / "checkpoint.pt") == 2 and not (folder / RUN / "metrics.json").exists()
    job_log = (folder / JOB_LOG).read_text()

    status, output = outcome(gnnbench_run(folder, **env), folder)  # the same command, nothing added
    assert status == 0, output[-3000:]
    assert f"resuming from {RUN / 'checkpoint.pt'} after epoch 2" in output
    trained = [line.split("epoch ")[1].split()[0] for line in (folder / JOB_LOG).read_text().splitlines()
               if "gnnbench.training.last_epoch: epoch " in line]
    assert trained == ["2", "3", "4"]  # the two epochs before the interruption are not trained again
    assert not list((folder / ".snakemake" / "incomplete").glob("*"))  # nothing left marked incomplete
    return job_log


@pytest.mark.slow
@pytest.mark.parametrize("to", ["the foreground group", "gnnbench alone"])
def test_an_interrupted_run_leaves_no_lock_and_no_job_and_the_same_command_resumes_it(tmp_path, uninterrupted, to):
    folder = project(tmp_path / "project")

    def ctrl_c(proc):
        if to == "the foreground group":  # the terminal's Ctrl-C: gnnbench's process group
            os.killpg(proc.pid, signal.SIGINT)
        else:  # kill -INT PID
            os.kill(proc.pid, signal.SIGINT)

    job_log = interrupted_then_rerun(folder, ctrl_c)
    assert job_log.splitlines()[-1].split(" ", 2)[2] == f"ERROR gnnbench: {INTERRUPTED}" and "Traceback" not in job_log
    assert scores(folder) == scores(uninterrupted)
    pd.testing.assert_frame_equal(history(folder), history(uninterrupted))


@pytest.mark.slow
def test_a_second_ctrl_c_kills_a_job_that_does_not_stop_and_removes_snakemakes_lock(tmp_path, uninterrupted):
    folder = project(tmp_path / "project")

    def ctrl_c_twice(proc):
        os.killpg(proc.pid, signal.SIGINT)
        wait_for(lambda: "Terminating processes on user request" in (folder / "output.txt").read_text(), proc,
                 "Snakemake's reply to the first Ctrl-C")  # it now waits for the job, which ignores SIGINT
        os.killpg(proc.pid, signal.SIGINT)

    interrupted_then_rerun(folder, ctrl_c_twice, PAUSE_DEAF="1")
    assert scores(folder) == scores(uninterrupted)


@pytest.mark.slow
def test_an_exception_from_the_users_model_is_in_the_jobs_log_with_its_traceback(tmp_path):
    folder = project(tmp_path / "project")
    status, output = outcome(gnnbench_run(folder, FAIL="1"), folder)
    assert status == 1, output[-3000:]
    assert f"log: {JOB_LOG} (check log file(s) for error details)" in output
    lines = (folder / JOB_LOG).read_text().splitlines()
    errors = [i for i, line in enumerate(lines) if " ERROR " in line]
    assert errors, f"no error in the job's log:\n{chr(10).join(lines)}"
    first = errors[0]
    assert lines[first].split(" ", 2)[2] == "ERROR gnnbench: the job failed: ValueError: the model's own bug"
    assert lines[first + 1] == "Traceback (most recent call last):"
    line = MODEL.splitlines().index('        raise ValueError("the model\'s own bug")') + 1
    assert f'  File "{folder / "mine.py"}", line {line}, in training_forward' in lines[first:]
    assert lines[-1] == "ValueError: the model's own bug"
    assert not (folder / RUN / "metrics.json").exists()


# ------------------------------------------------------------------------------------------ a job's start-up

# Ctrl-C the moment the script imports one of gnnbench's modules or torch (what takes a job's start-up its time):
# an import hook sends SIGINT, deterministically, from inside the import. gnnbench.script_job is imported before, as
# the first line of every script imports it.
SIGINT_ON_IMPORT = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import gnnbench.script_job


class SigintOnImport:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in ("gnnbench", "torch"):
            sys.meta_path.remove(SigintOnImport)
            os.kill(os.getpid(), signal.SIGINT)
        return None


sys.meta_path.insert(0, SigintOnImport)
"""
SCRIPTS = sorted(p.name for p in (REPO_ROOT / "workflow" / "scripts").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_ctrl_c_while_a_job_script_imports_ends_it_with_one_line_and_status_130(script, tmp_path):
    log = tmp_path / "job.log"
    result = run_script(script, {"input": {}, "output": {}, "params": {}, "wildcards": {}, "log": [str(log)],
                                 "threads": 1}, hook=SIGINT_ON_IMPORT)
    assert result.returncode == 130, result.stderr[-3000:]
    line = f"ERROR gnnbench: {INTERRUPTED}"
    assert [x.split(" ", 2)[2] for x in result.stderr.splitlines()] == [line]
    assert [x.split(" ", 2)[2] for x in log.read_text().splitlines()] == [line]
