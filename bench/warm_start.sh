#!/usr/bin/env bash
# MAPPO warm-started from behaviour cloning against MAPPO from scratch (issue 25): collects a
# least-loaded dataset on the default geodc config (4 sites, 2 ranks x 2 agents), clones it
# (`--algo bc`, one run per seed), then trains MAPPO with SEEDS seeds from scratch and from each
# seed's clone (`--init-from`), ITERATIONS iterations each, and prints: per seed, the scratch run's
# final training utility (mean episode return of its last 10 iterations) and the first
# iteration at which each run's 10-iteration moving average reaches it; the mean learning curves
# (every 10th iteration, with the spread over seeds) go to WORK_DIR/curves.csv; and `marlsched
# compare` of each on the held-out episodes.
# Usage: bash bench/warm_start.sh [WORK_DIR]   (env: SEEDS=5 EPISODES=25 ITERATIONS=100
#        BC_ITERATIONS=20 MARLSCHED_BIN=build/launch/marlsched)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/launch/env.sh" > /dev/null
BIN=${MARLSCHED_BIN:-$ROOT/build/launch/marlsched}
WORK=${1:-$(mktemp -d)}
SEEDS=${SEEDS:-5} EPISODES=${EPISODES:-25} ITERATIONS=${ITERATIONS:-100}
BC_ITERATIONS=${BC_ITERATIONS:-20}
CFG=(--config "$ROOT/launch/configs/default.toml" --agents-per-rank 2 --quiet --traj-every 0)
mkdir -p "$WORK"
echo "== dataset: least-loaded, $EPISODES episodes of each of 4 env copies"
mpirun -n 2 "$BIN" collect "${CFG[@]}" --heuristic least-loaded --episodes "$EPISODES" \
  --run-dir "$WORK/data" --force > "$WORK/data.log"
for s in $(seq 1 "$SEEDS"); do
  mpirun -n 2 "$BIN" train "${CFG[@]}" --algo bc --dataset "$WORK/data" --seed "$s" \
    --iterations "$BC_ITERATIONS" --offline-epochs 5 --lr-actor 3e-3 --no-eval-after \
    --run-dir "$WORK/bc-$s" --force > "$WORK/bc-$s.log"
  for kind in scratch warm; do
    extra=()
    [ "$kind" = warm ] && extra=(--init-from "$WORK/bc-$s")
    mpirun -n 2 "$BIN" train "${CFG[@]}" --algo mappo --seed "$s" --iterations "$ITERATIONS" \
      "${extra[@]}" --run-dir "$WORK/$kind-$s" --force > "$WORK/$kind-$s.log"
  done
  echo "== seed $s done"
done
/usr/bin/python3 - "$WORK" "$SEEDS" <<'PYEOF'
import csv, statistics, sys
work, seeds = sys.argv[1], int(sys.argv[2])
def curve(run):
    return [float(r["episode_return"]) for r in csv.DictReader(open(f"{work}/{run}/metrics.csv"))]
def moving(c, w=10):
    return [statistics.mean(c[max(0, i - w + 1):i + 1]) for i in range(len(c))]
reach = {"scratch": [], "warm": []}
curves = {"scratch": [], "warm": []}
for s in range(1, seeds + 1):
    sc, wm = curve(f"scratch-{s}"), curve(f"warm-{s}")
    curves["scratch"].append(sc)
    curves["warm"].append(wm)
    target = statistics.mean(sc[-10:])
    line = f"seed {s}: scratch final (last 10 iterations) {target:.2f};"
    for kind, c in (("scratch", sc), ("warm", wm)):
        m = moving(c)
        it = next((i + 1 for i, v in enumerate(m) if v >= target), None)
        reach[kind].append(it)
        line += f" {kind} reaches it at iteration {it}, first 10 iterations {statistics.mean(c[:10]):.2f};"
    print(line)
for kind in reach:
    its = [i for i in reach[kind] if i is not None]
    print(f"{kind}: reaches the scratch final utility in {len(its)} of {seeds} seeds, "
          f"mean iteration {statistics.mean(its):.1f}" if its else f"{kind}: never")
with open(f"{work}/curves.csv", "w") as f:
    f.write("iteration,scratch_mean,scratch_min,scratch_max,warm_mean,warm_min,warm_max\n")
    n = len(curves["scratch"][0])
    for i in range(n):
        row = [i + 1]
        for kind in ("scratch", "warm"):
            v = [c[i] for c in curves[kind]]
            row += [statistics.mean(v), min(v), max(v)]
        f.write(",".join(f"{x:.3f}" if isinstance(x, float) else str(x) for x in row) + "\n")
print(f"wrote {work}/curves.csv")
PYEOF
awk -F, 'NR == 1 || (NR - 1) % 10 == 0' "$WORK/curves.csv"
# Both are "mappo (greedy)" in eval.csv: one comparison each, on the same held-out episodes.
for kind in scratch warm; do
  echo "== held-out evaluation, $kind"
  "$BIN" compare $(for s in $(seq 1 "$SEEDS"); do echo "$WORK/$kind-$s"; done) \
    --out "$WORK/compare-$kind" | grep -E "mappo|least-loaded|Best"
done
