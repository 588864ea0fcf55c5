#!/usr/bin/env bash
# Stop every daemon tools/slurm/slurm_up.sh started, by the PIDs it recorded (never by name); cancel jobs first.
# Idempotent: pidfiles of processes that are gone are just removed.
PIDDIR=${PIDDIR:-/tmp/slurm-ci/pids}
stop() {  # $1 = pidfile
  [ -s "$1" ] || return 0
  local pid; pid=$(cat "$1")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "[slurm_down] stopped $(basename "$1" .pid) (pid $pid)"
  fi
  rm -f "$1"
}
if [ -s "$PIDDIR/slurmctld.pid" ] && kill -0 "$(cat "$PIDDIR/slurmctld.pid")" 2>/dev/null; then
  timeout 10 scancel --user "$(id -un)" 2>/dev/null || true
fi
# order: node daemon, controller, accounting daemon, database, munge
for d in slurmd slurmctld slurmdbd mariadbd munged; do stop "$PIDDIR/$d.pid"; done
rm -f /run/slurmctld.pid /run/slurmd.pid /run/slurmdbd.pid
exit 0
