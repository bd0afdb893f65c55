#!/usr/bin/env bash
# Offline RL against behaviour cloning on a mixed dataset (issue 25): collects random and
# least-loaded episodes on the default geodc config (4 sites, 2 ranks x 2 agents; or CONFIG; training
# seeds), trains `--algo bc`, `--algo awr` and `--algo cql` on both files with SEEDS seeds each,
# evaluates each greedily on the held-out episodes (eval seed 1000) beside every heuristic, and
# compares awr and cql with bc (`marlsched compare --versus "bc (greedy)"`: paired differences
# over seeds and episodes, 95 % intervals); then awr and bc again with both policies sampling
# instead of greedy (`eval --no-eval-greedy`, the episode's own draws; cql's greedy Q-policy has
# no sampling form). Each run is also evaluated greedily on 32 held-out episodes (the same eval
# seed: the 8 and 24 more) and compared the same way, since 8 episodes proved too few to tell
# these policies apart on validation episodes. cql's settings were chosen on validation
# episodes (eval seed 2000, docs/offline.md), never on the held-out ones.
# Usage: bash bench/offline_rl.sh [WORK_DIR]   (env: seeds FIRST_SEED=1 to SEEDS=5, EPISODES=25
#        ALGOS="bc awr cql" ITERATIONS=20 EPOCHS=5 LR=3e-3 CQL_ITERATIONS=50 CQL_ALPHA=0.3
#        CQL_GAMMA=0.99 MARLSCHED_BIN=build/launch/marlsched; an existing WORK_DIR keeps its
#        datasets, so FIRST_SEED=6 SEEDS=10 adds seeds to an earlier call's; CONFIG and
#        AGENTS_PER_RANK pick another layout, e.g. CONFIG=launch/configs/geodc-scale.toml
#        AGENTS_PER_RANK=4 for 8 sites with the neighbourhood team reward)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/launch/env.sh" > /dev/null
BIN=${MARLSCHED_BIN:-$ROOT/build/launch/marlsched}
WORK=${1:-$(mktemp -d)}
SEEDS=${SEEDS:-5} FIRST_SEED=${FIRST_SEED:-1} EPISODES=${EPISODES:-25} ITERATIONS=${ITERATIONS:-20} EPOCHS=${EPOCHS:-5}
LR=${LR:-3e-3} ALGOS=${ALGOS:-bc awr cql} CQL_ITERATIONS=${CQL_ITERATIONS:-50}
CQL_ALPHA=${CQL_ALPHA:-0.3} CQL_GAMMA=${CQL_GAMMA:-0.99}
CONFIG=${CONFIG:-$ROOT/launch/configs/default.toml} AGENTS_PER_RANK=${AGENTS_PER_RANK:-2}
CFG=(--config "$CONFIG" --agents-per-rank "$AGENTS_PER_RANK" --quiet)
mkdir -p "$WORK"
for policy in random least-loaded; do
  [ -d "$WORK/data-$policy/trajectories" ] && continue  # collected by an earlier call
  echo "== dataset: $policy, $EPISODES episodes of each of 4 env copies ($WORK/data-$policy)"
  mpirun -n 2 "$BIN" collect "${CFG[@]}" --heuristic "$policy" --episodes "$EPISODES" \
    --run-dir "$WORK/data-$policy" --force > "$WORK/data-$policy.log"
done
runs=() sampling=() held32=()
for algo in $ALGOS; do
  case $algo in
    bc | awr) args=(--iterations "$ITERATIONS" --lr-actor "$LR") ;;
    # DQN's networks with the team reward and discount of the default config's MAPPO (β = 1,
    # γ = 0.99), a target copy every 50 of the 375 gradient steps of an iteration.
    cql) args=(--iterations "$CQL_ITERATIONS" --cql-alpha "$CQL_ALPHA" --dqn-team-reward 1
               --dqn-gamma "$CQL_GAMMA" --dqn-target-every 50) ;;
    *) echo "unknown algorithm $algo" >&2; exit 2 ;;
  esac
  for s in $(seq "$FIRST_SEED" "$SEEDS"); do  # seeds FIRST_SEED..SEEDS
    start=$(date +%s.%N)
    mpirun -n 2 "$BIN" train "${CFG[@]}" --algo "$algo" "${args[@]}" \
      --dataset "$WORK/data-random,$WORK/data-least-loaded" --seed "$s" \
      --offline-epochs "$EPOCHS" --traj-every 0 --run-dir "$WORK/$algo-$s" --force \
      > "$WORK/$algo-$s.log"
    printf '== %s, seed %s: greedy utility %s (%.1f s)\n' "$algo" "$s" \
      "$(grep "^$algo (greedy)" "$WORK/$algo-$s/eval.csv" | cut -d, -f3)" \
      "$(echo "$(date +%s.%N) - $start" | bc)"
    runs+=("$WORK/$algo-$s")
    mpirun -n 2 "$BIN" eval --model "$WORK/$algo-$s" --eval-episodes 32 \
      --baselines least-loaded,guarded-overflow --no-eval-bound --out "$WORK/$algo-$s/held32" \
      > "$WORK/$algo-$s.held32.log"
    held32+=("$WORK/$algo-$s/held32")
    [ "$algo" = cql ] && continue
    mpirun -n 2 "$BIN" eval --model "$WORK/$algo-$s" --no-eval-greedy --baselines least-loaded \
      --no-eval-bound --out "$WORK/$algo-$s/sampling" > "$WORK/$algo-$s.sampling.log"
    sampling+=("$WORK/$algo-$s/sampling")
  done
done
echo "== greedy"
"$BIN" compare "${runs[@]}" --versus "bc (greedy)" --out "$WORK/compare"
echo "== greedy, 32 held-out episodes"
"$BIN" compare "${held32[@]}" --versus "bc (greedy)" --out "$WORK/compare-32"
if [ ${#sampling[@]} -gt 0 ]; then
  echo "== sampling"
  "$BIN" compare "${sampling[@]}" --versus "bc" --out "$WORK/compare-sampling"
fi
