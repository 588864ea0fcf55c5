"""Fit the workflow's SLURM jobs to the cluster it is submitted to, and never wait on a job that cannot start.

Under ``--profile workflow/profiles/slurm`` a group job asks for up to the profile's ``cores`` CPUs and the summed
memory of the runs it trains side by side. A request larger than every node of the partition is not refused by
SLURM: the job pends for ever (reason ``PartitionConfig``) and Snakemake waits on it. At the start of a SLURM run
(:func:`fit_to_cluster`, the Snakefile's ``onstart``) gnnbench therefore

* reads the partition's nodes (``sinfo``) and fails at once, with a one-line error naming the config key, when one
  rule's own request (threads, ``mem_mb``) is larger than every node;
* caps the CPUs and memory a group job may pack to the largest node (Snakemake's ``--cores`` and a ``mem_mb``
  limit, which size group jobs; the group job's inner Snakemake gets the same ``--cores``), so a group of 16
  one-CPU runs asks for 2 CPUs on 2-CPU nodes and trains its runs in 8 waves;
* starts a watchdog thread that, every 30 s (``GNNBENCH_SLURM_WATCH_SECONDS``), cancels a job of this run pending
  with a reason that never clears by itself (``PartitionConfig``, ``PartitionTimeLimit``, ...; :data:`NEVER_STARTS`),
  logs one line naming it and stops the run as Ctrl-C does (snakemake-executor-plugin-slurm 2.8.0 reads sacct's
  ``CANCELLED by <uid>`` as "still running", so a cancelled job alone would leave Snakemake waiting for ever), and
  warns once about a job held back by unavailable nodes (``ReqNodeNotAvail``, ``PartitionDown``, ...), which may
  still start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from gnnbench.errors import ConfigError

# rule -> the suite's `resources` stage that sizes it (the key named in errors)
RULE_STAGES = {"train": "train", "train_inits": "train", "fc_inner": "train", "fc_final": "train",
               "tune_round": "train", "dataset": "dataset", "dataset_from_shards": "dataset",
               "label_shard": "label_shard", "laplacian_pe": "features"}
# squeue pending reasons that no amount of waiting clears: the request exceeds a partition / QOS / association
# limit on one job, or names something that does not exist
NEVER_STARTS = ("PartitionConfig", "PartitionTimeLimit", "PartitionNodeLimit", "BadConstraints", "InvalidAccount",
                "InvalidQOS", "QOSMaxCpuPerJobLimit", "QOSMaxMemoryPerJob", "QOSMaxWallDurationPerJobLimit",
                "QOSMaxNodePerJobLimit", "QOSMaxGRESPerJob", "AssocMaxCpuPerJobLimit", "AssocMaxMemPerJobLimit",
                "AssocMaxWallDurationPerJobLimit", "AssocMaxNodesPerJobLimit", "AssocMaxGRESPerJob")
# reasons that depend on the state of nodes or partitions: may clear, but worth a line in the log
MAY_NEVER_START = ("ReqNodeNotAvail", "PartitionDown", "PartitionInactive", "NodeDown")


def _say(level: str, message: str) -> None:
    """One line in Snakemake's log (its console and .snakemake/log/), or on stderr outside Snakemake."""
    try:
        from snakemake.logging import logger
    except ImportError:  # pragma: no cover - Snakemake is a dependency
        logger = None
    if logger is not None:
        getattr(logger, level)(message)
    else:
        print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Node:
    """One SLURM node as ``sinfo`` lists it: its name, the partitions it belongs to, its CPUs and memory (MB)."""

    name: str
    partitions: tuple[str, ...]
    cpus: int
    mem_mb: int


def cluster_nodes() -> tuple[list[Node], str | None]:
    """The cluster's nodes (``sinfo``) and its default partition (None if none is marked)."""
    try:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N|%P|%c|%m"], capture_output=True, text=True,
                             timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise ConfigError(f"executor slurm: `sinfo` failed ({str(exc).strip()[:200]}); run the SLURM profile on a "
                          "machine that can submit jobs (a login node)") from exc
    rows: dict[str, dict] = {}
    default = None
    for line in out.splitlines():
        name, partition, cpus, mem = line.strip().split("|")
        if partition.endswith("*"):
            partition = default = partition[:-1]
        row = rows.setdefault(name, {"partitions": [], "cpus": int(cpus), "mem_mb": int(mem.rstrip("+"))})
        row["partitions"].append(partition)
    return [Node(name, tuple(r["partitions"]), r["cpus"], r["mem_mb"]) for name, r in rows.items()], default


def largest_node(nodes: list[Node], partition: str | None) -> Node:
    """The node of ``partition`` (all nodes: None) with the most CPUs, then the most memory."""
    members = [n for n in nodes if partition is None or partition in n.partitions]
    if not members:
        raise ConfigError(f"slurm_partition: SLURM has no partition {partition!r} with nodes (sinfo lists "
                          f"{sorted({p for n in nodes for p in n.partitions})}); give an existing one")
    return max(members, key=lambda n: (n.cpus, n.mem_mb))


def _plain(value):
    """A rule's resource value when it is a constant (an int or str), else None (a function of the job)."""
    value = getattr(value, "value", value)
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


# benchmarking-gnns with `seeds_per_job` / `stack: true`: one rule per (dataset, model, group of seeds), the group's
# seeds of a fold in one job (workflow/rules/training.smk); it asks for the train stage's CPUs and its memory times
# the number of seeds
SEED_STACK_PREFIX = "train_seeds_"


def rule_stage(rule: str) -> str | None:
    """The suite's `resources` stage that sizes ``rule`` (None: the rule's own request)."""
    return "train" if rule.startswith(SEED_STACK_PREFIX) else RULE_STAGES.get(rule)


def _where(rule: str, what: str) -> str:
    stage = rule_stage(rule)
    key = {"threads": "cpus", "mem_mb": "mem_mb"}[what]
    if stage and rule.startswith(SEED_STACK_PREFIX) and what == "mem_mb":
        return f"resources.{stage}.{key} (times the seeds a {rule} job trains)"
    return f"resources.{stage}.{key}" if stage else f"rule {rule} ({what})"


def check_requests(rules: dict[str, dict], nodes: list[Node], default_partition: str | None) -> None:
    """Refuse a rule whose own request (threads, mem_mb) is larger than every node of its partition.

    ``rules``: rule name -> {"threads", "mem_mb", "slurm_partition"} (constants; None when unknown)."""
    for name, res in rules.items():
        partition = res.get("slurm_partition") or default_partition
        node = largest_node(nodes, partition)
        where = f"the largest node of SLURM partition {partition!r}" if partition else "the largest SLURM node"
        threads, mem = res.get("threads"), res.get("mem_mb")
        if threads is not None and threads > node.cpus:
            raise ConfigError(
                f"{_where(name, 'threads')}: a {name} job asks for {threads} CPUs but {where} ({node.name}) has "
                f"{node.cpus}; ask for {node.cpus} or fewer (in the suite's `resources`, or --set-threads "
                f"{name}={node.cpus})")
        if mem is not None and mem > node.mem_mb:
            raise ConfigError(
                f"{_where(name, 'mem_mb')}: a {name} job asks for {mem} MB but {where} ({node.name}) has "
                f"{node.mem_mb} MB; ask for {node.mem_mb} or less (in the suite's `resources`, or --set-resources "
                f"{name}:mem_mb={node.mem_mb})")


def _rule_requests(workflow) -> dict[str, dict]:
    requests = {}
    for rule in workflow.rules:
        resources = rule.resources
        threads = _plain(resources.get("_cores")) if "_cores" in resources else None
        cpus_per_task = _plain(resources.get("cpus_per_task")) if "cpus_per_task" in resources else None
        if isinstance(cpus_per_task, int) and cpus_per_task > 0:  # the plugin asks for it instead of threads
            threads = cpus_per_task
        requests[rule.name] = {
            "threads": threads,
            "mem_mb": _plain(resources.get("mem_mb")) if "mem_mb" in resources else None,
            "slurm_partition": _plain(resources.get("slurm_partition")) if "slurm_partition" in resources else None,
        }
    return requests


def fit_to_cluster(workflow, group_rule: str = "train") -> Node | None:
    """At the start of a SLURM run (main process, not a dry run): check every rule against the nodes, cap what a
    group job may pack to the largest node of ``group_rule``'s partition, start the pending-job watchdog.
    Returns that node (None when the executor is not slurm)."""
    plugin = workflow.executor_plugin
    if plugin is None or plugin.name != "slurm" or workflow.remote_exec or workflow.dryrun:
        return None
    nodes, default_partition = cluster_nodes()
    requests = _rule_requests(workflow)
    check_requests(requests, nodes, default_partition)
    partition = (requests.get(group_rule) or {}).get("slurm_partition") or default_partition
    node = largest_node(nodes, partition)
    limits = workflow.global_resources
    cores = min(c for c in (workflow.resource_settings.cores, node.cpus) if c is not None)
    limits["_cores"] = cores
    workflow.resource_settings.cores = cores  # --cores of a group job's own Snakemake
    mem = limits.get("mem_mb").value if "mem_mb" in limits else None
    limits["mem_mb"] = node.mem_mb if mem is None else min(mem, node.mem_mb)
    _say("info", f"gnnbench: SLURM group jobs sized to fit node {node.name}: at most {cores} CPUs and "
                 f"{limits['mem_mb'].value} MB each")
    PendingWatchdog(os.getcwd()).start()
    return node


def pending_jobs(workdir: str) -> list[tuple[str, str, str]]:
    """(job id, reason, comment) of this user's pending SLURM jobs submitted from ``workdir``."""
    user = os.environ.get("USER") or subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    out = subprocess.run(["squeue", "-h", "-u", user, "-t", "PENDING", "-o", "%i|%r|%Z|%k"], capture_output=True,
                         text=True, timeout=60)
    jobs = []
    for line in out.stdout.splitlines():
        parts = line.split("|", 3)
        if len(parts) == 4 and os.path.realpath(parts[2]) == os.path.realpath(workdir):
            jobs.append((parts[0], parts[1], parts[3]))
    return jobs


def cancel_jobs_that_never_start(workdir: str, warned: set[str] | None = None) -> list[str]:
    """Cancel this run's jobs pending for a reason in :data:`NEVER_STARTS`; warn once per job about
    :data:`MAY_NEVER_START`. Returns the messages logged for cancelled jobs."""
    warned = set() if warned is None else warned
    messages = []
    for job, reason, comment in pending_jobs(workdir):
        head = reason.split(",")[0].strip()
        if head in NEVER_STARTS:
            message = (f"gnnbench: error: SLURM job {job} ({comment}) can never start: it is pending with reason "
                       f"{head} (it asks for more than the partition, QOS or account allows; `scontrol show job "
                       f"{job}` shows the request); cancelled it. Fix the request (`resources:` in the suite, "
                       f"--set-resources, --group-components) and run again")
            subprocess.run(["scancel", job], timeout=60)
            _say("error", message)
            messages.append(message)
        elif head in MAY_NEVER_START and job not in warned:
            warned.add(job)
            _say("warning", f"gnnbench: SLURM job {job} ({comment}) is pending with reason {reason}: it starts only "
                            f"when those nodes or partitions come back (`scontrol show job {job}`)")
    return messages


class PendingWatchdog(threading.Thread):
    """Daemon thread: every ``interval`` seconds, :func:`cancel_jobs_that_never_start` for ``workdir``."""

    def __init__(self, workdir: str, interval: float | None = None):
        super().__init__(name="gnnbench-slurm-watchdog", daemon=True)
        self.workdir = workdir
        self.interval = interval or float(os.environ.get("GNNBENCH_SLURM_WATCH_SECONDS", 30))

    def run(self) -> None:
        """Check the pending jobs every ``interval`` seconds; on a job that can never start, stop the run as Ctrl-C
        does (SIGINT to this process) and end the thread."""
        warned: set[str] = set()
        while True:
            time.sleep(self.interval)
            try:
                cancelled = cancel_jobs_that_never_start(self.workdir, warned)
            except Exception as exc:  # noqa: BLE001 - a watchdog must never take the run down
                _say("debug", f"gnnbench: SLURM watchdog: {exc}")
                continue
            if cancelled:
                # The plugin reads sacct's "CANCELLED by <uid>" as still running and would wait for ever: stop the
                # run the way Ctrl-C does (Snakemake cancels its other jobs; finished outputs are kept).
                _say("error", "gnnbench: error: stopping the workflow: a SLURM job of it can never start (above)")
                os.kill(os.getpid(), signal.SIGINT)
                return
