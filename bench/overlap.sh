#!/usr/bin/env bash
# Effect of overlapping the critic's gradient allreduce with the actor's backward pass (MAPPO
# --overlap-grads, nonblocking MPI_Iallreduce) on the default training run: off and on,
# alternately, REPEAT times each, with the trainer's shares of wall time for the update and the
# allreduce (slowest rank) and the wall-time ratio on/off (bench/compare_runs.sh).
# Usage: bash bench/overlap.sh   (MARLSCHED_NP ranks, default 4; EXTRA more train args)
set -euo pipefail
exec bash "$(dirname "$0")/compare_runs.sh" "overlap off" "--no-overlap-grads" \
  "overlap on" "--overlap-grads" "update fwd/bwd+optim" "grad allreduce"
