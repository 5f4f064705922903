#!/usr/bin/env bash
# tern over TCP vs tern over UCX vs Open MPI over TCP: allreduce bus bandwidth on loopback, side by side.
#
#   perf/ucx_compare.sh [BUILD_DIR=build]
#
# Section 1 (always): 2 ranks on this host, float32 sum, sizes MINBYTES..MAXBYTES, shared memory disabled in tern
# (TERN_SHM_DISABLE=1) so every byte goes through the network transport under test:
#   tern-tcp      tern's own TCP transport                       (TERN_TRANSPORT=tcp)
#   ucx-tcp       tern over UCX, UCX restricted to TCP           (TERN_TRANSPORT=ucx UCX_TLS=tcp)
#   ucx-sm,cma    tern over UCX's shared memory + CMA transports (TERN_TRANSPORT=ucx UCX_TLS=sm,cma), where it works
#   mpi-tcp       Open MPI's TCP BTL (mpirun --mca pml ob1 --mca btl tcp,self mpi_allreduce), where the binary exists
# Every tool runs every size group, REPEATS (>= 3) times; which tool goes first rotates from size group to size
# group and from repeat to repeat. Each cell is the median busbw over the runs with the spread of the run times
# ((slowest - fastest) / median, and the number of runs); the ratio columns are UCX / tern-tcp median busbw.
# Binding: tern-run and mpirun place the ranks alike, one CPU per rank (tern-run --bind-to auto, mpirun --bind-to
# core), or both unbound when there are more ranks than CPUs (MPI then with --oversubscribe).
#
# Section 2 (when tests/cluster/netns_cluster.sh exists and can run: root, ip, tc): a simulated 2-node cluster with
# a CLUSTER_RATE link per node (default 1 Gb/s), one rank per node; tern over UCX (UCX_TLS=tcp on the cluster
# interface) must reach >= CLUSTER_TARGET (0.90) of the link bound at CLUSTER_BYTES (64 MB). For 2 ranks the bound
# on allreduce busbw is the link rate itself (each rank sends and receives S bytes over its link: busbw = S/t).
# tern TCP is measured beside it for reference. Where the cluster cannot be made, the section says so and is
# skipped (it never counts as a pass).
#
# A benchmark, not a test: exit 0 whatever the numbers, non-zero only when a tool failed or printed nothing, or when
# the cluster check ran and missed its target.
#
# Environment (defaults in brackets):
#   MINBYTES [1M] MAXBYTES [256M] STEPFACTOR [2]   size sweep (K/M/G suffixes, powers of 1024)
#   ITER_BYTES [2G] MIN_ITERS [3] MAX_ITERS [100]  iterations per size ~ ITER_BYTES/size, clamped
#   NP [2]   UCX_SETS ["tcp sm,cma"]   MPI [1: include Open MPI when mpi_allreduce is built]   REPEATS [3]
#   TERN_BIND / MPI_BIND [auto / core; both none when NP > CPUs]   tern-run --bind-to / mpirun --bind-to
#   CLUSTER [auto | 0]   CLUSTER_RATE [1gbit]   CLUSTER_BYTES [64M]   CLUSTER_TARGET [0.90]   CLUSTER_ITERS [10]
#   CLUSTER_REPEATS [3] (median run, verdict on it; ucx and tcp alternate first)   LOOPBACK [1] (0: cluster only)
#   TERN_RUN TERN_PERF MPI_ALLREDUCE MPIRUN   binaries [BUILD_DIR/bin/..., mpirun]
#   RESULTS_DIR [BUILD_DIR/perf-compare/ucx-DATE]   raw logs, parsed rows, report.txt
#   CMP_TIMEOUT [900]  seconds before a single tool run is killed
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=compare/common.sh
source "$here/compare/common.sh"

build=$(cmp_resolve_build "${1:-build}")
MINBYTES=${MINBYTES:-1M} MAXBYTES=${MAXBYTES:-256M} STEPFACTOR=${STEPFACTOR:-2}
ITER_BYTES=${ITER_BYTES:-2G} MIN_ITERS=${MIN_ITERS:-3} MAX_ITERS=${MAX_ITERS:-100}
NP=${NP:-2} UCX_SETS=${UCX_SETS:-"tcp sm,cma"} MPI=${MPI:-1} REPEATS=${REPEATS:-3}
if ((NP > $(nproc))); then
  TERN_BIND=${TERN_BIND:-none} MPI_BIND=${MPI_BIND:-none}
else
  TERN_BIND=${TERN_BIND:-auto} MPI_BIND=${MPI_BIND:-core}
fi
CLUSTER=${CLUSTER:-auto} CLUSTER_RATE=${CLUSTER_RATE:-1gbit} CLUSTER_BYTES=${CLUSTER_BYTES:-64M}
CLUSTER_TARGET=${CLUSTER_TARGET:-0.90} CLUSTER_ITERS=${CLUSTER_ITERS:-10} CLUSTER_REPEATS=${CLUSTER_REPEATS:-3}
LOOPBACK=${LOOPBACK:-1}
TERN_RUN=${TERN_RUN:-$build/bin/tern-run}
TERN_PERF=${TERN_PERF:-$build/bin/all_reduce_perf}
MPI_ALLREDUCE=${MPI_ALLREDUCE:-$build/bin/mpi_allreduce}
MPIRUN=${MPIRUN:-mpirun}
CLUSTER_SCRIPT=${CLUSTER_SCRIPT:-$here/../tests/cluster/netns_cluster.sh}
results=${RESULTS_DIR:-$build/perf-compare/ucx-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$results" || cmp_die "cannot create $results"

# Column names and how each runs one size group: "first last iters warmup" -> log.
columns=()
failed=0

run_tern() {  # run_tern LOG first last iters warm ENV...
  local log=$1 first=$2 last=$3 iters=$4 warm=$5
  shift 5
  local xs=() e
  for e in TERN_SHM_DISABLE=1 TERN_SOCKET_IFNAME=lo "$@"; do xs+=(-x "$e"); done
  cmp_run "$log" "$TERN_RUN" -n "$NP" --bind-to "$TERN_BIND" --timeout "$CMP_TIMEOUT" "${xs[@]}" "$TERN_PERF" \
    -b "$first" -e "$last" \
    -f "$STEPFACTOR" -n "$iters" -w "$warm" -d float -o sum
}

run_mpi() {  # run_mpi LOG first last iters warm
  local over=()
  ((NP > $(nproc))) && over=(--oversubscribe)
  cmp_run "$1" "$MPIRUN" --allow-run-as-root "${over[@]}" --bind-to "$MPI_BIND" -np "$NP" --mca pml ob1 \
    --mca btl tcp,self --mca btl_tcp_if_include lo "$MPI_ALLREDUCE" -b "$2" -e "$3" -f "$STEPFACTOR" -n "$4" -w "$5"
}

# A UCX set is kept only if a tiny run over it works here (e.g. CMA needs ptrace permission between the ranks).
probe_ucx() {
  local tls=$1
  run_tern "$results/probe-ucx-$tls.log" 1M 1M 2 1 TERN_TRANSPORT=ucx "UCX_TLS=$tls" >/dev/null 2>&1
}

# Joins the parsed rows of every column into one table: size, busbw per column, UCX/tern-tcp ratios.
report() {
  local files=() c
  for c in "${columns[@]}"; do files+=("$results/$c.rows"); done
  awk -v names="${columns[*]}" '
    function human(b) {
      if (b >= 1073741824 && b % 1073741824 == 0) return (b / 1073741824) "G"
      if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) "M"
      if (b >= 1024 && b % 1024 == 0) return (b / 1024) "K"
      return b
    }
    BEGIN { nc = split(names, name, " ") }
    FNR == 1 { col++ }
    { bw[$1, col] = $2; wrong[$1, col] = $4; seen[$1] = 1
      sp[$1, col] = ($3 > 0) ? sprintf("%.0f%%/%d", 100 * ($7 - $6) / $3, $5) : "-" }
    END {
      printf "%8s", "size"
      for (c = 1; c <= nc; c++) printf "  %12s %8s", name[c], "spread"
      for (c = 2; c <= nc; c++) if (name[c] ~ /^ucx/) printf "  %14s", name[c] "/tcp"
      printf "\n"
      n = 0
      for (s in seen) sizes[++n] = s + 0
      for (i = 2; i <= n; i++) { v = sizes[i]; for (j = i - 1; j >= 1 && sizes[j] > v; j--) sizes[j + 1] = sizes[j]; sizes[j + 1] = v }
      for (k = 1; k <= n; k++) {
        s = sizes[k]
        printf "%8s", human(s)
        for (c = 1; c <= nc; c++) {
          v = bw[s, c]
          flag = (wrong[s, c] ~ /^[0-9]+$/ && wrong[s, c] > 0) ? "!" : ""
          printf "  %12s %8s", v == "" ? "-" : sprintf("%.3f%s", v, flag), v == "" ? "-" : sp[s, c]
        }
        for (c = 2; c <= nc; c++) {
          if (name[c] !~ /^ucx/) continue
          printf "  %14s", (bw[s, c] != "" && bw[s, 1] > 0) ? sprintf("%.2fx", bw[s, c] / bw[s, 1]) : "-"
        }
        printf "\n"
      }
      print "# median busbw in GB/s (out-of-place); spread = (slowest - fastest) / median run time, /runs;" \
            " \"!\" marks a size with wrong results"
    }' "${files[@]}"
}

loopback() {
  echo "# ucx_compare: tern TCP vs tern UCX vs Open MPI TCP, allreduce float32 sum, $NP ranks on loopback"
  cmp_machine_info
  echo "# ucx:       $(dpkg-query -W -f='${Version}' libucx0 2>/dev/null || echo unknown)"
  echo "# sizes:     $MINBYTES..$MAXBYTES x$STEPFACTOR, ~$ITER_BYTES per size ($MIN_ITERS..$MAX_ITERS iterations)," \
    "repeats=$REPEATS, first tool rotating"
  echo "# binding:   tern-run --bind-to $TERN_BIND, mpirun --bind-to $MPI_BIND"
  echo "# results:   $results"
  cmp_busy_note "before the runs"
  if [[ ! -x $TERN_RUN || ! -x $TERN_PERF ]]; then
    echo "# $TERN_RUN or $TERN_PERF not built"
    return 1
  fi
  columns=(tern-tcp)
  local tls
  for tls in $UCX_SETS; do
    if probe_ucx "$tls"; then
      columns+=("ucx-$tls")
    else
      echo "# UCX_TLS=$tls does not work here (see $results/probe-ucx-$tls.log): column left out"
      tail -n 5 "$results/probe-ucx-$tls.log" | sed 's/^/#   /'
    fi
  done
  if ((MPI)) && [[ -x $MPI_ALLREDUCE ]] && command -v "$MPIRUN" >/dev/null 2>&1; then
    columns+=(mpi-tcp)
  else
    echo "# Open MPI: $MPI_ALLREDUCE or $MPIRUN missing (or MPI=0): column left out"
  fi
  echo "# columns:   ${columns[*]}"
  echo "#"

  local plan first last iters warm c rep group
  plan=$(cmp_plan "$MINBYTES" "$MAXBYTES" "$STEPFACTOR" "$ITER_BYTES" "$MIN_ITERS" "$MAX_ITERS") || exit 2
  for c in "${columns[@]}"; do : >"$results/$c.log"; done
  for ((rep = 1; rep <= REPEATS; rep++)); do
    group=0
    while read -r first last iters warm; do
      for c in $(cmp_order $((group + rep - 1)) "${columns[@]}"); do
        case $c in
          tern-tcp) run_tern "$results/$c.log" "$first" "$last" "$iters" "$warm" TERN_TRANSPORT=tcp || failed=1 ;;
          ucx-*) run_tern "$results/$c.log" "$first" "$last" "$iters" "$warm" TERN_TRANSPORT=ucx "UCX_TLS=${c#ucx-}" ||
            failed=1 ;;
          mpi-tcp) run_mpi "$results/$c.log" "$first" "$last" "$iters" "$warm" || failed=1 ;;
        esac
      done
      group=$((group + 1))
    done <<<"$plan"
  done
  for c in "${columns[@]}"; do
    cmp_parse_nccl <"$results/$c.log" >"$results/$c.rows"
    [[ -s $results/$c.rows ]] || { echo "# $c produced no result rows"; failed=1; }
  done
  echo
  echo "# ===== section 1: allreduce busbw, $NP ranks, loopback, tern shared memory off"
  report | tee "$results/table.txt"
  cmp_busy_note "after the runs"
}

# ---- section 2: the simulated cluster (hook: runs when tests/cluster/netns_cluster.sh exists and works) ----
cluster() {
  echo
  echo "# ===== section 2: simulated 2-node cluster, $CLUSTER_RATE per node, 1 rank per node, $CLUSTER_BYTES allreduce"
  if [[ $CLUSTER == 0 ]]; then
    echo "# skipped (CLUSTER=0)"
    return 0
  fi
  if [[ ! -f $CLUSTER_SCRIPT ]]; then
    echo "# skipped: $CLUSTER_SCRIPT does not exist (hook: this section runs once it does)"
    return 0
  fi
  # A subshell: the cluster library installs an EXIT trap that tears the namespaces down.
  (
    # shellcheck source=../tests/cluster/netns_cluster.sh
    source "$CLUSTER_SCRIPT"
    export TNC_TERN_RUN=$TERN_RUN
    tnc_up ucxcmp 2 "$CLUSTER_RATE"
    rc=$?
    if ((rc == 77)); then
      echo "# skipped: cannot create network namespaces here (need root, ip, tc)"
      exit 77
    fi
    ((rc == 0)) || exit "$rc"
    local_bytes=$(cmp_bytes "$CLUSTER_BYTES")
    : >"$results/cluster-ucx.log"
    : >"$results/cluster-tcp.log"
    cfgs=("ucx TERN_TRANSPORT=ucx UCX_TLS=tcp UCX_NET_DEVICES=tern0" "tcp TERN_TRANSPORT=tcp")
    for ((rep = 1; rep <= CLUSTER_REPEATS; rep++)); do
      # The configuration that runs first alternates from repeat to repeat.
      for k in $(cmp_order $((rep - 1)) 0 1); do
        cfg=${cfgs[k]}
        read -r -a parts <<<"$cfg"
        xs=()
        for e in "${parts[@]:1}"; do xs+=(-x "$e"); done
        echo "+ tnc_launch -p 1 ${xs[*]} -- all_reduce_perf -b $CLUSTER_BYTES -e $CLUSTER_BYTES -n $CLUSTER_ITERS" \
          "-w 2 -c 0 (run $rep of $CLUSTER_REPEATS)"
        tnc_launch -p 1 --timeout "$CMP_TIMEOUT" "${xs[@]}" -- "$TERN_PERF" -b "$CLUSTER_BYTES" -e "$CLUSTER_BYTES" \
          -n "$CLUSTER_ITERS" -w 2 -c 0 -d float -o sum >>"$results/cluster-${parts[0]}.log" 2>&1 ||
          echo "# cluster ${parts[0]} run failed (see $results/cluster-${parts[0]}.log)"
      done
    done
    # Rows: the median run of each configuration, with the fastest and slowest.
    cmp_parse_nccl out <"$results/cluster-ucx.log" >"$results/cluster-ucx.rows"
    cmp_parse_nccl out <"$results/cluster-tcp.log" >"$results/cluster-tcp.rows"
    rate_bps=$(awk -v r="$CLUSTER_RATE" 'BEGIN {
      n = r + 0; u = tolower(r); sub(/^[0-9.]+/, "", u)
      m = (u ~ /^g/) ? 1e9 : (u ~ /^m/) ? 1e6 : (u ~ /^k/) ? 1e3 : 1
      print n * m }')
    # busbw from the time column (the table's busbw has 2 decimals: 0.10 could be 80% or 84% of 1 Gb/s). For 2
    # ranks allreduce busbw = algbw = bytes / time.
    awk -v bound="$rate_bps" -v target="$CLUSTER_TARGET" -v size="$local_bytes" '
      FILENAME ~ /cluster-ucx/ && $1 == size && $3 > 0 { ucx = size / ($3 * 1e3); ulo = size / ($7 * 1e3); uhi = size / ($6 * 1e3); un = $5 }
      FILENAME ~ /cluster-tcp/ && $1 == size && $3 > 0 { tcp = size / ($3 * 1e3); tlo = size / ($7 * 1e3); thi = size / ($6 * 1e3); tn = $5 }
      END {
        b = bound / 8 / 1e9
        printf "link bound (busbw = link rate for 2 ranks): %.4f GB/s; medians of the runs, [slowest..fastest run]\n", b
        printf "tern tcp: %s GB/s (%s of bound)%s\n", tcp == "" ? "-" : sprintf("%.4f", tcp), tcp == "" ? "-" : sprintf("%.1f%%", 100 * tcp / b),
               tcp == "" ? "" : sprintf(" [%.4f..%.4f, %d runs]", tlo, thi, tn)
        if (ucx == "") { print "tern ucx: no result: FAIL"; exit 1 }
        ok = ucx >= target * b
        printf "tern ucx: %.4f GB/s (%.1f%% of bound, target >= %.0f%%) [%.4f..%.4f, %d runs]: %s\n", ucx, 100 * ucx / b,
               100 * target, ulo, uhi, un, ok ? "PASS" : "FAIL"
        exit ok ? 0 : 1
      }' "$results/cluster-ucx.rows" "$results/cluster-tcp.rows"
  )
  local rc=$?
  ((rc == 77)) && return 0
  return "$rc"
}

main() {
  if ((LOOPBACK)); then
    loopback || failed=1
  fi
  if [[ $CLUSTER != 0 ]]; then cluster || failed=1; fi
  if ((failed)); then
    echo "# a tool failed, printed nothing, or the cluster target was missed; see $results"
    return 1
  fi
  return 0
}

cmp_run_main "$results"
