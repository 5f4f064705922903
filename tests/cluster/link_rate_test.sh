#!/usr/bin/env bash
# The simulated cluster's links really run at the configured rate: tbf on both ends of every node's veth, and TCP
# between two nodes gets close to (never above) 1 Gb/s one way, and each way when both directions run at once
# (full duplex).
# shellcheck source-path=SCRIPTDIR source=cluster_test_lib.sh
source "$(dirname "$0")/cluster_test_lib.sh"
tnc_up rate 2 1gbit || exit $?

# Shaping in place on both ends of both links.
for ((i = 0; i < 2; i++)); do
  tc -n "$(tnc_ns "$i")" qdisc show dev tern0 | grep -q 'tbf .*rate 1Gbit' || fail "node $i: no tbf on tern0"
  tc -n "$(tnc_bridge_ns)" qdisc show dev "n$i" | grep -q 'tbf .*rate 1Gbit' || fail "bridge: no tbf on n$i"
done

py=$(command -v python3) || fail "python3 missing"
# Real-time priority where possible, so that a loaded machine's other processes do not make python the bottleneck.
rt=()
chrt -f 10 true 2>/dev/null && rt=(chrt -f 10)
tnc_spawn 1 "${rt[@]}" "$py" "$CLUSTER_DIR/link_rate.py" server "$(tnc_addr 1)" 5201 >/dev/null
tnc_spawn 0 "${rt[@]}" "$py" "$CLUSTER_DIR/link_rate.py" server "$(tnc_addr 0)" 5201 >/dev/null
sleep 0.5

# check_rate LINE WHAT: a link_rate.py result must be about 1 Gb/s. TCP payload reaches at most 1448/1514 = 0.956 of
# the shaped rate (tbf counts the Ethernet header); the floor is loose because on a loaded 2-core machine the python
# sender itself can still be the bottleneck.
check_rate() {
  local line=$1 what=$2 gbps
  gbps=$(sed -n 's/.*goodput_gbps=\([0-9.]*\).*/\1/p' <<<"$line")
  [[ -n "$gbps" ]] || fail "$what: no result ($line)"
  echo "$what: $line"
  awk -v g="$gbps" 'BEGIN { exit !(g <= 1.0 && g >= 0.5) }' || fail "$what: $gbps Gb/s is not about 1 Gb/s"
}

client() {  # FROM TO
  tnc_run "$1" "${rt[@]}" "$py" "$CLUSTER_DIR/link_rate.py" client "$(tnc_addr "$2")" 5201 2 4
}

check_rate "$(client 0 1)" "node 0 -> node 1 (4 TCP streams, 2 s)"
check_rate "$(client 1 0)" "node 1 -> node 0 (4 TCP streams, 2 s)"

tmp=$(mktemp -d)
client 0 1 >"$tmp/a" &
a=$!
client 1 0 >"$tmp/b" &
b=$!
wait "$a" "$b"
check_rate "$(cat "$tmp/a")" "node 0 -> node 1 while node 1 -> node 0"
check_rate "$(cat "$tmp/b")" "node 1 -> node 0 while node 0 -> node 1"
rm -rf "$tmp"
echo PASS
