#!/usr/bin/python3
"""Reads marlsched trajectory files with h5py (Debian's python3-h5py) and checks them.

    check_trajectories.py run RUN_DIR RANKS          a finished run: layout, dtypes, episode
                                                     boundaries, and values against metrics.csv
    check_trajectories.py crashed FILE ROWS LAST_IT  a segment left by a killed run
    check_trajectories.py resumed STRAIGHT RESUMED   segments of a killed + resumed run equal the
                                                     uninterrupted run's, row for row

Exits non-zero with a message on the first mismatch.
"""
import csv
import glob
import json
import os
import sys

import h5py
import numpy as np

AGENT_FIELDS = ["observations", "next_observations", "actions", "rewards", "log_probs", "values",
                "infos/reward_components"]
WORLD_FIELDS = ["terminations", "truncations", "infos/episode_ids", "infos/episode_steps"]
ALL_FIELDS = AGENT_FIELDS + WORLD_FIELDS + ["infos/iterations"]
DTYPES = {"observations": "float32", "next_observations": "float32", "actions": "int32",
          "rewards": "float32", "log_probs": "float32", "values": "float32",
          "infos/reward_components": "float32", "terminations": "uint8",
          "truncations": "uint8", "infos/episode_ids": "int64", "infos/episode_steps": "int32",
          "infos/iterations": "int32"}


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def attr_str(f, name):
    v = f.attrs[name]
    return v.decode() if isinstance(v, bytes) else str(v)


def check_layout(f, rows):
    """Shapes and dtypes of every dataset against the file's own attributes."""
    w, n = int(f.attrs["worlds"]), int(f.attrs["num_agents"])
    d = len(f.attrs["obs_fields"])
    c = len(f.attrs["reward_components"])
    shapes = {"observations": (rows, w, n, d), "next_observations": (rows, w, n, d),
              "actions": (rows, w, n), "rewards": (rows, w, n), "log_probs": (rows, w, n),
              "values": (rows, w, n), "infos/reward_components": (rows, w, n, c),
              "terminations": (rows, w), "truncations": (rows, w),
              "infos/episode_ids": (rows, w), "infos/episode_steps": (rows, w),
              "infos/iterations": (rows,)}
    for name in ALL_FIELDS:
        ds = f[name]
        if ds.shape != shapes[name]:
            fail(f"{f.filename}:{name} has shape {ds.shape}, expected {shapes[name]}")
        if str(ds.dtype) != DTYPES[name]:
            fail(f"{f.filename}:{name} has dtype {ds.dtype}, expected {DTYPES[name]}")
        ds[...]  # every chunk decompresses
    if int(f.attrs["rows"]) != rows:
        fail(f"{f.filename}: attribute rows = {f.attrs['rows']}, datasets hold {rows}")


def check_run(run_dir, ranks):
    files = sorted(glob.glob(os.path.join(run_dir, "trajectories", "segment-*.h5")))
    if len(files) != 1:
        fail(f"expected one segment in {run_dir}, found {files}")
    f = h5py.File(files[0], "r")
    if attr_str(f, "format") != "marlsched-trajectories" or int(f.attrs["format_version"]) != 1:
        fail("format attributes")
    if int(f.attrs["ranks"]) != ranks or int(f.attrs["complete"]) != 1:
        fail(f"ranks {f.attrs['ranks']} (expected {ranks}), complete {f.attrs['complete']}")
    with open(os.path.join(run_dir, "config.toml")) as cf:
        if attr_str(f, "config") != cf.read():
            fail("the config attribute differs from config.toml")
    with open(os.path.join(run_dir, "metrics.csv")) as mf:
        metrics = list(csv.DictReader(mf))
    w, n = int(f.attrs["worlds"]), int(f.attrs["num_agents"])
    t = int(f.attrs["rollout_steps"])
    length = int(f.attrs["episode_length"])
    rows = len(metrics) * t
    check_layout(f, rows)

    its = f["infos/iterations"][:]
    if not np.array_equal(its, np.repeat(np.arange(1, len(metrics) + 1), t)):
        fail("infos/iterations is not T rows per iteration in order")
    # Against what the trainer recorded (metrics.csv, computed from the same steps in memory).
    rew = f["rewards"][:].astype(np.float64)
    comp = f["infos/reward_components"][:].astype(np.float64)
    names = [x.decode() if isinstance(x, bytes) else str(x) for x in f.attrs["reward_components"]]
    done = f["terminations"][:] | f["truncations"][:]
    for i, m in enumerate(metrics):
        sl = slice(i * t, (i + 1) * t)
        got = rew[sl].sum() / (t * w)
        if not np.isclose(got, float(m["system_reward_per_slot"]), rtol=1e-6, atol=1e-6):
            fail(f"iteration {i+1}: rewards sum to {got} per slot, metrics.csv says "
                 f"{m['system_reward_per_slot']}")
        means = [x.decode() if isinstance(x, bytes) else str(x)
                 for x in f.attrs.get("mean_components", [])]
        for j, name in enumerate(names):
            # A rate component is averaged over the agents (metrics.csv: mean_<name>_per_slot).
            got = comp[sl, :, :, j].sum() / (t * w) / (comp.shape[2] if name in means else 1)
            want = float(m[("mean_" if name in means else "") + name + "_per_slot"])
            if not np.isclose(got, want, rtol=1e-6, atol=1e-6):
                fail(f"iteration {i+1}: {name} {got} per slot, metrics.csv says {want}")
        if int(done[sl].sum()) != int(m["episodes"]):
            fail(f"iteration {i+1}: {done[sl].sum()} episode ends, metrics.csv says "
                 f"{m['episodes']}")

    # Episode boundaries: next_observations[s] is observations[s+1] inside an episode and the
    # terminal observation (not the reset) at its end; steps count up and restart at 0.
    obs, nxt = f["observations"][:], f["next_observations"][:]
    steps, ids = f["infos/episode_steps"][:], f["infos/episode_ids"][:]
    trunc, term = f["truncations"][:], f["terminations"][:]
    inside = done[:-1] == 0
    if not np.array_equal(nxt[:-1][inside], obs[1:][inside]):
        fail("next_observations differ from the following observations inside episodes")
    if np.array_equal(nxt[:-1][~inside], obs[1:][~inside]):
        fail("next_observations at episode ends equal the next episode's first observations")
    if term.any():
        fail("geodc episodes end by truncation only, yet terminations are set")
    if not np.array_equal(trunc.astype(bool), steps == length - 1):
        fail("truncations are not exactly at the last step of each episode")
    if not (np.all(steps[1:][done[:-1] == 1] == 0) and
            np.all(steps[1:][inside] == steps[:-1][inside] + 1)):
        fail("episode_steps do not count up and restart after an episode end")
    if not np.all(ids[1:][inside] == ids[:-1][inside]) or \
            not np.all(ids[1:][~inside] == ids[:-1][~inside] + w):
        fail("episode ids do not follow the episodes")
    if not np.all(ids[0] == np.arange(w)):
        fail(f"first episode ids {ids[0]}")
    # Policy data.
    acts = f["actions"][:]
    na = len(f.attrs["action_names"])
    if acts.min() < 0 or acts.max() >= na:
        fail(f"actions outside [0, {na})")
    tg = json.loads(f.attrs["action_targets"])  # geodc: run or defer x each agent's targets
    if len(tg) != n or any(2 * len(t) != na or a not in t for a, t in enumerate(tg)):
        fail(f"action_targets {tg} do not list every agent's targets")
    lp = f["log_probs"][:]
    if not (np.all(lp <= 0) and np.all(np.isfinite(lp)) and np.all(np.isfinite(f["values"][:]))):
        fail("log_probs must be finite and <= 0, values finite")
    # Every rank's block was written (each agent's observations vary over time).
    for a in range(n):
        if np.all(obs[:, :, a, :] == 0):
            fail(f"agent {a} has no observations")
    print(f"ok: {files[0]}: {rows} rows x {w} worlds x {n} agents from {ranks} ranks match "
          f"metrics.csv; episode boundaries exact")


def check_crashed(path, rows, last_it):
    f = h5py.File(path, "r")
    check_layout(f, rows)
    if int(f.attrs["complete"]) != 0:
        fail("a segment of a killed run says complete")
    if int(f.attrs["last_flushed_iteration"]) != last_it:
        fail(f"last_flushed_iteration {f.attrs['last_flushed_iteration']}, expected {last_it}")
    if int(f["infos/iterations"][-1]) != last_it:
        fail("the last row is not of the last flushed iteration")
    print(f"ok: {path} of the killed run opens; {rows} rows through iteration {last_it}, "
          f"marked incomplete")


def check_resumed(straight, resumed):
    s = sorted(glob.glob(os.path.join(straight, "trajectories", "segment-*.h5")))
    r = sorted(glob.glob(os.path.join(resumed, "trajectories", "segment-*.h5")))
    if len(s) != 1 or len(r) != 2:
        fail(f"segments: straight {s}, resumed {r}")
    ref = h5py.File(s[0], "r")
    parts = [h5py.File(p, "r") for p in r]
    if int(parts[0].attrs["continued_in_segment"]) != 1 or \
            int(parts[1].attrs["first_iteration"]) != int(parts[0].attrs["last_flushed_iteration"]) + 1:
        fail("segment attributes do not chain")
    for p in parts:
        if int(p.attrs["complete"]) != 1:
            fail(f"{p.filename} not complete")
    for name in ALL_FIELDS:
        joined = np.concatenate([p[name][:] for p in parts])
        if not np.array_equal(joined, ref[name][:]):
            fail(f"{name}: segments 0+1 of the resumed run differ from the uninterrupted run")
    its = np.concatenate([p["infos/iterations"][:] for p in parts])
    if len(np.unique(its)) * int(ref.attrs["rollout_steps"]) != len(its):
        fail("an iteration appears twice")
    print(f"ok: resumed segments {[os.path.basename(p) for p in r]} hold exactly the "
          f"uninterrupted run's {len(its)} rows, none twice")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "run":
        check_run(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "crashed":
        check_crashed(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) == 4 and sys.argv[1] == "resumed":
        check_resumed(sys.argv[2], sys.argv[3])
    else:
        fail(__doc__)
