#!/usr/bin/env bash
# Trajectory logging overhead on the default training run: runs launch/configs/default.toml with
# logging off (--traj-every 0) and on (the default, every iteration), alternating, REPEAT times
# each, and prints the trainer's own share of wall time spent logging (slowest rank) and the
# wall-time ratio on/off. Extra arguments go to `marlsched train` (e.g. --traj-every 4).
# Usage: bash bench/logging_overhead.sh [train args...]   (MARLSCHED_NP ranks, default 4)
set -euo pipefail
source "$(dirname "$0")/../launch/env.sh"
BIN=$MARLSCHED_BUILD/launch/marlsched
NP=${MARLSCHED_NP:-4}
REPEAT=${REPEAT:-2}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/marlsched-logbench.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
for r in $(seq "$REPEAT"); do
  for every in 0 1; do
    mpirun -n "$NP" "$BIN" train --config "$MARLSCHED_ROOT/launch/configs/default.toml" --quiet \
      --no-eval-after --traj-every "$every" --run-dir "$OUT/run-$every-$r" "$@" > "$OUT/log-$every-$r"
    split=$(grep "time split" "$OUT/log-$every-$r")
    wall=$(sed -E 's/.*slowest rank, ([0-9.]+) s wall.*/\1/' <<<"$split")
    share=$(sed -E 's/.*trajectory logging ([0-9.]+)%.*/\1/' <<<"$split")
    size=$(du -sb "$OUT/run-$every-$r/trajectories" 2>/dev/null | cut -f1 || echo 0)
    echo "traj-every $every, repeat $r: wall $wall s, logging $share% of wall, trajectory bytes ${size:-0}"
    echo "$every $wall" >> "$OUT/walls"
  done
done
awk '{s[$1]+=$2; n[$1]++} END {printf "mean wall: off %.2f s, on %.2f s, ratio on/off %.3f\n",
  s[0]/n[0], s[1]/n[1], (s[1]/n[1])/(s[0]/n[0])}' "$OUT/walls"
