#!/usr/bin/env bash
# The worked case of REFERENCE.md: ResNet-50 (25.6M fp32 = 102.4 MB), 2 nodes x 2 GPUs, RoCE 25 Gb/s, 220 ms of
# compute: naive 33 ms / 13%, at 10 Gb/s 82 ms / ~30%, and the ring / hierarchical explanation.
source "$(dirname "$0")/calc_lib.sh"

out=$("$CALC" --preset roce25-2x2 --model-params 25.6M --grad-dtype fp32 --compute-ms 220) || fail "training mode failed"
expect_contains "$out" "= 102.4 MB per step" "102.4 MB / 25 Gb/s (3.125 GB/s) = 32.8 ms" "-> 13% of a 253 ms step" \
  "the same on 10 Gb/s (1.25 GB/s): 81.9 ms -> 27.1%" "2(p-1)/p = 1.5 x 102.4 MB = 153.6 MB" \
  "102.4 MB per NIC = 32.8 ms" "That is exactly the naive figure" "step with hier" "scaling" "sign (compressed_2phase)" \
  "fp16 gradients"

# The same on a 10 Gb/s network, from flags.
out=$("$CALC" --nodes 2 --ranks-per-node 2 --intra pcie3 --inter roce:10gbit --model-params 25.6M --compute-ms 220) ||
  fail "flags failed"
expect_contains "$out" "102.4 MB / 10 Gb/s (1.25 GB/s) = 81.9 ms" "-> 27.1% of a 302 ms step"

# Prices: a cost column and a cost line.
out=$("$CALC" --preset roce25-2x2 --model-params 25.6M --compute-ms 220 --overlap 0.7 --gpu-hour-price 2.5) ||
  fail "price failed"
expect_contains "$out" "cost/1k steps" "per GPU-hour" "overlap 70%"

# Size mode on the worked case: hierarchical wins, the ring is 1.5x the naive time.
out=$("$CALC" --preset roce25-2x2 --size 102.4MB) || fail "size mode failed"
expect_contains "$out" "selected: hier" "allreduce of 102.4 MB" "2(p-1)a + 2(p-1)/p n b + (p-1)/p n g = 49.3 ms"

# The reference topology file gives the same answer as the preset.
out=$("$CALC" --topo "$SRC/topo/roce25-2x2.json" --size 102.4MB) || fail "--topo failed"
expect_contains "$out" "selected: hier"

# JSON for machines.
json=$("$CALC" --preset roce25-2x2 --model-params 25.6M --compute-ms 220 --json) || fail "json failed"
expect_contains "$json" '"gradient_bytes": 102400000' '"naive"' '"scaling"'
if command -v python3 >/dev/null; then
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert abs(d["naive"]["ms"]-32.768)<0.01, d["naive"]' <<<"$json" ||
    fail "naive ms in JSON"
fi
finish
