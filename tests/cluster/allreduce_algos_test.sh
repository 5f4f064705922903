#!/usr/bin/env bash
# all_reduce_perf with its correctness check (-c 1) on 2 nodes x 2 ranks, with each algorithm forced (flat ring,
# hierarchical, recursive halving-doubling, tree) and compressed (bf16 checked, sign run): every size must report
# #wrong 0. Sizes are odd (uneven chunks) and reach past 4 x the 512 KiB pipeline chunk; iterations are few
# (correctness only).
# shellcheck source-path=SCRIPTDIR source=cluster_test_lib.sh
source "$(dirname "$0")/cluster_test_lib.sh"
tnc_up algos 2 1gbit || exit $?

# check_table WHAT: every data row of the last all_reduce_perf table in $OUT has #wrong 0 in both columns.
check_table() {
  local rows bad
  rows=$(grep -E '^\[0\] +[0-9]+ ' <<<"$OUT")
  [[ -n "$rows" ]] || fail "$1: no result rows"
  # Columns after the [0] tag: size count type redop root time algbw busbw #wrong time algbw busbw #wrong.
  bad=$(awk '$10 != "0" || $14 != "0"' <<<"$rows")
  [[ -z "$bad" ]] || fail "$1: wrong results: $bad"
  grep -q 'Out of bounds values : 0 OK' <<<"$OUT" || fail "$1: no 'Out of bounds values : 0 OK'"
  echo "== $1: $(wc -l <<<"$rows") sizes correct"
}

sizes=(-b 12 -e 5M -f 13 -n 2 -w 1 -c 1)
for algo in ring hier rhd tree; do
  launch -p 2 --timeout 100 -- "$BIN/all_reduce_perf" "${sizes[@]}" -A "$algo" || fail "-A $algo exited non-zero"
  check_table "-A $algo"
done
# Compressed (sizes from TERN_COMPRESS_MIN_BYTES, 64 KiB, on), in both forms: flat two-phase and compressed_hier
# (compress only between the nodes). -c 1 with -Z checks every element against the true sum within the codec's
# bound (perf/common/compressed_bounds.hpp): bf16 is exact on that check's data; sign runs with the check too.
for form in 0 1; do
  launch -p 2 --timeout 100 -x TERN_COMPRESS_HIER=$form -- "$BIN/all_reduce_perf" -b 4K -e 4M -f 32 -n 2 -w 1 -c 1 \
    -Z bf16 || fail "-Z bf16 (TERN_COMPRESS_HIER=$form) exited non-zero"
  check_table "-Z bf16 (TERN_COMPRESS_HIER=$form)"
done
# Unforced, the cost model picks the form: on 1 Gb/s between nodes, compressed_hier for 4 MiB.
json=$(mktemp)
launch -p 2 --timeout 100 -- "$BIN/all_reduce_perf" -b 4M -e 4M -n 1 -w 1 -c 1 -Z bf16 -J "$json" ||
  fail "-Z bf16 (automatic form) exited non-zero"
check_table "-Z bf16 (automatic form)"
algo=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["results"][0]["algorithm"])' "$json")
nodes=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["nodes"])' "$json")
rm -f "$json"
[[ "$nodes" == 2 ]] || fail "the perf JSON of 2 nodes x 2 ranks says nodes=$nodes (ternCommHostCount)"
[[ "$algo" == "compressed_hier (bf16)" ]] || fail "-Z bf16 at 4 MiB on 2 nodes x 2 ranks ran $algo, expected compressed_hier"
echo "== -Z bf16 automatic form: $algo"
launch -p 2 --timeout 100 -- "$BIN/all_reduce_perf" -b 4K -e 4M -f 32 -n 2 -w 1 -c 1 -Z sign ||
  fail "-Z sign exited non-zero"
check_table "-Z sign"
grep -qE '^\[0\] +4194304 ' <<<"$OUT" || fail "-Z sign: no 4 MiB result"
echo "== -Z sign: checked against the true sum within its bound"
# TERN_COMPRESS on an unmodified program, 2 nodes x 1 rank at 1 Gb/s: told the link's speed (a calibration file
# with only the network, as tern-calc --calibrate would write it; the veths report 10 Gb/s whatever tbf does), the
# cost model finds that bf16 pays, so the allreduce is compressed (tern_mp_check checks the bf16-rounded sum).
tune=$(mktemp)
echo '{"version": 1, "links": {"network:ethernet": {"alpha_us": 60, "bandwidth_gbs": 0.118}}}' >"$tune"
launch -p 1 --timeout 60 -x TERN_COMPRESS=bf16 -x "TERN_TUNE_FILE=$tune" -- "$BIN/tern_mp_check" default-compress \
  compressed || fail "TERN_COMPRESS=bf16 across nodes was not compressed"
rm -f "$tune"
echo "== TERN_COMPRESS=bf16 across 1 Gb/s nodes: compressed"
echo PASS
