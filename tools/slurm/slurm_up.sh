#!/usr/bin/env bash
# Bring up a single-node SLURM cluster on localhost, for tests/test_slurm.py and CI (Debian 12, root, no systemd).
#
#   tools/slurm/slurm_up.sh [dbd|nodbd] [gpu]
#     dbd    (default) + MariaDB + slurmdbd, so that `sacct` works (the executor plugin's default status command)
#     nodbd  no accounting database; Snakemake then needs `--slurm-status-command squeue`
#     gpu    also configure one fake GPU (gres gpu:fake:1 backed by a dummy character device)
#
# Installs the Debian packages when missing (apt), writes every config file, wipes the controller state, starts the
# daemons directly and records their PIDs in $PIDDIR (default /tmp/slurm-ci/pids); tools/slurm/slurm_down.sh stops
# them by those PIDs. Idempotent: daemons of an earlier call are stopped first. What it sets up and the points
# that matter: docs/cluster.md#the-test-cluster-on-localhost. Not for a machine that already runs a real SLURM: it
# rewrites /etc/slurm.
set -euo pipefail
MODE=${1:-dbd}; GPU=${2:-}
case "$MODE" in dbd|nodbd) ;; *) echo "usage: $0 [dbd|nodbd] [gpu]" >&2; exit 2;; esac
case "$GPU" in ""|gpu) ;; *) echo "usage: $0 [dbd|nodbd] [gpu]" >&2; exit 2;; esac
[ "$(id -u)" = 0 ] || { echo "slurm_up: needs root (installs packages, starts daemons as slurm/munge)" >&2; exit 1; }
HERE=$(cd "$(dirname "$0")" && pwd)
export PIDDIR=${PIDDIR:-/tmp/slurm-ci/pids}
DBPASS=${DBPASS:-slurmdbpass}
export DEBIAN_FRONTEND=noninteractive
T0=$(date +%s%N)
say() { printf '[slurm_up %5.1fs] %s\n' "$(( ($(date +%s%N) - T0) / 1000000 ))e-3" "$*"; }

# ---------- 0. stop what an earlier call started ----------
"$HERE/slurm_down.sh" >/dev/null

# ---------- 1. packages ----------
PKGS="munge slurmctld slurmd slurm-client"
[ "$MODE" = dbd ] && PKGS="$PKGS slurmdbd mariadb-server"
missing=$(for p in $PKGS; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || echo "$p"; done)
if [ -n "$missing" ]; then
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $PKGS >/dev/null
fi
say "packages ready"

mkdir -p "$PIDDIR" /var/log/slurm /var/lib/slurm
chown slurm:slurm /var/log/slurm /var/lib/slurm
HOST=$(hostname -s)
CPUS=$(nproc)
MEM=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')

wait_for() {  # $1 = tries of 0.25 s, rest = command
  local n=$1; shift
  for _ in $(seq 1 "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  "$@"
}

# ---------- 2. munge ----------
[ -s /etc/munge/munge.key ] || mungekey --create --keyfile /etc/munge/munge.key
chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key
mkdir -p /run/munge; chown munge:munge /run/munge; chmod 0755 /run/munge
rm -f /run/munge/munged.pid
runuser -u munge -- /usr/sbin/munged          # forks; pid in /run/munge/munged.pid
wait_for 40 test -s /run/munge/munged.pid
cp /run/munge/munged.pid "$PIDDIR/munged.pid"
munge -n | unmunge >/dev/null
say "munged up (pid $(cat "$PIDDIR/munged.pid"))"

# ---------- 3. MariaDB + slurmdbd ----------
if [ "$MODE" = dbd ]; then
  mkdir -p /run/mysqld; chown mysql:root /run/mysqld
  setsid /usr/sbin/mariadbd --user=mysql >/var/log/slurm/mariadbd.out 2>&1 </dev/null &
  echo $! > "$PIDDIR/mariadbd.pid"
  wait_for 120 mariadb-admin ping
  mariadb -e "DROP DATABASE IF EXISTS slurm_acct_db; CREATE DATABASE slurm_acct_db;
              CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '${DBPASS}';
              GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"
  say "mariadbd up (pid $(cat "$PIDDIR/mariadbd.pid"))"
  cat > /etc/slurm/slurmdbd.conf <<CONF
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=slurm
DebugLevel=info
LogFile=/var/log/slurm/slurmdbd.log
PidFile=/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=${DBPASS}
StorageLoc=slurm_acct_db
CONF
  chown slurm:slurm /etc/slurm/slurmdbd.conf; chmod 0600 /etc/slurm/slurmdbd.conf
fi

# ---------- 4. slurm.conf (+ gres.conf) ----------
GRES_NODE=""; GRES_TYPES=""
if [ "$GPU" = gpu ]; then
  # gres File= must be a character device: one with /dev/null's numbers stands in for the GPU
  [ -c /var/lib/slurm/fakegpu0 ] || mknod -m 0666 /var/lib/slurm/fakegpu0 c 1 3
  echo "NodeName=${HOST} Name=gpu Type=fake File=/var/lib/slurm/fakegpu0" > /etc/slurm/gres.conf
  GRES_NODE=" Gres=gpu:fake:1"; GRES_TYPES="GresTypes=gpu"
else
  rm -f /etc/slurm/gres.conf
fi
{
cat <<CONF
ClusterName=localcluster
SlurmctldHost=${HOST}(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# no cgroups here: plain process tracking, no task affinity/containment
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# jobs without --mem would otherwise get the whole node's memory and run one at a time
DefMemPerCPU=1000
# squeue keeps finished jobs this long; the plugin needs >= 3 x init_seconds_before_status_checks
MinJobAge=300
${GRES_TYPES}
CONF
if [ "$MODE" = dbd ]; then
cat <<CONF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819
AccountingStorageTRES=gres/gpu
# sacct shows the plugin's --comment (rule name and wildcards)
AccountingStoreFlags=job_comment
JobAcctGatherType=jobacct_gather/linux
JobCompType=jobcomp/none
CONF
else
cat <<CONF
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/linux
JobCompType=jobcomp/filetxt
JobCompLoc=/var/log/slurm/jobcomp.log
CONF
fi
cat <<CONF
NodeName=${HOST} NodeAddr=127.0.0.1 CPUs=${CPUS} RealMemory=${MEM}${GRES_NODE} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
} > /etc/slurm/slurm.conf

# fresh controller state every time (stale node state, e.g. INVAL, survives restarts otherwise)
rm -rf /var/lib/slurm/slurmctld/* /var/lib/slurm/slurmd/*

# ---------- 5. daemons ----------
if [ "$MODE" = dbd ]; then
  rm -f /run/slurmdbd.pid
  /usr/sbin/slurmdbd                            # forks; pid in /run/slurmdbd.pid
  wait_for 120 test -s /run/slurmdbd.pid
  cp /run/slurmdbd.pid "$PIDDIR/slurmdbd.pid"
  wait_for 120 sacctmgr -n list cluster
  say "slurmdbd up (pid $(cat "$PIDDIR/slurmdbd.pid"))"
fi
rm -f /run/slurmctld.pid /run/slurmd.pid
/usr/sbin/slurmctld                             # forks; pid in /run/slurmctld.pid
/usr/sbin/slurmd                                # forks; pid in /run/slurmd.pid
# the forked daemons write their pidfile a moment after the parent returns
wait_for 120 test -s /run/slurmctld.pid
wait_for 120 test -s /run/slurmd.pid
cp /run/slurmctld.pid "$PIDDIR/slurmctld.pid"; cp /run/slurmd.pid "$PIDDIR/slurmd.pid"
if ! wait_for 120 sh -c 'sinfo -h -o %t | grep -qx idle'; then
  sinfo -R; tail -n 30 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log; exit 1
fi
if [ "$MODE" = dbd ]; then
  # slurmctld registers the cluster (account root, user root) in slurmdbd on its own; -P: names are not truncated
  wait_for 120 sh -c 'sacctmgr -n -P list cluster format=cluster | grep -qx localcluster'
fi
say "slurmctld (pid $(cat "$PIDDIR/slurmctld.pid")) + slurmd (pid $(cat "$PIDDIR/slurmd.pid")) up, node idle"
sinfo
