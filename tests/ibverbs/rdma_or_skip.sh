#!/usr/bin/env bash
# Runs an end-to-end ibverbs test only where an RDMA device exists; elsewhere prints why and exits 77, which ctest
# (SKIP_RETURN_CODE 77) reports as "Skipped", never as "Passed".
#
#   rdma_or_skip.sh CMD...
set -uo pipefail
devices=""
if command -v ibv_devices >/dev/null 2>&1; then
  # Lines after the two header lines ("device  node GUID", "------  ---------") name devices.
  devices=$(ibv_devices 2>/dev/null | awk 'NR > 2 && NF > 0 { print $1 }')
elif [[ -d /sys/class/infiniband ]]; then
  devices=$(ls /sys/class/infiniband 2>/dev/null)
fi
if [[ -z $devices ]]; then
  echo "SKIPPED: no RDMA device (ibv_devices lists none)"
  exit 77
fi
echo "RDMA devices: $(echo $devices)"
exec "$@"
