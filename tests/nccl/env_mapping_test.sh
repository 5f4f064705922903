#!/usr/bin/env bash
# NCCL_* variables reach tern's knobs (and a TERN_* one that is set wins), seen in tern's own log lines: the
# NCCL_DEBUG/NCCL_DEBUG_SUBSYS level and filter, NCCL_SOCKET_IFNAME, NCCL_SHM_DISABLE, and config.commName.
set -uo pipefail
test_binary=$1
fail() { echo "FAIL: $*"; echo "--- output:"; echo "$out" | tail -20; exit 1; }

out=$(env -u TERN_SOCKET_IFNAME -u TERN_DEBUG -u TERN_DEBUG_SUBSYS -u TERN_SHM_DISABLE NCCL_DEBUG=INFO \
      NCCL_DEBUG_SUBSYS=INIT NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo "$test_binary" ranks 2 2>&1) || fail "ranks 2 failed"
echo "$out" | grep -q "communicator nccl-abi-test rank 0 of 2 ready, transport tcp" ||
  fail "NCCL_SHM_DISABLE=1 / NCCL_DEBUG=INFO / commName did not reach tern"
echo "$out" | grep -q "listening on 127.0.0.1:[0-9]* (lo)" || fail "NCCL_SOCKET_IFNAME=lo did not reach tern"
echo "$out" | grep -q "\[COLL\]" && fail "NCCL_DEBUG_SUBSYS=INIT did not filter the COLL lines"

out=$(env -u TERN_SOCKET_IFNAME -u TERN_DEBUG -u TERN_DEBUG_SUBSYS TERN_SHM_DISABLE=0 NCCL_DEBUG=INFO \
      NCCL_DEBUG_SUBSYS=INIT NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo "$test_binary" ranks 2 2>&1) || fail "ranks 2 failed"
echo "$out" | grep -q "rank 0 of 2 ready, transport tcp" && fail "TERN_SHM_DISABLE=0 did not win over NCCL_SHM_DISABLE=1"

out=$(env -u TERN_ALGO NCCL_ALGO=NVLS NCCL_SOCKET_IFNAME=lo "$test_binary" ranks 1 2>&1) || fail "ranks 1 failed"
echo "$out" | grep -q "NCCL_ALGO=NVLS names 'nvls', which tern has no counterpart for; not applied" ||
  fail "NCCL_ALGO=NVLS was not reported"
out=$(env -u TERN_ALGO NCCL_ALGO="allreduce:tree;allgather:ring" NCCL_SOCKET_IFNAME=lo "$test_binary" ranks 2 2>&1) ||
  fail "NCCL_ALGO=allreduce:tree;allgather:ring (mapped to TERN_ALGO) failed"
echo "$out" | grep -q "NCCL_ALGO" && fail "a mappable NCCL_ALGO was reported as not applied"
echo "OK: NCCL_* variables mapped onto tern's knobs"
