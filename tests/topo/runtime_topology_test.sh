#!/usr/bin/env bash
# The job topology at run time, on loopback (no privileges): two tern-runs play two nodes (TERN_HOSTID), one rank
# each, TCP between them.
#  - TERN_TOPO_FILE declaring 1 Gb/s NICs: TERN_COMPRESS=sign compresses with no tune file; 100 Gb/s: it declines
#    (tern_topo_check tells from the result);
#  - TERN_TOPO_DUMP_FILE: rank 0 writes the job, which lists every rank's host, NUMA node and NIC, with the file's
#    NIC speed;
#  - without a file, the host in the dump of a one-node job is what tern-topo --json detects on this machine.
# Usage: runtime_topology_test.sh BIN_DIR (holding tern-run, tern-topo and tern_topo_check).
set -uo pipefail
BIN=$(readlink -f "${1:?usage: $0 path/to/build/bin}")
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
# shellcheck source=tests/common/loopback_nodes.sh
source "$(dirname "$0")/../common/loopback_nodes.sh"

topo_file() {  # SPEED_GBPS: one CPU host with one Ethernet NIC of that speed
  cat <<JSON
{"version": 1, "hosts": [{"id": "declared", "nodes": [
  {"id": "pkg0", "type": "package", "os_index": 0, "cores": 2},
  {"id": "numa0", "type": "numa", "parent": "pkg0", "os_index": 0},
  {"id": "nic0", "type": "nic", "parent": "pkg0", "name": "eth0", "kind": "ethernet", "speed_gbps": $1}]}]}
JSON
}

# two_nodes LABEL EXPECT ENV...: tern_topo_check compress EXPECT on two loopback "nodes", one rank each.
two_nodes() {
  local label=$1 expect=$2
  shift 2
  local extra=() rc=0
  for kv in "$@"; do extra+=(-x "$kv"); done
  loopback_nodes 2 1 "$work/$label" --timeout 100 -x TERN_DEBUG=INFO -x TERN_DEBUG_SUBSYS=TOPO,COMPRESS "${extra[@]}" \
    -- "$BIN/tern_topo_check" compress "$expect" || rc=$?
  cat "$work/$label.node0" "$work/$label.node1"
  ((rc == 0)) || fail "$label: tern_topo_check compress $expect exited $rc"
  grep -hE 'topology: host' "$work/$label.node0" "$work/$label.node1" | sed "s/^/== $label: /"
}

# check_dump FILE HOSTS NIC_GBPS: the dumped job has HOSTS hosts, every rank a host, a NUMA node and a NIC (of that
# speed; "any" for the detected one).
check_dump() {
  python3 - "$@" <<'PY' || fail "dump $1 is not what the job saw"
import json, sys
path, hosts, speed = sys.argv[1], int(sys.argv[2]), sys.argv[3]
job = json.load(open(path))
assert len(job["hosts"]) == hosts, f"{len(job['hosts'])} hosts, expected {hosts}"
assert len(job["ranks"]) == 2, f"{len(job['ranks'])} ranks"
for r, rank in enumerate(job["ranks"]):
    host = job["hosts"][rank["host"]]
    nodes = {n["id"]: n for n in host["nodes"]}
    assert nodes.get(rank.get("numa"), {}).get("type") == "numa", f"rank {r}: no NUMA node: {rank}"
    nics = [n for n in host["nodes"] if n["type"] == "nic"]
    if nics or speed != "any":
        nic = nodes.get(rank.get("nic"), {})
        assert nic.get("type") == "nic", f"rank {r}: no NIC: {rank}"
        if speed != "any":
            assert nic["speed_gbps"] == float(speed), f"rank {r}: NIC at {nic['speed_gbps']} Gb/s"
    print(f"rank {r}: host {host['id']}, NUMA {rank['numa']}, NIC {rank.get('nic', '(host has none)')}")
if hosts == 2:
    assert [h["id"] for h in job["hosts"]] == ["loopback-node0", "loopback-node1"], [h["id"] for h in job["hosts"]]
PY
}

topo_file 1 >"$work/1g.json"
topo_file 100 >"$work/100g.json"
two_nodes 1g compressed TERN_COMPRESS=sign TERN_TOPO_FILE="$work/1g.json" TERN_TOPO_DUMP_FILE="$work/dump-1g.json"
check_dump "$work/dump-1g.json" 2 1
grep -q 'compressing$' "$work/1g.node0" || fail "1g: no 'compressing' decision logged"
two_nodes 100g exact TERN_COMPRESS=sign TERN_TOPO_FILE="$work/100g.json" TERN_TOPO_DUMP_FILE="$work/dump-100g.json"
check_dump "$work/dump-100g.json" 2 100
grep -q 'not compressing' "$work/100g.node0" || fail "100g: no 'not compressing' decision logged"

# Detected: a one-node job of two ranks against tern-topo on this machine (same TERN_HOSTID, so the same host id).
TERN_HOSTID=topo-check TERN_SOCKET_IFNAME=lo TERN_DEBUG=INFO TERN_DEBUG_SUBSYS=TOPO \
  TERN_TOPO_DUMP_FILE="$work/dump-local.json" "$BIN/tern-run" -n 2 --timeout 100 "$BIN/tern_topo_check" compress \
  exact >"$work/local" 2>&1 || {
  cat "$work/local"
  fail "one-node job exited non-zero"
}
grep -hE 'topology: host' "$work/local" | sed "s/^/== detected: /"
TERN_HOSTID=topo-check "$BIN/tern-topo" --json >"$work/tern-topo.json" || fail "tern-topo --json failed"
check_dump "$work/dump-local.json" 1 any
python3 - "$work/dump-local.json" "$work/tern-topo.json" <<'PY' || fail "the runtime dump and tern-topo disagree"
import json, sys
runtime, tool = (json.load(open(p))["hosts"][0] for p in sys.argv[1:3])
for key in ("id", "nodes", "links"):
    assert runtime[key] == tool[key], f"{key}: runtime {runtime[key]} vs tern-topo {tool[key]}"
print(f"runtime dump and tern-topo agree: {len(tool['nodes'])} nodes, {len(tool['links'])} links")
PY
echo PASS
