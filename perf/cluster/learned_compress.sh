#!/usr/bin/env bash
# learned_compress.sh: issue 18's "the model learns the links" measurement. 2 nodes x 1 rank on the simulated
# cluster (tests/cluster/netns_cluster.sh, RATE each way), no tune file and no topology file, an unmodified
# all_reduce_perf of SIZE with TERN_COMPRESS unset, =bf16 and =sign: the model decides, after the communicator has
# learned the network from its first TERN_LEARN_CALLS (8) calls (WARMUP >= 8 keeps them out of the timing). Prints
# each run's all_reduce_perf row (the #wrong column counts elements that differ from the exact sum: every element,
# once compressed) and the median out-of-place time per setting with its ratio to uncompressed; targets: bf16 >= 1.8x,
# sign >= 12x. A benchmark: exit 0 whatever the ratios.
#
# Usage: perf/cluster/learned_compress.sh [BIN_DIR=build/bin]
# Environment: SIZE (64M), ITERS (20), WARMUP (10), ROUNDS (3), RATE (1gbit). Needs root, ip and tc.
set -uo pipefail
# shellcheck source=../../tests/cluster/cluster_test_lib.sh
source "$(dirname "$0")/../../tests/cluster/cluster_test_lib.sh" "${1:-build/bin}"
SIZE=${SIZE:-64M} ITERS=${ITERS:-20} WARMUP=${WARMUP:-10} ROUNDS=${ROUNDS:-3} RATE=${RATE:-1gbit}
tnc_up lcmp 2 "$RATE" || exit $?
trap 'tnc_down' EXIT
declare -A times
for c in none bf16 sign; do
  for ((r = 1; r <= ROUNDS; r++)); do
    x=()
    [[ $c != none ]] && x=(-x "TERN_COMPRESS=$c")
    launch -p 1 --timeout 600 "${x[@]}" -- "$BIN/all_reduce_perf" -b "$SIZE" -e "$SIZE" -n "$ITERS" -w "$WARMUP" \
      -d float -o sum >/dev/null 2>&1
    row=$(echo "$OUT" | grep -E '^\[0\] +[0-9]+ +[0-9]+ +float' | tail -1)
    echo "$c round $r: $row"
    times[$c]+="$(echo "$row" | awk '{print $7}') "
  done
done
python3 - "${times[none]}" "${times[bf16]}" "${times[sign]}" <<'PY'
import statistics, sys
med = [statistics.median(float(t) for t in s.split()) for s in sys.argv[1:]]
for name, m in zip(["uncompressed", "bf16", "sign"], med):
    print(f"{name:13s} median {m / 1000:8.1f} ms  {med[0] / m:5.2f}x")
PY
