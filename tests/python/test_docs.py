# The Python code in the docs runs as written: every ```python block of
# docs/PYTHON.md, in order, in one namespace, and the README's Python tour,
# each from an empty folder outside the repository (files the blocks name,
# presets and suites, are found as a user's would be).
import re

import pytest

from conftest import ROOT

BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(path):
    return BLOCK.findall(path.read_text(encoding="utf-8"))


def run_blocks(blocks, source):
    namespace = {"__name__": "__docs__"}
    for i, block in enumerate(blocks, 1):
        if re.search(r"^import torch|^\s*import torch", block, re.M):
            pytest.importorskip("torch")
        exec(compile(block, f"{source}, python block {i}", "exec"), namespace)
    return namespace


def test_python_md_blocks_run(tmp_path, monkeypatch, capsys):
    blocks = python_blocks(ROOT / "docs/PYTHON.md")
    assert len(blocks) == 7
    monkeypatch.chdir(tmp_path)
    ns = run_blocks(blocks, "docs/PYTHON.md")
    for written in ("step.json", "best.json", "same.json", "mlp.json.gz"):
        assert (tmp_path / written).exists(), written
    folder = ns["report"]["folder"]
    assert (tmp_path / folder / "results.jsonl").exists() and folder.startswith("runs/quickstart/")
    assert ns["sim"].cost_model_used == "auto (P100: measured for 60 of 60 nodes, else roofline)"
    out = capsys.readouterr().out
    assert "auto -> auto (P100: measured for 60 of 60 nodes, else roofline)" in out
    assert "after the episode ended (terminated=True)" in out
    assert "H100: calibrated (configs/calibrated/h100.yaml), roofline at the TF32 peak for" in out


def test_readme_python_tour_runs(tmp_path, monkeypatch, capsys):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Python"):readme.index("### Folders")]
    blocks = BLOCK.findall(section)
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    ns = run_blocks(blocks, "README.md")
    assert ns["best"].feasible and ns["best"].step_time_s <= ns["r"].step_time_s
    assert capsys.readouterr().out.count("\n") >= 4
