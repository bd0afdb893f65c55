"""REINFORCE on marlsched's batched geodc env, in plain PyTorch (docs/python.md).

usage: PYTHONPATH=build/python /usr/bin/python3 docs/examples/reinforce_geodc.py [ITERATIONS]

One policy network shared by the 4 data centers (their own observation and a one-hot site id
in, one logit per action out) acts in 16 env copies at once; each iteration is one episode of
every copy, and the gradient weighs each step's log-probability by the team's reward-to-go minus
its mean over the copies at that step. Then the greedy policy, random actions and the env's
least-loaded, fixed-overflow and guarded-overflow rules play the same 16 held-out episodes (seed
1000), and the script prints each one's utility per episode (the sum of every site's rewards).
"""

import sys
import time

import numpy as np
import torch

import marlsched

ITERATIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 150
torch.manual_seed(0)
torch.set_num_threads(1)

env = marlsched.make("geodc", num_envs=16, seed=1)
K, N = env.num_envs, env.num_agents
D, A = env.single_observation_space.shape[0], env.single_action_space.n
T = env.spec["episode_length"]
site_id = torch.eye(N).expand(K, N, N)
policy = torch.nn.Sequential(torch.nn.Linear(D + N, 64), torch.nn.Tanh(), torch.nn.Linear(64, A))
opt = torch.optim.Adam(policy.parameters(), lr=3e-3)


def logits(obs):
    return policy(torch.cat([torch.from_numpy(obs), site_id[: obs.shape[0]]], -1))


t0 = time.time()
obs = env.reset()
for it in range(ITERATIONS):
    logps, team = [], []
    for _ in range(T):  # one whole episode of every copy (they end together and reset)
        dist = torch.distributions.Categorical(logits=logits(obs))
        act = dist.sample()
        obs, rew, term, trunc, info = env.step(act.numpy())
        logps.append(dist.log_prob(act).sum(-1))  # (K,): the sites' joint action
        team.append(torch.from_numpy(rew).sum(-1))  # (K,): the team reward
    ret = torch.flip(torch.cumsum(torch.flip(torch.stack(team), [0]), 0), [0])  # (T, K) to go
    adv = ret - ret.mean(1, keepdim=True)
    adv = adv / (adv.std() + 1e-8)
    loss = -(torch.stack(logps) * adv).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 25 == 0 or it == ITERATIONS - 1:
        print(f"iteration {it:4d}: utility per episode {ret[0].mean():8.2f} ({time.time() - t0:.0f} s)")


def evaluate(choose):
    test = marlsched.make("geodc", num_envs=16, seed=1000)
    o, total = test.reset(), np.zeros(16)
    for _ in range(T):
        o, rew, term, trunc, info = test.step(choose(test, o))
        total += rew.sum(1)
    return total.mean()


rng = np.random.default_rng(0)
with torch.no_grad():
    scores = {
        "reinforce (greedy)": evaluate(lambda e, o: logits(o).argmax(-1).numpy()),
        "random": evaluate(lambda e, o: rng.integers(A, size=(16, N))),
        "least-loaded": evaluate(lambda e, o: e.baseline("least-loaded")),
        "fixed-overflow": evaluate(lambda e, o: e.baseline("fixed-overflow")),
        "guarded-overflow": evaluate(lambda e, o: e.baseline("guarded-overflow")),
    }
print("held-out episodes (seed 1000, 16 copies): utility per episode")
for name, score in scores.items():
    print(f"  {name:20s} {score:8.2f}")
