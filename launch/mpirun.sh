#!/usr/bin/env bash
# mpirun for marlsched jobs that stop cleanly on SIGTERM and SIGINT (Ctrl-C).
#
# Open MPI's mpirun does not forward SIGTERM or SIGINT: it sends SIGTERM to every rank, SIGKILL a
# few seconds later, and exits 1. A checkpoint can be cut short, a Ctrl-C is reported by the
# ranks as signal 15, and the requeue exit code 75 never reaches the caller. This script runs
# mpirun in a session of its own (a terminal's Ctrl-C reaches only this script) and forwards
# SIGTERM as SIGUSR1 and SIGINT as SIGUSR2, which mpirun passes on to every rank: each rank
# finishes the same update, writes a checkpoint and exits 75, and so does this script.
# Usage: bash launch/mpirun.sh [mpirun options] build/launch/marlsched train ...
set -uo pipefail
source "$(dirname "$0")/env.sh"
setsid mpirun "$@" &
pid=$!
forward() {
  echo "marlsched: $1 received: every rank stops after its current iteration and writes a" \
    "checkpoint (forwarded to mpirun as $2)" >&2
  kill -s "$2" "$pid" 2> /dev/null
}
trap 'forward SIGTERM USR1' TERM
trap 'forward SIGINT USR2' INT
trap 'forward SIGUSR1 USR1' USR1
# `wait` returns early (status > 128) when a trapped signal arrives; wait again until mpirun ends.
while :; do
  wait "$pid"
  rc=$?
  kill -0 "$pid" 2> /dev/null || break
done
exit "$rc"
