#!/usr/bin/env bash
# A rank SIGKILLed at each step of the shared-memory setup (the test hook TERN_TEST_SHM_KILL=<rank>:<step>, see
# src/transport/shm/segment_sweeper.hpp): every survivor must end (error or success, never a hang) and afterwards
# /dev/shm must hold no segment of the job. Ranks are started directly with the launcher environment (no tern-run,
# which would stop the survivors itself).
#
#   setup_kill_test.sh CHECK_BINARY [NRANKS=3] [VICTIM=1] [STEPS...]
set -u
bin=$1
nranks=${2:-3}
victim=${3:-1}
shift 3 2>/dev/null || shift $#
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(opened created announced mapped reported)
timeout_s=${TERN_TIMEOUT:-5}
dir=$(mktemp -d)
trap 'rm -rf "$dir"; kill $(jobs -p) 2>/dev/null' EXIT
# shellcheck source=../common/rank_drill.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/rank_drill.sh"
fail=0
for step in "${steps[@]}"; do
  drill_port || exit 1
  port=$DRILL_PORT
  secret=$(drill_secret)
  tag=$(drill_job_tag "$secret")
  drill_start "$nranks" "$port" "$secret" "$timeout_s" "$dir" env TERN_TEST_SHM_KILL="$victim:$step" "$bin"
  pids=("${DRILL_PIDS[@]}")
  drill_wait_all $((4 * timeout_s + 20)) "$dir" "$step" || exit 1
  wait "${pids[$victim]}"; rc=$?
  if [ $rc -ne 137 ] || ! grep -q "SIGKILLs itself at shared-memory setup step '$step'" "$dir/out.$victim"; then
    echo "FAIL [$step]: the victim (rank $victim) did not die at the step (rc $rc):"; cat "$dir/out.$victim"; fail=1
  fi
  for ((r = 0; r < nranks; r++)); do
    [ "$r" -eq "$victim" ] && continue
    wait "${pids[$r]}"; rc=$?
    echo "[$step] rank $r rc $rc: $(grep -E '^(ok|init failed|allreduce failed)' "$dir/out.$r" | head -1)"
    if [ $rc -ne 1 ]; then echo "FAIL [$step]: rank $r should have failed:"; cat "$dir/out.$r"; fail=1; fi
  done
  leftovers=$(ls /dev/shm 2>/dev/null | grep -e "$tag")
  if [ -n "$leftovers" ]; then
    echo "FAIL [$step]: /dev/shm still holds segments of the job:"; echo "$leftovers"; fail=1
    for f in $leftovers; do rm -f "/dev/shm/$f"; done
  fi
done
[ $fail -eq 0 ] && echo "PASS: no segment left after a SIGKILL at any of: ${steps[*]}"
exit $fail
