#!/usr/bin/env bash
# bench.sh: every comparison and acceptance benchmark in one go, with the fair protocol, into one report.
#
#   perf/bench.sh [BUILD_DIR=build]        (make bench BUILD=DIR)
#
# Runs, in this order (BENCH_ONLY picks a subset, by these names):
#   tcp      perf/compare_tcp.sh           tern vs Gloo (gloo::allreduce, faster of ring/bcube), TCP loopback
#   shm      perf/compare_shm.sh           tern vs Open MPI, shared memory, under the three huge-page protocols
#   compare  perf/compare.sh               tern vs Open MPI vs Gloo over TCP, one table and a PNG
#   ucx      perf/ucx_compare.sh           tern TCP vs tern UCX vs Open MPI TCP, and the simulated-cluster check
#   model    perf/validate_model.sh        the cost model checked on held-out sizes and repeats
#   hier     perf/cluster/hier_vs_ring.sh  hierarchical vs flat rings on the simulated cluster
#   speedup  perf/cluster/compress_speedup.sh   compressed vs uncompressed on the simulated cluster
#   forms    perf/cluster/compress_forms.sh     the two compressed forms and the cost model's pick
#   train    perf/train_cluster.sh         train_mlp DDP baseline / sign / no-overlap on the simulated cluster
# Every script follows the fair protocol by default (see perf/compare/common.sh and each script's header): both
# sides out of place on the same allocator, each tool in its best binding, the first tool rotating, medians of
# >= 3 runs with their spreads, targets judged on the medians; the cost model judged on held-out data only. The
# cluster scripts need root, ip and tc (otherwise they report "skipped").
#
# The report, BENCH_DIR/report.txt, has the machine, a summary line per script (exit status: 0 targets met or no
# targets, 1 a target missed, 2 a tool failed, 77 skipped; the compare scripts exit 0 whatever their ratios, so read
# their tables) and each script's result tables; every script's full
# output and results stay in BENCH_DIR/NAME/.
#
# Environment (defaults in brackets):
#   BENCH_ONLY ["tcp shm compare ucx model hier speedup forms train"]
#   QUICK [0]     1: a smoke run (tiny sizes, few iterations, still 3 repeats) that shows every script works in a
#                 few minutes; its numbers mean nothing
#   BENCH_DIR [BUILD_DIR/perf-bench/DATE]
#   Anything else is passed through to the scripts (e.g. REPEATS=5, ROUNDS=5, CMP_TIMEOUT, PERF_RT).
# Exit status: 0 when every script ran (whatever the targets), 2 when one failed to run.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=compare/common.sh
source "$here/compare/common.sh"

build=$(cmp_resolve_build "${1:-build}")
BENCH_ONLY=${BENCH_ONLY:-tcp shm compare ucx model hier speedup forms train}
QUICK=${QUICK:-0}
out=${BENCH_DIR:-$build/perf-bench/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" || cmp_die "cannot create $out"
report=$out/report.txt

# quick_env NAME : the VAR=value words of the smoke configuration of a script (nothing unless QUICK=1).
quick_env() {
  ((QUICK)) || return 0
  case $1 in
    tcp | compare) echo MINBYTES=1M MAXBYTES=2M ITER_BYTES=8M MIN_ITERS=2 MAX_ITERS=4 REPEATS=3 ;;
    shm) echo MINBYTES=1M MAXBYTES=4M ITER_BYTES=16M MIN_ITERS=2 MAX_ITERS=4 REPEATS=3 OVERSUB_MAXBYTES=2M \
      OVERSUB_ITER_BYTES=4M OVERSUB_MAX_ITERS=2 ;;
    ucx) echo MINBYTES=1M MAXBYTES=2M ITER_BYTES=4M MIN_ITERS=2 MAX_ITERS=4 REPEATS=3 CLUSTER_BYTES=4M \
      CLUSTER_ITERS=2 ;;
    model) echo MINBYTES=1M MAXBYTES=8M ITERS=3 WARMUP=1 REPEATS=3 CLUSTER_ITERS=2 ;;
    hier | speedup) echo SIZE=1M ITERS=2 ROUNDS=3 ;;
    forms) echo SIZE=1M ITERS=2 ROUNDS=3 CODECS=sign ;;
    train) echo ROUNDS=3 ;;
  esac
}

# run_one NAME : runs the script NAME stands for, its output in $out/NAME.log; prints "NAME STATUS SECONDS".
run_one() {
  local name=$1 cmd=() env_words=() start rc
  read -r -a env_words <<<"$(quick_env "$name")"
  case $name in
    tcp) cmd=(bash "$here/compare_tcp.sh" "$build") ;;
    shm) cmd=(bash "$here/compare_shm.sh" "$build") ;;
    compare) cmd=(bash "$here/compare.sh" "$build") ;;
    ucx) cmd=(bash "$here/ucx_compare.sh" "$build") ;;
    model) cmd=(bash "$here/validate_model.sh" "$build") ;;
    hier) cmd=(bash "$here/cluster/hier_vs_ring.sh" "$build/bin") ;;
    speedup) cmd=(bash "$here/cluster/compress_speedup.sh" "$build/bin") ;;
    forms) cmd=(bash "$here/cluster/compress_forms.sh" "$build/bin") ;;
    train)
      cmd=(bash "$here/train_cluster.sh" "$build/bin")
      ((QUICK)) && cmd+=(-- --epochs 1 --train-samples 2048 --test-samples 512 --hidden 64)
      ;;
    *) cmp_die "unknown benchmark '$name' in BENCH_ONLY" ;;
  esac
  mkdir -p "$out/$name"
  start=$(date +%s)
  {
    cmp_show_cmd env "${env_words[@]}" RESULTS_DIR="$out/$name" PERF_LOG="$out/$name/perf.log" "${cmd[@]}"
    env "${env_words[@]}" RESULTS_DIR="$out/$name" PERF_LOG="$out/$name/perf.log" "${cmd[@]}" </dev/null 2>&1
  } >"$out/$name.log"
  rc=$? # the script's: it is the last command in the braces
  echo "$name $rc $(($(date +%s) - start))"
}

# tables NAME : the part of a script's output a reader wants: from its first result heading on (compare scripts
# print every tool's raw table before it), or the whole output when it has no such heading.
tables() {
  local log=$out/$1.log
  if grep -qE '^(# =====|# held-out validation|# allreduce |# medians of)' "$log"; then
    awk '/^(# =====|# held-out validation|# allreduce |# medians of)/ { on = 1 } on && !/^\+ / && !/^\[[0-9]+\] /' "$log"
  else
    grep -vE '^\+ |^\[[0-9]+\] ' "$log"
  fi
}

status_text() {
  case $1 in
    0) echo "ran (exit 0)" ;;
    1) echo "ran; target missed (1)" ;;
    77) echo "skipped (see its log)" ;;
    *) echo "FAILED (exit $1)" ;;
  esac
}

main() {
  local name line rc secs failed=0 summary=()
  echo "# bench: ${BENCH_ONLY}$( ((QUICK)) && echo "   (QUICK=1: smoke run, the numbers mean nothing)")"
  cmp_machine_info
  cmp_busy_note "before the runs"
  echo "# results:   $out"
  for name in $BENCH_ONLY; do
    echo "# running $name ..." >&2
    line=$(run_one "$name")
    read -r _ rc secs <<<"$line"
    summary+=("$(printf '%-8s %-24s %6ss  %s' "$name" "$(status_text "$rc")" "$secs" "$out/$name.log")")
    [[ $rc == 0 || $rc == 1 || $rc == 77 ]] || failed=1
  done
  echo
  echo "# ===== summary"
  printf '%s\n' "${summary[@]}"
  for name in $BENCH_ONLY; do
    echo
    echo "################ $name ################"
    tables "$name"
  done
  cmp_busy_note "after the runs"
  return "$failed"
}

main | tee "$report"
rc=${PIPESTATUS[0]}
echo "# report: $report"
((rc == 0)) || exit 2
exit 0
