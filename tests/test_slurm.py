"""The workflow on a real SLURM cluster through ``--profile workflow/profiles/slurm``, and the profiles themselves.

Needs a single-node SLURM on localhost with accounting (sacct) and one (fake) GPU gres: ``tools/slurm/slurm_up.sh
dbd gpu`` (root, Debian; ``.ci/run`` starts it and sets GNNBENCH_REQUIRE_SLURM=1, so there a missing cluster fails
the test instead of skipping it).

What runs: the default suite (config/config.yaml) cut down to its CSL benchmark with seed 14, folds 0 and 1, models
GCN-PE and GCN, 2 epochs of a 2-layer width-16 network, CSL at 5 graphs per class, every training run asking for
one GPU (``resources.train.gpus: 1``), through ``tests/slurm/Snakefile`` (the workflow plus a rule that fails on its
first attempt). Jobs: dataset, laplacian_pe, splits, one group job of the 4 training runs (the profile's
``train_runs`` group), aggregate, and flaky_once twice. The same suite also runs locally (``--cores 2``) to compare.

Snakemake runs under ``timeout -s INT -k 30`` in its own process group, which is killed outright if it outlives
that; SLURM jobs left behind in the test's working directory are cancelled.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]


PROFILE = REPO_ROOT / "workflow" / "profiles" / "slurm"
TEST_SNAKEFILE = REPO_ROOT / "tests" / "slurm" / "Snakefile"
SNAKEMAKE_TIMEOUT = 420  # seconds; ~2-3 min expected
RUNS = [f"CSL/{model}/seed14/fold{fold}" for model in ("GCN-PE", "GCN") for fold in (0, 1)]


def tiny_default_suite() -> dict:
    """config/config.yaml reduced to a few seconds of work, every training run asking for a GPU."""
    config = yaml.safe_load((REPO_ROOT / "config" / "config.yaml").read_text())
    csl = config["benchmarks"]["CSL"]
    csl.pop("seeds_per_job", None)  # one job per training run, as the group job checks below expect
    config["datasets"] = {"CSL": {**config["datasets"]["CSL"], "params": {"copies_per_class": 5}}}
    config["benchmarks"] = {"CSL": {
        **csl, "seeds": [14], "folds": [0, 1],
        "set": {**csl.get("set", {}), "epochs": 2, "L": 2, "hidden_dim": 16, "out_dim": 16, "batch_size": 16},
        "models": {label: csl["models"][label] for label in ("GCN-PE", "GCN")}}}
    small = {"mem_mb": 500, "runtime": 10}
    config["resources"] = {"train": {**small, "cpus": 1, "gpus": 1, "gpu_model": "fake"}, "dataset": small,
                           "features": small}
    return config


def _run(command: list[str], timeout: float, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run in a new session; if ``timeout`` (the inner `timeout -k` failed) passes, SIGKILL the whole group."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True, env=None if env is None else {**os.environ, **env})
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        output += f"\n[test] killed after {timeout} s"
    return subprocess.CompletedProcess(command, process.returncode, output)


def _slurm_problem() -> str | None:
    if shutil.which("sbatch") is None:
        return "no SLURM commands (sbatch) on PATH"
    try:
        state = subprocess.run(["sinfo", "-h", "-o", "%t %G"], capture_output=True, text=True, timeout=20)
        sacct = subprocess.run(["sacct", "-X", "-n", "-P", "--format=JobID"], capture_output=True, text=True,
                               timeout=20)
    except subprocess.TimeoutExpired:
        return "SLURM does not answer (sinfo/sacct timed out)"
    if state.returncode != 0 or not re.search(r"^(idle|mix|alloc)", state.stdout, re.M):
        return f"no SLURM node up (sinfo: {(state.stdout + state.stderr).strip()[:200]})"
    if "gpu" not in state.stdout:
        return "the SLURM node has no GPU gres"
    if sacct.returncode != 0:
        return f"sacct does not work (no slurmdbd?): {sacct.stderr.strip()[:200]}"
    return None


@pytest.fixture(scope="module")
def cluster():
    """Skip (or, with ``GNNBENCH_REQUIRE_SLURM=1``, fail) when no usable SLURM cluster answers."""
    problem = _slurm_problem()
    if problem:
        message = f"{problem}; start a local cluster with `tools/slurm/slurm_up.sh dbd gpu` (root, Debian)"
        if os.environ.get("GNNBENCH_REQUIRE_SLURM") == "1":
            pytest.fail(f"GNNBENCH_REQUIRE_SLURM=1 but {message}")
        pytest.skip(message)


def _cancel_jobs_in(workdir: Path) -> None:
    listing = subprocess.run(["squeue", "-h", "-o", "%i %Z"], capture_output=True, text=True, timeout=30)
    ids = [line.split()[0] for line in listing.stdout.splitlines() if line.split()[1:] == [str(workdir)]]
    if ids:
        subprocess.run(["scancel", *ids], timeout=30)


def _scores(path: Path) -> dict:
    metrics = json.loads(path.read_text())
    return {k: metrics[k] for k in ("train", "val", "test", "epochs", "stop_reason", "num_params", "config")}


@pytest.fixture(scope="module")
def slurm_run(cluster, tmp_path_factory):
    """The tiny suite run once locally and once through the SLURM profile; the outputs, the Snakemake result and this
    run's jobs as ``sacct`` lists them."""
    suite = tiny_default_suite()
    local, remote = tmp_path_factory.mktemp("local"), tmp_path_factory.mktemp("slurm")
    for workdir in (local, remote):
        (workdir / "suite.yaml").write_text(yaml.safe_dump(suite))
    base = [sys.executable, "-m", "snakemake", "-s", str(TEST_SNAKEFILE)]
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    local_run = _run([*base, "all", "--directory", str(local), "--configfile", str(local / "suite.yaml"),
                      "--cores", "2"], timeout=300)
    assert local_run.returncode == 0, local_run.stdout[-3000:]
    begin = time.perf_counter()
    try:
        result = _run(["timeout", "-s", "INT", "-k", "30", str(SNAKEMAKE_TIMEOUT), *base, "all", "results/flaky.txt",
                       "--directory", str(remote), "--configfile", str(remote / "suite.yaml"), "--profile",
                       str(PROFILE), "--verbose", "--slurm-keep-successful-logs",
                       "--slurm-init-seconds-before-status-checks", "2",
                       "--default-resources", "mem_mb=500", "runtime=10", "slurm_account=root"],
                      timeout=SNAKEMAKE_TIMEOUT + 60)
    finally:
        _cancel_jobs_in(remote)
    seconds = time.perf_counter() - begin
    sacct = subprocess.run(["sacct", "-X", "-P", "-n", "--starttime", started, "--format=JobID,Comment,State,"
                            "ExitCode,ReqTRES,WorkDir"], capture_output=True, text=True, timeout=30)
    jobs = [dict(zip(("id", "comment", "state", "exit", "tres", "workdir"), line.split("|"), strict=True))
            for line in sacct.stdout.splitlines()]
    print(f"SLURM workflow: {seconds:.0f} s")
    return {"local": local, "remote": remote, "result": result, "seconds": seconds,
            "jobs": [j for j in jobs if j["workdir"] == str(remote)]}


@pytest.mark.slow
def test_workflow_completes_through_the_slurm_profile(slurm_run):
    result = slurm_run["result"]
    assert result.returncode == 0, result.stdout[-5000:]
    for run in RUNS:
        assert (slurm_run["remote"] / "results" / "runs" / run / "metrics.json").is_file()
    assert (slurm_run["remote"] / "results" / "tables" / "CSL.md").is_file()


@pytest.mark.slow
def test_every_job_ran_as_a_slurm_job(slurm_run):
    rules = sorted(re.sub(r"_wildcards_.*", "", j["comment"]) for j in slurm_run["jobs"])
    # one SLURM job per rule job; the 4 training runs share one group job; flaky_once ran twice; the report job
    # (tables_CSL) is a local rule: it trains nothing and runs on the submitting machine
    assert rules == ["rule_dataset", "rule_flaky_once", "rule_flaky_once", "rule_laplacian_pe",
                     "rule_splits", "rule_train_runs_train"], slurm_run["jobs"]
    group_logs = list((slurm_run["remote"] / ".snakemake" / "slurm_logs").glob("group_train_runs*/*.log"))
    assert len(group_logs) == 1
    log = group_logs[0].read_text()
    for run in RUNS:  # the group job's Snakemake ran all four training jobs
        dataset, model, seed, fold = run.split("/")
        assert re.search(rf"wildcards: dataset={dataset}, model={re.escape(model)}, seed={seed[4:]}, "
                         rf"fold={fold[4:]}", log), log[-3000:]


@pytest.mark.slow
def test_slurm_results_equal_the_local_run(slurm_run):
    for run in RUNS:
        local = _scores(slurm_run["local"] / "results" / "runs" / run / "metrics.json")
        assert _scores(slurm_run["remote"] / "results" / "runs" / run / "metrics.json") == local, run
    drop = re.compile(r"(hours|seconds|s/epoch|time)", re.I)
    tables = [[line for line in (d / "results" / "tables" / "CSL.csv").read_text().splitlines()]
              for d in (slurm_run["local"], slurm_run["remote"])]
    header = tables[0][0].split(",")
    keep = [i for i, name in enumerate(header) if not drop.search(name)]
    assert [[row.split(",")[i] for i in keep] for row in tables[0]] == [
        [row.split(",")[i] for i in keep] for row in tables[1]]


@pytest.mark.slow
def test_a_failed_job_is_retried_and_then_succeeds(slurm_run):
    flaky = [j for j in slurm_run["jobs"] if j["comment"].startswith("rule_flaky_once")]
    flaky.sort(key=lambda j: int(j["id"]))
    assert [j["state"] for j in flaky] == ["FAILED", "COMPLETED"] and flaky[0]["exit"] != "0:0", flaky
    first_log = slurm_run["remote"] / ".snakemake" / "slurm_logs" / "rule_flaky_once" / f"{flaky[0]['id']}.log"
    assert "flaky_once: failing on purpose (attempt 1)" in first_log.read_text()
    assert (slurm_run["remote"] / "results" / "flaky.txt").read_text().startswith("attempt=2 ")


@pytest.mark.slow
def test_the_gpu_request_reaches_sbatch(slurm_run):
    calls = re.findall(r"^sbatch call: (.*)$", slurm_run["result"].stdout, re.M)
    train = [c for c in calls if "--comment rule_train_runs_train" in c]
    assert len(train) == 1 and " --gpus=fake:1 " in train[0], train
    assert not [c for c in calls if "--gpus" in c and c not in train]
    tres = {j["comment"].split("_wildcards")[0]: j["tres"] for j in slurm_run["jobs"]}
    assert "gres/gpu=1" in tres["rule_train_runs_train"] and "gres/gpu" not in tres["rule_dataset"]


# ------------------------------------------------------------------------------------ jobs sized to the nodes


def _largest_node() -> tuple[int, int]:
    """CPUs and memory (MB) of the local cluster's largest node."""
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%c %m"], capture_output=True, text=True, timeout=30).stdout
    return max(tuple(int(v.rstrip("+")) for v in line.split()) for line in out.splitlines())


def cpu_only_suite(runs: int, cpus: int = 1) -> dict:
    """The tiny suite with ``runs`` CPU-only GCN runs (no PE stage): more one-CPU runs than the node has CPUs."""
    suite = tiny_default_suite()
    csl = suite["benchmarks"]["CSL"]
    folds = min(runs, 5)  # CSL has 5 folds
    suite["benchmarks"]["CSL"] = {**csl, "seeds": list(range(14, 14 + -(-runs // folds))),
                                  "folds": list(range(folds)), "models": {"GCN": csl["models"]["GCN"]}}
    suite["resources"]["train"] = {"mem_mb": 500, "runtime": 10, "cpus": cpus, "gpus": 0}
    return suite


def _slurm_snakemake(workdir: Path, *args: str, env: dict | None = None, timeout: int = SNAKEMAKE_TIMEOUT):
    """The real Snakefile on ``workdir``'s suite.yaml through the slurm profile; jobs left behind are cancelled."""
    try:
        return _run(["timeout", "-s", "INT", "-k", "30", str(timeout), sys.executable, "-m", "snakemake", *args,
                     "-s", str(REPO_ROOT / "workflow/Snakefile"), "--directory", str(workdir), "--configfile",
                     str(workdir / "suite.yaml"), "--profile", str(PROFILE), "--verbose",
                     "--slurm-init-seconds-before-status-checks", "2",
                     "--default-resources", "mem_mb=500", "runtime=10", "slurm_account=root"],
                    timeout=timeout + 60, env=env)
    finally:
        _cancel_jobs_in(workdir)


@pytest.fixture(scope="module")
def fitted_run(slurm_run, tmp_path_factory):
    """At least ``cpus + 1`` one-CPU runs in one group job; the dataset and splits come from ``slurm_run`` (same suite
    there), so only the group job runs."""
    cpus, mem = _largest_node()
    workdir = tmp_path_factory.mktemp("fitted")
    for stage in ("datasets", "splits"):
        shutil.copytree(slurm_run["remote"] / "results" / stage, workdir / "results" / stage)
    suite = cpu_only_suite(runs=cpus + 1)
    (workdir / "suite.yaml").write_text(yaml.safe_dump(suite))
    targets = [f"results/runs/{r['dataset']}/{r['model']}/seed{r['seed']}/fold{r['fold']}/metrics.json"
               for r in _planned_runs(suite)]
    result = _slurm_snakemake(workdir, *targets)
    return {"workdir": workdir, "result": result, "cpus": cpus, "mem": mem, "targets": targets}


def _planned_runs(suite: dict) -> list[dict]:
    from gnnbench.suite import load_suite

    return load_suite(suite).runs()


@pytest.mark.slow
def test_a_group_job_is_sized_to_fit_the_largest_node(fitted_run):
    """More one-CPU runs than the node has CPUs, grouped: without sizing the group job would ask for cpus + 1 CPUs
    (the profile allows 8) and pend for ever (reason PartitionConfig); sized, it asks for the node's CPUs, trains
    the runs in waves and completes."""
    result, cpus, mem = fitted_run["result"], fitted_run["cpus"], fitted_run["mem"]
    assert result.returncode == 0, result.stdout[-5000:]
    assert "SLURM group jobs sized to fit node" in result.stdout
    for target in fitted_run["targets"]:
        assert (fitted_run["workdir"] / target).is_file(), target
    [group] = [c for c in re.findall(r"^sbatch call: (.*)$", result.stdout, re.M) if "rule_train_runs_train" in c]
    assert f" --cpus-per-task={cpus} " in group, group  # all the node has, no more
    assert int(re.search(r" --mem (\d+) ", group)[1]) <= mem
    runs = len(fitted_run["targets"])
    assert runs > cpus and int(re.search(r" -t (\d+) ", group)[1]) == 10 * -(-runs // cpus)  # runtime x waves
    assert len(re.findall(r"^sbatch call: ", result.stdout, re.M)) == 1  # dataset, splits were there: one job
    assert re.search(rf"--cores {cpus}\b", group), group  # the group job's Snakemake uses what it was given


@pytest.mark.slow
def test_a_rule_asking_for_more_cpus_than_any_node_is_a_one_line_error(cluster, tmp_path):
    cpus, _ = _largest_node()
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(cpu_only_suite(runs=2, cpus=cpus + 1)))
    result = _slurm_snakemake(tmp_path, timeout=120)
    assert result.returncode != 0
    errors = [line for line in result.stdout.splitlines() if line.startswith("gnnbench: error:")]
    assert len(errors) == 1, result.stdout[-3000:]
    assert f"resources.train.cpus: a train job asks for {cpus + 1} CPUs but the largest node" in errors[0]
    assert f"has {cpus}; ask for {cpus} or fewer" in errors[0] and "Traceback" not in result.stdout
    assert "sbatch call" not in result.stdout  # nothing was submitted


@pytest.mark.slow
def test_a_job_that_can_never_start_stops_the_run_with_one_line(fitted_run, tmp_path):
    """A request the sizing cannot see (here: more tasks than the node has CPUs) pends with reason PartitionConfig;
    the watchdog cancels it, says why and stops the run instead of leaving Snakemake waiting for ever."""
    workdir = tmp_path / "w"
    shutil.copytree(fitted_run["workdir"], workdir, ignore=shutil.ignore_patterns(".snakemake"))
    begin = time.perf_counter()
    result = _slurm_snakemake(workdir, fitted_run["targets"][0], "--forcerun", "train", "--retries", "0",
                              "--set-resources", f"train:tasks={fitted_run['cpus'] + 1}",
                              env={"GNNBENCH_SLURM_WATCH_SECONDS": "2"}, timeout=180)
    assert result.returncode != 0 and time.perf_counter() - begin < 150, result.stdout[-3000:]
    assert re.search(r"^gnnbench: error: SLURM job \d+ \(rule_train_runs_train\) can never start: it is pending "
                     r"with reason PartitionConfig", result.stdout, re.M), result.stdout[-3000:]
    assert not (workdir / ".snakemake" / "locks").exists() or not any((workdir / ".snakemake" / "locks").iterdir())


def test_requests_are_checked_against_the_nodes_of_their_partition():
    from gnnbench.errors import ConfigError
    from gnnbench.slurm import Node, check_requests, largest_node

    nodes = [Node("a", ("cpu",), 2, 4000), Node("b", ("cpu", "big"), 32, 256000), Node("c", ("cpu",), 8, 64000)]
    assert largest_node(nodes, "cpu").name == "b" and largest_node(nodes, None).name == "b"
    check_requests({"train": {"threads": 32, "mem_mb": 1000, "slurm_partition": "big"}}, nodes, "cpu")
    with pytest.raises(ConfigError, match=r"^resources\.dataset\.mem_mb: a dataset job asks for 300000 MB but the "
                                          r"largest node of SLURM partition 'cpu' \(b\) has 256000 MB"):
        check_requests({"dataset": {"threads": 1, "mem_mb": 300000}}, nodes, "cpu")
    with pytest.raises(ConfigError, match=r"^rule aggregate \(threads\): .* --set-threads aggregate=32\)$"):
        check_requests({"aggregate": {"threads": 64, "mem_mb": None}}, nodes, None)
    with pytest.raises(ConfigError, match="slurm_partition: SLURM has no partition 'gpu'"):
        check_requests({"train": {"threads": 1, "slurm_partition": "gpu"}}, nodes, "cpu")


# ------------------------------------------------------------------------------------------------ profiles


def _snakemake_options() -> str:
    return subprocess.run([sys.executable, "-m", "snakemake", "--help"], capture_output=True, text=True,
                          timeout=120).stdout


@pytest.mark.parametrize("name", ["slurm", "local"])
def test_profile_keys_are_options_snakemake_accepts(name):
    profile = yaml.safe_load((REPO_ROOT / "workflow" / "profiles" / name / "config.yaml").read_text())
    options = set(re.findall(r"--[a-z0-9-]+", _snakemake_options()))
    assert set(f"--{key}" for key in profile) <= options, set(f"--{key}" for key in profile) - options
    if name == "slurm":
        assert profile["executor"] == "slurm" and profile["retries"] >= 1
        assert "--slurm-init-seconds-before-status-checks" in options  # the plugin is installed


@pytest.mark.slow
def test_slurm_profile_dry_run_needs_no_cluster(tmp_path):
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(tiny_default_suite()))
    result = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO_ROOT / "workflow/Snakefile"),
                             "--directory", str(tmp_path), "--configfile", str(tmp_path / "suite.yaml"), "--profile",
                             str(PROFILE), "-n"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert re.search(r"^train\s+4$", result.stdout, re.M), result.stdout[-2000:]


@pytest.mark.slow
def test_the_default_suite_plans_under_the_slurm_profile(tmp_path):
    """Every protocol of config/config.yaml under the profile's groups: fair-comparison's final runs depend on its
    inner runs through fc_select, so the two may not share a group (Snakemake: "Group ... depends on itself")."""
    result = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO_ROOT / "workflow/Snakefile"),
                             "--directory", str(tmp_path), "--profile", str(PROFILE), "-n"], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for rule in ("train_seeds_CSL_GCN", "train_inits", "fc_inner", "fc_final"):  # P1: seeds grouped into jobs
        assert re.search(rf"^{rule}\s+\d+$", result.stdout, re.M), rule
