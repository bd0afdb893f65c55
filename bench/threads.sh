#!/usr/bin/env bash
# Threads per rank: one rank given THREADS cores (mpirun --map-by slot:PE=THREADS) trains the
# default config (launch/configs/default.toml, 4 agents on the rank, trajectories off) with
# --threads 1 and --threads THREADS, on each build of OpenBLAS installed here: the OpenMP build
# (libopenblas0-openmp, what launch/install-deps.sh selects) and the pthreads build
# (libopenblas0-pthread), chosen per run with LD_LIBRARY_PATH. Runs alternate, REPEAT times each.
# It prints every run's wall time and, per build, the speed-up of THREADS threads over one by the
# medians and by the fastest runs (on a shared virtual machine, runs with several threads per
# rank are slowed far more by the host's other work than one-thread runs: the fastest run shows
# what the code does, the median what this host gave).
# Usage: bash bench/threads.sh [THREADS] [train args...]   (default 2; e.g. bigger networks:
#   bash bench/threads.sh 2 --envs-per-rank 16 --actor-hidden 256 256 --critic-hidden 512 512
#   --iterations 10)
# Environment: REPEAT (default 3).
set -euo pipefail
source "$(dirname "$0")/../launch/env.sh"
source "$(dirname "$0")/time_split.sh"
BIN=$MARLSCHED_BUILD/launch/marlsched
THREADS=${1:-2}
shift $(($# > 0 ? 1 : 0))
REPEAT=${REPEAT:-3}
((THREADS <= $(nproc))) || { echo "threads.sh: $THREADS threads, but $(nproc) cores here" >&2; exit 2; }
libdir=/usr/lib/$(gcc -print-multiarch)
builds=()
for b in openmp pthread; do [ -e "$libdir/openblas-$b/libblas.so.3" ] && builds+=("$b"); done
((${#builds[@]} > 0)) || { echo "threads.sh: no OpenBLAS build under $libdir" >&2; exit 2; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/marlsched-threads.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
for r in $(seq "$REPEAT"); do
  for b in "${builds[@]}"; do
    for t in 1 "$THREADS"; do
      run="$OUT/run-$b-$t-$r"
      # shellcheck disable=SC2086  # train args are a word list
      LD_LIBRARY_PATH=$libdir/openblas-$b mpirun -x LD_LIBRARY_PATH --map-by "slot:PE=$THREADS" \
        -n 1 "$BIN" train --config "$MARLSCHED_ROOT/launch/configs/default.toml" \
        --agents-per-rank 4 --traj-every 0 --quiet --no-eval-after --threads "$t" \
        --run-dir "$run" "$@" > "$run.log" 2>&1
      wall=$(split_wall "$(split_line "$run.log")")
      echo "OpenBLAS $b build, --threads $t, repeat $r: wall $wall s"
      echo "$wall" >> "$OUT/wall-$b-$t"
    done
  done
done
for b in "${builds[@]}"; do
  m1=$(median "$OUT/wall-$b-1" 2) mt=$(median "$OUT/wall-$b-$THREADS" 2)
  b1=$(best "$OUT/wall-$b-1") bt=$(best "$OUT/wall-$b-$THREADS")
  awk -v b="$b" -v t="$THREADS" -v m1="$m1" -v mt="$mt" -v b1="$b1" -v bt="$bt" 'BEGIN {
    printf "OpenBLAS %s build: median wall 1 thread %.2f s, %d threads %.2f s, speed-up %.2fx;" \
      " fastest %.2f s and %.2f s, speed-up %.2fx\n", b, m1, t, mt, m1 / mt, b1, bt, b1 / bt }'
done
