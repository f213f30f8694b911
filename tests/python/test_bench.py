# gosim.bench: an outside agent on the bench suite under gosim's budget
# accounting, rows in gosim run's format, the sealed test split, resume, the
# env form, and the table beside gosim's own agents.
import json

import numpy as np
import pytest

import gosim
import gosim.bench
from conftest import ROOT

SUITE = str(ROOT / "configs/suites/bench_quick.yaml")


def random_agent(graph, cluster, evaluate, seed):
    rng = np.random.default_rng(seed)
    evaluate(np.zeros(graph.num_nodes, np.int32))  # one GPU first
    while True:  # until the budget says stop
        evaluate(rng.integers(0, cluster.num_devices, graph.num_nodes, dtype=np.int32))


def test_rows_budget_resume_and_table(tmp_path):
    out = tmp_path / "mine"
    rows = gosim.bench.evaluate(random_agent, budget=5, seeds=2, suite=SUITE, graphs=["dlrm"], output=str(out),
                                progress=False)
    assert [(r["graph"], r["seed"]) for r in rows] == [("dlrm", 0), ("dlrm", 1)]
    for r in rows:
        assert r["evaluations"] == 5 and r["label"] == "random_agent" and r["feasible"]
        assert r["format"] == "gosim.result" and r["cluster"] == "h100x8_nvswitch"
        assert r["curve"][0][0] == 1 and r["step_time"] == r["curve"][-1][2]
    one_gpu = gosim.Simulator(gosim.load_suite(SUITE).graph("dlrm"), "h100x8_nvswitch").evaluate(
        np.zeros(rows[0]["nodes"], np.int32)).step_time_s
    assert rows[0]["step_time"] <= one_gpu  # the best of what it evaluated, one GPU included
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["graph"] == "dlrm"

    # Finished rows are kept, not run again.
    def never(graph, cluster, evaluate, seed):
        raise AssertionError("ran again")
    again = gosim.bench.evaluate(never, budget=5, seeds=2, suite=SUITE, graphs=["dlrm"], output=str(out),
                                 label="random_agent", progress=False)
    assert again == rows

    # Beside gosim's own agents: one table.
    ref = tmp_path / "ref"
    gosim.run_experiment(str(ROOT / "configs/experiments/bench.yaml"),
                         overrides=["suite=configs/suites/bench_quick.yaml", "split=valid", "seeds=1",
                                    "budget.evaluations=5", "agents=[{name: single_device}]",
                                    f"output={ref}"])
    text = gosim.bench.table([str(ref), str(out)])
    assert "| single_device |" in text and "| random_agent |" in text and "x (1) |" in text


def test_env_form_and_refusals(tmp_path):
    def env_agent(env, seed):  # each decision is an episode
        env.reset(seed=seed)
        for _ in range(3):
            env.step(env.action_space.sample())
            env.reset()
    rows = gosim.bench.evaluate(env_agent, budget=3, seeds=1, suite=SUITE, graphs=["dlrm"], env=True,
                                progress=False)
    assert rows[0]["evaluations"] == 3

    with pytest.raises(gosim.ConfigError, match="test split is sealed"):
        gosim.bench.evaluate(random_agent, split="test", budget=5)
    with pytest.raises(gosim.ConfigError, match="budget"):
        gosim.bench.evaluate(random_agent, budget=0, suite=SUITE)
    with pytest.raises(gosim.ConfigError, match="not in the valid split"):
        gosim.bench.evaluate(random_agent, graphs=["resnet50"], suite=SUITE)
    with pytest.raises(gosim.StateError, match="evaluated nothing"):
        gosim.bench.evaluate(lambda graph, cluster, evaluate: None, budget=2, seeds=1, suite=SUITE,
                             graphs=["dlrm"], progress=False)


def test_an_agent_may_choose_data_parallelism(tmp_path):
    # A decision is a placement or N DDP replicas, evaluated or returned.
    def ddp_or_one(graph, cluster, evaluate, seed):
        one = evaluate(np.zeros(graph.num_nodes, np.int32))
        return {"data_parallel": cluster.num_devices} if seed == 1 else one and None

    rows = gosim.bench.evaluate(ddp_or_one, budget=3, seeds=2, suite=SUITE, graphs=["dlrm"],
                                output=str(tmp_path / "dp"), progress=False)
    sim = gosim.Simulator(gosim.load_suite(SUITE).graph("dlrm"), "h100x8_nvswitch")
    assert rows[0]["evaluations"] == 1 and rows[1]["evaluations"] == 2
    assert rows[1]["step_time"] == min(sim.evaluate(data_parallel=8).step_time_s, rows[0]["step_time"])
