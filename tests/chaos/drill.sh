#!/usr/bin/env bash
# The chaos drill (issue 17): runs of a 4-rank loop of random, checked collectives (chaos_drill), each hit by one
# fault at a random moment once every rank is up:
#   kill  one random rank gets SIGKILL                                   (4 ranks on this host)
#   stop  one random rank gets SIGSTOP (and SIGKILL once the rest ended)  (4 ranks on this host)
#   link  one node's link is cut (ip link set down in its namespace)      (2 nodes x 2 ranks, netns_cluster.sh)
# and asserts, for every run: every survivor exits with a tern error (not a wrong result, not success) within
# 2 x TERN_TIMEOUT of the fault, its error names the lost rank ("rank V lost"; for a cut link, any rank across the
# cut), nothing hangs, and /dev/shm holds nothing of the job afterwards. kill and stop runs alternate between the
# default transports (shared memory + TCP) and TCP alone (TERN_SHM_DISABLE=1).
#
#   drill.sh --bin CHAOS_DRILL [--runs N=100] [--seed S=1] [--timeout T=5] [--faults kill,stop,link]
#
# Runs cycle through the fault kinds in order (so any 3 consecutive runs cover all three). Without the rights to
# make namespaces, link runs are skipped (said so in the summary). Exit status 0 when every run passed.
set -u
bin=""
runs=100
seed=1
timeout_s=5
faults="kill,stop,link"
while (($# > 0)); do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --faults) faults=$2; shift 2 ;;
    *) echo "usage: $0 --bin CHAOS_DRILL [--runs N] [--seed S] [--timeout T] [--faults kill,stop,link]" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "drill.sh: --bin $bin is not an executable" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../common/rank_drill.sh
source "$here/../common/rank_drill.sh"
# shellcheck source=../cluster/netns_cluster.sh
source "$here/../cluster/netns_cluster.sh"
IFS=, read -r -a kinds <<<"$faults"
nranks=4
work=$(mktemp -d)
cleanup() {
  local p
  for p in ${DRILL_PIDS[@]+"${DRILL_PIDS[@]}"}; do kill -KILL "$p" 2>/dev/null; done
  tnc_down
  rm -rf "$work"
}
trap cleanup EXIT
RANDOM=$seed
now() { date +%s.%N; }

pass=0
fail=0
skipped=0
declare -A kind_pass kind_runs kind_max
summary_fail=()

# one_run K KIND: starts the ranks, injects the fault, checks every survivor and /dev/shm; returns 0 (pass),
# 77 (the cluster cannot be made here) or 1.
one_run() {
  local k=$1 kind=$2 dir="$work/run$1"
  mkdir -p "$dir"
  local port secret victim node="" delay mode="" r
  secret=$(drill_secret)
  victim=$((RANDOM % nranks))
  delay=$(python3 -c "print(f'{0.2 + ($RANDOM % 1800) / 1000.0:.3f}')")
  local -a env=(CHAOS_READY_DIR="$dir" CHAOS_FAULT_FILE="$dir/fault")
  local -a args=(--seed $((seed * 1000 + k)) --seconds 120 --max-count 65536)
  DRILL_PIDS=()
  if [ "$kind" = link ]; then
    node=$((RANDOM % 2))
    tnc_up chaos 2 none >/dev/null 2>"$dir/tnc.log" || return 77
    trap cleanup EXIT
    port=29650
    for ((r = 0; r < nranks; r++)); do
      tnc_spawn $((r / 2)) env TERN_RANK=$r TERN_WORLD_SIZE=$nranks TERN_ROOT_ADDR="$(tnc_addr 0):$port" \
        TERN_SECRET="$secret" TERN_TIMEOUT="$timeout_s" "${env[@]}" "$bin" "${args[@]}" >"$dir/out.$r" 2>&1
      DRILL_PIDS+=("$TNC_PID")
    done
    mode="2 nodes x 2 ranks, node $node cut"
  else
    drill_port || return 1
    port=$DRILL_PORT
    if ((k % 2 == 1)); then
      mode="tcp"
      env+=(TERN_SHM_DISABLE=1)
    else
      mode="shm+tcp"
    fi
    drill_start "$nranks" "$port" "$secret" "$timeout_s" "$dir" env TERN_SOCKET_IFNAME=lo "${env[@]}" "$bin" "${args[@]}"
    mode="rank $victim, $mode"
  fi
  # Every rank up (or one failed to start: that is a failure of its own).
  local deadline=$((SECONDS + 60)) ready
  while :; do
    ready=$(find "$dir" -maxdepth 1 -name 'ready.*' | wc -l)
    ((ready == nranks)) && break
    if ((SECONDS > deadline)); then
      echo "run $k ($kind, $mode): FAIL: only $ready of $nranks ranks came up"; cat "$dir"/out.*
      return 1
    fi
    sleep 0.02
  done
  sleep "$delay"
  now >"$dir/fault"
  case "$kind" in
    kill)
      kill -KILL "${DRILL_PIDS[$victim]}"
      { wait "${DRILL_PIDS[$victim]}"; } 2>/dev/null
      ;;
    stop) kill -STOP "${DRILL_PIDS[$victim]}" ;;
    link) ip -n "$(tnc_ns "$node")" link set "$TNC_IFNAME" down ;;
  esac
  local fault_at
  fault_at=$(cat "$dir/fault")
  # Survivors: all but the victim (a cut link leaves every rank alive).
  local -a survivors=()
  for ((r = 0; r < nranks; r++)); do
    if [ "$kind" = link ] || [ "$r" -ne "$victim" ]; then survivors+=("$r"); fi
  done
  local limit=$((2 * timeout_s + 10)) hang=0
  deadline=$((SECONDS + limit))
  for r in "${survivors[@]}"; do
    while kill -0 "${DRILL_PIDS[$r]}" 2>/dev/null; do
      if ((SECONDS > deadline)); then hang=1; break 2; fi
      sleep 0.02
    done
  done
  local ok=1 detail=""
  if ((hang)); then
    ok=0
    detail="HANG: a survivor still runs $limit s after the fault"
  fi
  if [ "$kind" = stop ]; then
    kill -KILL "${DRILL_PIDS[$victim]}" 2>/dev/null
    { wait "${DRILL_PIDS[$victim]}"; } 2>/dev/null
  fi
  for r in "${survivors[@]}"; do kill -KILL "${DRILL_PIDS[$r]}" 2>/dev/null; done
  local max_delay=0 rc line err_at d want named
  for r in "${survivors[@]}"; do
    { wait "${DRILL_PIDS[$r]}"; } 2>/dev/null
    rc=$?
    line=$(grep -m1 "error at" "$dir/out.$r")
    if [ "$rc" -ne 2 ] || [ -z "$line" ]; then
      ok=0
      detail+=" rank $r exited $rc without a tern error;"
      continue
    fi
    err_at=$(echo "$line" | sed -E 's/.*error at ([0-9.]+).*/\1/')
    d=$(python3 -c "print(f'{$err_at - $fault_at:.3f}')")
    max_delay=$(python3 -c "print(max($max_delay, $d))")
    if python3 -c "import sys; sys.exit(0 if $d <= 2 * $timeout_s else 1)"; then :; else
      ok=0
      detail+=" rank $r took ${d}s;"
    fi
    if [ "$kind" = link ]; then
      if ((r / 2 == 0)); then want="2 3"; else want="0 1"; fi
    else
      want=$victim
    fi
    named=0
    for v in $want; do
      if echo "$line" | grep -q "rank $v lost"; then named=1; fi
    done
    if ((named == 0)); then
      ok=0
      detail+=" rank $r does not name rank(s) $want as lost;"
    fi
  done
  { wait "${DRILL_PIDS[$victim]}"; } 2>/dev/null
  if [ "$kind" = link ]; then tnc_down 2>/dev/null; fi
  local tag leftovers
  tag=$(drill_job_tag "$secret")
  leftovers=$(ls /dev/shm 2>/dev/null | grep -e "$tag" -e "$secret")
  if [ -n "$leftovers" ]; then
    ok=0
    detail+=" left in /dev/shm: $leftovers;"
  fi
  if ((ok)); then
    echo "run $k: $kind ($mode) at +${delay}s: PASS, slowest survivor ${max_delay}s"
    if [ -n "${CHAOS_VERBOSE:-}" ]; then
      for r in "${survivors[@]}"; do grep -h -m1 "error at" "$dir/out.$r" | sed 's/^/  /'; done
    fi
    kind_pass[$kind]=$((${kind_pass[$kind]:-0} + 1))
  else
    echo "run $k: $kind ($mode) at +${delay}s: FAIL:$detail"
    for r in $(seq 0 $((nranks - 1))); do sed "s/^/  [out.$r] /" "$dir/out.$r" | tail -5; done
    summary_fail+=("run $k ($kind)")
  fi
  python3 -c "import sys; sys.exit(0 if $max_delay > ${kind_max[$kind]:-0} else 1)" && kind_max[$kind]=$max_delay
  rm -rf "$dir"
  ((ok))
}

start=$SECONDS
for ((k = 0; k < runs; k++)); do
  kind=${kinds[$((k % ${#kinds[@]}))]}
  kind_runs[$kind]=$((${kind_runs[$kind]:-0} + 1))
  one_run "$k" "$kind"
  case $? in
    0) pass=$((pass + 1)) ;;
    77)
      skipped=$((skipped + 1))
      echo "run $k: $kind: SKIPPED (cannot create network namespaces)"
      ;;
    *) fail=$((fail + 1)) ;;
  esac
done
echo "chaos drill: $runs runs in $((SECONDS - start)) s, TERN_TIMEOUT=$timeout_s: $pass passed, $fail failed, $skipped skipped"
for kind in "${kinds[@]}"; do
  echo "  $kind: ${kind_pass[$kind]:-0} of ${kind_runs[$kind]:-0} passed, slowest survivor ${kind_max[$kind]:-0}s after the fault"
done
((fail == 0)) || { echo "failed: ${summary_fail[*]}"; exit 1; }
exit 0
