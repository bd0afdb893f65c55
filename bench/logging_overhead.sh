#!/usr/bin/env bash
# Trajectory logging overhead on the default training run: logging off (--traj-every 0) and on
# (the default, flushing every 10 iterations), alternately, REPEAT times each, with the trainer's own share of
# wall time spent logging (slowest rank) and the wall-time ratio on/off (bench/compare_runs.sh).
# Extra arguments go to `marlsched train` (e.g. --traj-every 4 replaces "on").
# Usage: bash bench/logging_overhead.sh [train args...]   (MARLSCHED_NP ranks, default 4)
set -euo pipefail
exec bash "$(dirname "$0")/compare_runs.sh" "traj-every 0" "--traj-every 0" \
  "traj-every 10" "${*:---traj-every 10}" "trajectory logging"
