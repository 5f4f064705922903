#!/usr/bin/env bash
# Shared by the failure drills that start ranks directly with the launcher environment (no tern-run, which would
# itself stop the survivors): tests/mp/kill_test.sh, tests/shm/setup_kill_test.sh. Source it.
#
#   drill_port                      a free loopback port
#   drill_secret                    a random job secret (hex)
#   drill_job_tag SECRET            the tag /dev/shm segment names carry: FNV-1a-64 of the secret's bytes
#                                   (src/transport/shm/mesh.cpp: Mesh::jobTag), not the secret
#   drill_start N PORT SECRET TIMEOUT_S DIR CMD...
#                                   starts ranks 0..N-1 of CMD in the background, rank r's output in DIR/out.r;
#                                   their pids in DRILL_PIDS
#   drill_wait_all LIMIT_S DIR LABEL
#                                   waits for every rank; returns 1 (after printing every output) when one is still
#                                   running LIMIT_S seconds from now: a hang

drill_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

drill_secret() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

drill_job_tag() {
  python3 -c "
h = 0xcbf29ce484222325
for b in bytes.fromhex('$1'):
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
print(f'{h:016x}')"
}

drill_start() {
  local n=$1 port=$2 secret=$3 timeout_s=$4 dir=$5 r
  shift 5
  DRILL_PIDS=()
  for ((r = 0; r < n; r++)); do
    TERN_RANK=$r TERN_WORLD_SIZE=$n TERN_ROOT_ADDR=127.0.0.1:$port TERN_SECRET=$secret TERN_TIMEOUT=$timeout_s \
      "$@" >"$dir/out.$r" 2>&1 &
    DRILL_PIDS+=($!)
  done
}

drill_wait_all() {
  local deadline=$((SECONDS + $1)) dir=$2 label=$3 pid r=0
  for pid in "${DRILL_PIDS[@]}"; do
    while kill -0 "$pid" 2>/dev/null; do
      if ((SECONDS > deadline)); then
        echo "FAIL${label:+ [$label]}: rank $r still running (hang)"
        cat "$dir"/out.*
        return 1
      fi
      sleep 0.05
    done
    r=$((r + 1))
  done
}
