# Thin wrapper over CMake. The two commands users need:
#   make run   - build, start 4 local ranks, run allreduce with and without compression, print the nccl-tests table
#   make test  - install missing Debian packages, create/update the project Python venv (torch from PyPI, cached
#                outside the repository) and pip-install tern into it, build, run every test (ctest)
# `make test PYTHON_TESTS=0` skips the venv and the Python tests (no network, no torch).
BUILD ?= build
JOBS  ?= $(shell nproc)
NP    ?= 4
PYTHON_TESTS ?= 1

.PHONY: all deps configure build test run bench clean format lint python-env fuzz test-sanitize

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

# libFuzzer targets (tests/fuzz), FUZZ_SECONDS each (default 600), built with clang in build-fuzz; docs/SECURITY.md.
FUZZ_SECONDS ?= 600
fuzz: deps
	@bash tools/fuzz.sh --seconds $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The unit, mp and shm tests (with the security tests and the fuzz corpora's replay) under ASan+UBSan (build-asan)
# and TSan (build-tsan); any sanitizer report fails its test. SANITIZERS picks the builds ("address,undefined" and/or
# "thread"); SANITIZE_TESTS is the ctest regex of what runs: by default all of them (the unit tests are the gtest
# suites, whose names start with a capital; mp_*, shm_*, security_* are the multi-process tests), and
# `make test-sanitize-ci` runs SANITIZE_CI_TESTS, the subset .ci/run can afford. The abort-safety stress runs 1000
# collective-vs-abort rounds here (100 in make test). The TSan build leaves UCX out: UCX's memory hooks (libucm) run
# in a new thread before TSan has set it up, and the process crashes at its first thread exit.
SANITIZERS ?= address,undefined thread
SANITIZE_TESTS ?= ^[A-Z][^.]*[.]|^(shm_trust|security|fuzz_replay)[.]|^(mp|shm|security)_
# The CI subset: abort safety (the stress and the call held past the abort wait), the shared-memory transport, its
# trust checks and failure paths (a failing rank leaving while peers may touch its buffers included), the security tests, the corpora, 2-rank multi-process runs over TCP and shared
# memory, the stream-ordered calls' staging (streams are other threads) and the SIGKILL drills: the code where
# threads, other processes' bytes and teardown meet.
SANITIZE_CI_TESTS = ^(AbortSafety|ShmTransportTest|ShmFailure|ShmLeave|ShmRegistry|Api|Collectives|Ranks/ShmCollectives|StagedDeviceCallsTest|DeviceCompressedCallsTest|DeviceEngineChoice)[.]|^(shm_trust|security|fuzz_replay)[.]|^(mp_tcp_all_n2|shm_mp_all_n2|shm_mp_sigkill_mid_allreduce|mp_tcp_sigkill_mid_allreduce|shm_setup_sigkill_leaves_no_segment|mp_device_emulated_n2)$$
SANITIZE_STRESS_LOOPS ?= 1000
# Tests the TSan build leaves out (a ctest regex; empty in a full run, so every report shows there). Ranks that are
# threads of one process share one mapping of each shared-memory segment (src/transport/shm/mapped_file.hpp), so
# TSan follows their flags and the in-process shared-memory unit tests run under it too. The multi-process matrices
# run lean at their largest size with scaled deadlines in the sanitizer builds (cmake/TernSanitize.cmake), which is
# what lets the CI subset keep its 2-rank matrices under TSan too (about 40 s over TCP, 160 s over shared memory).
SANITIZE_TSAN_EXCLUDE ?=
SANITIZE_CI_TSAN_EXCLUDE =
# hwloc unloads its PCI plugin when a topology is destroyed; what libpciaccess allocated for the process is then
# unreachable and LeakSanitizer reports it from an unknown module (no suppression can name it). Keeping libpciaccess
# loaded keeps that memory reachable; verify_asan_link_order=0 lets the preload come before the ASan runtime.
SANITIZE_PRELOAD ?= $(wildcard /lib/x86_64-linux-gnu/libpciaccess.so.0)
SANITIZE_TARGETS = tern_unit_tests tern_security_tests tern_env_init_check tern_mp_check tern_device_check tern_shm_check \
  tern_shm_trust_tests tern_shm_setup_kill_check tern-run tern_fuzz_replay
.PHONY: test-sanitize-ci fuzz-ci
test-sanitize: deps
	@set -e; for s in $(SANITIZERS); do \
	  case $$s in thread) dir=build-tsan; extra=-DTERN_WITH_UCX=OFF; skip='$(SANITIZE_TSAN_EXCLUDE)' ;; \
	    *) dir=build-asan; extra=; skip= ;; esac; \
	  echo "tern: $$s build in $$dir"; \
	  cmake -S . -B $$dir -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTERN_SANITIZE=$$s $$extra >/dev/null; \
	  cmake --build $$dir -j $(JOBS) --target $(SANITIZE_TARGETS); \
	  (cd $$dir && LD_PRELOAD="$(SANITIZE_PRELOAD)" TERN_SOCKET_IFNAME=lo TERN_ABORT_STRESS_LOOPS=$(SANITIZE_STRESS_LOOPS) \
	     ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:verify_asan_link_order=0 \
	     LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitize/lsan.supp:print_suppressions=0 \
	     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	     TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	     ctest -R '$(SANITIZE_TESTS)' $${skip:+-E "$$skip"} --output-on-failure -j $(JOBS) --timeout 900); \
	done

test-sanitize-ci: SANITIZE_TESTS = $(SANITIZE_CI_TESTS)
test-sanitize-ci: SANITIZE_TSAN_EXCLUDE = $(SANITIZE_CI_TSAN_EXCLUDE)
test-sanitize-ci: test-sanitize

# The short fuzz run of CI: every target over its committed corpus, then FUZZ_CI_SECONDS of fresh inputs.
FUZZ_CI_SECONDS ?= 10
fuzz-ci: FUZZ_SECONDS = $(FUZZ_CI_SECONDS)
fuzz-ci: fuzz
