# The checks of Gymnasium's env checker (gymnasium.utils.env_checker.check_env
# and its passive checkers), written out here so that they run where
# Gymnasium is not installed (Debian has no package): spaces, reset's seed
# and options and return type, np_random's seeding, step's return types and
# determinism, observations inside their spaces with the spaces' dtypes,
# render metadata, close, spec and unwrapped; plus the order Gymnasium's
# OrderEnforcing wrapper enforces (no step before reset or after the end).
import copy
import inspect
import math

import numpy as np
import pytest

import gosim
from gosim.env import PlacementEnv, VectorPlacementEnv


def equivalent(a, b):
    """Gymnasium's data_equivalence: same structure, same dtypes, same values."""
    if type(a) is not type(b) and not (isinstance(a, (bool, np.bool_)) and isinstance(b, (bool, np.bool_))):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(equivalent(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(equivalent(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    return a == b


def check_space(space):
    for attribute in ("sample", "contains", "seed", "shape", "dtype"):
        if attribute in ("shape", "dtype") and hasattr(space, "spaces"):
            continue  # a Dict space has neither
        assert hasattr(space, attribute), (space, attribute)
    sample = space.sample()
    assert space.contains(sample), space


def check_observation(obs, space):
    """The passive checker's check_obs: every part an ndarray of the space's dtype and shape, inside it."""
    assert isinstance(obs, dict) and obs.keys() == space.spaces.keys()
    for key, part in obs.items():
        sub = space[key]
        assert isinstance(part, np.ndarray), key
        assert part.dtype == sub.dtype, (key, part.dtype, sub.dtype)
        assert part.shape == sub.shape, (key, part.shape, sub.shape)
        assert np.all(part >= sub.low) and np.all(part <= sub.high), key
    assert space.contains(obs)


def check_step_result(result, env):
    assert isinstance(result, tuple) and len(result) == 5
    obs, reward, terminated, truncated, info = result
    check_observation(obs, env.observation_space)
    assert isinstance(reward, (float, int, np.floating, np.integer)) and not isinstance(reward, bool)
    assert math.isfinite(reward)
    assert isinstance(terminated, (bool, np.bool_)) and isinstance(truncated, (bool, np.bool_))
    assert isinstance(info, dict)


def rng_state(env):
    return copy.deepcopy(env.unwrapped.np_random.bit_generator.state)


@pytest.fixture(params=[{}, {"schedule": True}, {"groups": "colocation", "episode_length": 3}],
                ids=["placement", "schedule", "groups"])
def env(request, simulator):
    return PlacementEnv(None, None, simulator=simulator, **request.param)


def test_spaces(env):
    check_space(env.observation_space)
    check_space(env.action_space)
    assert env.observation_space == copy.deepcopy(env.observation_space)


def test_reset_seed_and_np_random(env):
    parameters = inspect.signature(env.reset).parameters
    assert parameters["seed"].default is None and parameters["options"].default is None
    obs1, info = env.reset(seed=123)
    assert isinstance(env.unwrapped.np_random, np.random.Generator)
    check_observation(obs1, env.observation_space)
    seeded = rng_state(env)
    obs2, _ = env.reset(seed=123)
    assert equivalent(obs1, obs2)
    assert rng_state(env) == seeded  # the same seed, the same generator
    env.reset()  # no seed: the generator carries on untouched
    assert rng_state(env) == seeded
    env.reset(seed=456)
    assert rng_state(env) != seeded
    assert getattr(env, "np_random_seed", 456) == 456  # Gymnasium >= 1.0 and gosim's own base
    # Seeded generators agree with NumPy's for that seed (Gymnasium's seeding.np_random).
    assert env.np_random.integers(1 << 30) == np.random.default_rng(456).integers(1 << 30)


def test_reset_options_and_return_type(env):
    result = env.reset(options={})
    assert isinstance(result, tuple) and len(result) == 2
    obs, info = result
    assert isinstance(info, dict)
    check_observation(obs, env.observation_space)
    with pytest.raises(gosim.ConfigError, match="takes no options"):
        env.reset(options={"bogus": 1})


def test_step_types_and_determinism(env):
    results = []
    for _ in range(2):
        env.reset(seed=123)
        env.action_space.seed(123)
        action = env.action_space.sample()
        result = env.step(copy.deepcopy(action))
        check_step_result(result, env)
        results.append(result)
    assert equivalent(results[0], results[1])


def test_episode_order_is_enforced(env):
    fresh = PlacementEnv(None, None, simulator=env.simulator)
    with pytest.raises(gosim.StateError, match=r"before reset\(\)"):
        fresh.step(fresh.action_space.sample())
    env.reset(seed=0)
    ended = False
    for _ in range(env.episode_length):
        assert not ended
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        ended = terminated or truncated
    assert ended
    with pytest.raises(gosim.StateError, match=r"after the episode ended \((terminated|truncated)=True\)"):
        env.step(env.action_space.sample())
    env.reset()
    check_step_result(env.step(env.action_space.sample()), env)  # a new episode runs


def test_a_bad_action_leaves_the_episode_running(env):
    env.reset(seed=0)
    with pytest.raises(gosim.DecisionError):
        env.step(np.zeros(3, np.int64))
    check_step_result(env.step(env.action_space.sample()), env)


def test_render_metadata_and_modes(simulator):
    env = PlacementEnv(None, None, simulator=simulator)
    modes = env.metadata["render_modes"]
    assert isinstance(modes, (list, tuple)) and modes == ["ansi"]
    assert isinstance(env.metadata["render_fps"], (int, float))
    assert env.render_mode is None and env.render() is None
    ansi = PlacementEnv(None, None, simulator=simulator, render_mode="ansi")
    ansi.reset(seed=0)
    assert ansi.render().endswith("no decision yet\n")
    devices = np.zeros(simulator.num_nodes, np.int64)
    devices[:10] = 1
    _, _, _, _, info = ansi.step(devices)
    text = ansi.render()
    assert f"step time {info['step_time_s'] * 1e3:.3f} ms" in text
    assert "gpu0: 50 nodes" in text and "gpu1: 10 nodes" in text and "gpu2: 0 nodes" in text
    with pytest.raises(gosim.ConfigError, match="render_mode='human'"):
        PlacementEnv(None, None, simulator=simulator, render_mode="human")


def test_close_spec_and_unwrapped(env, simulator):
    assert env.unwrapped is env
    assert env.spec.id == "gosim/Placement-v0" and env.spec.entry_point == "gosim.env:PlacementEnv"
    assert env.spec.kwargs["graph"] == simulator.graph.name and env.spec.kwargs["cluster"] == "p100x4_pcie"
    env.close()
    env.close()  # twice is fine
    with PlacementEnv(None, None, simulator=simulator) as inside:
        inside.reset(seed=0)


def test_vector_env_api(simulator):
    venv = VectorPlacementEnv(None, None, 4, simulator=simulator, episode_length=2)
    assert venv.unwrapped is venv and venv.spec.id == "gosim/VectorPlacement-v0"
    assert venv.spec.kwargs["num_envs"] == 4
    assert str(venv.metadata["autoreset_mode"]).lower().replace("_", "") in ("samestep", "autoresetmode.samestep")
    with pytest.raises(gosim.StateError):
        venv.step(venv.sample_actions())
    obs, infos = venv.reset(seed=5)
    assert venv.observation_space.contains(obs) and isinstance(infos, dict)
    assert venv.action_space.shape == (4, simulator.num_nodes)
    first = venv.step(venv.action_space.sample())
    obs, rewards, terminated, truncated, infos = first
    assert venv.observation_space.contains(obs)
    assert rewards.dtype == np.float64 and terminated.dtype == truncated.dtype == np.bool_
    assert not truncated.any() and np.all(obs["last_devices"] >= 0)
    obs, _, _, truncated, _ = venv.step(venv.action_space.sample())
    assert truncated.all() and np.all(obs["last_devices"] == -1)  # ended, reset at once
    # Determinism: the same seed gives the same samples and results.
    again = VectorPlacementEnv(None, None, 4, simulator=simulator, episode_length=2)
    again.reset(seed=5)
    assert equivalent(again.step(again.action_space.sample()), first)


def test_vector_env_batched_dict_actions(simulator):
    venv = VectorPlacementEnv(None, None, 3, simulator=simulator, schedule=True)
    venv.reset(seed=1)
    batched = venv.action_space.sample()
    assert batched["devices"].shape == (3, simulator.num_nodes)
    _, rewards, _, _, infos = venv.step(batched)
    for i in range(3):
        expected = simulator.evaluate(batched["devices"][i], priority=batched["priority"][i].astype(np.float64))
        assert infos["step_time_s"][i] == expected.step_time_s
        assert rewards[i] == -math.sqrt(expected.step_time_s)
