#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds with tests, runs ctest.
# Extra arguments go to ctest (e.g. -L unit for the fast unit tests only).
set -euo pipefail
HERE=$(dirname "$0")
bash "$HERE/install-deps.sh"
source "$HERE/env.sh"
bash "$HERE/build.sh" -DMARLSCHED_BUILD_TESTS=ON -DMARLSCHED_BUILD_BENCH=ON -DMARLSCHED_WERROR=ON
cd "$MARLSCHED_BUILD"
ctest --output-on-failure -j2 "$@"
