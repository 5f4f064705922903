#!/usr/bin/env bash
# compress_speedup.sh: issue 5's acceptance measurement. 2 nodes x 1 rank on the simulated cluster with 1 Gb/s
# links (tests/cluster/netns_cluster.sh), 64 MB float32 sum allreduce, in one run: uncompressed, then -Z sign,
# -Z qsgd:4, -Z topk:0.01, -Z bf16. Printed per codec: time, effective busbw (computed on the UNcompressed bytes, as
# all_reduce_perf reports it), speedup over uncompressed (= time ratio), and the targets:
#   sign >= 12x, qsgd:4 >= 5x, topk:0.01 >= 10x, bf16 >= 1.8x.
#
# Where the time goes (printed under "profile"):
#   wire_MB   bytes node 0 sent per allreduce (its veth's TX counter, Ethernet frames, over all the run's
#             allreduces; the few tiny timing allreduces are noise), and wire_ms = that at the link rate: the time
#             the link alone needs;
#   cpu_ms    the same allreduce with the links unshaped (a second cluster, RATE none): what the ranks' own work
#             (encode, decode, reduce, copies, loopback-speed TCP) costs when the network is not the limit;
#   cpu_s     user+system CPU seconds of rank 0 over the whole 1 Gb/s run (GNU time), next to its wall seconds.
# A codec whose 1 Gb/s time is close to cpu_ms is limited by computation; close to wire_ms, by the link.
#
# Uncompressed 2-rank allreduce moves N bytes each way (reduce-scatter N/2 + allgather N/2), so it takes at least
# N / 125 MB/s = 537 ms for 64 MiB; codecs shrink the bytes: sign ~N/32, qsgd:4 ~N/8 (+ bucket scales), topk 1%
# ~0.02 N (index + value per kept element, every rank's), bf16 N/2. The speedup targets leave room for the codecs'
# CPU time.
#
# Usage: perf/cluster/compress_speedup.sh [BIN_DIR]    (BIN_DIR: the build's bin directory, default build/bin)
# Every configuration runs ROUNDS (>= 3) times, in an order that rotates from round to round; times, busbw, wire
# bytes and CPU seconds are medians over the rounds, the time's spread (fastest..slowest) is shown, and the
# speedup (median uncompressed time / median codec time) is what the targets judge.
#
# Environment: SIZE (64M), ITERS (5), WARMUP (1), ROUNDS (3), RATE (1gbit), PROFILE (1: also the unshaped runs; 0: skip),
#   CODECS (default "sign qsgd:4 topk:0.01 bf16"), PERF_RT (10: ranks run SCHED_FIFO 10; 0: normal priority),
#   PERF_LOG (full output).
# Needs root, ip and tc (exits 77 with "SKIPPED: ..." otherwise). Exit: 0 targets met, 1 a target missed, 2 a run
# failed.
# shellcheck source-path=SCRIPTDIR source=cluster_perf_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cluster_perf_lib.sh"

SIZE=${SIZE:-64M}
ITERS=${ITERS:-5}
WARMUP=${WARMUP:-1}
RATE=${RATE:-1gbit}
PROFILE=${PROFILE:-1}
ROUNDS=${ROUNDS:-3}
((ROUNDS >= 3)) || {
  echo "compress_speedup: ROUNDS must be at least 3 (a median needs three runs), not $ROUNDS" >&2
  exit 2
}
read -r -a CODECS <<<"${CODECS:-sign qsgd:4 topk:0.01 bf16}"
declare -A TARGET=([sign]=12 [qsgd:4]=5 [topk:0.01]=10 [bf16]=1.8)
perf_args=(-b "$SIZE" -e "$SIZE" -n "$ITERS" -w "$WARMUP" -c 0 -d float -o sum)
OPS=$((2 * (ITERS + WARMUP)))  # allreduces of SIZE per run: out-of-place and in-place, warmup included

tx_bytes() { ip -n "$(tnc_ns 0)" -s -j link show dev tern0 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["bytes"])'; }

declare -A TIME BUS WIRE CPU WALL CPUMS

tnc_up compress 2 "$RATE" || exit $?
BPS=$(tnc__rate_bps "$RATE")
# One shaped run of a codec (none: uncompressed), its figures added to the samples. The perf binary runs under GNU
# time: its CPU line comes back tagged [0] / [1] by tern-run.
run_codec() {
  local codec=$1 extra=() before after start json t b u s w
  [[ "$codec" != none ]] && extra=(-Z "$codec")
  before=$(tx_bytes)
  start=$(wc -l <"$PERF_LOG" 2>/dev/null || echo 0)
  # Like perf_run, with GNU time in front of all_reduce_perf.
  json=$PERF_WORK/$codec.json
  rm -f "$json"
  local cmd=(tnc_launch "${RT_OPT[@]}" -p 1 --timeout 600 -- /usr/bin/time -f "cpu_user %U cpu_sys %S wall %e"
    "$BIN/all_reduce_perf" -J "$json" "${perf_args[@]}" "${extra[@]}")
  echo "### $codec: ${cmd[*]}" >>"$PERF_LOG"
  if ! "${cmd[@]}" >>"$PERF_LOG" 2>&1 || [[ ! -s "$json" ]]; then
    echo "$codec: run failed: ${cmd[*]}" >&2
    tail -n 30 "$PERF_LOG" >&2
    exit 2
  fi
  after=$(tx_bytes)
  read -r t b <<<"$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["results"][0]["out_of_place"]
print(r["time_us"], r["busbw"])' "$json")"
  sample_add "$codec/time" "$t"
  sample_add "$codec/busbw" "$b"
  sample_add "$codec/wire" "$(calc "($after - $before) / $OPS / 1e6")"
  read -r u s w <<<"$(tail -n +"$((start + 1))" "$PERF_LOG" | sed -n 's/^\[0\] cpu_user \([0-9.]*\) cpu_sys \([0-9.]*\) wall \([0-9.]*\)$/\1 \2 \3/p' | tail -1)"
  sample_add "$codec/cpu" "$(calc "${u:-0} + ${s:-0}")"
  sample_add "$codec/wall" "${w:-0}"
  echo "  $codec: $(fmt_ms "$t") ms, busbw $(fmt_bw "$b") GB/s" >&2
}
for ((round = 1; round <= ROUNDS; round++)); do
  echo "# round $round/$ROUNDS" >&2
  for codec in $(rotate $((round - 1)) none "${CODECS[@]}"); do run_codec "$codec"; done
done
for codec in none "${CODECS[@]}"; do
  TIME[$codec]=$(sample_stat "$codec/time" median)
  BUS[$codec]=$(fmt_bw "$(sample_stat "$codec/busbw" median)")
  WIRE[$codec]=$(sample_stat "$codec/wire" median)
  CPU[$codec]=$(sample_stat "$codec/cpu" median)
  WALL[$codec]=$(sample_stat "$codec/wall" median)
done

if [[ "$PROFILE" == 1 ]]; then
  tnc_down
  tnc_up compressfree 2 none || exit $?
  for ((round = 1; round <= ROUNDS; round++)); do
    for codec in $(rotate $((round - 1)) none "${CODECS[@]}"); do
      extra=()
      [[ "$codec" != none ]] && extra=(-Z "$codec")
      perf_run "unshaped-$codec" -p 1 --timeout 600 -- "${perf_args[@]}" "${extra[@]}" || exit 2
      sample_add "$codec/unshaped" "$R_TIME_US"
    done
  done
  for codec in none "${CODECS[@]}"; do CPUMS[$codec]=$(fmt_ms "$(sample_stat "$codec/unshaped" median)"); done
fi

echo
echo "# allreduce $SIZE float32 sum, 2 nodes x 1 rank, links $RATE per direction, $ITERS iterations (out-of-place);" \
  "medians of $ROUNDS rounds, time spread fastest..slowest"
perf_conditions
printf "%-10s %9s %15s %11s %8s %7s   %8s %8s %8s %13s\n" codec time_ms "spread_ms" busbw_GB/s speedup target \
  wire_MB wire_ms cpu_ms "cpu_s/wall_s"
status=0
for codec in none "${CODECS[@]}"; do
  speed=$(calc "${TIME[none]} / ${TIME[$codec]}")
  tgt=${TARGET[$codec]:-}
  verdict=""
  if [[ -n "$tgt" ]]; then
    if ge "$speed" "$tgt"; then verdict="PASS"; else
      verdict="MISS"
      status=1
    fi
  fi
  printf "%-10s %9s %15s %11s %7sx %7s   %8s %8s %8s %13s %s\n" "$codec" "$(fmt_ms "${TIME[$codec]}")" \
    "$(sample_spread "$codec/time" fmt_ms)" "${BUS[$codec]}" "$speed" "${tgt:+>=${tgt}x}" "${WIRE[$codec]}" "$(calc "${WIRE[$codec]} * 1e6 * 8 / $BPS * 1000")" \
    "${CPUMS[$codec]:--}" "${CPU[$codec]}/${WALL[$codec]}" "$verdict"
done
exit "$status"
