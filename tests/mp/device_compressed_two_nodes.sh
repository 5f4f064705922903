#!/usr/bin/env bash
# TERN_COMPRESS on device buffers in the hierarchical form (compressed_hier), on two loopback "nodes" of two ranks
# each (two tern-runs with their own TERN_HOSTID: shared memory inside a node, TCP between them), the emulated device
# with the CPU codecs posing as the device's (tern_device_check compressed): for each dense codec the device path's
# results equal the host path's bit for bit, and both name compressed_hier (TERN_COMPRESS_HIER=1 takes it whatever
# the cost model says). Top-K has no hierarchical form: its sparse all-gather is checked the same way.
# Usage: device_compressed_two_nodes.sh BIN_DIR (holding tern-run and tern_device_check).
set -uo pipefail
BIN=$(readlink -f "${1:?usage: $0 path/to/build/bin}")
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
# shellcheck source=tests/common/loopback_nodes.sh
source "$(dirname "$0")/../common/loopback_nodes.sh"

# two_nodes CODEC ALGORITHM: tern_device_check compressed on 2 nodes x 2 ranks.
two_nodes() {
  local codec=$1 algorithm=$2 rc=0
  loopback_nodes 2 2 "$work/$codec" --timeout 150 -x TERN_COMPRESS="$codec" -x TERN_COMPRESS_WHEN=always \
    -x TERN_COMPRESS_HIER=1 -x TERN_TIMEOUT=60 -- "$BIN/tern_device_check" compressed "$algorithm" || rc=$?
  cat "$work/$codec.node0" "$work/$codec.node1"
  ((rc == 0)) || fail "$codec: tern_device_check compressed exited $rc"
  [[ $(cat "$work/$codec.node0" "$work/$codec.node1" | grep -c "bit for bit") == 4 ]] ||
    fail "$codec: not every rank reported its check"
}

for codec in sign qsgd:4 bf16; do two_nodes "$codec" compressed_hier; done
two_nodes topk:0.01 sparse_allgather
echo PASS
