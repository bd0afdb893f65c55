#!/usr/bin/env bash
# The MAPPO update against a plain PyTorch loop at equal sizes, in one run (issue 20): marlsched's
# update time (bench_learner, MAPPO at 4 agents per rank, one rank, one thread), the Python
# reference's (bench/python_update.py, Debian's python3-torch on the same BLAS), their ratio,
# the update's achieved GFLOP/s (forward and backward matrix products: 3x the forward's) and the
# single-core matrix-product rate at the update's own shapes. Skips the Python part, saying why,
# where Debian's python3-torch is absent.
#   bash bench/update_vs_python.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../launch/env.sh"
BENCH=$MARLSCHED_BUILD/bench/bench_learner
[ -x "$BENCH" ] || { echo "no $BENCH: build with -DMARLSCHED_BUILD_BENCH=ON" >&2; exit 2; }
"$MARLSCHED_BUILD/launch/marlsched" --version | sed -n 2p
# Medians (of 7 repetitions here, of 20 updates in Python): the machine is shared and noisy.
ms=$(mpirun -n 1 "$BENCH" --benchmark_filter='BM_MappoUpdate/agents_per_rank:4/' \
  --benchmark_repetitions=7 --benchmark_report_aggregates_only=true \
  --benchmark_format=csv 2> /dev/null | awk -F, '/BM_MappoUpdate.*_median/ {print $3; exit}')
echo "marlsched_update_ms $ms ms"
if ! /usr/bin/python3 -c 'import torch' 2> /dev/null; then
  echo "python reference: skipped (Debian's python3-torch is not installed)"
  exit 0
fi
py=$(OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$HERE/python_update.py" 20)
echo "$py"
awk -v ms="$ms" '
  /^python_update_ms/ {py = $2}
  /^matmul_gflops/ {mm = $2}
  /^update_gflop/ {gf = $2}
  END {
    printf "marlsched update: %.1f GFLOP/s; Python loop: %.1f GFLOP/s; BLAS at these shapes: %.1f GFLOP/s\n", gf / (ms / 1e3), gf / (py / 1e3), mm
    printf "speed-up over the Python loop: %.2fx (target 2x); ceiling at BLAS speed: %.2fx\n", py / ms, py / (gf / mm * 1e3)
  }' <<< "$py"
