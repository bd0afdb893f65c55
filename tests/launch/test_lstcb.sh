#!/usr/bin/env bash
# The cooperative batching env (LSTCB) end to end: the two-timescale DQN trained from
# launch/configs/lstcb.toml uses less energy per inference than the timeout, AIMD and
# no-batching baselines, violates the SLO for under 0.5 % of requests, and less often than
# no-batching and fixed batching (docs/envs/lstcb.md has the whole comparison, including the
# slack-batching baseline, which the policy does not beat); single-timescale DQN and MAPPO run on the same
# env; a killed and resumed two-timescale run (stopped mid-window) reproduces the metrics.
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
CFG="$SRC/launch/configs/lstcb.toml"
"$BIN" train --config "$CFG" --agents-per-rank 4 --traj-every 0 --quiet --run-dir ts > ts.log
cat ts/eval.md
/usr/bin/python3 - ts/eval.csv <<'PY'
import csv, sys
rows = {r["policy"]: r for r in csv.DictReader(open(sys.argv[1]))}
assert set(rows) == {"tsdqn", "no-batching", "fixed-batch", "timeout-batching", "aimd",
                     "slack-batching"}, rows.keys()
e = {p: float(r["energy_per_inference_j"]) for p, r in rows.items()}
v = {p: float(r["slo_violation_rate"]) for p, r in rows.items()}
for p in rows:
    print(f"{p:18s} energy/inference {e[p]:.4f} J  SLO violations {v[p]:.4f}")
for b in ("timeout-batching", "aimd", "no-batching"):
    if not e["tsdqn"] < e[b]:
        sys.exit(f"tsdqn uses {e['tsdqn']} J per inference, not less than {b} ({e[b]})")
for b in ("no-batching", "fixed-batch"):
    if not v["tsdqn"] < v[b]:
        sys.exit(f"tsdqn violates the SLO at {v['tsdqn']}, not less than {b} ({v[b]})")
if not v["tsdqn"] < 0.005:
    sys.exit(f"tsdqn violates the SLO for {v['tsdqn']} of requests (>= 0.5 %)")
PY
pass "two-timescale DQN: less energy than timeout/AIMD/no batching, < 0.5 % violations, fewer than no/fixed batching"

"$BIN" train --config "$CFG" --algo dqn --agents-per-rank 4 --traj-every 0 --quiet --iterations 20 \
  --eval-episodes 2 --run-dir flat > flat.log
grep -q "| dqn " flat/eval.md || fail "no single-timescale DQN row: $(cat flat/eval.md)"
mpi 2 "$BIN" train --env lstcb --algo mappo --agents-per-rank 2 --iterations 2 --rollout-steps 40 \
  --eval-episodes 2 --envs-per-rank 2 --run-dir mappo > mappo.log
grep -q "| mappo " mappo/eval.md || fail "no MAPPO row: $(cat mappo/eval.md)"
pass "single-timescale DQN and MAPPO train and evaluate on lstcb"

# Iterations of 32 steps end mid-window (windows of 40), so the checkpoint holds an open window.
ARGS=(train --config "$CFG" --agents-per-rank 2 --iterations 8 --checkpoint-every 4 --dqn-warmup 256
      --dqn-batch 64 --dqn-updates 4 --ts-long-warmup 16 --ts-long-batch 8 --envs-per-rank 2
      --quiet --no-eval-after --traj-every 0)
kill_resume_matches tsdqn 1:6 "${ARGS[@]}"
pass "kill -9 + resume of a two-timescale run (mid-window checkpoint) reproduces the metrics exactly"
