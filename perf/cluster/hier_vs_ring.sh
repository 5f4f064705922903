#!/usr/bin/env bash
# hier_vs_ring.sh: issue 4's acceptance measurement. On the simulated cluster of 2 nodes x 2 ranks with 1 Gb/s
# links (tests/cluster/netns_cluster.sh: every node has one full-duplex link, tbf-shaped on both ends), a 64 MB
# float32 allreduce, in one run:
#   (a) auto        the communicator's own choice                         ranks 0,1 on node A, 2,3 on node B
#   (b) ring-block  -A ring, node-contiguous rank order                   ranks 0,1 on node A, 2,3 on node B
#   (c) ring-alt    -A ring, rank order alternating between the nodes     ranks 0,2 on node A, 1,3 on node B
#   (h) hier        -A hier (the hierarchical algorithm itself, for reference)
# and the same with 1 rank per node: (a1) auto, (b1) -A ring.
# Printed: busbw (nccl-tests: algbw x 2(n-1)/n, n = ranks), the link bound, the ratios, and the targets:
#   auto >= 90% of the link bound, auto >= 1.35 x (b), auto >= 2.5 x (c).
#
# Link bound. Let B be the link rate per direction (1 Gb/s = 125e6 B/s; tbf counts Ethernet frames) and N the
# allreduce size in bytes. Every output element on node A is the sum of A's inputs and B's inputs; A's own ranks
# know nothing of B's, so for each element node A must receive information equivalent to B's partial sum of it:
# at least N bytes must cross B -> A (dense data does not compress losslessly), and by symmetry N bytes A -> B. So
# time >= N / B. The hierarchical algorithm meets this: inside a node, reduce-scatter (shared memory), then each
# rank exchanges its reduced N/2 shard with its peer on the other node (reduce-scatter + allgather of a 2-rank
# ring: N/4 + N/4 per rank each way, two ranks per node share the link: N each way), then allgather inside the
# node. busbw = algbw x 2(n-1)/n, so the bound is
#     busbw_max = 2(n-1)/n x N / (N / B) = 2(n-1)/n x B = 1.5 x 0.125 = 0.1875 GB/s   for n = 4
#                                                       = 1.0 x 0.125 = 0.125  GB/s   for n = 2 (1 rank per node)
# TCP can carry at most 1448/1514 = 95.6% of that as payload (MSS 1448 with timestamps, 1514-byte frames), so the
# practical ceiling is 0.179 GB/s (n = 4) and 0.1195 GB/s (n = 2).
# Flat rings: a ring allreduce sends 2(n-1) blocks of N/n over every ring edge, 1.5 N for n = 4. (b) crosses the
# link once each way (edges 1->2, 3->0): 1.5 N per direction, time 1.5 N / B, so hier should be 1.5x faster.
# (c) 0->1->2->3->0 crosses the link on every edge, two edges per direction: 3 N per direction, 3x slower.
# By default tern orders rings by node (the planner's topologyRingOrder), which turns (c) into (b); (b) and (c) run
# with TERN_RING_ORDER=rank, the flat rank-order ring of a topology-blind library.
#
# Usage: perf/cluster/hier_vs_ring.sh [BIN_DIR]      (BIN_DIR: the build's bin directory, default build/bin)
# Environment: SIZE (64M), ITERS (5), WARMUP (1), ROUNDS (3, at least 3: every configuration once per round, in an
#   order that rotates from round to round; the table gives each configuration's median round with the spread
#   (slowest..fastest busbw), and the targets are judged on the medians),
#   RATE (1gbit), PERF_RT (10: ranks run SCHED_FIFO 10, see tnc_launch --rt; 0: normal priority), PERF_LOG (full
#   output; default a temporary file, printed on failure).
# Needs root, ip and tc (exits 77 with "SKIPPED: ..." otherwise). Exit: 0 targets met, 1 a target missed, 2 a run
# failed.
# shellcheck source-path=SCRIPTDIR source=cluster_perf_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cluster_perf_lib.sh"

SIZE=${SIZE:-64M}
ITERS=${ITERS:-5}
WARMUP=${WARMUP:-1}
ROUNDS=${ROUNDS:-3}
((ROUNDS >= 3)) || {
  echo "hier_vs_ring: ROUNDS must be at least 3 (a median needs three runs), not $ROUNDS" >&2
  exit 2
}
RATE=${RATE:-1gbit}

tnc_up hier 2 "$RATE" || exit $?
BPS=$(tnc__rate_bps "$RATE")
BOUND4=$(calc "1.5 * $BPS / 8 / 1e9")
BOUND2=$(calc "1.0 * $BPS / 8 / 1e9")
perf_args=(-b "$SIZE" -e "$SIZE" -n "$ITERS" -w "$WARMUP" -c 0 -d float -o sum)

# name : launch options : extra perf options
configs=(
  "auto|-p 2|"
  "ring-block|-p 2 -x TERN_RING_ORDER=rank|-A ring"
  "ring-alt|-p 2 --order cyclic -x TERN_RING_ORDER=rank|-A ring"
  "hier|-p 2|-A hier"
  "auto-1pn|-p 1|"
  "ring-1pn|-p 1|-A ring"
)
for ((round = 1; round <= ROUNDS; round++)); do
  echo "# round $round/$ROUNDS" >&2
  mapfile -t order < <(rotate $((round - 1)) "${configs[@]}")
  for c in "${order[@]}"; do
    IFS='|' read -r name launch extra <<<"$c"
    # shellcheck disable=SC2086  # the option strings split into words on purpose
    perf_run "$name" $launch --timeout 600 -- "${perf_args[@]}" $extra || exit 2
    sample_add "$name/busbw" "$R_BUSBW"
    sample_add "$name/time" "$R_TIME_US"
    sample_add "$name/algo" "$R_ALGO"
  done
done
declare -A BUS
for c in "${configs[@]}"; do
  name=${c%%|*}
  BUS[$name]=$(fmt_bw "$(sample_stat "$name/busbw" median)")
done

echo
echo "# allreduce $SIZE float32 sum, 2 nodes, links $RATE per direction; median of $ROUNDS rounds, $ITERS iterations"
perf_conditions
echo "# link bound busbw: 2 x 2 ranks $BOUND4 GB/s, 2 x 1 rank $BOUND2 GB/s (TCP payload ceiling 95.6% of that)"
printf "%-11s %-16s %-9s %10s %10s %9s  %s\n" config placement algo time_ms busbw_GB/s of_bound "busbw spread (slowest..fastest)"
row() {  # name placement bound
  printf "%-11s %-16s %-9s %10s %10s %8s%%  %s\n" "$1" "$2" "$(sample_stat "$1/algo" list)" \
    "$(fmt_ms "$(sample_stat "$1/time" median)")" "${BUS[$1]}" "$(calc "100 * ${BUS[$1]} / $3")" \
    "$(sample_spread "$1/busbw" fmt_bw)"
}
row auto "0,1|2,3" "$BOUND4"
row ring-block "0,1|2,3" "$BOUND4"
row ring-alt "0,2|1,3" "$BOUND4"
row hier "0,1|2,3" "$BOUND4"
row auto-1pn "0|1" "$BOUND2"
row ring-1pn "0|1" "$BOUND2"

status=0
target() {  # what value op limit
  if ge "$2" "$3"; then
    echo "PASS $1: $2 >= $3"
  else
    echo "MISS $1: $2 < $3"
    status=1
  fi
}
echo
echo "# targets on the medians"
target "(a) auto vs link bound" "$(calc "${BUS[auto]} / $BOUND4")" 0.90
target "(a)/(b) auto vs node-contiguous ring" "$(calc "${BUS[auto]} / ${BUS[ring-block]}")" 1.35
target "(a)/(c) auto vs node-alternating ring" "$(calc "${BUS[auto]} / ${BUS[ring-alt]}")" 2.5
echo "info: hier vs link bound $(calc "${BUS[hier]} / $BOUND4"), hier/(b) $(calc "${BUS[hier]} / ${BUS[ring-block]}")," \
  "hier/(c) $(calc "${BUS[hier]} / ${BUS[ring-alt]}"); 1 rank per node: auto vs bound" \
  "$(calc "${BUS[auto-1pn]} / $BOUND2")"
auto_algos=$(sample_stat auto/algo list)
if [[ "$auto_algos" != hier* || "$auto_algos" == */* ]]; then
  echo "note: the automatic choice on 2 x 2 was '$auto_algos', not (always) the hierarchical algorithm"
fi
exit "$status"
