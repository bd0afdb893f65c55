#!/usr/bin/env bash
# A/B comparison of two variants of the default training run (launch/configs/default.toml), run
# alternately REPEAT times each (this machine is shared and noisy: alternation spreads the noise
# over both). For each run it prints the wall time, the trainer's share of wall time for the
# named time-split entries (slowest rank), everything outside the update and the policy forward,
# and the trajectory bytes written; then the mean wall times, the ratio B/A and each variant's
# median share outside the update and the policy forward.
# Usage: bash bench/compare_runs.sh "NAME_A" "ARGS_A" "NAME_B" "ARGS_B" [SPLIT_ENTRY...]
#   e.g. bash bench/compare_runs.sh off "--traj-every 0" on "--traj-every 1" "trajectory logging"
# Environment: MARLSCHED_NP ranks (default 4), REPEAT (default 2), EXTRA (more train args).
set -euo pipefail
source "$(dirname "$0")/../launch/env.sh"
source "$(dirname "$0")/time_split.sh"
BIN=$MARLSCHED_BUILD/launch/marlsched
NP=${MARLSCHED_NP:-4}
REPEAT=${REPEAT:-2}
names=("$1" "$3")
args=("$2" "$4")
shift 4
entries=("$@")
extra=()
((NP > $(nproc))) && extra=(--oversubscribe)
OUT=$(mktemp -d "${TMPDIR:-/tmp}/marlsched-compare.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
for r in $(seq "$REPEAT"); do
  for v in 0 1; do
    run="$OUT/run-$v-$r"
    # shellcheck disable=SC2086  # ARGS and EXTRA are word lists
    mpirun "${extra[@]}" -n "$NP" "$BIN" train --config "$MARLSCHED_ROOT/launch/configs/default.toml" \
      --quiet --no-eval-after --run-dir "$run" ${args[$v]} ${EXTRA:-} > "$OUT/log-$v-$r"
    split=$(split_line "$OUT/log-$v-$r")
    wall=$(split_wall "$split")
    line="${names[$v]}, repeat $r: wall $wall s"
    for e in "${entries[@]}"; do
      line+=", $e $(split_share "$split" "$e")%"
    done
    outside=$(split_outside "$split")
    line+=", outside update and forward $outside%"
    size=$(du -sb "$run/trajectories" 2>/dev/null | cut -f1 || true)
    echo "$line, trajectory bytes ${size:-0}"
    echo "$v $wall" >> "$OUT/walls"
    echo "$outside" >> "$OUT/outside-$v"
  done
done
awk -v a="${names[0]}" -v b="${names[1]}" '{s[$1]+=$2; n[$1]++} END {
  printf "mean wall: %s %.2f s, %s %.2f s, ratio %s/%s %.3f\n", a, s[0]/n[0], b, s[1]/n[1], b, a,
    (s[1]/n[1])/(s[0]/n[0])}' "$OUT/walls"
# The median share outside the update and the policy forward (issue 20's item 3) of each variant:
# a run whose ranks were descheduled by the shared host's other work moves the mean, not this.
echo "median outside update and forward: ${names[0]} $(median "$OUT/outside-0")%," \
  "${names[1]} $(median "$OUT/outside-1")% ($REPEAT runs each)"
