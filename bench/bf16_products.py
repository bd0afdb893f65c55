#!/usr/bin/env python3
"""Matrix products at the shapes of MAPPO's update on one core: fp32 against bf16 (AMX, through
torch's oneDNN path), and bf16 with the casts from and to fp32 that a mixed-precision update
would add. Issue 20, item 2 (bf16 where learning curves stay the same): what bf16 could save
before anything is built. Shapes: a minibatch of 768 samples (1536 per update, 2 minibatches)
through the default actor 34-64-64-8 and critic 60-128-128-1, and the weight-gradient products
of the backward pass.
Usage: OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/bf16_products.py  (Debian's python3-torch)
"""
import sys
import time

try:
    import torch
except ImportError:
    print("skipped: python3-torch is not installed (apt-get install python3-torch)")
    sys.exit(0)

torch.set_num_threads(1)
SHAPES = [  # (rows, inner, cols) of each product
    (768, 34, 64), (768, 64, 64), (768, 64, 8),  # actor forward
    (768, 60, 128), (768, 128, 128), (768, 128, 1),  # critic forward
    (64, 768, 64), (128, 768, 128),  # weight gradients of the hidden layers
]


def seconds(m, k, n, dtype, casts, reps=2000):
    a, b = torch.randn(m, k), torch.randn(k, n)
    if not casts:
        a, b = a.to(dtype), b.to(dtype)

    def once():
        return (a.to(dtype) @ b.to(dtype)).float() if casts else a @ b

    for _ in range(50):
        once()
    t = time.perf_counter()
    for _ in range(reps):
        once()
    return (time.perf_counter() - t) / reps


print(f"torch {torch.__version__}, one thread")
total = {"fp32": 0.0, "bf16": 0.0, "bf16+casts": 0.0}
for m, k, n in SHAPES:
    t = {"fp32": seconds(m, k, n, torch.float32, False),
         "bf16": seconds(m, k, n, torch.bfloat16, False),
         "bf16+casts": seconds(m, k, n, torch.bfloat16, True)}
    flop = 2 * m * k * n
    print(f"{m}x{k}x{n}: " + ", ".join(
        f"{key} {v * 1e6:.1f} us ({flop / v / 1e9:.0f} GFLOP/s)" for key, v in t.items()))
    for key, v in t.items():
        total[key] += v
print("sum over the shapes: " + ", ".join(f"{k} {v * 1e6:.0f} us" for k, v in total.items()) +
      f"; fp32/bf16 {total['fp32'] / total['bf16']:.2f}, "
      f"fp32/(bf16+casts) {total['fp32'] / total['bf16+casts']:.2f}")
