#!/usr/bin/env bash
# tern vs Gloo allreduce over TCP loopback, same sizes, same machine, one invocation.
#
#   perf/compare_tcp.sh [BUILD_DIR=build]
#
# Runs tern's all_reduce_perf with shared memory disabled (so it really goes through TCP) and Gloo's ring allreduce,
# 2 ranks each, interleaved size group by size group so both see the same machine state, then prints busbw side by
# side with tern/Gloo ratios against TARGET. It is a benchmark, not a test: the exit code is 0 whatever the ratios
# and non-zero only when a tool failed or produced no numbers.
#
# Environment (defaults in brackets):
#   MINBYTES [1M] MAXBYTES [256M] STEPFACTOR [2]   size sweep (K/M/G suffixes, powers of 1024)
#   ITER_BYTES [4G] MIN_ITERS [5] MAX_ITERS [200]   iterations per size ~ ITER_BYTES/size, clamped
#   WARMUP [iters/5, 2..20]   REPEATS [1] (median row per size)   NP [2]   TARGET [1.5]
#   GLOO_ALGO [ring]          ring | ring_chunked | halving_doubling | bcube | opts_ring | opts_bcube
#   TERN_RUN TERN_PERF GLOO_ALLREDUCE   binaries [BUILD_DIR/bin/...]
#   TERN_RUN_ARGS TERN_ARGS GLOO_ARGS   extra arguments for the launcher / all_reduce_perf / gloo_allreduce
#   RESULTS_DIR [BUILD_DIR/perf-compare/tcp-DATE]   raw logs, parsed rows, report.txt
#   CMP_TIMEOUT [900]  seconds before a single tool run is killed
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=compare/common.sh
source "$here/compare/common.sh"

build=$(cmp_resolve_build "${1:-build}")
MINBYTES=${MINBYTES:-1M} MAXBYTES=${MAXBYTES:-256M} STEPFACTOR=${STEPFACTOR:-2}
ITER_BYTES=${ITER_BYTES:-4G} MIN_ITERS=${MIN_ITERS:-5} MAX_ITERS=${MAX_ITERS:-200} WARMUP=${WARMUP:-}
REPEATS=${REPEATS:-1} NP=${NP:-2} TARGET=${TARGET:-1.5} GLOO_ALGO=${GLOO_ALGO:-ring}
TERN_RUN=${TERN_RUN:-$build/bin/tern-run}
TERN_PERF=${TERN_PERF:-$build/bin/all_reduce_perf}
GLOO_ALLREDUCE=${GLOO_ALLREDUCE:-$build/bin/gloo_allreduce}
read -r -a tern_run_args <<<"${TERN_RUN_ARGS:-}"
read -r -a tern_args <<<"${TERN_ARGS:-}"
read -r -a gloo_args <<<"${GLOO_ARGS:-}"
results=${RESULTS_DIR:-$build/perf-compare/tcp-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$results" || cmp_die "cannot create $results"

main() {
  local failed=0 have_tern=1 have_gloo=1
  echo "# compare_tcp: tern vs Gloo allreduce, float32 sum, $NP ranks over TCP loopback"
  cmp_machine_info
  echo "# sizes:     $MINBYTES..$MAXBYTES x$STEPFACTOR, ~$ITER_BYTES per size ($MIN_ITERS..$MAX_ITERS iterations)," \
    "repeats=$REPEATS, target tern/gloo >= ${TARGET}x"
  echo "# results:   $results"
  cmp_busy_note "before the runs"
  echo "#"

  cmp_have_tern || have_tern=0 failed=1
  cmp_have_gloo || have_gloo=0 failed=1

  local plan rep first last iters warm
  plan=$(cmp_plan "$MINBYTES" "$MAXBYTES" "$STEPFACTOR" "$ITER_BYTES" "$MIN_ITERS" "$MAX_ITERS" "$WARMUP") || exit 2
  : >"$results/tern.log"
  : >"$results/gloo.log"
  for ((rep = 1; rep <= REPEATS; rep++)); do
    while read -r first last iters warm; do
      if ((have_tern)); then
        cmp_run "$results/tern.log" "$TERN_RUN" -n "$NP" -x TERN_SHM_DISABLE=1 "${tern_run_args[@]}" "$TERN_PERF" \
          -b "$first" -e "$last" -f "$STEPFACTOR" -n "$iters" -w "$warm" -d float -o sum "${tern_args[@]}" || failed=1
      fi
      if ((have_gloo)); then
        # Each run gets its own key prefix so a half-finished earlier rendezvous can never be joined by mistake.
        cmp_launch_local "$NP" "$results/gloo.log" "$GLOO_ALLREDUCE" --store "$results/gloo-store" \
          --prefix "r$rep-$first" --algo "$GLOO_ALGO" -b "$first" -e "$last" -f "$STEPFACTOR" -n "$iters" \
          -w "$warm" -J "$results/gloo-r$rep-$first.json" "${gloo_args[@]}" || failed=1
      fi
    done <<<"$plan"
  done

  cmp_parse_nccl <"$results/tern.log" >"$results/tern.rows"
  cmp_parse_nccl <"$results/gloo.log" >"$results/gloo.rows"
  ((have_tern)) && [[ ! -s $results/tern.rows ]] && echo "# tern produced no result rows" && failed=1
  ((have_gloo)) && [[ ! -s $results/gloo.rows ]] && echo "# gloo produced no result rows" && failed=1

  echo
  echo "# ===== tern vs Gloo ($GLOO_ALGO), $NP ranks, TCP loopback: busbw in GB/s (tern: out-of-place), time in us"
  echo "# ratio = gloo time / tern time (= tern busbw / gloo busbw); PASS when >= TARGET"
  cmp_report "$results/tern.rows" "$results/gloo.rows" tern gloo "$MINBYTES-$MAXBYTES:$TARGET"
  cmp_busy_note "after the runs"
  cmp_status "$failed" "$results"
}

cmp_run_main "$results"
