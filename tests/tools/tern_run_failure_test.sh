#!/usr/bin/env bash
# A failing rank brings the whole job down quickly; tern-run reports it and exits with the rank's code.
# Rank command lines are single-quoted on purpose: the rank's shell expands $TERN_*, not this one.
# shellcheck disable=SC2016
# shellcheck source=tern_run_lib.sh
source "$(dirname "$0")/tern_run_lib.sh"

# Rank 1 exits 3; ranks 0 and 2 would sleep 30 s.
run_tern -n 3 sh -c 'if [ $TERN_RANK = 1 ]; then sleep 0.3; exit 3; fi; echo $$ >'"$WORK"'/pid$TERN_RANK; exec sleep 30'
expect_eq "$RC" 3 "exit code after rank 1 exited 3"
((ELAPSED_MS < 5000)) || fail "tern-run took ${ELAPSED_MS} ms to give up"
expect_match "$ERR" '^tern-run: rank 1 \(pid [0-9]+\) exited with code 3' "failure report"
[[ "$ERR" != *SIGKILL* ]] || fail "SIGTERM should have been enough: $ERR"
for r in 0 2; do
  [[ -s "$WORK/pid$r" ]] || fail "rank $r never started"
  ! is_alive "$(cat "$WORK/pid$r")" || fail "rank $r still alive after tern-run exited"
done

# What a rank started is stopped with it: the signal goes to the rank's whole process group.
run_tern -n 2 sh -c 'if [ $TERN_RANK = 0 ]; then sleep 0.3; exit 4; fi; sleep 30 & echo $! >'"$WORK"'/child; wait'
expect_eq "$RC" 4 "exit code with a rank that has a child"
[[ -s "$WORK/child" ]] || fail "rank 1 never started its child"
! is_alive "$(cat "$WORK/child")" || fail "the child of rank 1 outlived tern-run"

# Death by a signal is reported by name and gives 128+signal.
run_tern -n 2 sh -c 'if [ $TERN_RANK = 0 ]; then kill -9 $$; fi; exec sleep 30'
expect_eq "$RC" 137 "exit code after rank 0 was SIGKILLed"
expect_match "$ERR" 'tern-run: rank 0 \(pid [0-9]+\) killed by signal 9 \(Killed\)' "signal report"
((ELAPSED_MS < 5000)) || fail "took ${ELAPSED_MS} ms"

# A rank that ignores SIGTERM is SIGKILLed after --grace-ms.
run_tern -n 2 --grace-ms 300 sh -c 'if [ $TERN_RANK = 0 ]; then sleep 0.2; exit 5; fi; trap "" TERM; exec sleep 30'
expect_eq "$RC" 5 "exit code with a rank ignoring SIGTERM"
expect_match "$ERR" 'sending SIGKILL' "SIGKILL escalation"
((ELAPSED_MS < 3000)) || fail "grace period of 300 ms took ${ELAPSED_MS} ms"

# --timeout stops everything and exits 124.
run_tern -n 2 --timeout 0.4 sleep 30
expect_eq "$RC" 124 "exit code after --timeout"
expect_match "$ERR" 'timed out after 0.4 s' "timeout report"
((ELAPSED_MS < 3000)) || fail "timeout of 0.4 s took ${ELAPSED_MS} ms"

echo PASS
