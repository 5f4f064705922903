#!/usr/bin/env bash
# perf/plot.py turns real all_reduce_perf -J output into a PNG, and rejects a missing or malformed file with exit
# code 2 and a single line on stderr (scripts such as perf/compare.sh rely on both).
#
#   perf_plot_test.sh BIN_DIR      BIN_DIR holds tern-run and all_reduce_perf
#
# Needs matplotlib for /usr/bin/python3 (or $PYTHON); without it prints "SKIPPED: ..." and exits 77.
set -euo pipefail

BIN=${1:?usage: $0 BIN_DIR (holding tern-run and all_reduce_perf)}
PYTHON=${PYTHON:-/usr/bin/python3}
PLOT=$(cd "$(dirname "$0")/../.." && pwd)/perf/plot.py

if ! "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
  echo "SKIPPED: $PYTHON cannot import matplotlib (apt-get install python3-matplotlib)"
  exit 77
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# expect_png FILE WHAT : FILE exists and starts with the 8-byte PNG signature.
expect_png() {
  [[ -s $1 ]] || fail "$2: $1 missing or empty"
  local sig
  sig=$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')
  [[ $sig == 89504e470d0a1a0a ]] || fail "$2: $1 does not start with the PNG signature (got $sig)"
}

# expect_input_error FILE WHAT : plot.py on FILE exits 2 with exactly one line on stderr, naming the file.
expect_input_error() {
  local rc=0 lines
  "$PYTHON" "$PLOT" -o "$WORK/never.png" "$1" >"$WORK/out" 2>"$WORK/err" || rc=$?
  [[ $rc == 2 ]] || fail "$2: exit code $rc, expected 2 (stderr: $(cat "$WORK/err"))"
  lines=$(wc -l <"$WORK/err")
  [[ $lines == 1 ]] || fail "$2: $lines lines on stderr, expected 1: $(cat "$WORK/err")"
  grep -qF "$1" "$WORK/err" || fail "$2: the error does not name $1: $(cat "$WORK/err")"
  [[ ! -e $WORK/never.png ]] || fail "$2: a PNG was written anyway"
}

# A tiny real run: 2 ranks, 1K..64K, so the test exercises the schema the perf binaries actually write.
"$BIN/tern-run" -n 2 "$BIN/all_reduce_perf" -b 1K -e 64K -f 4 -n 2 -w 1 -J "$WORK/run.json" \
  >"$WORK/perf.log" 2>&1 </dev/null || fail "all_reduce_perf failed: $(tail -n 5 "$WORK/perf.log")"
[[ -s $WORK/run.json ]] || fail "all_reduce_perf -J wrote nothing"

"$PYTHON" "$PLOT" -o "$WORK/plot.png" "$WORK/run.json" 2>"$WORK/err" || fail "plot.py failed: $(cat "$WORK/err")"
expect_png "$WORK/plot.png" "default plot"

# The options together: label override, in-place half, a size window, no prediction, a title.
"$PYTHON" "$PLOT" -o "$WORK/opts.png" --title "perf_plot_test" --in-place --min-size 4K --max-size 16K \
  --no-predicted "mine=$WORK/run.json" 2>"$WORK/err" || fail "plot.py with options failed: $(cat "$WORK/err")"
expect_png "$WORK/opts.png" "plot with options"

printf '{"results": [' >"$WORK/truncated.json"
expect_input_error "$WORK/truncated.json" "truncated JSON"
printf '{"binary": "all_reduce_perf"}\n' >"$WORK/noresults.json"
expect_input_error "$WORK/noresults.json" "JSON without results"
expect_input_error "$WORK/does-not-exist.json" "missing file"

echo PASS
