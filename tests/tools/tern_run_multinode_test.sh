#!/usr/bin/env bash
# Several tern-runs form one job: --rank-offset K, --rank-stride S and --world-size W give global ranks
# K, K+S, ... of a W-rank job while TERN_LOCAL_RANK/TERN_LOCAL_SIZE stay local; --root-addr and a shared
# --secret are required then. (tests/cluster runs real multi-node jobs; this checks the launcher's contract.)
# Rank command lines are single-quoted on purpose: the rank's shell expands $TERN_*, not this one.
# shellcheck disable=SC2016
# shellcheck source-path=SCRIPTDIR source=tern_run_lib.sh
source "$(dirname "$0")/tern_run_lib.sh"

print_env='echo $TERN_RANK $TERN_WORLD_SIZE $TERN_LOCAL_RANK $TERN_LOCAL_SIZE $TERN_ROOT_ADDR $TERN_SECRET'
secret=0123456789abcdefFEDCBA9876543210
lower=0123456789abcdeffedcba9876543210

# "Node" B of a 2 x 2 job: global ranks 2 and 3, local ranks 0 and 1; the secret is passed through (lowercased).
run_tern -n 2 --rank-offset 2 --world-size 4 --root-addr 10.9.8.7:29500 --secret "$secret" --no-tag-output \
  sh -c "$print_env"
expect_eq "$RC" 0 "exit code (node B)"
expect_eq "$(sort <<<"$OUT")" $'2 4 0 2 10.9.8.7:29500 '"$lower"$'\n3 4 1 2 10.9.8.7:29500 '"$lower" "node B environment"

# Output tags carry global ranks, padded to the job's width (ranks 8..9 of 12: two digits).
run_tern -n 2 --rank-offset 8 --world-size 12 --root-addr 127.0.0.1:1 --secret "$secret" sh -c 'echo hi'
expect_eq "$(sort <<<"$OUT")" $'[ 8] hi\n[ 9] hi' "tags with a rank offset"

# Cyclic placement: node 1 of 2 with 2 ranks each holds global ranks 1 and 3.
run_tern -n 2 --rank-offset 1 --rank-stride 2 --world-size 4 --root-addr 127.0.0.1:1 --secret "$secret" \
  --no-tag-output sh -c 'echo $TERN_RANK $TERN_LOCAL_RANK'
expect_eq "$(sort <<<"$OUT")" $'1 0\n3 1' "--rank-stride"

# The whole job in one tern-run may still name its secret; W defaults to the ranks started.
run_tern -n 2 --secret "$secret" --no-tag-output sh -c 'echo $TERN_WORLD_SIZE $TERN_SECRET'
expect_eq "$OUT" $'2 '"$lower"$'\n2 '"$lower" "--secret on a single-node job"

# Two tern-runs really make one job: a rendezvous between their ranks through the shared root address and
# secret (a tiny python root that waits for all 4 ranks, then releases them).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$WORK/rdv.py" <<'EOF'
import os, socket, sys
rank, size = int(os.environ["TERN_RANK"]), int(os.environ["TERN_WORLD_SIZE"])
host, port = os.environ["TERN_ROOT_ADDR"].rsplit(":", 1)
secret = os.environ["TERN_SECRET"].encode()
if rank == 0:
    ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); ls.bind((host, int(port))); ls.listen(16)
    conns, seen = [], {0}
    while len(seen) < size:
        c, _ = ls.accept(); msg = c.recv(64).decode().split()
        assert msg[1].encode() == secret, "secret mismatch"
        seen.add(int(msg[0])); conns.append(c)
    for c in conns: c.sendall(b"go")
    print("root saw ranks", sorted(seen))
else:
    import time
    for _ in range(200):
        try:
            c = socket.create_connection((host, int(port))); break
        except OSError:
            time.sleep(0.05)
    c.sendall(f"{rank} {secret.decode()}".encode()); assert c.recv(2) == b"go"
    print("rank", rank, "released")
EOF
common=(--world-size 4 --root-addr "127.0.0.1:$port" --secret "$secret" --timeout 30)
"$TERN_RUN" -n 2 --rank-offset 0 "${common[@]}" python3 "$WORK/rdv.py" >"$WORK/a" 2>&1 &
pid_a=$!
"$TERN_RUN" -n 2 --rank-offset 2 "${common[@]}" python3 "$WORK/rdv.py" >"$WORK/b" 2>&1 &
pid_b=$!
rc_a=0 rc_b=0
wait "$pid_a" || rc_a=$?
wait "$pid_b" || rc_b=$?
expect_eq "$rc_a $rc_b" "0 0" "two tern-runs forming one job ($(cat "$WORK/a" "$WORK/b"))"
grep -q '^\[0\] root saw ranks \[0, 1, 2, 3\]$' "$WORK/a" || fail "root did not see all ranks: $(cat "$WORK/a")"
grep -q '^\[3\] rank 3 released$' "$WORK/b" || fail "rank 3 not released: $(cat "$WORK/b")"

expect_usage_error() {  # what, then tern-run arguments
  local what=$1
  shift
  run_tern "$@"
  expect_eq "$RC" 2 "exit code for $what"
  expect_eq "$(wc -l <<<"$ERR")" 1 "lines of message for $what"
  expect_match "$ERR" '^tern-run: ' "message for $what"
}

expect_usage_error "part of a job without --root-addr" -n 2 --rank-offset 2 --world-size 4 --secret "$secret" true
expect_match "$ERR" 'root-addr' "message names --root-addr"
expect_usage_error "part of a job without --secret" -n 2 --rank-offset 2 --world-size 4 --root-addr 127.0.0.1:1 true
expect_match "$ERR" 'secret' "message names --secret"
expect_usage_error "ranks beyond --world-size" -n 3 --rank-offset 2 --world-size 4 --root-addr 127.0.0.1:1 \
  --secret "$secret" true
expect_usage_error "strided ranks beyond --world-size" -n 2 --rank-offset 1 --rank-stride 3 --world-size 4 \
  --root-addr 127.0.0.1:1 --secret "$secret" true
expect_usage_error "negative --rank-offset" -n 1 --rank-offset -1 true
expect_usage_error "--rank-stride 0" -n 1 --rank-stride 0 true
expect_usage_error "--world-size 0" -n 1 --world-size 0 true
expect_usage_error "short --secret" -n 1 --secret abc true
expect_usage_error "non-hex --secret" -n 1 --secret 0123456789abcdef0123456789abcdeg true
expect_usage_error "-x TERN_SECRET" -n 1 -x TERN_SECRET="$secret" true
expect_match "$ERR" '--secret' "-x TERN_SECRET points to --secret"

run_tern --help
for word in --rank-offset --rank-stride --world-size --secret; do
  grep -q -- "$word" <<<"$OUT" || fail "--help does not mention $word"
done

echo PASS
