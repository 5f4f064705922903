#!/usr/bin/env bash
# Cold calls: does a short run, the kind a user types, report what a long warmed-up run reports? Runs one of tern's
# perf binaries (all_reduce_perf unless PERF names another) twice per round, once short (-n 10 -w 1 by default) and
# once long (-n 100 -w 20), alternating which goes first, REPEATS rounds, and compares the median out-of-place time
# per size. One-time costs (huge-page collapse, first-touch faults, schedule building, the network model's first
# calls, the shared-memory CMA learner's checks) show up as a short run slower than the long one. So does the host's
# own return from idle, which memory_ramp (printed first, with the machine's conditions) measures without tern. Target
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
#   MPI [1 where mpirun and the driver exist; 0 skips Open MPI] MPIRUN [mpirun]
#   MPI_COLLECTIVES [BUILD_DIR/bin/mpi_collectives] MPI_ARGS [placement as compare_collectives.sh: --bind-to core, or
#   --oversubscribe --bind-to none where NP exceeds the CPUs; then "--mca pml ob1 --mca btl vader,self", or
#   "tcp,self --mca btl_tcp_if_include lo" where TERN_RUN_ARGS sets TERN_SHM_DISABLE=1]
# Broadcast side by side takes tern's in-place column, as MPI_Bcast only has that form (compare/common.sh).
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
# shellcheck disable=SC2034  # read through the namerefs of run_tern and run_mpi
read -r -a short_args <<<"$SHORT"
# shellcheck disable=SC2034
read -r -a long_args <<<"$LONG"
MPIRUN=${MPIRUN:-mpirun}
case $PERF in
  all_reduce_perf) mpi_coll=allreduce ;;
  all_gather_perf) mpi_coll=allgather ;;
  broadcast_perf | reduce_perf | reduce_scatter_perf | alltoall_perf | sendrecv_perf) mpi_coll=${PERF%_perf} ;;
  *) mpi_coll="" ;;
esac
if ((NP > $(cmp_usable_cpus | wc -l))); then mpi_place="--oversubscribe --bind-to none"; else mpi_place="--bind-to core"; fi
mpi_transport=shm
[[ ${TERN_RUN_ARGS:-} == *TERN_SHM_DISABLE=1* ]] && mpi_transport=tcp
read -r -a mpi_args <<<"${MPI_ARGS-$mpi_place $(cmp_mpi_mca "$mpi_transport")}"
MPI_ALLREDUCE=${MPI_COLLECTIVES:-$build/bin/mpi_collectives}  # the name cmp_have_mpi checks
if [[ ${MPI:-1} != 1 ]]; then
  MPI=0
elif [[ -z $mpi_coll ]]; then
  echo "# mpi: no Open MPI counterpart for $PERF; MPI columns will be empty"
  MPI=0
elif cmp_have_mpi; then
  MPI=1
else
  MPI=0
fi
tern_bcast_place=out
[[ $mpi_coll == broadcast ]] && tern_bcast_place=in

run_tern() {  # run_tern short|long
  local -n args=${1}_args
  cmp_run "$results/$1.log" "$build/bin/tern-run" -n "$NP" "${run_args[@]}" -- "$build/bin/$PERF" \
    -b "$(cmp_bytes "$MINBYTES")" -e "$(cmp_bytes "$MAXBYTES")" -f "$STEPFACTOR" "${args[@]}" >/dev/null
}
run_mpi() {  # run_mpi short|long
  local -n args=${1}_args
  # Open MPI refuses to run as root without --allow-run-as-root; harmless otherwise.
  cmp_run "$results/mpi-$1.log" "$MPIRUN" --allow-run-as-root -np "$NP" "${mpi_args[@]}" "$MPI_ALLREDUCE" \
    --coll "$mpi_coll" -b "$(cmp_bytes "$MINBYTES")" -e "$(cmp_bytes "$MAXBYTES")" -f "$STEPFACTOR" "${args[@]}" \
    >/dev/null
}
run() {  # run short|long ROUND: tern and (with MPI) Open MPI, which goes first alternating with the round
  local rc=0 tool
  for tool in $(cmp_order "$2" tern mpi); do
    case $tool in
      tern) run_tern "$1" || rc=1 ;;
      mpi) ((!MPI)) || run_mpi "$1" || rc=1 ;;
    esac
  done
  return "$rc"
}

cmp_machine_info | tee "$results/conditions.txt"
# How the host itself returns from idle, with no library involved (perf/compare/memory_ramp.cpp): where the first
# passes after a pause run slower, a short run's first large sizes pay that whatever the library.
if [[ -x $build/bin/memory_ramp ]]; then
  "$build/bin/memory_ramp" --idle-ms 1000 | tee -a "$results/conditions.txt"
fi
failed=0
for ((r = 0; r < REPEATS; r++)); do
  while read -r kind; do
    echo "## round $((r + 1)): $kind"
    run "$kind" "$r" || failed=1
  done < <(cmp_order "$r" short long)
done
for kind in short long; do
  cmp_parse_nccl out <"$results/$kind.log" >"$results/$kind.rows"
  ((MPI)) && cmp_parse_nccl out <"$results/mpi-$kind.log" >"$results/mpi-$kind.rows"
done
((MPI)) && cmp_parse_nccl "$tern_bcast_place" <"$results/short.log" >"$results/short-vs-mpi.rows"
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
    echo "# ----- short runs side by side: ratio = Open MPI's short median time / tern's (>= 1: tern's short run is" \
      "faster), tern's $([[ $tern_bcast_place == in ]] && echo in-place || echo out-of-place) column"
    cmp_report "$results/short-vs-mpi.rows" "$results/mpi-short.rows" tern mpi "$MINBYTES-$MAXBYTES:1"
  fi
} | tee "$results/report.txt"
echo "# results: $results"
exit "$failed"
