#!/usr/bin/env bash
# tests/mp's checks (the collectives matrix of tests/mp/collectives_matrix.hpp: every collective, datatype and op,
# every element against the independent reference; async overlap; Split) on the simulated cluster, shared memory
# inside a node and TCP over the 1 Gb/s links between nodes:
#   2 nodes x 1 rank (TCP only), `--large full`, as tests/mp's 2 ranks;
#   2 nodes x 2 ranks (block order: ranks 0,1 on node 0, 2,3 on node 1), `--large subset`, as tests/mp's 4 ranks;
#   2 nodes x 3 ranks in cyclic order (rank r on node r % 2: every ring and tree has to go back and forth between
#   the nodes), `--large lean`, as tests/mp's 5-8 ranks.
# So the same matrix as over loopback TCP for 2, 4 and 6 ranks, with the same subsets at 2^20+3 elements and for the
# same reason (tests/mp/CMakeLists.txt): there each call moves megabytes per rank, here across 1 Gb/s links. Three
# layouts rather than every rank count: what the cluster adds is the split between nodes (none, even, odd and
# interleaved per node); 1..8 ranks on one host are tests/mp's, and this test runs alone (RUN_SERIAL).
# shellcheck source-path=SCRIPTDIR source=cluster_test_lib.sh
source "$(dirname "$0")/cluster_test_lib.sh"
tnc_up mp 2 1gbit || exit $?

# Each run must print a passing line for every collective of the matrix (rank 0) and "collectives OK" on every rank.
expect_matrix() {
  local ranks=$1 what=$2 name r
  for name in allreduce allgather reduce-scatter broadcast reduce alltoall alltoallv send/recv; do
    grep -E "^\[0\] rank 0: $name: [0-9]+ combinations passed" <<<"$OUT" >/dev/null ||
      fail "$what: no passing line for $name"
  done
  for ((r = 0; r < ranks; r++)); do
    grep -E "^\[$r\] rank $r: collectives OK" <<<"$OUT" >/dev/null || fail "$what: rank $r did not pass the matrix"
  done
}

launch -p 1 --timeout 300 -- "$BIN/tern_mp_check" all --large full || fail "tern_mp_check all on 2 nodes x 1 rank"
expect_matrix 2 "2 nodes x 1 rank"

launch -p 2 --timeout 200 -x TERN_DEBUG=INFO -x TERN_DEBUG_SUBSYS=INIT,NET,SHM -- "$BIN/tern_mp_check" all \
  --large subset || fail "tern_mp_check all on 2 nodes x 2 ranks"
expect_matrix 4 "2 nodes x 2 ranks"
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

launch -p 3 --order cyclic --timeout 200 -x TERN_DEBUG=INFO -x TERN_DEBUG_SUBSYS=SHM -- "$BIN/tern_mp_check" all \
  --large lean || fail "tern_mp_check all on 2 nodes x 3 ranks, cyclic"
expect_matrix 6 "2 nodes x 3 ranks, cyclic"
for r in 0 1 2 3 4 5; do
  grep -E "^\[$r\] .*shared memory with 2 same-host peers" <<<"$OUT" >/dev/null ||
    fail "rank $r (cyclic order) does not use shared memory with its 2 node peers"
done
echo PASS
