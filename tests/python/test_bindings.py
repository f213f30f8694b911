# The gosim module: graphs and clusters round-trip, the simulator agrees
# with the command line exactly, errors arrive as gosim exceptions with one
# line, agents and experiments run from Python.
import json
import os
import re
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


def test_simulator_takes_names_and_paths(simulator, graph, tmp_path):
    devices = np.arange(simulator.num_nodes, dtype=np.int32) % simulator.num_devices
    expected = simulator.evaluate(devices).step_time_s
    assert gosim.Simulator(SMALL_GRAPH, CLUSTER).evaluate(devices).step_time_s == expected
    graph.save(str(tmp_path / "g.json"))
    cluster_file = ROOT / "configs/clusters/p100x4_pcie.yaml"
    by_path = gosim.Simulator(tmp_path / "g.json", cluster_file)  # pathlib.Path works too
    assert by_path.evaluate(devices).step_time_s == expected
    assert gosim.load_graph(tmp_path / "g.json").num_nodes == graph.num_nodes
    with pytest.raises(gosim.ConfigError,
                       match=r"^graph must be a gosim.Graph, a graph file or gen:NAME\[:k=v,\.\.\.\], not int$"):
        gosim.Simulator(3, CLUSTER)
    with pytest.raises(gosim.ConfigError, match=r"^cluster must be a gosim.Cluster, a preset name or a cluster YAML "
                                                r"file, not NoneType$"):
        gosim.Simulator(graph, None)


@pytest.mark.parametrize("graph_file, cluster", [
    ("graphs/data/resnet50_train_b32.json.gz", "h100x8_nvswitch:gpus=2"),
    (SMALL_GRAPH, CLUSTER),
])
def test_cost_model_used_is_the_command_lines(graph_file, cluster, tmp_path):
    sim = gosim.Simulator(graph_file, cluster)
    out = subprocess.run([gosim_program(), "simulate", "--graph", graph_file, "--cluster", cluster,
                          "--trace", str(tmp_path / "cli.json")], check=True, capture_output=True, text=True,
                         cwd=ROOT).stdout
    printed = re.search(r"; cost model (.*); decision ", out.splitlines()[0]).group(1)
    assert sim.cost_model == "auto" and sim.cost_model_used == printed
    assert printed.startswith("auto (") and (
        "calibrated (configs/calibrated/h100.yaml)" in printed if "h100" in cluster
        else "P100: measured for 60 of 60 nodes, else roofline" in printed)
    devices = np.zeros(sim.num_nodes, np.int32)
    result = sim.simulate(devices, trace=str(tmp_path / "py.json"))
    assert result["cost_model"] == printed
    for trace in ("cli.json", "py.json"):
        assert json.loads((tmp_path / trace).read_text())["otherData"]["cost_model"] == printed
    cli_json = json.loads(subprocess.run([gosim_program(), "simulate", "--graph", graph_file, "--cluster", cluster,
                                          "--json"], check=True, capture_output=True, text=True, cwd=ROOT).stdout)
    assert cli_json["cost_model"] == printed and cli_json == result
    best = gosim.optimize(None, None, "single_device", simulator=sim)
    assert best.cost_model == printed
    roofline = gosim.Simulator(graph_file, cluster, cost_model="roofline")
    assert roofline.cost_model == roofline.cost_model_used == "roofline"


def test_save_decision_keeps_priorities_and_fusion(simulator, tmp_path):
    r = gosim.optimize(None, None, "brkga", budget=200, seed=3, simulator=simulator)
    assert r.priority is not None
    simulator.save_decision(str(tmp_path / "from_result.json"), r)
    r.save(str(tmp_path / "saved.json"))
    simulator.save_decision(str(tmp_path / "from_dict.json"), r.decision())
    texts = {(tmp_path / name).read_text() for name in ("from_result.json", "saved.json", "from_dict.json")}
    assert len(texts) == 1  # the same file three ways
    back = simulator.load_decision(str(tmp_path / "saved.json"))
    assert np.array_equal(back["devices"], r.devices) and np.array_equal(back["priority"], r.priority)
    if r.transfer_priority is not None:
        assert np.array_equal(back["transfer_priority"], r.transfer_priority)
    assert simulator.evaluate(**back).step_time_s == r.step_time_s
    cli = _cli_simulate_file(tmp_path / "saved.json")
    assert cli["step_time"] == r.step_time_s  # the command line re-simulates the same step
    # Fusion groups are kept too, and a load_decision() dict saves back whole.
    fusion = np.full(simulator.num_nodes, -1, np.int32)
    fusion[[simulator.graph.edge_src[0], simulator.graph.edge_dst[0]]] = 0  # two nodes joined by an edge
    simulator.save_decision(str(tmp_path / "fused.json"), r.devices * 0, fusion=fusion)
    again = simulator.load_decision(str(tmp_path / "fused.json"))
    assert np.array_equal(again["fusion"], fusion) and again["priority"] is None
    simulator.save_decision(str(tmp_path / "fused2.json"), again)
    assert (tmp_path / "fused2.json").read_text() == (tmp_path / "fused.json").read_text()
    with pytest.raises(gosim.DecisionError, match="not both"):
        simulator.save_decision(str(tmp_path / "x.json"), r, priority=r.priority)
    with pytest.raises(gosim.DecisionError, match="unknown decision part 'placement'"):
        simulator.save_decision(str(tmp_path / "x.json"), {"placement": r.devices})


def _cli_simulate_file(decision):
    out = subprocess.run([gosim_program(), "simulate", "--graph", SMALL_GRAPH, "--cluster", CLUSTER, "--decision",
                          str(decision), "--json"], check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout)


def test_errors_name_the_python_parameter(graph, cluster):
    cases = [
        (lambda: gosim.load_graph("no_such_graph.json"), "graph: no graph file 'no_such_graph.json' (give a graph"),
        (lambda: gosim.Simulator("no_such_graph.json", cluster), "graph: no graph file 'no_such_graph.json'"),
        (lambda: gosim.load_cluster("no_such_preset"), "cluster: "),
        (lambda: gosim.Simulator(graph, cluster, cost_model="rooflin"),
         "cost_model: unknown cost model 'rooflin'. Did you mean 'roofline'? (valid values are: auto, "),
        (lambda: gosim.Simulator(graph, cluster, cost_model="calibrated", cost_model_options={"profil": "x"}),
         "cost_model_options"),
    ]
    for call, start in cases:
        with pytest.raises(gosim.ConfigError) as info:
            call()
        assert str(info.value).startswith(start), str(info.value)
        assert not str(info.value).startswith("--")


def test_agent_names_include_the_plugins_in_a_fresh_process():
    code = (f"import gosim\ntry:\n    gosim.optimize({SMALL_GRAPH!r}, {CLUSTER!r}, 'regall')\n"
            "except gosim.ConfigError as e:\n    print(e)\n"
            "print('libtorch' in open('/proc/self/maps').read())\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    message, loaded = out.splitlines()
    assert "unknown agent 'regall'. Did you mean 'regal'?" in message
    valid = message.split("valid values are: ")[1].rstrip(")").split(", ")
    assert {"go", "regal", "hrl", "colocrl", "brkga", "single_device"} <= set(valid)
    assert loaded == "False"  # listed without loading LibTorch


def test_error_types_are_the_packages():
    assert issubclass(gosim.IoError, OSError) and issubclass(gosim.IoError, gosim.Error)
    assert issubclass(gosim.ExportError, gosim.Error) and issubclass(gosim.ExportWarning, UserWarning)
    assert gosim.ConfigError is gosim._core.ConfigError and gosim.ConfigError.__module__ == "gosim"
    with pytest.raises(gosim.IoError) as info:
        gosim.load_graph(SMALL_GRAPH).save("/dev/null/g.json")  # a folder that cannot exist
    assert isinstance(info.value, OSError)


def test_program_from_python():
    assert os.path.samefile(gosim.program_path(), gosim_program())
    assert gosim.data_home() is None  # a build tree: the program finds the source tree itself
    out = subprocess.run([sys.executable, "-m", "gosim", "--version"], check=True, capture_output=True, text=True)
    assert out.stdout.startswith("gosim ")


def test_msr_problem_from_python(tmp_path):
    """msr-fiddle's problem file, its machine ("from-graph"), max-load and a pipeline, from Python."""
    problem = {"maxSizePerFPGA": 1e9, "maxFPGAs": 2, "maxCPUs": 0,
               "nodes": [{"id": i, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": float(i),
                          "isBackwardNode": 0, "size": 0} for i in (1, 2)],
               "edges": [{"sourceId": 1, "destId": 2, "cost": 0.5}]}
    path = tmp_path / "two.json"
    path.write_text(json.dumps(problem))
    sim = gosim.Simulator(str(path), "from-graph", options={"max_load": True, "micro_batches": 4,
                                                             "schedule": "streaming"})
    assert sim.num_devices == 2
    result = sim.simulate(np.array([0, 1], np.int32))
    # acc0: 1 ms + 0.5 up; acc1: 2 ms + 0.5 down: 2.5 ms per sample.
    assert abs(result["max_load_s"] - 2.5e-3) < 1e-9
    assert result["micro_batches"] == 4
    best = gosim.optimize(str(path), "from-graph", "local_search", budget=50, objective="max_load")
    assert best.feasible
    with pytest.raises(Exception, match="from-graph"):
        gosim.Simulator("gen:regal_random:nodes=20,seed=1", "from-graph")


def test_data_parallel_from_python_matches_the_command_line(tmp_path):
    # A training graph with measured times (the calibrated H100 profile):
    # data_parallel=N is the decision a file with "data_parallel": N holds
    # (`gosim simulate --decision`: per graph batch), whose DDP step is the
    # step of `gosim simulate --data-parallel N` (the DDP graph itself).
    graph_file = ROOT / "calibration" / "data" / "gpu" / "graphs" / "alexnet.gosimgraph.gz"
    sim = gosim.Simulator(str(graph_file), "h100x8_nvswitch", "auto")
    dp = sim.evaluate(data_parallel=4)
    one = sim.evaluate(np.zeros(sim.num_nodes, np.int32))
    assert dp.feasible and 0 < dp.step_time_s < one.step_time_s
    path = str(tmp_path / "dp.json")
    sim.save_decision(path, {"data_parallel": 4})
    assert sim.load_decision(path) == {"data_parallel": 4}
    assert sim.evaluate(**sim.load_decision(path)).step_time_s == dp.step_time_s

    def cli(*extra):
        return json.loads(subprocess.run(
            [gosim_program(), "simulate", "--graph", str(graph_file), "--cluster", "h100x8_nvswitch",
             "--cost-model", "auto", "--json", *extra], check=True, capture_output=True, text=True).stdout)
    ours = sim.simulate(data_parallel=4)
    assert ours == cli("--decision", path)  # the whole result, field by field
    assert ours["step_time"] == dp.step_time_s
    assert ours["ddp_step_time_s"] == cli("--data-parallel", "4")["step_time"]
    with pytest.raises(gosim.DecisionError, match="give no devices"):
        sim.evaluate(np.zeros(sim.num_nodes, np.int32), data_parallel=4)
    with pytest.raises(gosim.DecisionError, match="has 8 devices"):
        sim.evaluate(data_parallel=9)
    with pytest.raises(gosim.DecisionError, match="is negative"):
        sim.evaluate(data_parallel=-2)
    with pytest.raises(gosim.DecisionError, match="give devices"):
        sim.evaluate()
    with pytest.raises(gosim.DecisionError, match="no timeline"):
        sim.simulate(data_parallel=4, timeline=True)


def test_data_parallel_agent_result_keeps_its_decision(tmp_path):
    # OptimizeResult.decision() of the data_parallel agent is the DDP decision
    # (not the all-zero placement underneath it), so re-evaluating it and
    # saving it give the agent's step.
    graph_file = ROOT / "calibration" / "data" / "gpu" / "graphs" / "alexnet.gosimgraph.gz"
    best = gosim.optimize(str(graph_file), "h100x8_nvswitch", "data_parallel", budget=1)
    assert best.data_parallel == 8 and best.devices is None
    assert best.decision() == {"data_parallel": 8}
    sim = gosim.Simulator(str(graph_file), "h100x8_nvswitch", "auto")
    assert sim.evaluate(**best.decision()).step_time_s == best.step_time_s
    sim.save_decision(str(tmp_path / "best.json"), best)
    assert sim.load_decision(str(tmp_path / "best.json")) == {"data_parallel": 8}
