#!/usr/bin/env python3
"""`pip install .` into a fresh virtual environment, offline, then gosim from outside the repository.

    python3 tests/python/pip_install_check.py BUILD_DIR

The CTest test python_install. Creates a venv with --system-site-packages
(Debian's NumPy and PyTorch), installs this checkout with
`pip install --no-build-isolation --no-index .` reusing BUILD_DIR (so nothing
is compiled after `make build`), and from an empty folder outside the
repository, with no PYTHONPATH or GOSIM_HOME: runs the README's Python tour,
checks where the package, its program and its data come from, runs the
`gosim` and `gosim-export` console scripts, and exports a small GPT with
AdamW and TF32 and simulates it on the H100 preset. Prints the time of each
step; exit status 0 when all pass. The venv is deleted afterwards.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GPT_SCRIPT = r"""
import os, sys, time
import torch
import gosim, gosim.torch
sys.path.insert(0, sys.argv[1])
from torch2_export_check import GPT, gpt_loss
torch.manual_seed(0)
model = GPT(vocab=1024, d=128, heads=4, layers=2, seq=64)
adamw = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
ids = torch.randint(0, 1024, (4, 64))
start = time.time()
graph = gosim.torch.export(model, ids, loss_fn=gpt_loss(1024), targets=torch.randint(0, 1024, (4, 64)),
                           optimizer=adamw, tf32=True, progress=False, name="gpt")
exported = time.time() - start
sim = gosim.Simulator(graph, "h100x8_nvswitch")
r = sim.evaluate([0] * graph.num_nodes)
print(graph.num_nodes, r.feasible, r.step_time_s, round(exported, 2))
print(sim.cost_model_used)
"""


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "GOSIM_HOME", "GOSIM_PROGRAM", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def run(args, cwd, env, what):
    start = time.time()
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    seconds = time.time() - start
    if out.returncode != 0:
        sys.stdout.write(out.stdout[-4000:])
        sys.stderr.write(out.stderr[-4000:])
        raise SystemExit(f"FAIL {what}: exit status {out.returncode}")
    print(f"ok {what} ({seconds:.1f} s)", flush=True)
    return out


def expect(condition, message):
    if not condition:
        raise SystemExit(f"FAIL {message}")


def readme_tour():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = text[text.index("### Python"):text.index("### Folders")]
    (block,) = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    return block


def main(argv):
    if len(argv) != 1:
        raise SystemExit(__doc__.split("\n\n")[1])
    build_dir = os.path.abspath(argv[0])
    tmp = tempfile.mkdtemp(prefix="gosim-pip-")
    try:
        venv, work = os.path.join(tmp, "venv"), os.path.join(tmp, "work")
        os.makedirs(work)
        python = os.path.join(venv, "bin", "python")
        run([sys.executable, "-m", "venv", "--system-site-packages", venv], tmp, clean_env(), "venv")
        run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-cache-dir",
             "--disable-pip-version-check", "-q", ROOT], tmp,
            clean_env(GOSIM_BUILD_DIR=build_dir, GOSIM_BUILD_JOBS="1"), "pip install --no-build-isolation .")

        # Where everything comes from: the venv, not the checkout.
        where = run([python, "-c", "import gosim, os, json; print(json.dumps({'package': gosim.__file__, "
                     "'home': os.environ.get('GOSIM_HOME'), 'program': gosim.program_path(), "
                     "'core': gosim._core.__file__}))"], work, clean_env(), "import gosim")
        paths = json.loads(where.stdout)
        site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"], work, clean_env(),
                   "site-packages").stdout.strip()
        package = os.path.join(site, "gosim")
        expect(paths["package"] == os.path.join(package, "__init__.py"), f"package from {paths['package']}")
        expect(paths["core"].startswith(package + os.sep) and paths["core"].endswith(
            sysconfig.get_config_var("EXT_SUFFIX")), f"_core from {paths['core']}")
        expect(paths["home"] == os.path.join(package, "data"), f"GOSIM_HOME {paths['home']}")
        expect(paths["program"] == os.path.join(package, "bin", "gosim"), f"program {paths['program']}")
        for data in ("configs/clusters/p100x4_pcie.yaml", "configs/calibrated/h100.yaml", "configs/checkpoints/go.pt",
                     "configs/suites/quickstart.yaml", "graphs/data/resnet50_train_b32.json.gz"):
            expect(os.path.isfile(os.path.join(package, "data", data)), f"installed data {data}")
        expect(os.path.isfile(os.path.join(package, "lib", "libgosim_torch_plugin.so")), "the LibTorch plugin")

        # The README's tour, from a folder outside the repository.
        with open(os.path.join(work, "tour.py"), "w", encoding="utf-8") as f:
            f.write(readme_tour())
        tour = run([python, "tour.py"], work, clean_env(), "README tour")
        lines = tour.stdout.splitlines()
        expect(lines[0] == "auto (P100: roofline)" and len(lines) == 4, f"tour output {lines}")
        expect(os.path.isfile(os.path.join(work, "best.json")), "the tour's best.json")

        # The console scripts.
        gosim = os.path.join(venv, "bin", "gosim")
        version = run([gosim, "--version"], work, clean_env(), "gosim --version").stdout
        expect(version.startswith("gosim "), f"gosim --version: {version!r}")
        simulate = run([gosim, "simulate", "--graph", "graphs/data/resnet50_train_b32.json.gz", "--cluster",
                        "h100x8_nvswitch:gpus=1"], work, clean_env(), "gosim simulate (installed data)").stdout
        expect("cost model auto (H100: calibrated (configs/calibrated/h100.yaml)" in simulate, simulate[:300])
        check = run([os.path.join(venv, "bin", "gosim-export"), "--check",
                     os.path.join(package, "data", "graphs/data/vgg16_train_b32.json.gz")], work, clean_env(),
                    "gosim-export --check")
        expect(json.loads(check.stdout)["valid"], check.stdout)

        # A GPT with AdamW and TF32 exports and simulates from the venv.
        try:
            import torch  # noqa: F401
        except ImportError:
            print("skip GPT export: PyTorch is not installed (apt-get install python3-torch)")
        else:
            with open(os.path.join(work, "gpt.py"), "w", encoding="utf-8") as f:
                f.write(GPT_SCRIPT)
            gpt = run([python, "gpt.py", os.path.join(ROOT, "tests", "python")], work, clean_env(),
                      "GPT with AdamW and TF32: export and simulate").stdout.splitlines()
            nodes, feasible, step, seconds = gpt[0].split()
            expect(feasible == "True" and float(step) > 0, f"GPT simulation {gpt}")
            expect("roofline at the TF32 peak for" in gpt[1], f"GPT cost model {gpt[1]}")
            print(f"   GPT: {nodes} nodes, exported in {seconds} s, {float(step) * 1e3:.3f} ms on one H100; {gpt[1]}")
        print("PASS pip install and the tour from outside the repository")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
