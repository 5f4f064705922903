#!/usr/bin/env bash
# Shared by the failure drills that start ranks directly with the launcher environment (no tern-run, which would
# itself stop the survivors): tests/mp/kill_test.sh, tests/shm/setup_kill_test.sh. Source it.
#
#   drill_port                      a loopback port held for rank 0's listener until this shell exits (sets
#                                   DRILL_PORT; call it directly, not in $(...), so the holder is this shell's)
#   drill_secret                    a random job secret (hex)
#   drill_job_tag SECRET            the tag /dev/shm segment names carry: FNV-1a-64 of the secret's bytes
#                                   (src/transport/shm/mesh.cpp: Mesh::jobTag), not the secret
#   drill_start N PORT SECRET TIMEOUT_S DIR CMD...
#                                   starts ranks 0..N-1 of CMD in the background, rank r's output in DIR/out.r;
#                                   their pids in DRILL_PIDS
#   drill_wait_all LIMIT_S DIR LABEL
#                                   waits for every rank; returns 1 (after printing every output) when one is still
#                                   running LIMIT_S seconds from now: a hang

# A port picked by bind(0) and closed again can be taken by any ephemeral connect before rank 0 binds it (seen in CI:
# "bind 127.0.0.1:PORT: Address already in use"). As tools/tern-run/root_addr.hpp does, a holder process keeps the
# port bound with SO_REUSEADDR and never listens: no one else gets it, yet rank 0's listener (SO_REUSEADDR too) can
# bind it. The holder exits when the shell that started it does (it watches its parent) or at the next drill_port.
drill_port() {
  local file
  [ -n "${DRILL_PORT_HOLDER:-}" ] && kill "$DRILL_PORT_HOLDER" 2>/dev/null
  file=$(mktemp)
  python3 -c '
import os, socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
parent = os.getppid()
with open(sys.argv[1], "w") as f:
    f.write(str(s.getsockname()[1]))
while os.getppid() == parent:
    time.sleep(0.5)
' "$file" </dev/null >/dev/null 2>&1 &
  DRILL_PORT_HOLDER=$!
  local deadline=$((SECONDS + 30))
  while [ ! -s "$file" ] && ((SECONDS < deadline)); do sleep 0.02; done
  DRILL_PORT=$(cat "$file")
  rm -f "$file"
  [ -n "$DRILL_PORT" ] || { echo "drill_port: could not reserve a loopback port" >&2; return 1; }
}

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
