"""Stepping geodc from Python against the same loop in C++ (issue: the Python module's speed).

usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_step.py [K] [STEPS] [REPEATS]

Both loops step K copies of geodc's default 4 sites with uniformly random actions on one core:
the C++ loop draws its actions in C++ and calls World::step (VecEnv.step_random); the Python
loop draws a (K, N) array with NumPy and calls env.step, which returns observations, rewards,
ends and reward components as arrays. Prints agent-steps/s of both (best of REPEATS) and the
ratio Python / C++.
"""

import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

import marlsched  # noqa: E402

K = int(sys.argv[1]) if len(sys.argv) > 1 else 64
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
REPEATS = int(sys.argv[3]) if len(sys.argv) > 3 else 5


def cpp_loop():
    env = marlsched.make("geodc", num_envs=K, seed=1)
    env.reset()
    t0 = time.perf_counter()
    env._core.step_random(STEPS, 7)
    return STEPS * K * env.num_agents / (time.perf_counter() - t0)


def python_loop():
    env = marlsched.make("geodc", num_envs=K, seed=1)
    env.reset()
    rng = np.random.default_rng(7)
    n, na = env.num_agents, env.single_action_space.n
    t0 = time.perf_counter()
    for _ in range(STEPS):
        env.step(rng.integers(na, size=(K, n), dtype=np.int32))
    return STEPS * K * n / (time.perf_counter() - t0)


cpp = max(cpp_loop() for _ in range(REPEATS))
py = max(python_loop() for _ in range(REPEATS))
print(f"geodc, {K} copies x 4 agents, {STEPS} steps, best of {REPEATS}, one core")
print(f"C++ loop (World::step)        {cpp:12.0f} agent-steps/s")
print(f"Python loop (VecEnv.step)     {py:12.0f} agent-steps/s")
print(f"ratio Python / C++            {py / cpp:12.3f}")
