# Shared fixtures of the Python tests (run from the repository root by CTest:
# python3 -m pytest tests/python, PYTHONPATH=build/python).
import os
import pathlib

import numpy as np
import pytest

import gosim

ROOT = pathlib.Path(__file__).resolve().parents[2]
# A REGAL-style random graph of 60 nodes: small, fast, with real branching.
SMALL_GRAPH = "gen:regal_random:nodes=60,seed=3"
CLUSTER = "p100x4_pcie"


def gosim_program():
    return os.environ.get("GOSIM_PROGRAM", str(ROOT / "build" / "bin" / "gosim"))


@pytest.fixture(scope="session")
def graph():
    return gosim.load_graph(SMALL_GRAPH)


@pytest.fixture(scope="session")
def cluster():
    return gosim.load_cluster(CLUSTER)


@pytest.fixture(scope="session")
def simulator(graph, cluster):
    return gosim.Simulator(graph, cluster)


@pytest.fixture()
def small_memory_cluster(tmp_path):
    """Two GPUs with 16 MiB each: the small graph's 18.9 MiB of weights do not fit on one."""
    path = tmp_path / "tiny_gpus.yaml"
    path.write_text("""name: tiny_gpus
devices:
  - name: gpu
    count: 2
    kind: V100
    peak_flops_fp32: 14 TFLOP/s
    memory_bandwidth: 900 GB/s
    memory_capacity: 16 MiB
    launch_overhead: 5 us
links:
  - src: [gpu0, gpu1]
    dst: [gpu0, gpu1]
    bandwidth: 10 GB/s
    latency: 5 us
""")
    return gosim.load_cluster(str(path))


def random_placements(rng, n, nodes, devices):
    return rng.integers(0, devices, size=(n, nodes)).astype(np.int32)
