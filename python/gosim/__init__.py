"""gosim from Python: graphs, clusters, the simulator, agents and experiments.

The C++ libraries run in-process (the extension module gosim._core); nothing
here loads LibTorch. Installed with `pip install .` (docs/PYTHON.md), or
after `make build`:

    export PYTHONPATH=$PWD/build/python
    python3 -c "import gosim; print(gosim.load_graph('gen:resnet:depth=18').num_nodes)"

Errors from C++ arrive as gosim.Error subclasses (ConfigError, GraphError,
TraceError, DecisionError, IoError, StateError) with the command line's
one-line message. See docs/PYTHON.md.

Without the compiled module (e.g. a checkout that was never built) the
package still imports: gosim.torch.export_json() works, and every name that
needs gosim._core raises an ImportError that says why it is missing.
"""

import json as _json
import os as _os

from ._errors import (  # noqa: F401
    ConfigError, DecisionError, Error, ExportError, ExportWarning, GraphError, IoError, StateError, TraceError)
from ._program import data_home, program_path  # noqa: F401

# An installed package carries the presets, profiles, suites and checkpoints
# in gosim/data (pip install .); the C++ side finds them through GOSIM_HOME
# (core/data_path.h) unless the user names another home.
if data_home() is not None and not _os.environ.get("GOSIM_HOME"):
    _os.environ["GOSIM_HOME"] = data_home()

_CORE_NAMES = (
    "BatchEvaluation", "Cluster", "Evaluation", "Graph", "OptimizeResult", "Simulator", "Suite", "agents",
    "cost_models", "generate", "generators", "graph_from_json", "load_cluster", "load_graph", "load_suite",
    "run_experiment", "set_num_threads")
try:
    from . import _core
except ImportError as _error:  # not built, or built for another Python
    _core = None
    import glob as _glob
    _built = _glob.glob(_os.path.join(_os.path.dirname(__file__), "_core*"))
    _CORE_IMPORT_ERROR = (f"{type(_error).__name__}: {_error}" if _built else
                          f"there is none in {_os.path.dirname(__file__)}")
else:
    from ._core import (  # noqa: F401
        BatchEvaluation, Cluster, Evaluation, Graph, OptimizeResult, Simulator, Suite, agents, cost_models,
        generate, generators, graph_from_json, load_cluster, load_graph, load_suite, run_experiment,
        set_num_threads)
    from . import env  # noqa: F401  (gosim.env.PlacementEnv without a second import)

__all__ = [
    "BatchEvaluation", "Cluster", "ConfigError", "DecisionError", "Error", "Evaluation", "ExportError",
    "ExportWarning", "Graph", "GraphError", "IoError", "OptimizeResult", "Simulator", "StateError", "Suite",
    "TraceError", "agents", "bench", "cost_models", "data_home", "env", "generate", "generators", "graph_from_json",
    "load_cluster", "load_graph", "load_suite", "optimize", "program_path", "read_results", "run_experiment",
    "set_num_threads"]


def optimize(graph, cluster, agent, budget=0, options=None, *, seed=0, objective="step_time",
             wall_seconds=0.0, cost_model="auto", cost_model_options=None, sim_options=None,
             simulator=None):
    """Runs registered agent `agent` on (graph, cluster), as `gosim optimize`.

    graph, cluster: gosim.Graph / gosim.Cluster objects, or what load_graph /
    load_cluster accept (a path, gen:NAME..., a preset name).
    budget: simulator evaluations (0 = the agent's default); wall_seconds:
    a wall-clock limit (0 = none). options: the agent's options as a dict
    (the keys of its YAML in configs/agents/). objective: "step_time",
    "peak_memory", "weighted", "max_load" (msr-fiddle's max-load; the simulator
    then computes it), "throughput" (seconds per micro-batch: give
    sim_options={"micro_batches": M}) or {"kind": "weighted", "memory_weight": ...}.
    simulator: a gosim.Simulator to use instead of building one (its graph
    and cluster win). Returns a gosim.OptimizeResult. The GIL is released
    while the agent runs.
    """
    _need_core("optimize")
    if simulator is None:
        if objective == "max_load":
            sim_options = {**(sim_options or {}), "max_load": True}
        simulator = Simulator(graph, cluster, cost_model=cost_model, cost_model_options=cost_model_options,
                              options=sim_options)
    return _core._optimize(simulator, agent, int(budget), float(wall_seconds), options, int(seed), objective)


def read_results(folder):
    """The finished cells of a run folder: results.jsonl as a list of dicts."""
    path = _os.path.join(_os.fspath(folder), "results.jsonl")
    try:
        with open(path, encoding="utf-8") as f:
            return [_json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        raise IoError(f"{path}: no such file (run the experiment first: gosim.run_experiment)") from None


def _need_core(name):
    if _core is None:
        raise ImportError(
            f"gosim.{name} needs gosim's compiled module gosim._core, which did not import ({_CORE_IMPORT_ERROR}); "
            "build it (make build, then PYTHONPATH=build/python) or install gosim (pip install .; docs/PYTHON.md)")


def __getattr__(name):
    # gosim.torch imports PyTorch, so it is loaded on first use only.
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    if name == "bench":
        _need_core(name)
        import importlib
        return importlib.import_module(".bench", __name__)
    if name in _CORE_NAMES or name == "env":
        _need_core(name)
    raise AttributeError(f"module 'gosim' has no attribute {name!r}")
