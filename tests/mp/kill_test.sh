#!/usr/bin/env bash
# A rank killed with SIGKILL in the middle of an allreduce: every other rank must return an error within
# 2 x TERN_TIMEOUT of the kill (in practice at once: the closed socket is noticed). Ranks are started directly
# with the launcher environment (no tern-run, which would itself stop the survivors).
#
#   kill_test.sh CHECK_BINARY [NRANKS=4] [VICTIM=2] [--shm]
#
# --shm: the ranks share memory (tern_shm_check); afterwards /dev/shm must also hold no segment of the job.
set -u
bin=$1
nranks=${2:-4}
victim=${3:-2}
check_shm=0
[ "${4:-}" = "--shm" ] && check_shm=1
timeout_s=${TERN_TIMEOUT:-5}
dir=$(mktemp -d)
trap 'rm -rf "$dir"; kill $(jobs -p) 2>/dev/null' EXIT
# shellcheck source=../common/rank_drill.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/rank_drill.sh"
drill_port || exit 1
port=$DRILL_PORT
secret=$(drill_secret)
drill_start "$nranks" "$port" "$secret" "$timeout_s" "$dir" "$bin" kill "$victim" "$dir/stamp"
pids=("${DRILL_PIDS[@]}")
# Hard stop: if anything is still running after 4 x timeout + 20 s, that is a hang.
drill_wait_all $((4 * timeout_s + 20)) "$dir" "" || exit 1
fail=0
[ -f "$dir/stamp" ] || { echo "FAIL: victim did not record its kill"; cat "$dir"/out.*; exit 1; }
killed_at=$(cat "$dir/stamp")
for ((r = 0; r < nranks; r++)); do
  [ "$r" -eq "$victim" ] && continue
  wait "${pids[$r]}"; rc=$?
  line=$(grep "error at" "$dir/out.$r" | head -1)
  if [ $rc -ne 0 ] || [ -z "$line" ]; then
    echo "FAIL: rank $r (rc $rc) did not report an error:"; cat "$dir/out.$r"; fail=1; continue
  fi
  err_at=$(echo "$line" | sed -E 's/.*error at ([0-9.]+).*/\1/')
  delay=$(python3 -c "print(f'{$err_at - $killed_at:.3f}')")
  echo "rank $r noticed after ${delay}s: $line"
  if python3 -c "import sys; sys.exit(0 if $err_at - $killed_at <= 2 * $timeout_s else 1)"; then :; else
    echo "FAIL: rank $r took ${delay}s (> 2 x TERN_TIMEOUT = $((2 * timeout_s))s)"; fail=1
  fi
done
if [ $check_shm -eq 1 ]; then
  tag=$(drill_job_tag "$secret")
  leftovers=$(ls /dev/shm 2>/dev/null | grep -e "$tag" -e "$secret")
  if [ -n "$leftovers" ]; then
    echo "FAIL: segments of the job left in /dev/shm:"; echo "$leftovers"; fail=1
  else
    echo "no segment of the job (tag $tag) in /dev/shm"
  fi
fi
[ $fail -eq 0 ] && echo "PASS: every surviving rank failed within 2 x TERN_TIMEOUT"
exit $fail
