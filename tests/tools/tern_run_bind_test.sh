#!/usr/bin/env bash
# tern-run --bind-to: core binds local rank i to the i-th usable CPU, none leaves the mask alone, auto binds only a
# whole job that fits the CPUs, and a bad value is a usage error.
# shellcheck disable=SC2016
# shellcheck source=tern_run_lib.sh
source "$(dirname "$0")/tern_run_lib.sh"

mapfile -t usable < <(python3 -c 'import os; print("\n".join(str(c) for c in sorted(os.sched_getaffinity(0))))')
ncpu=${#usable[@]}
show_mask='echo $TERN_LOCAL_RANK $(python3 -c "import os; print(\",\".join(map(str, sorted(os.sched_getaffinity(0)))))")'
all=$(IFS=,; echo "${usable[*]}")

run_tern -n 2 --bind-to core --no-tag-output sh -c "$show_mask"
expect_eq "$RC" 0 "exit code (core)"
mapfile -t lines < <(sort <<<"$OUT")
for r in 0 1; do
  expect_eq "${lines[$r]}" "$r ${usable[$((r % ncpu))]}" "--bind-to core, local rank $r"
done

run_tern -n 2 --bind-to none --no-tag-output sh -c "$show_mask"
mapfile -t lines < <(sort <<<"$OUT")
expect_eq "${lines[0]}" "0 $all" "--bind-to none keeps the launcher's mask"

# auto: more ranks than CPUs is left to the scheduler.
run_tern -n $((ncpu + 1)) --no-tag-output sh -c "$show_mask"
mapfile -t lines < <(sort <<<"$OUT")
expect_eq "${lines[0]}" "0 $all" "auto with more ranks than CPUs does not bind"

# auto: part of a larger job (another launcher binds its own ranks to the same CPUs) is not bound either.
run_tern -n 1 --world-size 2 --root-addr 127.0.0.1:1 --secret 0123456789abcdef0123456789abcdef --no-tag-output \
  sh -c "$show_mask"
expect_eq "$OUT" "0 $all" "auto on a part of a multi-node job does not bind"

if ((ncpu > 1)); then
  run_tern -n 2 --no-tag-output sh -c "$show_mask"
  mapfile -t lines < <(sort <<<"$OUT")
  expect_eq "${lines[1]}" "1 ${usable[1]}" "auto binds a whole job that fits"
fi

run_tern -n 1 --bind-to sockets true
expect_eq "$RC" 2 "bad --bind-to is a usage error"
expect_match "$ERR" "bind-to expects auto, core or none" "usage message"
echo PASS
