# The gosim module: graphs and clusters round-trip, the simulator agrees
# with the command line exactly, errors arrive as gosim exceptions with one
# line, agents and experiments run from Python.
import json
import subprocess
import sys

import numpy as np
import pytest

import gosim
from conftest import CLUSTER, ROOT, SMALL_GRAPH, gosim_program, random_placements


def test_graph_arrays_match_nodes_and_edges(graph):
    assert graph.num_nodes == 60 == len(graph.node_names)
    stats = graph.stats()
    assert stats["nodes"] == graph.num_nodes and stats["edges"] == graph.num_edges
    assert graph.flops.sum() == pytest.approx(stats["flops"], rel=1e-12)
    assert graph.persistent_bytes.sum() == stats["persistent_bytes"]
    src, dst = np.asarray(graph.edge_src), np.asarray(graph.edge_dst)
    assert src.shape == (graph.num_edges,) and np.all(src < dst)  # ids are a topological order
    # Edge arrays are read-only views into the graph's own edge array.
    assert not graph.edge_src.flags.writeable
    assert np.may_share_memory(graph.edge_src, graph.edge_dst)
    in_off, in_ids = graph.in_csr()
    out_off, out_ids = graph.out_csr()
    assert in_off[-1] == out_off[-1] == graph.num_edges
    assert sorted(in_ids) == sorted(out_ids) == list(range(graph.num_edges))
    for v in range(graph.num_nodes):
        assert np.all(dst[in_ids[in_off[v]:in_off[v + 1]]] == v)
        assert np.all(src[out_ids[out_off[v]:out_off[v + 1]]] == v)
        node = graph.node(v)
        assert sorted(node["inputs"]) == sorted(src[in_ids[in_off[v]:in_off[v + 1]]].tolist())
        assert graph.find_node(node["name"]) == v


def test_edge_view_keeps_graph_alive():
    view = gosim.load_graph(SMALL_GRAPH).edge_bytes  # the graph object is dropped here
    again = gosim.load_graph(SMALL_GRAPH).edge_bytes
    assert np.array_equal(view, again)


def test_graph_json_round_trip(graph, tmp_path):
    copy = gosim.graph_from_json(graph.to_json())
    for field in ("flops", "bytes_read", "bytes_written", "persistent_bytes", "output_bytes", "op"):
        assert np.array_equal(getattr(copy, field), getattr(graph, field)), field
    assert np.array_equal(copy.edge_src, graph.edge_src) and np.array_equal(copy.edge_bytes, graph.edge_bytes)
    assert copy.node_names == graph.node_names
    path = tmp_path / "g.json.gz"
    graph.save(str(path))
    loaded = gosim.load_graph(str(path))
    assert loaded.stats() == {**graph.stats(), "name": loaded.name}


def test_generate_and_suite():
    g = gosim.generate("regal_random", {"nodes": 60, "seed": 3})
    assert np.array_equal(g.flops, gosim.load_graph(SMALL_GRAPH).flops)
    assert "resnet" in dict(gosim.generators())
    suite = gosim.load_suite(str(ROOT / "configs/suites/quickstart.yaml"))
    assert "resnet50_b8" in suite.names_of("valid")
    assert suite.graph("wavenet_small").num_nodes > 0


def test_cluster(cluster):
    assert cluster.num_devices == 4
    assert cluster.device_names == [d["name"] for d in cluster.devices]
    assert all(d["memory_capacity"] > 0 for d in cluster.devices)


def _cli_simulate(tmp_path, simulator, devices, name):
    decision = tmp_path / f"{name}.json"
    simulator.save_decision(str(decision), devices)
    out = subprocess.run([gosim_program(), "simulate", "--graph", SMALL_GRAPH, "--cluster", CLUSTER,
                          "--decision", str(decision), "--json"],
                         check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout)


def test_results_identical_to_the_command_line(simulator, tmp_path):
    rng = np.random.default_rng(7)
    placements = [np.zeros(simulator.num_nodes, np.int32)] + list(
        random_placements(rng, 3, simulator.num_nodes, simulator.num_devices))
    for i, devices in enumerate(placements):
        cli = _cli_simulate(tmp_path, simulator, devices, f"d{i}")
        ours = simulator.evaluate(devices)
        assert ours.feasible == cli["feasible"]
        assert ours.step_time_s == cli["step_time"]  # exactly: same engine, same double
        assert ours.peak_memory_bytes.tolist() == [d["peak_memory"] for d in cli["devices"]]
        assert simulator.simulate(devices) == cli  # the whole result, field by field
    # A decision file written by the CLI reads back to the same arrays.
    back = simulator.load_decision(str(tmp_path / "d3.json"))
    assert np.array_equal(back["devices"], placements[3]) and back["priority"] is None


def test_evaluate_batch_equals_single_evaluations(simulator):
    rng = np.random.default_rng(11)
    batch = random_placements(rng, 24, simulator.num_nodes, simulator.num_devices)
    result = simulator.evaluate_batch(batch)  # a 2-D array: one decision per row
    assert len(result) == 24 and result.peak_memory_bytes.shape == (24, simulator.num_devices)
    as_list = simulator.evaluate_batch(list(batch))
    assert np.array_equal(as_list.step_time_s, result.step_time_s)
    priorities = [rng.random(simulator.num_nodes) if i % 2 else None for i in range(len(batch))]
    with_priority = simulator.evaluate_batch(batch, priorities=priorities)
    for i, devices in enumerate(batch):
        assert with_priority.step_time_s[i] == simulator.evaluate(devices, priority=priorities[i]).step_time_s
    with pytest.raises(gosim.DecisionError, match="fewer priorities"):
        simulator.evaluate_batch(batch, priorities=priorities[:-1])
    for i, devices in enumerate(batch):
        single = simulator.evaluate(devices)
        assert result.step_time_s[i] == single.step_time_s
        assert bool(result.feasible[i]) == single.feasible
        assert np.array_equal(result.peak_memory_bytes[i], single.peak_memory_bytes)


def test_priorities_change_the_schedule_and_match_simulate(simulator):
    rng = np.random.default_rng(5)
    devices = random_placements(rng, 1, simulator.num_nodes, simulator.num_devices)[0]
    times = set()
    for _ in range(6):
        priority = rng.random(simulator.num_nodes)
        r = simulator.evaluate(devices, priority=priority)
        assert r.step_time_s == simulator.simulate(devices, priority=priority)["step_time"]
        times.add(r.step_time_s)
    assert len(times) > 1


def test_infeasible_decision_reports_oom(graph, small_memory_cluster):
    sim = gosim.Simulator(graph, small_memory_cluster)
    r = sim.evaluate(np.zeros(graph.num_nodes, np.int32))
    assert not r.feasible and r.oom_device == 0 and r.step_time_s == 100.0  # HRL's constant
    assert r.peak_memory_bytes[0] > 0
    assert sim.simulate(np.zeros(graph.num_nodes, np.int32))["oom"]["device"] == "gpu0"


def test_auto_cost_model_is_accepted(graph, cluster):
    assert gosim.Simulator(graph, cluster, cost_model="auto").cost_model in gosim.cost_models()


def test_cost_model_options_reach_the_model():
    # The exported ResNet-50's SGD update on one H200: shares of multi-tensor
    # calls by default, one kernel per op with multi_tensor_updates off.
    graph = gosim.load_graph(str(ROOT / "graphs/data/resnet50_train_b32.json.gz"))
    cluster = gosim.load_cluster("h200x8_nvswitch:gpus=1")
    one_gpu = np.zeros(graph.num_nodes, np.int32)
    shared = gosim.Simulator(graph, cluster).evaluate(one_gpu).step_time_s
    per_node = gosim.Simulator(graph, cluster, cost_model_options={"multi_tensor_updates": False})
    assert per_node.evaluate(one_gpu).step_time_s > shared + 1e-3
    with pytest.raises(gosim.ConfigError, match="multi_tensor_updates"):
        gosim.Simulator(graph, cluster, cost_model_options={"multi_tensor_update": False})


@pytest.mark.parametrize("call, kind, words", [
    (lambda: gosim.load_graph("no/such/graph.json"), gosim.Error, "no/such/graph.json"),
    (lambda: gosim.load_graph("gen:no_such_generator"), gosim.ConfigError, "no_such_generator"),
    (lambda: gosim.load_cluster("no_such_cluster"), gosim.Error, "no_such_cluster"),
    (lambda: gosim.graph_from_json('{"format": "gosim.graph"'), gosim.GraphError, "<json>"),
])
def test_bad_input_raises_one_line(call, kind, words):
    with pytest.raises(kind) as info:
        call()
    message = str(info.value)
    assert words in message and "\n" not in message
    assert isinstance(info.value, gosim.Error)


def test_bad_decisions_raise_decision_error(simulator):
    n, d = simulator.num_nodes, simulator.num_devices
    for bad in (np.zeros(n - 1, np.int32), np.full(n, d, np.int32), np.zeros(n, np.float64),
                np.zeros((n, 2), np.int32)):
        with pytest.raises(gosim.DecisionError) as info:
            simulator.evaluate(bad)
        assert "\n" not in str(info.value)
    with pytest.raises(gosim.DecisionError):
        simulator.evaluate(np.zeros(n, np.int32), priority=np.full(n, np.nan))
    with pytest.raises(gosim.ConfigError, match="roofline"):
        gosim.Simulator(simulator.graph, simulator.cluster, cost_model="no_such_model")
    with pytest.raises(gosim.ConfigError, match="stop_at_om"):
        gosim.Simulator(simulator.graph, simulator.cluster, options={"stop_at_om": True})


def test_optimize_brkga(simulator):
    single = simulator.evaluate(np.zeros(simulator.num_nodes, np.int32)).step_time_s
    r = gosim.optimize(None, None, "brkga", budget=400, seed=1, simulator=simulator)
    assert r.feasible and r.step_time_s < single
    assert 0 < r.evaluations <= 400
    assert r.priority is not None and r.priority.shape == (simulator.num_nodes,)  # REGAL's chromosome
    assert simulator.evaluate(**r.decision()).step_time_s == r.step_time_s
    best = r.curve["best_objective"]
    assert len(best) > 1 and np.all(np.diff(best) <= 0)
    again = gosim.optimize(SMALL_GRAPH, CLUSTER, "brkga", budget=400, seed=1)
    assert np.array_equal(again.devices, r.devices)  # same seed, same decision


def test_optimize_bad_agent_and_options(simulator):
    with pytest.raises(gosim.ConfigError) as info:
        gosim.optimize(None, None, "brkgaa", simulator=simulator)
    assert "brkga" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(gosim.ConfigError, match="populaton"):
        gosim.optimize(None, None, "brkga", budget=10, options={"populaton": 8}, simulator=simulator)


def test_learned_agent_through_the_registry(simulator):
    # Learned agents (go, regal, hrl) load LibTorch as a plugin on first use;
    # GO in the paper's setting (a fresh network; the agent's default is the
    # committed pre-trained one, placement only) decides placement,
    # priorities and fusion, and the whole decision re-simulates to the
    # reported step time.
    r = gosim.optimize(None, None, "go", budget=20, seed=0, simulator=simulator,
                       options={"preset": "paper", "torch_threads": 0})
    assert r.devices.shape == (simulator.num_nodes,)
    again = simulator.evaluate(r.devices, priority=r.priority, fusion=r.fusion,
                               transfer_priority=r.transfer_priority)
    assert again.feasible and again.step_time_s == r.step_time_s


def test_run_experiment_and_read_results(tmp_path):
    exp = tmp_path / "tiny.yaml"
    exp.write_text(f"""name: tiny
graphs:
  - name: g
    generator: regal_random
    params: {{nodes: 40, seed: 2}}
clusters: [{CLUSTER}]
budget: {{evaluations: 60}}
agents:
  - name: single_device
  - name: random_search
output: {tmp_path / 'run'}
""")
    first = gosim.run_experiment(str(exp), only=["random_search"])  # one agent's cells now
    assert first["ran"] == 1 and first["held_back"] == 1
    with pytest.raises(gosim.ConfigError, match="Did you mean 'single_device'"):
        gosim.run_experiment(str(exp), only=["single_devce"])
    report = gosim.run_experiment(str(exp))  # the rest of the same grid
    assert report["ran"] == 1 and report["already_finished"] == 1 and not report["failed"]
    rows = gosim.read_results(report["folder"])
    assert sorted(r["agent"] for r in rows) == ["random_search", "single_device"]
    again = gosim.run_experiment(str(exp))  # resumes: nothing left to run
    assert again["ran"] == 0 and again["already_finished"] == 2
    with pytest.raises(gosim.IoError):
        gosim.read_results(str(tmp_path / "nowhere"))


def test_timeline_and_trace(simulator, tmp_path):
    devices = np.arange(simulator.num_nodes, dtype=np.int32) % simulator.num_devices
    trace = tmp_path / "trace.json"
    full = simulator.simulate(devices, timeline=True, trace=str(trace))
    ops = full["timeline"]["ops"]
    assert len(ops) == full["kernels"] == simulator.num_nodes
    assert max(op["end"] for op in ops) == pytest.approx(full["step_time"], rel=1e-12)
    assert "traceEvents" in json.loads(trace.read_text())
    assert "timeline" not in simulator.simulate(devices)


def test_fusion_groups(graph, simulator):
    # Fuse each node with its only successor when that successor has no other input.
    src, dst = np.asarray(graph.edge_src), np.asarray(graph.edge_dst)
    in_off, _ = graph.in_csr()
    out_off, out_ids = graph.out_csr()
    fusion = np.full(graph.num_nodes, -1, np.int32)
    for v in range(graph.num_nodes):
        succ = set(dst[out_ids[out_off[v]:out_off[v + 1]]].tolist())
        if len(succ) == 1:
            w = succ.pop()
            if in_off[w + 1] - in_off[w] == 1 and fusion[v] < 0 and fusion[w] < 0:
                fusion[v] = fusion[w] = v
    assert (fusion >= 0).sum() >= 2
    devices = np.zeros(graph.num_nodes, np.int32)
    fused = simulator.evaluate(devices, fusion=fusion)
    assert fused.step_time_s == simulator.simulate(devices, fusion=fusion)["step_time"]
    assert simulator.simulate(devices, fusion=fusion)["kernels"] == graph.num_nodes - (fusion >= 0).sum() // 2
    bad = fusion.copy()
    bad[0] = 10**6
    with pytest.raises(gosim.DecisionError):
        simulator.evaluate(devices, fusion=bad)


def test_import_does_not_load_libtorch():
    code = ("import gosim, sys; maps = open('/proc/self/maps').read(); "
            "sys.exit(1 if 'libtorch' in maps or 'torch' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
