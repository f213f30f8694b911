# The pip build backend's decisions, without building: the version comes
# from CMakeLists.txt, the wheel tag from this interpreter, the metadata and
# console scripts, and which build folder it reuses or configures.
import importlib.util
import os
import sys
import sysconfig
import zipfile

import pytest

from conftest import ROOT


@pytest.fixture()
def backend():
    spec = importlib.util.spec_from_file_location(
        "gosim_build_backend", ROOT / "python/build_backend/gosim_build_backend.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_metadata_version_and_tag(backend, tmp_path):
    text = (ROOT / "CMakeLists.txt").read_text()
    assert f"project(gosim VERSION {backend._version()} " in text
    name = backend.prepare_metadata_for_build_wheel(str(tmp_path))
    assert name == f"gosim-{backend._version()}.dist-info"
    metadata = (tmp_path / name / "METADATA").read_text()
    assert "Name: gosim\n" in metadata and "Requires-Dist: numpy\n" in metadata
    assert 'Requires-Dist: torch; extra == "torch"' in metadata
    assert (tmp_path / name / "entry_points.txt").read_text() == (
        "[console_scripts]\ngosim = gosim._program:main\ngosim-export = gosim._torch_cli:main\n")
    interpreter, abi, platform = backend._python_tag()
    assert interpreter == f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert sysconfig.get_config_var("EXT_SUFFIX").startswith(f".cpython-{abi[2:]}-")
    assert platform == sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert backend.get_requires_for_build_wheel() == []  # nothing to download


def test_build_folder_choice(backend, tmp_path, monkeypatch):
    monkeypatch.setattr(backend, "_root", lambda: str(tmp_path))
    monkeypatch.delenv("GOSIM_BUILD_DIR", raising=False)
    abi = backend._python_tag()[1]
    # No build/ yet: a folder of this Python's own, to be configured.
    assert backend._build_dir() == (str(tmp_path / f"build-{abi}"), False)
    # build/ configured for this interpreter: reused.
    (tmp_path / "build").mkdir()
    (tmp_path / "build/CMakeCache.txt").write_text(f"Python3_EXECUTABLE:FILEPATH={sys.executable}\n")
    assert backend._build_dir() == (str(tmp_path / "build"), True)
    # As `make build` leaves it (FindPython3 caches only _Python3_EXECUTABLE):
    # reused too, not configured again (which turned its tests off).
    (tmp_path / "build/CMakeCache.txt").write_text(
        f"GOSIM_BUILD_TESTS:BOOL=ON\n_Python3_EXECUTABLE:INTERNAL={sys.executable}\n")
    assert backend._build_dir() == (str(tmp_path / "build"), True)
    monkeypatch.setenv("GOSIM_BUILD_DIR", "build")
    assert backend._build_dir() == (str(tmp_path / "build"), True)
    monkeypatch.delenv("GOSIM_BUILD_DIR")
    # build/ configured for another Python: left alone.
    other = tmp_path / "other_python"
    other.write_text("#!/bin/sh\necho .cpython-399-x86_64-linux-gnu.so\n")
    other.chmod(0o755)
    (tmp_path / "build/CMakeCache.txt").write_text(f"Python3_EXECUTABLE:FILEPATH={other}\n")
    assert backend._build_dir() == (str(tmp_path / f"build-{abi}"), False)
    # GOSIM_BUILD_DIR names it; one configured for another Python is an error.
    monkeypatch.setenv("GOSIM_BUILD_DIR", "build")
    with pytest.raises(RuntimeError, match=r"GOSIM_BUILD_DIR=build was configured for .*other_python"):
        backend._build_dir()
    monkeypatch.setenv("GOSIM_BUILD_DIR", str(tmp_path / "fresh"))
    assert backend._build_dir() == (str(tmp_path / "fresh"), False)


def test_wheel_records_and_modes(backend, tmp_path):
    stage = tmp_path / "stage"
    (stage / "gosim/bin").mkdir(parents=True)
    (stage / "gosim/__init__.py").write_text("x = 1\n")
    program = stage / "gosim/bin/gosim"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    wheel = backend._Wheel(str(tmp_path / "w.whl"))
    wheel.add_tree(str(stage))
    wheel.close("gosim-0.1.0.dist-info", "cp311-cp311-linux_x86_64")
    with zipfile.ZipFile(tmp_path / "w.whl") as z:
        names = z.namelist()
        assert names[:2] == ["gosim/__init__.py", "gosim/bin/gosim"]
        assert (z.getinfo("gosim/bin/gosim").external_attr >> 16) & 0o777 == 0o755
        record = z.read("gosim-0.1.0.dist-info/RECORD").decode().splitlines()
        assert record[0].startswith("gosim/__init__.py,sha256=") and record[0].endswith(",6")
        assert record[-1] == "gosim-0.1.0.dist-info/RECORD,,"
        assert "Root-Is-Purelib: false" in z.read("gosim-0.1.0.dist-info/WHEEL").decode()
    assert os.path.exists(tmp_path / "w.whl")
