#!/usr/bin/env bash
# How ternCommInitFromEnv gets the job secret, with ranks started directly as a launcher would start them:
# - on one host without TERN_SECRET: a random secret handed over through a file private to the user, gone after init;
# - a job spanning hosts without a secret refuses to start and says how to give one;
# - TERN_INSECURE=1 is the logged opt-out; TERN_SECRET_FILE and tern-run --secret-file give the secret by file;
# - a rank with another secret is refused with an authentication error naming the root's address.
#
#   env_secret_test.sh ENV_INIT_CHECK TERN_RUN
set -u
check=$1
tern_run=$2
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$dir"' EXIT
mkdir -m 700 "$dir/tmp"
export TMPDIR=$dir/tmp
unset TERN_SECRET TERN_SECRET_FILE TERN_INSECURE RANK WORLD_SIZE MASTER_ADDR MASTER_PORT
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=../common/rank_drill.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/rank_drill.sh"

# Two ranks with the given environment (NAME=VALUE words); outputs in $dir/out.R, exit codes in rc0 rc1.
launch2() {
  local port pids=() r
  drill_port || exit 1
  port=$DRILL_PORT
  for r in 0 1; do
    env TERN_RANK=$r TERN_WORLD_SIZE=2 TERN_ROOT_ADDR=127.0.0.1:$port "$@" "$check" >"$dir/out.$r" 2>&1 &
    pids+=($!)
  done
  rc0=0 rc1=0
  wait "${pids[0]}" || rc0=$?
  wait "${pids[1]}" || rc1=$?
  ROOT=127.0.0.1:$port
}

# 1. Single host, no secret given.
launch2
[[ "$rc0 $rc1" == "0 0" ]] || fail "single-host job without TERN_SECRET: exit $rc0 $rc1: $(cat "$dir"/out.*)"
private=$TMPDIR/tern-$(id -u)
[[ "$(stat -c %a "$private")" == 700 ]] || fail "$private is not mode 700"
left=$(ls "$private")
[[ -z "$left" ]] || fail "the single-host secret file was left behind: $left"

# 2. Spanning hosts without a secret: refused before any connection, with the ways out named.
env TERN_RANK=1 TERN_WORLD_SIZE=2 TERN_ROOT_ADDR=10.255.255.1:29999 "$check" >"$dir/out.multi" 2>&1
rc=$?
[[ $rc == 5 ]] || fail "multi-host job without a secret: exit $rc (want ternInvalidUsage=5): $(cat "$dir/out.multi")"
for word in TERN_SECRET TERN_SECRET_FILE secret-file TERN_INSECURE; do
  grep -q -- "$word" "$dir/out.multi" || fail "refusal does not mention $word: $(cat "$dir/out.multi")"
done

# 3. TERN_INSECURE=1: works, with a warning.
launch2 TERN_INSECURE=1
[[ "$rc0 $rc1" == "0 0" ]] || fail "TERN_INSECURE=1: exit $rc0 $rc1: $(cat "$dir"/out.*)"
grep -q "TERN_INSECURE=1" "$dir/out.0" || fail "no warning under TERN_INSECURE=1: $(cat "$dir/out.0")"

# 4. TERN_SECRET_FILE.
(umask 077; od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$dir/secret")
launch2 TERN_SECRET_FILE="$dir/secret"
[[ "$rc0 $rc1" == "0 0" ]] || fail "TERN_SECRET_FILE: exit $rc0 $rc1: $(cat "$dir"/out.*)"

# 5. tern-run --secret-file: the ranks get it by environment; a file others can read is refused.
out=$("$tern_run" -n 1 --no-tag-output --secret-file "$dir/secret" sh -c 'echo $TERN_SECRET')
[[ "$out" == "$(cat "$dir/secret")" ]] || fail "tern-run --secret-file: ranks saw '$out'"
"$tern_run" -n 2 --timeout 60 --secret-file "$dir/secret" "$check" >"$dir/out.run" 2>&1 ||
  fail "tern-run --secret-file job: $(cat "$dir/out.run")"
cp "$dir/secret" "$dir/open" && chmod 644 "$dir/open"
"$tern_run" -n 1 --secret-file "$dir/open" true 2>"$dir/err.run"
rc=$?
[[ $rc == 2 ]] || fail "tern-run took a secret file other users can read (exit $rc)"
grep -q "chmod 600" "$dir/err.run" || fail "tern-run's refusal: $(cat "$dir/err.run")"
if grep -q "$(cat "$dir/secret")" "$dir/err.run"; then fail "tern-run printed the secret"; fi

# 6. A rank with another secret is refused by authentication, naming the root.
s0=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
s1=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
drill_port || exit 1
port=$DRILL_PORT
TERN_TIMEOUT=3 TERN_RANK=0 TERN_WORLD_SIZE=2 TERN_ROOT_ADDR=127.0.0.1:$port TERN_SECRET=$s0 "$check" >"$dir/out.0" 2>&1 &
pid0=$!
TERN_TIMEOUT=3 TERN_RANK=1 TERN_WORLD_SIZE=2 TERN_ROOT_ADDR=127.0.0.1:$port TERN_SECRET=$s1 "$check" >"$dir/out.1" 2>&1
rc=$?
wait "$pid0"
[[ $rc == 6 ]] || fail "a rank with another secret: exit $rc (want ternRemoteError=6): $(cat "$dir/out.1")"
grep -q "authentication failed" "$dir/out.1" || fail "no authentication error: $(cat "$dir/out.1")"
grep -q "127.0.0.1:$port" "$dir/out.1" || fail "the error does not name the root: $(cat "$dir/out.1")"
echo "PASS"
