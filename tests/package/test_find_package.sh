#!/usr/bin/env bash
# Installs the built project into a temporary prefix and builds a separate CMake project
# against it with find_package(marlsched), then runs the result, which also loads a policy
# that the installed `marlsched` trained and exported.
set -euo pipefail
BUILD=$1
HERE=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/marlsched-pkg.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" > "$WORK/install.log"
[ -f "$WORK/prefix/lib/cmake/marlsched/marlschedConfig.cmake" ] || { echo "no package config installed"; exit 1; }
[ -x "$WORK/prefix/bin/marlsched" ] || { echo "no executable installed"; exit 1; }
cmake -S "$HERE/downstream" -B "$WORK/build" -DCMAKE_PREFIX_PATH="$WORK/prefix" \
      -DCMAKE_BUILD_TYPE=Release > "$WORK/configure.log"
cmake --build "$WORK/build" -j2 > "$WORK/build.log" || { cat "$WORK/build.log"; exit 1; }
# A policy trained and exported by the installed binary, for the consumer to load.
(cd "$WORK" && "$WORK/prefix/bin/marlsched" train --agents-per-rank 4 --envs-per-rank 1 \
  --iterations 1 --rollout-steps 8 --quiet --no-eval-after --traj-every 0 --run-dir run > train.log &&
  "$WORK/prefix/bin/marlsched" export run > export.log) || { cat "$WORK"/*.log; exit 1; }
"$WORK/build/downstream" "$WORK/run/policy.pt" | tee "$WORK/run.log"
grep -q "exported policy" "$WORK/run.log"
grep -q "downstream ok" "$WORK/run.log"
echo "1 passed, 0 failed"
