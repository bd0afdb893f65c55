#!/usr/bin/env bash
# Builds the unit tests (core, envs, rollout, agents) and the MPI agent and training tests (1, 2
# and 4 ranks) with AddressSanitizer and UBSan into build-asan/ (or $MARLSCHED_ASAN_BUILD) and runs
# them. Any sanitizer report fails the run (UBSan does not recover). Leak checking is off:
# Open MPI and libtorch keep allocations until exit by design.
set -euo pipefail
source "$(dirname "$0")/env.sh"
BUILD=${MARLSCHED_ASAN_BUILD:-$MARLSCHED_ROOT/build-asan}
TARGETS=(test_core test_envs test_rollout test_agents test_agents_mpi test_train)
cmake -S "$MARLSCHED_ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DMARLSCHED_SANITIZE=address,undefined \
  -DMARLSCHED_BUILD_TESTS=ON -DMARLSCHED_BUILD_BENCH=OFF -DMARLSCHED_WERROR=ON \
  > "$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log"; exit 1; }
cmake --build "$BUILD" -j"$(nproc)" --target "${TARGETS[@]}"
cd "$BUILD"
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -R "^($(IFS='|'; echo "${TARGETS[*]}"))(_np_[0-9]+)?\$"
