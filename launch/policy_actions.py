#!/usr/bin/env python3
"""What an exported policy does: the share of each action it takes, per agent, in the states of
a trajectory file (any run's RUN_DIR/trajectories/segment-NNN.h5 of the same env layout).

    /usr/bin/python3 launch/policy_actions.py POLICY.pt SEGMENT.h5 [--split AGENT:FIELD:VALUE]

--split also prints the shares separately for the states where observation field FIELD of agent
AGENT is above VALUE and for the rest (e.g. 0:queue_load:0.1: is site 0 queued?). The policy acts
greedily on every state's observations; the shares are over all steps and env copies in the file.
Needs PyTorch and h5py (Debian: python3-torch, python3-h5py).
"""
import argparse
import json
import sys

import h5py
import numpy as np
import torch


def shares(actions, names):
    counts = np.bincount(actions, minlength=len(names)) / max(1, len(actions))
    return ", ".join(f"{names[i]} {counts[i]:.1%}" for i in range(len(names)) if counts[i] >= 0.005)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("policy")
    ap.add_argument("segment")
    ap.add_argument("--split", help="AGENT:FIELD:VALUE")
    a = ap.parse_args()
    m = torch.jit.load(a.policy)
    meta = json.loads(m.metadata)
    names, fields = meta["action_names"], meta["obs_fields"]
    with h5py.File(a.segment, "r") as f:
        if "observations" not in f:
            sys.exit(f"{a.segment}: no observations dataset (train with traj-fields observations)")
        obs = np.asarray(f["observations"], dtype=np.float32)  # [S, W, N, D]
    if obs.shape[2:] != (m.num_agents, m.obs_dim):
        sys.exit(f"{a.segment}: {obs.shape[2]} agents x {obs.shape[3]} fields, but the policy "
                 f"expects {m.num_agents} x {m.obs_dim}")
    x = torch.from_numpy(obs.reshape(-1, m.num_agents, m.obs_dim))
    split = None
    if a.split:
        agent, field, value = a.split.split(":")
        if field not in fields:
            sys.exit(f"--split: no field '{field}' (fields: {', '.join(fields)})")
        split = (x[:, int(agent), fields.index(field)] > float(value)).numpy()
        print(f"split: {a.split} holds in {split.mean():.1%} of {len(split)} states")
    else:
        print(f"{x.shape[0]} states")
    with torch.no_grad():
        for agent in range(m.num_agents):
            act = m.forward(x, agent, True)[1].numpy().astype(np.int64)
            print(f"agent {agent}: {shares(act, names)}")
            if split is not None:
                print(f"  above: {shares(act[split], names)}")
                print(f"  not:   {shares(act[~split], names)}")


if __name__ == "__main__":
    main()
