#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang + ASan/UBSan) and runs each for SECONDS
# (default 10) from the committed seed corpus, after replaying every saved regression input.
#   bash launch/fuzz.sh [SECONDS]      (MARLSCHED_FUZZ_BUILD: build dir, default build-fuzz)
# A crash, a sanitizer report or an exception other than marlsched's own errors fails the run;
# libFuzzer leaves the input as crash-* in the work directory: copy it to
# tests/fuzz/regressions/<target>/ with the fix. Longer runs: see docs/reliability.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_EACH=${1:-10}
BUILD=${MARLSCHED_FUZZ_BUILD:-$ROOT/build-fuzz}
command -v clang++ > /dev/null || { echo "fuzz.sh: clang++ not found (launch/install-deps.sh installs it)"; exit 1; }
CC=clang CXX=clang++ cmake -S "$ROOT/tests/fuzz" -B "$BUILD" > "$BUILD.configure.log" 2>&1 \
  || { cat "$BUILD.configure.log"; exit 1; }
cmake --build "$BUILD" -j"$(nproc)"
WORK=$(mktemp -d /tmp/marlsched-fuzz.XXXXXX)
trap 'rm -rf "$WORK" /tmp/marlsched-fuzz-[0-9]*' EXIT
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
for t in traces manifest config dataset; do
  exe="$BUILD/fuzz_$t"
  reg="$ROOT/tests/fuzz/regressions/$t"
  if [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
    (cd "$WORK" && "$exe" "$reg"/* > "$WORK/$t.reg.log" 2>&1) \
      || { tail -40 "$WORK/$t.reg.log"; echo "fuzz_$t: a saved regression input fails again"; exit 1; }
  fi
  mkdir -p "$WORK/corpus-$t"
  cp "$ROOT/tests/fuzz/corpus/$t/"* "$WORK/corpus-$t/"
  if ! (cd "$WORK" && "$exe" -max_total_time="$SECONDS_EACH" -max_len=4096 -rss_limit_mb=2048 \
          -print_final_stats=1 "$WORK/corpus-$t" > "$WORK/$t.log" 2>&1); then
    tail -60 "$WORK/$t.log"
    mkdir -p "$ROOT/build-fuzz-crashes"
    cp "$WORK"/crash-* "$WORK"/leak-* "$WORK"/oom-* "$WORK"/timeout-* "$ROOT/build-fuzz-crashes/" 2> /dev/null || true
    echo "fuzz_$t: FAILED (inputs kept in build-fuzz-crashes/)"
    exit 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$WORK/$t.log" | grep -o '[0-9]*$')
  echo "fuzz_$t: ${runs:-?} inputs in ${SECONDS_EACH}s, no finding"
done
