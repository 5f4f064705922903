#!/usr/bin/env bash
# Two tern-runs form one 4-rank job on loopback (--rank-offset / --world-size / --root-addr / --secret), each
# playing one node through TERN_HOSTID: no privileges needed, so the multi-launcher path is tested everywhere.
# shellcheck source-path=SCRIPTDIR source=cluster_test_lib.sh
source "$(dirname "$0")/cluster_test_lib.sh"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
secret=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
pids=()
for node in 0 1; do
  "$BIN/tern-run" -n 2 --rank-offset $((2 * node)) --world-size 4 --root-addr "127.0.0.1:$port" --secret "$secret" \
    --timeout 200 -x TERN_HOSTID="loopback-node$node" -x TERN_SOCKET_IFNAME=lo -x TERN_DEBUG=INFO \
    -x TERN_DEBUG_SUBSYS=SHM "$BIN/tern_mp_check" all >"$work/node$node" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
cat "$work/node0" "$work/node1"
((rc == 0)) || fail "tern_mp_check all over two tern-runs exited $rc"
for r in 0 1 2 3; do
  grep -qE "^\[$r\] .*shared memory with 1 same-host peers" "$work"/node* || fail "rank $r: no shm with its node peer"
done
echo PASS
