# shellcheck shell=bash
# Shared by the tests/cluster/*_test.sh scripts; sourced, not run. Usage of a test: script BIN_DIR
# (the build's bin directory, holding tern-run, tern_mp_check and all_reduce_perf).
set -uo pipefail

BIN=$(readlink -f "${1:?usage: $0 path/to/build/bin}")
CLUSTER_DIR=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
# shellcheck source-path=SCRIPTDIR source=netns_cluster.sh
source "$CLUSTER_DIR/netns_cluster.sh"
export TNC_TERN_RUN=$BIN/tern-run
# A lost peer must turn into an error quickly, never a hang that eats the ctest timeout.
export TERN_TIMEOUT=${TERN_TIMEOUT:-60}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Runs a job on the current cluster and keeps its output in $OUT (also printed); returns its exit code.
launch() {
  local out rc=0
  out=$(mktemp)
  tnc_launch "$@" >"$out" 2>&1 || rc=$?
  OUT=$(cat "$out")
  rm -f "$out"
  echo "$OUT"
  return "$rc"
}
