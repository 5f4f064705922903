#!/usr/bin/env bash
# shellcheck disable=SC2317  # the run_TOOL functions are called indirectly, as "run_$tool"
# A collective across the simulated 2-node cluster (1 rank per node): tern, Open MPI, oneCCL and Gloo side by side. By
# default small-message allreduce latency over unshaped veth links, where what a loss scalar or a barrier pays is
# the network's latency and the library's own overhead, not bandwidth; COLL and RATE make it any of the compared
# collectives over shaped links (issue 19: alltoall, alltoallv and allgather on 1 Gb/s links).
#
#   perf/cluster/small_latency.sh [BUILD_BIN=build/bin]
#   COLL=alltoall RATE=1gbit MINBYTES=1K MAXBYTES=64M ITERS=5 WARMUP=2 perf/cluster/small_latency.sh build/bin
#
# Every node gets its own CPU (tnc_launch --pin for tern; a rankfile for Open MPI; taskset for oneCCL), as real
# nodes have their own; ranks run at normal priority. Open MPI: pml ob1 with the TCP BTL on the nodes' tern0
# interface, mpirun started in node 0's namespace and reaching node 1 through an rsh agent that enters the node's
# namespace (no ssh). oneCCL: the same driver and settings as perf/compare.sh over libfabric's tcp provider on
# tern0 (perf/compare/oneccl.sh installs it on first use; ONECCL=0 leaves it out). Gloo: gloo_collectives (the calls
# PyTorch's ProcessGroupGloo makes) bound to each node's address, meeting through a FileStore directory (GLOO=0
# leaves it out). All run COLL (float32, sum where it reduces) out of place, the same sizes and iterations; REPEATS
# rounds, the tool that
# runs first rotating. Targets: allreduce (issue 18) tern's time <= Open MPI's and <= 0.8x oneCCL's at every size;
# the others (issue 19) tern's time <= the others'. With RATE set, the report also gives tern's time at each size
# against the link bound: the bytes that must cross into a node (allreduce n, alltoall and allgather n/2) at the
# shaped rate.
#
# Environment: COLL [allreduce] (allreduce, allgather, alltoall, alltoallv) RATE [none] (tc tbf rate of every
#   node's link, e.g. 1gbit) MINBYTES [8] MAXBYTES [8K] STEPFACTOR [4] ITERS [500] WARMUP [50] REPEATS [3]
#   MPIRUN [mpirun] ONECCL [1] GLOO [1] RESULTS_DIR [BUILD_DIR/perf-compare/cluster-latency-DATE]
# A benchmark, not a test: exit code 0 whatever the ratios, non-zero when a tool failed or printed nothing.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PERF_RT=0
# shellcheck source-path=SCRIPTDIR source=cluster_perf_lib.sh
source "$here/cluster_perf_lib.sh"
# shellcheck source-path=SCRIPTDIR source=../compare/oneccl.sh
source "$here/../compare/oneccl.sh"

build=$(cd "$BIN/.." && pwd)
MINBYTES=${MINBYTES:-8} MAXBYTES=${MAXBYTES:-8K} STEPFACTOR=${STEPFACTOR:-4} COLL=${COLL:-allreduce} RATE=${RATE:-none}
ITERS=${ITERS:-500} WARMUP=${WARMUP:-50} REPEATS=${REPEATS:-3} MPIRUN=${MPIRUN:-mpirun}
CMP_TIMEOUT=${CMP_TIMEOUT:-300}
case $COLL in
  allreduce) tern_perf=(all_reduce_perf -d float -o sum) mpi_driver=(mpi_allreduce) crossing=1 ;;
  allgather) tern_perf=(all_gather_perf -d float) mpi_driver=(mpi_collectives --coll allgather) crossing=0.5 ;;
  alltoall) tern_perf=(alltoall_perf -d float) mpi_driver=(mpi_collectives --coll alltoall) crossing=0.5 ;;
  alltoallv) tern_perf=(tern_alltoallv) mpi_driver=(mpi_collectives --coll alltoallv) crossing= ;;
  *) cmp_die "COLL must be allreduce, allgather, alltoall or alltoallv, not '$COLL'" ;;
esac
results=${RESULTS_DIR:-$build/perf-compare/cluster-$COLL-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$results"
sizes=(-b "$(cmp_bytes "$MINBYTES")" -e "$(cmp_bytes "$MAXBYTES")" -f "$STEPFACTOR" -n "$ITERS" -w "$WARMUP")

tnc_up lat 2 "$RATE" || exit $?

tools=(tern)
if command -v "$MPIRUN" >/dev/null && [[ -x $BIN/${mpi_driver[0]} ]]; then
  tools+=(mpi)
  # The rsh agent: mpirun names a node by its address, the agent runs the command in that node's namespace.
  agent_map=$PERF_WORK/agent.map
  for n in 0 1; do echo "$(tnc_addr "$n") $(tnc_ns "$n")" >>"$agent_map"; done
  agent=$PERF_WORK/agent.sh
  cat >"$agent" <<EOF
#!/usr/bin/env bash
while [[ \$1 == -* ]]; do shift; done
host=\$1
shift
ns=\$(awk -v h="\$host" '\$1 == h { print \$2 }' "$agent_map")
[[ -n \$ns ]] || { echo "agent: no node has address \$host" >&2; exit 1; }
exec ip netns exec "\$ns" /bin/sh -c "\$*"
EOF
  chmod +x "$agent"
  rankfile=$PERF_WORK/rankfile
  for n in 0 1; do echo "rank $n=$(tnc_addr "$n") slot=$(tnc_cpus_of "$n")" >>"$rankfile"; done
else
  echo "# Open MPI: $MPIRUN or $BIN/${mpi_driver[0]} missing; its column stays empty"
fi
occl_setup "$build" && tools+=(oneccl)
if [[ ${GLOO:-1} == 1 ]]; then
  if [[ -x $BIN/gloo_collectives ]]; then
    tools+=(gloo)
  else
    echo "# Gloo: $BIN/gloo_collectives not built (needs libgloo-dev); its column stays empty"
  fi
fi

run_tern() {
  cmp_show_cmd tnc_launch --pin -- "$BIN/${tern_perf[0]}" "${tern_perf[@]:1}" "${sizes[@]}" | tee -a "$results/tern.log"
  tnc_launch --pin -- "$BIN/${tern_perf[0]}" "${tern_perf[@]:1}" "${sizes[@]}" 2>&1 | tee -a "$results/tern.log"
  return "${PIPESTATUS[0]}"
}

run_mpi() {
  cmp_run "$results/mpi.log" ip netns exec "$(tnc_ns 0)" "$MPIRUN" --allow-run-as-root -np 2 \
    --host "$(tnc_addr 0),$(tnc_addr 1)" --rankfile "$rankfile" --mca plm_rsh_agent "$agent" --mca pml ob1 \
    --mca btl tcp,self --mca btl_tcp_if_include tern0 --mca oob_tcp_if_include tern0 \
    "$BIN/${mpi_driver[0]}" "${mpi_driver[@]:1}" "${sizes[@]}"
}

# on_both_nodes LOG FN : runs `FN NODE DIR` for nodes 0 and 1 at once, each in the background with its output in a
# file, DIR a scratch directory both share (oneCCL's KVS file, Gloo's FileStore); then appends both outputs to LOG
# tagged "[n] ", as a launcher would. Returns the first non-zero exit code.
on_both_nodes() {
  local log=$1 fn=$2 dir n pids=() rc=0 s
  dir=$(mktemp -d)
  for n in 0 1; do
    "$fn" "$n" "$dir" </dev/null >"$dir/$n.out" 2>&1 &
    pids+=($!)
  done
  for n in 0 1; do
    wait "${pids[$n]}"
    s=$?
    ((s != 0 && rc == 0)) && rc=$s
  done
  for n in 0 1; do sed "s/^/[$n] /" "$dir/$n.out"; done | tee -a "$log"
  rm -rf "$dir"
  return "$rc"
}

oneccl_env=()
oneccl_node() {
  ip netns exec "$(tnc_ns "$1")" env TERN_RANK="$1" TERN_WORLD_SIZE=2 "${oneccl_env[@]}" \
    timeout --kill-after=10 "$CMP_TIMEOUT" taskset -c "$(tnc_cpus_of "$1")" "$ONECCL_COLLECTIVES" \
    --kvs "$2/kvs" --coll "$COLL" "${sizes[@]}"
}

run_oneccl() {
  mapfile -t oneccl_env < <(occl_env tcp 2 |
    sed 's/^CCL_KVS_IFACE=lo$/CCL_KVS_IFACE=tern0/; s/^FI_TCP_IFACE=lo$/FI_TCP_IFACE=tern0/')
  cmp_show_cmd "(per node)" env "${oneccl_env[@]}" "$ONECCL_COLLECTIVES" --coll "$COLL" "${sizes[@]}" |
    tee -a "$results/oneccl.log"
  on_both_nodes "$results/oneccl.log" oneccl_node
}

gloo_node() {
  ip netns exec "$(tnc_ns "$1")" env TERN_RANK="$1" TERN_WORLD_SIZE=2 timeout --kill-after=10 "$CMP_TIMEOUT" \
    taskset -c "$(tnc_cpus_of "$1")" "$BIN/gloo_collectives" --store "$2" --host "$(tnc_addr "$1")" \
    --coll "$COLL" "${sizes[@]}"
}

run_gloo() {
  cmp_show_cmd "(per node)" "$BIN/gloo_collectives" --store "<shared dir>" --host "<node address>" --coll "$COLL" \
    "${sizes[@]}" | tee -a "$results/gloo.log"
  on_both_nodes "$results/gloo.log" gloo_node
}

{
  perf_conditions
  echo "# $(tnc_info | head -1)"
} | tee "$results/conditions.txt"
failed=0
for ((r = 0; r < REPEATS; r++)); do
  while read -r tool; do
    echo "## round $((r + 1)): $tool"
    "run_$tool" >/dev/null || {
      echo "# $tool failed in round $((r + 1)) (see $results/$tool.log)"
      failed=1
    }
  done < <(cmp_order "$r" "${tools[@]}")
done

for tool in "${tools[@]}"; do cmp_parse_nccl out <"$results/$tool.log" >"$results/$tool.rows"; done
{
  echo "# ===== $COLL float32, 2 nodes x 1 rank, links $([[ $RATE == none ]] && echo "unshaped veth" || echo "shaped to $RATE")," \
    "out of place: medians of $REPEATS runs"
  echo "# ratio = other median time / tern median time; > 1 means tern is faster"
  for tool in mpi oneccl gloo; do
    [[ -s $results/$tool.rows ]] || continue
    target=1
    [[ $tool == oneccl && $COLL == allreduce ]] && target=1.25
    echo
    echo "## tern vs $tool (target: tern time <= $([[ $target == 1.25 ]] && echo "0.8x ")$tool's)"
    cmp_report "$results/tern.rows" "$results/$tool.rows" tern "$tool" "$MINBYTES-$MAXBYTES:$target"
  done
  if [[ $RATE != none && -n $crossing ]]; then
    echo
    echo "## tern against the link bound ($crossing x the size must enter a node at $RATE)"
    awk -v bps="$(tnc__rate_bps "$RATE")" -v crossing="$crossing" '$1 > 0 {
      bound = $1 * crossing * 8 / bps * 1e6
      printf "%10s bytes: tern %10.1f us, bound %10.1f us, %5.1f%% of the bound'"'"'s speed\n", $1, $3, bound, 100 * bound / $3
    }' "$results/tern.rows"
  fi
} | tee "$results/report.txt"
echo "# results: $results"
[[ -s $results/tern.rows ]] || failed=1
exit "$failed"
