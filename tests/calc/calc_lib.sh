# Helpers for the tern-calc CLI tests (sourced).
set -uo pipefail
CALC=${1:?usage: $0 TERN_CALC SOURCE_DIR}
SRC=${2:?usage: $0 TERN_CALC SOURCE_DIR}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# expect_contains TEXT PATTERN...: every fixed-string pattern occurs in TEXT.
expect_contains() {
  local text=$1
  shift
  for p in "$@"; do
    grep -qF -- "$p" <<<"$text" || fail "expected '$p' in output"
  done
}

# expect_usage_error ARGS...: exit code 2, nothing on stdout, exactly one line on stderr that starts with tern-calc:.
expect_usage_error() {
  local out err rc
  "$CALC" "$@" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  out=$(cat "$TMP/out")
  err=$(cat "$TMP/err")
  [[ $rc -eq 2 ]] || fail "tern-calc $*: exit $rc, expected 2"
  [[ -z $out ]] || fail "tern-calc $*: printed on stdout: $out"
  [[ $(wc -l <"$TMP/err") -eq 1 ]] || fail "tern-calc $*: expected one line on stderr, got: $err"
  [[ $err == tern-calc:* ]] || fail "tern-calc $*: stderr does not start with 'tern-calc:': $err"
}

finish() {
  if [[ $failures -gt 0 ]]; then
    echo "$failures failure(s)" >&2
    exit 1
  fi
  echo "ok"
}
