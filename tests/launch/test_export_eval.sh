#!/usr/bin/env bash
# Export and evaluation: `marlsched export` writes a TorchScript policy that PyTorch loads with
# its metadata; `marlsched eval` runs it (at any rank count), a checkpoint or a run against the
# baselines, and all three agree when actions are greedy; other traces can be chosen; bad policy
# files get one clear error.
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
mpi 4 "$BIN" train --envs-per-rank 2 --iterations 3 --checkpoint-every 3 --traj-every 0 --quiet \
  --no-eval-after --run-dir run > train.log
"$BIN" export run > export.log
grep -q "exported the shared network of 4 agents to run/policy.pt" export.log || fail "$(cat export.log)"
/usr/bin/python3 - run/policy.pt <<'PY' || fail "PyTorch cannot use the exported policy"
import json, sys, torch
m = torch.jit.load(sys.argv[1])
meta = json.loads(m.metadata)
assert meta["format"] == "marlsched-policy" and meta["env"] == "geodc" and meta["num_agents"] == 4
assert len(meta["obs_fields"]) == 14 and len(meta["action_names"]) == 8 and "seed = 1" in meta["config"]
probs, action = m(torch.zeros(4, 14), 1)
assert probs.shape == (8,) and abs(float(probs.sum()) - 1) < 1e-6 and 0 <= int(action) < 8
print("ok: torch.jit.load reads the policy; metadata:", ", ".join(sorted(meta)))
PY
E=(--eval-episodes 2 --envs-per-rank 2 --greedy --baselines random)
mpi 4 "$BIN" eval --model run "${E[@]}" --out m4 > m4.log
mpi 4 "$BIN" eval --checkpoint run/checkpoints/ckpt-00000003 "${E[@]}" --out c4 > c4.log
mpi 4 "$BIN" eval --policy run/policy.pt "${E[@]}" --out p4 > p4.log
"$BIN" eval --policy run/policy.pt "${E[@]}" --out p1 > p1.log
m=$(awk -F, '$1=="mappo (greedy)" {print $3}' m4/eval.csv)
c=$(awk -F, '$1=="mappo (greedy)" {print $3}' c4/eval.csv)
p=$(awk -F, '$1=="policy.pt (greedy)" {print $3}' p4/eval.csv)
p1=$(awk -F, '$1=="policy.pt (greedy)" {print $3}' p1/eval.csv)
[ -n "$m" ] && [ "$m" = "$c" ] && [ "$m" = "$p" ] && [ "$m" = "$p1" ] ||
  fail "greedy utilities differ: model $m, checkpoint $c, exported at 4 ranks $p, at 1 rank $p1"
grep -q "^random" p1.log || fail "no baseline row: $(cat p1.log)"
pass "the run, its checkpoint and its exported policy (4 ranks and 1 rank) score the same ($m)"
# Sampled evaluation (issue 23) draws from the episode, the agent and the step, not from the
# rank: the same eval.csv at 1, 2 and 4 ranks, for the policy and the random baseline, and the
# run's own model samples as its exported policy does.
S=(--eval-episodes 2 --envs-per-rank 2 --no-eval-greedy --baselines random)
"$BIN" eval --policy run/policy.pt "${S[@]}" --out s1 > s1.log
mpi 2 "$BIN" eval --policy run/policy.pt "${S[@]}" --agents-per-rank 2 --out s2 > s2.log
mpi 4 "$BIN" eval --policy run/policy.pt "${S[@]}" --out s4 > s4.log
mpi 4 "$BIN" eval --model run "${S[@]}" --out sm > sm.log
cmp s1/eval.csv s2/eval.csv && cmp s1/eval.csv s4/eval.csv || fail "sampled evaluation depends on the rank count"
ps=$(awk -F, '$1=="policy.pt" {print $3}' s1/eval.csv)
ms=$(awk -F, '$1=="mappo" {print $3}' sm/eval.csv)
g=$(awk -F, '$1=="policy.pt (greedy)" {print $3}' p1/eval.csv)
[ -n "$ps" ] && [ "$ps" = "$ms" ] && [ "$ps" != "$g" ] ||
  fail "sampled: exported $ps, model $ms (greedy $g)"
pass "sampled evaluation is the same at 1, 2 and 4 ranks, and for the model and its export ($ps)"

D=${MARLSCHED_SHARED_DATA:-}
if [ -n "$D" ] && [ -d "$D/carbon_intensity" ]; then
  "$BIN" eval --policy run/policy.pt --eval-episodes 1 --envs-per-rank 1 --baselines least-loaded \
    --carbon-files "$D"/carbon_intensity/{US-CAL-CISO,DE-LU,SG,JP-TK}_2023_hourly.csv \
    --price-files "$D"/electricity_prices/{US-CAL-CISO,DE-LU,SG,JP-TK}_electricity_prices_2023.csv \
    --out real > real.log
  grep -q "^policy.pt" real.log && grep -q "^least-loaded" real.log || fail "$(cat real.log)"
  cmp -s real/eval.csv p1/eval.csv && fail "real traces gave the synthetic traces' table"
  pass "the exported policy is evaluated on the real 2023 traces it was not trained on"
else
  echo "skip: real traces: ../shared/data is absent"
fi

head -c 1000 run/policy.pt > broken.pt
expect_error "truncated policy file" 2 "cannot read exported policy 'broken.pt'" -- \
  "$BIN" eval --policy broken.pt --config run/config.toml --agents-per-rank 4
cp run/policy.pt flipped.pt
/usr/bin/python3 "$SRC/tests/launch/damage.py" zip flipped.pt > /dev/null
expect_error "policy file with a flipped bit" 2 "exported policy 'flipped.pt' is damaged: record '.*' fails its check (CRC error)" -- \
  "$BIN" eval --policy flipped.pt --agents-per-rank 4
expect_error "policy for another agent count" 2 "trained for 4 agents; this run has 8" -- \
  mpi 2 "$BIN" eval --policy run/policy.pt --agents-per-rank 4 --replicate-sites
expect_error "two policy sources" 2 "exactly one of" -- \
  "$BIN" eval --model run --policy run/policy.pt

# MASAC: a run at 2 ranks exports its shared actor; PyTorch loads it, and the exported policy
# scores what the run's own model scores when both act greedily.
mpi 2 "$BIN" train --algo masac --agents-per-rank 2 --envs-per-rank 2 --iterations 6 \
  --sac-warmup 256 --traj-every 0 --quiet --no-eval-after --run-dir sac > sac.log
"$BIN" export sac > sac-export.log || fail "$(cat sac-export.log)"
/usr/bin/python3 - sac/policy.pt <<'PY' || fail "PyTorch cannot use the exported MASAC policy"
import json, sys, torch
m = torch.jit.load(sys.argv[1])
meta = json.loads(m.metadata)
assert meta["num_agents"] == 4 and "algo = \"masac\"" in meta["config"], meta
probs, action = m(torch.zeros(4, 14), 2, True)
assert probs.shape == (8,) and abs(float(probs.sum()) - 1) < 1e-5 and int(action) == int(probs.argmax())
print("ok: torch.jit.load reads the MASAC policy")
PY
# same_greedy_score LABEL RUN_DIR MODEL_ROW: the run's model (2 ranks) and its exported policy
# (1 rank) score the same when both act greedily; sets SCORE.
same_greedy_score() {
  local label=$1 dir=$2 row=$3 m p
  mpi 2 "$BIN" eval --model "$dir" "${E[@]}" --out "$dir-m" > "$dir-m.log"
  "$BIN" eval --policy "$dir/policy.pt" "${E[@]}" --out "$dir-p" > "$dir-p.log"
  m=$(awk -F, -v r="$row" '$1==r {print $3}' "$dir-m/eval.csv")
  p=$(awk -F, '$1=="policy.pt (greedy)" {print $3}' "$dir-p/eval.csv")
  [ -n "$m" ] && [ "$m" = "$p" ] || fail "$label greedy utilities differ: model $m, exported $p"
  SCORE=$m
}
same_greedy_score MASAC sac "masac (greedy)"
pass "MASAC exports a policy that PyTorch loads and that scores what the run's model scores ($SCORE)"

# ES: the export folds the input standardisation into the network and scores what the run's
# model scores; launch/policy_actions.py tabulates its actions on the run's own states.
mpi 2 "$BIN" train --algo es --agents-per-rank 2 --envs-per-rank 2 --iterations 6 --quiet \
  --no-eval-after --run-dir es > es.log || fail "$(cat es.log)"
"$BIN" export es > es-export.log || fail "$(cat es-export.log)"
same_greedy_score ES es "es (greedy)"
/usr/bin/python3 "$SRC/launch/policy_actions.py" es/policy.pt es/trajectories/segment-000.h5 \
  --split 0:queue_load:0.1 > actions.log || fail "policy_actions.py: $(cat actions.log)"
grep -q "^split: 0:queue_load:0.1 holds in" actions.log && [ "$(grep -c '^agent ' actions.log)" = 4 ] ||
  fail "policy_actions.py printed: $(cat actions.log)"
pass "ES exports a policy that scores what the run's model scores ($SCORE); policy_actions.py reads it"

# The scalable layout (8 agents, 2 ranks): geodc neighbourhoods, the per-target actor, the pooled
# critic and the neighbourhood reward. The export holds no agent-count-sized weights, PyTorch
# runs it, and it scores what the run's model scores.
mpi 2 "$BIN" train --agents-per-rank 4 --replicate-sites --site-neighbours 3 --actor targets \
  --critic pooled --team-scope targets --envs-per-rank 2 --iterations 2 --traj-every 0 --quiet \
  --no-eval-after --run-dir tgt > tgt.log || fail "$(cat tgt.log)"
"$BIN" export tgt --critic > tgt-export.log || fail "$(cat tgt-export.log)"
/usr/bin/python3 - tgt/policy.pt <<'PY' || fail "PyTorch cannot use the exported per-target policy"
import sys, torch
m = torch.jit.load(sys.argv[1])
assert m.num_agents == 8 and m.num_actions == 8 and m.num_targets == 4, (m.num_agents, m.num_actions)
assert m.targets[0].tolist() == [0, 1, 7, 2], m.targets[0]
for name, p in m.named_parameters():  # no weight has a dimension of the agent count
    assert 8 not in p.shape, (name, p.shape)
probs, action = m(torch.rand(8, 14), 5, True)
assert probs.shape == (8,) and abs(float(probs.sum()) - 1) < 1e-5 and int(action) == int(probs.argmax())
v = m.value(torch.rand(3, 8, 14), 2)
assert v.shape == (3,)
print("ok: torch.jit.load runs the per-target policy and its pooled critic")
PY
same_greedy_score "per-target actor" tgt "mappo (greedy)"
pass "the per-target actor exports a policy that PyTorch runs and that scores what the model scores ($SCORE)"
