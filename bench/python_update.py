"""The MAPPO update at marlsched's default sizes, written as a PyTorch user would: the reference
that bench/update_vs_python.sh compares marlsched's update with, on the same BLAS and one thread.

Sizes (bench_learner's MAPPO at 4 agents per rank): actor 34 -> 64 -> 64 -> 8, critic
60 -> 128 -> 128 -> 1, tanh; 96 steps x 4 env copies x 4 agents = 1536 samples per update;
5 epochs x 2 minibatches; PPO clipped surrogate, entropy bonus, Huber value loss, Adam, global
gradient-norm clipping of actor and critic separately. Also prints the single-core matrix-product
rate at the update's own shapes. Prints one line per figure: NAME VALUE UNIT.
Run with Debian's interpreter: /usr/bin/python3 bench/python_update.py [updates]
"""
import statistics
import sys
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(1)
M, MB, EPOCHS = 1536, 768, 5
AIN, CIN, NA = 34, 60, 8


def mlp(sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(torch.nn.Tanh())
    return torch.nn.Sequential(*layers)


actor, critic = mlp([AIN, 64, 64, NA]), mlp([CIN, 128, 128, 1])
opt_a = torch.optim.Adam(actor.parameters(), lr=5e-4)
opt_c = torch.optim.Adam(critic.parameters(), lr=5e-4)
x, c = torch.randn(M, AIN), torch.randn(M, CIN)
act = torch.randint(0, NA, (M,))
old = torch.log_softmax(actor(x), 1).gather(1, act[:, None]).squeeze(1).detach()
adv, tgt = torch.randn(M), torch.randn(M)


def update():
    for _ in range(EPOCHS):
        perm = torch.randperm(M)
        for b in range(M // MB):
            idx = perm[b * MB:(b + 1) * MB]
            logp = torch.log_softmax(actor(x[idx]), 1)
            new = logp.gather(1, act[idx, None]).squeeze(1)
            ratio = torch.exp(new - old[idx])
            surr = torch.min(ratio * adv[idx], torch.clamp(ratio, 0.8, 1.2) * adv[idx])
            entropy = -(logp.exp() * logp).sum(1).mean()
            v = critic(c[idx]).squeeze(1)
            value_loss = torch.nn.functional.huber_loss(v, tgt[idx], delta=10.0)
            opt_a.zero_grad()
            opt_c.zero_grad()
            value_loss.backward()
            (-surr.mean() - 0.01 * entropy).backward()
            torch.nn.utils.clip_grad_norm_(actor.parameters(), 10.0)
            torch.nn.utils.clip_grad_norm_(critic.parameters(), 10.0)
            opt_a.step()
            opt_c.step()


n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
update()  # warm-up
times = []
for _ in range(n):
    t0 = time.perf_counter()
    update()
    times.append(time.perf_counter() - t0)
print(f"python_update_ms {1e3 * statistics.median(times):.3f} ms")  # median: a noisy machine

# The matrix products of one minibatch's forward pass (backward repeats each shape twice), timed
# alone at those shapes: what the update's products would cost at the BLAS's own speed.
shapes = [(MB, AIN, 64), (MB, 64, 64), (MB, 64, NA), (MB, CIN, 128), (MB, 128, 128), (MB, 128, 1)]
flop, seconds = 0.0, 0.0
for m, k, nn in shapes:
    a, b = torch.randn(m, k), torch.randn(k, nn)
    for _ in range(20):
        torch.mm(a, b)
    reps = 2000
    t0 = time.perf_counter()
    for _ in range(reps):
        torch.mm(a, b)
    s = (time.perf_counter() - t0) / reps
    flop += 2.0 * m * k * nn
    seconds += s
print(f"matmul_gflops_at_update_shapes {flop / seconds / 1e9:.1f} GFLOP/s")
print(f"update_gflop {3 * flop * EPOCHS * (M // MB) / 1e9:.4f} GFLOP")
