"""gosim's PEP 517 build backend: `pip install .` builds the project's CMake and packs the wheel.

In the source tree (pyproject.toml: backend-path = ["python/build_backend"]),
so that building needs nothing but the Python standard library, CMake and
the project's Debian packages (no setuptools, no scikit-build; it works
offline with `pip install --no-build-isolation .`).

The CMake build folder is $GOSIM_BUILD_DIR, else build/ (what `make build`
uses) when it was configured for this Python (its _core extension suffix),
else build-<python tag>/ (e.g. build-cp312/), configured for this
interpreter (-DPython3_EXECUTABLE=...; tests and benchmarks off). An
existing folder is reused as it is, so after `make build` a wheel takes
seconds. $GOSIM_CMAKE_ARGS adds configure arguments (a fresh folder only),
$GOSIM_BUILD_JOBS (default: the CPU count) sets the build's parallelism.
The wheel holds what `cmake --install BUILD --component python` stages
(python/CMakeLists.txt): the package, _core, gosim's libraries, the program
and its data. docs/PYTHON.md, "Installing".
"""

import base64
import hashlib
import io
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

NAME = "gosim"
SUMMARY = ("Learned optimization of ML computation graphs on multi-GPU machines against a calibrated "
           "discrete-event simulator")
REQUIRES_PYTHON = ">=3.9"
REQUIRES = ["numpy"]
EXTRAS = {"torch": ["torch"], "gymnasium": ["gymnasium"]}
SCRIPTS = {"gosim": "gosim._program:main", "gosim-export": "gosim._torch_cli:main"}


def _root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _version():
    text = open(os.path.join(_root(), "CMakeLists.txt"), encoding="utf-8").read()
    match = re.search(r"project\(\s*gosim\s+VERSION\s+([0-9.]+)", text)
    if not match:
        raise RuntimeError("gosim: no `project(gosim VERSION x.y.z ...)` in CMakeLists.txt")
    return match.group(1)


def _log(message):
    print(f"gosim build: {message}", file=sys.stderr, flush=True)


def _run(args, **kwargs):
    _log("$ " + " ".join(shlex.quote(a) for a in args))
    result = subprocess.run(args, **kwargs)
    if result.returncode != 0:
        raise RuntimeError(f"gosim build: {args[0]} {args[1]} failed with exit status {result.returncode} "
                           "(see its output above)")


def _python_tag():
    """(interpreter, abi, platform) wheel tags of this CPython, e.g. ('cp311', 'cp311', 'linux_x86_64')."""
    soabi = sysconfig.get_config_var("SOABI") or ""
    parts = soabi.split("-")
    if sys.implementation.name != "cpython" or len(parts) < 2 or parts[0] != "cpython":
        raise RuntimeError(f"gosim build: only CPython is supported (this is {sys.implementation.name}, "
                           f"SOABI {soabi!r})")
    interpreter = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return interpreter, f"cp{parts[1]}", platform


def _cached_python(build_dir):
    """The Python3_EXECUTABLE a build folder was configured with, or None."""
    try:
        text = open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8", errors="replace").read()
    except OSError:
        return None
    # Given on the command line (-DPython3_EXECUTABLE=...), or found by
    # CMake's FindPython3, which caches only its internal _Python3_EXECUTABLE
    # (a folder `make build` configured; missing it made pip reconfigure
    # that folder with the tests off).
    for pattern in (r"^Python3_EXECUTABLE:[A-Z]*=(.*)$", r"^_Python3_EXECUTABLE:INTERNAL=(.*)$"):
        match = re.search(pattern, text, re.M)
        if match and match.group(1).strip():
            return match.group(1).strip()
    return None


def _suffix_of(python):
    """EXT_SUFFIX of another interpreter, or None when it cannot be run."""
    try:
        out = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                             capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _interpreter():
    # A venv's python is a link to its base interpreter, which has the headers;
    # configuring with the base keeps the build folder valid after the venv goes.
    return getattr(sys, "_base_executable", None) or sys.executable


def _build_dir():
    """(folder, whether it exists already) for this interpreter."""
    root = _root()
    ours = sysconfig.get_config_var("EXT_SUFFIX")
    given = os.environ.get("GOSIM_BUILD_DIR")
    if given:
        folder = os.path.join(root, given) if not os.path.isabs(given) else given
        cached = _cached_python(folder)
        if cached is not None and _suffix_of(cached) != ours:
            raise RuntimeError(f"gosim build: GOSIM_BUILD_DIR={given} was configured for {cached}, not for this "
                               f"Python ({sys.executable}, {ours}); give another folder")
        return folder, cached is not None
    default = os.path.join(root, "build")
    cached = _cached_python(default)
    if cached is not None and _suffix_of(cached) == ours:
        return default, True
    folder = os.path.join(root, "build-" + _python_tag()[1])
    return folder, _cached_python(folder) is not None


def _cmake_build():
    """Configures (a fresh folder) and builds the wheel's targets; returns the build folder."""
    folder, configured = _build_dir()
    cmake = os.environ.get("CMAKE", "cmake")
    if not configured:
        _log(f"configuring {folder} for {_interpreter()}")
        _run([cmake, "-S", _root(), "-B", folder, "-DCMAKE_BUILD_TYPE=Release",
              f"-DPython3_EXECUTABLE={_interpreter()}", "-DGOSIM_BUILD_TESTS=OFF", "-DGOSIM_BUILD_BENCHMARKS=OFF"]
             + shlex.split(os.environ.get("GOSIM_CMAKE_ARGS", "")))
    else:
        _log(f"reusing {folder}")
    jobs = os.environ.get("GOSIM_BUILD_JOBS") or str(os.cpu_count() or 1)
    _run([cmake, "--build", folder, "--target", "gosim_pip", "-j", jobs])
    return folder


# --- wheel files -------------------------------------------------------------

def _dist_info():
    return f"{NAME}-{_version()}.dist-info"


def _metadata():
    lines = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {_version()}", f"Summary: {SUMMARY}",
             f"Requires-Python: {REQUIRES_PYTHON}"]
    lines += [f"Requires-Dist: {r}" for r in REQUIRES]
    for extra, requirements in EXTRAS.items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in requirements]
    readme = os.path.join(_root(), "README.md")
    body = open(readme, encoding="utf-8").read() if os.path.exists(readme) else ""
    return "\n".join(lines + ["Description-Content-Type: text/markdown", "", body])


def _wheel_file(tag):
    return f"Wheel-Version: 1.0\nGenerator: gosim_build_backend\nRoot-Is-Purelib: false\nTag: {tag}\n"


def _entry_points():
    return "[console_scripts]\n" + "".join(f"{name} = {target}\n" for name, target in SCRIPTS.items())


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


class _Wheel:
    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6)
        self.records = []

    def add(self, name, data, mode=0o644):
        info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
        info.external_attr = (0o100000 | mode) << 16  # a regular file and its permissions
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        self.records.append(_record_line(name, data))

    def add_tree(self, folder):
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames.sort()
            for filename in sorted(filenames):
                path = os.path.join(dirpath, filename)
                name = os.path.relpath(path, folder).replace(os.sep, "/")
                with open(path, "rb") as f:
                    data = f.read()
                self.add(name, data, 0o755 if os.access(path, os.X_OK) else 0o644)

    def close(self, dist_info, tag):
        self.add(f"{dist_info}/METADATA", _metadata().encode())
        self.add(f"{dist_info}/WHEEL", _wheel_file(tag).encode())
        self.add(f"{dist_info}/entry_points.txt", _entry_points().encode())
        record = "\n".join(self.records + [f"{dist_info}/RECORD,,"]) + "\n"
        self.zip.writestr(zipfile.ZipInfo(f"{dist_info}/RECORD", date_time=(2024, 1, 1, 0, 0, 0)), record)
        self.zip.close()


def _wheel_name():
    interpreter, abi, platform = _python_tag()
    tag = f"{interpreter}-{abi}-{platform}"
    return f"{NAME}-{_version()}-{tag}.whl", tag


# --- PEP 517 / 660 hooks -------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    folder = os.path.join(metadata_directory, _dist_info())
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(folder, "entry_points.txt"), "w", encoding="utf-8") as f:
        f.write(_entry_points())
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    folder = _cmake_build()
    name, tag = _wheel_name()
    with tempfile.TemporaryDirectory(prefix="gosim-wheel-") as stage:
        _run([os.environ.get("CMAKE", "cmake"), "--install", folder, "--component", "python", "--prefix", stage])
        wheel = _Wheel(os.path.join(wheel_directory, name))
        wheel.add_tree(stage)
        wheel.close(_dist_info(), tag)
    _log(f"wrote {name}")
    return name


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel that points Python at the build folder's package (build/python): rebuild with make build."""
    folder = _cmake_build()
    name, tag = _wheel_name()
    wheel = _Wheel(os.path.join(wheel_directory, name))
    wheel.add(f"__editable__.{NAME}.pth", (os.path.join(os.path.abspath(folder), "python") + "\n").encode())
    wheel.close(_dist_info(), tag)
    return name


def build_sdist(sdist_directory, config_settings=None):
    """The files git tracks, as gosim-VERSION.tar.gz."""
    import tarfile
    root = _root()
    try:
        files = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        raise RuntimeError("gosim build: an sdist is made from a git checkout (git ls-files)") from None
    base = f"{NAME}-{_version()}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(p for p in files.decode().split("\0") if p):
            if os.path.isfile(os.path.join(root, path)):
                tar.add(os.path.join(root, path), arcname=f"{base}/{path}", recursive=False)
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return name


__all__ = ["build_editable", "build_sdist", "build_wheel", "get_requires_for_build_editable",
           "get_requires_for_build_sdist", "get_requires_for_build_wheel", "prepare_metadata_for_build_editable",
           "prepare_metadata_for_build_wheel"]
