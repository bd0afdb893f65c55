#!/usr/bin/env bash
# Offline RL against behaviour cloning on a mixed dataset (issue 25): collects random and
# least-loaded episodes on the default geodc config (4 sites, 2 ranks x 2 agents; training
# seeds), trains `--algo bc` and `--algo awr` on both files with SEEDS seeds each, evaluates each
# greedily on the held-out episodes (eval seed 1000) beside every heuristic, and compares awr
# with bc (`marlsched compare --versus "bc (greedy)"`: paired differences over seeds and
# episodes, 95 % intervals); then the same with both policies sampling instead of greedy
# (`eval --no-eval-greedy`, the episode's own draws).
# Usage: bash bench/offline_awr.sh [WORK_DIR]   (env: SEEDS=5 EPISODES=25 ITERATIONS=20
#        EPOCHS=5 LR=3e-3 MARLSCHED_BIN=build/launch/marlsched)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/launch/env.sh" > /dev/null
BIN=${MARLSCHED_BIN:-$ROOT/build/launch/marlsched}
WORK=${1:-$(mktemp -d)}
SEEDS=${SEEDS:-5} EPISODES=${EPISODES:-25} ITERATIONS=${ITERATIONS:-20} EPOCHS=${EPOCHS:-5}
LR=${LR:-3e-3}
CFG=(--config "$ROOT/launch/configs/default.toml" --agents-per-rank 2 --quiet)
mkdir -p "$WORK"
for policy in random least-loaded; do
  echo "== dataset: $policy, $EPISODES episodes of each of 4 env copies ($WORK/data-$policy)"
  mpirun -n 2 "$BIN" collect "${CFG[@]}" --heuristic "$policy" --episodes "$EPISODES" \
    --run-dir "$WORK/data-$policy" --force > "$WORK/data-$policy.log"
done
runs=()
for algo in bc awr; do
  for s in $(seq 1 "$SEEDS"); do
    start=$(date +%s.%N)
    mpirun -n 2 "$BIN" train "${CFG[@]}" --algo "$algo" \
      --dataset "$WORK/data-random,$WORK/data-least-loaded" --seed "$s" \
      --iterations "$ITERATIONS" --offline-epochs "$EPOCHS" --lr-actor "$LR" --traj-every 0 \
      --run-dir "$WORK/$algo-$s" --force > "$WORK/$algo-$s.log"
    printf '== %s, seed %s: greedy utility %s (%.1f s)\n' "$algo" "$s" \
      "$(grep "^$algo (greedy)" "$WORK/$algo-$s/eval.csv" | cut -d, -f3)" \
      "$(echo "$(date +%s.%N) - $start" | bc)"
    mpirun -n 2 "$BIN" eval --model "$WORK/$algo-$s" --no-eval-greedy --baselines least-loaded \
      --no-eval-bound --out "$WORK/$algo-$s/sampling" > "$WORK/$algo-$s.sampling.log"
    runs+=("$WORK/$algo-$s")
  done
done
echo "== greedy"
"$BIN" compare "${runs[@]}" --versus "bc (greedy)" --out "$WORK/compare"
echo "== sampling"
"$BIN" compare "${runs[@]/%//sampling}" --versus "bc" --out "$WORK/compare-sampling"
