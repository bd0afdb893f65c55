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
# A planner that decides for every site at once (the MPC) as a base policy or teacher with the
# sites spread over 2 ranks: each rank plans from replicas of the other's shards
# (World::set_every_shard). ES over the MPC, killed and resumed, reproduces its metrics; MAPPO
# imitating it trains; its evaluation at 2 ranks equals the one at 1 rank.
rm -rf straight crashed
kill_resume_matches "es over mpc" 1:3 train --algo es --agents-per-rank 2 --es-base mpc \
  --envs-per-rank 2 --iterations 4 --checkpoint-every 1 --eval-episodes 2 --traj-every 0 --quiet
pass "es over mpc at 2 ranks: killed and resumed, the metrics equal the uninterrupted run's"
mpi 2 "$BIN" train --agents-per-rank 2 --imitate mpc --imitate-iterations 1 --iterations 1 \
  --envs-per-rank 2 --eval-episodes 2 --traj-every 0 --run-dir mpc5 --quiet > mpc5.log
pass "mappo imitating mpc trains at 2 ranks"
mpi 2 "$BIN" baselines --agents-per-rank 2 --baselines mpc --envs-per-rank 2 --eval-episodes 2 \
  --no-eval-bound > mpc-r2.log
mpi 1 "$BIN" baselines --agents-per-rank 4 --baselines mpc --envs-per-rank 2 --eval-episodes 2 \
  --no-eval-bound > mpc-r1.log
row1=$(grep "^mpc " mpc-r1.log) && row2=$(grep "^mpc " mpc-r2.log) || fail "no mpc row in the tables"
[ "$row1" = "$row2" ] || fail "mpc at 2 ranks ($row2) differs from 1 rank ($row1)"
pass "mpc evaluated at 2 ranks scores as at 1 rank: $row2"
expect_error "a teacher the env lacks" 2 "unknown baseline 'mpc' for env coop" -- \
  "$BIN" train --env coop --algo es --agents-per-rank 4 --es-imitate mpc --es-imitate-iterations 1 --iterations 1 --run-dir mpc3 --quiet
expect_error "a teacher without rounds" 2 "--es-imitate and --es-imitate-iterations go together" -- \
  "$BIN" train --algo es --agents-per-rank 4 --es-imitate mpc --iterations 1 --run-dir mpc4 --quiet
# es_beats_random NAME WHAT ARGS...: a short ES run on geodc at 2 ranks x 2 sites with ARGS; its
# greedy evaluation must score above random's.
es_beats_random() {
  local name=$1 what=$2; shift 2
  mpi 2 "$BIN" train --agents-per-rank 2 --algo es "$@" --envs-per-rank 8 --iterations 30 \
    --eval-episodes 4 --traj-every 0 --run-dir "$name" --quiet > "$name.log"
  /usr/bin/python3 - "$name/eval.csv" "$what" <<'PY' || fail "$what does not beat random"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
u = {r["policy"]: float(r["utility"]) for r in rows}
print(f"{sys.argv[2]}: utility {u['es (greedy)']:.2f}, random {u['random']:.2f}")
assert u["es (greedy)"] > u["random"], u
PY
  pass "$what beats random on geodc at 2 ranks"
}

# Per-target ES needs a targeted action space (geodc; the coop task has none): a short run at
# 2 ranks x 2 sites beats random, and a killed run resumes exactly.
es_beats_random es-targets "per-target es" --es-actor targets
rm -rf straight crashed
kill_resume_matches "per-target es" 1:7 train --agents-per-rank 2 --quiet --traj-every 0 \
  --checkpoint-every 5 --algo es --es-actor targets --envs-per-rank 4 --iterations 10 --eval-episodes 1
pass "per-target es: killed and resumed, the metrics equal the uninterrupted run's"
expect_error "a per-target ES without targets" 2 "--es-actor targets needs an env with a targeted action space" -- \
  "$BIN" train --env coop --algo es --agents-per-rank 4 --es-actor targets --iterations 1 --run-dir pt1 --quiet
# Job classes (geodc --action-classes type): one (mode, target) per job type, a factored action
# space that ES scores head by head. A short per-target run beats random at 2 ranks, a killed run
# resumes exactly, the DAgger fit from the MPC in that space labels every head; MAPPO's per-target
# actor, which scores one decision, refuses it.
es_beats_random es-classes "es with job classes" --es-actor targets --action-classes type
rm -rf straight crashed
kill_resume_matches "es with job classes" 1:7 train --agents-per-rank 2 --quiet --traj-every 0 \
  --checkpoint-every 5 --algo es --action-classes type --envs-per-rank 4 --iterations 10 --eval-episodes 1
pass "es with job classes: killed and resumed, the metrics equal the uninterrupted run's"
"$BIN" train --agents-per-rank 4 --algo es --action-classes type --es-imitate mpc \
  --es-imitate-iterations 2 --iterations 2 --envs-per-rank 2 --eval-episodes 1 --traj-every 0 \
  --run-dir es-classes-mpc --quiet > es-classes-mpc.log
/usr/bin/python3 - es-classes-mpc/metrics.csv <<'PY' || fail "the DAgger fit in the factored space"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
acc = float(rows[-1]["imitation_accuracy"])
print(f"es --action-classes type --es-imitate mpc: every head right on {acc:.3f} of the labels")
assert acc > 0.5, acc
PY
pass "es imitates the MPC's per-class decisions"
expect_error "MAPPO's per-target actor with job classes" 2 "--actor targets scores one (mode, target) decision per agent" -- \
  "$BIN" train --agents-per-rank 4 --actor targets --action-classes type --iterations 1 --run-dir pt2 --quiet
# MAPPO with common random numbers: groups of copies share episodes, advantages centred on the
# group's; it learns the coop task and resumes exactly.
learns mappo-crn --algo mappo --iterations 40 --lr-actor 0.003 --envs-per-rank 4 --common-episodes 2
rm -rf straight crashed
kill_resume_matches "MAPPO with common episodes" 1:7 "${COMMON[@]}" --envs-per-rank 4 \
  --common-episodes 2 --iterations 10 --eval-episodes 1
pass "MAPPO with common episodes: killed and resumed, the metrics equal the uninterrupted run's"
expect_error "common episodes that do not divide the copies" 2 "mappo trains on groups of 2 env copies that share episodes: --envs-per-rank must be a multiple of 2, got 3" -- \
  "$BIN" train --agents-per-rank 4 --envs-per-rank 3 --common-episodes 2 --iterations 1 --run-dir crn1 --quiet
rm -rf straight crashed
kill_resume_matches "pooled-critic MAPPO" 1:7 "${COMMON[@]}" --critic pooled --iterations 10 --eval-episodes 1
pass "pooled-critic MAPPO: killed and resumed, the metrics equal the uninterrupted run's"
# The privileged critic (geodc's hindsight of the episode ahead, gathered across both ranks in
# training only) resumes exactly; an env without privileged fields refuses it.
rm -rf straight crashed
kill_resume_matches "privileged-critic MAPPO" 1:7 train --agents-per-rank 2 --quiet --traj-every 0 \
  --checkpoint-every 5 --algo mappo --critic-privileged --rollout-steps 16 --iterations 10 --eval-episodes 1
pass "privileged-critic MAPPO: killed and resumed, the metrics equal the uninterrupted run's"
expect_error "a privileged critic without privileged fields" 2 "--critic-privileged needs an env with privileged fields" -- \
  "$BIN" train --env coop --algo mappo --critic-privileged --agents-per-rank 4 --iterations 1 --run-dir pc1 --quiet
rm -rf straight crashed
kill_resume_matches "MAPPO with actor groups" 1:7 "${COMMON[@]}" --actor-groups 0,1,1,0 --iterations 10 --eval-episodes 1
pass "MAPPO with actor groups: killed and resumed, the metrics equal the uninterrupted run's"
