#!/usr/bin/env bash
# compress_forms.sh: the two forms of the multi-node compressed allreduce side by side, and the one the cost model
# picks. 2 nodes x 2 ranks on the simulated cluster (tests/cluster/netns_cluster.sh), 64 MB float32 sum allreduce,
# per codec in one run: TERN_COMPRESS_HIER=0 (flat two-phase: every rank encodes its whole tensor and exchanges
# with every other rank), =1 (compressed_hier: uncompressed reduce-scatter inside the node, two-phase between the
# nodes on 1/g of the tensor, allgather inside the node), and unset (the planner's choice, named as all_reduce_perf
# reports it). Printed per codec: the three times, hier/flat speedup, and whether the automatic pick was the faster
# form on this machine. Every (codec, form) runs ROUNDS (>= 3) times, in an order that rotates from round to round;
# times are medians with the spread (fastest..slowest), and the "faster form" verdict compares the medians.
#
# Usage: perf/cluster/compress_forms.sh [BIN_DIR]    (BIN_DIR: the build's bin directory, default build/bin)
# Environment: SIZE (64M), ITERS (5), WARMUP (1), ROUNDS (3), RATE (1gbit), CODECS ("sign qsgd:4 bf16"), PER_NODE (2),
#   PERF_RT (10), PERF_LOG.
# A benchmark: exit 0 when every run worked (whatever the times), 2 when a run failed, 77 when skipped.
# shellcheck source-path=SCRIPTDIR source=cluster_perf_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cluster_perf_lib.sh"

SIZE=${SIZE:-64M}
ITERS=${ITERS:-5}
WARMUP=${WARMUP:-1}
RATE=${RATE:-1gbit}
PER_NODE=${PER_NODE:-2}
ROUNDS=${ROUNDS:-3}
((ROUNDS >= 3)) || {
  echo "compress_forms: ROUNDS must be at least 3 (a median needs three runs), not $ROUNDS" >&2
  exit 2
}
read -r -a CODECS <<<"${CODECS:-sign qsgd:4 bf16}"
perf_args=(-b "$SIZE" -e "$SIZE" -n "$ITERS" -w "$WARMUP" -c 0 -d float -o sum)

declare -A TIME ALGO
tnc_up forms 2 "$RATE" || exit $?
runs=()
for codec in "${CODECS[@]}"; do
  for form in 0 1 auto; do runs+=("$codec/$form"); done
done
for ((round = 1; round <= ROUNDS; round++)); do
  echo "# round $round/$ROUNDS" >&2
  for run in $(rotate $((round - 1)) "${runs[@]}"); do
    codec=${run%/*} form=${run##*/}
    perf_run "$codec-$form" -p "$PER_NODE" --timeout 600 -x "TERN_COMPRESS_HIER=$form" -- "${perf_args[@]}" \
      -Z "$codec" || exit 2
    sample_add "$run/time" "$R_TIME_US"
    sample_add "$run/algo" "$R_ALGO"
  done
done
for run in "${runs[@]}"; do
  TIME[$run]=$(sample_stat "$run/time" median)
  ALGO[$run]=$(sample_stat "$run/algo" list)
done

echo
echo "# allreduce $SIZE float32 sum, 2 nodes x $PER_NODE ranks, links $RATE per direction, $ITERS iterations" \
  "(out-of-place ms); medians of $ROUNDS rounds, [fastest..slowest]"
perf_conditions
printf "%-8s %22s %22s %13s %28s %10s\n" codec flat_ms hier_ms hier_speedup "auto (ms)" auto_best
for codec in "${CODECS[@]}"; do
  flat=${TIME[$codec/0]} hier=${TIME[$codec/1]} auto=${TIME[$codec/auto]}
  best=compressed_2phase
  ge "$flat" "$hier" && best=compressed_hier
  verdict=no
  [[ "${ALGO[$codec/auto]}" == "$best" ]] && verdict=yes
  printf "%-8s %22s %22s %12sx %28s %10s\n" "$codec" "$(fmt_ms "$flat") [$(sample_spread "$codec/0/time" fmt_ms)]" \
    "$(fmt_ms "$hier") [$(sample_spread "$codec/1/time" fmt_ms)]" "$(calc "$flat / $hier")" \
    "${ALGO[$codec/auto]//compressed_/} ($(fmt_ms "$auto"))" "$verdict"
done
