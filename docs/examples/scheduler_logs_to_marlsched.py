#!/usr/bin/env python3
"""Converts a scheduler's own decision logs into marlsched's trajectory layout
(docs/hdf5-layout.md), so that they can be read and learned from like a `marlsched collect`
dataset.

Your logs, as NumPy arrays in one .npz file (E episodes of T steps, N agents, d observation
values; the agents, observation fields, actions and reward components in the order of the env's
spec, which the reference file below names):

    observations        float32 [E, T, N, d]   what each agent saw before it decided
    final_observations  float32 [E, N, d]      what it saw after the episode's last step
    actions             int     [E, T, N]      the index of the action it took (action_names)
    rewards             float32 [E, T, N]      the reward it got for that step
    log_probs           float32 [E, T, N]      optional: log of the probability with which your
                                               scheduler took that action (NaN if unknown)
    reward_components   float32 [E, T, N, C]   optional: the reward's parts (reward_components)

The env's description (observation fields, action names, reward components, episode length,
action targets, config) is copied from a reference file of the same env and agent count, for
example a one-episode collection:

    mpirun -n 2 marlsched collect --heuristic least-loaded --episodes 1 --run-dir ref
    python3 scheduler_logs_to_marlsched.py --like ref/trajectories/segment-000.h5 \\
        --logs my_scheduler.npz --policy my-scheduler --out my_scheduler.h5

The episodes go one after another in a single world (W = 1), one episode per iteration, each
cut by its time limit (truncations = 1 on its last row), as a collection writes them.
"""
import argparse
import sys

import h5py
import numpy as np

# The env's description, copied from the reference file when it has them.
ENV_ATTRIBUTES = ("env", "config", "observation_space", "action_space", "obs_fields",
                  "num_public_obs_fields", "action_names", "action_targets", "action_heads",
                  "reward_components",
                  "mean_components", "episode_length", "global_state")


def fail(msg):
    sys.exit(f"scheduler_logs_to_marlsched: {msg}")


def convert(like, logs, out, policy):
    with h5py.File(like, "r") as ref:
        if ref.attrs.get("format") != "marlsched-trajectories":
            fail(f"{like} is not a marlsched trajectory file")
        env = {k: ref.attrs[k] for k in ENV_ATTRIBUTES if k in ref.attrs}
        n_ref = int(ref.attrs["num_agents"])
    obs = np.asarray(logs["observations"], dtype=np.float32)
    final = np.asarray(logs["final_observations"], dtype=np.float32)
    act = np.asarray(logs["actions"])
    rew = np.asarray(logs["rewards"], dtype=np.float32)
    E, T, N, d = obs.shape
    names = [str(x) for x in env["obs_fields"]]
    actions = [str(x) for x in env["action_names"]]
    components = [str(x) for x in env["reward_components"]]
    if d != len(names):
        fail(f"observations have {d} values per agent, the env has {len(names)}: {names}")
    if N != n_ref:
        fail(f"the logs have {N} agents, the reference file {n_ref}")
    if T != int(env["episode_length"]):
        fail(f"episodes of {T} steps, the env's are {int(env['episode_length'])}")
    if final.shape != (E, N, d) or act.shape != (E, T, N) or rew.shape != (E, T, N):
        fail("final_observations, actions and rewards must be [E, N, d], [E, T, N], [E, T, N]")
    if act.min() < 0 or act.max() >= len(actions):
        fail(f"actions must be indices in [0, {len(actions)})")
    logp = np.asarray(logs["log_probs"], dtype=np.float32) if "log_probs" in logs \
        else np.full((E, T, N), np.nan, dtype=np.float32)
    comp = np.asarray(logs["reward_components"], dtype=np.float32) if "reward_components" in logs \
        else np.full((E, T, N, len(components)), np.nan, dtype=np.float32)

    S = E * T
    nxt = np.concatenate([obs[:, 1:], final[:, None]], axis=1)  # o_{t+1}; terminal at the end
    steps = np.tile(np.arange(T, dtype=np.int32), E)
    last = (steps == T - 1).astype(np.uint8)
    with h5py.File(out, "w") as f:
        def put(name, data, what):
            f.create_dataset(name, data=data, maxshape=(None,) + data.shape[1:],
                             fletcher32=True).attrs["description"] = what
        put("observations", obs.reshape(S, 1, N, d), "o_t of each agent, before it acts")
        put("next_observations", nxt.reshape(S, 1, N, d),
            "o_{t+1}; the terminal observation at an episode end")
        put("actions", act.astype(np.int32).reshape(S, 1, N), "a_t, an index into action_names")
        put("rewards", rew.reshape(S, 1, N), "r_t, each agent's reward")
        put("terminations", np.zeros((S, 1), np.uint8), "1 where a terminal state was reached")
        put("truncations", last.reshape(S, 1), "1 where the episode was cut by its time limit")
        put("log_probs", logp.reshape(S, 1, N), "log pi(a_t|o_t) of the behaviour policy")
        put("values", np.full((S, 1, N), np.nan, np.float32), "no value estimate")
        put("infos/reward_components", comp.reshape(S, 1, N, len(components)),
            "the reward's components")
        f["infos/reward_components"].attrs["names"] = components
        put("infos/episode_ids", np.repeat(np.arange(E, dtype=np.int64), T).reshape(S, 1),
            "run-wide episode id")
        put("infos/episode_steps", steps.reshape(S, 1), "t within the episode")
        put("infos/iterations", np.repeat(np.arange(1, E + 1, dtype=np.int32), T),
            "the iteration (here: the episode) that holds the row")
        for k, v in env.items():
            f.attrs[k] = v
        f.attrs.update({
            "format": "marlsched-trajectories", "format_version": 1,
            "marlsched_version": "external", "git_revision": "external", "blas": "external",
            "algo": "external",
            "behaviour_policy": policy, "behaviour_epsilon": 0.0, "seed": 0, "ranks": 1,
            "agents_per_rank": N, "num_agents": N, "worlds": 1, "rollout_steps": T,
            "segment": 0, "first_iteration": 1, "rows": S, "last_flushed_iteration": E,
            "complete": 1})
    print(f"wrote {out}: {E} episodes of {T} steps, {N} agents, behaviour policy {policy}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--like", required=True, help="a marlsched trajectory file of the same env")
    p.add_argument("--logs", required=True, help="the .npz file of your scheduler's logs")
    p.add_argument("--out", required=True, help="the trajectory file to write")
    p.add_argument("--policy", default="external", help="your scheduler's name")
    a = p.parse_args()
    with np.load(a.logs) as logs:
        convert(a.like, dict(logs), a.out, a.policy)


if __name__ == "__main__":
    main()
