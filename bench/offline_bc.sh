#!/usr/bin/env bash
# Behaviour cloning against the policy it clones (issue 25): collects a least-loaded dataset on
# the default geodc config (4 sites, 2 ranks x 2 agents; training seeds), trains `--algo bc` on
# it with SEEDS seeds, evaluates each greedily on the held-out episodes (eval seed 1000) beside
# every heuristic, and prints each seed's utility against least-loaded's, the mean ratio with a
# 95 % t-interval over seeds, and `marlsched compare` over the seeds.
# Usage: bash bench/offline_bc.sh [WORK_DIR]   (env: SEEDS=5 EPISODES=25 ITERATIONS=20
#        EPOCHS=5 LR=3e-3 POLICY=least-loaded MARLSCHED_BIN=build/launch/marlsched)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/launch/env.sh" > /dev/null
BIN=${MARLSCHED_BIN:-$ROOT/build/launch/marlsched}
WORK=${1:-$(mktemp -d)}
SEEDS=${SEEDS:-5} EPISODES=${EPISODES:-25} ITERATIONS=${ITERATIONS:-20} EPOCHS=${EPOCHS:-5}
LR=${LR:-3e-3} POLICY=${POLICY:-least-loaded}
CFG=(--config "$ROOT/launch/configs/default.toml" --agents-per-rank 2 --quiet)
mkdir -p "$WORK"
echo "== dataset: $POLICY, $EPISODES episodes of each of 4 env copies ($WORK/data)"
mpirun -n 2 "$BIN" collect "${CFG[@]}" --heuristic "$POLICY" --episodes "$EPISODES" \
  --run-dir "$WORK/data" --force > "$WORK/data.log"
runs=()
for s in $(seq 1 "$SEEDS"); do
  echo "== bc, seed $s"
  mpirun -n 2 "$BIN" train "${CFG[@]}" --algo bc --dataset "$WORK/data" --seed "$s" \
    --iterations "$ITERATIONS" --offline-epochs "$EPOCHS" --lr-actor "$LR" --traj-every 0 \
    --run-dir "$WORK/bc-$s" --force > "$WORK/bc-$s.log"
  tail -n 1 "$WORK/bc-$s/metrics.csv" | awk -F, '{print "   last iteration: bc_loss " $(NF-2) ", bc_accuracy " $(NF-1)}'
  runs+=("$WORK/bc-$s")
done
/usr/bin/python3 - "$POLICY" "${runs[@]}" <<'PYEOF'
import csv, math, statistics, sys
policy, runs = sys.argv[1], sys.argv[2:]
ratios = []
for r in runs:
    rows = {row["policy"]: row for row in csv.DictReader(open(r + "/eval.csv"))}
    bc, ref = float(rows["bc (greedy)"]["utility"]), float(rows[policy]["utility"])
    ratios.append(bc / ref)
    print(f"{r}: bc (greedy) {bc:.2f}, {policy} {ref:.2f}, ratio {bc / ref:.4f}")
m = statistics.mean(ratios)
if len(ratios) > 1:
    # two-sided 95 % t quantiles for 1..9 degrees of freedom
    t = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262][min(len(ratios), 10) - 2]
    h = t * statistics.stdev(ratios) / math.sqrt(len(ratios))
    print(f"ratio bc/{policy} over {len(ratios)} seeds: mean {m:.4f}, 95 % t-interval "
          f"[{m - h:.4f}, {m + h:.4f}], min {min(ratios):.4f}")
else:
    print(f"ratio bc/{policy}: {m:.4f}")
PYEOF
"$BIN" compare "${runs[@]}" --out "$WORK/compare" | tail -n 20
