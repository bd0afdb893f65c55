"""The Python envs against the C++ runs (ctest label `python`; tests/python/test_python.sh runs it).

usage: test_env.py DATASET_DIR CONFIG SEED NUM_ENVS BAD_CONFIG

DATASET_DIR holds what `marlsched collect` wrote on one rank with CONFIG, SEED and NUM_ENVS
copies; BAD_CONFIG is a TOML file the CLI refuses.
"""

import glob
import sys

import h5py
import numpy as np

import marlsched

dataset, config, seed, num_envs, bad = sys.argv[1:]
seed, num_envs = int(seed), int(num_envs)


def check(cond, what):
    if not cond:
        sys.exit(f"FAIL: {what}")
    print(f"ok: {what}")


# 1. Same dynamics: the C++ run's actions replayed in Python give its observations and rewards.
segments = sorted(glob.glob(f"{dataset}/trajectories/segment-*.h5"))
check(len(segments) > 0, f"the C++ run wrote trajectories ({len(segments)} segment(s))")
obs, nxt, act, rew, trunc = [], [], [], [], []
for path in segments:
    with h5py.File(path, "r") as f:
        obs.append(f["observations"][:])
        nxt.append(f["next_observations"][:])
        act.append(f["actions"][:])
        rew.append(f["rewards"][:])
        trunc.append(f["truncations"][:])
obs, nxt, act, rew, trunc = map(np.concatenate, (obs, nxt, act, rew, trunc))
steps = obs.shape[0]
env = marlsched.make(config=config, seed=seed, num_envs=num_envs)
check(env.num_envs == num_envs and env.num_agents == obs.shape[2], "the env has the run's layout")
o = env.reset()
check(np.array_equal(o, obs[0]), "reset() gives the run's first observations")
ends = 0
for s in range(steps):
    check_obs = np.array_equal(o, obs[s])
    o, r, term, tr, info = env.step(act[s])
    if not check_obs or not np.array_equal(r, rew[s]):
        sys.exit(f"FAIL: step {s}: observations or rewards differ from the C++ run")
    done = info["final_mask"]
    if not np.array_equal(done, trunc[s].astype(bool)):
        sys.exit(f"FAIL: step {s}: episode ends {done} differ from the run's {trunc[s]}")
    last = np.where(done[:, None, None], info["final_observation"], o) if done.any() else o
    if not np.array_equal(last, nxt[s]):
        sys.exit(f"FAIL: step {s}: next (or final) observations differ from the C++ run")
    ends += int(done.sum())
check(ends >= num_envs, f"{steps} steps of {num_envs} copies identical to the C++ run, "
      f"{ends} episode ends and auto-resets among them")

# 2. Auto-reset and per-copy seeds: each copy's episodes are the ones a fresh env of one copy
# would not give (copies differ), and the same seed gives the same episodes.
a = marlsched.make(config=config, seed=seed, num_envs=2)
b = marlsched.make(config=config, seed=seed, num_envs=2)
c = marlsched.make(config=config, seed=seed + 1, num_envs=2)
oa, ob, oc = a.reset(), b.reset(), c.reset()
check(np.array_equal(oa, ob), "the same seed gives the same first observations")
check(not np.array_equal(oa[0], oa[1]), "two copies run different episodes")
check(not np.array_equal(oa, oc), "another seed gives other episodes")
length = a.spec["episode_length"]
rng = np.random.default_rng(0)
n_act = a.single_action_space.n
for t in range(length):
    acts = rng.integers(n_act, size=(2, a.num_agents))
    oa, ra, _, tra, ia = a.step(acts)
    ob, rb, _, trb, ib = b.step(acts)
    check_same = np.array_equal(oa, ob) and np.array_equal(ra, rb)
    if not check_same:
        sys.exit(f"FAIL: step {t}: two envs of one seed diverged")
check(bool(tra.all()) and bool(ia["final_mask"].all()), f"every copy ends at step {length}")
check(a.episode_steps() == [0, 0], "finished copies start their next episode at once")
progress = a.obs_fields.index("progress") if "progress" in a.obs_fields else None
if progress is not None:
    check(np.all(oa[:, :, progress] == 0) and np.all(ia["final_observation"][:, :, progress] == 1),
          "the new episode's first observation and the last one's final observation")

# 3. Baselines by name, the bound, the single-copy wrapper.
for name in ("least-loaded", "mpc"):
    acts = a.baseline(name)
    check(acts.shape == (2, a.num_agents) and acts.min() >= 0 and acts.max() < n_act,
          f"baseline {name} acts on the batch")
try:
    a.baseline("no-such-rule")
    sys.exit("FAIL: an unknown baseline was accepted")
except ValueError as e:
    check("unknown baseline 'no-such-rule' for env geodc" in str(e),
          f"an unknown baseline raises the CLI's message: {e}")
bound = a.episode_bound(0)
check(np.isfinite(bound), f"geodc's hindsight bound of an episode: {bound:.2f}")
p = marlsched.ParallelEnv(config=config, seed=seed)
first, infos = p.reset(seed=seed)
check(sorted(first) == sorted(p.possible_agents) == sorted(p.agents), "ParallelEnv agents")
check(np.array_equal(np.stack([first[x] for x in p.possible_agents]), obs[0][0]),
      "ParallelEnv.reset(seed) gives copy 0's first observations")
space = p.observation_space(p.possible_agents[0])
check(space.shape == (obs.shape[3],) and p.action_space(p.possible_agents[0]).n == n_act, "spaces")
steps_taken = 0
while p.agents:
    o2, r2, te2, tr2, inf2 = p.step({x: 0 for x in p.agents})
    steps_taken += 1
check(steps_taken == length and all(tr2.values()) and not p.agents,
      f"ParallelEnv ends its episode after {length} steps, agents empty")
check(set(inf2[p.possible_agents[0]]) == set(a.reward_components), "reward components in infos")

# 4. A config the CLI refuses raises ValueError with the CLI's message.
try:
    marlsched.make(config=bad)
    sys.exit("FAIL: a config the CLI refuses was accepted")
except ValueError as e:
    print(f"ValueError: {e}")
    check("--slot-minutes must divide 60, got 0" in str(e), "a bad config raises the CLI's message")
try:
    marlsched.make("geodc", slot_minutez=15)
    sys.exit("FAIL: an unknown key was accepted")
except ValueError as e:
    check("slot-minutez" in str(e), f"an unknown key raises ValueError: {e}")
bad_key = bad.replace(".toml", "-key.toml")
with open(bad_key, "w") as f:
    f.write('env = "geodc"\nslot-minutez = 15\n')
try:
    marlsched.make(config=bad_key)
    sys.exit("FAIL: a config file with an unknown key was accepted")
except ValueError as e:
    check("unknown config key 'slot-minutez' (did you mean 'slot-minutes'?)" in str(e),
          f"an unknown key in a config file raises the CLI's message: {e}")
print("python: all passed")
