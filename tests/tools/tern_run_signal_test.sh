#!/usr/bin/env bash
# SIGTERM, SIGHUP and SIGINT sent to tern-run reach every rank.
# Rank command lines are single-quoted on purpose: the rank's shell expands $TERN_*, not this one.
# shellcheck disable=SC2016
# shellcheck source=tern_run_lib.sh
source "$(dirname "$0")/tern_run_lib.sh"

# Starts tern-run in the background (its stdout in $WORK/out) and waits until every rank printed "ready".
start_job() {  # nranks, then tern-run arguments
  local n=$1
  shift
  # Background jobs of a script start with SIGINT ignored, which tern-run would pass on; restore the default.
  # --timeout: a tern-run that failed to forward would otherwise leave the test waiting forever.
  env --default-signal=INT "$TERN_RUN" --timeout 20 -n "$n" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null &
  JOB=$!
  for _ in $(seq 100); do
    (($(grep -c ready "$WORK/out" || true) == n)) && return 0
    sleep 0.05
  done
  fail "ranks did not start: $(cat "$WORK/out" "$WORK/err")"
}

wait_job() {
  RC=0
  wait "$JOB" || RC=$?
  OUT=$(cat "$WORK/out")
  ERR=$(cat "$WORK/err")
}

loop='trap "echo got-$SIG; exit 0" $SIG; echo ready; while :; do sleep 0.05; done'

for sig in TERM HUP; do
  start_job 2 -x SIG=$sig sh -c "$loop"
  kill -$sig "$JOB"
  wait_job
  expect_eq "$RC" 0 "exit code after forwarding SIG$sig to ranks that exit 0"
  expect_eq "$(grep got <<<"$OUT" | sort)" $'[0] got-'$sig$'\n[1] got-'$sig "SIG$sig reached every rank"
done

# Ranks that do not catch SIGINT die of it; tern-run reports that and exits 128+2.
start_job 3 sh -c 'echo ready; exec sleep 30'
kill -INT "$JOB"
wait_job
expect_eq "$RC" 130 "exit code after SIGINT"
expect_match "$ERR" 'killed by signal 2 \(Interrupt\)' "SIGINT report"

echo PASS
