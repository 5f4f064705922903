#!/usr/bin/env bash
# The soak (issue 17): 4 ranks run the chaos drill's loop of random collectives, sizes, datatypes, ops and codecs
# (tests/chaos/chaos_drill.cpp) with no fault, every result checked against the independent reference, for the
# given time: the first half over the default transports (shared memory + TCP), the second over TCP alone
# (TERN_SHM_DISABLE=1). Fails on any error, wrong result or hang; prints the calls each rank checked.
#
#   soak.sh --bin CHAOS_DRILL [--minutes M=10] [--seed S=1] [--max-count N=1048576]
#
# CHAOS_LOSSY_CODECS narrows the lossy codecs drawn (default: all of them, as the drill draws).
set -u
export CHAOS_LOSSY_CODECS=${CHAOS_LOSSY_CODECS:-sign,sign:rms,qsgd:4,qsgd:8,topk:0.01,topk:0.05:exact}
bin=""
minutes=10
seed=1
max_count=1048576
while (($# > 0)); do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --max-count) max_count=$2; shift 2 ;;
    *) echo "usage: $0 --bin CHAOS_DRILL [--minutes M] [--seed S] [--max-count N]" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "soak.sh: --bin $bin is not an executable" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../common/rank_drill.sh
source "$here/../common/rank_drill.sh"
nranks=4
dir=$(mktemp -d)
trap 'for p in ${DRILL_PIDS[@]+"${DRILL_PIDS[@]}"}; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$dir"' EXIT
half=$(python3 -c "print($minutes * 30.0)")
fail=0
total=0
for phase in shm+tcp tcp; do
  extra=()
  [ "$phase" = tcp ] && extra=(TERN_SHM_DISABLE=1)
  secret=$(drill_secret)
  drill_port || exit 1
  drill_start "$nranks" "$DRILL_PORT" "$secret" 60 "$dir" env TERN_SOCKET_IFNAME=lo ${extra[@]+"${extra[@]}"} \
    "$bin" --seed "$seed" --seconds "$half" --max-count "$max_count" --codecs 1
  # A hang: still running two minutes after the agreed end.
  if ! drill_wait_all "$(python3 -c "print(int($half) + 120)")" "$dir" "soak $phase"; then
    fail=1
    break
  fi
  for ((r = 0; r < nranks; r++)); do
    { wait "${DRILL_PIDS[$r]}"; } 2>/dev/null
    rc=$?
    if [ "$rc" -ne 0 ]; then
      echo "FAIL [soak $phase]: rank $r exited $rc:"
      tail -5 "$dir/out.$r"
      fail=1
    fi
  done
  calls=$(grep -h "calls checked" "$dir"/out.* | sed -E 's/.*done, ([0-9]+) calls.*/\1/' | paste -sd' ')
  echo "soak $phase: ${half}s, seed $seed, counts up to $max_count: calls checked per rank: $calls"
  [ -n "$calls" ] && total=$((total + ${calls%% *}))
  tag=$(drill_job_tag "$secret")
  if ls /dev/shm 2>/dev/null | grep -q -e "$tag" -e "$secret"; then
    echo "FAIL [soak $phase]: segments of the job left in /dev/shm"
    fail=1
  fi
  ((fail == 0)) || break
done
if ((fail == 0)); then
  echo "PASS: soak of $minutes min on $nranks ranks: $total calls, every result checked on every rank"
fi
exit $fail
