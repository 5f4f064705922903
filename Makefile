# Thin wrapper over CMake. The two commands users need:
#   make run   - build, start 4 local ranks, run allreduce with and without compression, print the nccl-tests table
#   make test  - install missing Debian packages, build, run every test (ctest)
BUILD ?= build
JOBS  ?= $(shell nproc)
NP    ?= 4

.PHONY: all deps configure build test run bench clean format lint

all: build

deps:
	@bash tools/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
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

clean:
	@rm -rf $(BUILD)
