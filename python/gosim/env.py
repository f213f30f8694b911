"""Gymnasium-style environments for device placement (and scheduling) on gosim.

PlacementEnv follows the Gymnasium API (reset(seed=..., options=...) ->
(observation, info); step(action) -> (observation, reward, terminated,
truncated, info); observation_space / action_space), so code written for
Gymnasium environments works with it. Gymnasium is used when importable
(the env is then a gymnasium.Env and its spaces are gymnasium.spaces); it is
not required: the small Box / MultiDiscrete / Dict classes below stand in
for them with the same sample(), contains(), shape and dtype.

An action is a whole decision: a device per node, or per group when the env
has `groups` (node -> group ids; the papers' grouper output, or
"colocation"); with schedule=True it is a dict {"devices": ..., "priority":
...} where priority (one value per node in [0, 1], higher runs first) orders
each device's ready queue.

Reward (reward="neg_sqrt", the default) is -sqrt(step time in seconds), the
reward of HRL (Mirhoseini et al. 2018, "A Hierarchical Model for Device
Placement"); an infeasible (out-of-memory) decision counts as a step time of
infeasible_step_time seconds, 100 s as in HRL's reference code.
reward="neg" gives -step time; a callable gets the info dict and returns the
reward. See docs/PYTHON.md.

With or without Gymnasium the envs have what its API promises: spec,
unwrapped, render_mode and metadata, np_random seeded by reset(seed=...),
and step() refuses to run before reset() or after an episode ended
(gosim.StateError), as Gymnasium's OrderEnforcing wrapper does.
tests/python/test_env_checker.py runs the checks of Gymnasium's env checker
on them.
"""

import math

import numpy as np

from . import _core
from ._errors import ConfigError, DecisionError, StateError

try:  # optional
    import gymnasium as _gym
    from gymnasium import spaces as _spaces
except ImportError:  # pragma: no cover - exercised where gymnasium is absent
    _gym = None
    _spaces = None

ENV_ID = "gosim/Placement-v0"
VECTOR_ENV_ID = "gosim/VectorPlacement-v0"


class Box:
    """A box in R^n (the subset of gymnasium.spaces.Box that gosim uses)."""

    def __init__(self, low, high, shape, dtype=np.float32, seed=None):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        # Integer boxes hold infinite bounds as the dtype's limits, as gymnasium's do.
        limits = np.iinfo(self.dtype) if np.issubdtype(self.dtype, np.integer) else None
        bound = (lambda v: np.clip(v, limits.min, limits.max)) if limits else (lambda v: v)
        self.low = np.array(np.broadcast_to(bound(np.asarray(low, dtype=np.float64)), self.shape), dtype=self.dtype)
        self.high = np.array(np.broadcast_to(bound(np.asarray(high, dtype=np.float64)), self.shape), dtype=self.dtype)
        self.np_random = np.random.default_rng(seed)

    def seed(self, seed=None):
        self.np_random = np.random.default_rng(seed)
        return [seed]

    def sample(self):
        low = np.where(np.isfinite(self.low), self.low, -1.0)
        high = np.where(np.isfinite(self.high), self.high, 1.0)
        return self.np_random.uniform(low, high, self.shape).astype(self.dtype)

    def contains(self, x):
        x = np.asarray(x)
        return (x.shape == self.shape and np.can_cast(x.dtype, self.dtype)
                and bool(np.all(x >= self.low) and np.all(x <= self.high)))

    __contains__ = contains

    def __eq__(self, other):
        return (isinstance(other, Box) and self.shape == other.shape and self.dtype == other.dtype
                and np.array_equal(self.low, other.low) and np.array_equal(self.high, other.high))

    def __repr__(self):
        return f"Box({self.shape}, {self.dtype})"


class MultiDiscrete:
    """Integer vectors with 0 <= x[i] < nvec[i] (as gymnasium.spaces.MultiDiscrete)."""

    def __init__(self, nvec, dtype=np.int64, seed=None):
        self.nvec = np.asarray(nvec, dtype=np.int64)
        self.shape = self.nvec.shape
        self.dtype = np.dtype(dtype)
        self.np_random = np.random.default_rng(seed)

    def seed(self, seed=None):
        self.np_random = np.random.default_rng(seed)
        return [seed]

    def sample(self):
        return self.np_random.integers(0, self.nvec).astype(self.dtype)

    def contains(self, x):
        x = np.asarray(x)
        return (x.shape == self.shape and np.issubdtype(x.dtype, np.integer)
                and bool(np.all(x >= 0) and np.all(x < self.nvec)))

    __contains__ = contains

    def __eq__(self, other):
        return isinstance(other, MultiDiscrete) and np.array_equal(self.nvec, other.nvec)

    def __repr__(self):
        return f"MultiDiscrete({self.nvec.tolist() if self.nvec.size <= 8 else self.shape})"


class Dict:
    """A dict of spaces (as gymnasium.spaces.Dict)."""

    def __init__(self, spaces, seed=None):
        self.spaces = dict(spaces)
        self.seed(seed)

    def seed(self, seed=None):
        seeds = np.random.SeedSequence(seed).spawn(len(self.spaces)) if seed is not None else [None] * len(self.spaces)
        for space, s in zip(self.spaces.values(), seeds):
            space.seed(None if s is None else int(s.generate_state(1)[0]))
        return [seed]

    def sample(self):
        return {k: s.sample() for k, s in self.spaces.items()}

    def contains(self, x):
        return isinstance(x, dict) and x.keys() == self.spaces.keys() and all(
            self.spaces[k].contains(v) for k, v in x.items())

    __contains__ = contains

    def __getitem__(self, key):
        return self.spaces[key]

    def keys(self):
        return self.spaces.keys()

    def __eq__(self, other):
        return isinstance(other, Dict) and self.spaces == other.spaces

    def __repr__(self):
        return f"Dict({self.spaces})"


def _box(low, high, shape, dtype):
    if _spaces is not None:
        return _spaces.Box(low=low, high=high, shape=shape, dtype=dtype)
    return Box(low, high, shape, dtype)


def _multi_discrete(nvec):
    if _spaces is not None:
        return _spaces.MultiDiscrete(nvec)
    return MultiDiscrete(nvec)


def _dict(spaces):
    if _spaces is not None:
        return _spaces.Dict(spaces)
    return Dict(spaces)


def batch_space(space, n):
    """`n` copies of `space` stacked on a leading axis (gymnasium.vector.utils.batch_space)."""
    if _gym is not None:
        from gymnasium.vector.utils import batch_space as batch
        return batch(space, n)
    if isinstance(space, Box):
        return Box(np.stack([space.low] * n), np.stack([space.high] * n), (n,) + space.shape, space.dtype)
    if isinstance(space, MultiDiscrete):
        return MultiDiscrete(np.stack([space.nvec] * n), space.dtype)
    return Dict({k: batch_space(v, n) for k, v in space.spaces.items()})


class EnvSpec:
    """What built an env (gymnasium.envs.registration.EnvSpec's fields that gosim fills in)."""

    def __init__(self, id, entry_point, kwargs=None, max_episode_steps=None, reward_threshold=None,
                 nondeterministic=False, order_enforce=True, disable_env_checker=False):
        self.id, self.entry_point, self.kwargs = id, entry_point, dict(kwargs or {})
        self.max_episode_steps, self.reward_threshold = max_episode_steps, reward_threshold
        self.nondeterministic, self.order_enforce = nondeterministic, order_enforce
        self.disable_env_checker = disable_env_checker
        self.namespace, _, rest = id.rpartition("/")
        self.name, _, version = rest.rpartition("-v")
        self.version = int(version)

    def __repr__(self):
        return f"EnvSpec(id={self.id!r}, entry_point={self.entry_point!r})"


def _spec(env_id, entry_point, kwargs):
    if _gym is not None:
        from gymnasium.envs.registration import EnvSpec as GymEnvSpec
        return GymEnvSpec(id=env_id, entry_point=entry_point, kwargs=kwargs)
    return EnvSpec(env_id, entry_point, kwargs)


class _Env:
    """The parts of gymnasium.Env that gosim's envs use, for when Gymnasium is not installed."""

    metadata = {"render_modes": []}
    render_mode = None
    spec = None
    _np_random = None
    _np_random_seed = None

    @property
    def np_random(self):
        """The env's numpy.random.Generator: seeded by reset(seed=...), else from fresh entropy on first use."""
        if self._np_random is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0])
            self._np_random, self._np_random_seed = np.random.default_rng(seed), seed
        return self._np_random

    @np_random.setter
    def np_random(self, value):
        self._np_random, self._np_random_seed = value, -1

    @property
    def np_random_seed(self):
        if self._np_random is None:
            self.np_random  # noqa: B018  (creates it)
        return self._np_random_seed

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self._np_random, self._np_random_seed = np.random.default_rng(seed), seed

    @property
    def unwrapped(self):
        return self

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()
        return False

    def __str__(self):
        return f"<{type(self).__name__}<{self.spec.id if self.spec else ''}>>"


_Base = _gym.Env if _gym is not None else _Env


NODE_FEATURES = ("log_flops", "log_bytes_read", "log_bytes_written", "log_output_bytes",
                 "log_persistent_bytes", "forward", "backward", "update", "log_in_degree",
                 "log_out_degree")
DEVICE_FEATURES = ("log_peak_flops", "log_memory_bandwidth", "log_memory_capacity", "launch_overhead_us")


def node_features(graph):
    """(num_nodes, len(NODE_FEATURES)) float32: log1p of the sizes, phase one-hot, log1p degrees."""
    in_off, _ = graph.in_csr()
    out_off, _ = graph.out_csr()
    phase = graph.phase
    cols = [np.log1p(graph.flops), np.log1p(graph.bytes_read), np.log1p(graph.bytes_written),
            np.log1p(graph.output_bytes), np.log1p(graph.persistent_bytes),
            phase == 0, phase == 1, phase == 2, np.log1p(np.diff(in_off)), np.log1p(np.diff(out_off))]
    return np.stack([np.asarray(c, dtype=np.float32) for c in cols], axis=1)


def device_features(cluster):
    """(num_devices, len(DEVICE_FEATURES)) float32."""
    rows = [[math.log1p(d["peak_flops_fp32"]), math.log1p(d["memory_bandwidth"]),
             math.log1p(d["memory_capacity"]), d["launch_overhead"] * 1e6] for d in cluster.devices]
    return np.asarray(rows, dtype=np.float32).reshape(cluster.num_devices, len(DEVICE_FEATURES))


def _resolve_groups(graph, groups):
    """node -> group id array (ids 0..G-1) and G, or (None, num_nodes)."""
    if groups is None:
        return None, graph.num_nodes
    if isinstance(groups, str):
        if groups != "colocation":
            raise ConfigError(f"groups='{groups}' is not known (give 'colocation' or a node -> group array)")
        coloc = graph.colocation.astype(np.int64)
        # Nodes without a colocation group form groups of their own.
        lone = coloc < 0
        coloc[lone] = coloc.max(initial=-1) + 1 + np.arange(int(lone.sum()))
        _, groups = np.unique(coloc, return_inverse=True)
    groups = np.asarray(groups)
    if groups.shape != (graph.num_nodes,) or not np.issubdtype(groups.dtype, np.integer):
        raise ConfigError(f"groups must be an integer array of one group id per node ({graph.num_nodes}), "
                                f"not shape {groups.shape} dtype {groups.dtype}")
    if groups.size and groups.min() < 0:
        raise ConfigError("groups must be >= 0")
    uniq, dense = np.unique(groups, return_inverse=True)
    return dense.astype(np.int64), len(uniq)


class PlacementEnv(_Base):
    """Device placement (optionally with scheduling priorities) of one graph on one cluster.

    PlacementEnv(graph, cluster, **options); graph and cluster are gosim
    objects or what gosim.load_graph / load_cluster accept. Options:
      groups=None | "colocation" | int array (node -> group): act per group;
      schedule=False: when True the action is {"devices", "priority"};
      reward="neg_sqrt" | "neg" | callable(info) -> float;
      infeasible_step_time=100.0: seconds counted for an out-of-memory decision;
      episode_length=1: decisions per episode (1: each decision is an episode,
        terminated=True; more: truncated=True after that many);
      oom_details=True: info["oom"] holds the simulator's out-of-memory report;
      render_mode=None | "ansi": render() returns a text summary of the last decision;
      cost_model="auto", cost_model_options=None, sim_options=None: the simulator's;
      simulator=None: a gosim.Simulator to share.
    Observation (a dict of NumPy arrays): node_features (N, F) float32,
    edge_offsets (N + 1) / edge_targets (E) int32 (successors as CSR),
    edge_bytes (E) float32 (log1p), device_features (D, 4) float32,
    last_devices (N) int64 (-1 before the first step), last_step_time_s (1,) float32.
    step() before reset() or after an episode ended raises gosim.StateError.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, graph, cluster, *, groups=None, schedule=False, reward="neg_sqrt",
                 infeasible_step_time=100.0, episode_length=1, oom_details=True, render_mode=None,
                 cost_model="auto", cost_model_options=None, sim_options=None, simulator=None):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode={render_mode!r} is not known (give None or one of "
                              f"{self.metadata['render_modes']})")
        if simulator is None:
            options = dict(sim_options or {})
            options.setdefault("infeasible_step_time", float(infeasible_step_time))
            simulator = _core.Simulator(graph, cluster, cost_model=cost_model,
                                        cost_model_options=cost_model_options, options=options)
        if not (reward in ("neg_sqrt", "neg") or callable(reward)):
            raise ConfigError(f"reward='{reward}' is not known (give 'neg_sqrt', 'neg' or a callable)")
        if int(episode_length) < 1:
            raise ConfigError("episode_length must be >= 1")
        self.render_mode = render_mode
        self.simulator = simulator
        self.graph = simulator.graph
        self.cluster = simulator.cluster
        self.num_nodes = self.graph.num_nodes
        self.num_devices = self.cluster.num_devices
        self.groups, self.num_groups = _resolve_groups(self.graph, groups)
        self.schedule = bool(schedule)
        self.reward_kind = reward
        self.infeasible_step_time = float(infeasible_step_time)
        self.episode_length = int(episode_length)
        self.oom_details = bool(oom_details)
        self.spec = _spec(ENV_ID, "gosim.env:PlacementEnv", {
            "graph": self.graph.name, "cluster": self.cluster.name, "groups": groups if isinstance(groups, str) else
            None if groups is None else "array", "schedule": self.schedule, "episode_length": self.episode_length,
            "cost_model": simulator.cost_model})

        out_off, out_ids = self.graph.out_csr()
        edge_dst = np.asarray(self.graph.edge_dst)
        self._static = {
            "node_features": node_features(self.graph),
            "edge_offsets": out_off,
            "edge_targets": edge_dst[out_ids].astype(np.int32),
            "edge_bytes": np.log1p(np.asarray(self.graph.edge_bytes)[out_ids]).astype(np.float32),
            "device_features": device_features(self.cluster),
        }
        n, e, d = self.num_nodes, self.graph.num_edges, self.num_devices
        self.observation_space = _dict({
            "node_features": _box(-np.inf, np.inf, (n, len(NODE_FEATURES)), np.float32),
            "edge_offsets": _box(0, max(e, 0), (n + 1,), np.int32),
            "edge_targets": _box(0, max(n - 1, 0), (e,), np.int32),
            "edge_bytes": _box(0, np.inf, (e,), np.float32),
            "device_features": _box(-np.inf, np.inf, (d, len(DEVICE_FEATURES)), np.float32),
            "last_devices": _box(-1, d - 1, (n,), np.int64),
            "last_step_time_s": _box(0, np.inf, (1,), np.float32),
        })
        devices = _multi_discrete(np.full(self.num_groups, d, dtype=np.int64))
        self.action_space = (_dict({"devices": devices, "priority": _box(0.0, 1.0, (n,), np.float32)})
                             if self.schedule else devices)
        self._steps = 0
        self._last_devices = np.full(n, -1, dtype=np.int64)
        self._last_step_time = 0.0
        self._last_info = None
        self._needs_reset = "before reset()"

    # -- Gymnasium API -----------------------------------------------------
    def reset(self, *, seed=None, options=None):
        """Starts an episode: (observation, info). `seed` seeds np_random and the action space."""
        super().reset(seed=seed)
        if options:
            raise ConfigError(f"PlacementEnv.reset takes no options (got {sorted(options)})")
        if seed is not None:
            self.action_space.seed(seed)
        self._steps = 0
        self._last_devices = np.full(self.num_nodes, -1, dtype=np.int64)
        self._last_step_time = 0.0
        self._last_info = None
        self._needs_reset = None
        return self._observation(), {}

    def step(self, action):
        """Simulates the decision `action`: (observation, reward, terminated, truncated, info)."""
        if self._needs_reset:
            raise StateError(f"PlacementEnv.step() {self._needs_reset}: call reset() first")
        devices, priority = self.decision(action)
        result = self.simulator.evaluate(devices, priority=priority)
        info = self._info(result, devices, priority)
        reward = self.reward(info)
        self._steps += 1
        self._last_devices = devices.astype(np.int64)
        self._last_step_time = info["step_time_s"]
        self._last_info = info
        terminated = self.episode_length == 1
        truncated = not terminated and self._steps >= self.episode_length
        if terminated or truncated:
            self._needs_reset = f"after the episode ended ({'terminated' if terminated else 'truncated'}=True)"
        return self._observation(), reward, terminated, truncated, info

    def render(self):
        """render_mode "ansi": the last decision in a few lines (step time, nodes per device); else None."""
        if self.render_mode != "ansi":
            return None
        if self._last_info is None:
            return f"{self.graph.name} on {self.cluster.name}: no decision yet\n"
        info = self._last_info
        counts = np.bincount(self._last_devices, minlength=self.num_devices)
        lines = [f"{self.graph.name} on {self.cluster.name}, decision {self._steps}: "
                 + (f"step time {info['step_time_s'] * 1e3:.3f} ms" if info["feasible"] else
                    f"out of memory on {self.cluster.device_names[info['oom_device']]}")]
        for name, count, peak in zip(self.cluster.device_names, counts, info["peak_memory_bytes"]):
            lines.append(f"  {name}: {count} nodes, peak {peak / 2**20:.1f} MiB")
        return "\n".join(lines) + "\n"

    def close(self):
        pass

    # -- Helpers -----------------------------------------------------------
    def decision(self, action):
        """(device per node as int32, priority per node or None) of an action; checks it."""
        priority = None
        if self.schedule:
            if not isinstance(action, dict) or set(action) != {"devices", "priority"}:
                raise DecisionError("with schedule=True an action is {'devices': ..., 'priority': ...}")
            priority = np.asarray(action["priority"], dtype=np.float64)
            if priority.shape != (self.num_nodes,):
                raise DecisionError(f"priority must have one value per node ({self.num_nodes}), "
                                    f"not shape {priority.shape}")
            action = action["devices"]
        action = np.asarray(action)
        if action.shape != (self.num_groups,) or (action.size and not np.issubdtype(action.dtype, np.integer)):
            what = "group" if self.groups is not None else "node"
            raise DecisionError(f"an action is one device index per {what} ({self.num_groups} integers), "
                                f"not shape {action.shape} dtype {action.dtype}")
        devices = action if self.groups is None else action[self.groups]
        return devices.astype(np.int32, copy=False), priority

    def reward(self, info):
        """The reward of an info dict (see the module docstring)."""
        if callable(self.reward_kind):
            return float(self.reward_kind(info))
        t = info["step_time_s"] if info["feasible"] else self.infeasible_step_time
        return -math.sqrt(t) if self.reward_kind == "neg_sqrt" else -t

    def _info(self, result, devices, priority):
        info = {"step_time_s": result.step_time_s, "feasible": result.feasible,
                "peak_memory_bytes": result.peak_memory_bytes, "oom_device": result.oom_device}
        if not result.feasible and self.oom_details:
            info["oom"] = self.simulator.simulate(devices, priority=priority)["oom"]
        return info

    def _observation(self):
        obs = dict(self._static)
        obs["last_devices"] = self._last_devices.copy()
        obs["last_step_time_s"] = np.array([self._last_step_time], dtype=np.float32)
        return obs


class VectorPlacementEnv:
    """num_envs copies of a PlacementEnv stepped together through Simulator.evaluate_batch.

    The API of a Gymnasium vector env: step(actions) takes one action per env
    (a (num_envs, groups) integer array; with schedule=True a list of dicts
    or a dict of batched arrays) and returns batched (observations, rewards,
    terminated, truncated, infos), NumPy arrays with a leading num_envs axis;
    infos is a dict of arrays. An env whose episode ends is reset at once (its
    observation is the new episode's; metadata["autoreset_mode"] is
    "SameStep"), as Gymnasium's vector envs did up to 0.29.
    observation_space / action_space are the batched spaces,
    single_observation_space / single_action_space one env's. The batch runs
    on gosim's thread pool with the GIL released.
    """

    metadata = {"render_modes": [], "autoreset_mode": "SameStep"}
    render_mode = None

    def __init__(self, graph, cluster, num_envs, **options):
        if int(num_envs) < 1:
            raise ConfigError("num_envs must be >= 1")
        self.num_envs = int(num_envs)
        self.env = PlacementEnv(graph, cluster, **options)
        self.single_observation_space = self.env.observation_space
        self.single_action_space = self.env.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.spec = _spec(VECTOR_ENV_ID, "gosim.env:VectorPlacementEnv",
                          {**self.env.spec.kwargs, "num_envs": self.num_envs})
        if _gym is not None:
            autoreset = getattr(getattr(_gym.vector, "AutoresetMode", None), "SAME_STEP", "SameStep")
            self.metadata = {**self.metadata, "autoreset_mode": autoreset}
        self._steps = np.zeros(self.num_envs, dtype=np.int64)
        self._last_devices = np.full((self.num_envs, self.env.num_nodes), -1, dtype=np.int64)
        self._last_step_time = np.zeros((self.num_envs, 1), dtype=np.float32)
        self._reset_done = False

    @property
    def np_random(self):
        return self.env.np_random

    @property
    def unwrapped(self):
        return self

    def reset(self, *, seed=None, options=None):
        """Resets every env: (observations, infos). `seed` (an int or one per env; the first seeds np_random)."""
        if isinstance(seed, (list, tuple)):
            if len(seed) != self.num_envs:
                raise ConfigError(f"reset(seed=...) needs one seed per env ({self.num_envs}), got {len(seed)}")
            seed = seed[0]
        self.env.reset(seed=seed, options=options)
        if seed is not None:
            self.action_space.seed(seed)
        self._steps[:] = 0
        self._last_devices[:] = -1
        self._last_step_time[:] = 0
        self._reset_done = True
        return self._observations(), {}

    def sample_actions(self):
        """One random action per env from the single action space."""
        samples = [self.env.action_space.sample() for _ in range(self.num_envs)]
        return samples if self.env.schedule else np.stack(samples)

    def step(self, actions):
        if not self._reset_done:
            raise StateError("VectorPlacementEnv.step() before reset(): call reset() first")
        if isinstance(actions, dict):  # a batched Dict action: one dict per env
            actions = [{k: v[i] for k, v in actions.items()} for i in range(len(actions["devices"]))]
        if len(actions) != self.num_envs:
            raise DecisionError(f"step() needs {self.num_envs} actions, got {len(actions)}")
        decisions = [self.env.decision(a) for a in actions]
        devices = [d for d, _ in decisions]
        priorities = [p for _, p in decisions] if self.env.schedule else None
        batch = self.env.simulator.evaluate_batch(devices, priorities=priorities)
        infos = {"step_time_s": batch.step_time_s, "feasible": batch.feasible,
                 "peak_memory_bytes": batch.peak_memory_bytes, "oom_device": batch.oom_device}
        if callable(self.env.reward_kind):
            rewards = np.array([self.env.reward({k: v[i] for k, v in infos.items()})
                                for i in range(self.num_envs)], dtype=np.float64)
        else:
            t = np.where(batch.feasible, batch.step_time_s, self.env.infeasible_step_time)
            rewards = -np.sqrt(t) if self.env.reward_kind == "neg_sqrt" else -t
        self._steps += 1
        terminated = np.full(self.num_envs, self.env.episode_length == 1)
        truncated = ~terminated & (self._steps >= self.env.episode_length)
        done = terminated | truncated
        for i in range(self.num_envs):
            self._last_devices[i] = devices[i]
        self._last_step_time[:, 0] = batch.step_time_s
        self._steps[done] = 0
        self._last_devices[done] = -1
        self._last_step_time[done] = 0
        return self._observations(), rewards, terminated, truncated, infos

    def render(self):
        return None

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()
        return False

    def _observations(self):
        static = self.env._static
        obs = {k: np.broadcast_to(v, (self.num_envs,) + v.shape) for k, v in static.items()}
        obs["last_devices"] = self._last_devices.copy()
        obs["last_step_time_s"] = self._last_step_time.copy()
        return obs


def _register():
    """Makes gymnasium.make("gosim/Placement-v0", graph=..., cluster=...) work when Gymnasium is installed."""
    if _gym is None:
        return
    from gymnasium.envs.registration import registry
    if ENV_ID not in registry:
        _gym.register(id=ENV_ID, entry_point="gosim.env:PlacementEnv")


_register()
