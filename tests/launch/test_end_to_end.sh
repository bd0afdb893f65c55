#!/usr/bin/env bash
# The main job (launch/configs/ladder-4.toml: ES as a residual over the MPC, whose every rank
# plans from replicas of the other ranks' sites) at test scale: 4 agents on 4 ranks train, then
# the learned policy is evaluated on held-out seeds against every baseline and must beat random
# and round-robin. Then `marlsched eval` reloads the saved model and prints the same comparison.
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
mpi 4 "$BIN" train --config "$SRC/launch/configs/ladder-4.toml" --iterations 10 --envs-per-rank 4 \
  --eval-episodes 8 --run-dir run --quiet | tee train.log
for f in metrics.csv timing.csv config.toml eval.csv eval.md model-rank-0.pt model-rank-3.pt; do
  [ -s "run/$f" ] || fail "missing run/$f"
done
grep -q "parameters identical on all ranks: yes" train.log || fail "no identity confirmation"
# Output that says what it counts (issue 23): agent-steps; one rank's time split, whose shares
# add up to 100 %; utilisation as a mean over sites, never summed.
split=$(grep "^time split of rank [0-3], the busiest (" train.log) || fail "no time split: $(grep 'time split' train.log)"
awk -v s="$split" 'BEGIN { t = 0
  while (match(s, / [0-9.]+%/)) { t += substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) }
  exit !(t > 99.5 && t < 100.5) }' || fail "the time split's shares do not add up to 100 %: $split"
grep -q "^busy time (env step, policy forward, update, logging) over 4 ranks: max [0-9.]* s, min [0-9.]* s, max/mean [0-9.]*$" train.log ||
  fail "no load-balance line: $(grep -A1 'time split' train.log)"
head -1 run/metrics.csv | grep -q "^iteration,agent_steps,.*,mean_utilization_per_slot," || fail "metrics.csv header: $(head -1 run/metrics.csv)"
head -1 run/eval.csv | grep -q ",goodput_gpu_h,mean_utilization,energy_kwh," || fail "eval.csv header: $(head -1 run/eval.csv)"
if head -1 run/eval.csv | grep -q ",utilization,\|gpu_util"; then fail "eval.csv still has a summed utilisation"; fi
awk -F, 'NR > 1 { if ($6 < 0 || $6 > 1) exit 1 }' run/eval.csv || fail "mean_utilization outside [0, 1]"
grep -q "^mean_\* = mean over agents and slots, not a total$" train.log || fail "the eval table does not say what mean_* is"
pass "outputs name agent-steps, one rank's time split adds up to 100 %, utilisation is a mean"
util() { awk -F, -v p="$1" '$1==p {print $3}' run/eval.csv; }
m=$(util "es (greedy)"); r=$(util random); rr=$(util round-robin)
echo "utility: es $m, random $r, round-robin $rr"
awk -v m="$m" -v r="$r" -v rr="$rr" 'BEGIN { exit !(m > r && m > rr) }' || fail "ES does not beat random and round-robin"
pass "learned policy beats random and round-robin on held-out seeds"
mpi 4 "$BIN" eval --model run --out evalout | tee eval.log
grep -q "^es " eval.log || fail "eval table lacks the policy row"
for b in random round-robin local-only least-loaded lowest-carbon lowest-price wait-awhile green-fit fixed-overflow guarded-overflow mpc mpc-oracle; do
  grep -q "^$b " eval.log || fail "eval table lacks $b"
done
[ "$(awk -F, '$1=="es (greedy)" {print $3}' evalout/eval.csv)" = "$m" ] || fail "eval of the saved model differs from the post-training eval"
pass "marlsched eval reloads the model and reproduces the comparison"
# A model file missing or damaged: named before anything runs (issue 22).
mkdir -p partial flipped && cp run/config.toml run/model-rank-*.pt partial/ && cp partial/* flipped/
rm partial/model-rank-3.pt
expect_error "eval of a run missing its last model" 2 "'partial' lacks model-rank-3.pt: its config defines 4 agents at 1 per rank, so 4 ranks trained it" -- \
  mpi 4 "$BIN" eval --model partial
rm partial/model-rank-1.pt
expect_error "eval of a run missing a middle model" 2 "'partial' lacks model-rank-1.pt" -- mpi 2 "$BIN" eval --model partial
/usr/bin/python3 "$SRC/tests/launch/damage.py" zip flipped/model-rank-2.pt > /dev/null
expect_error "eval of a damaged model" 2 "error on rank 2: model 'flipped/model-rank-2.pt' is damaged: record '.*' fails its check (CRC error)" -- \
  mpi 4 "$BIN" eval --model flipped
expect_error "export of a damaged model" 2 "model 'flipped/model-rank-2.pt' is damaged" -- "$BIN" export flipped
[ ! -e flipped/policy.pt ] && [ ! -e flipped/evals ] || fail "a refused eval or export wrote files"
expect_error "eval with a different rank count" 2 "holds the models of 4 ranks (model-rank-0.pt to model-rank-3.pt, one per training rank) but this job has 8: run eval with mpirun -n 4" -- mpi 8 "$BIN" eval --model run --agents-per-rank 1 --replicate-sites
