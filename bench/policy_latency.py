"""Time one scheduling decision of an exported policy (marlsched export RUN_DIR): the forward
pass of every agent's greedy action for one state of the whole system, as an operator's
controller would call it, beside the MPC's per-decision solve time that `marlsched eval` prints.

    /usr/bin/python3 bench/policy_latency.py RUN_DIR/policy.pt [--repeats 2000]

Inputs are random observations (the forward pass's cost does not depend on their values);
torch runs on one thread.
"""
import argparse
import time

import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("policy")
    ap.add_argument("--repeats", type=int, default=2000)
    a = ap.parse_args()
    torch.set_num_threads(1)
    m = torch.jit.load(a.policy)
    x = torch.randn(1, m.num_agents, m.obs_dim)
    with torch.no_grad():
        for agent in range(m.num_agents):  # warm-up
            m.forward(x, agent, True)
        times = []
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            for agent in range(m.num_agents):
                m.forward(x, agent, True)
            times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2] * 1e3
    p99 = times[int(len(times) * 0.99)] * 1e3
    print(f"{a.policy}: one decision for all {m.num_agents} agents (greedy, batch 1): "
          f"median {med:.3f} ms, p99 {p99:.3f} ms over {a.repeats} repeats, torch "
          f"{torch.__version__}, 1 thread")


if __name__ == "__main__":
    main()
