#!/usr/bin/env bash
# Soak test (a benchmark, not CI): the default training at 4 ranks for many iterations, once
# straight and once killed with SIGKILL at several points (a different rank each time) and
# resumed from the last checkpoint; prints whether the two metrics.csv are byte-identical and
# the largest rank's resident memory (timing.csv max_rss_mib) early, in the middle and at the end.
#   bash bench/soak.sh [ITERATIONS=300] [KILL_POINTS="60:1 140:3 230:2"]   (build/ must exist)
# On a 2-core machine the 4 ranks are oversubscribed. Results: docs/reliability.md.
set -euo pipefail
source "$(dirname "$0")/../launch/env.sh"
BIN=$MARLSCHED_BUILD/launch/marlsched
ITER=${1:-300}
KILLS=${2:-"60:1 140:3 230:2"}
WORK=${SOAK_DIR:-$(mktemp -d /tmp/marlsched-soak.XXXXXX)}
ARGS=(train --iterations "$ITER" --checkpoint-every 20 --keep-checkpoints 2 --quiet --no-eval-after
      --traj-every 10)
cd "$WORK"
t0=$(date +%s)
mpirun -n 4 --oversubscribe "$BIN" "${ARGS[@]}" --run-dir straight > straight.log
t1=$(date +%s)
echo "straight run: $ITER iterations in $((t1 - t0)) s"
first=1
for k in $KILLS; do
  it=${k%%:*} rank=${k##*:}
  rc=0
  if [ $first -eq 1 ]; then
    MARLSCHED_KILL_AT="$rank:$it" mpirun -n 4 --oversubscribe "$BIN" "${ARGS[@]}" --run-dir crashed \
      > crash-$it.log 2>&1 || rc=$?
    first=0
  else
    MARLSCHED_KILL_AT="$rank:$it" mpirun -n 4 --oversubscribe "$BIN" train --resume crashed \
      > crash-$it.log 2>&1 || rc=$?
  fi
  [ "$rc" -ne 0 ] || { echo "the run was not killed at $k"; exit 1; }
  echo "killed rank $rank at iteration $it (exit $rc); resuming from $(ls crashed/checkpoints | tail -1)"
done
mpirun -n 4 --oversubscribe "$BIN" train --resume crashed > resumed.log
if cmp -s straight/metrics.csv crashed/metrics.csv; then
  echo "metrics.csv: identical after $(echo $KILLS | wc -w) kills and resumes ($ITER rows)"
else
  echo "metrics.csv: DIFFERENT"; exit 1
fi
awk -F, -v n="$ITER" 'NR == 11 {a = $10} NR == int(n / 2) + 1 {b = $10} NR == n + 1 {c = $10}
  END {printf "max RSS per rank (MiB): iteration 10 %.1f, %d %.1f, %d %.1f (%+.1f%% from 10 to end)\n",
       a, int(n / 2), b, n, c, 100 * (c - a) / a}' straight/timing.csv
grep "peak resident" straight.log
echo "files in $WORK"
