"""The `gosim` command-line program from Python: where it and its data are, and the console script.

An installed package (pip install .; docs/PYTHON.md) holds the C++ program
in gosim/bin/gosim, its shared libraries in gosim/lib and the project data
the program reads (configs/: presets, calibrated profiles, suites, agent
options, checkpoints; graphs/data/: the exported models the suites name) in
gosim/data. In a build tree (PYTHONPATH=build/python) the program is
build/bin/gosim and the data is the source tree's, which the program finds
by itself (core/data_path.h).
"""

import os
import sys

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def data_home():
    """The installed data folder (GOSIM_HOME's default), or None in a build tree."""
    path = os.path.join(_PACKAGE, "data")
    return path if os.path.isdir(os.path.join(path, "configs")) else None


def program_path():
    """The `gosim` program of this package: gosim/bin/gosim installed, build/bin/gosim in a build tree, or None."""
    for path in (os.path.join(_PACKAGE, "bin", "gosim"),
                 os.path.join(os.path.dirname(os.path.dirname(_PACKAGE)), "bin", "gosim")):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def main(argv=None):
    """The `gosim` console script: runs the C++ program with the package's data as GOSIM_HOME."""
    program = program_path()
    if program is None:
        print(f"gosim: the gosim program is not in this package ({_PACKAGE}); reinstall it (pip install .) or "
              "build it (make build)", file=sys.stderr)
        return 1
    env = dict(os.environ)
    if data_home() is not None and not env.get("GOSIM_HOME"):
        env["GOSIM_HOME"] = data_home()
    args = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(program, [program] + args, env)
    return 1  # not reached
