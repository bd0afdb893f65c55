#!/usr/bin/env bash
# Every learner on the coop test task (envs/coop: copy the leader's public signal; optimum 1 per
# agent-step, chance 1/3) at 2 ranks x 2 agents within a bounded number of iterations: the
# evaluated match rate must reach 0.9 (far above random's, a third); and for each, a rank killed
# mid-run and resumed reproduces the uninterrupted metrics. tsdqn needs a two-head env (lstcb)
# and has its own test (test_lstcb.sh).
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
COMMON=(train --env coop --agents-per-rank 2 --quiet --traj-every 0 --checkpoint-every 5)

# learns NAME ARGS...: trains with ARGS, checks the eval table's match rates.
learns() {
  local name=$1; shift
  mpi 2 "$BIN" "${COMMON[@]}" "$@" --run-dir "$name" > "$name.log"
  /usr/bin/python3 - "$name/eval.csv" "$name" <<'PY' || fail "$name did not learn the coop task"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
rate = {r["policy"]: float(r["match_rate"]) for r in rows}
learned = rows[0]["policy"]
print(f"{sys.argv[2]}: match rate {rate[learned]:.3f} (random {rate['random']:.3f}, "
      f"follow-leader {rate['follow-leader']:.3f})")
assert rate["follow-leader"] == 1.0, rate
if not rate[learned] >= 0.9:
    sys.exit(f"{learned}: match rate {rate[learned]} < 0.9")
PY
  pass "$name learns the coop task at 2 ranks"
}

learns mappo --algo mappo --iterations 40 --lr-actor 0.003
learns ippo --algo ippo --iterations 40 --lr-actor 0.003
learns mappo-pooled --algo mappo --critic pooled --iterations 40 --lr-actor 0.003
# Heterogeneous agents: one actor per group, each group's agents split over both ranks.
learns mappo-groups --algo mappo --actor-groups 0,1,1,0 --iterations 40 --lr-actor 0.003
learns dqn --algo dqn --iterations 60
learns masac --algo masac --iterations 60
learns maddpg --algo maddpg --iterations 60
learns es --algo es --iterations 400
# Imitation, then improvement: three DAgger rounds from the optimal follow-leader teacher are
# enough (labels from both ranks, θ fitted with gradients summed over the ranks).
learns es-imitate --algo es --es-imitate follow-leader --es-imitate-iterations 3 --iterations 3
grep -q "parameters identical on all ranks: yes" es-imitate.log || fail "es-imitate: parameters differ across ranks"

for algo in mappo ippo dqn masac maddpg es; do
  rm -rf straight crashed
  kill_resume_matches "$algo" 1:7 "${COMMON[@]}" --algo "$algo" --iterations 10 --eval-episodes 1
  pass "$algo: killed at iteration 7 and resumed, the metrics equal the uninterrupted run's"
done
rm -rf straight crashed
# Killed within the DAgger rounds: the checkpoint carries the labels so far.
kill_resume_matches "es with imitation" 1:7 "${COMMON[@]}" --algo es --es-imitate follow-leader \
  --es-imitate-iterations 8 --iterations 10 --eval-episodes 1
pass "es with imitation: killed in the DAgger rounds and resumed, the metrics equal the uninterrupted run's"
expect_error "a teacher that plans every site, at 2 ranks" 2 "--es-imitate mpc plans for every site at once: train with one rank holding every agent (mpirun -n 1 --agents-per-rank 4)" -- \
  mpi 2 "$BIN" train --algo es --agents-per-rank 2 --es-imitate mpc --es-imitate-iterations 1 --iterations 1 --run-dir mpc2 --quiet
expect_error "MAPPO's teacher that plans every site, at 2 ranks" 2 "--imitate mpc plans for every site at once: train with one rank holding every agent (mpirun -n 1 --agents-per-rank 4)" -- \
  mpi 2 "$BIN" train --agents-per-rank 2 --imitate mpc --imitate-iterations 1 --iterations 1 --run-dir mpc5 --quiet
expect_error "a teacher the env lacks" 2 "unknown baseline 'mpc' for env coop" -- \
  "$BIN" train --env coop --algo es --agents-per-rank 4 --es-imitate mpc --es-imitate-iterations 1 --iterations 1 --run-dir mpc3 --quiet
expect_error "a teacher without rounds" 2 "--es-imitate and --es-imitate-iterations go together" -- \
  "$BIN" train --algo es --agents-per-rank 4 --es-imitate mpc --iterations 1 --run-dir mpc4 --quiet
rm -rf straight crashed
kill_resume_matches "pooled-critic MAPPO" 1:7 "${COMMON[@]}" --critic pooled --iterations 10 --eval-episodes 1
pass "pooled-critic MAPPO: killed and resumed, the metrics equal the uninterrupted run's"
rm -rf straight crashed
kill_resume_matches "MAPPO with actor groups" 1:7 "${COMMON[@]}" --actor-groups 0,1,1,0 --iterations 10 --eval-episodes 1
pass "MAPPO with actor groups: killed and resumed, the metrics equal the uninterrupted run's"
