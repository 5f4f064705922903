#!/usr/bin/env bash
# tern vs Open MPI allreduce over shared memory on one host, same sizes, one invocation.
#
#   perf/compare_shm.sh [BUILD_DIR=build]
#
# Section 1: 2 ranks, 8 B..256 MB. tern's all_reduce_perf (shared memory enabled) against
#   mpirun --bind-to core -np 2 mpi_allreduce (pml ob1, btl vader: Open MPI's shared-memory path).
#   Targets: tern busbw >= 2x MPI for 1 MB..256 MB, tern time <= MPI time for 8 B..64 KB.
#   Also reports tern and MPI busbw as a fraction of this core's streaming-add bandwidth (stream_add).
# Section 2: 4 ranks on however many cores there are (oversubscribed on small machines), 1 MB..64 MB,
#   mpirun --oversubscribe --bind-to none (tern-run --bind-to none likewise). Target: tern >= MPI.
# It is a benchmark, not a test: the exit code is 0 whatever the ratios and non-zero only when a tool failed or
# produced no numbers.
#
# The fair protocol (perf/compare/common.sh): both sides out of place, on buffers from the same allocator
# (perf/common/host_buffer.hpp), both bound one rank per CPU in section 1 (tern-run --bind-to auto, mpirun
# --bind-to core) and unbound in section 2; REPEATS (>= 3) runs per size, medians with the spread, verdicts on the
# median; which tool runs first alternates from size group to size group and from repeat to repeat.
#
# Huge pages. tern collapses the pages of its callers' large buffers into huge pages itself (MADV_COLLAPSE,
# TERN_SHM_HUGEPAGES), which no other library does, so "same buffers" is not "same memory" unless the pages are
# fixed from outside. Each section therefore runs once per protocol in HUGEPAGES:
#   none      huge pages for neither side: PERF_HUGEPAGES=none (MADV_NOHUGEPAGE on every large buffer, both tools)
#             and TERN_SHM_HUGEPAGES=0                                                      fair
#   madvise   huge pages for both sides: PERF_HUGEPAGES=madvise (MADV_HUGEPAGE before the first touch, both
#             tools) and TERN_SHM_HUGEPAGES=0 (so tern adds nothing of its own)              fair
#   collapse  tern's own MADV_COLLAPSE on, both sides' buffers as the kernel gives them (PERF_HUGEPAGES=default):
#             a tern feature, reported as its own row, not a like-for-like comparison
# Under each protocol the report says how many MiB of the buffers the kernel put on huge pages at allocation
# (AnonHugePages of /proc/self/smaps, printed by host_buffer.hpp); madvise needs THP "madvise" or "always".
#
# Environment (defaults in brackets):
#   MINBYTES [8] MAXBYTES [256M] STEPFACTOR [2]          section 1 sweep (K/M/G suffixes, powers of 1024)
#   ITER_BYTES [4G] MIN_ITERS [5] MAX_ITERS [20000]       iterations per size ~ ITER_BYTES/size, clamped (sub-us
#                                                         calls need many: 20000 x 0.4 us is still only 8 ms)
#   BW_TARGET [2] BW_RANGE [1M-256M] LAT_TARGET [1] LAT_RANGE [8-64K]
#   HUGEPAGES ["none madvise collapse"]                   the protocols above, in this order
#   OVERSUB [1] OVERSUB_NP [4] OVERSUB_MINBYTES [1M] OVERSUB_MAXBYTES [64M] OVERSUB_ITER_BYTES [1G]
#   OVERSUB_MAX_ITERS [200] OVERSUB_TARGET [1]
#   STREAM [1]: run stream_add over the section 1 sizes >= 1M
#   WARMUP [iters/5, 2..WARMUP_MAX]   WARMUP_MAX [1000]   REPEATS [3] (median row per size, with the spread)
#   MPI_MCA ["--mca pml ob1 --mca btl vader,self"]   MPI_ARGS: more mpirun arguments (e.g. "-x VAR=value")
#   TERN_RUN TERN_PERF MPI_ALLREDUCE STREAM_ADD MPIRUN   binaries [BUILD_DIR/bin/..., mpirun]
#   TERN_RUN_ARGS TERN_ARGS MPI_DRIVER_ARGS   extra arguments for tern's launcher / all_reduce_perf / mpi_allreduce
#   RESULTS_DIR [BUILD_DIR/perf-compare/shm-DATE]   CMP_TIMEOUT [900]
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=compare/common.sh
source "$here/compare/common.sh"

build=$(cmp_resolve_build "${1:-build}")
MINBYTES=${MINBYTES:-8} MAXBYTES=${MAXBYTES:-256M} STEPFACTOR=${STEPFACTOR:-2}
ITER_BYTES=${ITER_BYTES:-4G} MIN_ITERS=${MIN_ITERS:-5} MAX_ITERS=${MAX_ITERS:-20000} WARMUP=${WARMUP:-}
WARMUP_MAX=${WARMUP_MAX:-1000}
BW_TARGET=${BW_TARGET:-2} BW_RANGE=${BW_RANGE:-1M-256M} LAT_TARGET=${LAT_TARGET:-1} LAT_RANGE=${LAT_RANGE:-8-64K}
OVERSUB=${OVERSUB:-1} OVERSUB_NP=${OVERSUB_NP:-4} OVERSUB_MINBYTES=${OVERSUB_MINBYTES:-1M}
OVERSUB_MAXBYTES=${OVERSUB_MAXBYTES:-64M} OVERSUB_ITER_BYTES=${OVERSUB_ITER_BYTES:-1G}
OVERSUB_MAX_ITERS=${OVERSUB_MAX_ITERS:-200} OVERSUB_TARGET=${OVERSUB_TARGET:-1}
STREAM=${STREAM:-1} REPEATS=${REPEATS:-3} HUGEPAGES=${HUGEPAGES:-none madvise collapse}
TERN_RUN=${TERN_RUN:-$build/bin/tern-run}
TERN_PERF=${TERN_PERF:-$build/bin/all_reduce_perf}
MPI_ALLREDUCE=${MPI_ALLREDUCE:-$build/bin/mpi_allreduce}
STREAM_ADD=${STREAM_ADD:-$build/bin/stream_add}
MPIRUN=${MPIRUN:-mpirun}
read -r -a mpi_mca <<<"${MPI_MCA:-$(cmp_mpi_mca shm)}"
read -r -a mpi_args <<<"${MPI_ARGS:-}"
read -r -a tern_run_args <<<"${TERN_RUN_ARGS:-}"
read -r -a tern_args <<<"${TERN_ARGS:-}"
read -r -a mpi_driver_args <<<"${MPI_DRIVER_ARGS:-}"
results=${RESULTS_DIR:-$build/perf-compare/shm-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$results" || cmp_die "cannot create $results"

failed=0
have_tern=1
have_mpi=1

# protocol_env PROTOCOL TOOL : the environment (VAR=value words) a tool runs with under a huge-page protocol.
protocol_env() {
  case $1/$2 in
    none/tern) echo PERF_HUGEPAGES=none TERN_SHM_HUGEPAGES=0 ;;
    none/mpi) echo PERF_HUGEPAGES=none ;;
    madvise/tern) echo PERF_HUGEPAGES=madvise TERN_SHM_HUGEPAGES=0 ;;
    madvise/mpi) echo PERF_HUGEPAGES=madvise ;;
    collapse/tern) echo PERF_HUGEPAGES=default TERN_SHM_HUGEPAGES=1 ;;
    collapse/mpi) echo PERF_HUGEPAGES=default ;;
    *) cmp_die "unknown huge-page protocol '$1' (HUGEPAGES: none, madvise, collapse)" ;;
  esac
}

protocol_title() {
  case $1 in
    none) echo "huge pages for neither side (PERF_HUGEPAGES=none, TERN_SHM_HUGEPAGES=0): fair" ;;
    madvise) echo "MADV_HUGEPAGE on both sides' buffers (PERF_HUGEPAGES=madvise, TERN_SHM_HUGEPAGES=0): fair" ;;
    collapse) echo "tern's own MADV_COLLAPSE (TERN_SHM_HUGEPAGES=1), both sides' buffers as the kernel gives them:" \
      "a tern feature, not like for like" ;;
  esac
}

# run_section TAG NP MIN MAX BUDGET MAX_ITERS PROTOCOL TERN_BIND MPI_PLACEMENT... : runs tern and MPI over the
# sweep, REPEATS times, the first tool alternating, leaving $results/TAG-tern.rows and $results/TAG-mpi.rows.
run_section() {
  local tag=$1 np=$2 min=$3 max=$4 budget=$5 max_it=$6 protocol=$7 tern_bind=$8
  shift 8
  local placement=("$@") plan rep first last iters warm group tool e tern_x=() mpi_x=()
  for e in $(protocol_env "$protocol" tern); do tern_x+=(-x "$e"); done
  for e in $(protocol_env "$protocol" mpi); do mpi_x+=(-x "$e"); done
  plan=$(cmp_plan "$min" "$max" "$STEPFACTOR" "$budget" "$MIN_ITERS" "$max_it" "$WARMUP" "$WARMUP_MAX") || exit 2
  : >"$results/$tag-tern.log"
  : >"$results/$tag-mpi.log"
  for ((rep = 1; rep <= REPEATS; rep++)); do
    group=0
    while read -r first last iters warm; do
      for tool in $(cmp_order $((group + rep - 1)) tern mpi); do
        if [[ $tool == tern ]] && ((have_tern)); then
          cmp_run "$results/$tag-tern.log" "$TERN_RUN" -n "$np" --bind-to "$tern_bind" "${tern_x[@]}" \
            "${tern_run_args[@]}" "$TERN_PERF" -b "$first" -e "$last" -f "$STEPFACTOR" -n "$iters" -w "$warm" \
            -d float -o sum "${tern_args[@]}" || failed=1
        elif [[ $tool == mpi ]] && ((have_mpi)); then
          # Open MPI refuses to run as root without --allow-run-as-root; harmless otherwise.
          cmp_run "$results/$tag-mpi.log" "$MPIRUN" --allow-run-as-root "${placement[@]}" -np "$np" "${mpi_x[@]}" \
            "${mpi_mca[@]}" "${mpi_args[@]}" "$MPI_ALLREDUCE" -b "$first" -e "$last" -f "$STEPFACTOR" -n "$iters" \
            -w "$warm" "${mpi_driver_args[@]}" || failed=1
        fi
      done
      group=$((group + 1))
    done <<<"$plan"
  done
  cmp_parse_nccl out <"$results/$tag-tern.log" >"$results/$tag-tern.rows"
  cmp_parse_nccl out <"$results/$tag-mpi.log" >"$results/$tag-mpi.rows"
  ((have_tern)) && [[ ! -s $results/$tag-tern.rows ]] && echo "# tern produced no result rows ($tag)" && failed=1
  ((have_mpi)) && [[ ! -s $results/$tag-mpi.rows ]] && echo "# mpi produced no result rows ($tag)" && failed=1
  return 0
}

# stream_fractions : tern and MPI busbw per size as a fraction of stream_add's add bandwidth at the same size.
stream_fractions() {
  awk '
    FILENAME == ARGV[1] { add[$1] = $2; cp[$1] = $3; next }
    FILENAME == ARGV[2] { t[$1] = $2; next }
    { m[$1] = $2 }
    END {
      printf "%8s  %11s  %11s  %11s  %11s  %11s\n", "size", "add GB/s", "tern busbw", "tern/add", "mpi busbw",
             "mpi/add"
      n = 0
      for (s in add) sizes[++n] = s + 0
      for (i = 2; i <= n; i++) { v = sizes[i]; for (j = i - 1; j >= 1 && sizes[j] > v; j--) sizes[j + 1] = sizes[j]; sizes[j + 1] = v }
      for (k = 1; k <= n; k++) {
        s = sizes[k]
        h = s >= 1048576 ? (s / 1048576) "M" : (s >= 1024 ? (s / 1024) "K" : s)
        printf "%8s  %11.2f  %11s  %11s  %11s  %11s\n", h, add[s],
               t[s] == "" ? "-" : sprintf("%.2f", t[s]), t[s] == "" ? "-" : sprintf("%.0f%%", 100 * t[s] / add[s]),
               m[s] == "" ? "-" : sprintf("%.2f", m[s]), m[s] == "" ? "-" : sprintf("%.0f%%", 100 * m[s] / add[s])
      }
    }' "$1" "$2" "$3"
}

main() {
  local p
  for p in $HUGEPAGES; do protocol_env "$p" tern >/dev/null; done
  echo "# compare_shm: tern vs Open MPI allreduce, float32 sum, shared memory on one host"
  cmp_machine_info
  echo "# section 1: 2 ranks, $MINBYTES..$MAXBYTES x$STEPFACTOR, ~$ITER_BYTES per size ($MIN_ITERS..$MAX_ITERS" \
    "iterations); targets: median ratio >= ${BW_TARGET}x over $BW_RANGE, >= ${LAT_TARGET}x (time) over $LAT_RANGE"
  ((OVERSUB)) && echo "# section 2: $OVERSUB_NP ranks on $(nproc) cores, $OVERSUB_MINBYTES..$OVERSUB_MAXBYTES," \
    "target >= ${OVERSUB_TARGET}x"
  echo "# huge-page protocols: $HUGEPAGES; repeats=$REPEATS; order alternates per size group; results: $results"
  cmp_busy_note "before the runs"
  echo "#"
  cmp_have_tern || have_tern=0 failed=1
  cmp_have_mpi || have_mpi=0 failed=1

  for p in $HUGEPAGES; do
    echo "# ----- protocol $p: $(protocol_title "$p")"
    run_section "s1-$p" 2 "$MINBYTES" "$MAXBYTES" "$ITER_BYTES" "$MAX_ITERS" "$p" auto --bind-to core
    if ((OVERSUB)); then
      run_section "s2-$p" "$OVERSUB_NP" "$OVERSUB_MINBYTES" "$OVERSUB_MAXBYTES" "$OVERSUB_ITER_BYTES" \
        "$OVERSUB_MAX_ITERS" "$p" none --oversubscribe --bind-to none
    fi
  done

  local stream_rows=""
  if ((STREAM)); then
    local smin
    smin=$(cmp_bytes "$MINBYTES")
    ((smin < 1048576)) && smin=1048576
    if [[ -x $STREAM_ADD ]] && (($(cmp_bytes "$MAXBYTES") >= smin)); then
      cmp_run "$results/stream.log" "$STREAM_ADD" -b "$smin" -e "$MAXBYTES" -f "$STEPFACTOR" || failed=1
      cmp_parse_stream <"$results/stream.log" >"$results/stream.rows"
      stream_rows=$results/stream.rows
    else
      echo "# stream_add: $STREAM_ADD not built or no sizes >= 1M; skipping the bandwidth ceiling"
    fi
  fi

  for p in $HUGEPAGES; do
    echo
    echo "# ===== section 1, protocol $p: $(protocol_title "$p")"
    echo "# tern vs Open MPI, 2 ranks, shared memory, out-of-place; medians of $REPEATS runs, time in us, busbw GB/s"
    echo "# spread = (slowest - fastest) / median run time, /runs; ratio = mpi time / tern time (medians); PASS" \
      "when >= target"
    echo "# huge pages: tern $(cmp_hugepage_summary "$results/s1-$p-tern.log"); mpi" \
      "$(cmp_hugepage_summary "$results/s1-$p-mpi.log")"
    cmp_report "$results/s1-$p-tern.rows" "$results/s1-$p-mpi.rows" tern mpi \
      "$LAT_RANGE:$LAT_TARGET $BW_RANGE:$BW_TARGET"
    if [[ -n $stream_rows && -s $stream_rows ]]; then
      echo
      echo "# busbw (median) as a fraction of one core's streaming add (c = a + b, 3 x bytes counted; stream_add)"
      stream_fractions "$stream_rows" "$results/s1-$p-tern.rows" "$results/s1-$p-mpi.rows"
    fi
  done
  if ((OVERSUB)); then
    for p in $HUGEPAGES; do
      echo
      echo "# ===== section 2, protocol $p: tern vs Open MPI, $OVERSUB_NP ranks on $(nproc) cores (unbound," \
        "--oversubscribe); $(protocol_title "$p")"
      cmp_report "$results/s2-$p-tern.rows" "$results/s2-$p-mpi.rows" tern mpi \
        "$OVERSUB_MINBYTES-$OVERSUB_MAXBYTES:$OVERSUB_TARGET"
    done
  fi
  echo
  echo "# headline: the fair protocols (none, madvise); collapse shows what tern's own huge-page feature adds"
  cmp_busy_note "after the runs"
  cmp_status "$failed" "$results"
}

cmp_run_main "$results"
