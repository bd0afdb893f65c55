#!/usr/bin/env bash
# Same seed, config and rank count => identical metrics.csv (and identical models).
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
for i in 1 2; do
  mpi 2 "$BIN" train --agents-per-rank 2 --iterations 4 --envs-per-rank 2 --seed 17 --quiet \
      --no-eval-after --run-dir "run$i" > "log$i.txt"
done
cmp run1/metrics.csv run2/metrics.csv || fail "metrics.csv differs between identical runs"
[ "$(wc -l < run1/metrics.csv)" -eq 5 ] || fail "expected 4 iterations in metrics.csv"
pass "identical metrics.csv twice (seed 17, 2 ranks)"
# Trajectories: every dataset holds identical values (the files' only other difference is the
# run-dir line of the config attribute).
T1=run1/trajectories/segment-000.h5 T2=run2/trajectories/segment-000.h5
for ds in observations next_observations actions rewards terminations truncations log_probs values \
          infos/reward_components infos/episode_ids infos/episode_steps infos/iterations; do
  h5diff "$T1" "$T2" "/$ds" > /dev/null || fail "trajectory dataset $ds differs between identical runs"
done
pass "identical trajectory datasets twice"
mpi 2 "$BIN" train --agents-per-rank 2 --iterations 4 --envs-per-rank 2 --seed 18 --quiet \
    --no-eval-after --run-dir run3 > log3.txt
if cmp -s run1/metrics.csv run3/metrics.csv; then fail "a different seed gave identical metrics"; fi
pass "a different seed gives different metrics"
if h5diff run1/trajectories/segment-000.h5 run3/trajectories/segment-000.h5 /actions > /dev/null; then
  fail "a different seed gave identical actions"
fi
pass "a different seed gives different trajectories"
