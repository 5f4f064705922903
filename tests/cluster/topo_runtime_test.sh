#!/usr/bin/env bash
# The job topology at run time on the simulated cluster, 2 nodes x 1 rank (TCP over the shaped links): with a
# TERN_TOPO_FILE declaring 1 Gb/s NICs, TERN_COMPRESS=sign compresses an unmodified allreduce with no tune file;
# declaring 100 Gb/s, it declines (tern_topo_check tells from the result). TERN_TOPO_DUMP_FILE: rank 0 writes the
# job, which lists both nodes and every rank's host, NUMA node and NIC at the declared speed.
# shellcheck source-path=SCRIPTDIR source=cluster_test_lib.sh
source "$(dirname "$0")/cluster_test_lib.sh"
tnc_up topo 2 1gbit || exit $?
work=$(mktemp -d)
trap 'rm -rf "$work"; tnc_down' EXIT

for gbps in 1 100; do
  cat >"$work/$gbps.json" <<JSON
{"version": 1, "hosts": [{"id": "node", "nodes": [
  {"id": "pkg0", "type": "package", "os_index": 0},
  {"id": "numa0", "type": "numa", "parent": "pkg0", "os_index": 0},
  {"id": "nic0", "type": "nic", "parent": "pkg0", "name": "tern0", "kind": "ethernet", "speed_gbps": $gbps}]}]}
JSON
  expect=$([[ $gbps == 1 ]] && echo compressed || echo exact)
  launch -p 1 --timeout 60 -x TERN_COMPRESS=sign -x "TERN_TOPO_FILE=$work/$gbps.json" \
    -x "TERN_TOPO_DUMP_FILE=$work/dump-$gbps.json" -- "$BIN/tern_topo_check" compress "$expect" ||
    fail "TERN_COMPRESS=sign with $gbps Gb/s NICs declared: not $expect"
  python3 - "$work/dump-$gbps.json" "$gbps" "$(tnc_hostid 0)" "$(tnc_hostid 1)" <<'PY' || fail "dump ($gbps Gb/s)"
import json, sys
path, gbps, hosts = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
job = json.load(open(path))
assert [h["id"] for h in job["hosts"]] == hosts, [h["id"] for h in job["hosts"]]
assert len(job["ranks"]) == 2, job["ranks"]
for r, rank in enumerate(job["ranks"]):
    host = job["hosts"][rank["host"]]
    assert host["id"] == hosts[r], (r, host["id"])
    nodes = {n["id"]: n for n in host["nodes"]}
    assert nodes[rank["numa"]]["type"] == "numa", rank
    nic = nodes[rank["nic"]]
    assert nic["type"] == "nic" and nic["speed_gbps"] == gbps, nic
    print(f"rank {r}: host {host['id']}, NUMA {rank['numa']}, NIC {rank['nic']} at {nic['speed_gbps']:g} Gb/s")
PY
  echo "== $gbps Gb/s declared: $expect"
done
echo PASS
