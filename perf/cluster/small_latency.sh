#!/usr/bin/env bash
# Small-message allreduce latency across the simulated 2-node cluster (unshaped veth links, 1 rank per node):
# tern, Open MPI and oneCCL side by side, where what a loss scalar or a barrier pays is the network's latency and
# the library's own overhead, not bandwidth.
#
#   perf/cluster/small_latency.sh [BUILD_BIN=build/bin]
#
# Every node gets its own CPU (tnc_launch --pin for tern; a rankfile for Open MPI; taskset for oneCCL), as real
# nodes have their own; ranks run at normal priority. Open MPI: pml ob1 with the TCP BTL on the nodes' tern0
# interface, mpirun started in node 0's namespace and reaching node 1 through an rsh agent that enters the node's
# namespace (no ssh). oneCCL: the same driver and settings as perf/compare.sh over libfabric's tcp provider on
# tern0 (perf/compare/oneccl.sh installs it on first use; ONECCL=0 leaves it out). All three run float32 sum
# allreduce out of place, the same sizes and iterations; REPEATS rounds, the tool that runs first rotating.
# Targets (issue 18): tern's time <= Open MPI's and <= 0.8x oneCCL's at every size.
#
# Environment: MINBYTES [8] MAXBYTES [8K] STEPFACTOR [4] ITERS [500] WARMUP [50] REPEATS [3]
#   MPIRUN [mpirun] ONECCL [1] RESULTS_DIR [BUILD_DIR/perf-compare/cluster-latency-DATE]
# A benchmark, not a test: exit code 0 whatever the ratios, non-zero when a tool failed or printed nothing.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PERF_RT=0
# shellcheck source-path=SCRIPTDIR source=cluster_perf_lib.sh
source "$here/cluster_perf_lib.sh"
# shellcheck source-path=SCRIPTDIR source=../compare/oneccl.sh
source "$here/../compare/oneccl.sh"

build=$(cd "$BIN/.." && pwd)
MINBYTES=${MINBYTES:-8} MAXBYTES=${MAXBYTES:-8K} STEPFACTOR=${STEPFACTOR:-4}
ITERS=${ITERS:-500} WARMUP=${WARMUP:-50} REPEATS=${REPEATS:-3} MPIRUN=${MPIRUN:-mpirun}
CMP_TIMEOUT=${CMP_TIMEOUT:-300}
results=${RESULTS_DIR:-$build/perf-compare/cluster-latency-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$results"
sizes=(-b "$(cmp_bytes "$MINBYTES")" -e "$(cmp_bytes "$MAXBYTES")" -f "$STEPFACTOR" -n "$ITERS" -w "$WARMUP")

tnc_up lat 2 none || exit $?

tools=(tern)
if command -v "$MPIRUN" >/dev/null && [[ -x $BIN/mpi_allreduce ]]; then
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
  echo "# Open MPI: $MPIRUN or $BIN/mpi_allreduce missing; its column stays empty"
fi
occl_setup "$build" && tools+=(oneccl)

run_tern() {
  cmp_show_cmd tnc_launch --pin -- "$BIN/all_reduce_perf" "${sizes[@]}" | tee -a "$results/tern.log"
  tnc_launch --pin -- "$BIN/all_reduce_perf" "${sizes[@]}" 2>&1 | tee -a "$results/tern.log"
  return "${PIPESTATUS[0]}"
}

run_mpi() {
  cmp_run "$results/mpi.log" ip netns exec "$(tnc_ns 0)" "$MPIRUN" --allow-run-as-root -np 2 \
    --host "$(tnc_addr 0),$(tnc_addr 1)" --rankfile "$rankfile" --mca plm_rsh_agent "$agent" --mca pml ob1 \
    --mca btl tcp,self --mca btl_tcp_if_include tern0 --mca oob_tcp_if_include tern0 \
    "$BIN/mpi_allreduce" "${sizes[@]}"
}

run_oneccl() {
  local env_words=() kvs n pids=() rc=0 s
  mapfile -t env_words < <(occl_env tcp 2 | sed 's/^CCL_KVS_IFACE=lo$/CCL_KVS_IFACE=tern0/; s/^FI_TCP_IFACE=lo$/FI_TCP_IFACE=tern0/')
  kvs=$(mktemp -d)
  cmp_show_cmd "(per node)" env "${env_words[@]}" "$ONECCL_COLLECTIVES" --coll allreduce "${sizes[@]}" |
    tee -a "$results/oneccl.log"
  for n in 0 1; do
    ip netns exec "$(tnc_ns "$n")" env TERN_RANK=$n TERN_WORLD_SIZE=2 "${env_words[@]}" \
      timeout --kill-after=10 "$CMP_TIMEOUT" taskset -c "$(tnc_cpus_of "$n")" "$ONECCL_COLLECTIVES" \
      --kvs "$kvs/kvs" --coll allreduce "${sizes[@]}" </dev/null >"$kvs/$n.out" 2>&1 &
    pids+=($!)
  done
  for n in 0 1; do
    wait "${pids[$n]}"
    s=$?
    ((s != 0 && rc == 0)) && rc=$s
  done
  for n in 0 1; do sed "s/^/[$n] /" "$kvs/$n.out"; done | tee -a "$results/oneccl.log"
  rm -rf "$kvs"
  return "$rc"
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
  echo "# ===== allreduce float32 sum, 2 nodes x 1 rank, unshaped veth, out of place: medians of $REPEATS runs"
  echo "# ratio = other median time / tern median time; > 1 means tern is faster"
  for tool in mpi oneccl; do
    [[ -s $results/$tool.rows ]] || continue
    target=1
    [[ $tool == oneccl ]] && target=1.25
    echo
    echo "## tern vs $tool (target: tern time <= $([[ $tool == oneccl ]] && echo "0.8x ")$tool's)"
    cmp_report "$results/tern.rows" "$results/$tool.rows" tern "$tool" "$MINBYTES-$MAXBYTES:$target"
  done
} | tee "$results/report.txt"
echo "# results: $results"
[[ -s $results/tern.rows ]] || failed=1
exit "$failed"
