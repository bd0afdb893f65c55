#!/usr/bin/python3
"""Loads an exported marlsched policy with plain PyTorch and checks it against the trainer's
outputs written by tests/agents/test_export.cpp.

    check_export.py POLICY.pt CASES.txt

CASES.txt: "n d count", then per case a line "agent obs..." and a line "probs... value".
"""
import json
import sys

import torch


def main(policy, cases_path):
    m = torch.jit.load(policy)
    json.loads(m.metadata)  # the metadata attribute is JSON
    with open(cases_path) as f:
        n, d, count = (int(x) for x in f.readline().split())
        worst_p = worst_v = 0.0
        for _ in range(count):
            first = f.readline().split()
            agent = int(first[0])
            obs = torch.tensor([float(x) for x in first[1:]], dtype=torch.float32).reshape(n, d)
            rest = [float(x) for x in f.readline().split()]
            want_p, want_v = torch.tensor(rest[:-1]), rest[-1]
            probs, action = m(obs, agent, True)
            worst_p = max(worst_p, (probs - want_p).abs().max().item())
            if int(action) != int(torch.argmax(want_p)):
                sys.exit(f"agent {agent}: greedy action {int(action)}, expected {int(torch.argmax(want_p))}")
            worst_v = max(worst_v, abs(m.value(obs, agent).item() - want_v) / max(1.0, abs(want_v)))
            # Batched input gives the same rows.
            batch = m.probs(obs.unsqueeze(0).repeat(3, 1, 1), agent)
            if batch.shape != (3, len(want_p)) or (batch[1] - probs).abs().max().item() > 1e-7:
                sys.exit("batched probs differ from single probs")
    # Input the policy cannot score: a clear error, not NaN probabilities or a torch internal.
    bad = {
        "NaN in obs": (torch.full((n, d), float("nan")), 0, "NaN or infinite"),
        "wrong observation size": (torch.zeros(n, d + 1), 0, f"must end in [{n}, {d}]"),
        "wrong agent count": (torch.zeros(n + 1, d), 0, f"must end in [{n}, {d}]"),
        "agent out of range": (torch.zeros(n, d), n, f"agent {n} is not in [0, {n})"),
        "a flat vector": (torch.zeros(n * d), 0, "must be [num_agents, obs_dim]"),
    }
    for what, (obs, agent, message) in bad.items():
        try:
            m(obs, agent, True)
        except Exception as e:  # TorchScript raises torch.jit.Error carrying the message
            if message not in str(e):
                sys.exit(f"{what}: unclear error: {e}")
        else:
            sys.exit(f"{what}: accepted")
    if worst_p > 1e-6 or worst_v > 1e-5:
        sys.exit(f"PyTorch differs from the trainer: probs {worst_p:.3g}, value {worst_v:.3g}")
    print(f"ok: PyTorch {torch.__version__} loads {policy}: {count} cases, max |dprob| {worst_p:.2g}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
