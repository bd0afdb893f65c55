#!/usr/bin/env bash
# Offline learning from a dataset: behaviour cloning (--algo bc) on a collected least-loaded
# dataset learns its actions, is deterministic, resumes exactly, exports and evaluates like a
# trained run, and so does cql; bad datasets are refused with one message and exit code 2.
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
G=(--env geodc --episode-slots 24 --envs-per-rank 2 --agents-per-rank 2 --quiet)
mpi 2 "$BIN" collect --heuristic least-loaded --episodes 4 "${G[@]}" --run-dir ll > ll.log
B=(train --algo bc --dataset ll "${G[@]}" --iterations 6 --rollout-steps 24 --offline-epochs 10 --lr-actor 3e-3
   --offline-minibatch 64 --no-eval-after --traj-every 0)
mpi 2 "$BIN" "${B[@]}" --run-dir bc > bc.log
mpi 2 "$BIN" "${B[@]}" --run-dir bc_again > bc_again.log
cmp bc/metrics.csv bc_again/metrics.csv || fail "two bc runs on the same dataset differ"
/usr/bin/python3 - bc/metrics.csv <<'PYEOF' || fail "bc did not learn the logged actions: $(cat bc/metrics.csv)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
acc = [float(r["bc_accuracy"]) for r in rows]
loss = [float(r["bc_loss"]) for r in rows]
assert len(rows) == 6, len(rows)
assert loss[-1] < loss[0] and acc[-1] > acc[0], (loss, acc)
assert acc[-1] > 0.8, acc  # least-loaded is a function of what the actor sees
print("ok", acc[0], acc[-1])
PYEOF
pass "bc learns the dataset's actions, deterministically"
mpi 2 "$BIN" "${B[@]}" --no-share-actor --run-dir bc_per_agent > bc_per_agent.log 2>&1 \
  || fail "bc with one actor per agent: $(cat bc_per_agent.log)"
pass "bc with one actor per agent"

kill_resume_matches "bc" 1:5 "${B[@]}" --checkpoint-every 2
pass "a killed bc run resumes exactly"

# exports_and_evaluates RUN: the run (named after its algorithm) exports, and its exported
# policy and its models evaluate.
exports_and_evaluates() {
  local run=$1
  "$BIN" export "$run" > "export_$run.log" || fail "export of a $run run: $(cat "export_$run.log")"
  "$BIN" eval --policy "$run/policy.pt" --eval-episodes 1 --envs-per-rank 1 \
    --baselines least-loaded --out "evp_$run" > "evp_$run.log" \
    || fail "eval --policy of a $run run: $(cat "evp_$run.log")"
  mpi 2 "$BIN" eval --model "$run" --eval-episodes 1 --envs-per-rank 1 --baselines least-loaded \
    --out "evm_$run" > "evm_$run.log" || fail "eval --model of a $run run: $(cat "evm_$run.log")"
  grep -q "^$run" "evm_$run/eval.csv" || fail "eval.csv names no $run row: $(cat "evm_$run/eval.csv")"
}
exports_and_evaluates bc
pass "a bc run exports and evaluates"

# cql: DQN's Q-networks with CQL's penalty on the same dataset; repeats, resumes exactly (its
# model files hold no replay buffer: the dataset is read again), exports and evaluates.
Q=(train --algo cql --dataset ll "${G[@]}" --iterations 4 --dqn-rollout-steps 24 --offline-epochs 2
   --offline-minibatch 64 --dqn-target-every 5 --no-eval-after --traj-every 0)
mpi 2 "$BIN" "${Q[@]}" --run-dir cql > cql.log
grep -q "td_loss,cql_gap,q_mean,grad_norm" cql/metrics.csv || fail "cql metrics: $(head -1 cql/metrics.csv)"
rm -rf straight crashed
kill_resume_matches "cql" 1:3 "${Q[@]}" --checkpoint-every 2
cmp cql/metrics.csv straight/metrics.csv || fail "two cql runs on the same dataset differ"
exports_and_evaluates cql
pass "cql repeats, resumes exactly, exports and evaluates"

# --team-scope targets reaches the offline learners: with each site's targets itself and one
# ring neighbour, the team reward over them is not the mean over all four agents.
R=("${G[@]}" --site-neighbours 1)
mpi 2 "$BIN" collect --heuristic least-loaded --episodes 2 "${R[@]}" --run-dir ring > ring.log
for scope in all targets; do
  mpi 2 "$BIN" train --algo cql --dataset ring "${R[@]}" --team-scope $scope --dqn-team-reward 1 \
    --iterations 1 --dqn-rollout-steps 24 --offline-minibatch 64 --no-eval-after --traj-every 0 \
    --run-dir "cql_$scope" > "cql_$scope.log" 2>&1 || fail "cql, team scope $scope: $(cat "cql_$scope.log")"
  mpi 2 "$BIN" train --algo awr --dataset ring "${R[@]}" --team-scope $scope --team-reward 1 \
    --iterations 1 --rollout-steps 24 --offline-minibatch 64 --no-eval-after --traj-every 0 \
    --run-dir "awr_$scope" > "awr_$scope.log" 2>&1 || fail "awr, team scope $scope: $(cat "awr_$scope.log")"
done
for algo in cql awr; do
  ! cmp -s "${algo}_all/metrics.csv" "${algo}_targets/metrics.csv" \
    || fail "$algo trained the same with --team-scope targets as with all"
done
pass "cql and awr train on the team reward of --team-scope"

# Warm starts: MAPPO from the cloned actor; awr on the same dataset, then MAPPO from its actor
# and critic.
mpi 2 "$BIN" train --algo mappo "${G[@]}" --iterations 2 --rollout-steps 24 --init-from bc \
  --no-eval-after --traj-every 0 --run-dir warm > warm.log
grep -q "starting from the parameters of bc" warm.log || fail "no warm start: $(cat warm.log)"
mpi 2 "$BIN" train --algo awr --dataset ll "${G[@]}" --iterations 2 --rollout-steps 24 \
  --offline-minibatch 64 --no-eval-after --traj-every 0 --run-dir awr > awr.log
grep -q "awr_loss,awr_accuracy,value_loss,mean_weight" awr/metrics.csv || fail "awr metrics: $(head -1 awr/metrics.csv)"
expect_error "ippo from a model with mappo's centralized critic" 2 "different layout" -- \
  mpi 2 "$BIN" train --algo ippo "${G[@]}" --iterations 1 --rollout-steps 24 --init-from awr \
  --no-eval-after --traj-every 0 --run-dir warm_awr
expect_error "es cannot warm-start" 2 "es cannot start from a trained model" -- \
  mpi 2 "$BIN" train --algo es "${G[@]}" --iterations 1 --init-from awr --no-eval-after \
  --traj-every 0 --run-dir warm_es
expect_error "mappo cannot warm-start from cql's Q-networks" 2 "is not a MAPPO model" -- \
  mpi 2 "$BIN" train --algo mappo "${G[@]}" --iterations 1 --rollout-steps 24 --init-from cql \
  --no-eval-after --traj-every 0 --run-dir warm_cql
expect_error "--init-from at another rank count" 2 "holds the models of 2 ranks" -- \
  "$BIN" train --algo mappo --env geodc --episode-slots 24 --envs-per-rank 2 --agents-per-rank 4 \
  --quiet --init-from bc --run-dir bad7
pass "warm starts from bc and awr runs"

# Bad datasets: one message, exit 2.
mpi 2 "$BIN" collect --heuristic least-loaded --episodes 1 --env aset --agents-per-rank 2 \
  --envs-per-rank 1 --quiet --run-dir aset > aset.log
expect_error "bc without a dataset" 2 "give --dataset" -- \
  mpi 2 "$BIN" train --algo bc "${G[@]}" --run-dir bad0
expect_error "bc on a dataset of another env" 2 "is a dataset of env 'aset'; this run's env is 'geodc'" -- \
  mpi 2 "$BIN" train --algo bc --dataset aset "${G[@]}" --run-dir bad1
expect_error "bc on a missing dataset" 2 "dataset 'nothing' does not exist" -- \
  mpi 2 "$BIN" train --algo bc --dataset nothing "${G[@]}" --run-dir bad2
expect_error "bc on a dataset of another agent count" 2 "holds 4 agents; this run has 8" -- \
  mpi 2 "$BIN" train --algo bc --dataset ll --env geodc --replicate-sites --agents-per-rank 4 \
  --quiet --run-dir bad3
expect_error "bc with fewer transitions than a minibatch" 2 "fewer than one minibatch" -- \
  mpi 2 "$BIN" train --algo bc --dataset ll "${G[@]}" --offline-minibatch 100000 --run-dir bad4
expect_error "cql with one Q-network per agent, fewer transitions than a minibatch" 2 \
  "transitions per agent, fewer than one minibatch" -- \
  mpi 2 "$BIN" train --algo cql --no-dqn-share --dataset ll "${G[@]}" --offline-minibatch 200 \
  --run-dir bad8
cp ll/trajectories/segment-000.h5 cut.h5
truncate -s $(( $(stat -c %s cut.h5) * 6 / 10 )) cut.h5
expect_error "bc on a truncated file" 2 "cut.h5" -- \
  mpi 2 "$BIN" train --algo bc --dataset cut.h5 "${G[@]}" --run-dir bad5
echo "not hdf5" > text.h5
expect_error "bc on a file that is not HDF5" 2 "text.h5" -- \
  mpi 2 "$BIN" train --algo bc --dataset text.h5 "${G[@]}" --run-dir bad6
for d in bad0 bad1 bad2 bad3 bad4 bad5 bad6 bad8; do
  [ ! -e "$d/metrics.csv" ] || fail "$d: a refused run wrote metrics"
done
pass "bc: bad datasets"
