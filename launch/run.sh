#!/usr/bin/env bash
# The main job: installs what is missing, builds (Release), and trains the best learner of the
# geodc ladder's 4-site rung (launch/configs/ladder-4.toml: ES as a residual over the MPC on 4
# data-center agents on 4 MPI ranks, synthetic traces calibrated on 2023 data), then evaluates
# the policy against every baseline (the MPC included) and brackets the optimum on held-out
# seeds. MARLSCHED_CONFIG names another config (e.g. launch/configs/main.toml, plain ES).
# Extra arguments go to `marlsched train` (e.g. --iterations 100 --run-dir runs/short). Each
# run starts afresh (--force): it replaces the previous main run in its run directory.
set -euo pipefail
HERE=$(dirname "$0")
bash "$HERE/install-deps.sh"
source "$HERE/env.sh"
bash "$HERE/build.sh" -DMARLSCHED_BUILD_TESTS=OFF -DMARLSCHED_BUILD_BENCH=OFF
NP=${MARLSCHED_NP:-4}
# launch/mpirun.sh: SIGTERM or Ctrl-C stop every rank after a checkpoint (exit 75).
exec bash "$HERE/mpirun.sh" -n "$NP" "$MARLSCHED_BUILD/launch/marlsched" train \
  --config "${MARLSCHED_CONFIG:-$MARLSCHED_ROOT/launch/configs/ladder-4.toml}" \
  --run-dir "${MARLSCHED_RUN_DIR:-runs/main}" --force "$@"
