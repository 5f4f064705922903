#!/usr/bin/env bash
# The model learns the link (issue 18): on the simulated cluster, 2 nodes x 1 rank over the 1 Gb/s shaped links,
# with no tune file and no topology file, TERN_COMPRESS=bf16 declines while the model believes the NIC's line rate
# (the veth pair reports far more than the shaping gives), and compresses once the communicator has learned the
# network from its first TERN_LEARN_CALLS uncompressed calls (tern_topo_check learn tells from the results).
# TERN_TUNE_DUMP_FILE: rank 0 writes what it learned, in the tune-file format tern-calc reads, and its network
# bandwidth is the shaped link's (0.119 GB/s of TCP payload), not the line rate.
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
echo PASS
