#!/usr/bin/env bash
# Tunes the one parameter of each geodc rule (wait-awhile's deferral threshold, green-fit's
# free-share guard, fixed-overflow's site, guarded-overflow's queue level) by grid search on
# training seeds (never
# on the evaluation seed, 1000 by default): each threshold is evaluated with `marlsched
# baselines` on the episodes of eval seeds 1..S (the episodes that training seeds 1..S see),
# beside least-loaded, and the threshold with the best mean utility is printed last.
#   bash bench/tune_deferral.sh [S] [marlsched options...]     (default S = 3, default config)
# MARLSCHED_NP sets the rank count (default 4).
set -euo pipefail
S=${1:-3}
shift || true
HERE=$(dirname "$0")
source "$HERE/../launch/env.sh"
BIN=${MARLSCHED_BIN:-$MARLSCHED_BUILD/launch/marlsched}
NP=${MARLSCHED_NP:-4}
GRID=(0 0.02 0.05 0.1 0.15 0.2 0.3)
names=least-loaded
for t in "${GRID[@]}"; do names+=",wait-awhile:$t"; done
for t in 0 0.05 0.1 0.2 0.3; do names+=",green-fit:$t"; done
for k in 0 1 2 3; do names+=",fixed-overflow:$k"; done
for q in 0 0.05 0.1 0.2 0.3 0.6 1; do names+=",guarded-overflow:$q"; done
tmp=$(mktemp)
for s in $(seq 1 "$S"); do
  mpirun -n "$NP" "$BIN" baselines --config "$MARLSCHED_ROOT/launch/configs/default.toml" \
    --baselines "$names" --eval-seed "$s" --eval-episodes 16 --no-eval-bound "$@" \
    | awk -v s="$s" '$1 ~ /^(least-loaded|wait-awhile|green-fit|fixed-overflow|guarded-overflow)/ {print s, $1, $2}' >> "$tmp"
done
echo "threshold  mean utility over training seeds 1..$S (16 episodes each)"
awk '{sum[$2] += $3; n[$2]++} END {for (k in sum) printf "%-18s %8.2f\n", k, sum[k] / n[k]}' "$tmp" |
  sort -k2 -n -r | tee "$tmp.sorted"
echo "best wait-awhile: $(grep '^wait-awhile' "$tmp.sorted" | head -1)"
echo "best green-fit: $(grep '^green-fit' "$tmp.sorted" | head -1)"
echo "best fixed-overflow: $(grep '^fixed-overflow' "$tmp.sorted" | head -1)"
echo "best guarded-overflow: $(grep '^guarded-overflow' "$tmp.sorted" | head -1)"
rm -f "$tmp" "$tmp.sorted"
