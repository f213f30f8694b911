# gosim.env: the Gymnasium API contract of PlacementEnv and its vectorised
# version, with rewards checked against the simulator.
import math

import numpy as np
import pytest

import gosim
from gosim.env import PlacementEnv, VectorPlacementEnv
from conftest import CLUSTER, SMALL_GRAPH


@pytest.fixture()
def env(simulator):
    return PlacementEnv(None, None, simulator=simulator)


def test_reset_and_spaces(env, graph, cluster):
    obs, info = env.reset(seed=3)
    assert info == {}
    assert env.observation_space.contains(obs)
    assert obs["node_features"].shape == (graph.num_nodes, len(gosim.env.NODE_FEATURES))
    assert obs["edge_offsets"][-1] == graph.num_edges == obs["edge_targets"].shape[0]
    assert obs["device_features"].shape == (cluster.num_devices, 4)
    assert np.all(obs["last_devices"] == -1)
    # Successor lists agree with the graph's edges.
    off, targets = obs["edge_offsets"], obs["edge_targets"]
    for v in range(graph.num_nodes):
        assert sorted(targets[off[v]:off[v + 1]]) == sorted(
            int(d) for s, d in zip(graph.edge_src, graph.edge_dst) if s == v)
    assert env.action_space.shape == (graph.num_nodes,)


def test_step_contract_and_reward(env, simulator):
    env.reset(seed=0)
    action = env.action_space.sample()
    assert env.action_space.contains(action)
    obs, reward, terminated, truncated, info = env.step(action)
    expected = simulator.evaluate(action)
    assert info["step_time_s"] == expected.step_time_s and info["feasible"]
    assert reward == -math.sqrt(expected.step_time_s)  # HRL's reward
    assert np.array_equal(info["peak_memory_bytes"], expected.peak_memory_bytes)
    assert terminated and not truncated  # one decision per episode by default
    assert np.array_equal(obs["last_devices"], action)
    assert obs["last_step_time_s"][0] == np.float32(expected.step_time_s)


def test_seeded_reset_reproduces_samples(simulator):
    a, b = (PlacementEnv(None, None, simulator=simulator) for _ in range(2))
    a.reset(seed=42)
    b.reset(seed=42)
    assert all(np.array_equal(a.action_space.sample(), b.action_space.sample()) for _ in range(3))


def test_episode_length_truncates(simulator):
    env = PlacementEnv(None, None, simulator=simulator, episode_length=3, reward="neg")
    env.reset(seed=1)
    flags = []
    for _ in range(3):
        _, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert reward == -info["step_time_s"]
        flags.append((terminated, truncated))
    assert flags == [(False, False), (False, False), (False, True)]


def test_infeasible_is_penalised_with_oom_details(graph, small_memory_cluster):
    env = PlacementEnv(graph, small_memory_cluster)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.zeros(graph.num_nodes, np.int64))
    assert not info["feasible"] and reward == -10.0  # -sqrt(100 s)
    assert info["oom"]["device"] == "gpu0" and info["oom"]["requested"] > 0


def test_group_actions(graph, simulator):
    groups = np.arange(graph.num_nodes) % 5
    env = PlacementEnv(None, None, simulator=simulator, groups=groups)
    env.reset(seed=0)
    assert env.action_space.shape == (5,)
    action = np.array([0, 1, 2, 3, 0])
    _, _, _, _, info = env.step(action)
    assert info["step_time_s"] == simulator.evaluate(action[groups]).step_time_s
    coloc = PlacementEnv(None, None, simulator=simulator, groups="colocation")
    assert coloc.num_groups >= 1 and coloc.action_space.shape == (coloc.num_groups,)


def test_schedule_actions(simulator):
    env = PlacementEnv(None, None, simulator=simulator, schedule=True)
    env.reset(seed=2)
    action = env.action_space.sample()
    assert set(action) == {"devices", "priority"}
    _, _, _, _, info = env.step(action)
    expected = simulator.evaluate(action["devices"], priority=action["priority"].astype(np.float64))
    assert info["step_time_s"] == expected.step_time_s


def test_bad_actions(env, simulator):
    env.reset()
    with pytest.raises(gosim.DecisionError):
        env.step(np.zeros(3, np.int64))
    with pytest.raises(gosim.DecisionError):
        env.step(np.full(simulator.num_nodes, 0.5))
    with pytest.raises(gosim.DecisionError):
        env.step(np.full(simulator.num_nodes, 99))  # no such device
    with pytest.raises(gosim.ConfigError):
        PlacementEnv(None, None, simulator=simulator, reward="bogus")


def test_vector_env_matches_single_env(simulator):
    venv = VectorPlacementEnv(None, None, 6, simulator=simulator)
    obs, _ = venv.reset(seed=9)
    assert obs["node_features"].shape[0] == 6
    actions = venv.sample_actions()
    obs, rewards, terminated, truncated, infos = venv.step(actions)
    assert rewards.shape == (6,) and terminated.all() and not truncated.any()
    for i in range(6):
        assert rewards[i] == -math.sqrt(simulator.evaluate(actions[i]).step_time_s)
    assert np.all(obs["last_devices"] == -1)  # ended episodes were reset


def test_env_from_names():
    env = PlacementEnv(SMALL_GRAPH, CLUSTER)
    assert env.num_devices == 4 and env.num_nodes == 60


def test_gymnasium_checker_when_available(simulator):
    checker = pytest.importorskip("gymnasium.utils.env_checker")
    checker.check_env(PlacementEnv(None, None, simulator=simulator), skip_render_check=True)
