#!/usr/bin/env bash
# tern over UCX across the simulated nodes: 2 nodes x 2 ranks with TERN_TRANSPORT=ucx (UCX_TLS=tcp,sm: UCX's TCP
# between the nodes' addresses, its shared memory inside a node). Runs tests/mp's checks (every collective with
# correctness checks) and a sign-compressed allreduce sweep with result checks.
# shellcheck source-path=SCRIPTDIR source=cluster_test_lib.sh
source "$(dirname "$0")/cluster_test_lib.sh"
[[ -x "$BIN/tern_mp_check" ]] || {
  echo "SKIPPED: tern_mp_check not built"
  exit 77
}
tnc_up ucxn 2 1gbit || exit $?

ucx_env=(-x TERN_TRANSPORT=ucx -x UCX_TLS=tcp,sm -x UCX_WARN_UNUSED_ENV_VARS=n -x TERN_DEBUG=INFO
  -x TERN_DEBUG_SUBSYS=INIT,NET)
launch -p 2 --timeout 200 "${ucx_env[@]}" -- "$BIN/tern_mp_check" all || fail "tern_mp_check all over UCX"
for r in 0 1 2 3; do
  grep -E "^\[$r\] .*transport ucx" <<<"$OUT" >/dev/null || fail "rank $r did not run over UCX"
done
launch -p 2 --timeout 200 "${ucx_env[@]}" -- "$BIN/all_reduce_perf" -b 1K -e 4M -f 16 -c 1 -Z sign ||
  fail "sign-compressed allreduce over UCX"
rows=$(grep -E "^\[0\] +[0-9]+ +[0-9]+ +float" <<<"$OUT")
[[ $(wc -l <<<"$rows") -eq 4 ]] || fail "expected 4 result rows, got: $rows"
# Columns: [0] size count type redop root time algbw busbw #wrong time algbw busbw #wrong
bad=$(awk '$10 != "0" || $14 != "0"' <<<"$rows")
[[ -z "$bad" ]] || fail "wrong results: $bad"
echo PASS
