# Thin wrapper over CMake. The two commands users need:
#   make run   - build, start 4 local ranks, run allreduce with and without compression, print the nccl-tests table
#   make test  - install missing Debian packages, create/update the project Python venv (torch from PyPI, cached
#                outside the repository) and pip-install tern into it, build, run every test (ctest)
# `make test PYTHON_TESTS=0` skips the venv and the Python tests (no network, no torch).
BUILD ?= build
JOBS  ?= $(shell nproc)
NP    ?= 4
PYTHON_TESTS ?= 1

.PHONY: all deps configure build test run bench clean format lint python-env

all: build

deps:
	@bash tools/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The project venv's python (tools/python-env.sh prints it) becomes TERN_TEST_PYTHON, which registers the Python
# tests; `make run` and `make build` never touch it.
python-env: deps
	@bash tools/python-env.sh >/dev/null

test: deps
	@if [ "$(PYTHON_TESTS)" = 1 ]; then py=$$(bash tools/python-env.sh) || exit 1; else py=; fi; \
	  cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTERN_TEST_PYTHON="$$py" >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	@cd $(BUILD) && TERN_SOCKET_IFNAME=lo ctest --output-on-failure -j $(JOBS) --timeout 600

run: build
	@bash perf/run_main.sh $(BUILD) $(NP)

bench: build
	@bash perf/bench.sh $(BUILD)

format:
	@find include src tests perf tools examples -name '*.[ch]pp' -o -name '*.h' -o -name '*.cu' 2>/dev/null | xargs clang-format -i

# clang-format and clang-tidy (.clang-tidy) over the library's sources; exits non-zero on any finding.
lint: configure
	@bash tools/lint.sh $(BUILD)

# The wheel's build folder (pyproject.toml) goes too; the project venv (~/.cache/tern) stays.
clean:
	@rm -rf $(BUILD) build-wheel-*
