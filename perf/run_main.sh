#!/usr/bin/env bash
# `make run`: start local ranks with tools/tern-run and print the nccl-tests table for allreduce, first plain, then
# with each codec (when the build has compression), so a user sees the whole story in one screen.
set -euo pipefail
build=${1:-build}
np=${2:-4}
bin=$build/bin
run() {
  echo
  echo "## tern-run -n $np all_reduce_perf $*"
  "$bin/tern-run" -n "$np" --no-tag-output "$bin/all_reduce_perf" "$@"
}
run -b 8 -e 64M -f 4 -n 10 -w 2 -d float -o sum
if "$bin/all_reduce_perf" -h 2>&1 | grep -q -- "--compress"; then
  for codec in bf16 sign qsgd:4 topk:0.01; do
    if ! "$bin/tern-run" -n 1 --no-tag-output "$bin/all_reduce_perf" -b 4K -e 4K -n 1 -w 0 -c 0 -Z "$codec" \
        >/dev/null 2>&1; then
      echo "# (compression $codec not available in this build)"
      continue
    fi
    run -b 64K -e 64M -f 4 -n 10 -w 2 -d float -o sum -Z "$codec"
  done
fi
