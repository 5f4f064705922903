#!/usr/bin/env bash
# Sweeps and crossovers, --list, presets by name and size, other collectives, JSON.
source "$(dirname "$0")/calc_lib.sh"

out=$("$CALC" --list) || fail "--list failed"
expect_contains "$out" "dgx-h100x4-ndr" "dgx-a100" "pcie4x8-roce100" "roce25-2x2" "cpu-2node-1g" "allreduce" "hier"

out=$("$CALC" --preset cpu-2node-1g --sweep 8B:256MB:x4) || fail "sweep failed"
expect_contains "$out" "crossovers" "8 B" "128 MiB" " -> hier at about "

out=$("$CALC" --preset dgx-a100 --coll allgather --size 1KiB 1GiB) || fail "allgather failed"
expect_contains "$out" "allgather of 1 KiB" "allgather of 1 GiB" "selected:"

for coll in broadcast reduce reducescatter alltoall barrier; do
  "$CALC" --preset pcie-4gpu-100g --coll $coll --size 1MB >/dev/null || fail "$coll failed"
done

json=$("$CALC" --preset dgx-h100x4-ndr --sweep 1KB:1GB:x1000 --json) || fail "json sweep failed"
if command -v python3 >/dev/null; then
  python3 - "$json" <<'PY' || fail "JSON sweep content"
import json, sys
d = json.loads(sys.argv[1])
assert d["topology"]["ranks"] == 32, d["topology"]
sizes = d["sizes"]
assert [s["bytes"] for s in sizes] == [1e3, 1e6, 1e9], sizes
for s in sizes:
    best = s["algorithms"][0]
    assert best["name"] == s["best"] and best["time_us"] > 0 and best["busbw_gbs"] > 0
assert sizes[-1]["best"] == "hier"
# GPU ranks: what a stream-ordered call on device buffers would run, NCCL on the GPUs' links first.
for s in sizes:
    engines = s["device_engines"]
    assert [e["engine"] for e in engines] == ["nccl", "staged"], engines
    assert 0 < engines[0]["time_us"] < engines[1]["time_us"], engines
PY
fi

# The device engines on a reference topology file, and none for CPU ranks.
out=$("$CALC" --topo "$SRC/topo/dgx-h100.json" --size 64MB) || fail "--topo dgx-h100 failed"
expect_contains "$out" "on device buffers (stream-ordered): nccl (hier) " ", staged (" " -> nccl"
out=$("$CALC" --preset cpu-2node-1g --size 64MB) || fail "cpu-2node-1g failed"
grep -qF "on device buffers" <<<"$out" && fail "CPU ranks priced as device buffers"

# Compressed rows (both forms on 2 nodes x 2 ranks: at 1 Gb/s compressing only between the nodes wins; one rank
# per node has only the flat form) and a forced algorithm.
out=$("$CALC" --preset cpu-2node-1g --size 64MB --compress sign) || fail "compress failed"
expect_contains "$out" "compressed_2phase (sign)" "compressed_hier (sign)" "selected: compressed_hier (sign)"
out=$("$CALC" --preset cpu-2node-1g --ranks-per-node 1 --size 64MB --compress sign) || fail "compress 2x1 failed"
expect_contains "$out" "selected: compressed_2phase (sign)"
out=$("$CALC" --preset cpu-2node-1g --size 64MB --algo ring) || fail "algo failed"
expect_contains "$out" "selected: ring"
finish
