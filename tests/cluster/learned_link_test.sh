#!/usr/bin/env bash
# The model learns the link (issue 18): on the simulated cluster, 2 nodes x 1 rank over the 1 Gb/s shaped links,
# with no tune file and no topology file, TERN_COMPRESS=bf16 declines while the model believes the NIC's line rate
# (the veth pair reports far more than the shaping gives), and compresses once the communicator has learned the
# network from its first TERN_LEARN_CALLS uncompressed calls (tern_topo_check learn tells from the results).
# TERN_TUNE_DUMP_FILE: rank 0 writes what it learned, in the tune-file format tern-calc reads, and its network
# bandwidth is the shaped link's (0.119 GB/s of TCP payload), not the line rate.
# Then the same on device buffers (tern_device_check learn, the emulated device with the CPU codecs posing as the
# device's): the ranks vote on a stream-ordered call's plan at its shape's first call and again at its 16th while a
# model is still learning. TERN_COMPRESS=bf16 declines at first, compresses the staged calls' host collectives once
# the network is learned, and from the 16th call compresses with the device codecs. With a topology file that
# places each rank on a GPU (TERN_TEST_GPU), the device model prices the call: after host calls have taught the
# network, the first device call's vote prices the uncompressed call on the learned link (the log shows its time).
# shellcheck source-path=SCRIPTDIR source=cluster_test_lib.sh
source "$(dirname "$0")/cluster_test_lib.sh"
tnc_up learn 2 1gbit || exit $?
work=$(mktemp -d)
trap 'rm -rf "$work"; tnc_down' EXIT
calls=8
launch -p 1 --timeout 120 -x TERN_COMPRESS=bf16 -x TERN_LEARN_CALLS=$calls -x "TERN_TUNE_DUMP_FILE=$work/tune.json" \
  -- "$BIN/tern_topo_check" learn $calls compressed || fail "TERN_COMPRESS=bf16 did not start compressing after $calls calls"
python3 - "$work/tune.json" <<'PY' || fail "the dumped tune file"
import json, sys
doc = json.load(open(sys.argv[1]))
net = doc["links"]["network"]
gbs = net["bandwidth_gbs"]
print(f"learned network: alpha {net.get('alpha_us', 0):.1f} us, {gbs:.4f} GB/s")
assert 0.08 <= gbs <= 0.16, f"learned {gbs} GB/s, the shaped link carries about 0.119"
PY
# tern-calc takes the dump as a tune file.
"$BIN/tern-calc" --tune "$work/tune.json" --nodes 2 --ranks-per-node 1 --intra shm --inter eth:10gbit \
  --size 4MiB --compress bf16 || fail "tern-calc --tune on the dumped file"

launch -p 1 --timeout 120 -x TERN_COMPRESS=bf16 -x TERN_LEARN_CALLS=$calls -- "$BIN/tern_device_check" learn $calls 16 ||
  fail "device buffers: TERN_COMPRESS=bf16 did not compress after the learning, on the device from the 16th call"

cat >"$work/gpu.json" <<JSON
{"version": 1, "hosts": [{"id": "node", "nodes": [
  {"id": "pkg0", "type": "package", "os_index": 0},
  {"id": "numa0", "type": "numa", "parent": "pkg0", "os_index": 0},
  {"id": "sw0", "type": "pci_switch", "parent": "pkg0", "busid": "0000:41:00.0", "link": {"gen": 4, "width": 16}},
  {"id": "gpu0", "type": "gpu", "parent": "sw0", "busid": "0000:44:00.0", "name": "GPU", "link": {"gen": 4, "width": 16}},
  {"id": "nic0", "type": "nic", "parent": "sw0", "name": "tern0", "kind": "ethernet", "speed_gbps": 100}]}]}
JSON
launch -p 1 --timeout 120 -x TERN_COMPRESS=bf16 -x TERN_LEARN_CALLS=$calls -x "TERN_TOPO_FILE=$work/gpu.json" \
  -x TERN_TEST_GPU=0000:44:00.0 -x TERN_DEBUG=INFO -x TERN_DEBUG_SUBSYS=COMPRESS,TOPO \
  -- "$BIN/tern_device_check" learn $calls 1 $calls || fail "device buffers on GPUs: not compressed on the device"
grep -q ", GPU " <<<"$OUT" || fail "device buffers on GPUs: the ranks are not on the file's GPU"
LOG=$OUT python3 - <<'PY' || fail "device buffers on GPUs: the device model did not learn the network"
import os, re
# The vote's pricing (COMPRESS): "... on device buffers: <form> with bf16 T, uncompressed <engine> (<algo>) T: ..."
lines = [l for l in os.environ["LOG"].splitlines() if "on device buffers:" in l and "uncompressed" in l]
assert lines, "no COMPRESS line of a device call's vote"
scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
for line in lines:
    m = re.search(r"uncompressed \S+ \([^)]*\) ([0-9.]+) (ns|us|ms|s)", line)
    assert m, line
    seconds = float(m.group(1)) * scale[m.group(2)]
    print(f"device model, uncompressed 4 MiB allreduce: {seconds * 1e3:.1f} ms")
    # The declared 100 Gb/s NIC would price it under a millisecond, the learned 1 Gb/s link at about 34 ms.
    assert seconds > 0.01, line
PY
echo PASS
