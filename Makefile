# gosim: the two commands.
#   make run    install what is missing, build, run the quickstart experiment
#   make test   install what is missing, build, run every unit test
# Other targets: make build, make bench, make deps, make sanitize, make format, make clean.

SHELL := /bin/bash
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
GOSIM := $(BUILD_DIR)/bin/gosim

# Debian packages (see DESIGN: dependencies). Installed only when missing.
# libopenblas0-serial: LibTorch's CPU BLAS (Debian's default reference BLAS is several times slower).
# python3-pandas, python3-matplotlib, python3-yaml: the analysis scripts (analysis/), which make test runs.
# pybind11-dev, python3-pybind11, python3-numpy, python3-pytest: the Python module (python/) and its tests.
# python3-venv, python3-pip: `pip install .` into a virtual environment (make test's python_install).
DEBIAN_PACKAGES := build-essential cmake pkg-config libtorch-dev libboost-graph-dev \
  libeigen3-dev libtbb-dev libyaml-cpp-dev libbenchmark-dev doctest-dev nlohmann-json3-dev \
  libcli11-dev zlib1g-dev libopenmpi-dev openmpi-bin libmetis-dev libscotch-dev \
  coinor-libcbc-dev libonnx-dev libprotobuf-dev protobuf-compiler libopenblas0-serial \
  python3-pandas python3-matplotlib python3-yaml pybind11-dev python3-pybind11 python3-numpy \
  python3-pytest python3-venv python3-pip
# Exporting real models (gosim.torch, python3 -m gosim.torch) and its tests, which make test runs.
PYTHON_PACKAGES := python3-torch python3-torchvision

.PHONY: all deps deps-python configure build run test bench sanitize format clean

all: build

deps:
	@bash cmake/install_deps.sh $(DEBIAN_PACKAGES)

deps-python:
	@bash cmake/install_deps.sh $(PYTHON_PACKAGES)

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS) > $(BUILD_DIR).configure.log 2>&1 \
	  || { cat $(BUILD_DIR).configure.log; exit 1; }

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	$(GOSIM) run configs/experiments/quickstart.yaml

test: build deps-python
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

bench: build
	@for b in $(BUILD_DIR)/bench/*; do [ -x "$$b" ] && echo "== $$b" && "$$b" --benchmark_min_time=0.2 || true; done

sanitize:
	$(MAKE) test BUILD_DIR=build-asan BUILD_TYPE=RelWithDebInfo CMAKE_ARGS="-DGOSIM_SANITIZE=ON -DGOSIM_BUILD_BENCHMARKS=OFF"

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) $(BUILD_DIR).configure.log
