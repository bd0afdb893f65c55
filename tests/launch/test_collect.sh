#!/usr/bin/env bash
# `marlsched collect`: datasets from heuristics, trained runs and exported policies, read back
# with h5py: the same data at every rank count, the behaviour policy's log-probabilities (exact
# for deterministic and uniform rules, with and without epsilon; NaN where unknown), the
# converter of a scheduler's own logs, and bad input.
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
PY=/usr/bin/python3
"$PY" -c "import h5py" || fail "python3-h5py is missing (launch/install-deps.sh installs it)"
G=(--env geodc --episode-slots 24 --envs-per-rank 2 --quiet)

mpi 2 "$BIN" collect --heuristic least-loaded --episodes 2 "${G[@]}" --agents-per-rank 2 \
  --run-dir ll2 > ll2.log
"$BIN" collect --heuristic least-loaded --episodes 2 "${G[@]}" --agents-per-rank 4 \
  --run-dir ll1 > ll1.log
grep -q "behaviour policy least-loaded" ll2.log || fail "collect does not name its policy: $(cat ll2.log)"
mpi 2 "$BIN" collect --heuristic least-loaded --epsilon 0.3 --episodes 2 "${G[@]}" \
  --agents-per-rank 2 --run-dir eps2 > eps2.log
mpi 4 "$BIN" collect --heuristic least-loaded --epsilon 0.3 --episodes 2 "${G[@]}" \
  --run-dir eps4 > eps4.log
mpi 2 "$BIN" collect --heuristic random --episodes 1 "${G[@]}" --agents-per-rank 2 \
  --run-dir rnd > rnd.log
"$PY" - <<'PYEOF' || fail "the datasets are not what the behaviour policies did"
import h5py, numpy as np
f = lambda run: h5py.File(run + "/trajectories/segment-000.h5", "r")
ll1, ll2, e2, e4, rnd = f("ll1"), f("ll2"), f("eps2"), f("eps4"), f("rnd")
A = len(ll2.attrs["action_names"])
# Layout: 2 episodes of 24 steps of 2 worlds, 4 agents; one episode per iteration.
assert ll2["observations"].shape == (48, 2, 4, 14), ll2["observations"].shape
assert ll2.attrs["complete"] == 1 and ll2.attrs["rows"] == 48
assert ll2.attrs["behaviour_policy"] == "least-loaded" and ll2.attrs["behaviour_epsilon"] == 0
assert list(ll2["truncations"][:, 0].nonzero()[0]) == [23, 47]
assert list(np.unique(ll2["infos/iterations"][()])) == [1, 2]
# The same dataset at 1 and 2 ranks, and with epsilon at 2 and 4 ranks.
for a, b in ((ll1, ll2), (e2, e4)):
    for name in ("observations", "next_observations", "actions", "rewards", "log_probs",
                 "truncations", "infos/episode_ids", "infos/reward_components"):
        assert np.array_equal(a[name][()], b[name][()], equal_nan=True), name
# A deterministic rule: log pi = 0; no value estimate.
assert np.all(ll2["log_probs"][()] == 0) and np.all(np.isnan(ll2["values"][()]))
# Epsilon 0.3: log((1 - eps) + eps/A) where the rule's action was kept, log(eps/A) elsewhere,
# at about eps (1 - 1/A) of the decisions.
eps, lp = 0.3, e2["log_probs"][()].ravel()
kept, other = np.log(1 - eps + eps / A), np.log(eps / A)
assert np.all(np.isclose(lp, kept) | np.isclose(lp, other)), np.unique(lp)
share = np.mean(np.isclose(lp, other))
assert abs(share - eps * (1 - 1 / A)) < 0.08, share
assert e2.attrs["behaviour_epsilon"] == eps
assert not np.array_equal(e2["actions"][()], ll2["actions"][()])
# The uniform rule: log(1/A) everywhere.
assert np.allclose(rnd["log_probs"][()], -np.log(A))
print("ok")
PYEOF
pass "collect: a heuristic's dataset is the same at 1, 2 and 4 ranks, with exact log-probabilities"

# A trained run, its checkpoint-free model files and its export as behaviour policies.
mpi 2 "$BIN" train "${G[@]}" --agents-per-rank 2 --iterations 2 --rollout-steps 24 \
  --no-eval-after --traj-every 0 --run-dir trained > trained.log
"$BIN" export trained --out trained/policy.pt > export.log
mpi 2 "$BIN" collect --model trained --episodes 1 --run-dir fromrun > fromrun.log
mpi 2 "$BIN" collect --model trained --greedy --episodes 1 --run-dir greedy > greedy.log
mpi 2 "$BIN" collect --model trained --epsilon 0.1 --episodes 1 --run-dir mixed > mixed.log
"$BIN" collect --policy trained/policy.pt --greedy --episodes 1 --run-dir exported > exported.log
"$PY" - <<'PYEOF' || fail "datasets of learned policies are wrong"
import h5py, numpy as np
f = lambda run: h5py.File(run + "/trajectories/segment-000.h5", "r")
s, g, m, x = f("fromrun"), f("greedy"), f("mixed"), f("exported")
lp = s["log_probs"][()]
assert np.all(np.isfinite(lp)) and np.all(lp <= 0) and np.any(lp < 0)  # its own log pi
assert "mappo" in s.attrs["behaviour_policy"] and "sampling" in s.attrs["behaviour_policy"]
assert np.all(g["log_probs"][()] == 0) and "greedy" in g.attrs["behaviour_policy"]
assert np.all(np.isnan(m["log_probs"][()]))  # a sampling policy's law is not exposed
# The exported greedy policy at 1 rank acts as the run's models at 2 ranks.
assert np.array_equal(x["actions"][()], g["actions"][()])
assert np.all(x["log_probs"][()] == 0)
print("ok")
PYEOF
pass "collect: trained runs (sampling, greedy, with epsilon) and exported policies"

# A scheduler's own logs, converted: world 0 of ll2 as if logged elsewhere.
"$PY" - <<'PYEOF'
import h5py, numpy as np
with h5py.File("ll2/trajectories/segment-000.h5", "r") as f:
    T, E = int(f.attrs["episode_length"]), 2
    obs = f["observations"][:, 0].reshape(E, T, 4, -1)
    final = f["next_observations"][:, 0].reshape(E, T, 4, -1)[:, -1]
    np.savez("logs.npz", observations=obs, final_observations=final,
             actions=f["actions"][:, 0].reshape(E, T, 4), rewards=f["rewards"][:, 0].reshape(E, T, 4),
             log_probs=f["log_probs"][:, 0].reshape(E, T, 4),
             reward_components=f["infos/reward_components"][:, 0].reshape(E, T, 4, -1))
PYEOF
"$PY" "$SRC/docs/examples/scheduler_logs_to_marlsched.py" --like ll2/trajectories/segment-000.h5 \
  --logs logs.npz --policy my-scheduler --out converted.h5 > convert.log || fail "$(cat convert.log)"
"$PY" - <<'PYEOF' || fail "the converted logs differ from the layout"
import h5py, numpy as np
a, b = h5py.File("ll2/trajectories/segment-000.h5", "r"), h5py.File("converted.h5", "r")
assert set(a.attrs) == set(b.attrs), set(a.attrs) ^ set(b.attrs)
names = []
a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
for n in names:
    x, y = a[n], b[n]
    assert x.dtype == y.dtype, n
    if n in ("values", "infos/iterations", "infos/episode_ids"):
        continue
    assert np.array_equal(x[()][:, :1] if x.ndim > 1 else x[()], y[()], equal_nan=True), n
assert np.array_equal(a["infos/iterations"][()], b["infos/iterations"][()])
# Episode ids count the episodes of W worlds: world 0 of 2 has ids 0, 2; one world 0, 1.
assert np.array_equal(a["infos/episode_ids"][:, :1] // 2, b["infos/episode_ids"][()])
assert b.attrs["behaviour_policy"] == "my-scheduler"
print("ok")
PYEOF
pass "docs/examples/scheduler_logs_to_marlsched.py writes the layout"

# Bad input: one message, exit 2, nothing written.
expect_error "collect without a policy" 2 "collect needs exactly one behaviour policy" -- \
  "$BIN" collect --episodes 1 "${G[@]}" --agents-per-rank 4 --run-dir bad1
expect_error "collect with two policies" 2 "collect needs exactly one behaviour policy" -- \
  mpi 2 "$BIN" collect --heuristic random --model trained --episodes 1 --run-dir bad2
expect_error "collect with an unknown heuristic" 2 "no-such-rule" -- \
  "$BIN" collect --heuristic no-such-rule --episodes 1 "${G[@]}" --agents-per-rank 4 --run-dir bad3
expect_error "collect into its model's run directory" 2 "give another --run-dir" -- \
  mpi 2 "$BIN" collect --model trained --episodes 1 --run-dir trained --force
expect_error "collect at another rank count than the model's" 2 "run collect with mpirun -n 2" -- \
  "$BIN" collect --model trained --episodes 1 --agents-per-rank 4 --run-dir bad4
expect_error "collect over an earlier dataset" 2 "already holds a run" -- \
  mpi 2 "$BIN" collect --heuristic random --episodes 1 "${G[@]}" --agents-per-rank 2 --run-dir rnd
for d in bad1 bad2 bad3 bad4; do [ ! -e "$d/trajectories" ] || fail "$d: a refused collect wrote data"; done
[ -f trained/model-rank-0.pt ] || fail "the refused collect touched the trained run"
pass "collect: bad input"
