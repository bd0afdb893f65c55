#!/usr/bin/env bash
# Scaling of the default training run (launch/configs/default.toml: MAPPO on geodc, trajectories
# and TensorBoard on), two series:
#   ranks   1, 2, 4, 8 ranks x 1 agent each (weak scaling: the work per rank is fixed)
#   agents  2 ranks x 1, 4, 16, 32 agents each (2 to 64 agents; PER_RANK="4 16 64" for others)
# For each run it prints the time per iteration, env agent-steps/s, the trainer's own time split
# (slowest rank, % of wall: env, exchange, gather, act, update, allreduce, logging), the peak RSS
# of the largest rank, and an efficiency:
#   ranks   weak-scaling efficiency T(1 rank) / T(N ranks), per iteration;
#   agents  agent-steps/s relative to the first run of the series (the ranks are fixed, so 1.00
#           means the time per iteration grows linearly with the agent count).
# Every site is replicated (--replicate-sites) so that any agent count is valid. The critic's
# input grows with the agent count (all observations), so part of the loss of efficiency is
# the larger critic, not the communication.
# This machine has 2 cores: runs above 2 ranks are oversubscribed (mpirun --oversubscribe), so
# their efficiency measures ranks sharing cores, not the network.
# Usage: bash bench/scaling.sh [ITERATIONS] [SERIES] [train args...]
#   ITERATIONS per run (default 5); SERIES ranks|agents|all (default all).
set -euo pipefail
source "$(dirname "$0")/../launch/env.sh"
source "$(dirname "$0")/time_split.sh"
BIN=$MARLSCHED_BUILD/launch/marlsched
ITER=${1:-5}
SERIES=${2:-all}
shift $(($# > 2 ? 2 : $#))
OUT=$(mktemp -d "${TMPDIR:-/tmp}/marlsched-scaling.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
cores=$(nproc)
# launch/configs/default.toml's sites
SITES=(US-CAL-CISO DE-LU SG JP-TK) REGIONS=(US EU AP AP) OFFSETS=(-8 1 8 9) GPUS=(64 48 32 48)
PUES=(1.2 1.3 1.5 1.4) RATES=(3.5 3.5 3.2 4.0)

printf '%-7s %5s %6s %6s %9s %10s %6s | %5s %5s %5s %5s %6s %5s %5s | %7s\n' series ranks \
  per_rk agents s/iter steps/s eff env exch gath act update allr log rss_MiB

# run SERIES RANKS AGENTS_PER_RANK BASE_SECONDS_PER_ITER BASE_STEPS_PER_AGENT -> prints one row,
# echoes "s/iter steps/s/agent" to $OUT/last
run() {
  local series=$1 np=$2 k=$3 base_t=$4 base_a=$5
  shift 5
  local agents=$((np * k)) extra=() sites=()
  ((np > cores)) && extra=(--oversubscribe)
  # --replicate-sites refuses to drop a site: below 4 agents, list the default config's first
  # sites only.
  if ((agents < 4)); then
    local n=$agents
    sites=(--sites "${SITES[@]:0:n}" --regions "${REGIONS[@]:0:n}"
      --utc-offsets "${OFFSETS[@]:0:n}" --gpus "${GPUS[@]:0:n}" --pue "${PUES[@]:0:n}"
      --arrival-rates "${RATES[@]:0:n}")
  fi
  local log="$OUT/$series-$np-$k.log"
  if ! mpirun "${extra[@]}" -n "$np" "$BIN" train --config "$MARLSCHED_ROOT/launch/configs/default.toml" \
    --quiet --no-eval-after --replicate-sites --agents-per-rank "$k" --iterations "$ITER" \
    --run-dir "$OUT/run-$series-$np-$k" "${sites[@]}" "$@" > "$log" 2>&1; then
    echo "scaling: the run with $np ranks x $k agents failed:" >&2
    tail -20 "$log" >&2
    exit 1
  fi
  local split rss wall sps pcs=()
  split=$(split_line "$log")
  rss=$(sed -nE 's/^peak resident memory \(largest rank\): ([0-9]+) MiB/\1/p' "$log")
  wall=$(split_wall "$split")
  sps=$(split_steps "$split")
  for name in "env step" "work exchange (alltoallv)" "obs allgather" "policy forward" \
    "update fwd/bwd+optim" "grad allreduce" "trajectory logging"; do
    pcs+=("$(split_share "$split" "$name")")
  done
  awk -v series="$series" -v np="$np" -v k="$k" -v agents="$agents" -v it="$ITER" -v bt="$base_t" \
    -v ba="$base_a" -v rss="$rss" -v wall="$wall" -v sps="$sps" -v pcs="${pcs[*]}" \
    -v out="$OUT/last" 'BEGIN {
      split(pcs, pc, " "); t = wall / it
      if (series == "ranks") eff = (bt > 0 ? bt / t : 1)
      else eff = (ba > 0 ? sps / ba : 1)
      printf "%-7s %5d %6d %6d %9.3f %10.0f %6.2f | %5.1f %5.1f %5.1f %5.1f %6.1f %5.1f %5.1f | %7s\n",
        series, np, k, agents, t, sps, eff, pc[1], pc[2], pc[3], pc[4], pc[5], pc[6], pc[7], rss
      printf "%f %f\n", t, sps > out
    }'
}

if [[ $SERIES == all || $SERIES == ranks ]]; then
  base_t=0
  for np in 1 2 4 8; do
    run ranks "$np" 1 "$base_t" 0 "$@"
    ((np == 1)) && base_t=$(cut -d' ' -f1 "$OUT/last")
  done
fi
if [[ $SERIES == all || $SERIES == agents ]]; then
  base_a=0
  first=1
  for k in ${PER_RANK:-1 4 16 32}; do
    run agents 2 "$k" 0 "$base_a" "$@"
    ((first)) && base_a=$(cut -d' ' -f2 "$OUT/last")
    first=0
  done
fi
echo "($cores cores; ranks above $cores oversubscribed; $ITER iterations per run)"
