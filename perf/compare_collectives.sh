#!/usr/bin/env bash
# Every collective, tern vs Open MPI vs oneCCL (and Gloo over TCP), side by side on one host: same sizes, same
# transport, one table per collective and rank count, and the ratios tern / best other.
#
#   perf/compare_collectives.sh [BUILD_DIR=build]
#
#   # the full sweep on an idle machine (defaults: shared memory, 2 and 4 ranks, 8 B..256 MB x2, 3 repeats)
#   perf/compare_collectives.sh build
#   # a quick look: one repeat, a short range, two collectives
#   REPEATS=1 MINBYTES=1K MAXBYTES=1M COLLS="alltoall alltoallv" perf/compare_collectives.sh build
#
# Collectives (COLLS): allgather reduce_scatter broadcast reduce alltoall alltoallv sendrecv (allreduce too, when
# named). float32, sum where they reduce, root 0. A size means what it means in nccl-tests and tern's perf binaries:
# the gathered buffer for allgather, each rank's send buffer for reduce-scatter, alltoall and alltoallv, the one
# buffer otherwise (rounded down to a multiple of the ranks where it is split); busbw uses nccl-tests' factors.
# alltoallv sends MoE-shaped uneven splits (perf/compare/collectives.hpp, MoeSendCounts: a hot expert on rank 0,
# every sender splitting differently), the same splits in every tool.
#
# Tools: tern's perf binaries (BUILD_DIR/bin/*_perf; alltoallv: perf/compare/tern_alltoallv, the same splits and
# loop as the baselines), mpi_collectives --coll C under mpirun, and oneccl_collectives --coll C, which
# perf/compare/oneccl.sh installs from PyPI into BUILD_DIR/perf-venv-oneccl and compiles on first use (its header
# lists the CCL_* settings and why). oneCCL has every collective here; a tool without one would get an empty column.
# gloo_collectives --coll C (TRANSPORT=tcp, or named in TOOLS): the calls PyTorch's ProcessGroupGloo makes, over
# Gloo's only CPU transport, TCP (so on TRANSPORT=shm its column is what the gloo backend gives on one host); its
# ranks get CPUs of their own as in compare.sh (GLOO_BIND=split), and it has no reduce_scatter (an empty column).
#
# The fair protocol (perf/compare/common.sh): every tool out of place, except broadcast, which MPI_Bcast and
# oneCCL's broadcast only have in place, so tern's column is broadcast_perf's in-place one (its out-of-place one
# also has the root copy its input to its output, work the others do not do); buffers from the same allocator (perf/common/host_buffer.hpp); REPEATS (>= 3) runs per size,
# medians with their spread; the tool that runs first rotates from size group to size group and from repeat to
# repeat. Placement: NP <= CPUs binds one rank per CPU (tern-run --bind-to auto, mpirun --bind-to core, oneCCL's
# ranks taskset one CPU each); NP > CPUs leaves all unbound (mpirun --oversubscribe, which makes Open MPI yield
# when idle; oneCCL gets CCL_YIELD=sched_yield, see perf/compare/oneccl.sh), so that no library should spin on a
# core it does not own.
# Huge pages (HUGEPAGES): none (the default: PERF_HUGEPAGES=none for every tool, TERN_SHM_HUGEPAGES=0), madvise
# (PERF_HUGEPAGES=madvise for every tool, TERN_SHM_HUGEPAGES=0), both fair; collapse (tern's own MADV_COLLAPSE,
# PERF_HUGEPAGES=default) is a tern feature, not like for like. See compare_shm.sh.
# ratio = other median time / tern median time (> 1: tern is faster); tern/best is against the faster of the others
# at that size. It is a benchmark, not a test: exit code 0 whatever the ratios, non-zero only when a tool failed,
# was missing, or produced no numbers.
#
# Environment (defaults in brackets):
#   COLLS ["allgather reduce_scatter broadcast reduce alltoall alltoallv sendrecv"]   NPS ["2 4"]
#   TRANSPORT [shm]   shm | tcp (tern with TERN_SHM_DISABLE=1, Open MPI's TCP BTL and oneCCL's TCP provider, all on
#                     loopback)
#   MINBYTES [8] MAXBYTES [256M] STEPFACTOR [2]   size sweep (K/M/G suffixes, powers of 1024); STEPFACTOR=4 halves
#                     the sizes (8 B..128 MB from 8)
#   ITER_BYTES [1G] MIN_ITERS [5] MAX_ITERS [2000]   iterations per size ~ ITER_BYTES/size, clamped
#   WARMUP [iters/5, 2..WARMUP_MAX]   WARMUP_MAX [200]   REPEATS [3]   HUGEPAGES [none]   none | madvise | collapse
#   TOOLS [shm: "tern mpi oneccl"; tcp: "tern mpi oneccl gloo"]   which columns to run
#   GLOO_COLLECTIVES [BUILD_DIR/bin/gloo_collectives]   GLOO_BIND [split] split | core | none (more ranks than CPUs:
#                     none)
#   MPI_MCA [shm: "--mca pml ob1 --mca btl vader,self"; tcp: "--mca pml ob1 --mca btl tcp,self --mca
#            btl_tcp_if_include lo"]   MPI_ARGS: more mpirun arguments
#   TERN_RUN [BUILD_DIR/bin/tern-run]   TERN_BIN [BUILD_DIR/bin]   TERN_ALLTOALLV_PERF [TERN_BIN/tern_alltoallv]
#   MPI_COLLECTIVES [BUILD_DIR/bin/mpi_collectives]   MPIRUN [mpirun]
#   ONECCL, ONECCL_VENV, ONECCL_PIP, ONECCL_ENV, ONECCL_COLLECTIVES: see perf/compare/oneccl.sh
#   TERN_RUN_ARGS TERN_ARGS MPI_DRIVER_ARGS ONECCL_ARGS GLOO_ARGS   extra arguments for each tool
#   RESULTS_DIR [BUILD_DIR/perf-compare/collectives-TRANSPORT-DATE]   raw logs, rows, report.txt
#   CMP_TIMEOUT [900]  seconds before a single tool run is killed
#   PLACEMENT_PROBE [BUILD_DIR/bin/placement_probe]   run before each tool run: the cache-line round trip between the
#                     first two CPUs, listed under each table (on a VM, whether the vCPUs shared a cache in that run)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=compare/common.sh
source "$here/compare/common.sh"
# shellcheck source-path=SCRIPTDIR source=compare/oneccl.sh
source "$here/compare/oneccl.sh"

build=$(cmp_resolve_build "${1:-build}")
COLLS=${COLLS:-allgather reduce_scatter broadcast reduce alltoall alltoallv sendrecv}
NPS=${NPS:-2 4} TRANSPORT=${TRANSPORT:-shm}
default_tools="tern mpi oneccl"
[[ $TRANSPORT == tcp ]] && default_tools+=" gloo"
TOOLS=${TOOLS:-$default_tools}
MINBYTES=${MINBYTES:-8} MAXBYTES=${MAXBYTES:-256M} STEPFACTOR=${STEPFACTOR:-2}
ITER_BYTES=${ITER_BYTES:-1G} MIN_ITERS=${MIN_ITERS:-5} MAX_ITERS=${MAX_ITERS:-2000} WARMUP=${WARMUP:-}
WARMUP_MAX=${WARMUP_MAX:-200} REPEATS=${REPEATS:-3} HUGEPAGES=${HUGEPAGES:-none}
TERN_RUN=${TERN_RUN:-$build/bin/tern-run}
TERN_BIN=${TERN_BIN:-$build/bin}
TERN_ALLTOALLV_PERF=${TERN_ALLTOALLV_PERF:-$TERN_BIN/tern_alltoallv}
MPI_COLLECTIVES=${MPI_COLLECTIVES:-$build/bin/mpi_collectives}
GLOO_COLLECTIVES=${GLOO_COLLECTIVES:-$build/bin/gloo_collectives} GLOO_BIND=${GLOO_BIND:-split}
MPIRUN=${MPIRUN:-mpirun}
PLACEMENT_PROBE=${PLACEMENT_PROBE:-$build/bin/placement_probe}

case $TRANSPORT in
  shm)
    default_mca=$(cmp_mpi_mca shm) tern_transport=() transport_text="shared memory"
    ;;
  tcp)
    default_mca=$(cmp_mpi_mca tcp)
    tern_transport=(-x TERN_SHM_DISABLE=1) transport_text="TCP loopback"
    ;;
  *) cmp_die "TRANSPORT must be shm or tcp, not '$TRANSPORT'" ;;
esac
case $HUGEPAGES in
  none) tern_hp=(PERF_HUGEPAGES=none TERN_SHM_HUGEPAGES=0) other_hp=(PERF_HUGEPAGES=none) ;;
  madvise) tern_hp=(PERF_HUGEPAGES=madvise TERN_SHM_HUGEPAGES=0) other_hp=(PERF_HUGEPAGES=madvise) ;;
  collapse) tern_hp=(PERF_HUGEPAGES=default TERN_SHM_HUGEPAGES=1) other_hp=(PERF_HUGEPAGES=default) ;;
  *) cmp_die "HUGEPAGES must be none, madvise or collapse, not '$HUGEPAGES'" ;;
esac
cmp_bytes "$MINBYTES" >/dev/null
cmp_bytes "$MAXBYTES" >/dev/null
for c in $COLLS; do
  case $c in
    allreduce | allgather | reduce_scatter | broadcast | reduce | alltoall | alltoallv | sendrecv) ;;
    *) cmp_die "unknown collective '$c' in COLLS" ;;
  esac
done
for t in $TOOLS; do
  [[ $t == tern || $t == mpi || $t == oneccl || $t == gloo ]] ||
    cmp_die "unknown tool '$t' in TOOLS (tern, mpi, oneccl, gloo)"
done
[[ $REPEATS =~ ^[1-9][0-9]*$ ]] || cmp_die "REPEATS must be a positive integer"
read -r -a mpi_mca <<<"${MPI_MCA:-$default_mca}"
read -r -a mpi_args <<<"${MPI_ARGS:-}"
read -r -a tern_run_args <<<"${TERN_RUN_ARGS:-}"
read -r -a tern_args <<<"${TERN_ARGS:-}"
read -r -a mpi_driver_args <<<"${MPI_DRIVER_ARGS:-}"
read -r -a oneccl_args <<<"${ONECCL_ARGS:-}"
read -r -a gloo_args <<<"${GLOO_ARGS:-}"
results=${RESULTS_DIR:-$build/perf-compare/collectives-$TRANSPORT-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$results" || cmp_die "cannot create $results"
ncpu=$(cmp_usable_cpus | wc -l)

# tern_perf COLL : tern's perf binary for a collective.
tern_perf() {
  case $1 in
    allreduce) echo "$TERN_BIN/all_reduce_perf" ;;
    allgather) echo "$TERN_BIN/all_gather_perf" ;;
    reduce_scatter) echo "$TERN_BIN/reduce_scatter_perf" ;;
    alltoallv) echo "$TERN_ALLTOALLV_PERF" ;;
    *) echo "$TERN_BIN/${1}_perf" ;;
  esac
}

# tern_coll_args COLL : the options tern's binary takes for float32 sum, root 0.
tern_coll_args() {
  case $1 in
    allreduce | reduce_scatter) echo "-d float -o sum" ;;
    reduce) echo "-d float -o sum -r 0" ;;
    broadcast) echo "-d float -r 0" ;;
    alltoallv) echo "" ;;  # tern_alltoallv is float32 only
    *) echo "-d float" ;;
  esac
}

# report_coll TAG : the table for one collective and rank count from TAG-{tern,mpi,oneccl,gloo}.rows, plus one
# summary line (appended to $results/summary.txt). Sizes no tool measured (a split rounded to 0 elements) are left
# out, and so are the columns of tools that were not run (TOOLS).
report_coll() {
  local tag=$1 shown="" tool rows=()
  for tool in mpi oneccl gloo; do [[ " $TOOLS " == *" $tool "* ]] && shown+="${shown:+ }$tool"; done
  # One file per tool, in this order, whether or not it ran (a results folder from before a tool was added has none).
  for tool in tern mpi oneccl gloo; do
    if [[ -f $results/$tag-$tool.rows ]]; then rows+=("$results/$tag-$tool.rows"); else rows+=(/dev/null); fi
  done
  awk -v tag="$tag" -v summary="$results/summary.txt" -v shown="$shown" '
    function human(b) {
      if (b >= 1073741824 && b % 1073741824 == 0) return (b / 1073741824) "G"
      if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) "M"
      if (b >= 1024 && b % 1024 == 0) return (b / 1024) "K"
      return b
    }
    function ftime(t) { return t == "" ? "-" : sprintf(t >= 10000 ? "%.0f" : (t >= 100 ? "%.1f" : "%.2f"), t) }
    function fsp(med, lo, hi, n) { return med == "" || med <= 0 ? "-" : sprintf("%.0f%%/%d", 100 * (hi - lo) / med, n) }
    function fr(r) { return r == "" ? "-" : sprintf("%.2fx", r) }
    function bad(w) { return w ~ /^[0-9]+$/ && w > 0 }
    BEGIN {
      others = split(shown, tools, " ") + 1
      label["mpi"] = "MPI"; label["oneccl"] = "oneCCL"; label["gloo"] = "Gloo"
      file["mpi"] = 2; file["oneccl"] = 3; file["gloo"] = 4
      # Column o shows tool number col[o] (its file among ARGV[2..4]).
      for (o = 2; o <= others; o++) { name[o] = label[tools[o - 1]]; col[o] = file[tools[o - 1]] }
    }
    { for (tool = 1; tool <= 4 && FILENAME != ARGV[tool]; tool++) {} }
    $1 > 0 {
      t[tool, $1] = $3; lo[tool, $1] = $6; hi[tool, $1] = $7; runs[tool, $1] = $5; w[tool, $1] = $4; seen[$1] = 1
    }
    END {
      n = 0
      for (s in seen) sizes[++n] = s + 0
      for (i = 2; i <= n; i++) { v = sizes[i]; for (j = i - 1; j >= 1 && sizes[j] > v; j--) sizes[j + 1] = sizes[j]; sizes[j + 1] = v }
      head = sprintf("%8s  %10s %7s", "size", "tern us", "spread")
      for (o = 2; o <= others; o++) head = head sprintf("  %10s %7s", name[o] " us", "spread")
      for (o = 2; o <= others; o++) head = head sprintf(" %11s", "tern/" name[o])
      print head sprintf(" %10s", "tern/best")
      for (k = 1; k <= n; k++) {
        s = sizes[k]
        row = sprintf("%8s  %10s %7s", human(s), ftime(t[1, s]), fsp(t[1, s], lo[1, s], hi[1, s], runs[1, s]))
        best = ""
        for (o = 2; o <= others; o++) {
          f = col[o]
          row = row sprintf("  %10s %7s", ftime(t[f, s]), fsp(t[f, s], lo[f, s], hi[f, s], runs[f, s]))
          r[o] = (t[1, s] > 0 && t[f, s] != "") ? t[f, s] / t[1, s] : ""
          if (r[o] != "" && (best == "" || r[o] < best)) best = r[o]
        }
        for (o = 2; o <= others; o++) row = row sprintf(" %11s", fr(r[o]))
        if (best != "") { nb++; lb += log(best); if (minb == "" || best < minb) { minb = best; mins = s } ; if (best >= 1) ahead++ }
        note = ""
        if (bad(w[1, s])) note = note " tern"
        for (o = 2; o <= others; o++) if (bad(w[col[o], s])) note = note " " name[o]
        if (note != "") { note = "  WRONG results:" note; wrong++ }
        print row sprintf(" %10s", fr(best)) note
      }
      if (nb) line = sprintf("%-22s tern >= best other at %d/%d sizes, tern/best min %.2fx (at %s), geomean %.2fx",
                             tag, ahead, nb, minb, human(mins), exp(lb / nb))
      else line = sprintf("%-22s no size with tern and another tool", tag)
      if (wrong) line = line sprintf(", %d sizes with WRONG results", wrong)
      print line
      print line >> summary
    }' "${rows[@]}"
  local line=""
  for tool in tern mpi oneccl gloo; do
    [[ -s $results/$tag-$tool.rows ]] || continue
    line+="${line:+; }$tool $(cmp_placement_summary "$results/$tag-$tool.log")"
  done
  [[ -n $line ]] && echo "# cache-line round trip before each run (under ~150 ns: CPUs sharing a cache): $line"
  return 0
}

# run_coll COLL NP : every tool over the sweep, REPEATS times, leaving $results/COLL-npNP-TOOL.rows.
run_coll() {
  local coll=$1 np=$2 tag="$1-np$2" plan rep first last iters warm group tool tern_bin e
  local tern_bind=auto placement=(--bind-to core) occl_bind=core gloo_bind=$GLOO_BIND
  if ((np > ncpu)); then
    tern_bind=none placement=(--oversubscribe --bind-to none) occl_bind=none gloo_bind=none
  fi
  local tern_x=() mpi_x=() coll_args=()
  for e in "${tern_hp[@]}"; do tern_x+=(-x "$e"); done
  for e in "${other_hp[@]}"; do mpi_x+=(-x "$e"); done
  read -r -a coll_args <<<"$(tern_coll_args "$coll")"
  tern_bin=$(tern_perf "$coll")
  local run_tern=$have_tern run_mpi=$have_mpi run_occl=$have_oneccl run_gloo=$have_gloo
  [[ $coll == reduce_scatter ]] && run_gloo=0  # not in Gloo's options API (gloo_collectives.cpp)
  if ((run_tern)) && [[ ! -x $tern_bin ]]; then
    echo "# tern: $tern_bin not built; the tern column of $tag stays empty"
    run_tern=0 failed=1
  fi
  plan=$(cmp_plan "$MINBYTES" "$MAXBYTES" "$STEPFACTOR" "$ITER_BYTES" "$MIN_ITERS" "$MAX_ITERS" "$WARMUP" \
    "$WARMUP_MAX") || exit 2
  for tool in tern mpi oneccl gloo; do : >"$results/$tag-$tool.log"; done
  for ((rep = 1; rep <= REPEATS; rep++)); do
    group=0
    while read -r first last iters warm; do
      for tool in $(cmp_order $((group + rep - 1)) tern mpi oneccl gloo); do
        case $tool in
          tern)
            ((run_tern)) || continue
            cmp_placement "$results/$tag-tern.log"
            cmp_run "$results/$tag-tern.log" "$TERN_RUN" -n "$np" --bind-to "$tern_bind" "${tern_transport[@]}" \
              "${tern_x[@]}" "${tern_run_args[@]}" "$tern_bin" -b "$first" -e "$last" -f "$STEPFACTOR" \
              -n "$iters" -w "$warm" "${coll_args[@]}" "${tern_args[@]}" || failed=1
            ;;
          mpi)
            ((run_mpi)) || continue
            cmp_placement "$results/$tag-mpi.log"
            # Open MPI refuses to run as root without --allow-run-as-root; harmless otherwise.
            cmp_run "$results/$tag-mpi.log" "$MPIRUN" --allow-run-as-root "${placement[@]}" -np "$np" "${mpi_x[@]}" \
              "${mpi_mca[@]}" "${mpi_args[@]}" "$MPI_COLLECTIVES" --coll "$coll" -b "$first" -e "$last" \
              -f "$STEPFACTOR" -n "$iters" -w "$warm" "${mpi_driver_args[@]}" || failed=1
            ;;
          oneccl)
            ((run_occl)) || continue
            cmp_placement "$results/$tag-oneccl.log"
            ONECCL_ENV="${other_hp[*]} ${ONECCL_ENV:-}" CMP_LOCAL_BIND=$occl_bind occl_launch "$np" \
              "$results/$tag-oneccl.log" "$TRANSPORT" "r$rep-$first" --coll "$coll" -b "$first" -e "$last" \
              -f "$STEPFACTOR" -n "$iters" -w "$warm" "${oneccl_args[@]}" || failed=1
            ;;
          gloo)
            ((run_gloo)) || continue
            cmp_placement "$results/$tag-gloo.log"
            # Each run its own key prefix, so that a half-finished earlier rendezvous can never be joined by mistake.
            CMP_LOCAL_BIND=$gloo_bind cmp_launch_local "$np" "$results/$tag-gloo.log" "$GLOO_COLLECTIVES" \
              --store "$results/gloo-store" --prefix "$tag-r$rep-$first" --coll "$coll" -b "$first" -e "$last" \
              -f "$STEPFACTOR" -n "$iters" -w "$warm" "${gloo_args[@]}" || failed=1
            ;;
        esac
      done
      group=$((group + 1))
    done <<<"$plan"
  done
  local place
  for tool in tern mpi oneccl gloo; do
    place=out
    [[ $tool == tern && $coll == broadcast ]] && place=in  # like for like: the others' broadcasts are in place
    cmp_parse_nccl "$place" <"$results/$tag-$tool.log" >"$results/$tag-$tool.rows"
  done
  ((run_tern)) && [[ ! -s $results/$tag-tern.rows ]] && echo "# tern produced no result rows ($tag)" && failed=1
  ((run_mpi)) && [[ ! -s $results/$tag-mpi.rows ]] && echo "# mpi produced no result rows ($tag)" && failed=1
  ((run_occl)) && [[ ! -s $results/$tag-oneccl.rows ]] && echo "# oneccl produced no result rows ($tag)" && failed=1
  ((run_gloo)) && [[ ! -s $results/$tag-gloo.rows ]] && echo "# gloo produced no result rows ($tag)" && failed=1
  return 0
}

failed=0
others_text=""
for t in $TOOLS; do
  case $t in
    mpi) others_text+="${others_text:+ vs }Open MPI" ;;
    oneccl) others_text+="${others_text:+ vs }oneCCL" ;;
    gloo) others_text+="${others_text:+ vs }Gloo" ;;
  esac
done
have_tern=0 have_mpi=0 have_oneccl=0 have_gloo=0

main() {
  echo "# compare_collectives: tern vs $others_text, float32, over $transport_text"
  cmp_machine_info
  echo "# collectives: $COLLS; ranks: $NPS (CPUs: $ncpu; more ranks than CPUs run unbound)"
  echo "# sizes:       $MINBYTES..$MAXBYTES x$STEPFACTOR, ~$ITER_BYTES per size ($MIN_ITERS..$MAX_ITERS" \
    "iterations), repeats=$REPEATS, huge pages: $HUGEPAGES"
  echo "# mpi:         ${mpi_mca[*]}"
  echo "# results:     $results"
  cmp_busy_note "before the runs"
  echo "#"
  local t
  for t in $TOOLS; do
    case $t in
      tern) TERN_PERF=$TERN_BIN/all_gather_perf cmp_have_tern && have_tern=1 || failed=1 ;;
      mpi) MPI_ALLREDUCE=$MPI_COLLECTIVES cmp_have_mpi && have_mpi=1 || failed=1 ;;
      gloo) GLOO_ALLREDUCE=$GLOO_COLLECTIVES cmp_have_gloo && have_gloo=1 || failed=1 ;;
      oneccl)
        if occl_setup "$build"; then
          have_oneccl=1
          echo "# oneccl:      $(occl_version) ($ONECCL_COLLECTIVES), env: $(occl_env "$TRANSPORT" 2 | grep -v PATH= |
            tr '\n' ' ')"
        elif ((ONECCL)); then
          failed=1  # ONECCL=0 asked for it to be left out: not a failure
        fi
        ;;
    esac
  done
  : >"$results/summary.txt"
  local np coll
  for np in $NPS; do
    for coll in $COLLS; do run_coll "$coll" "$np"; done
  done

  echo
  echo "# ===== tern vs $others_text over $transport_text, out of place (broadcast: every tool in place)"
  echo "# medians of $REPEATS runs, time in us; spread = (slowest - fastest) / median, /runs"
  echo "# ratio = other median time / tern median time (> 1: tern is faster); tern/best against the faster other"
  for np in $NPS; do
    for coll in $COLLS; do
      echo
      echo "# ----- $coll, $np ranks$( ((np > ncpu)) && echo " on $ncpu CPUs (unbound)")"
      report_coll "$coll-np$np"
    done
  done
  echo
  echo "# ===== summary (tern/best: > 1 means tern is ahead of every other tool)"
  cat "$results/summary.txt"
  cmp_busy_note "after the runs"
  cmp_status "$failed" "$results"
}

cmp_run_main "$results"
