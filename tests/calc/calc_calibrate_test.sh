#!/usr/bin/env bash
# Calibration from perf JSON files, the file it writes, --check, and --tune / TERN_TUNE_FILE changing predictions.
source "$(dirname "$0")/calc_lib.sh"

# A 2-rank TCP loopback run: 25 us + bytes / 2.5 GB/s per ring phase (1.5 x n / 2.5e9 for the whole allreduce).
perf() {  # perf FILE NRANKS TRANSPORT NODES ALGO ALPHA_US BW_GBS
  local file=$1 n=$2 transport=$3 nodes=$4 algo=$5 a=$6 bw=$7
  {
    echo "{\"collective\": \"allreduce\", \"nranks\": $n, \"transport\": \"$transport\", \"compress\": \"\","
    echo " \"nodes\": $nodes, \"results\": ["
    local size=1048576 first=1
    while [[ $size -le 268435456 ]]; do
      local us
      us=$(awk -v a="$a" -v bw="$bw" -v s="$size" 'BEGIN { printf "%.3f", 2 * a + s / (bw * 1e3) }')
      [[ $first -eq 1 ]] || echo ","
      first=0
      echo "{\"size\": $size, \"type\": \"float\", \"algorithm\": \"$algo\", \"out_of_place\": {\"time_us\": $us}}"
      size=$((size * 2))
    done
    echo "]}"
  } >"$file"
}
perf "$TMP/tcp.json" 2 tcp 1 ring 25 2.5
perf "$TMP/net.json" 2 tcp 2 ring 60 0.112

out=$("$CALC" --calibrate "$TMP/tcp.json" "$TMP/net.json" --inter eth:1gbit -o "$TMP/tune.json") || fail "calibrate failed"
expect_contains "$out" "fitted:" "loopback" "network:ethernet" "residuals" "busbw meas" "wrote $TMP/tune.json"
[[ -s $TMP/tune.json ]] || fail "no calibration file written"
expect_contains "$(cat "$TMP/tune.json")" '"version": 1' '"loopback"' '"network:ethernet"' '"speed_gbps": 1'

# The fitted file is accepted by --tune and by TERN_TUNE_FILE, and changes the prediction.
a=$("$CALC" --preset loopback-2 --size 64MB --algo ring --json | grep -m1 time_us)
b=$("$CALC" --preset loopback-2 --size 64MB --algo ring --json --tune "$TMP/tune.json" | grep -m1 time_us)
c=$(TERN_TUNE_FILE="$TMP/tune.json" "$CALC" --preset loopback-2 --size 64MB --algo ring --json | grep -m1 time_us)
[[ $a != "$b" ]] || fail "--tune did not change the prediction ($a)"
[[ $b == "$c" ]] || fail "TERN_TUNE_FILE and --tune disagree ($b vs $c)"

# --check: predicted vs measured per size, with the error column.
out=$("$CALC" --check "$TMP/tcp.json" --tune "$TMP/tune.json") || fail "--check failed"
expect_contains "$out" "predicted" "error" "1 MiB" "256 MiB" "worst busbw error"

# FILE@N overrides the node count.
cp "$TMP/net.json" "$TMP/net-nonodes.json"
sed -i 's/"nodes": 2, //' "$TMP/net-nonodes.json"
"$CALC" --check "$TMP/net-nonodes.json@2" --tune "$TMP/tune.json" >/dev/null || fail "FILE@N failed"
finish
