"""marlsched's environments from Python (docs/python.md).

``make(env, config=None, num_envs=K, seed=S, **overrides)`` returns a :class:`VecEnv`: K copies of
one multi-agent env stepped together in C++ (the same code, seeds and auto-reset as
``marlsched train`` on one rank), observations as one ``(K, N, obs_dim)`` float32 array and
actions as one ``(K, N)`` integer array. :class:`ParallelEnv` wraps one copy in PettingZoo's
parallel API. Configs are the CLI's: the same TOML files and keys (``slot_minutes=15`` is
``--slot-minutes 15``), the same validation, and a bad value raises ``ValueError`` with the
CLI's message.
"""

import numpy as np

from . import _core

__all__ = ["make", "VecEnv", "ParallelEnv", "Box", "Discrete", "envs"]


class Discrete:
    """A discrete space of ``n`` actions, 0 .. n - 1 (gymnasium's shape, without gymnasium)."""

    def __init__(self, n):
        self.n = int(n)
        self.shape = ()
        self.dtype = np.dtype(np.int64)

    def sample(self, rng=None):
        return int((rng or np.random.default_rng()).integers(self.n))

    def contains(self, x):
        return isinstance(x, (int, np.integer)) and 0 <= int(x) < self.n

    def __repr__(self):
        return f"Discrete({self.n})"


class Box:
    """A box of float32 observations (gymnasium's shape, without gymnasium)."""

    def __init__(self, low, high, shape):
        self.shape = tuple(shape)
        self.dtype = np.dtype(np.float32)
        self.low = np.full(self.shape, low, dtype=np.float32)
        self.high = np.full(self.shape, high, dtype=np.float32)

    def contains(self, x):
        x = np.asarray(x)
        return x.shape == self.shape and bool(np.all((x >= self.low) & (x <= self.high)))

    def __repr__(self):
        return f"Box({self.low.min()}, {self.high.max()}, {self.shape}, float32)"


def _spaces():
    """gymnasium.spaces where gymnasium is importable, else the light classes above."""
    try:
        from gymnasium import spaces

        return (lambda n: spaces.Discrete(n)), (
            lambda lo, hi, shape: spaces.Box(lo, hi, shape, np.float32)
        )
    except ImportError:
        return Discrete, Box


def _flags(overrides):
    """Keyword overrides as the CLI's flags: slot_minutes=15 -> --slot-minutes=15; lists and
    tuples as several values; booleans as true/false."""
    flags = []
    for key, value in overrides.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, (list, tuple)):
            flags.append(flag)
            flags.extend(_text(v) for v in value)
        else:
            flags.append(f"{flag}={_text(value)}")
    return flags


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def envs():
    """The names of marlsched's envs (the CLI's `marlsched list`)."""
    return list(_core.env_names())


def make(env=None, config=None, num_envs=None, seed=None, num_agents=None, **overrides):
    """K copies of env `env` (geodc, aset, lstcb, coop; None: the config file's).

    config: a TOML file the CLI reads (``--config``); overrides: any option of the CLI's run
    commands, by its long name with ``_`` for ``-`` (they win over the file, as flags do).
    num_envs and seed default to the config's envs-per-rank and seed; num_agents to the agents
    the env config defines (geodc: one per site), else its agents-per-rank.
    """
    core = _core.VecEnv(
        env or "",
        str(config) if config is not None else "",
        int(num_envs) if num_envs is not None else 0,
        int(seed) if seed is not None else -1,
        int(num_agents) if num_agents is not None else 0,
        _flags(overrides),
    )
    return VecEnv(core)


class VecEnv:
    """K copies of a multi-agent env, stepped together; finished copies reset themselves."""

    def __init__(self, core):
        self._core = core
        self.spec = core.spec
        self.num_envs = core.num_envs
        self.num_agents = core.num_agents
        self.agents = [f"agent_{i}" for i in range(self.num_agents)]
        self.obs_fields = list(self.spec["obs_fields"])
        self.reward_components = list(self.spec["reward_components"])
        discrete, box = _spaces()
        self.single_action_space = discrete(len(self.spec["action_names"]))
        self.single_observation_space = box(-np.inf, np.inf, (len(self.obs_fields),))

    @property
    def seed(self):
        return self._core.seed

    @property
    def baselines(self):
        """The env's heuristic baselines, by name (baseline(name) acts as one)."""
        return list(self._core.baseline_names)

    def reset(self, return_dicts=False):
        """Starts the next episode of every copy; observations (K, N, obs_dim), and with
        return_dicts also one {agent: observation} dict per copy."""
        obs = self._core.reset()
        return (obs, self.as_dicts(obs)) if return_dicts else obs

    def step(self, actions):
        """Actions (K, N) -> observations, rewards (K, N), terminations (K, N), truncations
        (K, N), infos. A copy whose episode ended has already started its next episode: its row
        of observations is the new first one, infos["final_observation"] (K, N, obs_dim) holds
        the last one where infos["final_mask"] (K,) is true. infos["reward_components"] is
        (K, N, C) in the order of infos["component_names"]."""
        actions = np.ascontiguousarray(actions, dtype=np.int32)
        obs, rew, term, trunc, comp, ended, final = self._core.step(actions)
        infos = {
            "reward_components": comp,
            "component_names": self.reward_components,
            "final_mask": ended,
            "final_observation": final,
        }
        return obs, rew, term, trunc, infos

    def baseline(self, name):
        """The actions (K, N) that the env's baseline `name` (e.g. "least-loaded", "mpc")
        takes in the current states."""
        return self._core.baseline(name)

    def episode_bound(self, copy=0):
        """The env's hindsight upper bound on the utility (sum of all agents' rewards) of copy
        `copy`'s current episode (geodc's LP relaxation; NaN where the env has none)."""
        return self._core.episode_bound(copy)

    def episode_steps(self):
        """Steps taken so far in each copy's current episode."""
        return list(self._core.episode_steps())

    def as_dicts(self, array):
        """One {agent: row} dict per copy from a (K, N, ...) array."""
        return [dict(zip(self.agents, row)) for row in array]

    def close(self):
        self._core = None


class ParallelEnv:
    """One copy of an env with PettingZoo's parallel API: dicts keyed by agent name, and an
    episode that ends (``agents`` empty) until ``reset()``."""

    metadata = {"render_modes": [], "is_parallelizable": True}

    def __init__(self, env=None, config=None, seed=None, num_agents=None, **overrides):
        self._args = dict(env=env, config=config, num_agents=num_agents, **overrides)
        self._vec = make(num_envs=1, seed=seed, **self._args)
        self.possible_agents = list(self._vec.agents)
        self.agents = []
        self.metadata = dict(self.metadata, name=self._vec.spec["name"])

    def observation_space(self, agent):
        return self._vec.single_observation_space

    def action_space(self, agent):
        return self._vec.single_action_space

    @property
    def num_agents(self):
        return len(self.agents)

    @property
    def max_num_agents(self):
        return len(self.possible_agents)

    def reset(self, seed=None, options=None):
        """Starts an episode; with `seed`, the first episode of that seed's sequence."""
        if seed is not None:
            self._vec = make(num_envs=1, seed=seed, **self._args)
        obs = self._vec.reset()[0]
        self.agents = list(self.possible_agents)
        return dict(zip(self.agents, obs)), {a: {} for a in self.agents}

    def step(self, actions):
        if not self.agents:
            raise RuntimeError("step() after the episode ended: call reset()")
        act = np.array([[actions[a] for a in self.possible_agents]], dtype=np.int32)
        obs, rew, term, trunc, infos = self._vec.step(act)
        done = bool(infos["final_mask"][0])
        if done:
            obs = infos["final_observation"]
        names = self.possible_agents
        comp = infos["reward_components"][0]
        out = (
            dict(zip(names, obs[0])),
            {a: float(r) for a, r in zip(names, rew[0])},
            {a: bool(t) for a, t in zip(names, term[0])},
            {a: bool(t) for a, t in zip(names, trunc[0])},
            {a: dict(zip(infos["component_names"], map(float, c))) for a, c in zip(names, comp)},
        )
        if done:
            self.agents = []
        return out

    def close(self):
        self._vec.close()
