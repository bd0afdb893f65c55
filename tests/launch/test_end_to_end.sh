#!/usr/bin/env bash
# The main job (launch/configs/main.toml: ES) at test scale: 4 agents on 4 ranks train, then
# the learned policy is evaluated on held-out seeds against every baseline and must beat random
# and round-robin. Then `marlsched eval` reloads the saved model and prints the same comparison.
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
mpi 4 "$BIN" train --config "$SRC/launch/configs/main.toml" --iterations 150 --envs-per-rank 8 \
  --eval-episodes 8 --run-dir run --quiet | tee train.log
for f in metrics.csv timing.csv config.toml eval.csv eval.md model-rank-0.pt model-rank-3.pt; do
  [ -s "run/$f" ] || fail "missing run/$f"
done
grep -q "parameters identical on all ranks: yes" train.log || fail "no identity confirmation"
grep -q "time split" train.log || fail "no time split"
util() { awk -F, -v p="$1" '$1==p {print $3}' run/eval.csv; }
m=$(util "es (greedy)"); r=$(util random); rr=$(util round-robin)
echo "utility: es $m, random $r, round-robin $rr"
awk -v m="$m" -v r="$r" -v rr="$rr" 'BEGIN { exit !(m > r && m > rr) }' || fail "ES does not beat random and round-robin"
pass "learned policy beats random and round-robin on held-out seeds"
mpi 4 "$BIN" eval --model run --out evalout | tee eval.log
grep -q "^es " eval.log || fail "eval table lacks the policy row"
for b in random round-robin local-only least-loaded lowest-carbon lowest-price wait-awhile green-fit fixed-overflow guarded-overflow; do
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
