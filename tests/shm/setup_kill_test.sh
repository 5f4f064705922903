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
fail=0
for step in "${steps[@]}"; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  # Segment names carry FNV-1a-64 of the secret's bytes (src/transport/shm/mesh.cpp: Mesh::jobTag).
  tag=$(python3 -c "
h = 0xcbf29ce484222325
for b in bytes.fromhex('$secret'):
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
print(f'{h:016x}')")
  pids=()
  for ((r = 0; r < nranks; r++)); do
    TERN_RANK=$r TERN_WORLD_SIZE=$nranks TERN_ROOT_ADDR=127.0.0.1:$port TERN_SECRET=$secret \
      TERN_TIMEOUT=$timeout_s TERN_TEST_SHM_KILL="$victim:$step" "$bin" >"$dir/out.$r" 2>&1 &
    pids+=($!)
  done
  deadline=$((SECONDS + 4 * timeout_s + 20))
  for ((r = 0; r < nranks; r++)); do
    while kill -0 "${pids[$r]}" 2>/dev/null; do
      if ((SECONDS > deadline)); then
        echo "FAIL [$step]: rank $r still running (hang)"; cat "$dir"/out.*; exit 1
      fi
      sleep 0.05
    done
  done
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
