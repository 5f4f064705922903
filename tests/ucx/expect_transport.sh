#!/usr/bin/env bash
# Runs a multi-rank command and checks that it passed *over the expected transport*: with TERN_DEBUG=INFO (INIT)
# every communicator logs "... ready, transport NAME", and a test that meant UCX must not pass over plain TCP.
#
#   expect_transport.sh NAME MIN_COMMUNICATORS CMD...
set -uo pipefail
expected=$1
min=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
TERN_DEBUG=INFO TERN_DEBUG_SUBSYS=INIT "$@" >"$out" 2>&1
rc=$?
# The INFO lines are noise in a passing run; keep the rest (the program's own report) in the test log.
grep -v "\[INIT\] INFO" "$out"
if ((rc != 0)); then
  echo "FAIL: command exited with $rc"
  grep "\[INIT\]" "$out" | tail -n 20
  exit "$rc"
fi
got=$(grep -c "ready, transport ${expected}\$" "$out")
others=$(grep "ready, transport " "$out" | grep -vc "ready, transport ${expected}\$")
if ((got < min || others > 0)); then
  echo "FAIL: expected >= $min communicators over '$expected', saw $got (and $others over other transports)"
  grep "ready, transport " "$out"
  exit 1
fi
echo "PASS: $got communicator(s) over '$expected'"
