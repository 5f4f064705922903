#!/usr/bin/env bash
# tests/mp's checks (every collective with correctness checks, async overlap, Split) on 2 nodes x 2 ranks: ranks
# 0,1 on node 0 and 2,3 on node 1, shared memory inside a node, TCP over the 1 Gb/s links between nodes.
# shellcheck source-path=SCRIPTDIR source=cluster_test_lib.sh
source "$(dirname "$0")/cluster_test_lib.sh"
tnc_up mp 2 1gbit || exit $?

launch -p 2 --timeout 200 -x TERN_DEBUG=INFO -x TERN_DEBUG_SUBSYS=INIT,NET,SHM -- "$BIN/tern_mp_check" all ||
  fail "tern_mp_check all on 2 nodes x 2 ranks"

# The job really spans the nodes as intended: each rank has one same-host peer over shared memory, and its TCP
# connections to the other node's ranks go over the cluster's addresses, not loopback.
for r in 0 1 2 3; do
  grep -E "^\[$r\] .*shared memory with 1 same-host peers" <<<"$OUT" >/dev/null ||
    fail "rank $r does not use shared memory with its node peer"
done
grep -E "^\[0\] .*connected to rank 2 at ${TNC_SUBNET//./\\.}\.2:" <<<"$OUT" >/dev/null ||
  fail "rank 0 is not connected to rank 2 over node 1's address $(tnc_addr 1)"
grep -E "^\[3\] .*connected to rank 1 at ${TNC_SUBNET//./\\.}\.1:" <<<"$OUT" >/dev/null ||
  fail "rank 3 is not connected to rank 1 over node 0's address $(tnc_addr 0)"
echo PASS
