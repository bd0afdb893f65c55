#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds with tests, runs ctest; then the unit
# and MPI training tests under AddressSanitizer/UBSan (launch/sanitize.sh) and a short run of every fuzz
# target (launch/fuzz.sh). Extra arguments go to ctest only and skip the last two stages
# (e.g. -L unit for the fast unit tests only).
set -euo pipefail
HERE=$(dirname "$0")
bash "$HERE/install-deps.sh"
source "$HERE/env.sh"
bash "$HERE/build.sh" -DMARLSCHED_BUILD_TESTS=ON -DMARLSCHED_BUILD_BENCH=ON -DMARLSCHED_WERROR=ON
(cd "$MARLSCHED_BUILD" && ctest --output-on-failure -j2 "$@")
[ $# -eq 0 ] || exit 0
echo "== unit and MPI training tests under AddressSanitizer + UBSan"
bash "$HERE/sanitize.sh"
echo "== fuzz targets (10 s each)"
bash "$HERE/fuzz.sh" 10
