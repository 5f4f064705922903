#!/usr/bin/env bash
# Bad command lines get one clear line and exit code 2; --help documents every option and the contract.
# shellcheck source=tern_run_lib.sh
source "$(dirname "$0")/tern_run_lib.sh"

expect_usage_error() {  # what, then tern-run arguments
  local what=$1
  shift
  run_tern "$@"
  expect_eq "$RC" 2 "exit code for $what"
  expect_eq "$(wc -l <<<"$ERR")" 1 "lines of message for $what"
  expect_match "$ERR" '^tern-run: ' "message for $what"
}

expect_usage_error "missing program" -n 2 tern-no-such-program-xyz
expect_match "$ERR" 'not found' "missing program message"
expect_usage_error "program path that does not exist" -n 2 ./tern-no-such-program-xyz
expect_usage_error "no -n" true
expect_usage_error "-n 0" -n 0 true
expect_usage_error "-n not a number" -n many true
expect_usage_error "no program" -n 2
expect_usage_error "unknown option" -n 2 --bogus true
expect_usage_error "-x without =" -n 1 -x FOO true
expect_usage_error "-x of a launcher variable" -n 1 -x TERN_RANK=5 true
expect_usage_error "bad --root-addr" -n 1 --root-addr localhost true
expect_usage_error "negative --grace-ms" -n 1 --grace-ms -5 true

run_tern --help
expect_eq "$RC" 0 "--help exit code"
for word in -n --root-addr -x --tag-output --no-tag-output --grace-ms --timeout TERN_RANK TERN_WORLD_SIZE \
  TERN_LOCAL_RANK TERN_LOCAL_SIZE TERN_ROOT_ADDR TERN_SECRET SIGTERM 124; do
  grep -q -- "$word" <<<"$OUT" || fail "--help does not mention $word"
done

# Everything after the program belongs to it, options included; `--` ends tern-run's options.
run_tern -n 1 --no-tag-output echo -n hi
expect_eq "$OUT" "hi" "program options"
run_tern -n 1 -- sh -c 'echo ok'
expect_eq "$OUT" "[0] ok" "-- before the program"

echo PASS
