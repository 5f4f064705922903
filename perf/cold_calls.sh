#!/usr/bin/env bash
# Cold calls: does a short run, the kind a user types, report what a long warmed-up run reports? Runs one of tern's
# perf binaries (all_reduce_perf unless PERF names another) twice per round, once short (-n 10 -w 1 by default) and
# once long (-n 100 -w 20), alternating which goes first, REPEATS rounds, and compares the median out-of-place time
# per size. One-time costs (huge-page collapse, first-touch faults, schedule building, the network model's first
# calls, the shared-memory CMA learner's checks) show up as a short run slower than the long one. Target
# (issue 18): every size within 15%. Open MPI's driver (mpi_collectives, the collective PERF names) runs beside it
# with the same two settings, so that a short run's cost that every library pays on this machine (caches and TLBs
# cold for fresh buffers, a VM's idle vCPUs) is told from tern's own.
#
#   perf/cold_calls.sh [BUILD_DIR=build]
#
# Environment (defaults in brackets): PERF [all_reduce_perf] MINBYTES [8] MAXBYTES [256M] STEPFACTOR [4]
#   REPEATS [3] NP [2]
#   SHORT ["-n 10 -w 1"] LONG ["-n 100 -w 20"] TERN_RUN_ARGS (extra tern-run arguments, e.g. "-x TERN_SHM_DISABLE=1"
#   for TCP) TOLERANCE [0.15] RESULTS_DIR [BUILD_DIR/perf-compare/cold-calls-DATE]
#   MPI [1 where mpirun and BUILD_DIR/bin/mpi_collectives exist; 0 skips Open MPI] MPIRUN [mpirun]
#   MPI_ARGS ["--bind-to core --mca pml ob1 --mca btl vader,self", shared memory as tern's default]
# A benchmark, not a test: exit code 0 whatever the ratios, non-zero only when a run failed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=compare/common.sh
source "$here/compare/common.sh"

build=$(cmp_resolve_build "${1:-build}")
PERF=${PERF:-all_reduce_perf}
MINBYTES=${MINBYTES:-8} MAXBYTES=${MAXBYTES:-256M} STEPFACTOR=${STEPFACTOR:-4} REPEATS=${REPEATS:-3} NP=${NP:-2}
SHORT=${SHORT:--n 10 -w 1} LONG=${LONG:--n 100 -w 20} TOLERANCE=${TOLERANCE:-0.15}
CMP_TIMEOUT=${CMP_TIMEOUT:-900}
results=${RESULTS_DIR:-$build/perf-compare/cold-calls-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$results"
read -r -a run_args <<<"${TERN_RUN_ARGS:-}"
read -r -a short_args <<<"$SHORT"
read -r -a long_args <<<"$LONG"
MPIRUN=${MPIRUN:-mpirun}
read -r -a mpi_args <<<"${MPI_ARGS:---bind-to core --mca pml ob1 --mca btl vader,self}"
mpi_coll=${PERF%_perf}
mpi_coll=${mpi_coll/all_reduce/allreduce}
mpi_coll=${mpi_coll/all_gather/allgather}
MPI_ALLREDUCE=$build/bin/mpi_collectives
if [[ ${MPI:-1} == 1 ]] && cmp_have_mpi; then MPI=1; else MPI=0; fi

run() {  # run short|long
  local -n args=${1}_args
  cmp_run "$results/$1.log" "$build/bin/tern-run" -n "$NP" "${run_args[@]}" -- "$build/bin/$PERF" \
    -b "$(cmp_bytes "$MINBYTES")" -e "$(cmp_bytes "$MAXBYTES")" -f "$STEPFACTOR" "${args[@]}" >/dev/null
  ((MPI)) || return 0
  # Open MPI refuses to run as root without --allow-run-as-root; harmless otherwise.
  cmp_run "$results/mpi-$1.log" "$MPIRUN" --allow-run-as-root -np "$NP" "${mpi_args[@]}" "$MPI_ALLREDUCE" \
    --coll "$mpi_coll" -b "$(cmp_bytes "$MINBYTES")" -e "$(cmp_bytes "$MAXBYTES")" -f "$STEPFACTOR" "${args[@]}" \
    >/dev/null
}

cmp_machine_info | tee "$results/conditions.txt"
failed=0
for ((r = 0; r < REPEATS; r++)); do
  while read -r kind; do
    echo "## round $((r + 1)): $kind"
    run "$kind" || failed=1
  done < <(cmp_order "$r" short long)
done
for kind in short long; do
  cmp_parse_nccl out <"$results/$kind.log" >"$results/$kind.rows"
  ((MPI)) && cmp_parse_nccl out <"$results/mpi-$kind.log" >"$results/mpi-$kind.rows"
done
{
  echo "# ===== cold calls: $PERF '$SHORT' against '$LONG', $NP ranks ${TERN_RUN_ARGS:-}, medians of $REPEATS"
  echo "# ratio = long median time / short median time: >= $(awk -v t="$TOLERANCE" 'BEGIN { printf "%.2f", 1 / (1 + t) }')x" \
    "means the short run is within $(awk -v t="$TOLERANCE" 'BEGIN { printf "%d", t * 100 }')% of the long one"
  cmp_report "$results/short.rows" "$results/long.rows" short long \
    "$MINBYTES-$MAXBYTES:$(awk -v t="$TOLERANCE" 'BEGIN { printf "%.4f", 1 / (1 + t) }')"
  if ((MPI)); then
    echo "# ----- the same for Open MPI (mpi_collectives --coll $mpi_coll, ${mpi_args[*]}): its own short/long ratio"
    cmp_report "$results/mpi-short.rows" "$results/mpi-long.rows" short long \
      "$MINBYTES-$MAXBYTES:$(awk -v t="$TOLERANCE" 'BEGIN { printf "%.4f", 1 / (1 + t) }')"
    echo "# ----- short runs side by side: ratio = Open MPI's short median time / tern's (>= 1: tern's short run is faster)"
    cmp_report "$results/short.rows" "$results/mpi-short.rows" tern mpi "$MINBYTES-$MAXBYTES:1"
  fi
} | tee "$results/report.txt"
echo "# results: $results"
exit "$failed"
