#!/usr/bin/env bash
# A message's last segment leaves at once: the TCP transport marks each message's end (MSG_EOR), so Linux never
# corks its tail while earlier segments are still queued on the shaped link (TCP autocorking). Corked tails wait
# for a softirq that, without a NIC interrupt, runs behind the busy rank on its CPU, and the peer blocked on the tail
# stalls for milliseconds. 2 nodes x 1 rank at 1 Gb/s run allreduces whose messages end in partial segments while
# the link is busy (sign-compressed, pipelined pieces), and the namespaces' TCPAutoCorking counters must stay 0.
# shellcheck source-path=SCRIPTDIR source=cluster_test_lib.sh
source "$(dirname "$0")/cluster_test_lib.sh"
tnc_up tail 2 1gbit || exit $?
trap 'tnc_down' EXIT
command -v nstat >/dev/null || { echo "SKIPPED: nstat (iproute2) missing"; exit 77; }

for ((i = 0; i < 2; i++)); do ip netns exec "$(tnc_ns "$i")" nstat -n >/dev/null || fail "node $i: nstat failed"; done
launch -p 1 --timeout 120 -- "$BIN/all_reduce_perf" -b 16M -e 16M -n 20 -w 2 -d float -o sum -Z sign ||
  fail "the compressed allreduce failed"
grep -Eq '^\[0\] +16777216 ' <<<"$OUT" || fail "no result row in the output"
for ((i = 0; i < 2; i++)); do
  corked=$(ip netns exec "$(tnc_ns "$i")" nstat -az TcpExtTCPAutoCorking | awk '$1 == "TcpExtTCPAutoCorking" {print $2}')
  [[ -n "$corked" ]] || fail "node $i: nstat has no TcpExtTCPAutoCorking counter"
  echo "node $i: TcpExtTCPAutoCorking $corked"
  ((corked == 0)) || fail "node $i: $corked writes were autocorked (a message tail without MSG_EOR?)"
done
echo PASS
