#!/usr/bin/env bash
# tern-run gives each rank the environment contract: TERN_RANK, TERN_WORLD_SIZE, TERN_LOCAL_RANK, TERN_LOCAL_SIZE,
# TERN_ROOT_ADDR, TERN_SECRET, plus -x variables and its own environment; stdin is /dev/null.
# Rank command lines are single-quoted on purpose: the rank's shell expands $TERN_*, not this one.
# shellcheck disable=SC2016
# shellcheck source=tern_run_lib.sh
source "$(dirname "$0")/tern_run_lib.sh"

export TERN_TEST_INHERITED=from-parent
print_env='echo $TERN_RANK $TERN_WORLD_SIZE $TERN_LOCAL_RANK $TERN_LOCAL_SIZE $TERN_ROOT_ADDR $TERN_SECRET $EXTRA $TERN_TEST_INHERITED'

run_tern -n 3 --no-tag-output -x EXTRA=hello sh -c "$print_env"
expect_eq "$RC" 0 "exit code"
mapfile -t lines < <(sort <<<"$OUT")
expect_eq "${#lines[@]}" 3 "number of lines"
read -r _ _ _ _ addr secret _ _ <<<"${lines[0]}"
expect_match "$addr" '^127\.0\.0\.1:[0-9]+$' "TERN_ROOT_ADDR"
expect_match "$secret" '^[0-9a-f]{32}$' "TERN_SECRET"
for r in 0 1 2; do
  expect_eq "${lines[$r]}" "$r 3 $r 3 $addr $secret hello from-parent" "environment of rank $r"
done

# The port is held for rank 0 while the job runs (no pick-then-close race): another program's plain bind gets
# EADDRINUSE, while rank 0's listener (SO_REUSEADDR, as src/base/socket.cpp binds) can bind and listen on it.
probe='
import os, socket
port = int(os.environ["TERN_ROOT_ADDR"].rsplit(":", 1)[1])
s = socket.socket()
try:
    s.bind(("127.0.0.1", port))
    print("stranger-bind-ok")
except OSError:
    print("stranger-bind-refused")
r = socket.socket()
r.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
r.bind(("127.0.0.1", port))
r.listen()
print("root-listen-ok")
'
run_tern -n 1 --no-tag-output python3 -c "$probe"
expect_eq "$RC" 0 "exit code of the port probe"
expect_eq "$OUT" $'stranger-bind-refused\nroot-listen-ok' "the reserved root port"
# Once tern-run is gone the port is free again.
port=${addr##*:}
python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', $port))" 2>/dev/null ||
  fail "TERN_ROOT_ADDR port $port is still taken after the job"

# Every job gets a fresh secret.
run_tern -n 1 sh -c 'echo $TERN_SECRET'
[[ "$OUT" != "[0] $secret" ]] || fail "two jobs got the same TERN_SECRET"

run_tern -n 2 --root-addr 10.1.2.3:4567 --no-tag-output sh -c 'echo $TERN_ROOT_ADDR'
expect_eq "$OUT" $'10.1.2.3:4567\n10.1.2.3:4567' "--root-addr"

# Stale contract variables from an outer launcher do not leak through.
TERN_RANK=7 TERN_WORLD_SIZE=9 run_tern -n 1 --no-tag-output sh -c 'echo $TERN_RANK $TERN_WORLD_SIZE'
expect_eq "$OUT" "0 1" "inherited TERN_RANK is overridden"

# Ranks read /dev/null, not the launcher's stdin.
OUT=$(echo should-not-arrive | "$TERN_RUN" -n 1 cat)
expect_eq "$OUT" "" "rank stdin"

echo PASS
