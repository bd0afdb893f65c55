#!/usr/bin/env bash
# ES's training rate against the env's own rate, one rank on one core, in one run (issue 43,
# item 5): for each rung (sites), bench_env's BM_GeoDcCopies/SITES/32 steps 32 copies of the
# rung's worlds with least-loaded in process (the env's own rate at the layout ES trains), then
# `marlsched train` runs ES on the ladder's config of that rung (launch/configs/main.toml, every
# agent on one rank, 32 copies; above 4 sites the replicated zones with 3 ring neighbours, as
# bench/ladder.sh) for ITERS iterations. Prints per rung both rates in agent-steps/s, their ratio
# (the goal: >= 0.5) and the shares of the env step and the policy forward in the ES run.
# Usage: bash bench/es_rate.sh [RUNG...]   (default 4 32 128)
# Environment: ITERS (default 20), REPEAT (default 1: runs per rung, the median rate reported).
set -euo pipefail
source "$(dirname "$0")/../launch/env.sh"
source "$(dirname "$0")/time_split.sh"
BIN=$MARLSCHED_BUILD/launch/marlsched
BENCH=$MARLSCHED_BUILD/bench/bench_env
[ -x "$BIN" ] && [ -x "$BENCH" ] || {
  echo "es_rate.sh: build first (bash launch/build.sh); needs $BIN and $BENCH" >&2
  exit 2
}
ITERS=${ITERS:-20}
REPEAT=${REPEAT:-1}
RUNGS=("$@")
((${#RUNGS[@]} > 0)) || RUNGS=(4 32 128)
OUT=$(mktemp -d "${TMPDIR:-/tmp}/marlsched-es-rate.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
echo "| sites | env alone (bench_env, least-loaded) | ES training | ratio | env step | policy forward |"
echo "|--:|--:|--:|--:|--:|--:|"
for n in "${RUNGS[@]}"; do
  : >"$OUT/env" && : >"$OUT/es" && : >"$OUT/envshare" && : >"$OUT/fwd"
  extra=()
  [ "$n" -gt 4 ] && extra=(--replicate-sites --site-neighbours 3)
  for r in $(seq "$REPEAT"); do
    "$BENCH" --benchmark_filter="BM_GeoDcCopies/$n/32\$" --benchmark_format=csv 2>/dev/null |
      awk -F, '/BM_GeoDcCopies/ { printf "%.0f\n", $7 }' >>"$OUT/env"
    rm -rf "$OUT/run"
    OMP_NUM_THREADS=1 "$BIN" train --config "$MARLSCHED_ROOT/launch/configs/main.toml" \
      --agents-per-rank "$n" "${extra[@]}" --iterations "$ITERS" --run-dir "$OUT/run" \
      --eval-after=false --tensorboard=false --quiet >"$OUT/log" 2>&1 ||
      { cat "$OUT/log" >&2; exit 1; }
    line=$(split_line "$OUT/log")
    split_steps "$line" >>"$OUT/es"
    split_share "$line" "env step" >>"$OUT/envshare"
    split_share "$line" "policy forward" >>"$OUT/fwd"
  done
  env_rate=$(median "$OUT/env" 0)
  es_rate=$(median "$OUT/es" 0)
  awk -v n="$n" -v e="$env_rate" -v s="$es_rate" -v es="$(median "$OUT/envshare")" \
    -v f="$(median "$OUT/fwd")" 'BEGIN {
      printf "| %d | %.2f M/s | %.2f M/s | %.2f | %s %% | %s %% |\n", n, e / 1e6, s / 1e6, s / e, es, f }'
done
