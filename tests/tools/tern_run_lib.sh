# Helpers shared by the tern_run_*_test.sh scripts; sourced, not run. Usage of a test: script path/to/tern-run
set -euo pipefail

TERN_RUN=${1:?usage: $0 path/to/tern-run}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

expect_eq() {  # actual expected what
  [[ "$1" == "$2" ]] || fail "$3: expected [$2], got [$1]"
}

expect_match() {  # text regex what
  [[ "$1" =~ $2 ]] || fail "$3: [$1] does not match /$2/"
}

now_ms() { date +%s%3N; }

# True while pid is a live process; a zombie (dead, not yet reaped by whoever inherited it) counts as dead.
is_alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n "$state" && "$state" != Z ]]
}

# Runs tern-run with the given arguments; sets RC, OUT and ERR (the captured stdout and stderr) and ELAPSED_MS.
# shellcheck disable=SC2034  # the results are read by the scripts that source this file
run_tern() {
  local start
  start=$(now_ms)
  RC=0
  "$TERN_RUN" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null || RC=$?
  ELAPSED_MS=$(($(now_ms) - start))
  OUT=$(cat "$WORK/out")
  ERR=$(cat "$WORK/err")
}
